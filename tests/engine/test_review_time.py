"""The engine's ETA is machine time: the time a run waits at a gate for a person is not in it
(the studio adds the person's expected review time from recorded reviews)."""

from __future__ import annotations

import time
import types

from studio.engine import decide
from studio.engine.loop import engine as loop
from studio.model.records import EventKind
from tests.helpers import demo_spec, trainset

GATE_SECONDS = 10_000.0


def test_waiting_at_the_gate_is_not_in_the_engines_eta(runner, monkeypatch):
    """A fake clock jumps by GATE_SECONDS at each gate: if the wait counted, the ETA after the
    first iteration would be at least that long."""
    offset = [0.0]
    clock = types.SimpleNamespace(monotonic=lambda: time.monotonic() + offset[0])
    monkeypatch.setattr(loop, "time", clock)
    real_wait = loop.await_decision

    async def slow_person(ctx, proposal_id):
        offset[0] += GATE_SECONDS
        decide(proposal_id, "accept", author="ana", store=ctx.store)
        return await real_wait(ctx, proposal_id)

    monkeypatch.setattr(loop, "await_decision", slow_person)
    run_id, reason = runner.run(demo_spec(), trainset(3), max_iterations=3, minibatch_size=2,
                                review="review", seed=3)
    assert reason == "max_iterations"
    etas = [e.payload["eta_seconds"] for e in runner.store.events(run_id, kind=EventKind.PROGRESS)
            if e.payload.get("eta_seconds") is not None and e.iteration < 3]
    assert etas and offset[0] >= GATE_SECONDS
    assert all(eta < GATE_SECONDS for eta in etas)
