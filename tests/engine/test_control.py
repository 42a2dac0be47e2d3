"""Steering a running engine: pause, stop and decisions reach it without polling the store."""

from __future__ import annotations

import asyncio
import threading

import pytest

from studio.engine import decide
from studio.engine.hosting import worker
from studio.engine.hosting.build import build_engine
from studio.engine.hosting.worker import get_manager
from studio.engine.run import context
from studio.model.records import ProposalStatus, RunRequest, RunStatus
from tests.helpers import demo_spec, trainset, wait_until

SLOW_SECONDS = 60.0
"""Heartbeat and fallback far beyond the tests' timeouts: only a direct wake-up can be seen."""


@pytest.fixture
def no_polling(monkeypatch):
    monkeypatch.setattr(worker, "HEARTBEAT_SECONDS", SLOW_SECONDS)
    monkeypatch.setattr(context, "WAKE_FALLBACK_SECONDS", SLOW_SECONDS)


def test_an_in_process_decision_wakes_the_waiting_gate(runner, store, no_polling):
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=1, review="review")
    proposal = runner.wait_for_pending(run_id, set())
    decide(proposal.id, "accept", store=store)
    wait_until(lambda: store.get_proposal(proposal.id).status is ProposalStatus.ACCEPTED,
               timeout=20, message="the gate applies the decision")
    assert handle.wait(20) == "max_iterations"


def test_pause_and_unpause_reach_a_local_engine_without_a_heartbeat(runner, store, no_polling):
    run_id, handle = runner.start(demo_spec("scripted/demo@30ms"), trainset(3), max_iterations=3)
    wait_until(lambda: store.count_trials(run_id) > 0, message="the run scores its first trial")
    get_manager(store).pause(run_id)
    wait_until(lambda: store.get_run(run_id).status is RunStatus.PAUSED, timeout=20,
               message="the run pauses before its next iteration")
    held = store.count_trials(run_id)
    get_manager(store).unpause(run_id)
    assert handle.wait(30) == "max_iterations"
    assert store.count_trials(run_id) > held


def test_engine_stop_ends_the_run_with_its_reason(runner, store, no_polling):
    run_id = runner.create(demo_spec("scripted/demo@30ms"), trainset(3), max_iterations=100)
    engine = build_engine(store, run_id)
    handle = get_manager(store).start(engine)
    wait_until(lambda: store.count_trials(run_id) > 0, message="the run scores its first trial")
    engine.stop("user")
    assert handle.wait(20) == "user"
    run = store.get_run(run_id)
    assert run.status is RunStatus.STOPPED and run.stop_reason == "user"


def test_manager_stop_reaches_a_local_engine_without_a_heartbeat(runner, store, no_polling):
    run_id, handle = runner.start(demo_spec("scripted/demo@30ms"), trainset(3),
                                  max_iterations=100)
    wait_until(lambda: store.count_trials(run_id) > 0, message="the run scores its first trial")
    get_manager(store).stop(run_id)
    assert handle.wait(20) == "user"
    assert store.get_run(run_id).status is RunStatus.STOPPED


def test_a_worker_whose_lease_was_taken_over_stops_without_writing(runner, store, monkeypatch):
    """A worker cut off from the database for longer than its lease finds, at its next
    heartbeat, that another worker holds the run: it stops at once and writes nothing (no
    status, no checkpoint, no release of the other worker's lease)."""
    monkeypatch.setattr(worker, "HEARTBEAT_SECONDS", 0.1)
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=2, review="review")
    proposal = runner.wait_for_pending(run_id, set())
    checkpoint = store.load_checkpoint(run_id)
    store.update_run(run_id, worker="another-worker")  # the other worker's claim
    assert handle.wait(20) == worker.LEASE_LOST
    run = store.get_run(run_id)
    assert run.worker == "another-worker"
    assert run.status is RunStatus.RUNNING and run.finished_at is None
    assert store.get_proposal(proposal.id).status is ProposalStatus.PENDING
    assert store.load_checkpoint(run_id) == checkpoint


