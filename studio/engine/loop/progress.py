"""The run's progress as people see it.

- :class:`ProgressMeter`: iterations, metric calls, the best score, and an ETA from the machine
  time iterations took (the time a person took at a gate is not in it; the studio adds the
  person's expected review time itself).
- :class:`PhaseMeter`: what the run is doing now, said when each phase starts (scoring the
  seed, running the parent, reflecting, running the proposal, waiting for a decision,
  validating), with its model and how long such a phase took on this machine so far, learned
  from the phases of this run that ended (kept in the checkpoint, so a resumed run keeps what it
  learned). The Run page and the CLI add the time so far:
  "reflecting with local/smollm2: 4 min so far, about 9 min per proposal on this machine".
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from studio.engine.policies.pool import PoolScores
from studio.engine.run.context import RunContext
from studio.engine.run.events import Phase, PhaseStarted, Progress
from studio.engine.run.state import LoopState

PHASE_HISTORY = 20
"""Per phase, the latest runs an estimate learns from (a machine's pace drifts: recent wins)."""


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


def to_judge(ctx: RunContext, candidate_id: int | None, example_ids: list[int]) -> int:
    """How many of ``example_ids`` ``candidate_id`` has no trial on yet: the items a scoring
    phase does (a resumed run, a parent already judged on its minibatch, reuse theirs)."""
    if candidate_id is None:
        return len(example_ids)
    return len(example_ids) - len(ctx.store.first_trials(candidate_id, example_ids))


@contextlib.contextmanager
def phase(ctx: RunContext, state: LoopState, which: Phase, iteration: int, *,
          model: str | None = None, items: int = 1, proposal_id: int | None = None
          ) -> Iterator[None]:
    """Say that the run begins ``which`` (a :class:`PhaseStarted` event with what this run
    learned of its pace), and learn from it when it ends normally; a phase a stop or a failure
    cut short, or a person's time at a gate, teaches nothing. A phase with no item to do (a
    batch whose trials were all judged before) is not said: it takes no time."""
    if items <= 0:
        yield
        return
    learned = state.phase_seconds.get(which.value, [])
    ctx.emit(PhaseStarted(
        run_id=ctx.run_id, iteration=iteration, phase=which, model=model, items=items,
        seconds_per_item=round(sum(learned) / len(learned), 3) if learned else None,
        learned_from=len(learned), proposal_id=proposal_id))
    started = time.monotonic()
    yield
    if which is not Phase.AWAITING_DECISION:
        seconds = (time.monotonic() - started) / items
        state.phase_seconds[which.value] = (learned + [round(seconds, 3)])[-PHASE_HISTORY:]
