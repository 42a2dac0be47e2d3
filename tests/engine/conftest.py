"""Run engines to completion in-process (scripted models through ADK + LiteLLM)."""

from __future__ import annotations

import asyncio

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.worker import get_manager
from studio.model.records import ProposalStatus
from tests.helpers import postgres_url, wait_until


class Runner:
    def __init__(self, store):
        self.store = store

    def create(self, spec, trainset, valset=None, **config):
        return create_run(self.store, spec=spec, trainset=trainset, valset=valset,
                          config=EvolutionConfig(**config)).id

    def run(self, spec, trainset, valset=None, listeners=None, **config):
        """Create and run to the end in this thread; returns (run_id, stop_reason)."""
        run_id = self.create(spec, trainset, valset, **config)
        engine = build_engine(self.store, run_id, listeners=listeners)
        return run_id, asyncio.run(engine.run())

    def start(self, spec, trainset, valset=None, **config):
        """Create and start in the background run manager; returns (run_id, handle)."""
        run_id = self.create(spec, trainset, valset, **config)
        return run_id, get_manager(self.store).start(build_engine(self.store, run_id))

    def wait_for_pending(self, run_id, seen, timeout=20.0):
        """The next proposal (not in ``seen``) to reach the gate; adds it to ``seen``."""
        pending = wait_until(
            lambda: [p for p in self.store.proposals(run_id, status=ProposalStatus.PENDING)
                     if p.id not in seen],
            timeout=timeout, message="a proposal reaches the gate")
        seen.add(pending[0].id)
        return pending[0]


@pytest.fixture
def runner(store):
    return Runner(store)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """A database for tests with real worker processes: SQLite, and CI's PostgreSQL server
    (``STUDIO_TEST_PG_URL``; skipped without one, never skipped in CI)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/studio.db"
    return postgres_url()