def test_a_trial_judged_after_a_takeover_is_never_stored(runner, store, no_polling):
    """Between two heartbeats the lost worker may finish judging an example: its commit sees
    the takeover and rolls back, so the new holder judges that pair once."""
    run_id, handle = runner.start(demo_spec("scripted/demo@200ms"), trainset(5),
                                  max_iterations=3)
    wait_until(lambda: store.count_trials(run_id) > 0, message="the run scores its first trial")
    store.update_run(run_id, worker="another-worker")  # the takeover, before the next beat
    taken = store.count_trials(run_id)
    assert handle.wait(20) == worker.LEASE_LOST
    assert store.count_trials(run_id) == taken
    run = store.get_run(run_id)
    assert run.worker == "another-worker" and run.status is RunStatus.RUNNING


# --------------------------------------------------------------------------- RunControl.until


def wait_on(control: context.RunControl, read) -> object:
    """``control.until(read)`` inside a fresh event loop, as an engine runs it."""
    async def waiting():
        with control.attached("r-until"):
            return await asyncio.wait_for(control.until(read), 20)
    return asyncio.run(waiting())


def test_until_sees_a_change_woken_between_its_read_and_its_wait(no_polling):
    """The read finds nothing and, before the wait begins, another thread writes the value
    and wakes the control: the wait sees it at once (the fallback is 60 s, the bound 20 s)."""
    control, value, writers = context.RunControl(), [], []

    def read():
        found = value[0] if value else None
        if not writers:
            writers.append(threading.Thread(target=lambda: (value.append(7), control.wake())))
            writers[0].start()
            writers[0].join()
        return found

    assert wait_on(control, read) == 7


def test_until_ends_with_the_stop_when_there_is_nothing_to_read(no_polling):
    control, stoppers = context.RunControl(), []

    def read():
        if not stoppers:  # stopped by another thread after the read, before the wait
            stoppers.append(threading.Thread(target=control.stop, args=("user",)))
            stoppers[0].start()
            stoppers[0].join()
        return None

    with pytest.raises(context.StopRun) as stopped:
        wait_on(control, read)
    assert stopped.value.reason == "user"


def test_until_returns_a_value_already_there_over_a_stop():
    """A decision made before the stop is applied: the gate returns it, the run then stops."""
    control = context.RunControl()
    control.stop("user")
    assert wait_on(control, lambda: "decided") == "decided"


def test_until_holds_a_pause_until_it_is_lifted(no_polling):
    control, lifters = context.RunControl(), []
    control.apply(RunRequest.PAUSE)

    def unpaused():
        found = control.unpaused()
        if not lifters:  # lifted by another thread after the read, before the wait
            lifters.append(threading.Thread(target=control.apply, args=(None,)))
            lifters[0].start()
            lifters[0].join()
        return found

    assert wait_on(control, unpaused) is True
    assert not control.pause_requested


def test_a_cancel_in_the_turn_that_wakes_the_wait_is_not_lost(no_polling):
    """A worker's shutdown (the task cancelled) landing in the loop turn in which a heartbeat's
    wake-up ends the wait: the waiting task ends cancelled. (Python 3.11's ``wait_for``
    returned the wake-up and dropped the cancel, so the run went on to its end.)"""
    control = context.RunControl()

    async def waiting():
        with control.attached("cancel-turn"):
            task = asyncio.ensure_future(control.until(lambda: None))
            await asyncio.sleep(0)  # the task now waits on the control's event
            loop = asyncio.get_running_loop()
            loop.call_soon(control.changed.set)  # the wake-up and the cancel, in one turn
            loop.call_soon(task.cancel)
            done, _ = await asyncio.wait([task], timeout=20)  # not cancelled: waits 60 s
            return bool(done) and task.cancelled()

    assert asyncio.run(waiting()) is True
