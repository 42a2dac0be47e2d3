"""gepa-adk's CriticScorer scenarios, ported: a gepa-adk user changes imports, nothing else.

Everything below is imported from ``studio`` under gepa-adk's names. The executor is the seam
under test, so most tests inject a small executor of their own (as gepa-adk's unit tests do);
the last ones run the studio's real AgentExecutor on scripted models behind LiteLLM.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.sessions import InMemorySessionService

from studio import (
    AgentExecutor,
    AgentExecutorProtocol,
    CriticOutputParseError,
    CriticScorer,
    ExecutionResult,
    ExecutionStatus,
    MissingScoreFieldError,
    ScoringError,
    SimpleCriticOutput,
)
from studio.critics.feedback import judge_sample
from studio.critics.protocol import Sample
from studio.runtime.providers import litellm_model


@dataclass
class RecordingExecutor:
    """Implements AgentExecutorProtocol: answers each call with the next queued result."""

    results: list[Any]
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def execute_agent(self, agent, input_text, *, input_content=None,
                            instruction_override=None, output_schema_override=None,
                            session_state=None, existing_session_id=None, timeout_seconds=300):
        self.calls.append({"agent": agent, "input_text": input_text,
                           "existing_session_id": existing_session_id})
        return self.results[min(len(self.calls), len(self.results)) - 1]


def success(reply: str | None, session_id: str = "s1") -> ExecutionResult:
    return ExecutionResult(status=ExecutionStatus.SUCCESS, session_id=session_id,
                           extracted_value=reply)


def critic_agent(model: str = "scripted/demo") -> LlmAgent:
    return LlmAgent(name="quality_critic", model=litellm_model(model),
                    instruction="Evaluate response quality...", output_schema=SimpleCriticOutput)


def scorer_replying(*results: Any) -> tuple[CriticScorer, RecordingExecutor]:
    executor = RecordingExecutor(list(results))
    return CriticScorer(critic_agent=critic_agent(), executor=executor, app_name="test_app"), \
        executor


def score(scorer: CriticScorer, **kwargs: Any) -> tuple[float, dict[str, Any]]:
    return asyncio.run(scorer.async_score(**{"input_text": "test", "output": "test", **kwargs}))


# --------------------------------------------------------------------------- the protocol


def test_execution_status_members_are_gepa_adks_strings():
    assert [s.value for s in ExecutionStatus] == ["success", "failed", "timeout"]
    assert ExecutionStatus.SUCCESS == "success" and isinstance(ExecutionStatus.TIMEOUT, str)


def test_execution_result_fields_and_defaults_follow_gepa_adk():
    result = ExecutionResult(status=ExecutionStatus.SUCCESS, session_id="sess_123")
    assert (result.extracted_value, result.error_message, result.execution_time_seconds,
            result.captured_events) == (None, None, 0.0, None)
    positional = ExecutionResult(ExecutionStatus.FAILED, "sess_456", None, "rate limit", 0.2)
    assert positional.error_message == "rate limit" and positional.execution_time_seconds == 0.2


def test_a_failure_always_says_why_and_strings_become_statuses():
    result = ExecutionResult(status="timeout", session_id="s")
    assert result.status is ExecutionStatus.TIMEOUT and "timeout" in result.error_message
    with pytest.raises(ValueError, match="'crashed' is not one of: success, failed, timeout"):
        ExecutionResult(status="crashed", session_id="s")


def test_both_executors_satisfy_the_protocol():
    assert isinstance(RecordingExecutor([]), AgentExecutorProtocol)
    assert isinstance(AgentExecutor(), AgentExecutorProtocol)
    assert inspect.iscoroutinefunction(AgentExecutor.execute_agent)
    params = inspect.signature(AgentExecutor.execute_agent).parameters
    gepa_params = inspect.signature(AgentExecutorProtocol.execute_agent).parameters
    assert list(gepa_params) == list(params)[:len(gepa_params)]


# --------------------------------------------------------------------------- constructor


def test_constructor_rejects_what_is_not_an_agent():
    with pytest.raises(TypeError, match="critic_agent must be an ADK BaseAgent, got str"):
        CriticScorer(critic_agent="not_an_agent", executor=RecordingExecutor([]))


def test_constructor_rejects_an_empty_app_name():
    with pytest.raises(ValueError, match="app_name cannot be empty"):
        CriticScorer(critic_agent=critic_agent(), executor=RecordingExecutor([]), app_name="")


def test_constructor_rejects_an_executor_without_execute_agent():
    class Legacy:
        async def run(self, agent, text):
            return None

    with pytest.raises(TypeError, match="AgentExecutorProtocol .*got Legacy"):
        CriticScorer(critic_agent=critic_agent(), executor=Legacy())


# --------------------------------------------------------------------------- what the critic sees


def test_critic_input_holds_query_and_output_and_expected_only_when_given():
    scorer, executor = scorer_replying(success('{"score": 1.0}'))
    score(scorer, input_text="What is 2+2?", output="4")
    score(scorer, input_text="What is 2+2?", output="4", expected="four")
    without, with_expected = (call["input_text"] for call in executor.calls)
    assert "What is 2+2?" in without and "\n4\n" in without
    assert "four" not in without and "Expected" not in without
    assert "## Expected" in with_expected and "four" in with_expected
    assert executor.calls[0]["agent"] is scorer.critic_agent


def test_isolated_session_unless_one_is_given():
    scorer, executor = scorer_replying(success('{"score": 0.5}'))
    score(scorer)
    score(scorer, session_id="existing_session")
    assert [c["existing_session_id"] for c in executor.calls] == [None, "existing_session"]


# --------------------------------------------------------------------------- replies


def test_score_and_feedback_from_a_successful_run():
    scorer, executor = scorer_replying(success('{"score": 0.75, "feedback": "Good"}'))
    assert score(scorer, input_text="What is 2+2?", output="4", expected="4") == (
        0.75, {"feedback": "Good"})
    assert len(executor.calls) == 1


@pytest.mark.parametrize("reply, key, expected", [
    ('{"score": 0.8, "dimension_scores": {"accuracy": 0.9, "clarity": 0.7}}',
     "dimension_scores", {"accuracy": 0.9, "clarity": 0.7}),
    ('{"score": 0.6, "actionable_guidance": "Be more concise"}',
     "actionable_guidance", "Be more concise"),
    ('{"score": 0.7, "custom_field": "value", "nested": {"key": "val"}}',
     "nested", {"key": "val"}),
    ('{"score": 0.7, "dimension_scores": {"accuracy": 0.9, "note": "string_value"}}',
     "dimension_scores", {"accuracy": 0.9, "note": "string_value"}),
])
def test_metadata_keeps_dimensions_guidance_and_extra_fields(reply, key, expected):
    scorer, _ = scorer_replying(success(reply))
    assert score(scorer)[1][key] == expected


def test_reply_that_is_not_json_is_a_parse_error_with_the_raw_text():
    scorer, _ = scorer_replying(success("not valid json"))
    with pytest.raises(CriticOutputParseError) as info:
        score(scorer)
    assert info.value.raw_output == "not valid json"


def test_json_that_is_not_an_object_is_a_parse_error():
    scorer, _ = scorer_replying(success('["not", "a", "dict"]'))
    with pytest.raises(CriticOutputParseError, match="is JSON but not an object"):
        score(scorer)


def test_missing_score_names_the_fields_that_came():
    scorer, _ = scorer_replying(success('{"feedback": "Good but no score"}'))
    with pytest.raises(MissingScoreFieldError) as info:
        score(scorer)
    assert info.value.available_fields == ["feedback"]
    assert info.value.parsed_output == {"feedback": "Good but no score"}


def test_non_numeric_score_is_a_missing_score():
    scorer, _ = scorer_replying(success('{"score": "not a number"}'))
    with pytest.raises(MissingScoreFieldError, match="must be a number"):
        score(scorer)


def test_empty_output_is_a_scoring_error():
    scorer, _ = scorer_replying(success(""))
    with pytest.raises(ScoringError, match="empty"):
        score(scorer)


# --------------------------------------------------------------------------- failed runs


def test_failed_execution_is_a_scoring_error_with_the_executors_message():
    failed = ExecutionResult(status=ExecutionStatus.FAILED, session_id="test_session",
                             error_message="Agent execution failed")
    scorer, _ = scorer_replying(failed)
    with pytest.raises(ScoringError, match="execution failed") as info:
        score(scorer)
    assert info.value.status is ExecutionStatus.FAILED
    assert info.value.session_id == "test_session"


def test_timeout_is_a_scoring_error_too_not_an_empty_reply():
    scorer, _ = scorer_replying(ExecutionResult(status=ExecutionStatus.TIMEOUT, session_id="t",
                                                error_message="timed out after 300s"))
    with pytest.raises(ScoringError, match=r"\(timeout\): timed out after 300s") as info:
        score(scorer)
    assert info.value.status is ExecutionStatus.TIMEOUT


def test_in_a_run_a_failed_critic_is_recorded_as_no_score_never_zero():
    failed = ExecutionResult(status=ExecutionStatus.FAILED, session_id="s9",
                             error_message="model rate limit exceeded")
    scorer, _ = scorer_replying(failed)
    answer = asyncio.run(scorer.assess(Sample(input_text="q", output="a")))
    assert answer.score is None and answer.extra["status"] == "failed" and \
        answer.extra["session_id"] == "s9"
    feedback, error = asyncio.run(judge_sample(scorer, Sample(input_text="q", output="a")))
    assert feedback.score is None and "model rate limit exceeded" in error


def test_executor_messages_are_bounded_and_keep_no_keys(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", "acme-secret-123456")
    leaked = "upstream said acme-secret-123456 " + "x" * 10_000
    scorer, _ = scorer_replying(ExecutionResult(status="failed", session_id="s",
                                                error_message=leaked))
    answer = asyncio.run(scorer.assess(Sample(input_text="q", output="a")))
    assert "acme-secret-123456" not in answer.error and len(answer.error) < 2_200


def test_a_result_of_gepa_adks_own_shape_is_read_the_same():
    @dataclass
    class ForeignResult:  # gepa-adk's ExecutionResult: a separate class, str-valued status
        status: str
        session_id: str
        extracted_value: str | None = None
        error_message: str | None = None

    scorer, _ = scorer_replying(ForeignResult("success", "s", '{"score": 0.4, "feedback": "ok"}'))
    assert score(scorer) == (0.4, {"feedback": "ok"})


# --------------------------------------------------------------------------- sync and workflows


def test_sync_score_passes_expected_through():
    scorer, executor = scorer_replying(success('{"score": 1.0, "feedback": "exact"}'))
    assert scorer.score("test", "test", "the expected answer") == (1.0, {"feedback": "exact"})
    assert "the expected answer" in executor.calls[0]["input_text"]


def test_a_sequential_agent_can_be_the_critic():
    workflow = SequentialAgent(name="workflow_critic", sub_agents=[
        LlmAgent(name="scorer", model=litellm_model("scripted/demo"), instruction="Score it")])
    executor = RecordingExecutor([success('{"score": 0.85, "feedback": "Workflow completed"}')])
    scorer = CriticScorer(critic_agent=workflow, executor=executor)
    assert scorer.score("test", "test") == (0.85, {"feedback": "Workflow completed"})
    assert executor.calls[0]["agent"] is workflow


# --------------------------------------------------------------------------- the real executor


def test_real_executor_runs_the_critic_through_execute_agent(script):
    model = script(lambda request: {"score": 0.75, "feedback": "Good but terse"})
    scorer = CriticScorer(critic_agent=critic_agent(model), executor=AgentExecutor())
    assert scorer.score("What is Python?", "A language.") == (0.75, {"feedback": "Good but terse"})
    assert "A language." in script.requests(model)[-1].last_user


def test_real_executor_default_uses_the_given_session_service(script):
    model = script(lambda request: {"score": 0.5, "feedback": request.system.split("\n")[0]})
    critic = LlmAgent(name="critic", model=litellm_model(model),
                      instruction="Draft was {draft}.", output_schema=SimpleCriticOutput)
    service = InMemorySessionService()
    scorer = CriticScorer(critic_agent=critic, session_service=service)

    async def shared():
        session = await service.create_session(app_name="critic_scorer", user_id="studio",
                                               state={"draft": "three lines"})
        return await scorer.async_score("q", "a", session_id=session.id)

    assert asyncio.run(shared()) == (0.5, {"feedback": "Draft was three lines."})


def test_seed_session_sharing_example_creates_the_missing_session_as_gepa_adk_does(script):
    """Seed 000's example, as written: ``session_id="existing_session_123"`` names a session
    nobody created; gepa-adk's executor gets or creates it, and so does the studio's."""
    model = script(lambda request: {"score": 0.8, "feedback": "Clear."})
    service = InMemorySessionService()
    scorer = CriticScorer(critic_agent=critic_agent(model), session_service=service)

    async def twice():
        first = await scorer.async_score(input_text="...", output="...",
                                         session_id="existing_session_123")
        second = await scorer.async_score(input_text="...", output="...",
                                          session_id="existing_session_123")
        kept = await service.get_session(app_name="critic_scorer", user_id="studio",
                                         session_id="existing_session_123")
        return first, second, kept

    first, second, kept = asyncio.run(twice())
    assert first == second == (0.8, {"feedback": "Clear."})
    assert kept is not None and len([e for e in kept.events if e.author == "quality_critic"]) == 2


def test_evolve_takes_gepa_adks_scorer_executor_and_selector_names(tmp_path):
    import asyncio

    from studio import EvolutionConfig, evolve
    from studio.model.errors import ConfigError
    from studio.runtime.execution import AgentExecutor
    from studio.store import open_store
    from tests.helpers import critic, trainset, writer

    store = open_store(f"sqlite:///{tmp_path}/port.db", cached=False)
    result = asyncio.run(evolve(writer(), trainset(3), scorer=critic(),
                                executor=AgentExecutor(max_concurrency=2),
                                candidate_selector="greedy",
                                config=EvolutionConfig(max_iterations=2), store=store))
    assert store.get_run(result.run_id).config.candidate_selection == "greedy"
    assert result.total_iterations == 2
    assert result.improvement == result.final_score - result.original_score > 0
    assert result.original_components == {"instruction": writer().instruction}
    assert result.primary_agent is None
    with pytest.raises(ConfigError, match="candidate_selector 'best'"):
        asyncio.run(evolve(writer(), trainset(3), candidate_selector="best", store=store))
    with pytest.raises(ConfigError, match="critic or scorer"):
        asyncio.run(evolve(writer(), trainset(3), critic=critic(), scorer=critic(),
                           store=store))
    store.close()


# --------------------------------------------------------------------------- gepa-adk's errors


def test_gepa_adks_error_keywords_are_accepted_and_kept():
    from studio import ConfigError

    cause = TimeoutError("critic took 300 s")
    error = ScoringError("Scoring failed", cause=cause)
    assert error.cause is cause and str(error) == "Scoring failed (caused by: critic took 300 s)"
    missing = MissingScoreFieldError("Score field missing", parsed_output={"feedback": "ok"})
    assert missing.parsed_output == {"feedback": "ok"} and missing.available_fields == [
        "feedback"]
    assert isinstance(missing, ScoringError)
    parse = CriticOutputParseError("Invalid JSON", raw_output="{oops", parse_error="line 1")
    assert (parse.raw_output, parse.parse_error) == ("{oops", "line 1")
    config = ConfigError("max_iterations must be non-negative", field="max_iterations",
                         value=-5, constraint=">= 0")
    assert (config.field, config.value, config.constraint) == ("max_iterations", -5, ">= 0")
    assert config.where == "max_iterations"
    assert str(config) == "max_iterations must be non-negative [field='max_iterations', value=-5]"
    assert str(ConfigError("Error", field=None, value=None)) == "Error"


def test_evolution_config_refuses_with_the_documented_configuration_error():
    from pydantic import ValidationError

    from studio import ConfigError, EvolutionConfig
    from studio.model.errors import StudioError

    with pytest.raises(ConfigError) as info:
        EvolutionConfig(max_iterations=-1)
    assert isinstance(info.value, StudioError) and not isinstance(info.value, ValidationError)
    assert info.value.field == "max_iterations" and info.value.value == -1
    assert "greater than or equal to 0" in str(info.value)


def test_a_critic_reply_that_is_json_but_not_an_object_says_so():
    from studio.critics.agent import parse_critic_output

    with pytest.raises(CriticOutputParseError) as info:
        parse_critic_output("[1, 2]")
    assert "is JSON but not an object (it is a list)" in str(info.value)
    assert "not JSON:" not in str(info.value)


# --------------------------------------------------------------------------- evolve()'s checks


@pytest.fixture
def port_store(tmp_path):
    from studio.store import open_store

    store = open_store(f"sqlite:///{tmp_path}/checks.db", cached=False)
    yield store
    store.close()


def test_evolve_refuses_what_is_not_an_agent_before_storing_a_run(port_store):
    from studio import ConfigError, evolve

    with pytest.raises(ConfigError) as info:
        asyncio.run(evolve("not an agent", [{"topic": "rain"}], store=port_store))
    assert info.value.field == "agent" and "got str 'not an agent'" in str(info.value)
    assert port_store.list_runs() == []


def test_no_critic_and_no_output_schema_is_refused_before_any_model_call(script, port_store):
    from studio import ConfigError, evolve

    model = script("a haiku")
    writer = LlmAgent(name="writer", model=litellm_model(model), instruction="Write a haiku.")
    with pytest.raises(ConfigError) as info:
        asyncio.run(evolve(writer, [{"topic": "rain"}], store=port_store))
    assert info.value.field == "critic" and "pass critic=..." in str(info.value)
    assert script.requests(model) == [] and port_store.list_runs() == []


def test_no_critic_scores_the_agent_by_its_own_output_schema(script, port_store):
    from pydantic import BaseModel, Field

    from studio import EvolutionConfig, evolve

    class HaikuWithScore(BaseModel):
        haiku: str
        score: float = Field(ge=0.0, le=1.0)

    model = script(lambda request: {"haiku": "rain on the roof", "score": 0.6})
    writer = LlmAgent(name="writer", model=litellm_model(model), instruction="Write a haiku.",
                      output_schema=HaikuWithScore)
    result = asyncio.run(evolve(writer, [{"topic": "rain"}, {"topic": "snow"}],
                                config=EvolutionConfig(max_iterations=0), store=port_store))
    assert result.status == "completed" and result.original_score == 0.6
    trials = port_store.trials(result.run_id)
    assert [t.score for t in trials] == [0.6, 0.6]
    assert len(script.requests(model)) == 2  # the agent alone: no critic model was called


def test_an_output_schema_without_score_is_refused_naming_the_field(script, port_store):
    from pydantic import BaseModel

    from studio import ConfigError, evolve

    class JustHaiku(BaseModel):
        haiku: str

    writer = LlmAgent(name="writer", model=litellm_model(script("x")), instruction="Write.",
                      output_schema=JustHaiku)
    with pytest.raises(ConfigError, match="must have a 'score' field") as info:
        asyncio.run(evolve(writer, [{"topic": "rain"}], store=port_store))
    assert info.value.field == "output_schema" and port_store.list_runs() == []


def test_evolving_an_output_schema_the_agent_lacks_is_refused_up_front(script, port_store):
    from studio import ConfigError, evolve
    from tests.helpers import critic, writer

    with pytest.raises(ConfigError) as info:
        asyncio.run(evolve(writer(), [{"topic": "rain"}], critic=critic(),
                           components=["instruction", "output_schema"], store=port_store))
    assert info.value.field == "components" and info.value.value == "output_schema"
    assert "cannot evolve 'output_schema': agent 'writer' has no output_schema" in str(
        info.value)
    assert port_store.list_runs() == []


def test_an_empty_sequential_agent_is_a_studio_error(port_store):
    from pydantic import ValidationError

    from studio import ConfigError, evolve
    from tests.helpers import critic

    with pytest.raises(ConfigError) as info:
        asyncio.run(evolve(SequentialAgent(name="flow", sub_agents=[]), [{"topic": "rain"}],
                           critic=critic(), store=port_store))
    assert not isinstance(info.value, ValidationError)
    assert "SequentialAgent 'flow' has no sub_agents" in str(info.value)
    assert port_store.list_runs() == []


def test_the_result_has_gepa_adks_improved_and_schema_version(port_store):
    from studio import EvolutionConfig, evolve
    from tests.helpers import critic, trainset, writer

    result = asyncio.run(evolve(writer(), trainset(3), critic=critic(),
                                config=EvolutionConfig(max_iterations=2), store=port_store))
    assert result.improved is (result.final_score > result.original_score) is True
    assert result.schema_version == 1 and result.to_dict()["schema_version"] == 1


# --------------------------------------------------------------------------- TrialBuilder


def test_trial_builder_follows_the_seeds_documentation():
    """Seed 002 documents ``build_feedback(0.75) == {"score": 0.75}`` and
    ``feedback_dimensions``; gepa-adk 2.8's code adds ``feedback_text: ""`` and spells the
    dimensions ``dimensions``. The studio follows the documentation
    (see docs/guides/gepa-adk.md)."""
    from studio.engine.propose.trials import TrialBuilder, normalize_feedback

    builder = TrialBuilder()
    assert builder.build_feedback(0.75) == {"score": 0.75}
    feedback = builder.build_feedback(0.85, metadata={
        "feedback": "Good work", "dimension_scores": {"accuracy": 0.9}})
    assert feedback == {"score": 0.85, "feedback_text": "Good work",
                        "feedback_dimensions": {"accuracy": 0.9}}
    assert normalize_feedback(0.45, {"feedback_text": "Too clinical",
                                     "dimension_scores": {"voice": 0.2},
                                     "actionable_guidance": "Add I statements"}) == {
        "score": 0.45, "feedback_text": "Too clinical", "dimensions": {"voice": 0.2},
        "guidance": "Add I statements"}


def test_a_workflow_without_critic_needs_an_output_schema_on_its_primary(script, port_store):
    from studio import ConfigError, evolve

    model = script("text")
    flow = SequentialAgent(name="flow", sub_agents=[
        LlmAgent(name="outliner", model=litellm_model(model), instruction="Outline."),
        LlmAgent(name="writer", model=litellm_model(model), instruction="Write.")])
    with pytest.raises(ConfigError, match="no critic for agent 'writer'"):
        asyncio.run(evolve(flow, [{"topic": "rain"}], store=port_store))
    assert script.requests(model) == [] and port_store.list_runs() == []
