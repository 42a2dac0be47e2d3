"""What the studio's pages show, computed from store records: tables, filters, labels, progress.

Pure functions (pandas, no Streamlit), so the pages stay descriptions of the UI and this logic is
unit-tested. Scores are means in [0, 1]; "could not evaluate" is NaN in a frame (shown with the
table's placeholder text) and the words "could not evaluate" in a label, never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from studio.critics.adapters import metric_calls_per_trial
from studio.engine.people.history import ProposalRow, agent_of
from studio.engine.run.events import Phase, PhaseStarted, Progress
from studio.model.feedback import Feedback
from studio.model.records import (
    Candidate,
    Example,
    Override,
    Proposal,
    Run,
    RunEvent,
    RunStatus,
    StopReason,
    Trial,
    stored_id,
)
from studio.model.redaction import redact
from studio.model.verdicts import Verdict
from studio.model.workflow import split_component
from studio.projects.inbox import RunSummary

if TYPE_CHECKING:  # the critics package is not needed to draw a table
    from studio.critics.agreement import AgreementReport, ConfusionMatrix

NOT_EVALUATED = "could not evaluate"
CLIP = 240
"""Characters of output and feedback shown in a table cell (the detail view shows all)."""

OPTIONAL_COLUMNS = ("verdict", "judge_verdict")
"""Columns left out of a table where every row is empty (a critic that gives no verdict)."""

STATUS_HINTS = {
    RunStatus.QUEUED: "the first free `studio worker` takes it",
    RunStatus.PENDING: "created, waiting for its worker to start",
    RunStatus.RUNNING: "scoring, reflecting or waiting at a gate",
    RunStatus.PAUSED: "resume it to continue",
    RunStatus.COMPLETED: "finished: a stop condition was reached",
    RunStatus.STOPPED: "stopped by a person; it can be resumed",
    RunStatus.FAILED: "failed; see the error, fix it and resume",
    RunStatus.ORPHANED: "its worker stopped (process killed); it can be resumed",
}


# --------------------------------------------------------------------------- formatting


def format_score(value: float | None, *, digits: int = 3, missing: str = NOT_EVALUATED) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    return f"{value:.{digits}f}"


def format_duration(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "unknown"
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def one_line(text: str | None, limit: int = CLIP) -> str:
    """``text`` on one line for a table cell, ending in "…" when cut; secrets from the
    environment shown as ``***`` (model text is stored raw: every table cell comes here)."""
    text = " ".join(redact(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_label(run: Run) -> str:
    """A label that does not change while the run goes on (status is shown elsewhere), so a
    picker keeps its selection."""
    aligns = f" · aligns the critic of {run.spec.aligns.run_id[:8]}" if run.spec.aligns else ""
    return f"{run.name or 'run'}{aligns} · {run.id[:8]} · {_local(run.created_at)[5:16]}"


def align_note(run: Run) -> str:
    """What an align run is, for run lists and the Run page ("" for any other run)."""
    origin = run.spec.aligns
    if origin is None:
        return ""
    part = f" of part {origin.part_name}" if origin.part_name else ""
    return f"aligns the critic of run {origin.run_id} (its {origin.target}{part})"


def candidate_label(index: int, mean: float | None = None, *, best: bool = False,
                    front: bool = False) -> str:
    tags = (" ★ best" if best else "") + (" ◆ front" if front else "")
    score = "" if mean is None and not best else f" ({format_score(mean, missing='n/a')})"
    return f"#{index}{score}{tags}"


def example_label(example: Example, limit: int = 40) -> str:
    fields = {k: v for k, v in example.data.items() if k != "expected"}
    text = fields.get("input") if "input" in fields else ", ".join(
        f"{v}" for v in fields.values())
    # the row is kept as given (the loop reads it); a secret in it is hidden where shown
    return f"{example.split.value} {example.index}: {one_line(str(text), limit)}"


# --------------------------------------------------------------------------- runs


def stop_reason_words(reason: StopReason | None) -> str:
    """``max_iterations`` -> "reached its iteration limit" (:attr:`StopReason.words`, the
    wording the CLI prints too); "" for a run that has not ended."""
    return "" if reason is None else reason.words


def status_line(run: Run) -> str:
    """``paused: resume it to continue``, ``finished: reached its iteration limit``: the
    status and what it means for this run (a completed run names its stop reason)."""
    status = run.shown_status
    if status is RunStatus.COMPLETED and run.stop_reason is not None:
        return f"{status.value}: finished, {run.stop_reason.words}"
    if status is RunStatus.PAUSED and run.status is not RunStatus.PAUSED:
        return (f"{status.value}: holds before its next model call (the calls under way end "
                "first); resume it to continue")
    return f"{status.value}: {STATUS_HINTS[status]}"


def waiting_words(since: datetime | None, now: datetime | None = None) -> str:
    """"waiting 25 min" for a proposal created at ``since`` ("" when nothing waits)."""
    if since is None:
        return ""
    now = now or datetime.now(UTC)
    since = since if since.tzinfo else since.replace(tzinfo=UTC)
    return f"waiting {format_duration((now - since).total_seconds())}"


RUN_COLUMNS = ["id", "name", "waiting", "status", "best", "gain", "review", "iterations",
               "created", "stop reason", "error"]


def runs_frame(runs: Sequence[Run], summaries: Sequence[RunSummary] = (),
               now: datetime | None = None) -> pd.DataFrame:
    """One row per run; ``summaries`` (:class:`studio.projects.inbox.RunSummary`, by run)
    add what waits for a decision, the best score and the gain over the seed."""
    by_id = {s.run.id: s for s in summaries}
    rows = []
    for r in runs:
        summary = by_id.get(r.id)
        waiting = summary.waiting if summary else None
        rows.append({
            "id": r.id, "name": " · ".join(x for x in (r.name, align_note(r)) if x),
            "waiting": waiting_words(waiting.created_at if waiting else None, now),
            "status": r.shown_status.value,
            "best": _float(summary.best_score if summary else None),
            "gain": _float(summary.gain if summary else None),
            "review": r.config.review.value, "iterations": r.config.max_iterations,
            "created": _local(r.created_at), "stop reason": stop_reason_words(r.stop_reason),
            "error": one_line(r.error, 120) if r.error else "",
        })
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def _float(value: float | None) -> float:
    return math.nan if value is None else value


def _local(moment: datetime | None) -> str:
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


# --------------------------------------------------------------------------- trials


@dataclass(frozen=True)
class RowFacts:
    """What a trial's row needs besides the trial: its candidate's index (#0 the seed) and
    its number in the run (trial id -> number)."""

    candidate_index: Mapping[int, int]
    numbers: Mapping[int, int]


@dataclass(frozen=True)
class TrialColumn:
    """One column of the trials table, every fact of it in one place: the value a trial gives,
    its pandas type, and how the Run page shows it (title, kind, format, width, help; in the
    page's table, in the newest-trials table, or only in the frame)."""

    name: str
    value: Callable[[Trial, RowFacts], Any]
    dtype: str | None = None
    """The pandas type (None: object, text)."""
    title: str | None = None
    """The header the page shows (None: ``name``, as Streamlit shows it)."""
    kind: str = "text"
    """``number``, ``text`` or ``checkbox``: which Streamlit column shows it."""
    format: str | None = None
    width: str | None = None
    help: str | None = None
    in_table: bool = True
    """Shown in the page's table of trials."""
    in_latest: bool = True
    """Shown in the small table of the newest trials."""

    @property
    def styled(self) -> bool:
        """The page gives it a column of its own (else Streamlit's default)."""
        return self.title is not None


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


TRIAL_TABLE: tuple[TrialColumn, ...] = (
    TrialColumn("number", lambda t, f: f.numbers.get(stored_id(t)), "Int64", "trial", "number",
                "%d", "small", "its number in this run"),
    TrialColumn("id", lambda t, f: t.id, "int64", "id", "number", "%d", "small",
                "the database id (`studio override ID`)"),
    TrialColumn("iteration", lambda t, f: t.iteration, "int64", "iter.", "number",
                width="small"),
    TrialColumn("phase", lambda t, f: t.phase.value),
    TrialColumn("candidate", lambda t, f: f.candidate_index.get(t.candidate_id, -1), "int64",
                "cand.", "number", "#%d", "small"),
    TrialColumn("example", lambda t, f: f"{t.split.value} {t.example_index}"),
    TrialColumn("score", lambda t, f: _nan(t.effective_score), "float64", "score", "number",
                "%.3f", "small", "Effective score: the human's where corrected"),
    TrialColumn("judge_score", lambda t, f: _nan(t.score), "float64", "judge", "number",
                "%.3f", "small"),
    TrialColumn("verdict", lambda t, f: verdict_text(t.feedback), None, "ADK verdict", "text",
                width="medium",
                help="Each metric against its own threshold; the case passes only when every "
                "metric passes (adk eval's rule). The score beside it is what GEPA optimises."),
    TrialColumn("overridden", lambda t, f: t.overridden, "bool", "human", "checkbox",
                width="small"),
    TrialColumn("error", lambda t, f: one_line(t.error, 160) if t.error else ""),
    TrialColumn("feedback", lambda t, f: one_line(t.effective_feedback), None, "feedback",
                width="large"),
    TrialColumn("output", lambda t, f: one_line(t.output), None, "output", width="large",
                in_latest=False),
    TrialColumn("latency_s", lambda t, f: round(t.latency_s, 2), "float64", "latency",
                "number", "%.2f s", "small", in_latest=False),
    TrialColumn("candidate_id", lambda t, f: t.candidate_id, "int64", in_table=False,
                in_latest=False),
    TrialColumn("proposal_id", lambda t, f: t.proposal_id, "Int64", in_table=False,
                in_latest=False),
)
"""The trials table's columns, in order: the one list the frame (:func:`trial_frame`) and the
Run page (:mod:`components.trial_table`) both read."""
TRIAL_COLUMNS = [c.name for c in TRIAL_TABLE]
TABLE_COLUMNS = [c.name for c in TRIAL_TABLE if c.in_table]
"""The columns of the page's table of trials, in order."""
LATEST_COLUMNS = [c.name for c in TRIAL_TABLE if c.in_latest]
"""The columns of the table of the newest trials, in order."""


def trial_frame(trials: Iterable[Trial], candidate_index: dict[int, int],
                numbers: Mapping[int, int] | None = None) -> pd.DataFrame:
    """One row per trial, oldest first; ``score`` is the effective (human-corrected) score;
    ``number`` the trial's number in its run (``numbers``: trial id -> number, from
    ``Store.trial_numbers``), ``id`` the database's (what ``studio override`` takes)."""
    facts = RowFacts(candidate_index, numbers or {})
    rows = [{c.name: c.value(t, facts) for c in TRIAL_TABLE} for t in trials]
    frame = pd.DataFrame(rows, columns=[c.name for c in TRIAL_TABLE])
    return frame.astype({c.name: c.dtype for c in TRIAL_TABLE if c.dtype is not None})


def verdict_text(feedback: Feedback) -> str:
    """The critic's verdict by ADK's rule in one line (``FAILED: response_match_score 0.19 <
    0.8``); "" for a critic that gives none."""
    return feedback.verdict.text() if feedback.verdict is not None else ""


def shown_columns(order: Sequence[str], frame: pd.DataFrame) -> list[str]:
    """``order`` without the optional columns (:data:`OPTIONAL_COLUMNS`) empty in ``frame``."""
    return [c for c in order if c not in OPTIONAL_COLUMNS
            or (c in frame.columns and frame[c].astype(bool).any())]


def metric_rows(verdict: Verdict) -> pd.DataFrame:
    """Each metric of a verdict: its score and threshold on its own scale, and ADK's status."""
    rows = [{"metric": m.name, "score": _float(m.score), "threshold": _float(m.threshold),
             "verdict": m.status.value} for m in verdict.metrics]
    return pd.DataFrame(rows, columns=["metric", "score", "threshold", "verdict"])


def optimised_note(verdict: Verdict, score: float | None) -> str:
    """What the case's verdict means beside the number GEPA optimises."""
    return (f"ADK's verdict: {verdict.status.value} (adk eval's rule: a case passes only when "
            f"every metric passes its threshold). GEPA optimises the score "
            f"{format_score(score)} ({verdict.score_rule.value}: {verdict.score_rule.words}).")


@dataclass
class TrialFilters:
    """What the trials table shows; empty lists mean "all"."""

    iterations: tuple[int, int] | None = None
    """Inclusive range of iterations."""
    candidates: list[int] = field(default_factory=list)
    """Candidate indexes (#0 is the seed)."""
    phases: list[str] = field(default_factory=list)
    score_range: tuple[float, float] = (0.0, 1.0)
    include_unscored: bool = True
    """Also show trials the critic could not evaluate."""
    errors: str = "any"
    """``any``, ``only errors`` or ``no errors``."""
    overridden: str = "any"
    """``any``, ``overridden`` or ``not overridden``."""

    @property
    def active(self) -> bool:
        return self != TrialFilters()

    def query(self) -> dict[str, Any]:
        """The filters as the store's ``trial_page`` takes them (filtered in SQL)."""
        return {"iterations": self.iterations, "candidates": list(self.candidates),
                "phases": list(self.phases), "score_range": tuple(self.score_range),
                "include_unscored": self.include_unscored, "errors": self.errors,
                "overridden": self.overridden}


ERROR_CHOICES = ("any", "only errors", "no errors")
OVERRIDE_CHOICES = ("any", "overridden", "not overridden")


def override_signature(overrides: Sequence[Override]) -> tuple[int, int, int]:
    """Changes whenever an override is added or undone (cheap to compare between polls)."""
    undone = sum(1 for o in overrides if o.undone_at is not None)
    last = max((o.id or 0 for o in overrides), default=0)
    return len(overrides), last, undone


# --------------------------------------------------------------------------- progress


@dataclass
class ProgressSummary:
    status: RunStatus
    iteration: int
    max_iterations: int
    metric_calls: int
    max_metric_calls: int | None
    best_score: float | None
    best_candidate_id: int | None
    eta_seconds: float | None
    elapsed_seconds: float
    review_seconds: float | None = None
    """Review mode: the person's review time the run still expects, counted in the ETA."""
    test_trials: int = 0
    """Held-out test-set trials: outside the metric-call budget, so shown apart."""

    @property
    def total_eta_seconds(self) -> float | None:
        """The machine's ETA plus the expected review time; unknown while the machine's is
        (before the first iteration ends: the review time alone stood still as an "ETA" while
        a first reflection ran for many minutes)."""
        if self.review_seconds is None or self.eta_seconds is None:
            return self.eta_seconds
        return self.eta_seconds + self.review_seconds

    @property
    def fraction(self) -> float:
        if self.status is RunStatus.COMPLETED:
            return 1.0
        parts = [self.iteration / self.max_iterations if self.max_iterations else 0.0]
        if self.max_metric_calls:
            parts.append(self.metric_calls / self.max_metric_calls)
        return max(0.0, min(1.0, max(parts)))

    def text(self) -> str:
        calls = f"{self.metric_calls}" + (f" of {self.max_metric_calls}"
                                          if self.max_metric_calls else "")
        best = format_score(self.best_score, missing="not scored yet")
        eta = ("ETA " + format_duration(self.total_eta_seconds)) if self.status.is_active \
            and self.total_eta_seconds is not None else ""
        if eta and self.review_seconds is not None:
            eta += f" (incl. {format_duration(self.review_seconds)} of your review)"
        parts = [f"{self.iteration} of {self.max_iterations} iterations done",
                 f"metric calls {calls}", f"best {best}"]
        if self.test_trials:
            parts.append(f"{self.test_trials} test-set trials (outside the budget)")
        return " · ".join(parts + ([eta] if eta else []))


def phase_line(event: PhaseStarted, seconds_so_far: float | None = None) -> str:
    """What the run is doing, with what, for how long (``seconds_so_far``; None: it just
    began), and how long such a phase takes on this machine: ``reflecting with local/smollm2:
    4 min 03 s so far, about 9 min 12 s per proposal on this machine``."""
    which = event.phase
    head = which.words
    so_far = [] if seconds_so_far is None else [f"{format_duration(seconds_so_far)} so far"]
    if which is Phase.AWAITING_DECISION:
        shown = f" on proposal {event.proposal_id}" if event.proposal_id is not None else ""
        return f"{head}{shown}" + (f": {so_far[0]}" if so_far else "")
    if which.unit == "example":
        head += f" ({event.items} example{'s' if event.items != 1 else ''})"
    if event.model:
        head += f" with {event.model}"
    return f"{head}: " + ", ".join(so_far + [_estimate(event)])


def _estimate(event: PhaseStarted) -> str:
    if event.seconds_per_item is None:
        first = "this run's first proposal" if event.phase.unit == "proposal" \
            else "the first time this run does it"
        return f"no estimate yet ({first})"
    if event.phase.unit == "proposal":
        return f"about {format_duration(event.seconds_per_item)} per proposal on this machine"
    return (f"about {format_duration(event.estimate_seconds)} on this machine "
            f"({format_duration(event.seconds_per_item)} per example)")


def current_phase(run: Run, event: RunEvent | None, now: datetime | None = None
                  ) -> str | None:
    """:func:`phase_line` for the run's latest phase while it runs (None otherwise), the time so
    far counted from when the phase was stored."""
    if event is None or run.status is not RunStatus.RUNNING:
        return None
    started = PhaseStarted.from_stored(event)
    now = now or datetime.now(UTC)
    created = event.created_at if event.created_at.tzinfo else event.created_at.replace(
        tzinfo=UTC)
    return phase_line(started, max(0.0, (now - created).total_seconds()))


def progress_summary(run: Run, event: RunEvent | None, loop_trials: int,
                     now: datetime | None = None, review_seconds: float | None = None,
                     test_trials: int = 0) -> ProgressSummary:
    """The run's progress from its latest ``progress`` event and the live count of the loop's
    trials, its metric calls (the test set's ``test_trials`` are outside its budget;
    ``review_seconds``: the person's expected review time, in review mode)."""
    progress = Progress.from_stored(event) if event is not None else Progress(
        run_id=run.id, iteration=0, max_metric_calls=run.config.max_metric_calls)
    eta = progress.eta_seconds
    if eta is not None and event is not None and run.status is RunStatus.RUNNING:
        now = now or datetime.now(UTC)
        created = event.created_at if event.created_at.tzinfo else event.created_at.replace(
            tzinfo=UTC)
        eta = max(0.0, eta - (now - created).total_seconds())
    return ProgressSummary(
        status=run.status, iteration=progress.iteration,
        max_iterations=progress.max_iterations or run.config.max_iterations,
        metric_calls=max(loop_trials * metric_calls_per_trial(run.spec.critic),
                         progress.metric_calls),
        max_metric_calls=progress.max_metric_calls, best_score=progress.best_score,
        best_candidate_id=progress.best_candidate_id, eta_seconds=eta,
        elapsed_seconds=progress.elapsed_seconds,
        review_seconds=review_seconds, test_trials=test_trials)


# --------------------------------------------------------------------------- trial detail


def trace_tool_calls(trace: dict[str, Any]) -> pd.DataFrame:
    """Tool calls of a trace in the order they were made, with their arguments and results, as
    one-line text columns."""
    rows = [{"step": number, "tool": str(call.get("name")),
             "arguments": redact(json.dumps(call.get("args") or {}, ensure_ascii=False,
                                            default=str)),
             "result": NO_RESULT if call.get("result") is None else one_line(
                 json.dumps(call.get("result"), ensure_ascii=False, default=str), 400)}
            for number, call in _numbered_calls(trace)]
    return pd.DataFrame(rows, columns=["step", "tool", "arguments", "result"])


NO_RESULT = "(no result recorded: the run ended before the tool returned)"


def tool_call_steps(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Each tool call as ``{step, tool, arguments, result}``: numbered from 1 in call order,
    arguments and result as indented JSON text (to show verbatim, never as HTML)."""
    return [{"step": number, "tool": str(call.get("name")),
             "arguments": _pretty_json(call.get("args") or {}),
             "result": NO_RESULT if call.get("result") is None else _pretty_json(call["result"])}
            for number, call in _numbered_calls(trace)]


def _numbered_calls(trace: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    calls = (trace or {}).get("tool_calls") or []
    return [(number, call) for number, call in enumerate(calls, start=1)
            if isinstance(call, dict)]


def _pretty_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def dimension_scores(feedback: Feedback) -> pd.DataFrame:
    """The critic's dimension scores as rows (an unreadable stored score shows as NaN)."""
    rows = [{"dimension": k, "score": v} for k, v in feedback.dimensions.items()]
    return pd.DataFrame(rows, columns=["dimension", "score"])


# --------------------------------------------------------------------------- review (overrides)


REVIEW_COLUMNS = ["number", "id", "iteration", "phase", "candidate", "example", "judge_score",
                  "judge_verdict", "human_score", "judge_feedback", "human_feedback", "by",
                  "when", "input", "output"]


def review_frame(trials: Iterable[Trial], candidate_index: dict[int, int],
                 numbers: Mapping[int, int] | None = None) -> pd.DataFrame:
    """Rows for the override editor: the judge's values beside the human's (editable);
    ``number`` is the trial's in its run (``numbers``: trial id -> number)."""
    rows = []
    numbers = numbers or {}
    for t in trials:
        o = t.override
        rows.append({
            "number": numbers.get(stored_id(t)), "id": t.id, "iteration": t.iteration,
            "phase": t.phase.value,
            "candidate": candidate_index.get(t.candidate_id, -1),
            "example": f"{t.split.value} {t.example_index}", "input": one_line(t.input_text, 160),
            "output": one_line(t.output, 400),
            "judge_score": math.nan if t.score is None else t.score,
            "judge_verdict": verdict_text(t.feedback),
            "judge_feedback": one_line(t.feedback_text, 400),
            "human_score": math.nan if o is None or o.score is None else o.score,
            "human_feedback": redact(o.feedback or "") if o is not None else "",
            "by": o.author if o is not None else "",
            "when": _local(o.created_at) if o is not None else "",
        })
    frame = pd.DataFrame(rows, columns=REVIEW_COLUMNS)
    return frame.astype({"number": "Int64", "id": "int64", "judge_score": "float64",
                         "human_score": "float64"})


@dataclass(frozen=True)
class OverrideChange:
    trial_id: int
    score: float | None
    feedback: str | None


def override_changes(before: pd.DataFrame, after: pd.DataFrame) -> list[OverrideChange]:
    """Rows whose human score or feedback was edited to a new, non-empty value.

    A change keeps the row's other human value (a new override replaces the active one, so a
    feedback edit must not drop the human score, nor a score edit the human feedback).
    """
    changes = []
    previous = before.set_index("id")
    for _, row in after.iterrows():
        trial_id = int(row["id"])
        if trial_id not in previous.index:
            continue
        old = previous.loc[trial_id]
        score = _as_score(row["human_score"])
        old_score = _as_score(old["human_score"])
        feedback = (row["human_feedback"] or "").strip() if isinstance(
            row["human_feedback"], str) else ""
        old_feedback = (old["human_feedback"] or "").strip() if isinstance(
            old["human_feedback"], str) else ""
        score_changed = score is not None and score != old_score
        feedback_changed = bool(feedback) and feedback != old_feedback
        if score_changed or feedback_changed:
            changes.append(OverrideChange(trial_id, score, feedback or old_feedback or None))
    return changes


def _as_score(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def overrides_frame(overrides: Sequence[Override], trial_info: dict[int, dict[str, Any]]
                    ) -> pd.DataFrame:
    """Every override, newest first: judge vs human side by side, who and when, undone or not."""
    rows = []
    for o in reversed(list(overrides)):
        info = trial_info.get(o.trial_id, {})
        rows.append({
            "override": o.id, "trial": info.get("number"), "trial_id": o.trial_id,
            "iteration": info.get("iteration"),
            "example": info.get("example", ""),
            "judge_score": math.nan if o.judge_score is None else o.judge_score,
            "human_score": math.nan if o.score is None else o.score,
            "judge_feedback": one_line(o.judge_feedback, 200),
            "human_feedback": one_line(o.feedback, 200),
            "corrected_output": one_line(o.corrected_output, 200), "by": o.author,
            "when": _local(o.created_at),
            "undone": _local(o.undone_at) if o.undone_at else "",
        })
    return pd.DataFrame(rows, columns=["override", "trial", "trial_id", "iteration", "example",
                                       "judge_score", "human_score", "judge_feedback",
                                       "human_feedback", "corrected_output", "by", "when",
                                       "undone"])


# --------------------------------------------------------------------------- proposals


def evidence_frame(parent: Sequence[Trial], child: Sequence[Trial]) -> pd.DataFrame:
    """Per minibatch example: the parent's and the child's score and feedback, and the delta."""
    child_by_example = {t.example_id: t for t in child}
    rows = []
    for p in parent:
        c = child_by_example.get(p.example_id)
        ps = p.effective_score
        cs = c.effective_score if c is not None else None
        rows.append({
            "example": f"{p.split.value} {p.example_index}", "input": one_line(p.input_text, 80),
            "parent_score": math.nan if ps is None else ps,
            "child_score": math.nan if cs is None else cs,
            "delta": math.nan if ps is None or cs is None else cs - ps,
            "parent_feedback": one_line(p.effective_feedback, 200),
            "child_feedback": one_line(c.effective_feedback, 200) if c else "(not scored yet)",
        })
    return pd.DataFrame(rows, columns=["example", "input", "parent_score", "child_score", "delta",
                                       "parent_feedback", "child_feedback"])


def proposal_label(proposal: Proposal, candidate_index: Mapping[int, int]) -> str:
    """What a proposal changes: its component, or for a merge the two candidates it combines."""
    if proposal.merge is None:
        return proposal.component
    a, b = (candidate_index.get(p, "?") for p in proposal.merge.parents)
    return f"merge of #{a} and #{b}"


def merge_source_frame(proposal: Proposal, candidates: Mapping[int, Candidate]) -> pd.DataFrame:
    """A merge, one row per component: the candidate it is taken from and why (which parent
    changed it since the common ancestor)."""
    detail = proposal.merge
    if detail is None:  # a reflection's proposal takes no component from another candidate
        return pd.DataFrame(columns=["component", "from", "why"])
    ancestor = candidates.get(detail.ancestor)
    rows = []
    for key, source in detail.sources.items():
        changed_by = [p for p in detail.parents if ancestor is not None and p in candidates
                      and candidates[p].components.get(key) != ancestor.components.get(key)]
        texts = {candidates[p].components.get(key) for p in changed_by}
        rows.append({"component": key, "from": _index(candidates, source),
                     "why": _why_taken(source, len(changed_by), len(texts), detail.ancestor,
                                       candidates)})
    return pd.DataFrame(rows, columns=["component", "from", "why"]).astype({"from": "Int64"})


def _why_taken(source: int, changers: int, versions: int, ancestor: int,
               candidates: Mapping[int, Candidate]) -> str:
    if source == ancestor:
        return f"unchanged since their common ancestor #{_index(candidates, ancestor)}"
    if changers == 1:
        return f"improved by #{_index(candidates, source)} only"
    if versions == 1:
        return "changed the same way by both parents"
    return f"changed by both parents; #{_index(candidates, source)}'s text (the better parent)"


def _index(candidates: Mapping[int, Candidate], candidate_id: int) -> int | None:
    found = candidates.get(candidate_id)
    return found.index if found is not None else None


def proposal_history(rows: Sequence[ProposalRow]) -> pd.DataFrame:
    """Every proposal, newest first: what it changed, how it ended, the effective sums now, the
    evidence in words (what the decision saw and what holds now, labelled where they differ),
    and the decision taken."""
    records = []
    for r in reversed(list(rows)):
        now = r.now
        records.append({
            "proposal": r.number, "id": r.id, "iteration": r.iteration, "agent": agent_of(r),
            "component": r.label if r.merge is not None else split_component(r.component)[1],
            "status": r.status.value,
            "parent": r.parent_index if r.parent_index is not None else -1,
            "child": r.child_index,
            "parent_sum": now.parent_sum if now else math.nan,
            "child_sum": now.child_sum if now else math.nan,
            "evidence": r.sums_text(),
            "decision": r.decision.value if r.decision else "",
            "by": r.decided_by or "",
            "reason": one_line(r.reason, 200),
            "when": _local(r.decided_at) if r.decided_at else "",
            "edited_from": r.edited_from_number,
        })
    frame = pd.DataFrame(records, columns=["proposal", "id", "iteration", "agent", "component",
                                           "status", "parent", "child", "parent_sum",
                                           "child_sum", "evidence", "decision", "by", "reason",
                                           "when", "edited_from"])
    return frame.astype({"child": "Int64", "edited_from": "Int64", "parent_sum": "float64",
                         "child_sum": "float64"})


# --------------------------------------------------------------------------- agreement


def confusion_frame(confusion: ConfusionMatrix) -> pd.DataFrame:
    """2x2 table, judge verdict by row, human verdict (the truth) by column."""
    return pd.DataFrame(
        {"human: pass": [confusion.tp, confusion.fn], "human: fail": [confusion.fp, confusion.tn]},
        index=["judge: pass", "judge: fail"])


def disagreements_frame(report: AgreementReport) -> pd.DataFrame:
    rows = [{"trial": d.trial_id, "run": d.run_id, "judge_score": d.judge_score,
             "human_score": d.human_score, "gap": abs(d.judge_score - d.human_score),
             "judge_feedback": one_line(d.judge_feedback, 200),
             "human_feedback": one_line(d.human_feedback, 200)} for d in report.disagreements]
    return pd.DataFrame(rows, columns=["trial", "run", "judge_score", "human_score", "gap",
                                       "judge_feedback", "human_feedback"])
