"""Run engines to completion in-process (scripted models through ADK + LiteLLM)."""

from __future__ import annotations

import asyncio

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.worker import get_manager
from tests.helpers import wait_until


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

    def wait_for_pending(self, run_id, seen, timeout=30.0):
        """The first pending proposal of ``run_id`` not in ``seen`` (added to it)."""
        def unseen():
            pending = [p for p in self.store.proposals(run_id, status="pending")
                       if p.id not in seen]
            return pending[0] if pending else None

        proposal = wait_until(unseen, timeout, message=f"a new proposal at the gate of {run_id}")
        seen.add(proposal.id)
        return proposal


@pytest.fixture
def runner(store):
    return Runner(store)
