"""Many workers, one store: `studio worker` processes take queued runs under a lease, on
SQLite and PostgreSQL (real processes, SIGKILL and SIGTERM; conditions, never sleeps)."""

from __future__ import annotations

import signal
import threading
import uuid
from collections import Counter
from datetime import timedelta

import pytest

from studio.engine import EvolutionConfig, create_run, decide
from studio.engine.hosting.build import mark_not_started
from studio.engine.hosting.queue import QueueWorker, enqueue, queue_run
from studio.engine.people.gates import latest_pending
from studio.model.errors import (
    ConfigError,
    RunStateError,
    StoreFullError,
    StoreUnavailableError,
)
from studio.model.records import EventKind, RunRequest, RunStatus, StopReason, WorkerInfo, utcnow
from studio.store import open_store
from tests.helpers import QueueWorkerProcess, demo_spec, trainset, wait_until

VALSET = [{"topic": "harbor fog"}, {"topic": "desert wind"}]


@pytest.fixture
def db(database_url):
    store = open_store(database_url, cached=False)
    yield store
    store.close()


@pytest.fixture
def queue():
    """A queue of this test's own: runs other tests left in a shared database stay out."""
    return f"test-{uuid.uuid4().hex[:8]}"


def queued_run(store, queue, *, latency_ms=40, iterations=2, seed=0) -> str:
    return enqueue(spec=demo_spec(f"scripted/demo@{latency_ms}ms"), trainset=trainset(5),
                   valset=VALSET, config=EvolutionConfig(max_iterations=iterations, seed=seed,
                                                         max_concurrency=2),
                   queue=queue, store=store).id


def status(store, run_id) -> RunStatus:
    return store.get_run(run_id).status


def judged_twice(store, run_id) -> int:
    """(candidate, example) pairs with more than one trial (the engine judges each once)."""
    pairs = Counter((t.candidate_id, t.example_id)
                    for t in store.trials(run_id, with_trace=False))
    return sum(1 for n in pairs.values() if n > 1)


def stop_all(workers) -> None:
    for worker in workers:
        worker.send(signal.SIGKILL)
        worker.wait(30)


def serve_one_run(worker: QueueWorker, timeout: float = 120) -> int:
    """``worker.serve()`` for a test: asked to shut down if it has not returned within
    ``timeout`` (a worker that did not count its run done would poll on forever)."""
    served: list[int] = []
    thread = threading.Thread(target=lambda: served.append(worker.serve()), daemon=True)
    thread.start()
    thread.join(timeout)
    worker.request_shutdown()
    thread.join(60)
    return served[0] if served else -1


# ---------------------------------------------------------------------------- store: the claim


def test_claims_take_the_oldest_free_run_of_their_queue_only(db, queue):
    first, second = queued_run(db, queue), queued_run(db, queue)
    other = queued_run(db, f"{queue}-other")
    run = db.claim_next_run("w1", queue, stale_after_s=10)
    assert run.id == first and run.worker == "w1" and run.status is RunStatus.PENDING
    assert db.claim_next_run("w2", queue, stale_after_s=10).id == second
    assert db.claim_next_run("w3", queue, stale_after_s=10) is None  # both held, lease live
    assert status(db, other) is RunStatus.QUEUED


def test_an_expired_lease_is_claimed_again_and_a_finished_run_never(db, queue):
    held, done = queued_run(db, queue), queued_run(db, queue)
    db.claim_next_run("dead", queue, stale_after_s=10)
    db.update_run(held, status=RunStatus.RUNNING, heartbeat_at=utcnow() - timedelta(minutes=1))
    db.update_run(done, status=RunStatus.COMPLETED, worker=None)
    assert db.claim_next_run("alive", queue, stale_after_s=10).id == held
    assert db.claim_next_run("other", queue, stale_after_s=10) is None


