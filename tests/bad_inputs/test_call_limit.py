"""ADK's limit on model calls per invocation (``RunConfig.max_llm_calls``: 500 by default, or
ADK's own ``ADK_MAX_LLM_CALLS``): an agent whose model keeps calling a tool reaches it, and the
run's error names the limit and blames the agent, never the critic (issue 20). The test lowers
the limit the way ADK lets a user (its environment variable), so it makes 40 calls, not 500."""

from __future__ import annotations

import asyncio

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.loop.engine import RunFailed
from studio.model.records import AgentSpec
from studio.runtime.providers.scripted import ScriptedReply, ToolCall
from tests.helpers import demo_spec, trainset

pytestmark = pytest.mark.slow  # 40 model calls through the real ADK runner

LIMIT = 40


def test_an_agent_that_never_stops_calling_tools_hits_adk_s_limit_and_is_blamed(
        store, script, monkeypatch):
    monkeypatch.setenv("ADK_MAX_LLM_CALLS", str(LIMIT))
    calls = []

    def forever(request):
        calls.append(request)
        return ScriptedReply(tool_calls=(ToolCall("isleap", {"year": 2024}),))

    spec = demo_spec().model_copy(update={"agent": AgentSpec(
        name="writer", model=script("tool_forever", forever), instruction="Answer.",
        tools=["calendar:isleap"])})
    run_id = create_run(store, spec=spec, trainset=trainset(1), config=EvolutionConfig(
        max_iterations=0, max_retries=0, call_timeout_seconds=600)).id
    with pytest.raises(RunFailed) as failed:
        asyncio.run(build_engine(store, run_id).run())
    [trial] = store.trials(run_id)
    assert trial.score is None
    assert "more model calls on one example than ADK allows" in trial.error
    assert f"`{LIMIT}`" in trial.error and "the critic was not called" in trial.error
    assert "ADK_MAX_LLM_CALLS" in trial.error  # how to raise it
    error = str(failed.value)
    assert error.startswith("the agent failed on every baseline example (1)")
    assert "more model calls on one example than ADK allows" in error
    assert "critic's model" not in error
    assert len(calls) == LIMIT
