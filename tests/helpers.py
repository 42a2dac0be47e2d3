"""Builders and helpers shared by the tests (the scripted demo world:
studio.runtime.providers.demo)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from studio.critics.agent import SimpleCriticOutput
from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec, RunSpec
from studio.runtime.agents import build_agent
from studio.runtime.providers.scripted import (
    recorded_requests,
    register_script,
    unregister_script,
)
from tests import zygote

TOPICS = ["autumn leaves", "morning coffee", "city rain", "old bridge", "snow owl"]
BASE_INSTRUCTION = "Write a haiku about the given topic."


def trainset(n: int = 5) -> list[dict]:
    return [{"topic": t} for t in TOPICS[:n]]


def demo_spec(model: str = "scripted/demo", **updates) -> RunSpec:
    spec = RunSpec(
        agent=AgentSpec(name="writer", model=model, instruction=BASE_INSTRUCTION),
        critic=CriticSpec(name="rule_critic", agent=AgentSpec(name="critic", model=model)),
        reflection=ReflectionSpec(model=model),
    )
    return spec.model_copy(update=updates)


def writer(model: str = "scripted/demo", instruction: str = BASE_INSTRUCTION):
    return build_agent(AgentSpec(name="writer", model=model, instruction=instruction))


def critic(model: str = "scripted/demo"):
    return build_agent(AgentSpec(name="critic", model=model, instruction="Evaluate the haiku.",
                     output_schema=SimpleCriticOutput.model_json_schema()))


class ScriptedModels:
    """Scripted models registered for one test (the ``script`` fixture) and removed after it.

    ``script(reply)`` registers an auto-named model answering with ``reply`` (a function of the
    request, or a fixed reply); ``script("name", fn, latency_ms=...)`` registers a named one.
    Both return the LiteLLM model string (``scripted/<name>``).
    """

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, name_or_reply: Any, fn: Callable[[Any], Any] | None = None,
                 **kwargs: Any) -> str:
        if fn is None:
            name, reply = f"t_{uuid.uuid4().hex[:10]}", name_or_reply
            fn = reply if callable(reply) else (lambda _request: reply)
        else:
            name = name_or_reply
        self.names.append(name)
        return register_script(name, fn, **kwargs)

    def requests(self, model: str) -> list[Any]:
        """The requests a scripted model received, oldest first."""
        return recorded_requests(model.split("/", 1)[1])

    def remove_all(self) -> None:
        for name in self.names:
            unregister_script(name)


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, step: float = 0.05,
               message: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; return that value.

    Tests wait on a condition, never on a fixed sleep: on a loaded machine the condition still
    holds when it comes, and on a fast one the test does not wait longer than it must.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {message}")
        time.sleep(step)


ROOT = Path(__file__).resolve().parents[1]
STALE_SECONDS = "2.0"
"""Heartbeat age after which a killed worker's lease expires, in the worker processes tests
start (short, so a resume elsewhere does not wait 10 s)."""
HEARTBEAT_SECONDS = "0.2"
"""How often those processes beat: ten beats inside :data:`STALE_SECONDS`, so a live holder's
lease never looks stale to a second worker because a beat came a few milliseconds late (with
the default one-second beat against a one-second lease, a claim made just before a beat took
the run from a live worker on a busy machine)."""
LEASE_ENV = {"STUDIO_STALE_AFTER_SECONDS": STALE_SECONDS,
             "STUDIO_HEARTBEAT_SECONDS": HEARTBEAT_SECONDS}
"""Those lease settings, as the environment of the `studio run`, `resume` and `worker`
processes tests start: a dead worker's runs are taken over after 2 s, and a live one beats ten
times within that (never mistaken for dead)."""


class CliWorker:
    """The engine in its own process: `studio run`, then `studio resume` after a stop or a kill."""

    def __init__(self, url: str, project: Path) -> None:
        self.url, self.project = url, project
        self.process: zygote.Process | None = None
        self.run_id: str | None = None

    def _spawn(self, *args: str) -> zygote.Process:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **LEASE_ENV}
        return zygote.popen([sys.executable, "-m", "studio.cli", "--db", self.url, *args],
                                cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def start(self) -> str:
        self.process = self._spawn("run", str(self.project))
        line = wait_until(self.process.stderr.readline, timeout=60, message="the run to start")
        self.run_id = line.split()[1]
        return self.run_id

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.alive:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def resume(self) -> None:
        """Resume until this worker holds the run (a killed worker's lease must expire first;
        a refused resume exits and is started again)."""
        from studio.store import open_store

        store = open_store(self.url, cached=False)

        def claimed() -> bool:
            if self.process is None or self.process.poll() is not None:
                self.process = self._spawn("resume", self.run_id)
            return f":{self.process.pid}:" in (store.get_run(self.run_id).worker or "")

        try:
            wait_until(claimed, timeout=60, step=0.2, message="a worker to claim the run")
        finally:
            store.close()

    def wait_exit(self, timeout: float = 60) -> None:
        if self.process is not None:
            self.process.wait(timeout)


class QueueWorkerProcess:
    """`studio worker` in its own process, its log in a file (read it with :meth:`log`)."""

    def __init__(self, url: str, queue: str, folder: Path, *args: str) -> None:
        self.log_path = folder / f"worker-{uuid.uuid4().hex[:6]}.log"
        env = {**os.environ, "PYTHONPATH": str(ROOT), **LEASE_ENV}
        with open(self.log_path, "w") as log:
            self.process = zygote.popen(
                [sys.executable, "-m", "studio.cli", "--db", url, "worker", "--queue", queue,
                 "--poll-seconds", "0.1", *args],
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log)

    @property
    def pid(self) -> int:
        return self.process.pid

    def holds(self, run: Any) -> bool:
        """Whether this process is the run's worker (``host:pid:token``)."""
        return run.worker is not None and run.worker.split(":")[1] == str(self.pid)

    def log(self) -> str:
        return self.log_path.read_text()

    def send(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)

    def wait(self, timeout: float = 60) -> int:
        return self.process.wait(timeout)


