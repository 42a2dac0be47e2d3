"""A person steers the run and no decision is stranded (issue 18; real engine, scripted models
through ADK + LiteLLM, real SQLite stores, the CLI and library a person uses).

- Stop is no decision: the proposal waiting at the gate stays pending and comes back on resume.
- Limits (timeout, budget, ...) are checked between iterations: a started iteration finishes
  whole, at every phase (parent scoring, reflection, child scoring, validation, merge, an align
  run's gate); a person's stop inside it is resumed whole.
- Time paused or at a gate is not timed; an edit is charged to the budget before it is scored; a
  decision on a run that is not live is applied on resume, or refused when it never could be; a
  refused resume changes nothing.
"""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
import yaml

from studio import cli
from studio.engine import EvolutionConfig, build_engine, create_run, decide
from studio.engine.hosting.api import load_result
from studio.engine.hosting.worker import get_manager
from studio.model.errors import RunStateError
from studio.model.records import (
    AgentSpec,
    CriticSpec,
    Decision,
    DecisionAction,
    EventKind,
    ProposalStatus,
    ReflectionSpec,
    RunRequest,
    RunSpec,
    RunStatus,
)
from studio.runtime.providers import demo
from tests import zygote
from tests.engine import merge_world as world
from tests.engine.invariants import nothing_stranded
from tests.helpers import ROOT, CliWorker, demo_spec, trainset, wait_until

VALSET = [{"topic": "harbor fog"}, {"topic": "desert wind"}]
PHASE_EVENTS = {EventKind.ITERATION_STARTED, EventKind.PROPOSAL_CREATED,
                EventKind.DECISION_APPLIED}


def awaiting(store, run_id: str) -> int:
    return len(store.events(run_id, kind=EventKind.AWAITING_DECISION))


def studio_cli(store, *args: str) -> int:
    return cli.main(["--db", store.url, *args])


# --------------------------------------------------------------------------- stop is no decision


def test_edit_then_stop_brings_the_edited_text_back_never_the_original(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), valset=VALSET, max_iterations=1,
                                  review="review")
    first = runner.wait_for_pending(run_id, set())
    edited_text = first.text + " Use a season word."
    decide(first.id, "edit", edited_text=edited_text, author="ana", store=store)
    edited = runner.wait_for_pending(run_id, {first.id})
    assert edited.edited_from == first.id
    decide(edited.id, "stop", store=store)
    assert handle.wait(30) == "user"
    announced = awaiting(store, run_id)

    resumed = get_manager(store).resume(run_id)
    wait_until(lambda: awaiting(store, run_id) > announced, timeout=30,
               message="the edited proposal waits at the gate again")
    waiting = store.proposals(run_id, status=ProposalStatus.PENDING)
    assert [p.id for p in waiting] == [edited.id]  # the edit, never the text edited away
    assert store.get_proposal(first.id).status is ProposalStatus.EDITED
    decide(edited.id, "accept", store=store)
    assert resumed.wait(30) == "max_iterations"
    child = store.get_candidate(store.get_proposal(edited.id).child_id)
    assert child.pooled and child.components["instruction"] == edited_text
    nothing_stranded(store, run_id)


def test_an_older_stores_stop_row_is_not_the_proposals_decision(runner, store):
    """An older studio recorded Stop as a decision on the proposal: the engine ignores that row,
    and the proposal waits at the gate for a real decision."""
    run_id, handle = runner.start(demo_spec(), trainset(3), valset=VALSET, max_iterations=1,
                                  review="review")
    pending = runner.wait_for_pending(run_id, set())
    get_manager(store).stop(run_id)
    assert handle.wait(30) == "user"
    store.add_decision(Decision(proposal_id=pending.id, action=DecisionAction.STOP,
                                author="old studio"))
    resumed = get_manager(store).resume(run_id)
    wait_until(lambda: store.get_proposal(pending.id).decided_at is None, timeout=30,
               message="the gate opens the proposal again")
    decide(pending.id, "accept", author="ana", store=store)
    assert resumed.wait(30) == "max_iterations"
    accepted = store.get_proposal(pending.id)
    assert accepted.status is ProposalStatus.ACCEPTED
    assert store.get_candidate(accepted.child_id).pooled


