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
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import studio.engine.merge as merging
import studio.engine.proposer as proposer
from studio.engine.batch import score_batch
from studio.engine.components import extract_components
from studio.engine.context import RunContext, StopRun, register_control
from studio.engine.events import (
    AwaitingDecision,
    BaselineScored,
    CandidateAccepted,
    DecisionApplied,
    IterationSkipped,
    IterationStarted,
    Progress,
    ProposalEvaluated,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStarted,
    SkipCause,
    TestUnscored,
)
from studio.engine.evidence import proposal_evidence, verdict_reason
from studio.engine.gates import await_decision, deciding
from studio.engine.holdout import score_holdout
from studio.engine.pool import PoolScores, load_view, pool_scores
from studio.engine.processes import CRITIC_NOT_CALLED
from studio.engine.sampling import EpochSampler
from studio.engine.selection import select_parent
from studio.model.config import ReviewMode
from studio.model.errors import (
    LeaseLostError,
    ScoringError,
    StoreError,
    StoreUnavailableError,
    StudioError,
)
from studio.model.evidence import Evidence
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
    utcnow,
)
from studio.model.redaction import redact
from studio.runtime.execution import describe_error

logger = logging.getLogger(__name__)


class RunFailed(StudioError):
    """The run cannot go on (e.g. the critic could not score a single baseline example)."""


@dataclass
class LoopState:
    """What a checkpoint holds between commits: enough to continue exactly where we were."""

    iteration: int = 0
    """Last completed iteration (0 = baseline done)."""
    rng: list[Any] = field(default_factory=list)
    sampler: dict[str, Any] = field(default_factory=dict)
    best_score: float | None = None
    stale_iterations: int = 0
    active_seconds: float = 0.0
    held_seconds: float = 0.0
    """Of ``active_seconds``, the time paused or waiting at a gate (not toward the timeout)."""
    plan: dict[str, Any] | None = None
    """The in-progress iteration: parent, minibatch and component (drawn once, then replayed)."""


@dataclass
class Plan:
    iteration: int
    parent_id: int
    minibatch: list[int]
    """A merge's validation subsample."""
    component: str
    """Empty for a merge."""
    merge: dict[str, Any] | None = None
    """A merge iteration's :class:`MergeDetail` (drawn once, like the rest of the plan)."""


