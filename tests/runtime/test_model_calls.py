"""What real providers need at each model call (:mod:`studio.runtime.providers.calls`), through
the whole real path: an OpenAI-compatible server on 127.0.0.1 that LiteLLM calls as
``openai/gpt-4o-mini`` inside ADK, in real runs on a real store.

- a 429 with ``Retry-After`` is retried at the model call (the same request, after the wait)
  and the run goes on, with the executor's own retries off;
- each trial is priced from LiteLLM's cost map, summed per candidate and run; the scripted
  model costs 0;
- a per-model rate limit holds across two runs of one process.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import litellm
import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.worker import get_manager
from studio.engine.loop.engine import RunFailed
from studio.model.config import RateLimit
from studio.model.costs import format_cost
from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec, RunStatus
from studio.runtime.providers.calls import (
    MAX_RETRY_AFTER_SECONDS,
    SlidingWindowLimiter,
    clear_rate_limits,
    retry_after_seconds,
)
from tests.helpers import BASE_INSTRUCTION, demo_spec, trainset
from tests.openai_server import Raw, local_openai

MODEL = "openai/gpt-4o-mini"
"""A model with a price in LiteLLM's local cost map."""
VERDICT = json.dumps({"score": 0.8, "feedback": "good"})
SLOW_DOWN = Raw({"error": {"message": "slow down", "type": "rate_limit_error"}}, status=429,
                headers={"Retry-After": "1"})


@pytest.fixture
def hosted(monkeypatch):
    """``hosted(reply)``: a local server for ``openai/...`` models with a key in the env."""
    contexts = []

    def start(reply):
        context = local_openai(reply)
        server = context.__enter__()
        contexts.append(context)
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
        return server

    yield start
    for context in contexts:
        context.__exit__(None, None, None)
    clear_rate_limits()


def writer_or_judge(body) -> str:
    """The critic asks for JSON (``response_format``); the writer for text."""
    return VERDICT if body.get("response_format") else "a haiku about the sea"


def hosted_spec(model: str = MODEL):
    return demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model=model, instruction=BASE_INSTRUCTION),
        "critic": CriticSpec(name="judge", agent=AgentSpec(name="judge", model=model))})


def baseline(store, spec, n: int = 2, **config) -> str:
    values = {"max_iterations": 0, "max_retries": 0, "call_timeout_seconds": 30} | config
    run_id = create_run(store, spec=spec, trainset=trainset(n),
                        config=EvolutionConfig(**values)).id
    asyncio.run(build_engine(store, run_id).run())
    return run_id


@pytest.mark.slow  # the second the server asks for, and a first HTTP call
def test_a_429_with_retry_after_is_retried_at_the_model_call_and_the_run_goes_on(store, hosted):
    answered = []

    def reply(body):
        if not answered:
            answered.append("429")
            return SLOW_DOWN
        return writer_or_judge(body)

    server = hosted(reply)
    started = time.monotonic()
    run_id = baseline(store, hosted_spec(), n=2, max_concurrency=1)  # one request at a time
    assert time.monotonic() - started >= 1.0  # the wait the server asked for
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    trials = store.trials(run_id)
    assert [(t.error, t.score) for t in trials] == [(None, 0.8), (None, 0.8)]  # max_retries=0
    assert server.requests[0] == server.requests[1]  # the same request, sent again
    assert len(server.requests) == 1 + 2 * 2  # the retry, then writer and judge per example
    assert all(t.trace["model_calls"] == 1 for t in trials)  # the agent ran once each


def test_each_trial_is_priced_from_litellms_cost_map_and_summed(store, hosted):
    hosted(writer_or_judge)
    run_id = baseline(store, hosted_spec(), n=3)
    trials = store.trials(run_id)
    # the local server reports 1 prompt and 1 completion token per call; two calls a trial
    price = sum(litellm.cost_per_token(model=MODEL, prompt_tokens=1, completion_tokens=1))
    assert price > 0
    assert [t.cost_usd for t in trials] == pytest.approx([2 * price] * 3)
    assert store.candidate_costs(run_id) == pytest.approx({trials[0].candidate_id: 6 * price})
    assert store.run_costs([run_id, "no-such-run"]) == pytest.approx(
        {run_id: 6 * price, "no-such-run": 0.0})


def test_the_scripted_model_costs_nothing(store):
    run_id = baseline(store, demo_spec(), n=2)
    assert [t.cost_usd for t in store.trials(run_id)] == [0.0, 0.0]
    assert store.run_costs([run_id]) == {run_id: 0.0}
    assert format_cost(0.0) == "$0"


