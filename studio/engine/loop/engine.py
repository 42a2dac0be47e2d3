"""The GEPA loop, driven through the store so people can watch and steer it.

One iteration: select a parent, sample a minibatch, score the parent on it, reflect, validate the
proposal, score the child on the same minibatch, pass the gate (rule or person), and on
acceptance score the child on the validation set and add it to the pool. Every step is idempotent
against the store, so a run killed at any point resumes where its last commit left it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import asdict
from typing import TypeVar

import studio.engine.propose.merge as merging
import studio.engine.propose.proposer as proposer
from studio.engine.loop.lanes import LaneRun
from studio.engine.loop.planning import Planner
from studio.engine.loop.progress import ProgressMeter, phase, to_judge
from studio.engine.loop.window import Window, fewer_lanes, lane_count
from studio.engine.people.acceptance import (
    Verdict,
    child_evidence,
    edited,
    open_gate,
    settle,
)
from studio.engine.people.gates import await_decision
from studio.engine.policies.ideas import count_ideas
from studio.engine.policies.limits import check_limits
from studio.engine.policies.pool import PoolReader
from studio.engine.propose.perfect import perfect_on_minibatch, skip_perfect
from studio.engine.run.agent_texts import extract_components
from studio.engine.run.context import RunContext, StopRun
from studio.engine.run.events import (
    BaselineScored,
    CandidateAccepted,
    DecisionApplied,
    IterationStarted,
    Phase,
    ProposalEvaluated,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStarted,
    TestUnscored,
)
from studio.engine.run.state import LoopState, Plan
from studio.engine.scoring.batch import score_batch
from studio.engine.scoring.holdout import score_holdout
from studio.engine.scoring.prefetch import Prefetch, start_validation
from studio.engine.scoring.processes import CRITIC_NOT_CALLED
from studio.model.errors import (
    LeaseLostError,
    ScoringError,
    StoreError,
    StoreUnavailableError,
    StudioError,
)
from studio.model.records import (
    Candidate,
    Decision,
    DecisionAction,
    MergeDetail,
    Proposal,
    ProposalKind,
    ProposalStatus,
    RunRequest,
    RunStatus,
    StopReason,
    Trial,
    TrialPhase,
    content_hash,
    stored_id,
    utcnow,
)
from studio.model.redaction import redact
from studio.runtime.execution import describe_error
from studio.runtime.slots import PROPOSING, VALIDATING, urgency
from studio.store.seams import LoopStore

logger = logging.getLogger(__name__)


class RunFailed(StudioError):
    """The run cannot go on (e.g. the critic could not score a single baseline example)."""


T = TypeVar("T")


def baseline_failure(trials: list[Trial]) -> str:
    """Why no baseline example has a score, blaming whoever failed: the agent (its model gave
    no output, timed out, hit a limit) or the critic; the critic's model is named only when
    the critic failed."""
    errors = [t.error or "no score" for t in trials]
    agent = [e for e in errors if CRITIC_NOT_CALLED in e]
    if len(agent) == len(errors):
        return (f"the agent failed on every baseline example ({len(errors)}), so the critic "
                f"was never called; first error: {errors[0]}. Check the agent's model and "
                f"instruction (or the workflow's agents).")
    first = next(e for e in errors if CRITIC_NOT_CALLED not in e)
    also = (f" (the agent itself failed on {len(agent)} of them; first: {agent[0]})"
            if agent else "")
    return (f"the critic could not evaluate any baseline example{also}; first critic error: "
            f"{first}. Check the critic's model and instruction.")


class Engine:
    """Runs one run to its end. Create it with :func:`studio.engine.hosting.build.build_engine`."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.store: LoopStore = ctx.store
        """What the loop itself reads and writes (the parts it calls take the run's context)."""
        self.lease_lost = False
        """Set when another worker took the run over: this engine then ends without writing."""
        self.state = LoopState()
        self.planner = Planner(ctx)
        """Draws each iteration's parent, minibatch and component (or merge), seeded."""
        self.pools = PoolReader(ctx.store, ctx.run, ctx.val_ids, keep_rows=ctx.labels is None)
        self.meter = ProgressMeter()
        self.window: Window | None = None
        """The turns of the parallel proposals in flight, if any
        (:mod:`studio.engine.loop.window`)."""
        self._holding, self._held_since = 0, 0.0
        self._pause: asyncio.Future[None] | None = None
        """The pause in progress, which every chain and lane held by it waits on."""
        ctx.hold_if_paused = self.pause_point

    @property
    def run_id(self) -> str:
        return self.ctx.run_id

    # ------------------------------------------------------------------ control (any thread)
    # Under a worker, the store's request is re-delivered by each heartbeat: steer a run with
    # :class:`studio.engine.hosting.worker.RunManager`, which stores the request and calls these.

    def pause(self) -> None:
        """Hold the run before its next iteration until :meth:`apply_control` lifts it."""
        self.apply_control(RunRequest.PAUSE)

    def stop(self, reason: StopReason | str = StopReason.USER) -> None:
        """End the run at its next step with ``reason`` (``user`` marks it stopped)."""
        self.ctx.control.stop(StopReason(reason))

    def apply_control(self, control: RunRequest | None) -> None:
        """Act on a person's request as stored on the run: ``pause``, ``stop`` or None."""
        self.ctx.control.apply(control)

    # ------------------------------------------------------------------ run

    async def run(self, worker: str | None = None) -> StopReason:
        """Run until a stop condition; returns the stop reason. ``worker`` (the run manager's
        id, None when run directly) is stamped on each trial."""
        ctx = self.ctx
        ctx.worker = worker
        if ctx.fan_out is not None:
            ctx.fan_out.start()
        try:
            with ctx.control.attached(ctx.run_id):
                return await self._run()
        finally:
            if self._pause is not None:
                self._pause.cancel()
            if ctx.fan_out is not None:
                ctx.fan_out.close()

    async def _run(self) -> StopReason:
        ctx = self.ctx
        resumed = self._restore()
        started = {} if ctx.run.started_at else {"started_at": utcnow()}
        self.store.update_run(ctx.run_id, status=RunStatus.RUNNING, finished_at=None,
                              stop_reason=None, error=None, **started)
        ctx.emit(RunStarted(run_id=ctx.run_id, iteration=self.state.iteration, resumed=resumed))
        if ctx.run.control is not None:  # a Pause kept through a resume holds from the start
            ctx.control.apply(ctx.run.control)  # (None would drop a pause asked since)
        try:
            reason = await self._loop()
            if reason.leaves_resumable:
                self._finish(RunStatus.STOPPED, reason)
                return reason
            if await self.score_test_set() is StopReason.SHUTDOWN:  # another worker scores it
                self._finish(RunStatus.STOPPED, StopReason.SHUTDOWN)
                return StopReason.SHUTDOWN
            self._finish(RunStatus.COMPLETED, reason)
            return reason
        except LeaseLostError:  # another worker took the run over: it owns every write now
            self.lease_lost = True
            raise
        except asyncio.CancelledError:  # the server or the process shuts down
            if not self.lease_lost:  # the new holder owns the status and the checkpoint
                self._finish(RunStatus.STOPPED, StopReason.SHUTDOWN)
            raise
        except StoreUnavailableError as exc:  # resumable: every committed trial is kept
            logger.warning("run %s stopped: %s", ctx.run_id, exc)
            with contextlib.suppress(StoreError):  # still down: it shows as orphaned later
                if self.store.get_run(ctx.run_id).status is not RunStatus.COMPLETED:  # landed
                    self._finish(RunStatus.STOPPED, StopReason.DATABASE_UNAVAILABLE,
                                 error=str(exc), keep_control=True)
            raise
        except Exception as exc:
            # the message is what a person needs; the traceback is for a developer (debug)
            logger.error("run %s failed: %s", ctx.run_id, redact(f"{type(exc).__name__}: {exc}"))
            logger.debug("run %s failed", ctx.run_id, exc_info=True)
            self._finish(RunStatus.FAILED, StopReason.ERROR, error=f"{type(exc).__name__}: {exc}")
            raise

    async def score_test_set(self) -> StopReason | None:
        """The overfitting guard's test set, after the evolution: a failure or a person's Stop
        here leaves the evolution's result standing, recorded as an event that says how to
        score the rest. Returns the stop reason if stopped."""
        try:
            await score_holdout(self.ctx, self.state.iteration)
        except StopRun as stop:
            self._unscored(stop.reason, f"scoring the test set was stopped ({stop.reason}); "
                           f"score it with `studio test {self.run_id}`")
            return stop.reason
        except ScoringError as exc:  # says how to score the pairs it did not keep
            self._unscored(StopReason.ERROR, str(exc))
        except LeaseLostError:
            raise
        except Exception as exc:  # the evolution's result stands; the test set is retried
            logger.exception("run %s: scoring the test set failed", self.run_id)
            self._unscored(StopReason.ERROR, f"scoring the test set failed: {describe_error(exc)}; "
                           f"score it again with `studio test {self.run_id}`")
        return None

    def _unscored(self, reason: StopReason, message: str) -> None:
        self.ctx.emit(TestUnscored(run_id=self.run_id, iteration=self.state.iteration,
                                   reason=reason, message=redact(message)))

    async def _loop(self) -> StopReason:
        """The baseline, then iterations until a stop condition; returns the stop reason."""
        self.ctx.lanes = lane_count(self.ctx)
        reduced = fewer_lanes(self.ctx, self.ctx.lanes, self.state.iteration)
        if reduced is not None:  # said on the Run page and by the CLI
            self.ctx.emit(reduced)
        try:
            if self.ctx.lanes > 1:
                raise await LaneRun(self).run()  # the limit that ended it
            await self.score_baseline()
            while True:
                check_limits(self.ctx, self.state)
                await self.pause_point()
                await self.advance()
        except StopRun as stop:
            return stop.reason

    def _finish(self, status: RunStatus, reason: StopReason, error: str | None = None,
                *, keep_control: bool = False) -> None:
        """Record the end. ``keep_control``: a person's pending Pause or Stop outlives it (a
        stop by an outage is resumed by its worker, a worker's shutdown hands the run on to
        another: each must still see them)."""
        ctx = self.ctx
        self.checkpoint()
        keep_control = keep_control or reason is StopReason.SHUTDOWN
        control = {} if keep_control else {"control": None}
        self.store.update_run(ctx.run_id, status=status, stop_reason=reason,
                              finished_at=utcnow(), error=redact(error) if error else None,
                              **control)
        ctx.emit(RunFinished(run_id=ctx.run_id, iteration=self.state.iteration,
                             status=status, stop_reason=reason))

    # ------------------------------------------------------------------ checkpoints

    def _restore(self) -> bool:
        saved = self.store.load_checkpoint(self.ctx.run_id)
        if saved is None:
            return False
        _, state = saved
        self.state = LoopState(**state)
        self.planner.restore(self.state)
        self.ctx.clock.active_seconds_before = self.state.active_seconds
        self.ctx.clock.held_seconds = self.state.held_seconds
        return True

    def checkpoint(self) -> None:
        self.state.rng, self.state.sampler = self.planner.snapshot()
        self.state.active_seconds = self.ctx.active_seconds()
        self.state.held_seconds = self.ctx.clock.held_seconds
        # a shallow copy: asdict() would deep-copy the random state's 625 numbers each time
        self.store.save_checkpoint(self.ctx.run_id, self.state.iteration,
                                   dict(vars(self.state)))

    # ------------------------------------------------------------------ baseline

    def seed(self) -> Candidate:
        """Candidate #0, added on the run's first start."""
        candidates = self.store.candidates(self.ctx.run_id)
        return candidates[0] if candidates else self._add_seed()

    async def score_baseline(self, first: Sequence[int] = ()) -> None:
        """Score the seed candidate on the validation set and make it the pool's first member;
        the examples in ``first`` (lanes waiting for them) take the first slots."""
        ctx = self.ctx
        seed = self.seed()
        if seed.pooled:
            return
        budget = ctx.config.max_metric_calls
        if budget is not None and ctx.trial_calls(len(ctx.val_ids)) > budget:
            raise StopRun(StopReason.MAX_METRIC_CALLS)  # never a baseline half-scored
        order = [e for e in dict.fromkeys(first) if e in set(ctx.val_ids)]
        order += [e for e in ctx.val_ids if e not in set(order)]
        with phase(ctx, self.state, Phase.SCORING_SEED, 0, model=ctx.agent_model,
                   items=to_judge(ctx, seed.id, order)):
            trials = await score_batch(ctx, seed, order, phase=TrialPhase.VALSET, iteration=0,
                                       gating=first)
        if all(t.effective_score is None for t in trials):
            raise RunFailed(baseline_failure(trials))
        self.store.set_pooled(stored_id(seed))
        pool = self.pools.read()
        self.state.best_score = pool.best_score
        ctx.emit(BaselineScored(run_id=ctx.run_id, iteration=0, candidate_id=stored_id(seed),
                                score=pool.means.get(stored_id(seed))))
        self.checkpoint()
        self.meter.report(ctx, self.state, pool)

    def _add_seed(self) -> Candidate:
        """Candidate #0: the agent's components, or on a fork the forked candidate's."""
        origin = self.ctx.run.spec.forked_from
        components = (dict(origin.components) if origin is not None
                      else extract_components(self.ctx.agent, self.ctx.components))
        return self.store.add_candidate(Candidate(
            run_id=self.ctx.run_id, index=0, components=components,
            content_hash=content_hash(components)))

    # ------------------------------------------------------------------ pause

    async def pause_point(self) -> None:
        """Hold the run here while a person asks it to pause: between iterations, and before
        each chain of a batch starts (:mod:`studio.engine.scoring.batch`). The chains and lanes held
        at once share one pause: the run is said paused once, resumed once, and the time is
        counted once. A stop ends it with StopRun."""
        if not self.ctx.control.pause_requested:
            return
        if self._pause is None or self._pause.done():
            self._pause = asyncio.ensure_future(self.held(self._paused()))
            self._pause.add_done_callback(_retrieved)
        await asyncio.shield(self._pause)  # a held chain that is cancelled leaves the others

    async def _paused(self) -> None:
        ctx = self.ctx
        self.pools.forget()  # a person may correct scores while the run waits
        self.store.update_run(ctx.run_id, status=RunStatus.PAUSED)
        ctx.emit(RunPaused(run_id=ctx.run_id, iteration=self.state.iteration))
        await ctx.control.until(ctx.control.unpaused)
        self.store.update_run(ctx.run_id, status=RunStatus.RUNNING)
        ctx.emit(RunResumed(run_id=ctx.run_id, iteration=self.state.iteration))

    async def held(self, waiting: Awaitable[T]) -> T:
        """Await a person (a pause, a gate): their time is never toward ``timeout_seconds``,
        nor in the ETA."""
        if not self._holding:  # lanes waiting at their gates at once: their time counts once
            self._held_since = time.monotonic()
        self._holding += 1
        try:
            return await waiting
        finally:
            self._holding -= 1
            if not self._holding:
                self.ctx.clock.held_seconds += time.monotonic() - self._held_since

    # ------------------------------------------------------------------ one iteration

    async def advance(self) -> None:
        """The next iteration (one lane; :class:`studio.engine.loop.lanes.LaneRun` keeps several
        in flight)."""
        await self.iterate(self.state.iteration + 1)

    async def lane(self, plan: Plan) -> None:
        """One of several iterations in flight: its turns are passed when it ends, however."""
        try:
            await self.reflection_step(plan)
        finally:
            if self.window is not None:
                self.window.ended(plan.iteration)

    async def iterate(self, iteration: int) -> None:
        started, held = time.monotonic(), self.ctx.clock.held_seconds
        plan = self.plan(iteration)
        self.pools.forget()  # read before the plan's first await: stale after it
        if plan.merge is not None:
            await self.merge_step(plan, MergeDetail(**plan.merge))
        else:
            await self.reflection_step(plan)
        # a person's time at the gate is not machine time, so not in the ETA
        self._end_iteration(iteration, time.monotonic() - started
                            - (self.ctx.clock.held_seconds - held))

    def plan(self, iteration: int) -> Plan:
        """A merge when one is due and a pair qualifies; else select the parent, sample the
        minibatch and pick the component. Once per iteration: a resumed iteration replays the
        stored plan."""
        stored = [self.state.plan, *(self.state.round or [])]  # lanes' plans: an older run's
        replay = next((p for p in stored if p and p["iteration"] == iteration), None)
        if replay is not None:
            return Plan(**replay)
        plan = self.planner.draw(iteration, self.pools.recent)
        self.state.plan = asdict(plan)
        self.checkpoint()
        kind = ProposalKind.MERGE if plan.merge is not None else ProposalKind.REFLECTION
        self.ctx.emit(IterationStarted(
            run_id=self.ctx.run_id, iteration=iteration, parent_id=plan.parent_id,
            component=plan.component, minibatch=plan.minibatch, proposal_kind=kind))
        return plan

    async def reflection_step(self, plan: Plan) -> None:
        """Score the parent, reflect, then score and gate the child (unless it is invalid)."""
        ctx = self.ctx
        parent = self.store.get_candidate(plan.parent_id)
        with phase(ctx, self.state, Phase.RUNNING_PARENT, plan.iteration, model=ctx.agent_model,
                   items=to_judge(ctx, parent.id, plan.minibatch)):
            parent_trials = await score_batch(ctx, parent, plan.minibatch,
                                              phase=TrialPhase.PARENT, iteration=plan.iteration)
        if perfect_on_minibatch(self.ctx, parent_trials):
            skip_perfect(self.ctx, parent, plan.iteration)
            return
        turn = (functools.partial(self.window.propose_turn, plan.iteration)
                if self.window is not None else None)
        with urgency((PROPOSING, plan.iteration)), \
                phase(ctx, self.state, Phase.REFLECTING, plan.iteration,
                      model=ctx.proposing_model):  # its call before any chain's; a stop
            proposal = await ctx.control.unless_stopped(  # cancels it (asked again)
                proposer.propose(ctx, plan.iteration, parent, plan.component,
                                 parent_trials, turn))
        if proposal.status is not ProposalStatus.INVALID:
            await self.evaluate_and_gate(proposal, parent, plan)

    async def merge_step(self, plan: Plan, detail: MergeDetail) -> None:
        """Propose the planned merge (or replay the stored one), judge the child on the
        subsample, and pass the gate like any proposal. A merge cannot be edited."""
        ctx = self.ctx
        proposal = merging.propose_merge(ctx, plan.iteration, detail)
        if proposal.status is ProposalStatus.INVALID:
            return
        child = merging.merged_child(ctx, proposal)
        if child is None:  # the run has that candidate already: refused, named
            return
        proposal = self.store.get_proposal(stored_id(proposal))  # now with its child
        with phase(ctx, self.state, Phase.RUNNING_CHILD, plan.iteration, model=ctx.agent_model,
                   items=to_judge(ctx, child.id, plan.minibatch)):
            await score_batch(ctx, child, plan.minibatch, phase=TrialPhase.CHILD,
                              iteration=plan.iteration, proposal_id=proposal.id)
        evidence = child_evidence(ctx, proposal, child)
        ctx.emit(ProposalEvaluated(
            run_id=ctx.run_id, iteration=plan.iteration, proposal_id=stored_id(proposal),
            child_id=stored_id(child), parent_sum=evidence.parent_sum, child_sum=evidence.child_sum,
            rule_accepts=evidence.rule_accepts, proposal_kind=ProposalKind.MERGE))
        decision = await self.gate(proposal, plan.iteration,
                                   functools.partial(child_evidence, ctx, proposal, child))
        if decision.action is DecisionAction.EDIT:  # refused by decide(); never from a person
            decision = decision.model_copy(update={"action": DecisionAction.REJECT})
        await self.apply(decision, proposal, child)

    async def evaluate_and_gate(self, proposal: Proposal, parent: Candidate, plan: Plan) -> None:
        """Score the child on the minibatch and pass the gate; edits loop back here."""
        ctx = self.ctx
        proposal = proposer.latest_in_chain(ctx, proposal)
        while True:
            child = proposer.child_of(ctx, proposal, parent)
            if self.window is not None:  # the next lane may store its proposal now
                self.window.proposed(plan.iteration)
            if child is None:  # the run has that candidate already: refused, named
                return
            with urgency((VALIDATING, plan.iteration)):  # behind the minibatch's chains
                prefetch = start_validation(ctx, child, plan.minibatch)  # in the idle slots
            try:
                with phase(ctx, self.state, Phase.RUNNING_CHILD, plan.iteration,
                           model=ctx.agent_model,
                           items=to_judge(ctx, child.id, plan.minibatch)):
                    await score_batch(ctx, child, plan.minibatch, phase=TrialPhase.CHILD,
                                      iteration=plan.iteration, proposal_id=proposal.id)
                evidence = child_evidence(ctx, proposal, child)
                ctx.emit(ProposalEvaluated(
                    run_id=ctx.run_id, iteration=plan.iteration, proposal_id=stored_id(proposal),
                    child_id=stored_id(child), parent_sum=evidence.parent_sum,
                    child_sum=evidence.child_sum, rule_accepts=evidence.rule_accepts))
                decision = await self.gate(proposal, plan.iteration,
                                           functools.partial(child_evidence, ctx, proposal, child))
                if decision.action is not DecisionAction.EDIT:
                    await self.apply(decision, proposal, child, prefetch)
                    return
            finally:
                await prefetch.discard()  # rejected, stopped or failed: never committed
            proposal = edited(ctx, proposal, decision)

    async def gate(self, proposal: Proposal, iteration: int, rule: Verdict) -> Decision:
        """The rule decides in auto mode; in review mode a person does. A stop is no decision:
        the proposal waits again when the run resumes."""
        decision = open_gate(self.ctx, proposal, iteration, rule)
        if decision is not None:
            return decision
        with phase(self.ctx, self.state, Phase.AWAITING_DECISION, iteration,
                   proposal_id=stored_id(proposal)):
            return await self.held(await_decision(self.ctx, stored_id(proposal)))

    async def apply(self, decision: Decision, proposal: Proposal, child: Candidate,
                    prefetch: Prefetch | None = None) -> None:
        """Act on the decision. An accepted child is always validated: the iteration's start
        reserved its validation, and :func:`studio.engine.people.gates.decide` refuses an edit the
        budget cannot pay for."""
        ctx = self.ctx
        ctx.emit(DecisionApplied(run_id=ctx.run_id, iteration=proposal.iteration,
                                 proposal_id=stored_id(proposal), action=decision.action,
                                 automatic=decision.automatic, reason=decision.reason))
        if decision.action is DecisionAction.REJECT:
            settle(ctx.store, proposal, ProposalStatus.REJECTED)
            return
        with phase(ctx, self.state, Phase.VALIDATING, proposal.iteration,
                   model=ctx.agent_model, items=to_judge(ctx, child.id, ctx.val_ids)):
            await score_batch(ctx, child, ctx.val_ids, phase=TrialPhase.VALSET,
                              iteration=proposal.iteration, proposal_id=proposal.id,
                              prefetched=prefetch)
        if self.window is not None:  # pooled in iteration order
            await self.window.pool_turn(proposal.iteration)
        self.store.set_pooled(stored_id(child))
        self.store.update_proposal(stored_id(proposal), status=ProposalStatus.ACCEPTED,
                                   decided_at=utcnow())
        pool = self.pools.read()
        ctx.emit(CandidateAccepted(run_id=ctx.run_id, iteration=proposal.iteration,
                                   candidate_id=stored_id(child),
                                   score=pool.means.get(stored_id(child))))

    def _end_iteration(self, iteration: int, seconds: float) -> None:
        pool = self.pools.keep(self.pools.recent())
        self.state.settled(iteration, pool.best_score)
        count_ideas(self.ctx, self.state, iteration)
        self.state.plan = None
        self.meter.iteration_done(seconds)
        self.checkpoint()
        self.meter.report(self.ctx, self.state, pool)


def _retrieved(pause: asyncio.Future) -> None:
    """A pause's StopRun is raised in each chain it held; read here too, so a pause whose
    holders were all cancelled is never reported as an error nobody saw."""
    if not pause.cancelled():
        pause.exception()


class TestScoring(Engine):
    """An engine that only scores a settled run's test set (on demand: ``studio test``, the
    Compare page), under the run's lease like any run so no worker resumes the run meanwhile;
    the run's status and stop reason stay as they were."""

    __test__ = False  # not a pytest class

    async def _run(self) -> StopReason:
        checkpoint = self.store.load_checkpoint(self.run_id)
        self.state.iteration = checkpoint[0] if checkpoint else 0
        try:
            await score_holdout(self.ctx, self.state.iteration)
        except StopRun as stop:
            self._unscored(stop.reason, f"scoring the test set was stopped ({stop.reason})")
            return stop.reason
        except ScoringError as exc:  # the caller (``studio test``, Compare) reports it too
            self._unscored(StopReason.ERROR, str(exc))
            raise
        return TEST_SCORED


TEST_SCORED = StopReason.TEST_SCORED
"""What a :class:`TestScoring` run returns."""
