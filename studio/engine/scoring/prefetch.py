"""A child's validation started in the slots its minibatch leaves idle (issue 22's pipelining).

With GEPA's minibatch of 3 and 5 slots, two slots sat empty while the child was judged on its
minibatch, and its validation began only after the gate. In auto mode the rule decides as soon
as the minibatch is scored, so the validation examples that fit in those idle slots start with
the minibatch: an accepted child's validation then needs fewer rounds, and a rejected one
cancels them (at most ``max_concurrency - minibatch`` chains, the slots that were idle).

The validation keeps at least one chain of its own, started after the decision: its phase
stays where a person's stop, a timeout or a failure meets it, as the steering guarantees are
stated and tested (``tests/engine/test_steering.py``), and a small validation set, which would
fit whole in the idle slots, saves a round less than it could.

Nothing is committed here: a prefetched chain's result becomes a trial only when the accepted
child's validation takes it (:func:`studio.engine.scoring.batch.score_batch`, ``prefetched``), so
the
store holds the same trials as without prefetching, and a run killed meanwhile loses only
uncommitted calls, judged again on resume. Off where a person decides (review mode: their time
is not the machine's to spend), in align runs (their labels may change a verdict meanwhile),
with worker processes (their shards are scheduled there), while parallel proposals are in
flight (their lanes fill the idle slots: :mod:`studio.engine.loop.window`) and under a
``max_metric_calls``
budget (the budget counts stored trials, and a rejected child's early chains are spent but
never stored: a person who capped the calls gets no call the cap does not count).
"""

from __future__ import annotations

import asyncio
import contextlib

from studio.engine.run.context import RunContext
from studio.engine.scoring.processes import ChainResult, run_chain
from studio.model.config import ReviewMode
from studio.model.records import Candidate, stored_id
from studio.runtime.tracing import TrialIds, end_trial_span


class Prefetch:
    """Validation chains in flight for one child, by example id, until taken or discarded."""

    def __init__(self, tasks: dict[int, asyncio.Task[ChainResult]]) -> None:
        self.tasks = tasks

    def take(self, example_id: int) -> asyncio.Task[ChainResult] | None:
        """The chain started for ``example_id`` (once), or None."""
        return self.tasks.pop(example_id, None)

    async def discard(self) -> None:
        """Cancel the chains no validation took (the child was rejected, or the run stops)."""
        tasks, self.tasks = list(self.tasks.values()), {}
        for task in tasks:
            task.cancel()
        for task in tasks:  # retrieved, so a chain's own error is never reported as lost
            with contextlib.suppress(BaseException):
                result = await task
                end_trial_span(result.span, error="not needed: the validation was not run",
                               cost_usd=result.cost_usd)


def start_validation(ctx: RunContext, child: Candidate, minibatch: list[int]) -> Prefetch:
    """Start ``child``'s first validation examples in the slots its minibatch leaves idle, when
    the rule will decide at once (auto mode, in this process, no labels); else nothing."""
    if (ctx.config.review is not ReviewMode.AUTO or ctx.labels is not None
            or ctx.fan_out is not None or ctx.config.max_metric_calls is not None
            or ctx.lanes > 1):  # lanes in flight fill the idle slots
        return Prefetch({})
    judged = ctx.store.first_trials(stored_id(child),
                                    list(dict.fromkeys([*minibatch, *ctx.val_ids])))
    pending = [e for e in dict.fromkeys(minibatch) if e not in judged]
    idle = ctx.config.max_concurrency - len(pending)
    rest = [e for e in ctx.val_ids if e not in judged and e not in set(minibatch)]
    early = min(idle, len(rest) - 1)  # the validation keeps a chain of its own (module doc)
    if early <= 0 or not pending:
        return Prefetch({})
    agent = ctx.agent_for(child)
    examples = ctx.examples.read(rest[:early])
    return Prefetch({e: asyncio.ensure_future(run_chain(
        ctx.executor, agent, ctx.critic, example.data, ctx.input_key, ctx.primary,
        TrialIds(ctx.run_id, stored_id(child), e, example.split.value)))
        for e, example in examples.items()})
