"""The Compare page's output matrix: one row per validation example, one column per chosen
version, each cell that version's output with its score (what GEPA optimises) and a pass/fail
verdict: ADK's, by ``adk eval``'s rule, where the critic judged by ADK's criteria, else the
score against a pass mark.

Pure functions over store records (the trials come from ``components/loaders.py``). Filters
("only rows where versions differ", "only failures", a text or regex search) run here, so the
page only draws. Model text is never interpreted: the frame holds plain strings and the colour
comes from the verdict, not from anything the model wrote.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import pandas as pd

from studio.model.errors import StudioError
from studio.model.records import Candidate, Example, Trial, stored_id
from studio.model.verdicts import EvalStatus
from studio.views.tables import example_label, format_score, one_line

CELL_CLIP = 160
"""Characters of an output shown in a cell; the full output opens below the matrix."""
SEARCH_LIMIT = 200
"""Longest search text accepted: a longer one is refused with a message, not run."""
SEARCHED_CHARS = 20_000
"""Characters of each output (and input) a search reads: bounds a regex's work per cell."""
DEFAULT_PASS_AT = 0.5


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNSCORED = "could not evaluate"
    """The critic gave no score (a timeout, an unparseable reply): not a 0, and not a pass."""
    MISSING = "not scored"
    """The version has no validation trial for this example."""


VERDICT_MARKS = {Verdict.PASS: "✓", Verdict.FAIL: "✗", Verdict.UNSCORED: "?",
                 Verdict.MISSING: "·"}
VERDICT_COLOURS = {Verdict.PASS: "background-color: #d8f3dc", Verdict.FAIL:
                   "background-color: #ffd6d6", Verdict.UNSCORED: "background-color: #fff3bf",
                   Verdict.MISSING: ""}


class SearchError(StudioError):
    """A search the matrix cannot run (too long, or a regex that does not compile);
    ``value`` is the search as typed."""

    def __init__(self, message: str, *, value: str) -> None:
        super().__init__(message)
        self.value = value


@dataclass(frozen=True)
class Version:
    """One column of the matrix: a candidate and how it is named."""

    candidate_id: int
    index: int
    """The candidate's number in its run (#0 is the seed)."""
    label: str
    """``#0 seed``, ``#3 best``, ``#5``: unique within the matrix (it names the column)."""


@dataclass(frozen=True)
class Cell:
    trial: Trial | None
    verdict: Verdict

    @property
    def score(self) -> float | None:
        return self.trial.effective_score if self.trial else None

    @property
    def output(self) -> str:
        return self.trial.output if self.trial else ""

    def text(self) -> str:
        """What the cell shows: verdict mark, score and the clipped output."""
        if self.trial is None:
            return f"{VERDICT_MARKS[self.verdict]} not scored"
        body = one_line(self.trial.error or self.trial.output, CELL_CLIP) or "(no output)"
        return f"{VERDICT_MARKS[self.verdict]} {format_score(self.score, digits=2)} · {body}"


@dataclass(frozen=True)
class Row:
    example: Example
    label: str
    cells: dict[int, Cell]
    """Candidate id -> its cell, for every version of the matrix."""

    def differs(self) -> bool:
        """The versions do not all say the same thing: outputs or scores differ."""
        seen = {(" ".join(c.output.split()), c.score, c.verdict) for c in self.cells.values()}
        return len(seen) > 1

    def fails(self) -> bool:
        """Some version did not pass (failed, could not be evaluated, or was not scored)."""
        return any(c.verdict is not Verdict.PASS for c in self.cells.values())


@dataclass(frozen=True)
class OutputMatrix:
    versions: list[Version]
    rows: list[Row]
    pass_at: float

    def row(self, example_id: int) -> Row | None:
        return next((r for r in self.rows if r.example.id == example_id), None)


@dataclass(frozen=True)
class MatrixFilter:
    differ_only: bool = False
    failures_only: bool = False
    search: str = ""
    regex: bool = False


@dataclass(frozen=True)
class Filtered:
    rows: list[Row]
    total: int
    problem: str | None = None
    """Why the search was not run (shown to the person; the other filters still apply)."""
    hidden: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", self.total - len(self.rows))


def version_labels(candidates: Sequence[Candidate], chosen: Sequence[int],
                   best_id: int | None) -> list[Version]:
    """Columns for the chosen candidates, in order, named by run index and role."""
    by_id = {c.id: c for c in candidates}
    seed = candidates[0].id if candidates else None
    versions = []
    for cid in chosen:
        if cid not in by_id:
            continue
        roles = [name for name, match in (("seed", cid == seed), ("best", cid == best_id))
                 if match]
        versions.append(Version(cid, by_id[cid].index, " ".join([f"#{by_id[cid].index}", *roles])))
    return versions


def verdict(trial: Trial | None, pass_at: float) -> Verdict:
    """A cell's verdict: ADK's where the critic judged by ADK's criteria (each metric against
    its own threshold, as ``adk eval``), unless a person corrected the trial; else its score
    against ``pass_at``."""
    if trial is None:
        return Verdict.MISSING
    judged = trial.feedback.verdict
    if judged is not None and not trial.overridden:
        return _ADK_VERDICTS[judged.status]
    score = trial.effective_score
    if score is None:
        return Verdict.UNSCORED
    return Verdict.PASS if score >= pass_at else Verdict.FAIL


