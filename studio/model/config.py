"""Run settings (:class:`EvolutionConfig`), under the names the product documents."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ReviewMode(StrEnum):
    AUTO = "auto"
    """The acceptance rule decides alone."""
    REVIEW = "review"
    """Every evaluated proposal waits for a person's accept / edit / reject."""


class Selection(StrEnum):
    PARETO = "pareto"
    GREEDY = "greedy"
    EPSILON_GREEDY = "epsilon_greedy"


class EvolutionConfig(BaseModel):
    """How long a run goes, how it picks parents, and whether a person gates proposals.

    Every stop condition is optional except ``max_iterations``; the first one reached ends the run.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    """NaN and infinities are refused: ``call_timeout_seconds: .inf`` is not "no limit"."""

    max_iterations: int = Field(default=10, ge=0, le=100_000)
    """Reflection iterations after the baseline."""
    max_metric_calls: int | None = Field(default=None, ge=1)
    """Budget of critic evaluations (trials). A batch that would exceed it is not started."""
    patience: int | None = Field(default=None, ge=1)
    """Stop after this many iterations in a row without a better best validation score."""
    score_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """Stop once the best validation mean reaches this."""
    timeout_seconds: float | None = Field(default=None, gt=0)
    """Wall-clock limit on the run's active time."""
    minibatch_size: int = Field(default=3, ge=1, le=1000)
    candidate_selection: Selection = Selection.PARETO
    epsilon: float = Field(default=0.1, ge=0.0, le=1.0)
    """Exploration rate for ``epsilon_greedy``."""
    max_concurrency: int = Field(default=4, ge=1, le=256)
    """Agent and critic calls in flight at once."""
    processes: int = Field(default=1, ge=1, le=64)
    """Worker processes a batch's agent->critic chains fan out to (framework CPU is bound by
    one process's GIL); the concurrency limit holds in total. Runs defined by a spec only."""
    review: ReviewMode = ReviewMode.AUTO
    seed: int = 0
    """One seed makes a run with the scripted model reproducible."""
    call_timeout_seconds: float = Field(default=300.0, gt=0)
    """Limit for one model call (agent, critic or reflection)."""
    max_retries: int = Field(default=3, ge=0, le=10)
    use_merge: bool = False
    """GEPA's merge: after an accepted proposal, combine two pool candidates that improved
    different components since a common ancestor. Off by default, as in GEPA."""
    max_merge_invocations: int = Field(default=5, ge=0, le=1000)
    """Most merge proposals a run makes (accepted or not)."""

    @model_validator(mode="before")
    @classmethod
    def _explain_enums(cls, data):
        """Name the allowed values when a policy name is wrong (pydantic's message is terse)."""
        if isinstance(data, dict):
            for key, enum in (("candidate_selection", Selection), ("review", ReviewMode)):
                value = data.get(key)
                if isinstance(value, str) and value not in {e.value for e in enum}:
                    allowed = ", ".join(e.value for e in enum)
                    raise ValueError(f"{key} {value!r} is not one of: {allowed}")
        return data

    @model_validator(mode="after")
    def _merge_can_happen(self):
        """``use_merge`` with no merge allowed is a contradiction worth naming, not a no-op."""
        if self.use_merge and self.max_merge_invocations == 0:
            raise ValueError("use_merge is on but max_merge_invocations is 0, so no merge could "
                             "ever be proposed: set max_merge_invocations to 1 or more, or turn "
                             "use_merge off")
        return self
