"""``max_concurrency`` bounds a run's model calls whoever makes them (issue 22's call slots).

A critic agent of the run judges through the run's executor: every call (agent, critic,
reflection) waits on the executor's one limit, most urgent first, and chains are not limited
again. A critic that judges elsewhere (its own executor, an evaluator, an LLM judge's shared
executor) is not counted by that limit, so its chains are: at most ``max_concurrency`` chains
begun and not ended, each with at most one call in flight."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from studio.critics.protocol import Sample
from studio.engine import build_engine
from studio.engine.scoring.batch import WAITING_CHAINS_PER_SLOT, chain_limit
from studio.model.feedback import Feedback
from studio.runtime.providers.scripted import recorded_requests, request_mark
from studio.runtime.slots import GATING, VALIDATING
from tests.helpers import demo_spec, trainset

VALSET = [{"topic": f"validation topic {i}"} for i in range(6)]


class OwnCallsCritic:
    """A critic with model calls of its own (a judge with its own client): it sleeps like a
    model call and records, at each start, how many chains have begun (the writer's requests)
    and how many it has finished."""

    name = "own calls"

    def __init__(self, writer: str, mark: int) -> None:
        self.writer, self.mark = writer, mark
        self.finished = 0
        self.begun_minus_ended: list[int] = []

    async def assess(self, sample: Sample) -> Feedback:
        begun = len(recorded_requests(self.writer.split("/", 1)[1], since=self.mark))
        self.begun_minus_ended.append(begun - self.finished)
        await asyncio.sleep(0.3)  # long beside the agent's call: later chains begin meanwhile
        self.finished += 1
        return Feedback(score=0.5, text="fine")


@pytest.mark.slow
def test_a_critic_outside_the_runs_executor_keeps_the_run_within_max_concurrency(
        runner, store, script):
    writer = script("the same reply", latency_s=0.05)
    reflector = script("Write about the topic. (v2)", latency_s=0.01)
    spec = demo_spec(writer).model_copy(update={"reflection": demo_spec(reflector).reflection})
    run_id = runner.create(spec, trainset(4), VALSET, max_iterations=2, minibatch_size=2,
                           max_concurrency=2, seed=3)
    critic = OwnCallsCritic(writer, request_mark())
    engine = build_engine(store, run_id, critic=critic)
    assert engine.ctx.critic is critic
    assert asyncio.run(engine.run()) == "max_iterations"
    assert len(critic.begun_minus_ended) >= len(VALSET)
    # each chain's critic starts after its agent's request: begun - ended counts itself
    assert max(critic.begun_minus_ended) <= 2, critic.begun_minus_ended


def test_the_runs_own_critic_agent_judges_through_the_runs_executor(runner, store, script):
    """Its calls wait on the executor's limit: a chain a gate waits for holds nothing else, a
    validation chain a place among WAITING_CHAINS_PER_SLOT per call slot."""
    writer = script("the same reply")
    run_id = runner.create(demo_spec(writer), trainset(2), max_iterations=1, max_concurrency=3)
    ctx = build_engine(store, run_id).ctx
    assert ctx.critic.executor is ctx.executor and ctx.critic_on_run_executor

    async def limits():
        return (chain_limit(ctx, (GATING, 1)), chain_limit(ctx, (VALIDATING, 1)),
                chain_limit(ctx, (VALIDATING, 2)))

    gate, validation, later = asyncio.run(limits())
    assert isinstance(gate, contextlib.nullcontext)
    assert validation is later and validation.size == WAITING_CHAINS_PER_SLOT * 3


def test_a_large_validation_never_prepares_every_example_at_once(runner, store, script):
    """One call slot, twelve validation examples: while the seed's validation runs, at most one
    other admitted chain waits for the slot (two per slot admitted), not all eleven."""
    waiting: list[int] = []
    slots = {}

    def writer_reply(request):
        if "validation topic" in request.prompt_text:
            waiting.append(slots["calls"]().waiting)
        return "the same reply"

    writer = script(writer_reply)
    critic = script({"score": 0.5, "feedback": "fine"})
    spec = demo_spec(writer).model_copy(update={"critic": demo_spec(critic).critic})
    valset = [{"topic": f"validation topic {i}"} for i in range(12)]
    run_id = runner.create(spec, trainset(2), valset, max_iterations=1, max_concurrency=1,
                           seed=2)
    engine = build_engine(store, run_id)
    slots["calls"] = engine.ctx.executor.call_slots
    assert asyncio.run(engine.run()) == "max_iterations"
    assert len(waiting) >= len(valset)
    assert max(waiting) <= WAITING_CHAINS_PER_SLOT - 1, waiting