def test_a_stop_at_a_merge_gate_brings_the_same_merge_back(runner, store, merge_world):
    run_id, handle = runner.start(world.spec(), world.TRAINSET, **world.config(review="review"))
    seen: set[int] = set()
    while True:
        proposal = runner.wait_for_pending(run_id, seen, timeout=60)
        if proposal.is_merge:
            break
        decide(proposal.id, "accept", store=store)
    decide(proposal.id, "stop", store=store)
    assert handle.wait(30) == "user"
    assert store.get_proposal(proposal.id).status is ProposalStatus.PENDING
    announced = awaiting(store, run_id)
    resumed = get_manager(store).resume(run_id)
    wait_until(lambda: awaiting(store, run_id) > announced, timeout=30,
               message="the merge waits at its gate again")
    decide(proposal.id, "accept", store=store)
    wait_until(lambda: store.get_proposal(proposal.id).status is ProposalStatus.ACCEPTED,
               timeout=30, message="the merge is accepted")
    assert store.get_candidate(store.get_proposal(proposal.id).child_id).pooled
    assert resumed.wait(30) == "max_iterations"  # the merge was the last iteration
    nothing_stranded(store, run_id)


@pytest.fixture
def merge_world(script):
    script(world.WORLD, world.reply)


# --------------------------------------------------------------------------- audit item 1


@pytest.mark.slow
def test_a_decision_after_the_timeout_passed_at_the_gate_is_applied_on_resume(
        runner, store, capsys):
    """Audit 1: time at the gate is not timed, so the run waits there past ``timeout_seconds``;
    stopped there (`studio decide 1 stop`), `studio decide 1 accept` says the decision is
    applied on resume, and after `studio resume` the child is pooled and the result says
    accepted only then."""
    timeout = 3.0
    run_id, handle = runner.start(demo_spec(), trainset(3), valset=VALSET, max_iterations=1,
                                  review="review", timeout_seconds=timeout)
    pending = runner.wait_for_pending(run_id, set())
    ctx = handle.engine.ctx
    wait_until(lambda: ctx.active_seconds() > timeout + 0.5, message="the timeout to pass")
    assert store.get_run(run_id).status is RunStatus.RUNNING  # still waiting for the person
    assert studio_cli(store, "decide", str(pending.id), "stop") == 0
    assert handle.wait(30) == "user"
    assert "stays pending and comes back" in capsys.readouterr().out

    assert studio_cli(store, "decide", str(pending.id), "accept") == 0
    said = capsys.readouterr().out
    assert f"run {run_id} is stopped: the decision is applied when it resumes: " \
           f"`studio resume {run_id}`" in said
    assert store.get_proposal(pending.id).status is ProposalStatus.PENDING
    history = load_result(store, run_id).iteration_history
    assert not any(row["accepted"] for row in history)  # not until it is applied

    assert studio_cli(store, "resume", run_id) == 0
    accepted = store.get_proposal(pending.id)
    assert accepted.status is ProposalStatus.ACCEPTED
    assert store.get_candidate(accepted.child_id).pooled
    assert [row["accepted"] for row in load_result(store, run_id).iteration_history] == [True]
    nothing_stranded(store, run_id)


def test_a_decision_on_a_completed_run_is_refused_with_why_and_what_to_do(runner, store,
                                                                            capsys):
    """An older studio completed a run on its timeout while a proposal waited: a completed run
    is never resumed, so the decision is refused rather than recorded and never applied."""
    run_id, handle = runner.start(demo_spec(), trainset(3), valset=VALSET, max_iterations=2,
                                  review="review")
    pending = runner.wait_for_pending(run_id, set())
    get_manager(store).stop(run_id)
    handle.wait(30)
    store.update_run(run_id, status=RunStatus.COMPLETED, stop_reason="timeout")
    assert studio_cli(store, "decide", str(pending.id), "accept") == 2
    said = capsys.readouterr().err
    assert f"run {run_id} completed (timeout)" in said and "not resumed" in said
    assert f"studio fork {run_id}" in said
    assert store.decisions(proposal_id=pending.id) == []


# --------------------------------------------------------------------------- limits, phases


