"""PostgreSQL restarted in the middle of a run and under an idle worker, with real processes: a
throwaway server of the test's own (initdb + pg_ctl on a free port), never the shared one."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from studio.model.records import RunStatus
from studio.store import open_store
from tests.helpers import ROOT, wait_until

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


class Studio:
    """A `studio` command in its own process, its stderr collected line by line."""

    def __init__(self, url: str, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "STUDIO_DB_RETRY_SECONDS": "120"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "studio.cli", "--db", url, *args], cwd=ROOT, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def trial_count(url: str) -> int:
    store = open_store(url, cached=False)
    try:
        runs = store.list_runs()
        return store.count_trials(runs[0].id) if runs else 0
    finally:
        store.engine.dispose()


def test_a_run_waits_through_a_postgres_restart_and_completes(server):
    studio = Studio(server.url, "run", str(ROOT / "examples/haiku_scripted.yaml"),
                    "--max-iterations", "3")
    try:
        wait_until(lambda: trial_count(server.url) >= 2, timeout=120, message="trials stored")
        server.stop()
        wait_until(lambda: studio.said("trying again"), timeout=60,
                   message="the run to wait for the database")
        server.start()
        assert studio.process.wait(180) == 0, "".join(studio.lines)
    finally:
        studio.stop()
    assert not studio.said("Traceback"), "".join(studio.lines)
    store = open_store(server.url, cached=False)
    run = store.list_runs()[0]
    assert run.status is RunStatus.COMPLETED and store.count_trials(run.id) > 2
    store.engine.dispose()


def test_an_idle_worker_waits_through_a_restart_then_takes_a_queued_run(server):
    open_store(server.url, cached=False).engine.dispose()  # the tables, before the worker polls
    worker = Studio(server.url, "worker", "--max-runs", "1", "--poll-seconds", "0.2")
    try:
        wait_until(lambda: worker.said("live") or worker.said("worker"), timeout=120,
                   message="the worker to start")
        server.stop()
        wait_until(lambda: worker.said("trying again"), timeout=60,
                   message="the worker to wait for the database")
        server.start()
        queued = subprocess.run(
            [sys.executable, "-m", "studio.cli", "--db", server.url, "queue",
             str(ROOT / "examples/haiku_scripted.yaml"), "--max-iterations", "1"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
            text=True, timeout=120)
        assert queued.returncode == 0, queued.stderr
        assert worker.process.wait(180) == 0, "".join(worker.lines)
    finally:
        worker.stop()
    assert not worker.said("Traceback"), "".join(worker.lines)
    store = open_store(server.url, cached=False)
    assert store.list_runs()[0].status is RunStatus.COMPLETED
    store.engine.dispose()


def test_a_worker_running_a_run_waits_through_a_restart_and_completes_it(server):
    queued = subprocess.run(
        [sys.executable, "-m", "studio.cli", "--db", server.url, "queue",
         str(ROOT / "examples/haiku_scripted.yaml"), "--max-iterations", "3"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=120)
    assert queued.returncode == 0, queued.stderr
    worker = Studio(server.url, "worker", "--max-runs", "1", "--poll-seconds", "0.2")
    try:
        wait_until(lambda: trial_count(server.url) >= 2, timeout=120, message="trials stored")
        server.stop()
        wait_until(lambda: worker.said("trying again"), timeout=60,
                   message="the worker's run to wait for the database")
        server.start()
        assert worker.process.wait(180) == 0, "".join(worker.lines)
    finally:
        worker.stop()
    assert not worker.said("Traceback"), "".join(worker.lines)
    store = open_store(server.url, cached=False)
    run = store.list_runs()[0]
    assert run.status is RunStatus.COMPLETED and store.count_trials(run.id) > 2
    store.engine.dispose()


def test_a_worker_started_while_postgres_is_down_waits_then_takes_a_queued_run(server):
    open_store(server.url, cached=False).engine.dispose()  # the tables exist; the server goes
    server.stop()
    worker = Studio(server.url, "worker", "--max-runs", "1", "--poll-seconds", "0.2")
    try:
        wait_until(lambda: worker.said("waiting for the database"), timeout=120,
                   message="the worker to wait for its database")
        assert worker.process.poll() is None, "".join(worker.lines)
        server.start()
        wait_until(lambda: worker.said("takes runs from queue"), timeout=60,
                   message="the worker to open the database once it answers")
        queued = subprocess.run(
            [sys.executable, "-m", "studio.cli", "--db", server.url, "queue",
             str(ROOT / "examples/haiku_scripted.yaml"), "--max-iterations", "1"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
            text=True, timeout=120)
        assert queued.returncode == 0, queued.stderr
        assert worker.process.wait(180) == 0, "".join(worker.lines)
    finally:
        worker.stop()
    assert not worker.said("Traceback"), "".join(worker.lines)
    store = open_store(server.url, cached=False)
    assert store.list_runs()[0].status is RunStatus.COMPLETED
    store.engine.dispose()


def test_a_worker_waiting_for_its_database_stops_on_sigterm(server):
    server.stop()
    worker = Studio(server.url, "worker")
    try:
        wait_until(lambda: worker.said("waiting for the database"), timeout=120,
                   message="the worker to wait for its database")
        worker.process.terminate()
        assert worker.process.wait(30) == 0, "".join(worker.lines)
    finally:
        worker.stop()
    assert worker.said("stopped before its database answered"), "".join(worker.lines)
