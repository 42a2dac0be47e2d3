"""Run a candidate on examples and judge each output: the trials of one batch.

Each (candidate, example) pair is judged at most once per run: a committed trial is reused, which
is also what makes resuming after a crash free of re-scoring.

Scheduling: an example's agent call and critic call form a chain, and every chain of every batch
in flight starts at once; the one limit is the executor's (``max_concurrency`` model calls at
once, a reflection's among them), and a freed call slot goes to the most urgent call waiting,
not the oldest (:mod:`studio.runtime.slots`):

- a reflection's call, then a chain a gate waits for (a minibatch, or a seed example a lane's
  minibatch needs), then a validation's or the test set's, the older iteration first
  (:func:`chain_urgency`): with parallel proposals a lane's minibatch never queues behind a
  sibling's validation, which only settles that sibling, while the lane's gate, validation and
  next reflection wait on it;
- of equal urgency, a chain's critic call before another chain's agent call, so a begun trial
  ends (and streams to the UI) before a new one starts: one call at a time (the embedded
  model), trials come every other call, not after every agent call of the batch.

Chains a gate waits for are not limited again (:func:`chain_limit`): a chain that held a slot
from its agent call through its critic call made an urgent chain wait for a whole validation
chain to end, and left a slot idle whenever a reflection took one (``bench/README.md``).
Validation and test-set chains are admitted :data:`WAITING_CHAINS_PER_SLOT` per call slot, most
urgent first: enough that a freed slot always has a chain ready, and a 100,000-example set does
not prepare (message, media, trace span) every example at once. A critic that judges outside
the run's executor (an evaluator, a judge with an executor of its own) is not counted by the
executor's limit, so there every chain holds one of ``max_concurrency`` chain slots, and
``max_concurrency`` stays a bound on the run's model calls.

A person's Stop (and a worker's shutdown) reaches a batch between its chains: the chains not yet
judging are never started, those in a model call are cancelled (:class:`ChainStopper`), the
results already in hand are committed, and the batch then raises StopRun: a resumed run judges
only the pairs that were not committed. A person's Pause holds each chain before it starts
(:attr:`RunContext.hold_if_paused`); the chains already in a call end and are committed.

Commits: the chains that finish in the same turn of the event loop (a round of replies with
similar latencies returns together) are committed in one transaction (:class:`GroupCommit`),
as are a worker process's shard, whose results come back together. A trial is returned, counted
and announced (``TrialCommitted``, what the UI follows) only after its transaction commits, so
whatever anyone is shown is durable; a crash loses at most the results of the turn not yet
committed, which a resumed run judges again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Collection, Coroutine
from typing import Any, TypeVar

from studio.engine.run.context import RunContext, StopRun
from studio.engine.run.events import TrialCommitted
from studio.engine.scoring.prefetch import Prefetch
from studio.engine.scoring.processes import ChainResult, run_chain
from studio.model.errors import RunStateError
from studio.model.records import Candidate, Example, Trial, TrialPhase, stored_id
from studio.runtime.slots import GATING, VALIDATING, Urgency, set_urgency
from studio.runtime.tracing import TrialIds, end_trial_span

T = TypeVar("T")


async def score_batch(
    ctx: RunContext,
    candidate: Candidate,
    example_ids: list[int],
    *,
    phase: TrialPhase,
    iteration: int,
    proposal_id: int | None = None,
    metered: bool = True,
    unscored: list[str] | None = None,
    prefetched: Prefetch | None = None,
    gating: Collection[int] = (),
) -> list[Trial]:
    """Trials of ``candidate`` on ``example_ids``, in that order (cached ones reused).

    ``metered=False`` (the held-out test set, scored after the loop): outside the loop's
    metric-call budget and uncounted by it, so a run that ended on either still gets its test
    scores. ``unscored``: a result without a score is not committed but its error appended
    there (the test set: a later ``studio test`` judges it again); the trials returned are then
    those committed. ``prefetched``: chains already in flight for some of the examples
    (:mod:`studio.engine.scoring.prefetch`), committed here like any other. ``gating``: examples a
    gate
    waits for although this batch is a validation (the seed's, for the first lanes' minibatches):
    their chains are served as a minibatch's (:func:`chain_urgency`)."""
    ctx.refresh_labels()  # an align run scores against the corrections as they are now
    cached: dict[int, Trial] = ctx.store.first_trials(stored_id(candidate), example_ids)
    missing = [e for e in dict.fromkeys(example_ids) if e not in cached]  # read when judged
    elsewhere = judged_elsewhere(ctx, candidate, missing)  # another lane judges these now
    missing = [e for e in missing if e not in elsewhere]
    ctx.check_stop()  # (a metered batch's budget was reserved when its iteration started)
    commit = claimed(ctx, candidate, missing, functools.partial(
        _commit_all, ctx, candidate, phase, iteration, proposal_id, metered, unscored))
    judge = (functools.partial(_in_this_process, prefetched=prefetched,
                               urgency=functools.partial(chain_urgency, phase, iteration,
                                                         frozenset(gating)))
             if ctx.fan_out is None or not ctx.fan_out.ready else _in_processes)
    stopper = ChainStopper()
    watching = asyncio.ensure_future(stopper.watch(ctx))
    # A task group: when one example raises, its siblings are cancelled before the error
    # reaches the loop, so nothing is committed after the run is marked failed.
    try:
        async with asyncio.TaskGroup() as group:
            tasks = judge(ctx, group, candidate, missing, commit, stopper)
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None  # the first error, as the loop reports it
    finally:
        watching.cancel()
        release(ctx, candidate, missing)
    ctx.check_stop()  # stopped meanwhile: what was committed stays, the rest is judged on resume
    cached.update(await trials_from_elsewhere(ctx, candidate, elsewhere))
    for task in tasks:
        cached.update({trial.example_id: trial for trial in task.result() if trial is not None})
    if ctx.refresh_labels():  # a correction changed while the batch was judged
        cached = ctx.store.first_trials(stored_id(candidate), example_ids)
    return [cached[e] for e in example_ids if e in cached]