def phase_of(store, run_id: str, request) -> str:
    """Which step of the iteration a model call belongs to, from the run's stored events."""
    if demo.REFLECTION_MARKER in request.prompt_text:
        return "reflection"
    if request.json_schema is not None:
        return "critic"
    events = [e for e in store.events(run_id) if e.kind in PHASE_EVENTS]
    last = events[-1] if events else None
    if last is None:
        return "baseline"
    if last.kind is EventKind.ITERATION_STARTED:
        return "merge" if last.payload.get("proposal_kind") == "merge" else "parent"
    if last.kind is EventKind.PROPOSAL_CREATED:
        return "merge" if store.get_proposal(last.payload["proposal_id"]).is_merge else "child"
    return "validation" if last.payload.get("action") == "accept" else "edit"


class Slowed:
    """A world whose model, the first time it is called in ``phase``, does ``act`` (the engine
    is known once built): wait until the run's timeout passed, or ask the run to stop."""

    def __init__(self, store, reply, phase: str, act: str) -> None:
        self.store, self.reply, self.phase, self.act = store, reply, phase, act
        self.engine = None
        self.iteration: int | None = None

    def __call__(self, request):
        engine = self.engine
        if engine is not None and self.iteration is None and \
                phase_of(self.store, engine.run_id, request) == self.phase:
            self.iteration = max(e.iteration for e in self.store.events(engine.run_id))
            if self.act == "stop":
                engine.stop("user")
            else:  # a slow model: this call returns after the time limit
                wait_until(lambda: engine.ctx.timed_seconds() > engine.ctx.config.timeout_seconds,
                           message="the timeout to pass during the call")
        return self.reply(request)


def world_for(phase: str, model: str) -> tuple[RunSpec, list[dict], dict]:
    if phase == "merge":
        spec = RunSpec(agent=AgentSpec(name="writer", model=model,
                                       instruction=world.SEED_INSTRUCTION),
                       critic=CriticSpec(name="rule_critic", agent=AgentSpec(name="critic",
                                                                             model=model)),
                       reflection=ReflectionSpec(model=model), components=list(world.COMPONENTS))
        return spec, world.TRAINSET, world.config(max_iterations=4)
    return demo_spec(model), trainset(3), {"valset": VALSET, "max_iterations": 3,
                                           "minibatch_size": 2,  # one lane: one phase at a time
                                           "parallel_proposals": 1}


PHASES = ["parent", "reflection", "child", "validation", "merge"]


def slowed_run(store, script, phase: str, act: str, **config):
    slowed = Slowed(store, world.reply if phase == "merge" else demo.reply, phase, act)
    spec, train, settings = world_for(phase, script(slowed))
    valset = settings.pop("valset", None)
    run = create_run(store, spec=spec, trainset=train, valset=valset,
                     config=EvolutionConfig(**settings, **config))
    slowed.engine = build_engine(store, run.id)
    return run.id, slowed


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_a_timeout_in_any_phase_lets_the_started_iteration_finish_whole(store, script, phase):
    """Audit 2: the timeout passes during ``phase``; the iteration still ends whole (nothing
    left evaluating or pending, an accepted child validated and pooled), and the run completes
    on its timeout right after it."""
    run_id, slowed = slowed_run(store, script, phase, "timeout", timeout_seconds=3.0)
    assert asyncio.run(slowed.engine.run()) == "timeout"
    assert slowed.iteration is not None, f"the run never reached {phase}"
    assert store.load_checkpoint(run_id)[0] == slowed.iteration  # finished, no more
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    nothing_stranded(store, run_id, f"(timeout during {phase})")


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_a_stop_in_any_phase_is_resumed_whole(store, script, phase):
    """A person's stop is honoured inside an iteration; the run resumes that iteration (its
    plan replayed, nothing judged twice) and completes with nothing stranded."""
    run_id, slowed = slowed_run(store, script, phase, "stop")
    assert asyncio.run(slowed.engine.run()) == "user"
    assert slowed.iteration is not None, f"the run never reached {phase}"
    assert store.get_run(run_id).status is RunStatus.STOPPED
    assert asyncio.run(build_engine(store, run_id).run()) == "max_iterations"
    nothing_stranded(store, run_id, f"(stopped during {phase})")


