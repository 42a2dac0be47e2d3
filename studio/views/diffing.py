"""Word-level diffs of component texts, rendered as Markdown that is safe for model-written text.

Proposed instructions are written by a model, so they are untrusted: nothing here ever relies on
``unsafe_allow_html``. Every character of the compared texts goes through
:func:`studio.views.markdown.escape_inline`, and highlights use Streamlit's own
``:red-background[...]`` and ``:green-background[...]`` directives around the escaped text.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Literal

from studio.model.redaction import redact
from studio.views.markdown import escape_inline

Kind = Literal["equal", "delete", "insert"]

_TOKEN = re.compile(r"\n|[^\S\n]+|\w+|[^\w\s]")
_STYLE = {"delete": "red-background", "insert": "green-background"}


@dataclass(frozen=True)
class Segment:
    """A run of text that is unchanged, deleted (only in the old text) or inserted (only new)."""

    kind: Kind
    text: str


@dataclass(frozen=True)
class DiffStats:
    words_added: int
    words_removed: int
    unchanged: bool


def tokenize(text: str) -> list[str]:
    """Words, single punctuation marks, runs of spaces and newlines; joining them gives ``text``."""
    return _TOKEN.findall(text or "")


PAIR_LIMIT = 1_000_000
"""The largest block compared item by item (old items x new items). difflib's matcher is
quadratic in the worst case; a block under this size takes well under a second even for the
most repetitive text (``bench/bench_diff.py``). Larger blocks are compared by lines, and blocks
still too large are shown as a plain deletion and insertion."""


def word_diff(old: str, new: str) -> list[Segment]:
    """The inline diff of ``old`` to ``new`` word by word, adjacent runs of one kind merged.

    The common beginning and end are set aside first (most edits are local), so a long
    instruction with one edit costs linear time; the result is cached, so a page that shows
    the diff and its statistics computes it once. Secrets from the environment are diffed
    as ``***`` (instructions are stored raw; a diff is only ever shown).
    """
    return list(_cached_word_diff(redact(old or ""), redact(new or "")))


@functools.lru_cache(maxsize=64)
def _cached_word_diff(old: str, new: str) -> tuple[Segment, ...]:
    segments: list[Segment] = []
    _diff_tokens(segments, tokenize(old), tokenize(new))
    return tuple(segments)


def _diff_tokens(segments: list[Segment], a: list[str], b: list[str], lines: bool = True) -> None:
    head = _common_prefix(a, b)
    tail = _common_prefix(a[head:][::-1], b[head:][::-1])
    _append(segments, "equal", "".join(a[:head]))
    middle_a, middle_b = a[head:len(a) - tail], b[head:len(b) - tail]
    if len(middle_a) * len(middle_b) <= PAIR_LIMIT:
        _diff_matched(segments, middle_a, middle_b)
    elif lines:
        _diff_by_lines(segments, "".join(middle_a), "".join(middle_b))
    else:
        _append(segments, "delete", "".join(middle_a))
        _append(segments, "insert", "".join(middle_b))
    _append(segments, "equal", "".join(a[len(a) - tail:]))


def _diff_by_lines(segments: list[Segment], old: str, new: str) -> None:
    """Too many words to compare pairwise: match whole lines, then words inside changed lines."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(a) * len(b) > PAIR_LIMIT:
        _append(segments, "delete", old)
        _append(segments, "insert", new)
        return
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            _append(segments, "equal", "".join(a[i1:i2]))
        else:
            old_block, new_block = "".join(a[i1:i2]), "".join(b[j1:j2])
            _diff_tokens(segments, tokenize(old_block), tokenize(new_block), lines=False)


def _diff_matched(segments: list[Segment], a: list[str], b: list[str]) -> None:
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _append(segments, "equal", "".join(a[i1:i2]))
            continue
        if op in ("delete", "replace"):
            _append(segments, "delete", "".join(a[i1:i2]))
        if op in ("insert", "replace"):
            _append(segments, "insert", "".join(b[j1:j2]))


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def side_by_side(old: str, new: str) -> tuple[list[Segment], list[Segment]]:
    """``(left, right)``: the old text with its deletions, the new text with its insertions."""
    segments = word_diff(old, new)
    left = [s for s in segments if s.kind != "insert"]
    right = [s for s in segments if s.kind != "delete"]
    return left, right