class ChainStopper:
    """Ends a batch's chains when the run is asked to stop (a person's Stop, a worker's
    shutdown), within a wake-up of the request: a chain that has not started never starts, one
    waiting for a slot or in a model call is cancelled, and one whose result is in hand is
    left to commit it. The batch then raises StopRun (:func:`score_batch`)."""

    def __init__(self) -> None:
        self.stopped = False
        self._judging: set[asyncio.Task] = set()
        self._cancelled: set[asyncio.Task] = set()

    async def watch(self, ctx: RunContext) -> None:
        """Until the run is asked to stop, then cancel the chains still judging."""
        with contextlib.suppress(StopRun):
            await ctx.control.until(_nothing)
        self.stopped = True
        for task in list(self._judging):
            self._cancelled.add(task)
            task.cancel()

    async def judged(self, work: Callable[[], Awaitable[T]]) -> T | None:
        """``work()``'s result, or None when the run stopped before or during it (the
        cancel it got for that is absorbed here; any other cancel goes on)."""
        if self.stopped:
            return None
        task = asyncio.current_task()
        if task is None:
            raise RunStateError("a batch's chain runs inside an asyncio task")
        self._judging.add(task)
        try:
            return await work()
        except asyncio.CancelledError:
            if task in self._cancelled and task.uncancel() == 0:
                return None
            raise
        except StopRun:  # stopped while held by a person's Pause
            return None
        finally:
            self._judging.discard(task)
            self._cancelled.discard(task)


def _nothing() -> None:
    return None


def _in_this_process(ctx: RunContext, group: asyncio.TaskGroup, candidate: Candidate,
                     example_ids: list[int], commit: Callable, stopper: ChainStopper,
                     urgency: Callable[[int], Urgency],
                     prefetched: Prefetch | None = None) -> list[asyncio.Task]:
    """A task per example's chain, started in order as the batch's window has room
    (:func:`fed`)."""
    agent = ctx.agent_for(candidate)
    group_commit = GroupCommit(commit)

    async def one(example: Example) -> list[Trial | None]:
        key = urgency(stored_id(example))
        set_urgency(key)  # in this task only; its calls (and its admission) wait with it
        started = prefetched.take(stored_id(example)) if prefetched is not None else None

        async def chain() -> ChainResult:
            async with chain_limit(ctx, key):
                if started is not None:
                    return await started
                await ctx.hold_if_paused()  # a person's Pause holds a chain before it starts
                return await run_chain(ctx.executor, agent, ctx.critic, example.data,
                                       ctx.input_key, ctx.primary,
                                       trial_ids(ctx, candidate, example))

        result = await stopper.judged(chain)
        if result is None:  # stopped: judged on resume
            return []
        # committed on the loop's next turn: the next example's call starts first
        return [await group_commit.add(example, result)]

    return fed(ctx, group, example_ids, one)


