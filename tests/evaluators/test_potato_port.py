"""Potato's evaluators, called the way Potato's documentation calls them (seed 004): a task
config with ``ai_support``, ``endpoint=``, continuous scores, ``make_rubric_dag(...).root``, and
the names ``EvaluationResult`` / ``get_supported_evaluators``. Only the import changes.

Judges are scripted models behind LiteLLM; the ``endpoint=`` tests use a real endpoint object of
Potato's shape (``query(prompt, output_format)``) that calls the scripted model through
``litellm.completion``, as Potato's OpenAI endpoint calls its SDK.
"""

from __future__ import annotations

import json

import pytest

from studio.evaluators import (
    AgentAsJudgeEvaluator,
    EvaluationResult,
    EvaluatorResult,
    LLMTrajectoryJudge,
    get_supported_evaluators,
    list_evaluators,
    make_rubric_dag,
    rag_triad,
)
from studio.model.errors import ConfigError

TRACE = [
    {"role": "user", "content": "Book the cheapest refundable flight to Paris and email me"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function",
         "function": {"name": "book", "arguments": '{"flight": "AF1", "refundable": true}'}}]},
    {"role": "tool", "tool_call_id": "1", "content": "confirmed AF1 $320"},
    {"role": "assistant", "content": "Booked AF1. I will email the itinerary."},
]
REQUIREMENTS = [
    "The flight is under $400",
    "The flight is refundable",
    "The itinerary was emailed to the user",
]


def task_config(model: str, **ai_config) -> dict:
    """A Potato task config's judge section (``ai_support``), naming ``model``."""
    return {"ai_support": {"enabled": True, "ai_config": {"model": model, **ai_config}}}


