"""PostgreSQL restarted in the middle of a run and under an idle worker, with real processes: a
throwaway server of the test's own (initdb + pg_ctl on a free port), never the shared one."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from studio.model.records import RunStatus
from studio.store import open_store
from tests import zygote
from tests.helpers import ROOT, StudioProcess, wait_until

PG_BIN = Path("/usr/lib/postgresql/15/bin")

pytestmark = pytest.mark.skipif(
    not (PG_BIN / "initdb").exists() or os.geteuid() != 0 or shutil.which("runuser") is None,
    reason="needs Debian's PostgreSQL 15 binaries and root (to run them as user postgres)")


class ThrowawayPostgres:
    """A PostgreSQL server in a temporary folder, owned by user ``postgres`` (initdb refuses
    root), on a free port; ``stop()`` and ``start()`` restart it like a crash or an upgrade."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="studio-pg-", dir="/tmp"))
        shutil.chown(self.dir, "postgres", "postgres")
        self.data = self.dir / "data"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._as_postgres(PG_BIN / "initdb", "-D", self.data, "-A", "trust", "-U", "postgres")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *args) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *map(str, args)], check=True,
                       capture_output=True, timeout=120)

    def start(self) -> None:
        self._as_postgres(PG_BIN / "pg_ctl", "-D", self.data, "-l", self.dir / "log", "-w",
                          "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1",
                          "start")

    def stop(self) -> None:
        self._as_postgres(PG_BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D",
                        str(self.data), "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server():
    pg = ThrowawayPostgres()
    pg.start()
    yield pg
    pg.remove()


def studio(url: str, *args: str) -> StudioProcess:
    """A `studio` command that waits up to 2 minutes for its database."""
    return StudioProcess(url, *args, STUDIO_DB_RETRY_SECONDS="120")


def queue_example(url: str, *, iterations: int) -> None:
    """``studio queue`` the scripted example, in its own process."""
    queued = zygote.run(
        [sys.executable, "-m", "studio.cli", "--db", url, "queue",
         str(ROOT / "examples/haiku_scripted.yaml"), "--max-iterations", str(iterations)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=120)
    assert queued.returncode == 0, queued.stderr


def trial_count(url: str) -> int:
    store = open_store(url, cached=False)
    try:
        runs = store.list_runs()
        return store.count_trials(runs[0].id) if runs else 0
    finally:
        store.engine.dispose()


def assert_completed_cleanly(command: StudioProcess, url: str, *,
                             trials_over: int | None = None) -> None:
    """No traceback from ``command``, and the store's run completed (with more than
    ``trials_over`` trials, when given)."""
    assert not command.said("Traceback"), command.text
    store = open_store(url, cached=False)
    run = store.list_runs()[0]
    assert run.status is RunStatus.COMPLETED
    if trials_over is not None:
        assert store.count_trials(run.id) > trials_over
    store.engine.dispose()


def test_a_run_waits_through_a_postgres_restart_and_completes(server):
    command = studio(server.url, "run", str(ROOT / "examples/haiku_scripted.yaml"),
                    "--max-iterations", "3")
    try:
        wait_until(lambda: trial_count(server.url) >= 2, timeout=120, message="trials stored")
        server.stop()
        wait_until(lambda: command.said("trying again"), timeout=60,
                   message="the run to wait for the database")
        server.start()
        assert command.process.wait(180) == 0, command.text
    finally:
        command.stop()
    assert_completed_cleanly(command, server.url, trials_over=2)


def test_an_idle_worker_waits_through_a_restart_then_takes_a_queued_run(server):
    open_store(server.url, cached=False).engine.dispose()  # the tables, before the worker polls
    worker = studio(server.url, "worker", "--max-runs", "1", "--poll-seconds", "0.2")
    try:
        wait_until(lambda: worker.said("live") or worker.said("worker"), timeout=120,
                   message="the worker to start")
        server.stop()
        wait_until(lambda: worker.said("trying again"), timeout=60,
                   message="the worker to wait for the database")
        server.start()
        queue_example(server.url, iterations=1)
        assert worker.process.wait(180) == 0, worker.text
    finally:
        worker.stop()
    assert_completed_cleanly(worker, server.url)


def test_a_worker_running_a_run_waits_through_a_restart_and_completes_it(server):
    queue_example(server.url, iterations=3)
    worker = studio(server.url, "worker", "--max-runs", "1", "--poll-seconds", "0.2")
    try:
        wait_until(lambda: trial_count(server.url) >= 2, timeout=120, message="trials stored")
        server.stop()
        wait_until(lambda: worker.said("trying again"), timeout=60,
                   message="the worker's run to wait for the database")
        server.start()
        assert worker.process.wait(180) == 0, worker.text
    finally:
        worker.stop()
    assert_completed_cleanly(worker, server.url, trials_over=2)


def test_a_worker_started_while_postgres_is_down_waits_then_takes_a_queued_run(server):
    open_store(server.url, cached=False).engine.dispose()  # the tables exist; the server goes
    server.stop()
    worker = studio(server.url, "worker", "--max-runs", "1", "--poll-seconds", "0.2")
    try:
        wait_until(lambda: worker.said("waiting for the database"), timeout=120,
                   message="the worker to wait for its database")
        assert worker.process.poll() is None, worker.text
        server.start()
        wait_until(lambda: worker.said("takes runs from queue"), timeout=60,
                   message="the worker to open the database once it answers")
        queue_example(server.url, iterations=1)
        assert worker.process.wait(180) == 0, worker.text
    finally:
        worker.stop()
    assert_completed_cleanly(worker, server.url)


def test_a_worker_waiting_for_its_database_stops_on_sigterm(server):
    server.stop()
    worker = studio(server.url, "worker")
    try:
        wait_until(lambda: worker.said("waiting for the database"), timeout=120,
                   message="the worker to wait for its database")
        worker.process.terminate()
        assert worker.process.wait(30) == 0, worker.text
    finally:
        worker.stop()
    assert worker.said("stopped before its database answered"), worker.text