PIPELINE_INSTRUCTIONS = {
    "outliner": "Outline the topic.",
    "writer": "Write a haiku from this outline: {outline}",
    "polisher": "Polish the haiku. Draft:\n{draft}",
}
PIPELINE_KEYS = {"outliner": "outline", "writer": "draft", "polisher": None}


def pipeline_agents(model: str = "scripted/pipeline") -> list[AgentSpec]:
    """The outline -> write -> polish world (studio.runtime.providers.demo.pipeline_reply)."""
    return [AgentSpec(name=name, model=model, instruction=text, output_key=PIPELINE_KEYS[name])
            for name, text in PIPELINE_INSTRUCTIONS.items()]


def pipeline_spec(model: str = "scripted/pipeline", **updates) -> RunSpec:
    spec = RunSpec(agents=pipeline_agents(model),
                   critic=CriticSpec(name="rule_critic", agent=AgentSpec(name="critic",
                                                                         model=model)),
                   reflection=ReflectionSpec(model=model), **updates)
    return spec


def postgres_url() -> str:
    """CI's PostgreSQL server (``STUDIO_TEST_PG_URL``): the test is skipped without one, except
    under ``STUDIO_REQUIRE_POSTGRES=1`` (CI), where a missing server fails it."""
    import pytest

    url = os.environ.get("STUDIO_TEST_PG_URL")
    if url:
        return url
    if os.environ.get("STUDIO_REQUIRE_POSTGRES") == "1":
        pytest.fail("STUDIO_REQUIRE_POSTGRES=1 but STUDIO_TEST_PG_URL is not set")
    pytest.skip("no PostgreSQL server configured (set STUDIO_TEST_PG_URL)")


def worker_postgres_url(url: str, worker: str | None) -> str:
    """The database of one pytest-xdist worker (``gw0``, ``gw1``…) on ``url``'s server: the
    base database's name with the worker's appended (``studio_ci`` -> ``studio_ci_gw0``), so
    parallel workers never drop each other's tables. Without a worker (a serial run), ``url``."""
    if not worker:
        return url
    from sqlalchemy.engine import make_url

    base = make_url(url)
    return base.set(database=f"{base.database}_{worker}").render_as_string(hide_password=False)


def create_postgres_database(url: str) -> None:
    """Create ``url``'s database if it is missing, through the server's ``postgres`` maintenance
    database with the same credentials (the role needs CREATEDB; .ci/run grants it)."""
    import psycopg
    from psycopg import sql
    from sqlalchemy.engine import make_url

    target = make_url(url)
    maintenance = target.set(drivername="postgresql", database="postgres")
    with psycopg.connect(maintenance.render_as_string(hide_password=False),
                         autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                    (target.database,)).fetchone()
        if not exists:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(
                sql.Identifier(target.database)))


def empty_postgres_store(url: str) -> Any:
    """A store on ``url`` with every studio table dropped first (each test starts empty)."""
    from sqlalchemy import create_engine

    from studio.store import open_store
    from studio.store import schema as tables
    from studio.store.connection import resolve_url

    engine = create_engine(resolve_url(url))
    tables.metadata.drop_all(engine)
    engine.dispose()
    return open_store(url, cached=False)


class StudioProcess:
    """A `studio` command in its own process (``env`` added to this one's), its stderr
    collected line by line."""

    def __init__(self, url: str, *args: str, **env: str) -> None:
        self.process = zygote.popen(
            [sys.executable, "-m", "studio.cli", "--db", url, *args], cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        """Kill it if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
