"""ADK's eval metrics as a critic (:mod:`studio.critics.adk_metrics`): a trial run by the studio
is scored the same as ADK's own evaluator scores the same agent run by ADK's runner, on the same
eval cases (an eval set built with ADK's models), judge prompts included; what cannot be scored
is refused up front, naming the metric."""

from __future__ import annotations

import asyncio
import inspect
import json
import re

import pytest
from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from google.adk.runners import InMemoryRunner
from google.genai import types

from studio.critics.adapters import build_critic
from studio.critics.adk_metrics import AdkMetricsCritic, adk_metrics_critic
from studio.critics.protocol import Sample
from studio.model.errors import ConfigError
from studio.model.records import AgentSpec
from studio.runtime.adk_evalsets import eval_set_rows
from studio.runtime.agents import build_agent
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers.scripted import ScriptedReply, ToolCall

RUBRIC = {"rubric_id": "says_leap", "rubric_content": {
    "text_property": "The response says whether the year is a leap year."}}
CRITERIA = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.6,
    "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 2}},
    "rubric_based_final_response_quality_v1": {
        "threshold": 0.5, "judge_model_options": {"num_samples": 1}, "rubrics": [RUBRIC]},
}


def leap_model(request):
    """Calls ``isleap`` (a fixed call id, so both runs record the same call), then answers."""
    question = next(m["content"] for m in request.messages if m["role"] == "user")
    year = int(re.search(r"\d{4}", question).group())
    if "[tool result]" in request.prompt_text:
        leap = '"result": true' in request.prompt_text
        return f"{year} is a leap year." if leap else f"{year} is a common year."
    return ScriptedReply(tool_calls=(ToolCall("isleap", {"year": year}, id="call_1"),))


def judge(request):
    """ADK's two judge formats; the verdicts depend on the agent's reply in the prompt."""
    prompt = request.prompt_text
    if "is_the_agent_response_valid" in prompt:
        valid = "leap year." in prompt.split("The agent response")[-1]
        return json.dumps({"reasoning": "compared", "is_the_agent_response_valid":
                           "valid" if valid else "invalid"})
    verdict = "yes" if "a leap year." in prompt or "a common year." in prompt else "no"
    return (f"ID: says_leap\nProperty: {RUBRIC['rubric_content']['text_property']}\n"
            f"Rationale: the reply names the kind of year.\nVerdict: {verdict}\n")


def text(role: str, value: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part.from_text(text=value)])


def case(eval_id: str, query: str, reply: str, year: int) -> EvalCase:
    call = types.FunctionCall(name="isleap", args={"year": year})
    return EvalCase(eval_id=eval_id, conversation=[Invocation(
        user_content=text("user", query), final_response=text("model", reply),
        intermediate_data=IntermediateData(tool_uses=[call]))])


CASES = [
    case("match", "Is 2024 a leap year?", "2024 is a leap year.", 2024),
    case("wrong_args", "Is 1900 a leap year?", "1900 is a common year.", 1901),
    case("other_words", "Is 2000 a leap year?", "Yes, 2000 was one.", 2000),
]


def agent(model: str):
    return build_agent(AgentSpec(name="calendarist", model=model, tools=["calendar:isleap"],
                                 instruction="Say whether the year is a leap year."))


async def adk_run(root, query: str) -> Invocation:
    """The agent run by ADK's own runner, its events made an Invocation as ``adk eval`` does."""
    runner = InMemoryRunner(agent=root, app_name="leap")
    session = await runner.session_service.create_session(app_name="leap", user_id="u")
    events = [event async for event in  # the user's event first, as ADK's inference adds it
              EvaluationGenerator._generate_inferences_for_single_user_invocation(
                  runner, "u", session.id, text("user", query))]
    [invocation] = EvaluationGenerator.convert_events_to_eval_invocations(events)
    return invocation


async def adk_scores(actual: Invocation, expected: Invocation, judge_model: str) -> dict:
    """ADK's evaluators called directly: metric -> (score, status)."""
    config = EvalConfig.model_validate({"criteria": {
        name: (value if not isinstance(value, dict) or "judge_model_options" not in value else
               {**value, "judge_model_options": {**value["judge_model_options"],
                                                 "judge_model": judge_model}})
        for name, value in CRITERIA.items()}})
    scores = {}
    for metric in get_eval_metrics_from_config(config):
        if metric.metric_name not in CRITERIA:
            continue
        evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
        result = evaluator.evaluate_invocations([actual], [expected])
        result = await result if inspect.isawaitable(result) else result
        scores[metric.metric_name] = (result.overall_score, result.overall_eval_status.name)
    return scores