_ADK_VERDICTS = {EvalStatus.PASSED: Verdict.PASS, EvalStatus.FAILED: Verdict.FAIL,
                 EvalStatus.NOT_EVALUATED: Verdict.UNSCORED}


def judged_by_adk(matrix: OutputMatrix) -> bool:
    """Whether the matrix's verdicts are ADK's (a trial carries one), not ``pass_at``'s."""
    return any(cell.trial is not None and cell.trial.feedback.verdict is not None
               for row in matrix.rows for cell in row.cells.values())


def build_matrix(versions: Sequence[Version], trials: Mapping[int, Sequence[Trial]],
                 examples: Sequence[Example], pass_at: float = DEFAULT_PASS_AT
                 ) -> OutputMatrix:
    """``trials``: candidate id -> its validation trials (the first per example counts, as
    the pool's scores do). One row per example in ``examples`` order."""
    first = {cid: _first_per_example(rows) for cid, rows in trials.items()}
    rows = []
    for example in examples:
        cells = {}
        for version in versions:
            trial = first.get(version.candidate_id, {}).get(stored_id(example))
            cells[version.candidate_id] = Cell(trial, verdict(trial, pass_at))
        rows.append(Row(example, example_label(example, 60), cells))
    return OutputMatrix(list(versions), rows, pass_at)


def _first_per_example(trials: Sequence[Trial]) -> dict[int, Trial]:
    found: dict[int, Trial] = {}
    for trial in sorted(trials, key=lambda t: t.id or 0):
        found.setdefault(trial.example_id, trial)
    return found


NESTED_REPEAT = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")
"""A repeated group that repeats inside (``(a+)+``): the shape that can take exponential
time on a non-matching text, refused before it runs."""


def compile_search(text: str, regex: bool) -> re.Pattern[str] | None:
    """The search as a case-insensitive pattern (None: no search). Raises SearchError with
    what to change when the text is too long or the regex does not compile."""
    text = text.strip()
    if not text:
        return None
    if len(text) > SEARCH_LIMIT:
        raise SearchError(f"The search is {len(text)} characters long; keep it under "
                          f"{SEARCH_LIMIT}.", value=text)
    if not regex:
        return re.compile(re.escape(text), re.IGNORECASE)
    if NESTED_REPEAT.search(text):
        raise SearchError(f"The regex {text!r} repeats a group that itself repeats (like "
                          "(a+)+), which can take forever: write it without the nesting.",
                          value=text)
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error as exc:
        raise SearchError(f"The regex {text!r} does not compile: {exc}. Fix it, or untick "
                          "'regex' to search for the text as written.", value=text) from exc


def matches(row: Row, pattern: re.Pattern[str]) -> bool:
    """The pattern occurs in the example's input or in any version's output or feedback."""
    texts = [row.label] + [part for cell in row.cells.values() if cell.trial
                           for part in (cell.trial.input_text, cell.trial.output,
                                        cell.trial.feedback.text)]
    return any(pattern.search(t[:SEARCHED_CHARS]) for t in texts if t)


def apply_filter(matrix: OutputMatrix, chosen: MatrixFilter) -> Filtered:
    """The rows that pass every filter; a search that cannot run is reported, not raised."""
    rows = list(matrix.rows)
    if chosen.differ_only:
        rows = [r for r in rows if r.differs()]
    if chosen.failures_only:
        rows = [r for r in rows if r.fails()]
    try:
        pattern = compile_search(chosen.search, chosen.regex)
    except SearchError as exc:
        return Filtered(rows, len(matrix.rows), problem=str(exc))
    if pattern is not None:
        rows = [r for r in rows if matches(r, pattern)]
    return Filtered(rows, len(matrix.rows))


def matrix_frame(matrix: OutputMatrix, rows: Sequence[Row]) -> pd.DataFrame:
    """The table shown: ``example`` then one text column per version (label)."""
    columns = ["example"] + [v.label for v in matrix.versions]
    data = [[r.label] + [r.cells[v.candidate_id].text() for v in matrix.versions] for r in rows]
    return pd.DataFrame(data, columns=columns)


def verdict_frame(matrix: OutputMatrix, rows: Sequence[Row]) -> pd.DataFrame:
    """Same shape as :func:`matrix_frame`: each cell's CSS background from its verdict."""
    columns = ["example"] + [v.label for v in matrix.versions]
    data = [[""] + [VERDICT_COLOURS[r.cells[v.candidate_id].verdict] for v in matrix.versions]
            for r in rows]
    return pd.DataFrame(data, columns=columns)


def pass_counts(matrix: OutputMatrix) -> dict[str, str]:
    """Per version label: ``passed/scored`` over all rows (not only the filtered ones)."""
    counts = {}
    for v in matrix.versions:
        cells = [r.cells[v.candidate_id] for r in matrix.rows]
        scored = [c for c in cells if c.trial is not None]
        passed = sum(c.verdict is Verdict.PASS for c in scored)
        counts[v.label] = f"{passed}/{len(scored)}"
    return counts