def fed(ctx: RunContext, group: asyncio.TaskGroup, example_ids: list[int],
        chain: Callable[[Example], Coroutine[Any, Any, list[Trial | None]]]
        ) -> list[asyncio.Task]:
    """The chains of ``example_ids`` as tasks of ``group``, in order, at most
    :func:`window_size` of them not yet ended: a 100,000-example validation holds a window of
    examples and tasks, not all of them (each example is read from the store when its part
    of the batch starts, :data:`FEED_CHUNK` at a time). The list fills as the batch goes;
    read it after the group has ended."""
    tasks: list[asyncio.Task] = []
    if len(example_ids) <= window_size(ctx):  # nothing to hold back: all at once
        examples = ctx.examples.read(example_ids)
        tasks += [group.create_task(chain(examples[e])) for e in example_ids]
        return tasks
    room = asyncio.Semaphore(window_size(ctx))

    async def feed() -> list[Trial | None]:
        for start in range(0, len(example_ids), FEED_CHUNK):
            examples = ctx.examples.read(example_ids[start:start + FEED_CHUNK])
            for example in examples.values():
                await room.acquire()
                task = group.create_task(chain(example))
                task.add_done_callback(lambda _: room.release())
                tasks.append(task)
        return []

    tasks.append(group.create_task(feed()))
    return tasks


FEED_CHUNK = 200
"""Examples read from the store at a time while a large batch is fed (:func:`fed`)."""


def window_size(ctx: RunContext) -> int:
    """Chains of one batch begun and not ended at once: more than :func:`chain_limit` admits
    (a freed slot always has a chain waiting), never a whole large validation set."""
    return 4 * WAITING_CHAINS_PER_SLOT * ctx.config.max_concurrency


WAITING_CHAINS_PER_SLOT = 2
"""Validation chains admitted per call slot: one in a call, one ready for the next free slot."""


def chain_limit(ctx: RunContext, key: Urgency) -> contextlib.AbstractAsyncContextManager:
    """What a chain of urgency ``key`` holds from its start to its trial (module doc): nothing
    for a chain a gate waits for, a place among the validation chains admitted otherwise; one
    of ``max_concurrency`` chain slots for every chain when the critic judges outside the
    run's executor."""
    config = ctx.config
    if not ctx.critic_on_run_executor:
        return ctx.limit("chains", config.max_concurrency)
    if key < (VALIDATING, 0):
        return contextlib.nullcontext()
    return ctx.limit("validation chains", WAITING_CHAINS_PER_SLOT * config.max_concurrency)


def chain_urgency(phase: TrialPhase, iteration: int, gating: frozenset[int],
                  example_id: int) -> Urgency:
    """How urgent a chain is (module doc): a minibatch's or a gating example's before a
    validation's or the test set's, then the older iteration."""
    waited_on = phase in (TrialPhase.PARENT, TrialPhase.CHILD) or example_id in gating
    return (GATING if waited_on else VALIDATING, iteration)


def trial_ids(ctx: RunContext, candidate: Candidate, example: Example) -> TrialIds:
    """What the trial's span carries (its stored id is added at the commit)."""
    return TrialIds(run_id=ctx.run_id, candidate_id=stored_id(candidate),
                    example_id=stored_id(example), split=example.split.value)


def _in_processes(ctx: RunContext, group: asyncio.TaskGroup, candidate: Candidate,
                  example_ids: list[int], commit: Callable,
                  stopper: ChainStopper) -> list[asyncio.Task]:
    fan_out = ctx.fan_out
    if fan_out is None:
        raise RunStateError(f"run {ctx.run_id} has no worker processes to judge in")

    async def shard(ids: list[int]) -> list[Trial]:
        part = list(ctx.examples.read(ids).values())

        async def judged() -> list[ChainResult]:
            await ctx.hold_if_paused()
            return await fan_out.run_shard(candidate.components, [e.data for e in part],
                                           ctx.input_key)

        results = await stopper.judged(judged)
        if results is None:  # stopped: the shard is judged on resume
            return []
        return commit(list(zip(part, results, strict=True)))  # one transaction per shard

    return [group.create_task(shard(part)) for part in fan_out.shards(example_ids)]


def judged_elsewhere(ctx: RunContext, candidate: Candidate, example_ids: list[int]
                     ) -> dict[int, asyncio.Future]:
    """The pairs another batch in flight judges now (two lanes, one parent): awaited, never
    judged twice."""
    owner = stored_id(candidate)
    return {e: ctx.in_flight[(owner, e)] for e in example_ids if (owner, e) in ctx.in_flight}


def claimed(ctx: RunContext, candidate: Candidate, example_ids: list[int],
            commit: Callable) -> Callable:
    """Mark ``example_ids`` as judged by this batch; ``commit`` then hands each trial to the
    batches waiting for it."""
    owner = stored_id(candidate)
    loop = asyncio.get_running_loop()
    for example_id in example_ids:
        ctx.in_flight[(owner, example_id)] = loop.create_future()

    def committed(finished: list[tuple[Example, ChainResult]]) -> list[Trial | None]:
        trials = commit(finished)
        for (example, _), trial in zip(finished, trials, strict=True):
            future = ctx.in_flight.pop((owner, stored_id(example)), None)
            if future is not None and not future.done():
                future.set_result(trial)
        return trials

    return committed


