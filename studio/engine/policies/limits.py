"""The run's stop conditions, checked between iterations only (as GEPA does): an iteration
once started (its plan drawn) finishes whole, on resume too; inside it only a person's stop
and a worker's shutdown are honoured (:meth:`studio.engine.run.context.RunContext.check_stop`).

The conditions themselves (setting, check, reason, words, form input) are one module each in
:mod:`studio.model.stops`; this module gives them the loop's progress and ends the run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from studio.critics.adapters import metric_calls_per_trial
from studio.engine.policies.ideas import announce_out_of_ideas
from studio.engine.run.context import RunContext, StopRun
from studio.engine.run.state import LoopState
from studio.model.records import Run, StopReason
from studio.model.stops import STOP_CONDITIONS
from studio.store.seams import PolicyStore

ANNOUNCEMENTS: dict[str, Callable[[RunContext, LoopProgress], None]] = {
    StopReason.OUT_OF_IDEAS: lambda ctx, p: announce_out_of_ideas(ctx, p.idle_iterations,
                                                                   p.iteration)}
"""What the engine tells before a condition ends the run (an event), by its reason."""


@dataclass(frozen=True)
class LoopProgress:
    """The loop as a stop condition reads it (:class:`studio.model.stops.RunProgress`):
    counts as iteration ``iteration`` left them, time and spending as they are now."""

    ctx: RunContext
    iteration: int
    best_score: float | None
    stale_iterations: int
    idle_iterations: int

    def metric_calls(self) -> int:
        return self.ctx.metric_calls()

    def next_iteration_calls(self) -> int:
        return self.ctx.trial_calls(2 * self.ctx.config.minibatch_size + len(self.ctx.val_ids))

    def timed_seconds(self) -> float:
        return self.ctx.timed_seconds()


def check_limits(ctx: RunContext, state: LoopState) -> None:
    """Raise StopRun with the first limit reached, or the person's stop."""
    ctx.check_stop()
    if iteration_started(state):
        return
    check_conditions(ctx, LoopProgress(ctx, state.iteration, state.best_score,
                                       state.stale_iterations, state.idle_iterations))


def check_conditions(ctx: RunContext, progress: LoopProgress) -> None:
    """Raise StopRun with the first stop condition ``progress`` reached."""
    for condition in STOP_CONDITIONS:
        if condition.check(ctx.config, progress):
            if condition.reason in ANNOUNCEMENTS:
                ANNOUNCEMENTS[condition.reason](ctx, progress)
            raise StopRun(StopReason(condition.reason))


def iteration_started(state: LoopState) -> bool:
    """Whether the next iteration was planned before a stop, a kill or a shutdown: its
    limits were checked then, and it replays whole."""
    plan = state.round[0] if state.round else state.plan
    return plan is not None and plan["iteration"] == state.iteration + 1


def spent_metric_calls(store: PolicyStore, run: Run) -> int:
    """The metric calls a stored run's loop has made: its trials, each counted as its critic
    costs (:func:`studio.critics.adapters.metric_calls_per_trial`)."""
    return store.count_trials(run.id, loop_only=True) * metric_calls_per_trial(run.spec.critic)
