"""Typed engine events. Each is written to the store (the UI's channel) and handed to in-process
listeners; listeners subscribe by event class, so a typo fails at import, not silently."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from studio.model.records import EventKind


@dataclass(frozen=True)
class EngineEvent:
    kind: ClassVar[EventKind]
    run_id: str
    iteration: int

    def payload(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("run_id")
        data.pop("iteration")
        return data


@dataclass(frozen=True)
class RunStarted(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_STARTED
    resumed: bool = False


@dataclass(frozen=True)
class BaselineScored(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.BASELINE_SCORED
    candidate_id: int = 0
    score: float | None = None


@dataclass(frozen=True)
class IterationStarted(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.ITERATION_STARTED
    parent_id: int = 0
    component: str = "instruction"
    minibatch: list[int] = field(default_factory=list)
    """Example ids of this iteration's minibatch (a merge's validation subsample)."""
    proposal_kind: str = "reflection"
    """``reflection`` or ``merge`` (then ``parent_id`` is the first parent, ``component``
    empty)."""


@dataclass(frozen=True)
class ProposalCreated(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.PROPOSAL_CREATED
    proposal_id: int = 0
    parent_id: int = 0
    component: str = ""
    proposal_kind: str = "reflection"
    parent_ids: list[int] = field(default_factory=list)
    """A merge's two parents (empty for a reflection, whose one parent is ``parent_id``)."""
    sources: dict[str, int] = field(default_factory=dict)
    """A merge's component key -> id of the candidate it is taken from."""


@dataclass(frozen=True)
class ProposalInvalid(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.PROPOSAL_INVALID
    proposal_id: int = 0
    reason: str = ""


class SkipCause(StrEnum):
    """Why an iteration ended without a proposal at the gate."""

    REPEATED = "repeated"
    """The reflection kept proposing texts already tried (rejected, edited away, invalid or
    pooled), however often it was asked again."""
    PERFECT_PARENT = "perfect_parent"
    """The parent scored perfectly on the minibatch: no child could pass the rule (GEPA's
    ``skip_perfect_score``), so no reflection was asked."""


@dataclass(frozen=True)
class IterationSkipped(EngineEvent):
    """The iteration ended without a proposal to gate (see :class:`SkipCause`)."""

    kind: ClassVar[EventKind] = EventKind.ITERATION_SKIPPED
    cause: str = SkipCause.REPEATED.value
    reason: str = ""
    """In words, for the run's events, the Run and Proposals pages and the CLI."""
    proposal_id: int | None = None
    """The last refused proposal, when there was one."""


@dataclass(frozen=True)
class ProposalEvaluated(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.PROPOSAL_EVALUATED
    proposal_id: int = 0
    child_id: int = 0
    parent_sum: float = 0.0
    child_sum: float = 0.0
    rule_accepts: bool = False
    proposal_kind: str = "reflection"
    """For a merge, ``parent_sum`` is the better parent's sum on the subsample."""


@dataclass(frozen=True)
class AwaitingDecision(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.AWAITING_DECISION
    proposal_id: int = 0


@dataclass(frozen=True)
class DecisionApplied(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.DECISION_APPLIED
    proposal_id: int = 0
    action: str = ""
    automatic: bool = False
    reason: str = ""


@dataclass(frozen=True)
class CandidateAccepted(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.CANDIDATE_ACCEPTED
    candidate_id: int = 0
    score: float | None = None


@dataclass(frozen=True)
class Progress(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.PROGRESS
    max_iterations: int = 0
    metric_calls: int = 0
    max_metric_calls: int | None = None
    best_score: float | None = None
    best_candidate_id: int | None = None
    elapsed_seconds: float = 0.0
    eta_seconds: float | None = None


@dataclass(frozen=True)
class RunPaused(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_PAUSED


@dataclass(frozen=True)
class RunResumed(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_RESUMED


@dataclass(frozen=True)
class RunFinished(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_FINISHED
    status: str = "completed"
    stop_reason: str = ""


@dataclass(frozen=True)
class TestScored(EngineEvent):
    """The baseline and the best candidate were scored on the held-out test set."""

    __test__ = False  # not a pytest class
    kind: ClassVar[EventKind] = EventKind.TEST_SCORED
    baseline_id: int = 0
    best_id: int = 0
    baseline_mean: float | None = None
    best_mean: float | None = None


@dataclass(frozen=True)
class TestUnscored(EngineEvent):
    """Scoring the test set failed (``reason="error"``) or was stopped (the stop's reason)."""

    __test__ = False  # not a pytest class
    kind: ClassVar[EventKind] = EventKind.TEST_UNSCORED
    reason: str = "error"
    message: str = ""


@dataclass(frozen=True)
class TrialCommitted(EngineEvent):
    """In-process only: the trial row itself is the durable record."""

    kind: ClassVar[EventKind] = EventKind.TRIAL_COMMITTED
    trial_id: int = 0
    candidate_id: int = 0
    score: float | None = None


STORED_EVENTS = (RunStarted, BaselineScored, IterationStarted, ProposalCreated, ProposalInvalid,
                 IterationSkipped,
                 ProposalEvaluated, AwaitingDecision, DecisionApplied, CandidateAccepted, Progress,
                 RunPaused, RunResumed, RunFinished, TestScored, TestUnscored)
