"""AgentExecutor.execute_agent: gepa-adk's executor protocol on the real ADK runner and LiteLLM
(scripted models)."""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.genai import types
from pydantic import BaseModel

from studio.model.errors import ConfigError
from studio.runtime.execution import AgentExecutor
from studio.runtime.protocol import ExecutionStatus
from studio.runtime.providers import litellm_model


def mirror_agent(script, instruction: str = "Be brief.") -> LlmAgent:
    """An agent whose model answers with the first line of its system instruction."""
    model = script(lambda request: request.system.split("\n")[0])
    return LlmAgent(name="mirror", model=litellm_model(model), instruction=instruction)


def run(executor: AgentExecutor, agent, text: str = "go", **kwargs):
    return asyncio.run(executor.execute_agent(agent, text, **kwargs))


def test_success_fills_gepa_adks_fields(script):
    result = run(AgentExecutor(), mirror_agent(script))
    assert result.status is ExecutionStatus.SUCCESS and result.error_message is None
    assert result.extracted_value == "Be brief." and result.session_id
    assert result.execution_time_seconds > 0
    assert result.captured_events[-1] == {"author": "mirror", "type": "text", "text": "Be brief."}


def test_instruction_override_applies_to_this_run_only(script):
    executor, agent = AgentExecutor(), mirror_agent(script)
    assert run(executor, agent, instruction_override="Be formal.").extracted_value == "Be formal."
    assert run(executor, agent).extracted_value == "Be brief."
    assert agent.instruction == "Be brief."


def test_output_schema_override_reaches_the_model(script):
    class Verdict(BaseModel):
        label: str

    model = script(lambda request: {"label": ",".join(sorted(request.json_schema["properties"]))})
    agent = LlmAgent(name="classifier", model=litellm_model(model), instruction="Classify.")
    result = run(AgentExecutor(), agent, output_schema_override=Verdict)
    assert result.extracted_value == '{"label": "label"}' and agent.output_schema is None


def test_session_state_fills_placeholders(script):
    agent = mirror_agent(script, instruction="Improve: {component_text}")
    result = run(AgentExecutor(), agent, session_state={"component_text": "Be helpful."})
    assert result.extracted_value == "Improve: Be helpful."


def test_existing_session_shares_state_between_agents(script):
    executor = AgentExecutor()
    critic = mirror_agent(script, instruction="Judging {draft}.")

    async def two_agents():
        session = await executor.session_service.create_session(
            app_name="studio", user_id="studio", state={"draft": "a haiku"})
        return await executor.execute_agent(critic, "judge", existing_session_id=session.id)

    result = asyncio.run(two_agents())
    assert result.extracted_value == "Judging a haiku." and result.ok


def test_a_named_session_that_does_not_exist_is_created_with_the_state_and_kept(script):
    """gepa-adk's get-or-create: the first call creates the session named, holding
    ``session_state``; a later call joins it and keeps its state (its own ``session_state`` is
    not applied to a session that exists)."""
    executor = AgentExecutor()
    critic = mirror_agent(script, instruction="Judging {draft}.")

    async def two_calls():
        first = await executor.execute_agent(critic, "judge", existing_session_id="shared_1",
                                             session_state={"draft": "a haiku"})
        second = await executor.execute_agent(critic, "judge", existing_session_id="shared_1",
                                              session_state={"draft": "a limerick"})
        kept = await executor.session_service.get_session(app_name="studio", user_id="studio",
                                                          session_id="shared_1")
        return first, second, kept

    first, second, kept = asyncio.run(two_calls())
    assert first.ok and first.session_id == "shared_1"
    assert first.extracted_value == second.extracted_value == "Judging a haiku."
    assert kept.state == {"draft": "a haiku"} and len(kept.events) == 4


def test_input_content_is_the_message_when_given(script):
    model = script(lambda request: f"heard: {request.last_user}")
    agent = LlmAgent(name="ear", model=litellm_model(model), instruction="Listen.")
    content = types.Content(role="user", parts=[types.Part(text="from content")])
    result = run(AgentExecutor(), agent, "from text", input_content=content)
    assert result.extracted_value == "heard: from content"


def test_past_timeout_seconds_the_status_is_timeout(script):
    model = script(lambda request: "late", latency_s=0.5)
    agent = LlmAgent(name="slow", model=litellm_model(model), instruction="x")
    result = run(AgentExecutor(max_retries=0), agent, timeout_seconds=0.05)
    assert result.status is ExecutionStatus.TIMEOUT and result.extracted_value is None
    assert "timed out after 0.05s" in result.error_message and result.error is not None


def test_a_model_error_is_a_failed_result_not_an_exception(script):
    def down(request):
        raise ValueError("provider down")

    agent = LlmAgent(name="down", model=litellm_model(script(down)), instruction="x")
    result = run(AgentExecutor(max_retries=0), agent)
    assert result.status is ExecutionStatus.FAILED and "provider down" in result.error_message


@pytest.mark.parametrize("kwargs, where", [
    ({"instruction_override": 42}, "execute_agent.instruction_override"),
    ({"output_schema_override": {"type": "object"}}, "execute_agent.output_schema_override"),
    ({"input_content": "text, not Content"}, "execute_agent.input_content"),
    ({"session_state": ["not", "a", "dict"]}, "execute_agent.session_state"),
    ({"timeout_seconds": 0}, "execute_agent.timeout_seconds"),
])
def test_wrong_arguments_are_refused_naming_the_parameter(script, kwargs, where):
    with pytest.raises(ConfigError) as info:
        run(AgentExecutor(), mirror_agent(script), **kwargs)
    assert info.value.where == where


def test_an_override_on_a_workflow_agent_is_refused(script):
    workflow = SequentialAgent(name="pipeline", sub_agents=[mirror_agent(script)])
    with pytest.raises(ConfigError, match="'pipeline' is a SequentialAgent"):
        run(AgentExecutor(), workflow, instruction_override="Be formal.")
