"""Typed engine events. Each is written to the store (the UI's channel) and handed to in-process
listeners; listeners subscribe by event class, so a typo fails at import, not silently."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cache
from typing import ClassVar, Self, cast

from pydantic import TypeAdapter, ValidationError

from studio.model.errors import StoreError
from studio.model.records import (
    DecisionAction,
    EventKind,
    ProposalKind,
    RunEvent,
    RunStatus,
    StopReason,
)


@dataclass(frozen=True)
class EngineEvent:
    kind: ClassVar[EventKind]
    run_id: str
    iteration: int

    def payload(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("run_id")
        data.pop("iteration")
        return data

    @classmethod
    def from_stored(cls, event: RunEvent) -> Self:
        """The typed event a stored row records, its payload read back through the event's own
        fields (enums included), so no reader looks a payload key up by name.
        ``Progress.from_stored(row)`` also checks the row is a ``progress`` event; an older
        row's missing fields take their defaults.

        Raises:
            StoredEventError: the row is not an engine event of this class, or its payload
                does not fit the event's fields.
        """
        event_class = _BY_KIND.get(event.kind)
        if event_class is None or not issubclass(event_class, cls):
            raise StoredEventError(event, f"it is a {event.kind.value} event, not a "
                                   f"{cls.__name__}")
        fields = {**event.payload, "run_id": event.run_id, "iteration": event.iteration}
        try:
            return cast(Self, _adapter(event.kind).validate_python(fields))
        except ValidationError as exc:
            raise StoredEventError(event, f"its payload does not fit {event_class.__name__}: "
                                   f"{exc}") from exc


class StoredEventError(StoreError):
    """A stored event row that does not read back as the engine event it was asked for."""

    def __init__(self, event: RunEvent, problem: str) -> None:
        self.run_id = event.run_id
        self.event_id = event.id
        self.kind = event.kind
        super().__init__(f"event {event.id} of run {event.run_id} cannot be read: {problem}")


@cache
def _adapter(kind: EventKind) -> TypeAdapter[EngineEvent]:
    """Reads a stored payload into the event class of ``kind`` (built on first use)."""
    return TypeAdapter(_BY_KIND[kind])


@dataclass(frozen=True)
class RunStarted(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_STARTED
    resumed: bool = False


@dataclass(frozen=True)
class LanesReduced(EngineEvent):
    """The run keeps ``running`` iterations in flight where ``parallel_proposals`` asked for
    ``asked``; ``why`` says so in words (:func:`studio.engine.loop.window.fewer_lanes`)."""

    kind: ClassVar[EventKind] = EventKind.LANES_REDUCED
    asked: int = 0
    running: int = 1
    why: str = ""

    def words(self) -> str:
        return (f"{self.running} of the {self.asked} parallel proposals asked for run"
                f"{'s' if self.running == 1 else ''}: {self.why}")


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
    proposal_kind: ProposalKind = ProposalKind.REFLECTION
    """``reflection`` or ``merge`` (then ``parent_id`` is the first parent, ``component``
    empty)."""


@dataclass(frozen=True)
class ProposalCreated(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.PROPOSAL_CREATED
    proposal_id: int = 0
    parent_id: int = 0
    component: str = ""
    proposal_kind: ProposalKind = ProposalKind.REFLECTION
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
    cause: SkipCause = SkipCause.REPEATED
    reason: str = ""
    """In words, for the run's events, the Run and Proposals pages and the CLI."""
    proposal_id: int | None = None
    """The last refused proposal, when there was one."""


@dataclass(frozen=True)
class OutOfIdeas(EngineEvent):
    """The run ends with ``out_of_ideas``: its last ``iterations`` reflection iterations made
    no new candidate (:mod:`studio.engine.policies.ideas`)."""

    kind: ClassVar[EventKind] = EventKind.OUT_OF_IDEAS
    iterations: int = 0
    reflection_calls: int = 0
    """What those iterations spent on the reflection (its calls, retries included)."""
    reflection_calls_saved: int = 0
    """What the run's remaining iterations would have spent at that rate."""

    def words(self) -> str:
        return (f"the reflection had no new idea in {self.iterations} iterations in a row "
                f"({self.reflection_calls} reflection calls, each repeating a text already "
                f"tried): the run ended, saving about {self.reflection_calls_saved} more. "
                f"{StopReason.OUT_OF_IDEAS.words[0].upper()}{StopReason.OUT_OF_IDEAS.words[1:]}")


