"""Parallel proposals (issue 22): a sliding window of k iterations, each a *lane*, in flight
at once.

Why: one proposal keeps only its minibatch busy (GEPA's 3 of 5 slots) and its reflection keeps
one; k proposals share the run's one call budget (``max_concurrency``, served most urgent first:
:mod:`studio.engine.scoring.batch`), so a slot one lane leaves idle another fills.
A window, not rounds: iteration ``i`` is drawn as soon as iteration
``i - k`` has settled, so no slot waits at a round's end for its slowest lane's validation, and
the first k iterations start while the seed is still being scored (their parent can only be the
seed; their minibatches are scored first).

Reproducible by construction, whatever finishes first (1 or N processes, after SIGKILL):

- iteration ``i`` sees the run as iteration ``i - k`` left it and nothing later: its parent is
  drawn from the pool of the seed and the children of iterations up to ``i - k``
  (:meth:`studio.engine.policies.pool.PoolReader.through`), its reflection reads the history of
  those
  iterations only (:meth:`RunContext.history_cutoff`), and the limits it is drawn under
  (patience, score threshold) are the state as iteration ``i - k`` settled. A rejection in one
  lane thus reaches the reflection k iterations later, that of the same lane;
- plans are drawn one at a time in iteration order from the seeded random state and
  checkpointed with the plans still in flight (:attr:`LoopState.round`), which a resumed run
  replays;
- the store writes whose outcome depends on order take turns in iteration order
  (:class:`Window`): storing a proposal and its child (the later iteration's identical text is
  the duplicate) and pooling an accepted child;
- a (candidate, example) pair two lanes both need is judged once
(:mod:`studio.engine.scoring.batch`).

Where a person decides, every lane's proposal may wait at the gate at once (Proposals and
``studio proposals --pending`` list them in iteration order, the order to decide them in:
pooling follows it), and the lanes not waiting keep scoring. One lane (the plain loop) under a
``max_metric_calls`` budget (what a lane may spend depends on what its siblings committed, which
depends on timing), with merge (a merge is planned from the pool after each acceptance), in align
runs (labels can change a verdict meanwhile) and on the embedded model (one model serves every
call one at a time: more lanes only queue, on 2 cores they gain nothing).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from studio.engine.run.context import RunContext
from studio.engine.run.events import LanesReduced


def auto_lanes(max_concurrency: int, minibatch_size: int) -> int:
    """The lane count whose minibatches come nearest to filling the slots (ties: fewer):
    ``ceil(max_concurrency / minibatch_size - 1/2)``, at least 1. Fewer lanes leave slots idle
    through every minibatch; more queue behind each other, and each extra lane's parent is
    drawn before its siblings' children are pooled (independent sampling's cost: an iteration
    may propose what a sibling already found). GEPA's auto, concurrency // minibatch, gives 1
    lane for 5 slots and minibatches of 3 (2 slots idle all along); this gives 2 there, and
    1 for the default 4 slots (a second lane would add 2 queued chains to 1 idle slot)."""
    return max(1, math.ceil(max_concurrency / minibatch_size - 0.5))


def lane_count(ctx: RunContext) -> int:
    """How many iterations the run keeps in flight: the setting or :func:`auto_lanes`, no more
    than the run's iterations (1 where parallel proposals are not allowed). Fixed by the run's
    settings, so a resumed run draws alike."""
    config = ctx.config
    if one_lane_because(ctx) is not None:
        return 1
    wanted = config.parallel_proposals or auto_lanes(config.max_concurrency,
                                                     config.minibatch_size)
    return max(1, min(wanted, config.max_iterations))


def one_lane_because(ctx: RunContext) -> str | None:
    """Why this run may have only one lane, in words (the module's doc says more); None when
    it may have several."""
    config = ctx.config
    if config.max_metric_calls is not None:
        return ("under a max_metric_calls budget one lane runs: what a lane may spend depends "
                "on what the others committed, which depends on timing, and a seeded run must "
                "reproduce")
    if config.use_merge:
        return "with use_merge one lane runs: a merge is planned from the pool after each " \
            "acceptance"
    if ctx.labels is not None:
        return "an align run has one lane: a label can change a verdict meanwhile"
    if ctx.serialized_model:
        return ("on the embedded model one lane runs: it serves one call at a time, so more "
                "lanes would only queue")
    return None


def fewer_lanes(ctx: RunContext, running: int, iteration: int) -> LanesReduced | None:
    """The event that says the run keeps fewer lanes in flight than its
    ``parallel_proposals`` asks, and why; None when it keeps as many (or none was asked)."""
    asked = ctx.config.parallel_proposals
    if asked is None or running >= asked:
        return None
    why = one_lane_because(ctx) or (
        f"the run has only {ctx.config.max_iterations} iteration"
        f"{'s' if ctx.config.max_iterations != 1 else ''}")
    return LanesReduced(run_id=ctx.run_id, iteration=iteration, asked=asked, running=running,
                        why=why)


@dataclass
class Window:
    """The turns of the iterations in flight: iteration ``i`` takes a turn once iteration
    ``i - 1`` has taken it (or ended, or was never in this window). Each iteration marks itself
    with :meth:`proposed`, :meth:`pooled` or :meth:`ended` (always, in a ``finally``), so no
    later iteration waits forever. Iteration 0 is the seed: the first child is pooled after it."""

    _proposed: dict[int, asyncio.Event] = field(default_factory=dict)
    _pooled: dict[int, asyncio.Event] = field(default_factory=dict)

    def open(self, iteration: int, *, proposes: bool = True) -> None:
        """``iteration`` is in flight: later ones wait for its turns (the seed, iteration 0,
        has only the pooling turn: the first lanes propose while it is scored)."""
        if proposes:
            self._proposed[iteration] = asyncio.Event()
        self._pooled[iteration] = asyncio.Event()

    async def propose_turn(self, iteration: int) -> None:
        await _after(self._proposed, iteration - 1)

    async def pool_turn(self, iteration: int) -> None:
        await _after(self._pooled, iteration - 1)

    def proposed(self, iteration: int) -> None:
        _mark(self._proposed, iteration)

    def pooled(self, iteration: int) -> None:
        _mark(self._pooled, iteration)

    def ended(self, iteration: int) -> None:
        """An iteration is over (settled, skipped, failed or stopped)."""
        self.proposed(iteration)
        self.pooled(iteration)


async def _after(turns: dict[int, asyncio.Event], earlier: int) -> None:
    event = turns.get(earlier)
    if event is not None:
        await event.wait()


def _mark(turns: dict[int, asyncio.Event], iteration: int) -> None:
    event = turns.get(iteration)
    if event is not None:
        event.set()