class LiteLLMEndpoint:
    """A Potato endpoint (``query(prompt, output_format) -> str``) over LiteLLM."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.formats: list[type] = []

    def query(self, prompt: str, output_format: type) -> str:
        import litellm

        self.formats.append(output_format)
        reply = litellm.completion(model=self.model,
                                   messages=[{"role": "user", "content": prompt}])
        return reply.choices[0].message.content


# --------------------------------------------------------------------------- config= and endpoint=


def test_the_judge_uses_the_model_named_in_ai_support(script):
    model = script({"score": 0.9, "reasoning": "Sensible path."})
    judge = LLMTrajectoryJudge(config=task_config(model), continuous=True)
    result = judge.evaluate(outputs=TRACE, inputs="Book a flight")
    assert judge.model == model and result.score == 0.9
    assert len(script.requests(model)) == 1  # that model was asked, not the embedded one


def test_judge_alignment_ai_support_wins_as_in_potato(script):
    judge_model = script({"pass": True, "reasoning": "ok"})
    config = {"judge_alignment": {"ai_support": {"ai_config": {"model": judge_model}}},
              "ai_support": {"ai_config": {"model": "local/smollm2"}}}
    assert LLMTrajectoryJudge(config=config).evaluate(outputs=TRACE).score == 1.0
    assert len(script.requests(judge_model)) == 1


@pytest.mark.parametrize(("endpoint_type", "model", "litellm"), [
    ("openai", "gpt-4o-mini", "openai/gpt-4o-mini"),
    ("anthropic", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"),
    ("ollama", "llama3.2", "ollama_chat/llama3.2"),
    ("vllm", "Qwen/Qwen2.5-7B", "hosted_vllm/Qwen/Qwen2.5-7B"),
    ("openrouter", "anthropic/claude-3.5", "openrouter/anthropic/claude-3.5"),
])
def test_an_endpoint_type_maps_to_litellms_provider(endpoint_type, model, litellm):
    config = {"ai_support": {"enabled": True, "endpoint_type": endpoint_type,
                             "ai_config": {"model": model, "max_tokens": 512}}}
    assert LLMTrajectoryJudge(config=config).model == litellm
    assert AgentAsJudgeEvaluator(config, requirements=REQUIREMENTS).model == litellm


def test_what_the_studio_cannot_honour_in_ai_support_is_refused_naming_the_alternative():
    with pytest.raises(ConfigError) as info:
        LLMTrajectoryJudge(config={"ai_support": {"endpoint_type": "yolo",
                                                  "ai_config": {"model": "v8"}}})
    assert info.value.where == "config.ai_support.endpoint_type"
    assert "pass model='<litellm-provider>/<model>'" in str(info.value)
    with pytest.raises(ConfigError) as info:
        LLMTrajectoryJudge(config={"ai_support": {"endpoint_type": "vllm", "ai_config": {
            "model": "m", "base_url": "http://gpu:8000/v1"}}})
    assert "set HOSTED_VLLM_API_BASE in the environment" in str(info.value)
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY in the environment"):
        LLMTrajectoryJudge(config={"ai_support": {"endpoint_type": "openai", "ai_config": {
            "model": "gpt-4o", "api_key": "sk-test"}}})


def test_an_endpoint_is_asked_as_potato_asks_it(script):
    model = script({"score": 0.8, "reasoning": "Booked the cheapest option."})
    endpoint = LiteLLMEndpoint(model)
    judge = LLMTrajectoryJudge(endpoint=endpoint, continuous=True)
    result = judge.evaluate(outputs=TRACE, inputs="Book a flight")
    assert isinstance(result, EvaluationResult)
    assert (result.score, result.comment) == (0.8, "Booked the cheapest option.")
    prompt = script.requests(model)[-1].last_user
    assert "expert evaluator judging the quality of an AI agent's trajectory" in prompt
    assert "calls tool book(" in prompt
    assert set(endpoint.formats[0].model_fields) == {"score", "reasoning"}


def test_an_endpoint_reply_with_pass_underscore_reads_as_pass(script):
    class PydanticEndpoint:  # Potato's endpoints may return the parsed model itself
        def query(self, prompt, output_format):
            return output_format(pass_=False, reasoning="skipped the email")

    result = LLMTrajectoryJudge(endpoint=PydanticEndpoint()).evaluate(outputs=TRACE)
    assert (result.score, result.value, result.comment) == (0.0, False, "skipped the email")


def test_a_failing_endpoint_is_recorded_not_raised():
    class Down:
        def query(self, prompt, output_format):
            raise ConnectionError("endpoint unreachable")

    result = LLMTrajectoryJudge(endpoint=Down()).evaluate(outputs=TRACE)
    assert result.score is None
    assert result.comment == "judge call failed: ConnectionError: endpoint unreachable"


def test_an_endpoint_without_query_is_refused_naming_the_alternative():
    with pytest.raises(ConfigError) as info:
        LLMTrajectoryJudge(endpoint="http://localhost:11434")
    assert info.value.where == "endpoint" and "pass model='<litellm" in str(info.value)


def test_every_judge_takes_endpoint(script):
    endpoint = LiteLLMEndpoint(script({"score": 1.0, "reasoning": "relevant"}))
    triad = rag_triad({}, endpoint=endpoint)
    result = triad["answer_relevance"].evaluate(inputs="Capital of France?", outputs="Paris.")
    assert result.score == 1.0


# --------------------------------------------------------------------------- continuous scores


def test_a_continuous_score_of_5_clamps_to_1_as_potato_does(script):
    model = script({"score": 5.0, "reasoning": "Excellent."})
    result = LLMTrajectoryJudge(config=task_config(model), continuous=True).evaluate(
        outputs=TRACE)
    assert result.score == 1.0 and result.value == 1.0
    assert result.metadata["clamped_from"] == 5.0
    assert "clamped to 1.0" in result.comment


def test_a_negative_continuous_score_clamps_to_0(script):
    model = script({"score": -2, "reasoning": "Harmful."})
    result = LLMTrajectoryJudge(config=task_config(model), continuous=True).evaluate(
        outputs=TRACE)
    assert result.score == 0.0 and result.metadata["clamped_from"] == -2


# --------------------------------------------------------------------------- agent-as-judge


def test_the_denominator_counts_requirements_not_verdicts(script):
    model = script({"verdicts": [
        {"requirement": "The flight is refundable", "satisfied": True, "evidence": "step 2"},
        {"requirement": "The flight is under $400", "satisfied": True, "evidence": "step 3"},
    ], "reasoning": "The email was never sent and the judge said nothing of it."})
    ev = AgentAsJudgeEvaluator(task_config(model), requirements=REQUIREMENTS)
    r = ev.evaluate(inputs={"question": "Book a flight"}, outputs=TRACE)
    assert r.score == pytest.approx(2 / 3)  # Potato: 2 satisfied / 2 verdicts = 1.0
    assert [v["satisfied"] for v in r.metadata["verdicts"]] == [True, True, False]
    assert [v["evidence"] for v in r.metadata["verdicts"][:2]] == ["step 3", "step 2"]
    assert r.metadata["verdicts"][2]["flag"] == "missing verdict"


# --------------------------------------------------------------------------- rubric DAG and names


def test_make_rubric_dag_root_and_nodes_as_potato_exposes_them(script):
    model = script(lambda request: {"choice": "yes", "reasoning": "cited"})
    ev = make_rubric_dag(task_config(model), preset="answer_quality")
    assert ev.root == "answers" and set(ev.nodes) == {"answers", "grounded"}
    result = ev.evaluate(inputs="Capital of France?", outputs="Paris [gouvernement.fr].")
    assert result.score == 1.0
    assert [step["node"] for step in result.metadata["path"]] == ["answers", "grounded"]


def test_evaluation_result_and_get_supported_evaluators_exist_under_potatos_names():
    assert EvaluationResult is EvaluatorResult
    result = EvaluationResult(key="exact_match", score=1.0, value=True, comment="equal")
    assert result.to_dict() == {"key": "exact_match", "score": 1.0, "value": True,
                                "comment": "equal", "metadata": {}}
    names = get_supported_evaluators()
    assert names == sorted(names) == [e["name"] for e in list_evaluators()]
    assert {"trajectory_match", "rubric_dag", "agent_as_judge"} <= set(names)
    assert json.dumps(names)


class PayloadEndpoint:
    """Potato's own tests' endpoint shape: ``query(prompt, model=None)`` returns a dict."""

    def __init__(self, payload: dict) -> None:
        self.payload = payload
        self.prompts: list[str] = []

    def query(self, prompt, model=None):
        self.prompts.append(prompt)
        return self.payload


def test_potatos_own_endpoint_examples_give_potatos_results():
    passing = LLMTrajectoryJudge(endpoint=PayloadEndpoint({"pass": True,
                                                           "reasoning": "looks good"}))
    r = passing.evaluate(outputs=[{"role": "assistant", "content": "answer"}])
    assert (r.score, r.value, r.comment) == (1.0, True, "looks good")
    failing = PayloadEndpoint({"pass": False, "reasoning": "wrong tool"})
    assert LLMTrajectoryJudge(endpoint=failing).evaluate(outputs="bad").score == 0.0
    clamped = PayloadEndpoint({"score": 5.0})
    assert LLMTrajectoryJudge(endpoint=clamped, continuous=True).evaluate(
        outputs="x").score == 1.0
    seen = PayloadEndpoint({"pass": True})
    LLMTrajectoryJudge(endpoint=seen).evaluate(
        outputs={"conversation": [{"speaker": "Agent (Action)",
                                   "text": 'get_weather({"loc": "NYC"})'}]},
        inputs="what's the weather")
    assert "get_weather" in seen.prompts[0] and "what's the weather" in seen.prompts[0]


def test_potatos_positional_arguments_land_where_potato_puts_them():
    from studio.evaluators import GroundednessEvaluator, RubricDagEvaluator
    from studio.evaluators.rubric_dag import RUBRIC_PRESETS

    endpoint = PayloadEndpoint({"verdicts": [{"id": 1, "satisfied": True}], "reasoning": ""})
    judge = AgentAsJudgeEvaluator({}, endpoint, ["The flight is under $400"])
    assert judge.evaluate(outputs=TRACE).score == 1.0
    trajectory = LLMTrajectoryJudge({}, "Judge it.", True, PayloadEndpoint({"score": 0.4}))
    assert trajectory.evaluate(outputs=TRACE).score == 0.4
    rubric = RubricDagEvaluator(RUBRIC_PRESETS["answer_quality"], {},
                                PayloadEndpoint({"choice": "no"}))
    assert rubric.evaluate(outputs="Lyon.").score == 0.0
    assert make_rubric_dag({}, None, "answer_quality", PayloadEndpoint({"choice": "partially"})
                           ).evaluate(outputs="Paris?").score == 0.5
    grounded = GroundednessEvaluator({}, PayloadEndpoint({"claims": [
        {"claim": "Paris is the capital", "supported": True}]}))
    result = grounded.evaluate(inputs={"question": "Capital?", "context": "Paris is the capital"},
                               outputs="Paris is the capital")
    assert result.score == 1.0
    assert rag_triad({}, PayloadEndpoint({"score": 1.0}))["context_relevance"].endpoint


# --------------------------------------------------------------------------- agentevals_adapter

GRAPH = {"inputs": [{"question": "Turn on the kitchen light"}],
         "results": [{"answer": "done"}],
         "steps": [["__start__", "supervisor", "agentCasa", "supervisor"]]}


def test_seed_004s_agentevals_example_runs_as_written():
    """Seed 004, as Potato's users write it; the studio needs no ``agentevals`` for it."""
    from studio.evaluators import agentevals_adapter

    ev = None
    if agentevals_adapter.is_available():
        ev = agentevals_adapter.graph_trajectory_strict_match()
    assert ev is not None
    same = ev.evaluate(outputs=GRAPH, reference_outputs={"steps": [list(GRAPH["steps"][0])]})
    assert (same.key, same.score, same.value) == ("graph_trajectory_strict_match", 1.0, True)
    detour = {"steps": [["__start__", "supervisor", "agentUI", "supervisor"]]}
    parted = ev.evaluate(outputs=detour, reference_outputs=GRAPH)
    assert (parted.score, parted.value) == (0.0, False)
    assert parted.comment == ("turn 1: the agent visited __start__ → supervisor → agentUI → "
                              "supervisor, the reference __start__ → supervisor → agentCasa → "
                              "supervisor")
    extra_turn = ev.evaluate(outputs={"steps": GRAPH["steps"] * 2}, reference_outputs=GRAPH)
    assert extra_turn.score == 0.0 and "2 turn(s), the reference 1" in extra_turn.comment


