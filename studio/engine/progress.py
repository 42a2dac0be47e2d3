"""The run's progress as people see it: iterations, metric calls, the best score, and an ETA
from the machine time iterations took (the time a person took at a gate is not in it; the
studio adds the person's expected review time itself)."""

from __future__ import annotations

from studio.engine.context import RunContext
from studio.engine.events import Progress
from studio.engine.pool import PoolScores
from studio.engine.state import LoopState


class ProgressMeter:
    """Each iteration's machine time, and the :class:`Progress` event it gives."""

    def __init__(self) -> None:
        self.iteration_seconds: list[float] = []

    def iteration_done(self, seconds: float) -> None:
        """Record an iteration's machine time (a person's time at its gate already taken out)."""
        self.iteration_seconds.append(seconds)

    def report(self, ctx: RunContext, state: LoopState, view: PoolScores) -> None:
        config = ctx.config
        calls = ctx.metric_calls()
        ctx.emit(Progress(
            run_id=ctx.run_id, iteration=state.iteration,
            max_iterations=config.max_iterations, metric_calls=calls,
            max_metric_calls=config.max_metric_calls, best_score=view.best_score,
            best_candidate_id=view.best_id, elapsed_seconds=round(ctx.active_seconds(), 2),
            eta_seconds=self.eta(ctx, state, calls)))

    def eta(self, ctx: RunContext, state: LoopState, calls: int) -> float | None:
        if not self.iteration_seconds:
            return None
        per_iteration = sum(self.iteration_seconds) / len(self.iteration_seconds)
        remaining = ctx.config.max_iterations - state.iteration
        budget = ctx.config.max_metric_calls
        if budget is not None and state.iteration > 0:
            calls_per_iteration = max(1.0, calls / max(1, state.iteration))
            remaining = min(remaining, int((budget - calls) / calls_per_iteration))
        return round(max(0, remaining) * per_iteration, 1)