def release(ctx: RunContext, candidate: Candidate, example_ids: list[int]) -> None:
    """The pairs this batch did not commit (it failed or was stopped): no one waits for them."""
    owner = stored_id(candidate)
    for example_id in example_ids:
        future = ctx.in_flight.pop((owner, example_id), None)
        if future is not None and not future.done():
            future.set_result(None)


async def trials_from_elsewhere(ctx: RunContext, candidate: Candidate,
                                elsewhere: dict[int, asyncio.Future]) -> dict[int, Trial]:
    """The trials another batch judged for us (shielded: our stop does not cancel theirs); a
    pair it did not commit is read from the store, or left out."""
    trials: dict[int, Trial] = {}
    for example_id, future in elsewhere.items():
        trial = await asyncio.shield(future)
        if trial is not None:
            trials[example_id] = trial
    left = [e for e in elsewhere if e not in trials]
    if left:
        trials.update(ctx.store.first_trials(stored_id(candidate), left))
    return trials


class GroupCommit:
    """Commits the results of chains that finish in the same turn of the event loop together.

    Each result waits (:meth:`add`) for the next turn of the loop, when every result added in
    between is committed by one call of ``commit`` (one transaction): per trial, the
    transaction's fixed cost (begin, the lease check, commit) is paid once per group. A chain
    whose task was cancelled while waiting (a sibling failed, the run stops) is left out, as it
    would have been before its own commit."""

    def __init__(self, commit: Callable[[list[tuple[Example, ChainResult]]], list[Trial | None]]
                 ) -> None:
        self._commit = commit
        self._waiting: list[tuple[Example, ChainResult, asyncio.Future[Trial | None]]] = []

    async def add(self, example: Example, result: ChainResult) -> Trial | None:
        """``example``'s trial once committed (None: not stored, see ``unscored``)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Trial | None] = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._flush)
        self._waiting.append((example, result, future))
        return await future

    def _flush(self) -> None:
        waiting = [entry for entry in self._waiting if not entry[2].done()]
        self._waiting = []
        if not waiting:
            return
        try:
            trials = self._commit([(example, result) for example, result, _ in waiting])
        except Exception as exc:  # raised in every waiting chain: the batch fails
            for *_, future in waiting:
                future.set_exception(exc)
            return
        for (*_, future), trial in zip(waiting, trials, strict=True):
            future.set_result(trial)


def _commit_all(ctx: RunContext, candidate: Candidate, phase: TrialPhase, iteration: int,
                proposal_id: int | None, metered: bool, unscored: list[str] | None,
                finished: list[tuple[Example, ChainResult]]) -> list[Trial | None]:
    """The trials of ``finished``, committed in one transaction, then each counted and
    announced; None where a result is not stored (``unscored``)."""
    trials = [_trial(ctx, candidate, phase, iteration, proposal_id, unscored, example, result)
              for example, result in finished]
    stored = iter(ctx.store.add_trials([trial for trial in trials if trial is not None])
                  if any(trial is not None for trial in trials) else [])
    committed = [next(stored) if trial is not None else None for trial in trials]
    for (_, result), trial in zip(finished, committed, strict=True):
        if trial is not None:
            end_trial_span(result.span, trial_id=stored_id(trial), error=result.error,
                           cost_usd=result.cost_usd)
    if metered and any(trial is not None for trial in committed):  # once: the store counts all
        ctx.count_metric_call(sum(trial is not None for trial in committed))
    for trial in committed:
        if trial is None:
            continue
        ctx.emit(TrialCommitted(run_id=ctx.run_id, iteration=iteration, trial_id=stored_id(trial),
                                candidate_id=stored_id(candidate), score=trial.feedback.score))
    return committed


def _trial(ctx: RunContext, candidate: Candidate, phase: TrialPhase, iteration: int,
           proposal_id: int | None, unscored: list[str] | None, example: Example,
           result: ChainResult) -> Trial | None:
    """The trial to store for ``example``'s result; None for a result without a score when
    ``unscored`` collects those (its error appended there)."""
    if unscored is not None and result.feedback.score is None and not (  # undone: no failure
            ctx.labels is not None and ctx.labels.undone(stored_id(example))):
        unscored.append(f"example {example.index}: {result.error or 'no score'}")
        end_trial_span(result.span, error=result.error, cost_usd=result.cost_usd)
        return None
    return Trial(
        run_id=ctx.run_id, candidate_id=stored_id(candidate), example_id=stored_id(example),
        split=example.split, example_index=example.index, iteration=iteration, phase=phase,
        proposal_id=proposal_id, input_text=result.input_text, output=result.output,
        feedback=result.feedback, error=result.error,
        trace=result.trace, latency_s=result.latency_s, tokens=result.tokens, worker=ctx.worker,
        cost_usd=result.cost_usd,
    )
