"""Workers, the standard way: leases on the database's clock (a worker whose machine's clock is
wrong does not take a live lease), and a run a worker cannot build (a key missing on its
machine) goes back to the queue with a count and a reason, for a worker that can, instead of
failing for everyone; after ``--build-tries`` it fails with the last reason."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

import studio.engine.hosting.queue as queue_module
import studio.model.records as records
import studio.store.repos.queue_workers as queue_workers
import studio.store.repos.runs_and_leases as runs_and_leases
from studio.cli import main
from studio.engine import EvolutionConfig, create_run
from studio.engine.hosting.queue import QueueWorker, queue_run
from studio.model.records import AgentSpec, RunStatus, StopReason, WorkerInfo
from studio.store import open_store
from studio.store.connection import database_now
from tests.helpers import (
    LEASE_ENV,
    StudioProcess,
    demo_spec,
    empty_postgres_store,
    postgres_url,
    trainset,
    wait_until,
)
from tests.openai_server import local_openai

STALE = 10.0


@pytest.fixture
def queue():
    return f"test-{uuid.uuid4().hex[:8]}"


def skew_clocks(monkeypatch, by: timedelta) -> None:
    """This process's clock (every ``utcnow`` the store and the worker could read) set off."""
    def skewed() -> datetime:
        return datetime.now(UTC) + by

    for module in (records, queue_workers, runs_and_leases, queue_module):
        monkeypatch.setattr(module, "utcnow", skewed, raising=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def lease_store(request, store):
    """The test's SQLite store, or a PostgreSQL one (``STUDIO_TEST_PG_URL``, emptied first)."""
    if request.param == "sqlite":
        yield store
        return
    pg = empty_postgres_store(postgres_url())
    yield pg
    pg.close()


def holder(worker_id: str, run_id: str) -> WorkerInfo:
    now = datetime.now(UTC)
    host, pid, _ = worker_id.split(":")
    return WorkerInfo(id=worker_id, queue="q", host=host, pid=int(pid), started_at=now,
                      last_seen=now, run_id=run_id)


@pytest.mark.parametrize("skew", [timedelta(hours=1), timedelta(hours=-1)],
                         ids=["clock-ahead", "clock-behind"])
def test_a_worker_with_a_skewed_clock_does_not_steal_a_live_lease(lease_store, queue,
                                                                  monkeypatch, skew):
    store = lease_store
    run = create_run(store, spec=demo_spec(), trainset=trainset(2))
    queue_run(store, run.id, queue)
    assert store.claim_next_run("h:1:a", queue, stale_after_s=STALE).id == run.id
    store.beat_worker(holder("h:1:a", run.id))  # the live holder renews its lease
    skew_clocks(monkeypatch, skew)  # a worker on another machine, its clock an hour off
    store.heartbeat(run.id, "h:1:a")  # the holder beats on the database's clock all the same
    assert store.claim_next_run("h:2:b", queue, stale_after_s=STALE) is None
    assert store.claim_run(run.id, "h:2:b", stale_after_s=STALE) is False
    assert store.mark_orphans(STALE) == []
    assert [w.id for w in store.live_workers(STALE)] == ["h:1:a"]
    assert store.get_run(run.id).worker == "h:1:a"


def test_a_lease_dead_on_the_databases_clock_is_taken_over(lease_store, queue):
    store = lease_store
    run = create_run(store, spec=demo_spec(), trainset=trainset(2))
    queue_run(store, run.id, queue)
    store.claim_next_run("h:1:a", queue, stale_after_s=STALE)
    with store.engine.connect() as c:
        long_ago = database_now(c) - timedelta(seconds=3 * STALE)
    store.update_run(run.id, heartbeat_at=long_ago)  # the holder died
    assert store.claim_next_run("h:2:b", queue, stale_after_s=STALE).id == run.id


def hosted_run(store, queue: str, monkeypatch) -> str:
    """A queued run whose agent is ``openai/gpt-4o-mini`` (judged offline): it needs
    ``OPENAI_API_KEY`` where it is built."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")  # checked when created
    spec = demo_spec().model_copy(update={"agent": AgentSpec(
        name="writer", model="openai/gpt-4o-mini", instruction="Write a haiku.")})
    run = create_run(store, spec=spec, trainset=trainset(2),
                     config=EvolutionConfig(max_iterations=0))
    queue_run(store, run.id, queue)
    monkeypatch.delenv("OPENAI_API_KEY")  # this machine has no key
    return run.id


def test_a_run_no_worker_can_build_fails_after_its_tries_with_the_last_reason(
        store, queue, monkeypatch, capsys):
    run_id = hosted_run(store, queue, monkeypatch)
    monkeypatch.setattr(queue_module, "BUILD_RETRY_SECONDS", 0.0)  # try again at once
    said: list[str] = []
    worker = QueueWorker(store, queue=queue, poll_seconds=0.05, max_runs=1, say=said.append,
                         build_tries=2)
    serving = threading.Thread(target=worker.serve)
    serving.start()
    wait_until(lambda: store.get_run(run_id).build_tries >= 1, timeout=60,
               message="the worker to give the run back once")
    serving.join(60)
    run = store.get_run(run_id)
    assert run.status is RunStatus.FAILED and run.stop_reason is StopReason.NOT_STARTED
    assert run.build_tries == 2 and "OPENAI_API_KEY" in run.build_error
    assert run.error.startswith("no worker could start the run after 2 tries; the last said: "
                                "ModelConfigError") and "OPENAI_API_KEY" in run.error
    assert any("back in the queue for another worker (tries 1/2)" in line for line in said)


@pytest.mark.slow  # two `studio worker` processes
def test_a_worker_without_the_key_leaves_the_run_to_one_that_has_it(database_url, queue,
                                                                      monkeypatch, capsys):
    store = open_store(database_url, cached=False)
    run_id = hosted_run(store, queue, monkeypatch)
    url = database_url
    workers = []
    with local_openai(lambda body: "a haiku about the sea") as server:
        env = {"OPENAI_API_BASE": server.url, **LEASE_ENV}
        try:
            workers.append(StudioProcess(url, "worker", "--queue", queue, "--poll-seconds",
                                         "0.1", **env))  # no key on this one
            wait_until(lambda: store.get_run(run_id).build_tries == 1, timeout=120,
                       message="the worker without a key to give the run back")
            run = store.get_run(run_id)
            assert run.status is RunStatus.QUEUED and run.worker is None
            assert run.waiting_note.startswith("waiting for a worker that can build it: "
                                               "ModelConfigError")
            assert run.waiting_note.endswith("(tries 1/5)")
            assert main(["--db", url, "runs"]) == 0
            listed = capsys.readouterr().out
            assert "waiting for a worker that can build it" in listed and "(tries 1/5)" in listed
            workers.append(StudioProcess(url, "worker", "--queue", queue, "--poll-seconds",
                                         "0.1", OPENAI_API_KEY="test-key-not-secret", **env))
            wait_until(lambda: store.get_run(run_id).status is RunStatus.COMPLETED,
                       timeout=180, message="the worker with the key to run it")
        finally:
            for worker in workers:
                worker.stop()
    assert workers[0].said("could not be built here") and workers[0].said("OPENAI_API_KEY")
    assert {t.worker.split(":")[1] for t in store.trials(run_id)} == {
        str(workers[1].process.pid)}
    assert server.requests and json.dumps(server.requests[0])  # the agent ran on the server
    # kept, not reset by the run that succeeded (the keyless worker may have tried again while
    # the other one started, on a loaded machine)
    assert store.get_run(run_id).build_tries >= 1
    store.close()