def test_a_trial_is_scored_as_adks_own_evaluator_scores_the_same_case(script):
    from studio.runtime.providers.scripted import recorded_requests, request_mark

    model, judge_model = script(leap_model), script(judge)
    rows = eval_set_rows(EvalSet(eval_set_id="leap", eval_cases=CASES).model_dump_json(),
                         source="leap.evalset.json")
    critic = AdkMetricsCritic({"criteria": CRITERIA}, judge_model=judge_model)
    executor = AgentExecutor(app_name="leap")
    judge_name = judge_model.split("/", 1)[1]
    statuses = []
    for row, eval_case in zip(rows, CASES, strict=True):
        ran = asyncio.run(executor.execute(agent(model), row["input"]))
        sample = Sample(input_text=row["input"], output=ran.extracted_value or "",
                        expected=row.get("expected"), example=row, trace=ran.trace)
        mark = request_mark()
        feedback = asyncio.run(critic.assess(sample))
        ours = [r.prompt_text for r in recorded_requests(judge_name, since=mark)]
        actual = asyncio.run(adk_run(agent(model), row["input"]))
        mark = request_mark()
        theirs = asyncio.run(adk_scores(actual, eval_case.conversation[0], judge_model))
        assert ours == [r.prompt_text for r in recorded_requests(judge_name, since=mark)]
        metrics = feedback.verdict.metrics
        assert {m.name: (m.score, m.status.value) for m in metrics} == theirs
        statuses.append({name: status for name, (_, status) in theirs.items()})
        failed = any(status == "FAILED" for status in statuses[-1].values())
        assert feedback.score == (0.0 if failed else 1.0)  # adk optimize's case score
        assert feedback.verdict.status.value == ("FAILED" if failed else "PASSED")
    assert statuses[0] == dict.fromkeys(CRITERIA, "PASSED")
    assert statuses[1]["tool_trajectory_avg_score"] == "FAILED"
    assert statuses[2]["response_match_score"] == "FAILED"


def test_feedback_names_each_metric_with_its_details_for_reflection():
    critic = AdkMetricsCritic({"criteria": {"tool_trajectory_avg_score": 1.0}})
    sample = Sample(input_text="Is 1900 a leap year?", output="No.", example={
        "expected_trajectory": [{"name": "isleap", "args": {"year": 1900}}]}, trace={
        "events": [{"author": "a", "type": "tool_call", "id": "1", "name": "isleap",
                    "args": {"year": 1901}}]})
    feedback = asyncio.run(critic.assess(sample))
    assert feedback.score == 0.0 and feedback.dimensions == {"tool_trajectory_avg_score": 0.0}
    assert feedback.text.startswith("[tool_trajectory_avg_score] 0.00 (threshold 1) FAILED")
    assert '"year": 1900' in feedback.text and '"year": 1901' in feedback.text


def test_mean_scores_each_metric_and_a_missing_reference_is_left_out_not_zero():
    critic = AdkMetricsCritic({"criteria": {"tool_trajectory_avg_score": 1.0,
                                            "response_match_score": 0.5}}, score="mean")
    sample = Sample(input_text="q", output="the cat sat", expected="the cat sat down")
    feedback = asyncio.run(critic.assess(sample))
    metrics = {m.name: m for m in feedback.verdict.metrics}
    assert metrics["tool_trajectory_avg_score"].status == "NOT_EVALUATED"
    assert "no expected_trajectory" in metrics["tool_trajectory_avg_score"].details
    assert feedback.score == pytest.approx(metrics["response_match_score"].score)
    nothing = asyncio.run(critic.assess(Sample(input_text="q", output="a")))
    assert nothing.score is None and "no ADK metric could evaluate" in nothing.error


