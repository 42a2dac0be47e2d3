"""The run's stop conditions, checked between iterations only (as GEPA does): an iteration
once started (its plan drawn) finishes whole, on resume too; inside it only a person's stop
and a worker's shutdown are honoured (:meth:`studio.engine.run.context.RunContext.check_stop`)."""

from __future__ import annotations

from typing import Any

from studio.critics.adapters import metric_calls_per_trial
from studio.engine.policies.ideas import check_ideas
from studio.engine.run.context import RunContext, StopRun
from studio.engine.run.state import LoopState
from studio.model.records import Run, StopReason


def check_limits(ctx: RunContext, state: LoopState) -> None:
    """Raise StopRun with the first limit reached, or the person's stop."""
    config = ctx.config
    ctx.check_stop()
    if iteration_started(state):
        return
    ctx.check_timeout()
    if state.iteration >= config.max_iterations:
        raise StopRun(StopReason.MAX_ITERATIONS)
    check_progress(ctx, state.best_score, state.stale_iterations)
    check_ideas(ctx, state.idle_iterations, state.iteration)
    if config.max_metric_calls is not None \
            and ctx.metric_calls() >= config.max_metric_calls:
        raise StopRun(StopReason.MAX_METRIC_CALLS)
    check_budget_for_iteration(ctx)


def check_progress(ctx: RunContext, best: float | None, stale: int) -> None:
    """Raise StopRun when the best score reached ``score_threshold`` or ``stale`` iterations
    without improvement reached ``patience``."""
    config = ctx.config
    if config.score_threshold is not None and best is not None \
            and best >= config.score_threshold:
        raise StopRun(StopReason.SCORE_THRESHOLD)
    if config.patience is not None and stale >= config.patience:
        raise StopRun(StopReason.PATIENCE)


def check_budget_for_iteration(ctx: RunContext) -> None:
    """Start an iteration only when the budget can pay for all of it: the parent and the
    child on the minibatch, and the validation set should the child be accepted. An accepted
    child is never left without its validation."""
    config = ctx.config
    if config.max_metric_calls is None:
        return
    worst_case = ctx.trial_calls(2 * config.minibatch_size + len(ctx.val_ids))
    if ctx.metric_calls() + worst_case > config.max_metric_calls:
        raise StopRun(StopReason.MAX_METRIC_CALLS)


def iteration_started(state: LoopState) -> bool:
    """Whether the next iteration was planned before a stop, a kill or a shutdown: its
    limits were checked then, and it replays whole."""
    plan = state.round[0] if state.round else state.plan
    return plan is not None and plan["iteration"] == state.iteration + 1


def spent_metric_calls(store: Any, run: Run) -> int:
    """The metric calls a stored run's loop has made: its trials, each counted as its critic
    costs (:func:`studio.critics.adapters.metric_calls_per_trial`)."""
    return store.count_trials(run.id, loop_only=True) * metric_calls_per_trial(run.spec.critic)
