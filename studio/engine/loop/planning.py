"""Drawing an iteration's plan: a merge when one is due and a pair qualifies, else a parent
(selection), a minibatch (sampling) and the component whose turn it is (round robin).

The planner owns the run's seeded random source and epoch sampler; both go into every
checkpoint (:meth:`Planner.snapshot`), so a resumed run draws what it would have drawn.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import studio.engine.propose.merge as merging
from studio.engine.policies.pool import PoolScores, load_view
from studio.engine.policies.sampling import EpochSampler
from studio.engine.policies.selection import select_parent
from studio.engine.run.context import RunContext
from studio.engine.run.state import LoopState, Plan
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

    def lane_plan(self, iteration: int, pool: PoolScores | None, seed_id: int) -> Plan:
        """A lane's plan (:mod:`studio.engine.loop.window`; no merge) from ``pool``, the pool as
        iteration ``iteration - k`` left it; None before the seed is scored. A pool of one (the
        first k iterations) is the seed, drawn without the random source, so the draws are the
        same whether or not the seed's scores are in yet."""
        if pool is None or len(pool.pooled_ids) <= 1:
            return self.plan_for(iteration, seed_id)
        return self.reflection_plan(iteration, pool)

    def reflection_plan(self, iteration: int, pool: PoolScores) -> Plan:
        config = self.ctx.config
        parent_id = select_parent(config.candidate_selection, pool.matrix, self.rng,
                                  order=pool.pooled_ids, epsilon=config.epsilon)
        return self.plan_for(iteration, parent_id)

    def plan_for(self, iteration: int, parent_id: int) -> Plan:
        """``parent_id``'s plan: its minibatch and the component whose turn it is."""
        config = self.ctx.config
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
