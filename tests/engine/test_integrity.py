"""A person's decisions and corrections are never lost, doubled or ignored (real engine, scripted
model through ADK + LiteLLM)."""

from __future__ import annotations

import threading

import pytest

from studio.engine import decide
from studio.engine.hosting.worker import get_manager
from studio.model.errors import RunStateError
from studio.model.records import DecisionAction, EventKind, ProposalStatus, RunStatus
from tests.helpers import demo_spec, trainset, wait_until


def test_a_run_stopped_at_the_gate_brings_the_same_proposal_back_on_resume(runner, store):
    """Stop is no decision: the proposal stays pending, and the resumed run replays its
    iteration and waits at the same gate again (announced again), where the person decides."""
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=3, review="review")
    pending = runner.wait_for_pending(run_id, set())
    assert decide(pending.id, "stop", store=store) is None
    assert handle.wait(30) == "user"
    stopped = store.get_proposal(pending.id)
    assert stopped.status is ProposalStatus.PENDING and stopped.decided_at is None
    assert store.decisions(proposal_id=pending.id) == []
    announced = len(store.events(run_id, kind=EventKind.AWAITING_DECISION))

    get_manager(store).resume(run_id)
    wait_until(lambda: len(store.events(run_id, kind=EventKind.AWAITING_DECISION)) > announced,
               timeout=30, message="the stopped proposal is announced at the gate again")
    assert [p.id for p in store.proposals(run_id, status=ProposalStatus.PENDING)] == [pending.id]
    decide(pending.id, "accept", store=store)
    waiting = runner.wait_for_pending(run_id, {pending.id})  # the next iteration's
    assert waiting.iteration == pending.iteration + 1
    accepted = store.get_proposal(pending.id)
    assert accepted.status is ProposalStatus.ACCEPTED
    assert store.get_candidate(accepted.child_id).pooled
    get_manager(store).stop(run_id)


def test_the_first_of_two_simultaneous_decisions_wins(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=1, review="review")
    pending = runner.wait_for_pending(run_id, set())
    barrier, outcomes = threading.Barrier(2), []

    def person(action: str) -> None:
        barrier.wait()
        try:
            outcomes.append(("decided", decide(pending.id, action, reason="why", author=action,
                                               store=store).action))
        except RunStateError as exc:
            outcomes.append(("refused", str(exc)))

    people = [threading.Thread(target=person, args=(a,)) for a in ("accept", "reject")]
    for p in people:
        p.start()
    for p in people:
        p.join(10)
    handle.wait(30)
    decisions = store.decisions(proposal_id=pending.id)
    assert len(decisions) == 1
    winner = decisions[0].action
    refused = next(text for kind, text in outcomes if kind == "refused")
    assert f"already decided by {winner.value} at" in refused
    expected = ProposalStatus.ACCEPTED if winner is DecisionAction.ACCEPT \
        else ProposalStatus.REJECTED
    assert store.get_proposal(pending.id).status is expected  # the engine acted on the winner


@pytest.mark.slow
def test_a_second_decision_after_an_accept_is_refused_while_the_child_validates(runner, store):
    run_id, handle = runner.start(demo_spec("scripted/demo@60ms"), trainset(3), max_iterations=1,
                                  review="review", max_concurrency=1)
    pending = runner.wait_for_pending(run_id, set())
    decide(pending.id, "accept", author="ana", store=store)
    with pytest.raises(RunStateError, match="already decided by ana at .*\\(accept\\)"):
        decide(pending.id, "reject", reason="changed my mind", author="bo", store=store)
    handle.wait(30)
    assert store.get_proposal(pending.id).status is ProposalStatus.ACCEPTED
    assert [d.author for d in store.decisions(proposal_id=pending.id)] == ["ana"]


def test_an_accepted_child_always_finishes_its_validation_at_the_end_of_the_budget(runner, store):
    # 3 baseline + per iteration 2*3 minibatch + 3 valset = 12: the budget pays for one
    # iteration, and the second is never started half-way.
    run_id, reason = runner.run(demo_spec(), trainset(3), valset=trainset(3), max_iterations=5,
                                max_metric_calls=3 + 12 + 5, minibatch_size=3)
    assert reason == "max_metric_calls"
    proposals = store.proposals(run_id)
    assert proposals and all(p.status is not ProposalStatus.EVALUATING for p in proposals)
    for p in proposals:
        if p.status is ProposalStatus.ACCEPTED:
            assert store.get_candidate(p.child_id).pooled
    assert store.count_trials(run_id) <= 3 + 12 + 5


def test_a_stored_proposal_is_validated_again_on_resume(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=1, review="review")
    pending = runner.wait_for_pending(run_id, set())
    decide(pending.id, "stop", store=store)
    handle.wait(30)
    # a crash between storing and validating: the stored text equals its parent's
    parent = store.get_candidate(pending.parent_id)
    ghost = store.add_proposal(pending.model_copy(update={
        "id": None, "iteration": pending.iteration + 1, "status": ProposalStatus.EVALUATING,
        "child_id": None, "decided_at": None, "invalid_reason": None,
        "text": parent.components["instruction"]}))
    from studio.engine.hosting.build import build_engine
    from studio.engine.propose.proposer import revalidated

    engine = build_engine(store, run_id)
    checked = revalidated(engine.ctx, ghost, parent)
    assert checked.status is ProposalStatus.INVALID
    assert "unchanged" in (checked.invalid_reason or "")


def test_completed_runs_say_which_limit_to_raise_instead_of_restarting(runner, store):
    run_id, reason = runner.run(demo_spec(), trainset(3), max_iterations=5, score_threshold=0.0)
    assert reason == "score_threshold"
    with pytest.raises(RunStateError,
                       match="completed \\(score_threshold\\).*different score_threshold"):
        get_manager(store).resume(run_id)
    assert store.get_run(run_id).status is RunStatus.COMPLETED