@pytest.mark.slow
def test_every_budget_ends_between_iterations(runner, store):
    """The budget ends the run only between iterations, for every budget from the baseline's
    to two whole iterations' (so the last call falls in each phase in turn): nothing stranded,
    an accepted child always validated, the budget never exceeded."""
    baseline, iteration = len(VALSET), 2 * 2 + len(VALSET)
    for budget in range(baseline, baseline + 2 * iteration + 1):
        run_id, reason = runner.run(demo_spec(), trainset(3), valset=VALSET, max_iterations=5,
                                    minibatch_size=2, max_metric_calls=budget)
        assert reason == "max_metric_calls", budget
        assert store.count_trials(run_id) <= budget
        assert not any("cannot pay" in (p.invalid_reason or "")
                       for p in store.proposals(run_id))
        nothing_stranded(store, run_id, f"(max_metric_calls {budget})")


@pytest.mark.slow
def test_budgets_around_a_merge_end_between_iterations(runner, store, merge_world):
    """The merge world (baseline 4, a reflection iteration up to 12, a merge up to 4): budgets
    that end in and around the merge iterations strand nothing."""
    merged = False
    for budget in range(16, 41, 3):
        run_id, reason = runner.run(world.spec(), world.TRAINSET,
                                    **world.config(max_iterations=5, max_metric_calls=budget))
        assert store.count_trials(run_id) <= budget
        merged = merged or any(p.is_merge for p in store.proposals(run_id))
        nothing_stranded(store, run_id, f"(merge world, max_metric_calls {budget})")
    assert merged, "no budget let a merge be proposed: the sweep tested nothing about merges"


def test_a_budget_below_the_baseline_is_never_spent(runner, store):
    run_id, reason = runner.run(demo_spec(), trainset(3), valset=VALSET, max_metric_calls=1)
    assert reason == "max_metric_calls" and store.count_trials(run_id) == 0


@pytest.mark.slow
def test_a_timeout_at_an_align_runs_gate_waits_for_the_person(store):
    """An align run's gate, past its timeout: the proposal still waits; stopped, it stays
    pending and comes back on resume, where accepting it pools its child."""
    from studio.projects.aligning import create_align_run
    from tests.projects.test_aligning import corrected_run

    source = corrected_run(store)
    manager = get_manager(store)
    for timeout in (3.0, 6.0, 12.0, 24.0, 48.0):
        # the timeout must fall while the proposal waits: a machine too loaded to reach the
        # gate within it ends the run first, so that try is let go and the next one doubles it
        run = create_align_run(store, source, config=EvolutionConfig(
            max_iterations=1, seed=3, review="review", timeout_seconds=timeout))
        handle = manager.start(build_engine(store, run.id))
        wait_until(lambda run=run: store.proposals(run.id, status=ProposalStatus.PENDING)
                   or not store.get_run(run.id).status.is_active, timeout=120,
                   message="a proposal at the align run's gate, or the run's end")
        pending = store.proposals(run.id, status=ProposalStatus.PENDING)
        if pending:
            break
        assert handle.wait(60) == "timeout", "the run ended before its gate, not by timeout"
    pending = pending[0]
    ctx = handle.engine.ctx
    wait_until(lambda: ctx.active_seconds() > timeout + 0.5, timeout=timeout + 60,
               message="the timeout to pass")
    assert store.get_run(run.id).status is RunStatus.RUNNING
    decide(pending.id, "stop", store=store)
    assert handle.wait(60) == "user"
    assert store.get_proposal(pending.id).status is ProposalStatus.PENDING
    resumed = manager.resume(run.id)
    wait_until(lambda: store.get_run(run.id).status is RunStatus.RUNNING and
               awaiting(store, run.id) >= 2, timeout=60, message="the gate again")
    decide(pending.id, "accept", store=store)
    resumed.wait(60)
    assert store.get_candidate(store.get_proposal(pending.id).child_id).pooled
    nothing_stranded(store, run.id)


# --------------------------------------------------------------------------- paused time


