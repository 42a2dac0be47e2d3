"""GEPA's ``skip_perfect_score``: a parent that scored perfectly on every example of its
minibatch cannot be beaten there, so its iteration ends without a reflection."""

from __future__ import annotations

from studio.engine.propose.proposer import current_trials
from studio.engine.run.context import RunContext
from studio.engine.run.events import IterationSkipped, SkipCause
from studio.model.records import Candidate, Trial


def perfect_on_minibatch(ctx: RunContext, parent_trials: list[Trial]) -> bool:
    """Whether to skip, on the effective scores as stored now ("could not evaluate" is not
    perfect)."""
    config = ctx.config
    scores = [t.effective_score for t in current_trials(ctx, parent_trials)]
    return config.skip_perfect_score and bool(scores) and all(
        s is not None and s >= config.perfect_score for s in scores)


def skip_perfect(ctx: RunContext, parent: Candidate, iteration: int) -> None:
    """Record the skipped iteration and why."""
    perfect = ctx.config.perfect_score
    ctx.emit(IterationSkipped(
        run_id=ctx.run_id, iteration=iteration, cause=SkipCause.PERFECT_PARENT,
        reason=f"candidate #{parent.index} scored at least {perfect:g} on every minibatch "
               "example: no child could beat it; no reflection"))