Verdict = Callable[[], Evidence]
"""The acceptance rule, asked at decision time: the evidence now, with the rule's verdict (the
decision keeps it as what it was made on)."""


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
    """Runs one run to its end. Create it with :func:`studio.engine.build.build_engine`."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.lease_lost = False
        """Set when another worker took the run over: this engine then ends without writing."""
        self.rng = random.Random(ctx.config.seed)
        self.sampler = EpochSampler(list(ctx.train_ids), ctx.config.minibatch_size)
        self.state = LoopState()
        self._iteration_seconds: list[float] = []
        # Time this iteration waited for a person: not machine time, so not in the ETA (the
        # studio adds the person's expected review time itself).
        self._gate_seconds = 0.0
        self._last_pool: PoolScores | None = None
        """The pool the step just before read, for the next step when nothing was awaited
        between them (see :meth:`recent_pool`)."""

    @property
    def run_id(self) -> str:
        return self.ctx.run_id

    # ------------------------------------------------------------------ control (any thread)
    # Under a worker, the store's request is re-delivered by each heartbeat: steer a run with
    # :class:`studio.engine.worker.RunManager`, which stores the request and calls these.

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

    async def run(self) -> StopReason:
        """Run until a stop condition; returns the stop reason."""
        ctx = self.ctx
        ctx.control.loop = asyncio.get_running_loop()
        register_control(ctx.run_id, ctx.control)
        if ctx.fan_out is not None:
            ctx.fan_out.start()
        try:
            return await self._run()
        finally:
            register_control(ctx.run_id, None)
            if ctx.fan_out is not None:
                ctx.fan_out.close()

    async def _run(self) -> StopReason:
        ctx = self.ctx
        resumed = self._restore()
        started = {} if ctx.run.started_at else {"started_at": utcnow()}
        ctx.store.update_run(ctx.run_id, status=RunStatus.RUNNING, finished_at=None,
                             stop_reason=None, error=None, **started)
        ctx.emit(RunStarted(run_id=ctx.run_id, iteration=self.state.iteration, resumed=resumed))
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
                self._finish(RunStatus.STOPPED, StopReason.DATABASE_UNAVAILABLE, error=str(exc))
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
        try:
            await self.score_baseline()
            while True:
                self.check_limits()
                await self.pause_point()
                await self.iterate(self.state.iteration + 1)
        except StopRun as stop:
            return stop.reason

    def _finish(self, status: RunStatus, reason: StopReason, error: str | None = None) -> None:
        ctx = self.ctx
        self._checkpoint()
        ctx.store.update_run(ctx.run_id, status=status, stop_reason=reason,
                             finished_at=utcnow(), control=None,
                             error=redact(error) if error else None)
        ctx.emit(RunFinished(run_id=ctx.run_id, iteration=self.state.iteration,
                             status=status, stop_reason=reason))

    # ------------------------------------------------------------------ checkpoints

    def _restore(self) -> bool:
        saved = self.ctx.store.load_checkpoint(self.ctx.run_id)
        if saved is None:
            return False
        _, state = saved
        self.state = LoopState(**state)
        if self.state.rng:
            version, internal, gauss = self.state.rng
            self.rng.setstate((version, tuple(internal), gauss))
        if self.state.sampler:
            self.sampler = EpochSampler.from_state(self.state.sampler)
        self.ctx.active_seconds_before = self.state.active_seconds
        self.ctx.held_seconds = self.state.held_seconds
        return True

    def _checkpoint(self) -> None:
        self.state.rng = list(self.rng.getstate())
        self.state.sampler = self.sampler.state()
        self.state.active_seconds = self.ctx.active_seconds()
        self.state.held_seconds = self.ctx.held_seconds
        # a shallow copy: asdict() would deep-copy the random state's 625 numbers each time
        self.ctx.store.save_checkpoint(self.ctx.run_id, self.state.iteration,
                                       dict(vars(self.state)))

    # ------------------------------------------------------------------ baseline

    async def score_baseline(self) -> None:
        """Score the seed candidate on the validation set and make it the pool's first member."""
        ctx = self.ctx
        candidates = ctx.store.candidates(ctx.run_id)
        seed = candidates[0] if candidates else self._add_seed()
        if seed.pooled:
            return
        budget = ctx.config.max_metric_calls
        if budget is not None and len(ctx.val_ids) > budget:  # never a baseline half-scored
            raise StopRun(StopReason.MAX_METRIC_CALLS)
        trials = await score_batch(ctx, seed, ctx.val_ids, phase=TrialPhase.VALSET, iteration=0)
        if all(t.effective_score is None for t in trials):
            raise RunFailed(baseline_failure(trials))
        ctx.store.set_pooled(seed.id)
        pool = self._last_pool = self.pool()
        self.state.best_score = pool.best_score
        ctx.emit(BaselineScored(run_id=ctx.run_id, iteration=0, candidate_id=seed.id,
                                score=pool.means.get(seed.id)))
        self._checkpoint()
        self._progress(pool)

    def _add_seed(self) -> Candidate:
        """Candidate #0: the agent's components, or on a fork the forked candidate's."""
        origin = self.ctx.run.spec.forked_from
        components = (dict(origin.components) if origin is not None
                      else extract_components(self.ctx.agent, self.ctx.components))
        return self.ctx.store.add_candidate(Candidate(
            run_id=self.ctx.run_id, index=0, components=components,
            content_hash=content_hash(components)))

    # ------------------------------------------------------------------ limits & pause

    def check_limits(self) -> None:
        """The stop conditions, checked between iterations only (as GEPA does): an iteration
        once started (its plan drawn) finishes whole, on resume too; inside it only a person's
        stop and a worker's shutdown are honoured."""
        config, state = self.ctx.config, self.state
        self.ctx.check_stop()
        if self.iteration_started():
            return
        self.ctx.check_timeout()
        if state.iteration >= config.max_iterations:
            raise StopRun(StopReason.MAX_ITERATIONS)
        if config.score_threshold is not None and state.best_score is not None \
                and state.best_score >= config.score_threshold:
            raise StopRun(StopReason.SCORE_THRESHOLD)
        if config.patience is not None and state.stale_iterations >= config.patience:
            raise StopRun(StopReason.PATIENCE)
        if config.max_metric_calls is not None \
                and self.ctx.metric_calls() >= config.max_metric_calls:
            raise StopRun(StopReason.MAX_METRIC_CALLS)
        self.check_budget_for_iteration()

    def check_budget_for_iteration(self) -> None:
        """Start an iteration only when the budget can pay for all of it: the parent and the
        child on the minibatch, and the validation set should the child be accepted. An accepted
        child is never left without its validation."""
        config = self.ctx.config
        if config.max_metric_calls is None:
            return
        worst_case = 2 * config.minibatch_size + len(self.ctx.val_ids)
        if self.ctx.metric_calls() + worst_case > config.max_metric_calls:
            raise StopRun(StopReason.MAX_METRIC_CALLS)

    def iteration_started(self) -> bool:
        """Whether the next iteration was planned before a stop, a kill or a shutdown: its
        limits were checked then, and it replays whole."""
        plan = self.state.plan
        return plan is not None and plan["iteration"] == self.state.iteration + 1

    async def pause_point(self) -> None:
        if not self.ctx.control.pause_requested:
            return
        paused = time.monotonic()
        try:
            await self._paused()
        finally:  # a person's time: never toward timeout_seconds
            self.ctx.held_seconds += time.monotonic() - paused

    async def _paused(self) -> None:
        ctx = self.ctx
        self._last_pool = None  # a person may correct scores while the run waits
        ctx.store.update_run(ctx.run_id, status=RunStatus.PAUSED)
        ctx.emit(RunPaused(run_id=ctx.run_id, iteration=self.state.iteration))
        while True:
            ctx.control.changed.clear()
            if not ctx.control.pause_requested:
                break
            ctx.check_stop()
            await ctx.control.wait()
        ctx.store.update_run(ctx.run_id, status=RunStatus.RUNNING)
        ctx.emit(RunResumed(run_id=ctx.run_id, iteration=self.state.iteration))

    # ------------------------------------------------------------------ one iteration

    async def iterate(self, iteration: int) -> None:
        started = time.monotonic()
        self._gate_seconds = 0.0
        plan = self.plan(iteration)
        self._last_pool = None  # read before the plan's first await: stale after it
        if plan.merge is not None:
            await self.merge_step(plan)
        else:
            await self.reflection_step(plan)
        self._end_iteration(iteration, time.monotonic() - started - self._gate_seconds)

    async def reflection_step(self, plan: Plan) -> None:
        """Score the parent, reflect, then score and gate the child (unless it is invalid)."""
        parent = self.ctx.store.get_candidate(plan.parent_id)
        parent_trials = await score_batch(self.ctx, parent, plan.minibatch,
                                          phase=TrialPhase.PARENT, iteration=plan.iteration)
        if self.perfect_on_minibatch(parent_trials):
            self.skip_perfect(parent, plan.iteration)
            return
        proposal = await proposer.propose(self.ctx, plan.iteration, parent, plan.component,
                                          parent_trials)
        if proposal.status is not ProposalStatus.INVALID:
            await self.evaluate_and_gate(proposal, parent, plan)

    def skip_perfect(self, parent: Candidate, iteration: int) -> None:
        perfect = self.ctx.config.perfect_score
        self.ctx.emit(IterationSkipped(
            run_id=self.ctx.run_id, iteration=iteration, cause=SkipCause.PERFECT_PARENT,
            reason=f"candidate #{parent.index} scored at least {perfect:g} on every minibatch "
                   "example: no child could beat it; no reflection"))

    def perfect_on_minibatch(self, parent_trials: list[Trial]) -> bool:
        """GEPA's ``skip_perfect_score``, on the effective scores as stored now ("could not
        evaluate" is not perfect)."""
        config = self.ctx.config
        scores = [t.effective_score for t in proposer.current_trials(self.ctx, parent_trials)]
        return config.skip_perfect_score and bool(scores) and all(
            s is not None and s >= config.perfect_score for s in scores)

    def plan(self, iteration: int) -> Plan:
        """A merge when one is due and a pair qualifies; else select the parent, sample the
        minibatch and pick the component. Once per iteration: a resumed iteration replays the
        stored plan."""
        if self.state.plan and self.state.plan["iteration"] == iteration:
            return Plan(**self.state.plan)
        due = merging.merge_due(self.ctx, iteration)
        merge = merging.plan_merge(self.ctx, load_view(self.ctx.store, self.ctx.run_id),
                                   self.rng) if due else None
        pool = self.recent_pool()
        plan = self._merge_plan(iteration, merge) if merge is not None \
            else self._reflection_plan(iteration, pool)
        self.state.plan = asdict(plan)
        self._checkpoint()
        self.ctx.emit(IterationStarted(
            run_id=self.ctx.run_id, iteration=iteration, parent_id=plan.parent_id,
            component=plan.component, minibatch=plan.minibatch,
            proposal_kind=ProposalKind.MERGE if merge else ProposalKind.REFLECTION))
        return plan

    def _reflection_plan(self, iteration: int, pool: PoolScores) -> Plan:
        parent_id = select_parent(self.ctx.config.candidate_selection, pool.matrix, self.rng,
                                  order=pool.pooled_ids, epsilon=self.ctx.config.epsilon)
        minibatch = self.sampler.sample(self.rng)
        components = self.ctx.components
        turn = iteration - 1
        if self.ctx.config.use_merge:  # round robin over the reflection iterations only
            turn -= merging.merges_before(self.ctx, iteration)
        return Plan(iteration, parent_id, minibatch, components[turn % len(components)])

    @staticmethod
    def _merge_plan(iteration: int, merge: MergeDetail) -> Plan:
        return Plan(iteration, merge.parents[0], list(merge.subsample), "",
                    merge=merge.model_dump())

    async def merge_step(self, plan: Plan) -> None:
        """Propose the planned merge (or replay the stored one), judge the child on the
        subsample, and pass the gate like any proposal. A merge cannot be edited."""
        ctx = self.ctx
        proposal = merging.propose_merge(ctx, plan.iteration, MergeDetail(**plan.merge))
        if proposal.status is ProposalStatus.INVALID:
            return
        child = merging.merged_child(ctx, proposal)
        proposal = ctx.store.get_proposal(proposal.id)  # now with its child
        await score_batch(ctx, child, plan.minibatch, phase=TrialPhase.CHILD,
                          iteration=plan.iteration, proposal_id=proposal.id)
        evidence = self.evidence(proposal, child)
        ctx.emit(ProposalEvaluated(
            run_id=ctx.run_id, iteration=plan.iteration, proposal_id=proposal.id,
            child_id=child.id, parent_sum=evidence.parent_sum, child_sum=evidence.child_sum,
            rule_accepts=evidence.rule_accepts, proposal_kind=ProposalKind.MERGE))
        decision = await self.gate(proposal, plan.iteration,
                                   functools.partial(self.evidence, proposal, child))
        if decision.action is DecisionAction.EDIT:  # refused by decide(); never from a person
            decision = decision.model_copy(update={"action": DecisionAction.REJECT})
        await self.apply(decision, proposal, child)

    async def evaluate_and_gate(self, proposal: Proposal, parent: Candidate, plan: Plan) -> None:
        """Score the child on the minibatch and pass the gate; edits loop back here."""
        ctx = self.ctx
        proposal = proposer.latest_in_chain(ctx, proposal)
        while True:
            child = proposer.child_of(ctx, proposal, parent)
            await score_batch(ctx, child, plan.minibatch, phase=TrialPhase.CHILD,
                              iteration=plan.iteration, proposal_id=proposal.id)
            evidence = self.evidence(proposal, child)
            ctx.emit(ProposalEvaluated(
                run_id=ctx.run_id, iteration=plan.iteration, proposal_id=proposal.id,
                child_id=child.id, parent_sum=evidence.parent_sum, child_sum=evidence.child_sum,
                rule_accepts=evidence.rule_accepts))
            decision = await self.gate(proposal, plan.iteration,
                                       functools.partial(self.evidence, proposal, child))
            if decision.action is not DecisionAction.EDIT:
                await self.apply(decision, proposal, child)
                return
            proposal = self.edited(proposal, decision)

    def evidence(self, proposal: Proposal, child: Candidate) -> Evidence:
        """The proposal's evidence with its child (:mod:`studio.engine.evidence`), re-read from
        the store so overrides made meanwhile count; with the rule's verdict."""
        return proposal_evidence(self.ctx.store,
                                 proposal.model_copy(update={"child_id": child.id}))

    async def gate(self, proposal: Proposal, iteration: int, rule: Verdict) -> Decision:
        """The rule decides in auto mode; in review mode a person does. A stop is no decision:
        the proposal waits again when the run resumes."""
        ctx = self.ctx
        existing = deciding(ctx.store.decisions(proposal_id=proposal.id))
        if existing:  # replayed after a restart: the decision that was made (there is one)
            return existing[0]
        if proposal.decided_at is not None:  # an older store's stop: the proposal is open again
            proposal = ctx.store.update_proposal(proposal.id, decided_at=None)
        if ctx.config.review is ReviewMode.AUTO:
            evidence = rule()
            return ctx.store.add_decision(Decision(
                proposal_id=proposal.id, automatic=True, author="rule",
                reason=verdict_reason(evidence), evidence=evidence,
                action=DecisionAction.ACCEPT if evidence.rule_accepts else DecisionAction.REJECT))
        if proposal.status is not ProposalStatus.PENDING:
            ctx.store.update_proposal(proposal.id, status=ProposalStatus.PENDING)
        # announced on every entry, so a resumed run says it waits at the same gate again
        ctx.emit(AwaitingDecision(run_id=ctx.run_id, iteration=iteration,
                                  proposal_id=proposal.id))
        waiting = time.monotonic()
        try:
            return await await_decision(ctx, proposal.id)
        finally:  # a person's time: not in the ETA, never toward timeout_seconds
            held = time.monotonic() - waiting
            self._gate_seconds += held
            ctx.held_seconds += held

    def edited(self, proposal: Proposal, decision: Decision) -> Proposal:
        """A person's edit becomes a new proposal in the same iteration, scored like any other."""
        store = self.ctx.store
        store.update_proposal(proposal.id, status=ProposalStatus.EDITED, decided_at=utcnow())
        self.ctx.emit(DecisionApplied(run_id=self.ctx.run_id, iteration=proposal.iteration,
                                      proposal_id=proposal.id, action=DecisionAction.EDIT,
                                      reason=decision.reason))
        return store.add_proposal(Proposal(
            run_id=proposal.run_id, iteration=proposal.iteration, parent_id=proposal.parent_id,
            component=proposal.component, text=decision.edited_text or "",
            reasoning=f"edited by {decision.author}" + (f": {decision.reason}"
                                                         if decision.reason else ""),
            edited_from=proposal.id, minibatch=proposal.minibatch))

    async def apply(self, decision: Decision, proposal: Proposal, child: Candidate) -> None:
        """Act on the decision. An accepted child is always validated: the iteration's start
        reserved its validation, and :func:`studio.engine.gates.decide` refuses an edit the
        budget cannot pay for."""
        ctx = self.ctx
        ctx.emit(DecisionApplied(run_id=ctx.run_id, iteration=proposal.iteration,
                                 proposal_id=proposal.id, action=decision.action,
                                 automatic=decision.automatic, reason=decision.reason))
        if decision.action is DecisionAction.REJECT:
            self.settle(proposal, ProposalStatus.REJECTED)
            return
        await score_batch(ctx, child, ctx.val_ids, phase=TrialPhase.VALSET,
                          iteration=proposal.iteration, proposal_id=proposal.id)
        ctx.store.set_pooled(child.id)
        ctx.store.update_proposal(proposal.id, status=ProposalStatus.ACCEPTED,
                                  decided_at=utcnow())
        self._last_pool = self.pool()
        ctx.emit(CandidateAccepted(run_id=ctx.run_id, iteration=proposal.iteration,
                                   candidate_id=child.id,
                                   score=self._last_pool.means.get(child.id)))

    def settle(self, proposal: Proposal, status: ProposalStatus, reason: str | None = None
               ) -> None:
        """Give a proposal its final status (with the reason when it is not the decision's)."""
        fields = {"invalid_reason": reason} if reason else {}
        self.ctx.store.update_proposal(proposal.id, status=status, decided_at=utcnow(), **fields)

    def _end_iteration(self, iteration: int, seconds: float) -> None:
        pool = self._last_pool = self.recent_pool()
        best = pool.best_score
        previous = self.state.best_score
        improved = best is not None and (previous is None or best > previous + 1e-12)
        self.state.stale_iterations = 0 if improved else self.state.stale_iterations + 1
        self.state.best_score = best if best is not None else previous
        self.state.iteration = iteration
        self.state.plan = None
        self._iteration_seconds.append(seconds)
        self._checkpoint()
        self._progress(pool)

    def pool(self) -> PoolScores:
        """The pool's means, front and best from the effective scores as stored now (corrections
        count at once); the engine knows its validation examples, so two short reads."""
        return pool_scores(self.ctx.store, self.ctx.run, val_ids=self.ctx.val_ids)

    def recent_pool(self) -> PoolScores:
        """The pool the step just before read, when the engine awaited nothing since (it reads
        three times in a row between iterations: accepted, iteration settled, next parent);
        else :meth:`pool`. Taken once: a correction made while the run waits for a model or a
        person counts at the next read."""
        pool, self._last_pool = self._last_pool, None
        return pool if pool is not None else self.pool()

    # ------------------------------------------------------------------ progress

    def _progress(self, view: PoolScores) -> None:
        ctx, config = self.ctx, self.ctx.config
        calls = ctx.metric_calls()
        ctx.emit(Progress(
            run_id=ctx.run_id, iteration=self.state.iteration,
            max_iterations=config.max_iterations, metric_calls=calls,
            max_metric_calls=config.max_metric_calls, best_score=view.best_score,
            best_candidate_id=view.best_id, elapsed_seconds=round(ctx.active_seconds(), 2),
            eta_seconds=self._eta(calls)))

    def _eta(self, calls: int) -> float | None:
        if not self._iteration_seconds:
            return None
        per_iteration = sum(self._iteration_seconds) / len(self._iteration_seconds)
        remaining = self.ctx.config.max_iterations - self.state.iteration
        budget = self.ctx.config.max_metric_calls
        if budget is not None and self.state.iteration > 0:
            calls_per_iteration = max(1.0, calls / max(1, self.state.iteration))
            remaining = min(remaining, int((budget - calls) / calls_per_iteration))
        return round(max(0, remaining) * per_iteration, 1)


class TestScoring(Engine):
    """An engine that only scores a settled run's test set (on demand: ``studio test``, the
    Compare page), under the run's lease like any run so no worker resumes the run meanwhile;
    the run's status and stop reason stay as they were."""

    __test__ = False  # not a pytest class

    async def _run(self) -> StopReason:
        checkpoint = self.ctx.store.load_checkpoint(self.run_id)
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