@pytest.mark.slow
def test_a_paused_run_never_ends_itself_by_timeout(runner, store):
    """Audit 3: paused past its timeout, the run stays paused; unpaused, it goes on (the pause
    was not timed) and its elapsed time still shows the pause."""
    timeout = 6.0
    run_id = runner.create(demo_spec(), trainset(3), valset=VALSET, max_iterations=1,
                           timeout_seconds=timeout)
    # paused before the engine reads the run: a Pause asked once it runs reaches it on its
    # next heartbeat, and an idle machine can finish this run sooner
    get_manager(store).pause(run_id)
    handle = get_manager(store).start(build_engine(store, run_id))
    wait_until(lambda: store.get_run(run_id).status is RunStatus.PAUSED, timeout=30,
               message="the run pauses")
    ctx = handle.engine.ctx
    before = ctx.timed_seconds()  # the machine time before the pause (and a moment of it)
    paused_at = ctx.active_seconds()
    wait_until(lambda: ctx.active_seconds() - paused_at > timeout + 0.5,
               message="the pause to outlast the timeout")
    assert store.get_run(run_id).status is RunStatus.PAUSED
    get_manager(store).unpause(run_id)
    unpaused_at = ctx.active_seconds()
    reason = handle.wait(60)
    after = ctx.active_seconds() - unpaused_at
    # idle, the run ends at its iteration; on a loaded machine its start and its work may
    # take the six timed seconds, but never with the pause counted among them
    assert reason == "max_iterations" or (reason == "timeout" and before + after >= timeout), \
        (reason, before, after)
    progress = store.events(run_id, kind=EventKind.PROGRESS)[-1].payload
    assert progress["elapsed_seconds"] > timeout  # machine time, the pause included


# --------------------------------------------------------------------------- budget and edits


def edits_until_refused(runner, store, edits: int):
    """The audit's review run at ``max_metric_calls: 18`` (baseline 3, iteration 3 + 3 + 3):
    ``edits`` edits of the first proposal, each scored; returns (run_id, handle, pending)."""
    run_id, handle = runner.start(demo_spec(), trainset(5), valset=trainset(5)[:3],
                                  max_iterations=3, minibatch_size=3, review="review",
                                  max_metric_calls=18)
    seen: set[int] = set()
    pending = runner.wait_for_pending(run_id, seen)
    for n in range(edits):
        decide(pending.id, "edit", edited_text=pending.text + f" Edit {n}.", store=store)
        pending = runner.wait_for_pending(run_id, seen)
    return run_id, handle, pending


def test_one_edit_then_accept_is_validated_within_the_budget(runner, store):
    run_id, handle, pending = edits_until_refused(runner, store, 1)
    decide(pending.id, "accept", store=store)
    assert handle.wait(30) == "max_metric_calls"
    accepted = store.get_proposal(pending.id)
    assert accepted.status is ProposalStatus.ACCEPTED and accepted.invalid_reason is None
    assert store.get_candidate(accepted.child_id).pooled
    assert store.count_trials(run_id) == 15
    nothing_stranded(store, run_id)


def test_an_edit_the_budget_cannot_pay_for_is_refused_with_what_to_do(runner, store):
    run_id, handle, pending = edits_until_refused(runner, store, 2)
    with pytest.raises(RunStateError) as refused:
        decide(pending.id, "edit", edited_text=pending.text + " Third.", store=store)
    said = str(refused.value)
    assert "costs up to 6 metric calls" in said and "has 3 of its max_metric_calls 18" in said
    assert "Accept or reject" in said and f"studio resume {run_id} --max-metric-calls" in said
    decide(pending.id, "accept", store=store)
    assert handle.wait(30) == "max_metric_calls"
    assert store.get_proposal(pending.id).status is ProposalStatus.ACCEPTED
    assert store.count_trials(run_id) == 18
    nothing_stranded(store, run_id)


def test_a_raised_budget_on_resume_pays_for_the_third_edit(runner, store):
    run_id, handle, pending = edits_until_refused(runner, store, 2)
    decide(pending.id, "stop", store=store)
    handle.wait(30)
    resumed = get_manager(store).resume(run_id, max_metric_calls=30)
    assert store.get_run(run_id).config.max_metric_calls == 30
    wait_until(lambda: awaiting(store, run_id) >= 4, timeout=30, message="the gate again")
    decide(pending.id, "edit", edited_text=pending.text + " Third.", store=store)
    third = runner.wait_for_pending(run_id, {pending.id})
    decide(third.id, "accept", store=store)
    wait_until(lambda: store.get_proposal(third.id).status is ProposalStatus.ACCEPTED,
               timeout=30, message="the third edit is accepted and validated")
    get_manager(store).stop(run_id)
    resumed.wait(30)
    nothing_stranded(store, run_id)


