"""AgentExecutor through the real ADK runner and LiteLLM (scripted models)."""

from __future__ import annotations

import asyncio

import litellm
import pytest
from google.adk.agents import LlmAgent

from studio.model.errors import ConfigError
from studio.runtime.agents import load_agent
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers import litellm_model
from studio.runtime.providers.scripted import ScriptedReply, ToolCall
from tests.helpers import writer


def test_output_and_trace_of_a_plain_run():
    result = AgentExecutor().execute_sync(writer(), "topic: city rain", state={"topic": "x"})
    assert result.ok and "drifts by" in result.output
    assert result.trace["usage"]["total_tokens"] > 0
    assert result.trace["events"][-1]["type"] == "text"
    assert result.latency_s > 0 and result.trace["latency_s"] > 0


def lookup(city: str) -> dict:
    """Weather for a city."""
    return {"city": city, "temp": 21}


def test_trace_records_tool_calls_with_args_and_results(script):
    def reply(request):
        if "[tool result]" in request.prompt_text:
            return "It is 21 degrees in Paris."
        return ScriptedReply(tool_calls=(ToolCall("lookup", {"city": "Paris"}),))

    agent = LlmAgent(name="weather", model=litellm_model(script("weather", reply)),
                     instruction="Answer.", tools=[lookup])
    result = AgentExecutor().execute_sync(agent, "weather in Paris?")
    assert result.output == "It is 21 degrees in Paris."
    assert result.trace["tool_calls"] == [{"id": "call_0_lookup", "name": "lookup",
                                           "args": {"city": "Paris"},
                                           "result": {"city": "Paris", "temp": 21}}]
    assert [e["type"] for e in result.trace["events"]] == ["tool_call", "tool_result", "text"]


def test_state_fills_instruction_placeholders(script):
    script("mirror", lambda request: request.system.split("\n")[0])
    agent = LlmAgent(name="m", model=litellm_model("scripted/mirror"),
                     instruction="Topic is {topic}.")
    result = AgentExecutor().execute_sync(agent, "go", state={"topic": "owls"})
    assert result.output == "Topic is owls."


def test_rate_limits_are_retried_with_backoff(script):
    calls = []

    def flaky(request):
        calls.append(1)
        if len(calls) < 3:
            raise litellm.RateLimitError(message="slow down", model="scripted/flaky",
                                         llm_provider="scripted")
        return "finally"

    agent = writer(script("flaky", flaky))
    result = AgentExecutor(backoff_s=0.01).execute_sync(agent, "x")
    assert result.output == "finally" and result.attempts == 3


def test_a_retrys_backoff_holds_no_call_slot(script):
    """One slot: while a rate-limited call sleeps before its retry, another call runs in the
    slot (a reflection is not kept waiting behind a sleep); the retry then gets it back."""
    order = []

    def flaky(request):
        order.append("flaky")
        if len(order) == 1:
            raise litellm.RateLimitError(message="slow down", model="scripted/flaky2",
                                         llm_provider="scripted")
        return "finally"

    def other(request):
        order.append("other")
        return "done"

    executor = AgentExecutor(max_concurrency=1, backoff_s=0.5)

    async def both():
        first = asyncio.ensure_future(executor.execute(writer(script("flaky2", flaky)), "x"))
        while not order:  # the first attempt has failed and sleeps before its retry
            await asyncio.sleep(0.01)
        second = await executor.execute(writer(script("other", other)), "y")
        return await first, second

    flaky_result, other_result = asyncio.run(both())
    assert order == ["flaky", "other", "flaky"]
    assert flaky_result.output == "finally" and flaky_result.attempts == 2
    assert other_result.output == "done"
    assert flaky_result.latency_s >= 0.5  # counted from its first slot, its backoff included


def test_persistent_5xx_becomes_an_error_result_not_an_exception(script):
    def down(request):
        raise litellm.InternalServerError(message="boom", model="scripted/down",
                                          llm_provider="scripted")

    result = AgentExecutor(backoff_s=0.01, max_retries=2).execute_sync(writer(script("down",
                                                                                     down)), "x")
    assert not result.ok and result.attempts == 3
    assert "InternalServerError" in result.error and "boom" in result.error
    assert result.output == ""


def test_timeout_becomes_an_error_result(script):
    script("sleepy", lambda request: "late", latency_s=0.5)
    executor = AgentExecutor(timeout_s=0.1, max_retries=1, backoff_s=0.01)
    result = executor.execute_sync(writer("scripted/sleepy"), "x")
    assert result.error.startswith("timed out after 0.1s (on attempt 2 of 2, after 1 retry and ")
    assert "earlier attempts: timed out after 0.1s" in result.error and result.attempts == 2


def test_non_retryable_errors_fail_fast(script):
    def bad(request):
        raise litellm.BadRequestError(message="bad request", model="m", llm_provider="scripted")

    result = AgentExecutor(backoff_s=0.01).execute_sync(writer(script("bad", bad)), "x")
    assert result.attempts == 1 and "bad request" in result.error


def test_concurrency_limit_is_respected(script):
    in_flight, peak = [0], [0]

    async def run():
        executor = AgentExecutor(max_concurrency=2)
        agent = writer(script("tracked", lambda request: "ok", latency_s=0.05))
        original = executor._run_once

        async def counting(*args):
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            try:
                return await original(*args)
            finally:
                in_flight[0] -= 1

        executor._run_once = counting
        await asyncio.gather(*(executor.execute(agent, str(i)) for i in range(6)))

    asyncio.run(run())
    assert peak[0] == 2


def test_api_keys_never_appear_in_errors(script, monkeypatch):
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    def leaky(request):
        raise litellm.BadRequestError(message=f"invalid key {secret}", model="m",
                                      llm_provider="scripted")

    result = AgentExecutor().execute_sync(writer(script("leaky", leaky)), "x")
    assert secret not in result.error and "***" in result.error


def test_executor_rejects_bad_limits():
    with pytest.raises(ValueError, match="max_concurrency must be >= 1, got 0"):
        AgentExecutor(max_concurrency=0)


def test_load_agent_by_module_attribute(tmp_path, monkeypatch):
    (tmp_path / "my_agents.py").write_text(
        "from studio.model.records import AgentSpec\n"
        "from studio.runtime.agents import build_agent\n"
        "writer = build_agent(AgentSpec(name='w', model='scripted/demo', instruction='hi'))\n"
        "not_agent = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_agent("my_agents:writer").name == "w"
    with pytest.raises(ConfigError, match="not an ADK agent"):
        load_agent("my_agents:not_agent")
    with pytest.raises(ConfigError, match="has no attribute"):
        load_agent("my_agents:missing")
    with pytest.raises(ConfigError, match="cannot import"):
        load_agent("no_such_module_xyz:a")
    with pytest.raises(ConfigError, match="package.module:attribute"):
        load_agent("just_a_name")