def diff_stats(old: str, new: str) -> DiffStats:
    segments = word_diff(old, new)
    added = sum(_words(s.text) for s in segments if s.kind == "insert")
    removed = sum(_words(s.text) for s in segments if s.kind == "delete")
    return DiffStats(added, removed, unchanged=(old or "").strip() == (new or "").strip())


@dataclass(frozen=True)
class ComponentChange:
    """One component of two candidates: its key, name and both texts."""

    key: str
    component: str
    old: str
    new: str

    @property
    def unchanged(self) -> bool:
        return (self.old or "").strip() == (self.new or "").strip()


@dataclass(frozen=True)
class AgentChanges:
    """The components of one agent (``""`` for a single-agent run's unqualified keys)."""

    agent: str
    changes: tuple[ComponentChange, ...]

    @property
    def changed(self) -> int:
        return sum(not c.unchanged for c in self.changes)


def changes_by_agent(old: dict[str, str], new: dict[str, str]) -> list[AgentChanges]:
    """Both candidates' components grouped by agent (``writer.instruction`` under ``writer``),
    agents and components in the order the first candidate lists them; a component only one of
    them has compares against empty text."""
    keys = list(old) + [k for k in new if k not in old]
    grouped: dict[str, list[ComponentChange]] = {}
    for key in keys:
        agent, _, component = key.rpartition(".")
        grouped.setdefault(agent, []).append(
            ComponentChange(key, component, old.get(key, ""), new.get(key, "")))
    return [AgentChanges(agent, tuple(changes)) for agent, changes in grouped.items()]


TERMINAL_MARKS = {"delete": ("[-", "-]"), "insert": ("{+", "+}")}
"""How a terminal shows a word diff, as ``git diff --word-diff=plain`` does: no colour, so it
reads the same in a log file, a pipe and through the CLI's inert stream."""


def terminal_diff(old: str, new: str) -> str:
    """The word diff of ``old`` to ``new`` as plain text: ``[-removed-]`` and ``{+added+}``
    around the changed runs, unchanged text as it is."""
    out = []
    for segment in word_diff(old, new):
        start, end = TERMINAL_MARKS.get(segment.kind, ("", ""))
        out.append(f"{start}{segment.text}{end}")
    return "".join(out)


def segments_json(old: str, new: str) -> list[dict[str, str]]:
    """The word diff as JSON-ready segments, ``{"kind": "equal|delete|insert", "text": ...}``
    (joining the ``equal`` and ``delete`` texts gives ``old``; ``equal`` and ``insert``,
    ``new``)."""
    return [{"kind": s.kind, "text": s.text} for s in word_diff(old, new)]


def segments_markdown(segments: list[Segment]) -> str:
    """Markdown for a list of segments; deleted runs are also struck through (not colour only)."""
    out: list[str] = []
    for segment in segments:
        lines = segment.text.split("\n")
        parts = [_styled_line(segment.kind, line) for line in lines]
        out.append("  \n".join(parts))
    return "".join(out) or "*(empty)*"


def side_by_side_markdown(old: str, new: str) -> tuple[str, str]:
    left, right = side_by_side(old, new)
    return segments_markdown(left), segments_markdown(right)


def inline_markdown(old: str, new: str) -> str:
    return segments_markdown(word_diff(old, new))


# --------------------------------------------------------------------------- internals


def _append(segments: list[Segment], kind: Kind, text: str) -> None:
    if not text:
        return
    if segments and segments[-1].kind == kind:
        segments[-1] = Segment(kind, segments[-1].text + text)
    else:
        segments.append(Segment(kind, text))


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def _styled_line(kind: Kind, line: str) -> str:
    """One line of a segment: highlights wrap only the visible part (Markdown drops a directive
    whose content starts or ends with spaces inside emphasis)."""
    if kind == "equal" or not line.strip():
        return escape_inline(line)
    core = line.strip()
    lead = line[: len(line) - len(line.lstrip())]
    trail = line[len(line.rstrip()):]
    body = escape_inline(core)
    if kind == "delete":
        body = f"~~{body}~~"
    return f"{escape_inline(lead)}:{_STYLE[kind]}[{body}]{escape_inline(trail)}"
