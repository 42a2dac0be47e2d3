"""The loop with k iterations in flight (parallel proposals; why and what stays reproducible:
:mod:`studio.engine.loop.window`).

:class:`LaneRun` draws iteration ``i`` as soon as iteration ``i - k`` has settled (the
*frontier*: every iteration up to it settled), from what iteration ``i - k`` left, and folds
iterations into the checkpoint in order as the frontier moves. The first k iterations start
with the seed's scoring, whose examples they need come first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Protocol

from studio.engine.loop.planning import Planner
from studio.engine.loop.progress import ProgressMeter
from studio.engine.loop.window import Window
from studio.engine.policies.ideas import count_ideas
from studio.engine.policies.limits import LoopProgress, check_conditions
from studio.engine.policies.pool import PoolReader
from studio.engine.run.context import RunContext, StopRun
from studio.engine.run.events import IterationStarted
from studio.engine.run.state import LoopState, Plan
from studio.model.records import Candidate, ProposalKind, StopReason, stored_id


class Lanes(Protocol):
    """What lanes use of the loop (:class:`studio.engine.loop.engine.Engine`): its run, state,
    plans, pool and meter, the steps an iteration is made of, and the window it shows while
    lanes are in flight. The loop builds lanes, so lanes name only this, never the loop."""

    ctx: RunContext
    state: LoopState
    planner: Planner
    pools: PoolReader
    meter: ProgressMeter
    window: Window | None

    def seed(self) -> Candidate: ...

    async def score_baseline(self, first: Sequence[int] = ()) -> None: ...

    async def pause_point(self) -> None: ...

    async def lane(self, plan: Plan) -> None: ...

    def checkpoint(self) -> None: ...


class LaneRun:
    """One session of the loop with ``ctx.lanes`` iterations in flight."""

    def __init__(self, engine: Lanes) -> None:
        self.engine, self.ctx, self.state = engine, engine.ctx, engine.state
        self.lanes = self.ctx.lanes
        self.plans: dict[int, Plan] = {
            p["iteration"]: Plan(**p) for p in self.state.round or []
            if p["iteration"] > self.state.iteration}
        """Drawn and not yet folded into the frontier (replayed after a stop or a kill)."""
        self.settled: set[int] = set()
        self.limits_at: dict[int, tuple[float | None, int, int]] = {}
        """(best, stale iterations, iterations without a new idea) as each iteration left
        them: the limits a later draw is checked against."""
        self.window = Window()
        self.moved = asyncio.Event()
        self.seed_pooled = False
        self.last_move = time.monotonic()
        self.held_at_move = self.ctx.clock.held_seconds

    async def run(self) -> StopRun:
        """Until a limit is reached and every iteration in flight has settled; returns that
        limit. A person's stop or a failure cancels the lanes (their plans replay)."""
        engine = self.engine
        engine.window = self.window
        seed = engine.seed()
        self.seed_pooled = seed.pooled
        try:
            async with asyncio.TaskGroup() as group:
                if not seed.pooled:
                    self.start_baseline(group, seed)
                for plan in sorted(self.plans.values(), key=lambda p: p.iteration):
                    self.launch(group, plan)  # drawn before a stop or a kill: replayed
                limit = await self.draw_lanes(group, seed)
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None  # the first error, as the loop reports it
        finally:
            engine.window = None
        self.ctx.check_stop()  # as the one-lane loop checks after its last iteration: a
        self.ctx.check_timeout()  # person's stop, then the timeout, come before the limit
        return limit

    # ------------------------------------------------------------------ the seed

    def start_baseline(self, group: asyncio.TaskGroup, seed: Candidate) -> None:
        """Score the seed beside the first lanes, their minibatch examples first; with a
        score threshold the seed is scored alone first (it may already meet it)."""
        first: list[int] = []
        if self.ctx.config.score_threshold is None:
            last = min(self.lanes, self.ctx.config.max_iterations)
            for iteration in range(self.state.iteration + 1, last + 1):
                if iteration not in self.plans:
                    self.draw(iteration, seed)
            first = [e for p in sorted(self.plans.values(), key=lambda p: p.iteration)
                     for e in p.minibatch]
        self.window.open(0, proposes=False)
        group.create_task(self.baseline(first))

    async def baseline(self, first: list[int]) -> None:
        try:
            await self.engine.score_baseline(first)
        finally:
            self.window.ended(0)  # the first child is pooled after the seed
        self.seed_pooled = True
        self.limits_at[0] = self.limits_now()
        self.fold()

    # ------------------------------------------------------------------ drawing

    async def draw_lanes(self, group: asyncio.TaskGroup, seed: Candidate) -> StopRun:
        """Draw each next iteration once the iteration k before it has settled, under the
        limits as that iteration left them."""
        config = self.ctx.config
        while True:
            iteration = max([self.state.iteration, *self.plans]) + 1
            if iteration > config.max_iterations:
                return StopRun(StopReason.MAX_ITERATIONS)
            reference = iteration - self.lanes
            await self.frontier_reaches(reference)
            try:
                self.check_limits(reference)
            except StopRun as limit:
                return limit
            await self.engine.pause_point()
            self.launch(group, self.draw(iteration, seed))

    async def frontier_reaches(self, iteration: int) -> None:
        """Until every iteration up to ``iteration`` has settled (the seed first, when a
        score threshold is to be checked on it)."""
        threshold = self.ctx.config.score_threshold is not None
        while (self.state.iteration < iteration if iteration > 0
               else threshold and not self.seed_pooled):
            self.moved.clear()
            await self.moved.wait()

    def check_limits(self, reference: int) -> None:
        """The limits as iteration ``reference`` left them (a person's stop and the timeout
        as they are now)."""
        self.ctx.check_stop()
        best, stale, idle = self.limits_at.get(reference, self.limits_now())
        check_conditions(self.ctx, LoopProgress(self.ctx, reference, best, stale, idle))

    def limits_now(self) -> tuple[float | None, int, int]:
        state = self.state
        return state.best_score, state.stale_iterations, state.idle_iterations

    def draw(self, iteration: int, seed: Candidate) -> Plan:
        """``iteration``'s plan from the pool iteration ``iteration - k`` left (the seed alone
        for the first k), checkpointed with the random state it leaves."""
        reference = iteration - self.lanes
        pool = self.engine.pools.through(reference) if self.seed_pooled and reference > 0 \
            else None
        plan = self.engine.planner.lane_plan(iteration, pool, stored_id(seed))
        self.plans[iteration] = plan
        self.checkpoint()
        self.ctx.emit(IterationStarted(
            run_id=self.ctx.run_id, iteration=iteration, parent_id=plan.parent_id,
            component=plan.component, minibatch=plan.minibatch,
            proposal_kind=ProposalKind.REFLECTION))
        return plan

    def launch(self, group: asyncio.TaskGroup, plan: Plan) -> None:
        self.window.open(plan.iteration)
        group.create_task(self.lane(plan))

    async def lane(self, plan: Plan) -> None:
        await self.engine.lane(plan)
        self.settled.add(plan.iteration)
        self.fold()

    # ------------------------------------------------------------------ the frontier

    def fold(self) -> None:
        """Fold the settled iterations next to the frontier into the checkpoint, in order:
        each one's best and stale count from the pool as it left it."""
        if not self.seed_pooled:
            return
        while self.state.iteration + 1 in self.settled:
            iteration = self.state.iteration + 1
            self.settled.discard(iteration)
            self.plans.pop(iteration, None)
            self.end_iteration(iteration)
        self.moved.set()

    def end_iteration(self, iteration: int) -> None:
        engine, state = self.engine, self.state
        pool = engine.pools.through(iteration)
        state.settled(iteration, pool.best_score)
        count_ideas(self.ctx, state, iteration)
        self.limits_at[iteration] = self.limits_now()
        now, held = time.monotonic(), self.ctx.clock.held_seconds
        engine.meter.iteration_done(now - self.last_move - (held - self.held_at_move))
        self.last_move, self.held_at_move = now, held
        self.checkpoint()
        engine.meter.report(self.ctx, state, pool)

    def checkpoint(self) -> None:
        """The state with the plans still in flight (a resumed run replays them)."""
        self.state.plan = None
        self.state.round = [asdict(p) for _, p in sorted(self.plans.items())] or None
        self.engine.checkpoint()
