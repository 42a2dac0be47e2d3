"""``studio worker`` processes exit within seconds of SIGTERM, each releasing its run to the
queue for another worker, at 2 and at 4 workers on one store (issue 32: one of them did not
exit within 30 s, a run holding it until its batch ended). SQLite and PostgreSQL, real
processes; the time is measured from the signal to each process's exit."""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from studio.engine import EvolutionConfig
from studio.engine.hosting.queue import enqueue
from studio.model.records import RunStatus
from studio.store import open_store
from tests.engine.test_queue import judged_twice, stop_all
from tests.helpers import QueueWorkerProcess, demo_spec, trainset, wait_until

EXIT_SECONDS = 5.0
"""The promise: every worker is gone this long after its SIGTERM."""


@pytest.fixture
def db(database_url):
    store = open_store(database_url, cached=False)
    yield store
    store.close()


def long_run(db, queue: str, seed: int) -> str:
    """A run whose seed validation lasts minutes (300 examples, 50 ms a call)."""
    return enqueue(spec=demo_spec("scripted/demo@50ms"), trainset=trainset(5),
                   valset=[{"topic": f"topic {n}"} for n in range(300)],
                   config=EvolutionConfig(max_iterations=3, seed=seed, max_concurrency=4),
                   queue=queue, store=db).id


@pytest.mark.slow
@pytest.mark.parametrize("count", [2, 4])
def test_workers_exit_within_seconds_of_sigterm_and_release_their_runs(
        db, database_url, tmp_path, count):
    queue = f"test-{uuid.uuid4().hex[:8]}"
    runs = [long_run(db, queue, seed) for seed in range(count)]
    workers = [QueueWorkerProcess(database_url, queue, tmp_path) for _ in range(count)]
    try:
        try:
            wait_until(lambda: all(db.get_run(r).worker and db.count_trials(r) > 0
                                   for r in runs), timeout=600,
                       message="every worker judging a run")
        except AssertionError as late:
            states = [(db.get_run(r).status.value, db.get_run(r).worker, db.count_trials(r))
                      for r in runs]
            raise AssertionError(f"{late}: {states}", [w.log() for w in workers]) from None
        sent = time.monotonic()
        for worker in workers:
            worker.send(signal.SIGTERM)
        exited: dict[int, float] = {}

        def all_exited() -> bool:
            for worker in workers:
                if worker.pid not in exited and worker.process.poll() is not None:
                    exited[worker.pid] = time.monotonic() - sent
            return len(exited) == count

        wait_until(all_exited, timeout=60, step=0.05, message="every worker to exit")
        slowest = max(exited.values())
        assert slowest <= EXIT_SECONDS, (f"a worker took {slowest:.1f} s to exit",
                                         [w.log() for w in workers])
        assert all(w.process.returncode == 0 for w in workers)
        for run_id in runs:  # released for another worker, nothing judged twice
            run = db.get_run(run_id)
            assert (run.status, run.worker) == (RunStatus.QUEUED, None)
            assert judged_twice(db, run_id) == 0
    finally:
        stop_all(workers)
