"""Parallel proposals (issue 22): a round of k iterations, each a *lane*, in flight at once.

Why: one proposal keeps only its minibatch busy (GEPA's 3 of 5 slots) and its reflection keeps
one; k proposals share the run's one slot budget (:attr:`RunContext.slots`), so a slot one lane
leaves idle another fills. Lanes are GEPA's ``IndependentSampling``: each draws its own
parent and minibatch from the pool as it stood when the round began.

Reproducible by construction, whatever finishes first (1 or N processes, after SIGKILL):

- the round's k plans are drawn in lane order from the seeded random state, from one pool read,
  and checkpointed together (:attr:`LoopState.round`), so a resumed round replays them;
- a reflection reads the run's history as it stood when the round began
  (:attr:`RunContext.history_before`): what a sibling lane proposes or decides meanwhile reaches
  the *next* round's reflections, never this one's (a rejection reaches the next reflection of
  that parent);
- the store writes whose outcome depends on order take turns in lane order
  (:class:`LaneOrder`): storing a proposal and its child (the later lane's identical text is
  the duplicate) and pooling an accepted child;
- a (candidate, example) pair two lanes both need is judged once (:mod:`studio.engine.batch`).

Where a person decides, every lane's proposal may wait at the gate at once (Proposals and
``studio proposals --pending`` list them in lane order, the order to decide them in: pooling
follows it), and the lanes not waiting keep scoring; under a ``max_metric_calls`` budget one
lane there (an edit is charged against the trials committed so far, which would not count a
sibling lane's reserved validation). One lane with merge (a merge is planned
from the pool after each acceptance), in align runs (labels can change a
verdict meanwhile) and on the embedded model (one model serves every call one at a time: more
lanes only queue, on 2 cores they gain nothing).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from studio.engine.context import RunContext
from studio.engine.state import LoopState
from studio.model.config import ReviewMode


def auto_lanes(max_concurrency: int, minibatch_size: int) -> int:
    """The lane count whose minibatches come nearest to filling the slots (ties: fewer):
    ``ceil(max_concurrency / minibatch_size - 1/2)``, at least 1. Fewer lanes leave slots idle
    through every minibatch; more queue behind each other, and each extra lane's parent is
    drawn before its siblings' children are pooled (independent sampling's cost: an iteration
    may propose what a sibling already found). GEPA's auto, concurrency // minibatch, gives 1
    lane for 5 slots and minibatches of 3 (2 slots idle all along); this gives 2 there, and
    1 for the default 4 slots (a second lane would add 2 queued chains to 1 idle slot)."""
    return max(1, math.ceil(max_concurrency / minibatch_size - 0.5))


def lane_count(ctx: RunContext, state: LoopState) -> int:
    """How many proposals the next round puts in flight: the setting or :func:`auto_lanes`,
    no more than the iterations left and than the budget can pay for."""
    config = ctx.config
    if not parallel_allowed(ctx):
        return 1
    wanted = config.parallel_proposals or auto_lanes(config.max_concurrency,
                                                     config.minibatch_size)
    lanes = min(wanted, config.max_iterations - state.iteration)
    if config.max_metric_calls is not None:
        per_lane = 2 * config.minibatch_size + len(ctx.val_ids)
        lanes = min(lanes, (config.max_metric_calls - ctx.metric_calls()) // per_lane)
    return max(1, lanes)


def parallel_allowed(ctx: RunContext) -> bool:
    """Whether this run may have more than one lane (the module's doc says why not)."""
    config = ctx.config
    budgeted_edits = config.review is ReviewMode.REVIEW and config.max_metric_calls is not None
    return (not config.use_merge and ctx.labels is None and not ctx.serialized_model
            and not budgeted_edits)


@dataclass
class LaneOrder:
    """A point the lanes of a round pass in lane order: lane j passes once every earlier lane
    has passed (or ended). Each lane passes with :meth:`wait` and marks itself with
    :meth:`passed`, always (in a ``finally``), so no later lane waits forever."""

    lanes: int
    _done: list[asyncio.Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._done = [asyncio.Event() for _ in range(self.lanes)]

    async def wait(self, lane: int) -> None:
        for earlier in self._done[:lane]:
            await earlier.wait()

    def passed(self, lane: int) -> None:
        self._done[lane].set()


@dataclass
class Round:
    """The lanes in flight: iterations ``first`` .. ``first + size - 1``, and their turns."""

    first: int
    size: int
    proposing: LaneOrder = field(init=False)
    """Storing a proposal and creating its child (duplicates are found in lane order)."""
    pooling: LaneOrder = field(init=False)
    """Adding an accepted child to the pool."""

    def __post_init__(self) -> None:
        self.proposing = LaneOrder(self.size)
        self.pooling = LaneOrder(self.size)

    def lane(self, iteration: int) -> int:
        return iteration - self.first

    def holds(self, iteration: int) -> bool:
        return 0 <= iteration - self.first < self.size

    async def propose_turn(self, iteration: int) -> None:
        if self.holds(iteration):
            await self.proposing.wait(self.lane(iteration))

    def proposed(self, iteration: int) -> None:
        if self.holds(iteration):
            self.proposing.passed(self.lane(iteration))

    async def pool_turn(self, iteration: int) -> None:
        if self.holds(iteration):
            await self.pooling.wait(self.lane(iteration))

    def ended(self, iteration: int) -> None:
        """A lane is over (settled, skipped, or failed): later lanes need not wait for it."""
        if self.holds(iteration):
            self.proposing.passed(self.lane(iteration))
            self.pooling.passed(self.lane(iteration))
