"""Model-written text shown as Markdown that Streamlit renders literally.

Outputs, feedback, instructions and errors are written by a model or a person, so they are
untrusted: nothing here relies on ``unsafe_allow_html``. Every ASCII punctuation character gets a
backslash (CommonMark always reads an escaped punctuation character as the literal character),
and bare URLs and e-mail addresses are defused so GitHub-flavoured Markdown cannot link them.
"""

from __future__ import annotations

import re
import string

from studio.model.redaction import redact

_PUNCTUATION = frozenset(string.punctuation)


def escape_markdown(text: str) -> str:
    """Text that Streamlit's Markdown shows literally: no links, images, HTML, math or emphasis.

    Every ASCII punctuation character gets a backslash (CommonMark escapes all of them), so
    ``<script>`` stays text and ``[a](b)`` is no link. Line breaks become hard breaks and leading
    spaces become non-breaking, so the layout of an instruction survives. Secrets from the
    environment are shown as ``***``: model text is stored raw (the loop reads it) and every
    page shows it through here.
    """
    lines = redact(text or "").split("\n")
    return "  \n".join(_escape_line(line) for line in lines)


def _escape_line(line: str) -> str:
    stripped = line.lstrip(" ")
    indent = "\u00a0" * (len(line) - len(stripped))
    return indent + escape_inline(stripped)


def escape_inline(text: str) -> str:
    """One line of text shown literally (no line handling: callers split lines first)."""
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in defuse_autolinks(text))


_AUTOLINK_START = re.compile(r"(://|(?<![^\W_])www(?=\.)|@)", re.IGNORECASE)


def defuse_autolinks(text: str) -> str:
    """``text`` with a word joiner (U+2060, invisible) inside every ``://``, ``www.`` and ``@``.

    GitHub-flavoured Markdown (Streamlit's) turns bare URLs and e-mail addresses into live links
    *after* backslash escapes are resolved, so escaping cannot stop it: a model could plant a
    clickable phishing link in an output, a proposal or an error. The joiner breaks the pattern
    the autolinker looks for and shows nothing."""
    return _AUTOLINK_START.sub(lambda m: _joined(m.group(0)), text)


def _joined(found: str) -> str:
    return {"://": ":\u2060//", "@": "@\u2060"}.get(found, found + "\u2060")
