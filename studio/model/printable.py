"""Model-written text made inert for a terminal or a file a person opens.

A critic's feedback, an agent's output, a run name or an error message can carry escape
sequences (set the window title, clear the screen, OSC-8 hyperlinks), bidi overrides or lone
surrogates. Where such text reaches a terminal (the CLI) or a file meant for people (CSV), each
control, format or surrogate character is shown as its ``\\x1b``/``\\u202e``-style escape
instead of acting. JSON keeps the exact text, JSON-escaped (:func:`json_escaped_controls`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any, TextIO

from studio.model.redaction import redact

KEPT = "\n\t"
"""Whitespace a person expects to act: line breaks and tabs."""

_INERT = frozenset(("Cc", "Cf", "Cs"))


def escaped(ch: str) -> str:
    """One character as the escape Python would write for it (``\\x1b``, ``\\u202e``)."""
    if unicodedata.category(ch) == "Cs":
        return f"\\u{ord(ch):04x}"
    return ch.encode("unicode_escape").decode("ascii")


def printable(text: object, keep: str = KEPT) -> str:
    """``text`` with every control, format and surrogate character but those in ``keep``
    shown as an escape; everything else (any script, emoji) unchanged."""
    text = str(text)
    if _without(text, keep).isprintable():  # the common case, without a per-character loop
        return text
    return "".join(ch if ch in keep or unicodedata.category(ch) not in _INERT else escaped(ch)
                   for ch in text)


def _without(text: str, chars: str) -> str:
    for ch in chars:
        text = text.replace(ch, "")
    return text


def json_escaped_controls(line: str) -> str:
    """A JSON text written with ``ensure_ascii=False`` with the characters JSON leaves raw that
    act on a terminal or editor (C1 controls, bidi overrides, zero-width characters, lone
    surrogates) written as ``\\uXXXX`` escapes: the same exact text for any parser, inert on
    screen. (C0 controls are escaped by ``json.dumps`` already and never reach here raw.)"""
    if line.isprintable() or not any(unicodedata.category(ch) in _INERT for ch in line):
        return line
    return "".join(ch if ch in "\n\t\r" or unicodedata.category(ch) not in _INERT
                   else _json_escape(ch) for ch in line)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class PrintableStream:
    """A text stream (stdout, stderr) that writes model text inertly and without secrets: every
    write goes through :func:`~studio.model.redaction.redact` and :func:`printable`, keeping
    ``\\r`` too (the progress bar redraws its line with it)."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        """Secrets redacted too: trials and proposals are stored raw (the loop reads them),
        so the terminal is one of the exits where they are hidden."""
        return self.raw.write(printable(redact(text), keep=KEPT + "\r"))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)