@pytest.mark.parametrize(("criteria", "refusal"), [
    ({"multi_turn_task_success_v1": 0.5}, "scores a whole conversation"),
    ({"token_usage_v1": 1.0}, "informational efficiency metrics"),
    ({"made_up_score": 1.0}, "not a metric in ADK's registry; known: final_response_match_v2"),
    ({"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "sideways"}},
     "ADK refuses the criterion"),
    ({}, "names no metric"),
])
def test_what_cannot_be_scored_is_refused_up_front_naming_it(criteria, refusal, monkeypatch):
    with pytest.raises(ConfigError, match=re.escape(refusal)) as caught:
        AdkMetricsCritic({"criteria": criteria})
    name = next(iter(criteria), None)
    assert name is None or caught.value.where.endswith(f"criteria.{name}")


def test_vertex_metrics_need_a_google_cloud_project(monkeypatch):
    for variable in ("GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigError, match="'safety_v1' calls the Vertex AI.*GOOGLE_CLOUD_PROJECT"):
        AdkMetricsCritic({"criteria": {"safety_v1": 0.8}})


def test_a_declarative_config_scores_by_adk_metrics_and_refuses_code_and_paths(tmp_path):
    critic = build_critic({"adk_metrics": {"criteria": {"response_match_score": 0.5}},
                           "name": "adk", "score": "mean"})
    assert isinstance(critic, AdkMetricsCritic) and critic.name == "adk"
    custom = {"criteria": {"mine": 0.5},
              "custom_metrics": {"mine": {"code_config": {"name": "os.system"}}}}
    with pytest.raises(ConfigError, match="custom_metrics \\(mine\\) import the Python"):
        build_critic({"adk_metrics": custom})
    with pytest.raises(ConfigError, match="must be the eval config itself"):
        build_critic({"adk_metrics": str(tmp_path / "test_config.json")})
    combined = build_critic({"evaluators": [
        {"adk_metrics": {"criteria": {"response_match_score": 0.5}}, "weight": 2},
        {"name": "exact_match"}]})
    feedback = asyncio.run(combined.assess(Sample(input_text="q", output="a b", expected="a b")))
    assert feedback.score == 1.0


def test_the_cli_entry_reads_adks_criteria_file(tmp_path):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    critic = adk_metrics_critic(path, judge_model="scripted/echo")
    assert [m.name for m in critic.metrics] == ["response_match_score"]
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="is not JSON"):
        adk_metrics_critic(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="cannot read the eval criteria file"):
        adk_metrics_critic(tmp_path / "missing.json")


def test_the_judge_model_fills_only_criteria_that_name_none():
    critic = AdkMetricsCritic({"criteria": {
        "final_response_match_v2": 0.5,
        "hallucinations_v1": {"threshold": 0.5,
                              "judge_model_options": {"judge_model": "scripted/echo"}}}},
        judge_model="scripted/demo")
    judges = {name: criterion.model_dump()["judge_model_options"]["judge_model"]
              for name, criterion in critic.eval_config.criteria.items()}
    assert judges == {"final_response_match_v2": "scripted/demo",
                      "hallucinations_v1": "scripted/echo"}


def test_the_cli_spec_carries_the_criteria_and_rebuilds_the_same_critic(tmp_path):
    from studio.critics.adk_metrics import adk_metrics_critic_spec
    from studio.engine.hosting.build import critic_for_run
    from studio.runtime.execution import AgentExecutor

    criteria = {"criteria": {"response_match_score": 0.8}}
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(criteria))
    spec = adk_metrics_critic_spec(path, judge_model="scripted/echo", score="mean")
    assert spec.evaluator == {"adk_metrics": criteria, "score": "mean",
                              "judge_model": "scripted/echo"}
    critic = critic_for_run(spec, AgentExecutor(), "scripted/echo")
    assert isinstance(critic, AdkMetricsCritic) and critic.rule.value == "mean"
    path.write_text(json.dumps({"criteria": {"mine": 0.5}, "custom_metrics": {
        "mine": {"code_config": {"name": "os.getcwd"}}}}))
    with pytest.raises(ConfigError, match="custom_metrics"):
        adk_metrics_critic_spec(path)


def test_a_judge_that_cannot_be_called_is_refused_up_front(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="judge model of 'final_response_match_v2'.*OPENAI"):
        AdkMetricsCritic({"criteria": {"final_response_match_v2": 0.5}},
                         judge_model="openai/gpt-4o")
    with pytest.raises(ConfigError, match="unknown scripted model 'scripted/nobody'"):
        AdkMetricsCritic({"criteria": {"final_response_match_v2": 0.5}},
                         judge_model="scripted/nobody")