@dataclass(frozen=True)
class ProposalEvaluated(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.PROPOSAL_EVALUATED
    proposal_id: int = 0
    child_id: int = 0
    parent_sum: float = 0.0
    child_sum: float = 0.0
    rule_accepts: bool = False
    proposal_kind: ProposalKind = ProposalKind.REFLECTION
    """For a merge, ``parent_sum`` is the better parent's sum on the subsample."""


@dataclass(frozen=True)
class AwaitingDecision(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.AWAITING_DECISION
    proposal_id: int = 0


@dataclass(frozen=True)
class DecisionApplied(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.DECISION_APPLIED
    proposal_id: int = 0
    action: DecisionAction = DecisionAction.ACCEPT
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


class Phase(StrEnum):
    """What a run is doing, as the Run page and the CLI say it."""

    SCORING_SEED = "scoring_seed"
    RUNNING_PARENT = "running_parent"
    REFLECTING = "reflecting"
    RUNNING_CHILD = "running_child"
    AWAITING_DECISION = "awaiting_decision"
    VALIDATING = "validating"

    @property
    def words(self) -> str:
        return _PHASE_WORDS[self]

    @property
    def unit(self) -> str:
        """What one item of the phase is: its estimate is per item."""
        return "proposal" if self is Phase.REFLECTING else "example"


_PHASE_WORDS = {
    Phase.SCORING_SEED: "scoring the seed on the validation set",
    Phase.RUNNING_PARENT: "running the parent on the minibatch",
    Phase.REFLECTING: "reflecting",
    Phase.RUNNING_CHILD: "running the proposal on the minibatch",
    Phase.AWAITING_DECISION: "waiting for your decision",
    Phase.VALIDATING: "scoring the accepted proposal on the validation set",
}


@dataclass(frozen=True)
class PhaseStarted(EngineEvent):
    """The run began a phase: what it does, on which model, and how long such a phase took on
    this machine so far (:mod:`studio.engine.loop.progress`)."""

    kind: ClassVar[EventKind] = EventKind.PHASE_STARTED
    phase: Phase = Phase.SCORING_SEED
    model: str | None = None
    """The model doing the work: the agent's (scoring), the reflection's (reflecting)."""
    items: int = 1
    """Examples to score (a scoring phase); 1 for a reflection."""
    seconds_per_item: float | None = None
    """Learned from this run's earlier phases of this kind (mean seconds per example, or per
    proposal); None before the first one ends."""
    learned_from: int = 0
    """How many earlier phases of this kind the estimate comes from."""
    proposal_id: int | None = None
    """The proposal waiting for a decision (``awaiting_decision``)."""

    @property
    def estimate_seconds(self) -> float | None:
        return None if self.seconds_per_item is None else self.seconds_per_item * self.items


@dataclass(frozen=True)
class RunPaused(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_PAUSED


@dataclass(frozen=True)
class RunResumed(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_RESUMED


@dataclass(frozen=True)
class RunFinished(EngineEvent):
    kind: ClassVar[EventKind] = EventKind.RUN_FINISHED
    status: RunStatus = RunStatus.COMPLETED
    stop_reason: StopReason | None = None


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
    reason: StopReason = StopReason.ERROR
    message: str = ""


@dataclass(frozen=True)
class TrialCommitted(EngineEvent):
    """In-process only: the trial row itself is the durable record."""

    kind: ClassVar[EventKind] = EventKind.TRIAL_COMMITTED
    trial_id: int = 0
    candidate_id: int = 0
    score: float | None = None


STORED_EVENTS = (RunStarted, LanesReduced, BaselineScored, IterationStarted, ProposalCreated,
                 ProposalInvalid, IterationSkipped, OutOfIdeas,
                 ProposalEvaluated, AwaitingDecision, DecisionApplied, CandidateAccepted, Progress,
                 PhaseStarted, RunPaused, RunResumed, RunFinished, TestScored, TestUnscored)

_BY_KIND: dict[EventKind, type[EngineEvent]] = {cls.kind: cls for cls in STORED_EVENTS}
"""The event class of each stored kind (``trial_committed`` is in-process only, the trial row
being its record)."""
