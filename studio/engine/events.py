"""Typed engine events. Each is written to the store (the UI's channel) and handed to in-process
listeners; listeners subscribe by event class, so a typo fails at import, not silently."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class EngineEvent:
    kind: ClassVar[str] = "event"
    run_id: str
    iteration: int

    def payload(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("run_id")
        data.pop("iteration")
        return data


@dataclass(frozen=True)
class RunStarted(EngineEvent):
    kind: ClassVar[str] = "run_started"
    resumed: bool = False


@dataclass(frozen=True)
class BaselineScored(EngineEvent):
    kind: ClassVar[str] = "baseline_scored"
    candidate_id: int = 0
    score: float | None = None


@dataclass(frozen=True)
class IterationStarted(EngineEvent):
    kind: ClassVar[str] = "iteration_started"
    parent_id: int = 0
    component: str = "instruction"
    minibatch: list[int] = field(default_factory=list)
    """Example ids of this iteration's minibatch."""


@dataclass(frozen=True)
class ProposalCreated(EngineEvent):
    kind: ClassVar[str] = "proposal_created"
    proposal_id: int = 0
    parent_id: int = 0
    component: str = ""


@dataclass(frozen=True)
class ProposalInvalid(EngineEvent):
    kind: ClassVar[str] = "proposal_invalid"
    proposal_id: int = 0
    reason: str = ""


@dataclass(frozen=True)
class ProposalEvaluated(EngineEvent):
    kind: ClassVar[str] = "proposal_evaluated"
    proposal_id: int = 0
    child_id: int = 0
    parent_sum: float = 0.0
    child_sum: float = 0.0
    rule_accepts: bool = False


@dataclass(frozen=True)
class AwaitingDecision(EngineEvent):
    kind: ClassVar[str] = "awaiting_decision"
    proposal_id: int = 0


@dataclass(frozen=True)
class DecisionApplied(EngineEvent):
    kind: ClassVar[str] = "decision_applied"
    proposal_id: int = 0
    action: str = ""
    automatic: bool = False
    reason: str = ""


@dataclass(frozen=True)
class CandidateAccepted(EngineEvent):
    kind: ClassVar[str] = "candidate_accepted"
    candidate_id: int = 0
    score: float | None = None


@dataclass(frozen=True)
class Progress(EngineEvent):
    kind: ClassVar[str] = "progress"
    max_iterations: int = 0
    metric_calls: int = 0
    max_metric_calls: int | None = None
    best_score: float | None = None
    best_candidate_id: int | None = None
    elapsed_seconds: float = 0.0
    eta_seconds: float | None = None


@dataclass(frozen=True)
class RunPaused(EngineEvent):
    kind: ClassVar[str] = "run_paused"


@dataclass(frozen=True)
class RunResumed(EngineEvent):
    kind: ClassVar[str] = "run_resumed"


@dataclass(frozen=True)
class RunFinished(EngineEvent):
    kind: ClassVar[str] = "run_finished"
    status: str = "completed"
    stop_reason: str = ""


@dataclass(frozen=True)
class TrialCommitted(EngineEvent):
    """In-process only: the trial row itself is the durable record."""

    kind: ClassVar[str] = "trial_committed"
    trial_id: int = 0
    candidate_id: int = 0
    score: float | None = None


STORED_EVENTS = (RunStarted, BaselineScored, IterationStarted, ProposalCreated, ProposalInvalid,
                 ProposalEvaluated, AwaitingDecision, DecisionApplied, CandidateAccepted, Progress,
                 RunPaused, RunResumed, RunFinished)
