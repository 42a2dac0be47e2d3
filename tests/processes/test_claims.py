"""One worker per run: claiming a run is one atomic update guarded by a heartbeat lease (real
worker processes, SQLite and PostgreSQL)."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path

import pytest
import yaml

from studio.engine import decide
from studio.engine.people.gates import latest_pending
from studio.store import open_store
from tests.helpers import ROOT, STALE_SECONDS, CliWorker, wait_until


def review_project(folder: Path) -> Path:
    data = yaml.safe_load((ROOT / "examples" / "haiku_scripted.yaml").read_text())
    data["run"].update(review="review", max_iterations=3)
    path = folder / "project.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def waiting(store, run_id):
    return latest_pending(store.proposals(run_id))


@pytest.mark.slow
def test_a_second_worker_is_refused_while_the_first_holds_the_run(tmp_path, database_url):
    store = open_store(database_url, cached=False)
    first = CliWorker(database_url, review_project(tmp_path))
    try:
        run_id = first.start()
        pending = wait_until(lambda: waiting(store, run_id), timeout=60,
                             message="the first worker waits at a gate")
        second = CliWorker(database_url, first.project)
        second.run_id = run_id
        refused = second._spawn("resume", run_id)
        _, err = refused.communicate(timeout=60)
        assert refused.returncode != 0
        assert f"run {run_id} is being run by worker" in err
        assert f"pid {first.process.pid}" in err and "last heartbeat" in err
        assert first.alive  # the holder was not disturbed
        decide(pending.id, "stop", store=store)
        first.wait_exit(60)
    finally:
        first.kill()
        store.close()


@pytest.mark.slow
def test_two_workers_resuming_one_run_at_once_start_one_engine(tmp_path, database_url):
    store = open_store(database_url, cached=False)
    starter = CliWorker(database_url, review_project(tmp_path))
    workers = []
    try:
        run_id = starter.start()
        pending = wait_until(lambda: waiting(store, run_id), timeout=60,
                             message="the run reaches its first gate")
        starter.kill()  # SIGKILL: its lease expires two seconds after its last heartbeat
        wait_until(lambda: run_id in store.mark_orphans(float(STALE_SECONDS)), timeout=60,
                   message="the killed starter's lease expires")
        workers = [starter._spawn("resume", run_id) for _ in range(2)]
        wait_until(lambda: any(w.poll() is not None for w in workers), timeout=60,
                   message="one of the two workers to give up")
        loser = next(w for w in workers if w.poll() is not None)
        winner = next(w for w in workers if w is not loser)
        # refused by the winner, which claimed the run after reading it: the Stop below comes
        # after that read, so its resume cannot withdraw it as a request it found
        assert loser.returncode != 0
        assert f"is being run by worker {socket.gethostname()}:{winner.pid}:" \
            in loser.stderr.read()
        assert winner.poll() is None  # the winner holds the run, waiting at the same gate
        assert wait_until(lambda: waiting(store, run_id), timeout=30).id == pending.id
        decide(pending.id, "stop", store=store)
        winner.wait(60)
        pairs = Counter((t.candidate_id, t.example_id) for t in store.trials(run_id))
        assert max(pairs.values()) == 1  # nothing judged twice
        per_iteration = Counter(p.iteration for p in store.proposals(run_id)
                                if p.edited_from is None)
        assert max(per_iteration.values()) == 1  # no duplicate proposals
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
        starter.kill()
        store.close()
