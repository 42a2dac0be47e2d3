"""A resume starts from the state a person left, whichever way it is started (issue 32).

A person stops a run at its gate, and a second tab stops it again: the proposal waits. Each way
of resuming (the library's ``evolve(resume=...)``, ``studio resume``, the Run page's Resume in a
single-user studio, and the Run page's Resume handed to a live ``studio worker``) must bring the
proposal back to its gate, not end at once "stopped by a person" (the library's resume did, in
0.3 s, with the proposal still pending). A Stop pressed while a resume starts is newer than the
resume and is kept (the requests are counted: ``runs.control_seq``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from studio import EvolutionConfig, cli, evolve_sync
from studio.engine import decide
from studio.engine.hosting.queue import QueueWorker
from studio.engine.hosting.worker import get_manager
from studio.engine.people.steering import stop_run
from studio.model.records import EventKind, ProposalStatus, RunRequest, RunStatus, StopReason
from studio.projects import workspace
from tests.helpers import critic, demo_spec, trainset, wait_until, writer

REVIEW = {"max_iterations": 1, "review": "review"}


def gate_announcements(store, run_id: str, proposal_id: int) -> int:
    return sum(1 for e in store.events(run_id, kind=EventKind.AWAITING_DECISION)
               if e.payload["proposal_id"] == proposal_id)


def stopped_twice(store, run_id: str, wait_for_end: Callable[[], object]) -> int:
    """Stop the run at its first gate, as a person does, then again from a second tab once it
    has stopped (and the request a Stop landing as the engine ends leaves behind); returns the
    proposal left waiting."""
    pending = wait_until(lambda: store.proposals(run_id, status=ProposalStatus.PENDING),
                         message="the first proposal at its gate")[0]
    decide(pending.id, "stop", store=store)
    wait_for_end()
    decide(pending.id, "stop", author="second tab", store=store)
    store.request_control(run_id, RunRequest.STOP)  # a Stop that landed as the engine ended
    assert store.get_run(run_id).status is RunStatus.STOPPED
    return pending.id


def resumed_to_the_gate(store, run_id: str, proposal_id: int, announced: int) -> None:
    """The resumed run waits at the same gate again; accepting lets it complete."""
    wait_until(lambda: gate_announcements(store, run_id, proposal_id) > announced, timeout=30,
               message="the proposal back at its gate")
    run = store.get_run(run_id)
    assert run.status is RunStatus.RUNNING and run.control is None
    decide(proposal_id, "accept", store=store)
    wait_until(lambda: store.get_run(run_id).status is RunStatus.COMPLETED, timeout=30,
               message="the run to complete")
    assert store.get_proposal(proposal_id).status is ProposalStatus.ACCEPTED


def in_thread(work: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def test_the_librarys_resume_after_a_double_stop_waits_at_the_gate(store):
    def evolve_here(**extra):
        return evolve_sync(writer(), trainset(3), critic=critic(), store=store,
                           config=EvolutionConfig(**REVIEW), **extra)

    first = in_thread(evolve_here)
    run_id = wait_until(lambda: store.list_runs(), message="the run stored")[0].id
    proposal = stopped_twice(store, run_id, lambda: first.join(30))
    announced = gate_announcements(store, run_id, proposal)
    second = in_thread(lambda: evolve_here(resume=run_id))
    resumed_to_the_gate(store, run_id, proposal, announced)
    second.join(30)


def test_studio_resume_after_a_double_stop_waits_at_the_gate(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), **REVIEW)
    proposal = stopped_twice(store, run_id, lambda: handle.wait(30))
    announced = gate_announcements(store, run_id, proposal)
    resumed = in_thread(lambda: cli.main(["--db", store.url, "resume", run_id]))
    resumed_to_the_gate(store, run_id, proposal, announced)
    resumed.join(30)


def test_the_run_pages_resume_after_a_double_stop_waits_at_the_gate(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), **REVIEW)
    proposal = stopped_twice(store, run_id, lambda: handle.wait(30))
    announced = gate_announcements(store, run_id, proposal)
    assert workspace.resume_run(store, run_id) == "resumed"
    resumed_to_the_gate(store, run_id, proposal, announced)


def test_a_worker_taking_the_run_pages_resume_after_a_double_stop_waits_at_the_gate(
        runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), **REVIEW)
    proposal = stopped_twice(store, run_id, lambda: handle.wait(30))
    announced = gate_announcements(store, run_id, proposal)
    worker = QueueWorker(store, poll_seconds=0.05, max_runs=1)
    serving = in_thread(worker.serve)
    try:
        wait_until(lambda: workspace.live_workers(store), message="the worker registered")
        assert workspace.resume_run(store, run_id) == "queued"
        resumed_to_the_gate(store, run_id, proposal, announced)
        wait_until(lambda: worker.done == [run_id], message="the worker to count the run done")
    finally:
        worker.request_shutdown()
        serving.join(30)


@pytest.mark.parametrize("withdrawn", ["stale", "none"])
def test_a_stop_pressed_while_a_resume_starts_is_kept(runner, store, monkeypatch, withdrawn):
    """The resume reads the run, claims it, then withdraws what it read: a Stop made between
    the read and the withdrawal is newer than the resume and stops the resumed run (whether or
    not an older Stop was there to withdraw)."""
    run_id, handle = runner.start(demo_spec(), trainset(3), **REVIEW)
    if withdrawn == "stale":
        proposal = stopped_twice(store, run_id, lambda: handle.wait(30))
    else:
        proposal = wait_until(lambda: store.proposals(run_id, status=ProposalStatus.PENDING),
                              message="the first proposal at its gate")[0].id
        get_manager(store).stop(run_id)
        handle.wait(30)
    claim, claims = store.claim_run, []

    def claim_then_a_person_stops(*args, **kwargs):  # spy: a Stop lands after the first claim
        claimed = claim(*args, **kwargs)
        if not claims:
            stop_run(store, run_id)
        claims.append(claimed)
        return claimed

    monkeypatch.setattr(store, "claim_run", claim_then_a_person_stops)
    resumed = get_manager(store).resume(run_id)
    assert resumed.wait(30) is StopReason.USER
    assert store.get_proposal(proposal).status is ProposalStatus.PENDING