@pytest.mark.slow
def test_a_rate_limit_holds_across_two_runs_of_one_process(store, hosted):
    starts: list[float] = []
    lock = threading.Lock()

    def reply(body):
        with lock:
            starts.append(time.monotonic())
        return "a haiku about the sea"

    hosted(reply)
    limit = RateLimit(requests=3, per_seconds=1.0)
    spec = hosted_spec().model_copy(update={"critic": demo_spec().critic})  # judged offline
    baseline(store, spec, n=1)  # the HTTP client's first call (seconds) before the measure
    starts.clear()
    config = EvolutionConfig(max_iterations=0, max_retries=0, max_concurrency=4,
                             rate_limits={MODEL: limit})
    manager = get_manager(store)
    runs = [create_run(store, spec=spec, trainset=trainset(4), config=config).id
            for _ in range(2)]
    handles = [manager.start(build_engine(store, run_id)) for run_id in runs]
    for handle in handles:
        handle.wait(60)
    assert [store.get_run(r).status for r in runs] == [RunStatus.COMPLETED] * 2
    assert len(starts) == 8
    # Measured where the provider sees them: the 4th call may leave a window after the 1st,
    # the 7th two windows after. A call's way to the server only delays it, so the bounds hold
    # whatever the load, less the first call's own way there (allowed up to half a second).
    arrived = sorted(starts)
    assert arrived[3] - arrived[0] >= 0.5, arrived
    assert arrived[6] - arrived[0] >= 1.5, arrived


def test_the_limiter_books_starts_a_window_apart():
    now = [100.0]
    limiter = SlidingWindowLimiter(RateLimit(requests=2, per_seconds=10), clock=lambda: now[0])
    assert [limiter.reserve(), limiter.reserve(), limiter.reserve()] == [0.0, 0.0, 10.0]
    now[0] = 111.0
    assert limiter.reserve() == 0.0  # the first two left the window


def test_rate_limits_read_as_requests_per_minute_or_a_window():
    config = EvolutionConfig(rate_limits={MODEL: 500, "gemini/x": {"requests": 2,
                                                                  "per_seconds": 1}})
    assert config.rate_limits == {MODEL: RateLimit(requests=500, per_seconds=60),
                                  "gemini/x": RateLimit(requests=2, per_seconds=1)}
    with pytest.raises(Exception, match="rate_limits"):
        EvolutionConfig(rate_limits={MODEL: 0})


@pytest.mark.parametrize("status, headers, wait", [
    (429, {"retry-after": "2"}, 2.0),
    (503, {"retry-after-ms": "1500"}, 1.5),
    (429, {}, None),  # no wait named: the executor's own retries decide
    (500, {"retry-after": "2"}, None),  # not a 429 or 503
])
def test_the_wait_a_provider_names_is_read(status, headers, wait):
    import httpx

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, headers=headers, request=request)
    error = litellm.RateLimitError(message="x", llm_provider="openai", model=MODEL,
                                   response=response)
    error.status_code = status
    assert retry_after_seconds(error) == wait


def test_a_wait_longer_than_the_cap_is_not_waited(store, hosted):
    too_long = Raw(SLOW_DOWN.body, status=429,
                   headers={"Retry-After": str(int(MAX_RETRY_AFTER_SECONDS) + 60)})
    server = hosted(lambda body: too_long)
    started = time.monotonic()
    with pytest.raises(RunFailed, match="RateLimitError"):  # failed at once, not waited for
        baseline(store, hosted_spec(), n=1, max_retries=0)
    assert time.monotonic() - started < 30
    assert len(server.requests) == 1


def writer_judge_or_reflection(body) -> str:
    """The reflection agent is asked to 'Propose the improved component text now.'"""
    if "Propose the improved component text now." in json.dumps(body.get("messages")):
        return "Write a haiku about the sea; name one colour."
    return writer_or_judge(body)


def test_the_reflections_calls_are_priced_with_its_proposal_and_in_the_runs_cost(store, hosted):
    server = hosted(writer_judge_or_reflection)
    spec = hosted_spec().model_copy(update={"reflection": ReflectionSpec(model=MODEL)})
    run_id = baseline(store, spec, n=2, max_iterations=1, minibatch_size=2)
    price = sum(litellm.cost_per_token(model=MODEL, prompt_tokens=1, completion_tokens=1))
    reflections = sum("Propose the improved component text now." in json.dumps(r.get("messages"))
                      for r in server.requests)
    assert reflections == 1
    [proposal] = store.proposals(run_id)
    assert proposal.text.startswith("Write a haiku about the sea")
    assert proposal.cost_usd == pytest.approx(price)  # one reflection call, priced
    trials_cost = sum(t.cost_usd for t in store.trials(run_id))
    assert trials_cost == pytest.approx(price * (len(server.requests) - reflections))
    assert store.run_costs([run_id]) == pytest.approx({run_id: trials_cost + price})