# --------------------------------------------------------------------------- refused resume


def slow_auto_project(folder) -> object:
    data = yaml.safe_load((ROOT / "examples" / "haiku_scripted.yaml").read_text())
    data["run"].update(max_iterations=20)
    path = folder / "project.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_a_refused_resume_leaves_a_run_held_elsewhere_paused(tmp_path, store):
    """Audit 5: `studio resume` of a live run held by another worker process exits 2 and
    changes nothing: the run stays paused."""
    holder = CliWorker(store.url, slow_auto_project(tmp_path))
    try:
        run_id = holder.start()
        wait_until(lambda: store.count_trials(run_id) > 0, timeout=60, message="it runs")
        get_manager(store).pause(run_id)
        wait_until(lambda: store.get_run(run_id).status is RunStatus.PAUSED, timeout=60,
                   message="the holder pauses the run before its next iteration")
        refused = zygote.run([sys.executable, "-m", "studio.cli", "--db", store.url,
                                  "resume", run_id], cwd=ROOT, capture_output=True, text=True,
                                 timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert refused.returncode == 2 and "is being run by worker" in refused.stderr
        run = store.get_run(run_id)
        assert run.status is RunStatus.PAUSED and run.control is RunRequest.PAUSE
        assert holder.alive
    finally:
        holder.kill()


def test_a_refused_resume_keeps_an_undelivered_stop(runner, store):
    """The run's holder has not seen the Stop yet (its next heartbeat would deliver it): a
    resume elsewhere is refused and the Stop stays for the holder."""
    run_id = runner.create(demo_spec(), trainset(3), max_iterations=1)
    assert store.claim_run(run_id, "elsewhere:4242:abcdef", stale_after_s=10)
    store.update_run(run_id, status=RunStatus.RUNNING, control=RunRequest.STOP)
    with pytest.raises(RunStateError, match="being run by worker elsewhere:4242"):
        get_manager(store).resume(run_id, max_metric_calls=50)
    run = store.get_run(run_id)
    assert run.control is RunRequest.STOP and run.config.max_metric_calls is None
    assert run.worker == "elsewhere:4242:abcdef"


@pytest.mark.slow
def test_time_at_the_gate_is_not_timed(runner, store):
    """Audit 1 at its root: a review run waiting at its gate past ``timeout_seconds`` is still
    waiting, and the accepted child is validated and pooled."""
    run_id, handle = runner.start(demo_spec(), trainset(3), valset=VALSET, max_iterations=1,
                                  review="review", timeout_seconds=3.0)
    pending = runner.wait_for_pending(run_id, set())
    wait_until(lambda: handle.engine.ctx.active_seconds() > 3.5, message="the timeout to pass")
    assert store.get_run(run_id).status is RunStatus.RUNNING
    decide(pending.id, "accept", store=store)
    handle.wait(30)
    assert store.get_candidate(store.get_proposal(pending.id).child_id).pooled
    nothing_stranded(store, run_id)


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_a_decision_on_a_killed_runs_gate_is_applied_when_it_resumes(tmp_path, store, capsys):
    """SIGKILLed at a gate: the proposal stays pending; a rejection made while the run is
    orphaned is recorded, said to apply on resume, and applied by the resumed worker."""
    from tests.processes.test_claims import review_project

    worker = CliWorker(store.url, review_project(tmp_path))
    try:
        run_id = worker.start()
        pending = wait_until(lambda: store.proposals(run_id, status=ProposalStatus.PENDING),
                             timeout=60, message="a proposal at the gate")[0]
        worker.kill()
        wait_until(lambda: store.mark_orphans(1.0), timeout=30, message="the run is orphaned")
        assert studio_cli(store, "decide", str(pending.id), "reject", "--reason",
                          "too plain") == 0
        assert f"run {run_id} is orphaned: the decision is applied when it resumes" in \
            capsys.readouterr().out
        worker.resume()
        wait_until(lambda: store.get_proposal(pending.id).status is ProposalStatus.REJECTED,
                   timeout=60, message="the resumed run applies the rejection")
    finally:
        worker.kill()
