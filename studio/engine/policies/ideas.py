"""The "out of ideas" stop condition's count and announcement (the condition itself:
:mod:`studio.model.stops.out_of_ideas`).

A person who rejects every proposal (or a rule that does) teaches the reflection what not to
write; the reflection reads the texts already tried and, once it has nothing new, repeats them.
Each such iteration still pays its reflection calls (up to
:data:`~studio.engine.run.tried.MAX_ATTEMPTS`, its retries) and ends skipped. After
``out_of_ideas_after`` reflection iterations in a row that made no new candidate, the run ends
with :attr:`StopReason.OUT_OF_IDEAS`, whose words tell the person what to do instead, and an
:class:`~studio.engine.run.events.OutOfIdeas` event counts the reflection calls saved.

Counted from the store, as each iteration settles (in iteration order, with lanes too, so a
resumed or parallel run counts alike): an iteration whose reflection proposal (or a person's
edit of it) made a candidate had a new idea; one with reflection proposals and no candidate had
none; a merge, or a parent already perfect on its minibatch (no reflection asked), leaves the
count as it was.
"""

from __future__ import annotations

from enum import StrEnum

from studio.engine.run.context import RunContext
from studio.engine.run.events import OutOfIdeas
from studio.engine.run.state import LoopState
from studio.model.records import ProposalKind


class Idea(StrEnum):
    """What one iteration did for the count."""

    NEW = "new"
    """A reflection proposal, or a person's edit, made a candidate: the count starts over."""
    NONE = "none"
    """The reflection was asked and made no candidate (repeats, nothing to propose)."""
    NEUTRAL = "neutral"
    """No reflection was asked (a merge, a perfect parent): the count stays."""


def iteration_idea(ctx: RunContext, iteration: int) -> Idea:
    """What ``iteration`` did, read from its stored proposals."""
    proposals = [p for p in ctx.store.proposals(ctx.run_id, iteration=iteration)
                 if p.kind is ProposalKind.REFLECTION]
    if not proposals:
        return Idea.NEUTRAL
    return Idea.NEW if any(p.child_id is not None for p in proposals) else Idea.NONE


def count_ideas(ctx: RunContext, state: LoopState, iteration: int) -> None:
    """Fold the settled ``iteration`` into ``state.idle_iterations``."""
    idea = iteration_idea(ctx, iteration)
    if idea is Idea.NEW:
        state.idle_iterations = 0
    elif idea is Idea.NONE:
        state.idle_iterations += 1


def announce_out_of_ideas(ctx: RunContext, idle: int, iteration: int) -> None:
    """Before the run ends with ``out_of_ideas`` (:mod:`studio.model.stops.out_of_ideas`),
    announce the reflection calls its stop saves; ``iteration``: the last settled one the
    count of ``idle`` iterations reaches."""
    spent = sum(1 for i in range(iteration - idle + 1, iteration + 1)
                for p in ctx.store.proposals(ctx.run_id, iteration=i)
                if p.kind is ProposalKind.REFLECTION and p.edited_from is None)
    left = max(0, ctx.config.max_iterations - iteration)
    ctx.emit(OutOfIdeas(run_id=ctx.run_id, iteration=iteration, iterations=idle,
                        reflection_calls=spent,
                        reflection_calls_saved=round(spent / idle * left)))