def test_concurrent_claims_take_each_run_exactly_once(db, queue):
    runs = [queued_run(db, queue) for _ in range(8)]
    taken: list[str] = []

    def claim_all(worker: str) -> None:
        while (run := db.claim_next_run(worker, queue, stale_after_s=60)) is not None:
            taken.append(run.id)

    threads = [threading.Thread(target=claim_all, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(taken) == sorted(runs)


def test_only_a_new_resumable_run_is_queued_and_a_queued_one_can_be_cancelled(db, queue):
    run_id = queued_run(db, queue)
    with pytest.raises(RunStateError, match="only a newly created run"):
        queue_run(db, run_id, queue)
    live = create_run(db, spec=demo_spec().model_copy(update={"resumable": False}),
                      trainset=trainset(2))
    with pytest.raises(RunStateError, match="live Python objects"):
        queue_run(db, live.id, queue)
    assert db.cancel_queued(run_id) and status(db, run_id) is RunStatus.STOPPED
    assert db.claim_next_run("w", queue, stale_after_s=10) is None
    assert db.requeue_run(run_id, queue) and status(db, run_id) is RunStatus.QUEUED


def test_workers_are_live_while_they_beat(db, queue):
    now = utcnow()
    db.beat_worker(WorkerInfo(id="h:1:a", queue=queue, host="h", pid=1, started_at=now,
                              last_seen=now))
    assert [w.id for w in db.live_workers(10, queue)] == ["h:1:a"]
    assert db.live_workers(10, f"{queue}-other") == []
    db.remove_worker("h:1:a")
    assert db.live_workers(10, queue) == []


def test_a_claimed_run_its_worker_cannot_build_fails_with_the_reason_and_is_let_go(db, queue):
    run_id = queued_run(db, queue)
    assert db.claim_next_run("h:1:a", queue, stale_after_s=10).id == run_id
    mark_not_started(db, run_id, RuntimeError("no API key here"), worker_id="h:1:a")
    run = db.get_run(run_id)
    assert run.status is RunStatus.FAILED and run.stop_reason == "not_started"
    assert run.error == "worker h:1:a could not start the run: RuntimeError: no API key here"
    assert run.worker is None and db.claim_next_run("h:2:b", queue, stale_after_s=10) is None


def lose_the_second_commits_reply(db, monkeypatch, just_before=lambda: None) -> list[int]:
    """Patch ``db`` so its second trial commit lands and then its reply is lost (a connection
    dropped in the middle of the COMMIT), ``just_before`` running first; returns the sizes of
    the commits made."""
    real_add_trials, calls = db.add_trials, []

    def commit_then_lose_the_reply(trials):
        stored = real_add_trials(trials)
        calls.append(len(trials))
        if len(calls) == 2:
            just_before()
            raise StoreUnavailableError("database x: server closed the connection unexpectedly")
        return stored

    monkeypatch.setattr(db, "add_trials", commit_then_lose_the_reply)
    return calls


def worker_saying(db, queue) -> tuple[QueueWorker, list[str]]:
    """A worker for one run of ``queue``, and the lines it says."""
    said: list[str] = []
    return QueueWorker(db, queue=queue, max_runs=1, poll_seconds=0.05, say=said.append), said


@pytest.mark.slow
def test_a_run_stopped_by_a_lost_commit_is_resumed_by_its_worker_once_the_database_answers(
        db, queue, monkeypatch):
    """A connection lost in the middle of a commit cannot be repeated blindly (the commit may
    have landed: here it did), so the run stops. Its worker resumes it from what the store
    holds: the run completes and no pair is judged twice."""
    run_id = queued_run(db, queue, iterations=2)
    calls = lose_the_second_commits_reply(db, monkeypatch)
    worker, said = worker_saying(db, queue)
    assert serve_one_run(worker) == 1, said
    run = db.get_run(run_id)
    assert run.status is RunStatus.COMPLETED, (run.status, run.error, said)
    assert len(calls) > 2 and judged_twice(db, run_id) == 0
    assert any("resuming it when it answers" in line for line in said), said
    assert any("resumed from its last committed trial" in line for line in said), said


@pytest.mark.slow
@pytest.mark.parametrize("stop_write_fails", [True, False], ids=["down", "back at once"])
def test_a_completion_committed_as_the_database_went_away_is_not_run_again(
        db, queue, monkeypatch, stop_write_fails):
    """The run's last write (completed) lands but its reply is lost; the engine's write of
    the outage stop fails too, or lands and must not overwrite the completion: the worker finds
    the run completed, ends with its own reason and counts it done."""
    run_id = queued_run(db, queue, iterations=1)
    real_update_run, down = db.update_run, []

    def completion_lands_then_the_database_goes(run_id_, **fields):
        if down:
            down.pop()
            raise StoreUnavailableError("database x: connection refused")
        updated = real_update_run(run_id_, **fields)
        if fields.get("status") is RunStatus.COMPLETED:
            down.extend([True] * 2 * stop_write_fails)  # the engine's read and write
            raise StoreUnavailableError("database x: server closed the connection unexpectedly")
        return updated

    real_get_run = db.get_run

    def get_run_unless_down(run_id_):
        if down:
            down.pop()
            raise StoreUnavailableError("database x: connection refused")
        return real_get_run(run_id_)

    monkeypatch.setattr(db, "update_run", completion_lands_then_the_database_goes)
    monkeypatch.setattr(db, "get_run", get_run_unless_down)
    worker, said = worker_saying(db, queue)
    assert serve_one_run(worker) == 1, said
    run = db.get_run(run_id)
    assert run.status is RunStatus.COMPLETED and worker.done == [run_id], said
    assert said[-1] == f"run {run_id} ended: max_iterations", said


def test_a_stop_asked_as_the_database_went_away_is_kept_not_resumed(db, queue, monkeypatch):
    """A person's Stop stored just before the outage (not yet seen by the engine) outlives
    the outage: the worker records the run stopped by the person instead of resuming it."""
    run_id = queued_run(db, queue, iterations=3)
    calls = lose_the_second_commits_reply(  # the Stop as `studio stop` from elsewhere
        db, monkeypatch, lambda: db.update_run(run_id, control=RunRequest.STOP))
    worker, said = worker_saying(db, queue)
    assert serve_one_run(worker) == 1, said
    run = db.get_run(run_id)
    assert (run.status, run.stop_reason, run.control) == (
        RunStatus.STOPPED, StopReason.USER, None), said
    assert len(calls) == 2 and f"run {run_id} stays stopped, as a person asked" in said


@pytest.mark.slow
def test_a_pause_asked_as_the_database_went_away_holds_after_the_resume(db, queue,
                                                                      monkeypatch):
    """A Pause stored just before the outage is kept through the worker's resume: the resumed
    run pauses from its start, and goes on to complete once the person unpauses it."""
    run_id = queued_run(db, queue, iterations=2)
    lose_the_second_commits_reply(  # the Pause as the Run page's
        db, monkeypatch, lambda: db.update_run(run_id, control=RunRequest.PAUSE))
    worker, said = worker_saying(db, queue)
    served: list[int] = []
    thread = threading.Thread(target=lambda: served.append(worker.serve()), daemon=True)
    thread.start()
    try:
        wait_until(lambda: status(db, run_id) is RunStatus.PAUSED, timeout=60,
                   message="the resumed run to hold on the kept Pause")
        assert db.get_run(run_id).control is RunRequest.PAUSE
        assert any("resumed from its last committed trial" in line for line in said), said
        worker.manager.unpause(run_id)
        thread.join(120)
    finally:
        worker.request_shutdown()
        thread.join(60)
    assert served == [1] and status(db, run_id) is RunStatus.COMPLETED, said


def test_a_run_stopped_by_a_full_disk_is_left_for_a_person_to_resume(db, queue, monkeypatch):
    """A disk rarely frees itself: the worker says what happened and leaves the run stopped
    (free space, then `studio resume`), instead of resuming it into the same full disk."""
    run_id = queued_run(db, queue, iterations=3)
    real_add_trials, calls = db.add_trials, []

    def full_on_the_second_commit(trials):
        calls.append(len(trials))
        if len(calls) == 2:
            raise StoreFullError("the disk holding the database file x.db is full")
        return real_add_trials(trials)

    monkeypatch.setattr(db, "add_trials", full_on_the_second_commit)
    worker, said = worker_saying(db, queue)
    assert serve_one_run(worker) == 1, said
    run = db.get_run(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.STOPPED,
                                             StopReason.DATABASE_UNAVAILABLE), said
    assert len(calls) == 2 and not any("resum" in line for line in said), said
    assert f"run {run_id} stopped: the disk holding the database file x.db is full" in said


@pytest.mark.slow
def test_an_outage_that_recurs_before_any_trial_is_committed_is_not_resumed_again(
        db, queue, monkeypatch):
    """Resumed after an outage, the run fails to commit anything again, three times in a row:
    the worker leaves it stopped and says how to resume it, instead of paying for the same
    calls forever."""
    run_id = queued_run(db, queue, iterations=3)
    real_add_trials, calls = db.add_trials, []

    def first_commit_then_none(trials):
        calls.append(len(trials))
        if len(calls) == 1:
            return real_add_trials(trials)
        raise StoreUnavailableError("database x: connection refused")

    monkeypatch.setattr(db, "add_trials", first_commit_then_none)
    worker, said = worker_saying(db, queue)
    assert serve_one_run(worker) == 1, said
    run = db.get_run(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.STOPPED,
                                             StopReason.DATABASE_UNAVAILABLE), said
    assert sum("resumed from its last committed trial" in line for line in said) == 3, said
    assert any("3 times after outages without committing a trial" in line for line in said), said


# ---------------------------------------------------------------------------- worker processes


@pytest.mark.slow
def test_two_workers_never_run_the_same_run(db, queue, database_url, tmp_path):
    runs = [queued_run(db, queue, seed=i) for i in range(4)]
    workers = [QueueWorkerProcess(database_url, queue, tmp_path) for _ in range(2)]
    try:
        wait_until(lambda: all(status(db, r) is RunStatus.COMPLETED for r in runs),
                   timeout=240, message="the four runs to complete")
        for worker in workers:
            worker.send(signal.SIGTERM)
            assert worker.wait(60) == 0
        for run_id in runs:
            judges = {t.worker for t in db.trials(run_id, with_trace=False)}
            assert len(judges) == 1 and None not in judges  # one worker judged all its trials
            assert len(db.events(run_id, kind=EventKind.RUN_STARTED)) == 1
            assert len(db.events(run_id, kind=EventKind.RUN_FINISHED)) == 1  # completed once
            assert judged_twice(db, run_id) == 0
        assert db.live_workers(60, queue) == []  # both deregistered on their way out
    finally:
        stop_all(workers)


@pytest.mark.slow
def test_a_killed_workers_run_is_resumed_by_another_with_nothing_judged_twice(
        db, queue, database_url, tmp_path):
    run_id = queued_run(db, queue, latency_ms=100, iterations=3)
    workers = [QueueWorkerProcess(database_url, queue, tmp_path) for _ in range(2)]
    try:
        wait_until(lambda: db.count_trials(run_id) > 0, timeout=120,
                   message="a trial exists for the run")
        holder = next(w for w in workers if w.holds(db.get_run(run_id)))
        killed_id = db.get_run(run_id).worker
        holder.send(signal.SIGKILL)
        holder.wait(30)
        survivor = next(w for w in workers if w is not holder)
        wait_until(lambda: survivor.holds(db.get_run(run_id)), timeout=60,
                   message="the other worker to claim the run once the lease expired")
        wait_until(lambda: status(db, run_id) is RunStatus.COMPLETED, timeout=240,
                   message="the run to complete on the other worker")
        judges = Counter(t.worker for t in db.trials(run_id, with_trace=False))
        assert killed_id in judges and len(judges) == 2  # the survivor finished it
        assert judged_twice(db, run_id) == 0
        per_iteration = Counter(p.iteration for p in db.proposals(run_id)
                                if p.edited_from is None)
        assert max(per_iteration.values()) == 1  # no duplicate proposals
        assert len(db.events(run_id, kind=EventKind.RUN_STARTED)) == 2
    finally:
        stop_all(workers)


@pytest.mark.slow
def test_sigterm_checkpoints_releases_the_run_and_exits_0(db, queue, database_url, tmp_path):
    run_id = queued_run(db, queue, latency_ms=100, iterations=3)
    first = QueueWorkerProcess(database_url, queue, tmp_path)
    second = None
    try:
        wait_until(lambda: db.count_trials(run_id) > 0, timeout=120,
                   message="a trial exists for the run")
        first.send(signal.SIGTERM)
        assert first.wait(60) == 0
        run = db.get_run(run_id)
        assert run.status is RunStatus.QUEUED and run.worker is None  # released at once
        assert db.load_checkpoint(run_id) is not None
        assert "back in the queue" in first.log()
        before = db.count_trials(run_id)
        second = QueueWorkerProcess(database_url, queue, tmp_path, "--max-runs", "1")
        assert second.wait(240) == 0  # took the run, finished it, exited on its own
        assert status(db, run_id) is RunStatus.COMPLETED
        assert db.count_trials(run_id) > before and judged_twice(db, run_id) == 0
        started = db.events(run_id, kind=EventKind.RUN_STARTED)
        assert [e.payload["resumed"] for e in started] == [False, True]
    finally:
        stop_all([first] + ([second] if second else []))


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_max_runs_stops_the_worker_after_n_runs(db, queue, database_url, tmp_path):
    runs = [queued_run(db, queue, latency_ms=1, iterations=1) for _ in range(3)]
    worker = QueueWorkerProcess(database_url, queue, tmp_path, "--max-runs", "2")
    try:
        assert worker.wait(240) == 0
        assert [status(db, r) for r in runs] == [RunStatus.COMPLETED, RunStatus.COMPLETED,
                                                 RunStatus.QUEUED]  # oldest first
        assert "exits after 2 runs" in worker.log()
    finally:
        stop_all([worker])


@pytest.mark.slow
def test_a_run_waiting_at_a_gate_moves_to_another_worker_on_sigterm(
        db, queue, database_url, tmp_path):
    run_id = enqueue(spec=demo_spec("scripted/demo@20ms"), trainset=trainset(5), valset=VALSET,
                     config=EvolutionConfig(max_iterations=3, review="review", seed=1),
                     queue=queue, store=db).id
    first = QueueWorkerProcess(database_url, queue, tmp_path)
    second = None
    try:
        pending = wait_until(lambda: latest_pending(db.proposals(run_id)), timeout=120,
                             message="the run to wait at its first gate")
        first.send(signal.SIGTERM)
        assert first.wait(60) == 0 and status(db, run_id) is RunStatus.QUEUED
        second = QueueWorkerProcess(database_url, queue, tmp_path)
        wait_until(lambda: second.holds(db.get_run(run_id)), timeout=120,
                   message="the second worker to take the run")
        waits = wait_until(lambda: [e for e in db.events(run_id, kind=EventKind.AWAITING_DECISION)
                                    if e.payload["proposal_id"] == pending.id][1:],
                           timeout=60, message="the same gate announced again")
        assert waits and latest_pending(db.proposals(run_id)).id == pending.id
        decide(pending.id, "stop", store=db)
        wait_until(lambda: status(db, run_id) is RunStatus.STOPPED, timeout=60,
                   message="the decision to stop the run")
        assert judged_twice(db, run_id) == 0
        second.send(signal.SIGTERM)
        assert second.wait(60) == 0
    finally:
        stop_all([first] + ([second] if second else []))


def test_enqueue_refuses_a_seed_whose_placeholder_nothing_fills(db, queue):
    spec = demo_spec()
    spec = spec.model_copy(update={"agent": spec.agent.model_copy(
        update={"instruction": "Write a haiku about {mood}."})})
    before = len(db.list_runs())
    with pytest.raises(ConfigError, match=r"uses \{mood\}") as bad:
        enqueue(spec=spec, trainset=trainset(3), queue=queue, store=db)
    assert bad.value.where == "agent.instruction" and len(db.list_runs()) == before
    run = create_run(db, spec=spec, trainset=trainset(3))  # stored by other means: refused
    with pytest.raises(ConfigError, match=r"uses \{mood\}"):
        queue_run(db, run.id, queue)
    assert status(db, run.id) is RunStatus.PENDING