def test_a_thread_extract_is_read_and_a_wrong_shape_is_not_evaluated():
    from studio.evaluators import agentevals_adapter

    ev = agentevals_adapter.graph_trajectory_strict_match()
    extract = {"inputs": GRAPH["inputs"], "outputs": {"results": [], "steps": GRAPH["steps"]}}
    assert ev.evaluate(outputs=extract, reference_outputs=GRAPH).score == 1.0
    missing = ev.evaluate(outputs=GRAPH)
    assert missing.score is None and "needs both outputs and reference_outputs" in missing.comment
    odd = ev.evaluate(outputs=TRACE, reference_outputs=GRAPH)
    assert odd.score is None and "graph trajectory is {'steps'" in odd.comment


def test_the_graph_judge_sees_the_path_fenced_and_gives_a_score(script):
    from studio.evaluators import agentevals_adapter

    model = script({"score": 0.75, "reasoning": "One detour through agentUI."})
    judge = agentevals_adapter.graph_trajectory_llm_judge(model=model, continuous=True)
    result = judge.evaluate(outputs=GRAPH, inputs="Turn on the kitchen light")
    assert (result.key, result.score) == ("graph_trajectory_accuracy", 0.75)
    asked = script.requests(model)[-1].last_user
    assert "turn 1: __start__ → supervisor → agentCasa → supervisor" in asked
    assert '"answer": "done"' in asked and "Turn on the kitchen light" in asked


def test_the_graph_judge_reads_agentevals_model_spelling():
    from studio.evaluators import agentevals_adapter

    judge = agentevals_adapter.graph_trajectory_llm_judge(model="openai:o3-mini")
    assert judge.model == "openai/o3-mini"
