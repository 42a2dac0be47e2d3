"""Drawing an iteration's plan: a merge when one is due and a pair qualifies, else a parent
(selection), a minibatch (sampling) and the component whose turn it is (round robin).

The planner owns the run's seeded random source and epoch sampler; both go into every
checkpoint (:meth:`Planner.snapshot`), so a resumed run draws what it would have drawn.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import studio.engine.merge as merging
from studio.engine.context import RunContext
from studio.engine.pool import PoolScores, load_view
from studio.engine.sampling import EpochSampler
from studio.engine.selection import select_parent
from studio.engine.state import LoopState, Plan
from studio.model.records import MergeDetail


class Planner:
    """Draws each new iteration's plan from the run's seeded random state."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.rng = random.Random(ctx.config.seed)
        self.sampler = EpochSampler(list(ctx.train_ids), ctx.config.minibatch_size)

    def draw(self, iteration: int, pool: Callable[[], PoolScores]) -> Plan:
        """The plan of a new ``iteration``; ``pool`` reads the pool's scores (taken either
        way, after the merge is drawn, so the reads stay in the order they always were)."""
        ctx = self.ctx
        due = merging.merge_due(ctx, iteration)
        merge = merging.plan_merge(ctx, load_view(ctx.store, ctx.run_id), self.rng) \
            if due else None
        scores = pool()
        return merge_plan(iteration, merge) if merge is not None \
            else self.reflection_plan(iteration, scores)

    def draw_round(self, first: int, lanes: int, pool: Callable[[], PoolScores]) -> list[Plan]:
        """The plans of a round of parallel proposals (no merge: :mod:`studio.engine.lanes`),
        in lane order from one read of the pool: each lane its parent and minibatch, as
        GEPA's independent sampling draws them."""
        scores = pool()
        return [self.reflection_plan(first + lane, scores) for lane in range(lanes)]

    def reflection_plan(self, iteration: int, pool: PoolScores) -> Plan:
        config = self.ctx.config
        parent_id = select_parent(config.candidate_selection, pool.matrix, self.rng,
                                  order=pool.pooled_ids, epsilon=config.epsilon)
        minibatch = self.sampler.sample(self.rng)
        components = self.ctx.components
        turn = iteration - 1
        if config.use_merge:  # round robin over the reflection iterations only
            turn -= merging.merges_before(self.ctx, iteration)
        return Plan(iteration, parent_id, minibatch, components[turn % len(components)])

    def snapshot(self) -> tuple[list[Any], dict[str, Any]]:
        """The random state and the sampler's, as a checkpoint stores them."""
        return list(self.rng.getstate()), self.sampler.state()

    def restore(self, state: LoopState) -> None:
        """Continue from a checkpoint's random state and sampler (when it has them)."""
        if state.rng:
            version, internal, gauss = state.rng
            self.rng.setstate((version, tuple(internal), gauss))
        if state.sampler:
            self.sampler = EpochSampler.from_state(state.sampler)


def merge_plan(iteration: int, merge: MergeDetail) -> Plan:
    return Plan(iteration, merge.parents[0], list(merge.subsample), "",
                merge=merge.model_dump())
