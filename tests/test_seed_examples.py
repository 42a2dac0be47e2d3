"""Every example of every seed document (``/work/shared/seeds``), run as the document shows it:
only the import changes (``gepa_adk`` / ``potato.evaluators`` / ``agno.eval`` become ``studio``)
and each model is a scripted one behind LiteLLM, so the examples run offline and the checks
below are the documents' own (their ``assert``s, their printed lines, their comments' values).

One test per example script: seed 000 (gepa-adk's critic scorer), 001 (single-agent evolution),
002 (the trial builder), 003 (Agno's agent-as-judge cookbook) and 004 (Potato's evaluators).
The evolution examples take seconds (they evolve with the documents' defaults) and are marked
``slow``.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from pydantic import BaseModel

TRACE = [
    {"role": "user", "content": "Find the cheapest flight and submit booking 1"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function",
         "function": {"name": "search", "arguments": '{"query": "flights", "limit": 5}'}},
        {"id": "2", "type": "function",
         "function": {"name": "submit", "arguments": '{"id": 1}'}}]},
    {"role": "tool", "tool_call_id": "1", "content": "AF1 $320"},
    {"role": "assistant", "content": "Booked and emailed."},
]
GOLD = [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function",
         "function": {"name": "submit", "arguments": '{"id": 1, "note": "ok"}'}},
        {"id": "b", "type": "function",
         "function": {"name": "search", "arguments": '{"query": "trains"}'}}]},
]


@pytest.fixture
def studio_db(tmp_path, monkeypatch):
    """The store ``evolve`` records into when the example passes none."""
    monkeypatch.setenv("STUDIO_DB_URL", f"sqlite:///{tmp_path}/seed_examples.db")


def task_config(model: str) -> dict:
    """A Potato task config naming its judge (``ai_support``)."""
    return {"ai_support": {"enabled": True, "ai_config": {"model": model}}}


# --------------------------------------------------------------------------- seed 000


def test_seed_000_critic_scorer_examples(script):
    from google.adk.sessions import InMemorySessionService

    from studio import (  # was: from gepa_adk.adapters.critic_scorer import ...
        SIMPLE_CRITIC_INSTRUCTION,
        AgentExecutor,
        CriticOutput,
        CriticScorer,
        SimpleCriticOutput,
        normalize_feedback,
    )

    model = script(lambda request: {"score": 0.75, "feedback": "Good but terse"})
    critic = LlmAgent(name="quality_critic", model=LiteLlm(model=model),
                      instruction="Evaluate response quality...", output_schema=CriticOutput)
    simple = LlmAgent(name="simple_critic", model=LiteLlm(model=model),
                      instruction=SIMPLE_CRITIC_INSTRUCTION, output_schema=SimpleCriticOutput)
    CriticOutput.model_validate({
        "score": 0.75, "feedback": "Good response but could be more concise",
        "dimension_scores": {"accuracy": 0.9, "clarity": 0.6, "completeness": 0.8},
        "actionable_guidance": "Reduce response length by 30%"})

    async def examples() -> list[tuple[float, dict]]:
        scorer = CriticScorer(critic_agent=critic)
        basic = await scorer.async_score(input_text="What is Python?",
                                         output="Python is a programming language.")
        executor = AgentExecutor()
        scorer = CriticScorer(critic_agent=critic, executor=executor)
        with_executor = await scorer.async_score(input_text="What is Python?",
                                                 output="Python is a programming language.")
        session_service = InMemorySessionService()
        executor = AgentExecutor(session_service=session_service)
        scorer = CriticScorer(critic_agent=critic, executor=executor,
                              session_service=session_service)
        shared = await scorer.async_score(input_text="...", output="...",
                                          session_id="existing_session_123")
        kiss = await CriticScorer(critic_agent=simple).async_score(
            input_text="What is Python?", output="A language.")
        return [basic, with_executor, shared, kiss]

    for score, metadata in asyncio.run(examples()):
        assert (score, metadata["feedback"]) == (0.75, "Good but terse")
    assert CriticScorer(critic_agent=critic).score("What is Python?", "A language.")[0] == 0.75
    assert normalize_feedback(0.8, {"feedback": "Good job"}) == {"score": 0.8,
                                                                 "feedback_text": "Good job"}
    assert normalize_feedback(0.6, {"feedback": "Needs work",
                                    "dimension_scores": {"clarity": 0.5},
                                    "actionable_guidance": "Add examples"}) == {
        "score": 0.6, "feedback_text": "Needs work", "dimension_scores": {"clarity": 0.5},
        "actionable_guidance": "Add examples"}


# --------------------------------------------------------------------------- seed 001


def test_seed_001_critic_and_reflection_contracts():
    from studio import (
        ADVANCED_CRITIC_INSTRUCTION,
        SIMPLE_CRITIC_INSTRUCTION,
        CriticOutput,
        SimpleCriticOutput,
    )
    from studio.engine.propose.reflection import (
        DEFAULT_REFLECTION_INSTRUCTION,
        OUTPUT_KEY,
        create_config_reflection_agent,
        create_schema_reflection_agent,
        create_text_reflection_agent,
    )

    assert set(SimpleCriticOutput.model_fields) == {"score", "feedback"}
    assert all(SimpleCriticOutput.model_fields[f].is_required() for f in ("score", "feedback"))
    advanced = CriticOutput(score=0.5)
    assert (advanced.feedback, advanced.dimension_scores, advanced.actionable_guidance) == \
        ("", {}, "")
    assert SIMPLE_CRITIC_INSTRUCTION.startswith("Evaluate the quality of the output.")
    assert "Focus on clarity, accuracy, and completeness" in SIMPLE_CRITIC_INSTRUCTION
    assert "Actionable guidance for concrete improvement steps" in ADVANCED_CRITIC_INSTRUCTION
    assert DEFAULT_REFLECTION_INSTRUCTION == (
        "## Component Text to Improve\n{component_text}\n\n## Trials\n{trials}\n\n"
        "Propose an improved version of the component text based on the trials above.\n"
        "Return ONLY the improved component text, nothing else.")
    schema_agent = create_schema_reflection_agent("scripted/demo")
    assert [tool.__name__ for tool in schema_agent.tools] == ["validate_output_schema"]
    for agent in (schema_agent, create_config_reflection_agent("scripted/demo"),
                  create_text_reflection_agent("scripted/demo")):
        assert agent.output_key == OUTPUT_KEY == "proposed_component_text"


@pytest.mark.slow
def test_seed_001_complete_single_agent_evolution(studio_db, capsys):
    from studio import SimpleCriticOutput, evolve  # was: from gepa_adk import ...

    writer = LlmAgent(name="writer", model=LiteLlm(model="scripted/demo"),
                      instruction="Write a haiku about the given topic.")
    critic = LlmAgent(
        name="critic",
        model=LiteLlm(model="scripted/demo"),
        instruction="""
    Evaluate this haiku for:
    - Correct 5-7-5 syllable structure
    - Imagery and emotional impact
    - Connection to the topic

    Score 0.0-1.0 and explain your reasoning.
    """,
        output_schema=SimpleCriticOutput,
    )
    trainset = [{"topic": "autumn leaves"}, {"topic": "morning coffee"}, {"topic": "city rain"}]

    async def main():
        result = await evolve(agent=writer, trainset=trainset, critic=critic)
        print(f"Improved: {result.original_score:.2f}{result.final_score:.2f}")
        print(f"New instruction: {result.evolved_components['instruction']}")
        return result

    result = asyncio.run(main())
    printed = capsys.readouterr().out
    assert result.final_score > result.original_score
    assert f"Improved: {result.original_score:.2f}{result.final_score:.2f}" in printed
    assert "New instruction: Write a haiku about the given topic.\nRule:" in printed
    assert writer.instruction == "Write a haiku about the given topic."  # never mutated


@pytest.mark.slow
def test_seed_001_evolve_calls(studio_db, script):
    """``evolve(agent=, trainset=, critic=)`` and ``evolve(agent=, trainset=, components=[...])``
    with no critic: an agent with an ``output_schema`` is scored by its own ``score`` field."""
    from studio import evolve

    class Answer(BaseModel):
        answer: str
        score: float

    def reply(request) -> object:
        if "## Component Text to Improve" in request.system:  # a reflection
            if "JSON Schema" in request.system:
                return json.dumps({"type": "object", "required": ["answer", "score"],
                                   "properties": {"answer": {"type": "string"},
                                                  "score": {"type": "number"}}})
            return "Answer the question in one short sentence."
        return {"answer": "Paris", "score": 0.9 if "short" in request.system else 0.4}

    model = script(reply)
    my_agent = LlmAgent(name="answerer", model=LiteLlm(model=model),
                        instruction="Answer the question.", output_schema=Answer)
    critic_agent = LlmAgent(name="critic", model=LiteLlm(model=model),
                            instruction="Score the answer.", output_schema=Answer)
    examples = [{"question": "Capital of France?"}, {"question": "Capital of Italy?"}]

    async def main():
        with_critic = await evolve(agent=my_agent, trainset=examples, critic=critic_agent)
        schema_too = await evolve(agent=my_agent, trainset=examples,
                                  components=["instruction", "output_schema"])
        return with_critic, schema_too

    with_critic, schema_too = asyncio.run(main())
    assert with_critic.original_score is not None
    assert set(schema_too.evolved_components) == {"instruction", "output_schema"}
    assert schema_too.final_score == 0.9 and schema_too.original_score == 0.4


# --------------------------------------------------------------------------- seed 002


def test_seed_002_trial_builder_examples():
    from studio.engine.propose.trials import TrialBuilder, normalize_feedback

    builder = TrialBuilder()
    trial = builder.build_trial(input_text="What is 2+2?", output="4", score=0.95,
                                metadata={"feedback": "Correct answer"})
    assert trial["feedback"]["score"] == 0.95
    assert trial["trajectory"]["input"] == "What is 2+2?"

    builder.build_trial(input_text="Hello", output="Hi there!", score=0.8)
    builder.build_trial(input_text="Explain AI", output="AI is...", score=0.9,
                        metadata={"feedback": "Clear explanation",
                                  "dimension_scores": {"clarity": 0.95},
                                  "actionable_guidance": "Add examples"},
                        extra_trajectory={"component": "instruction"})

    feedback = builder.build_feedback(0.75)
    assert feedback == {"score": 0.75}
    feedback = builder.build_feedback(0.85, metadata={"feedback": "Good work",
                                                      "dimension_scores": {"accuracy": 0.9}})
    assert "feedback_text" in feedback

    trial = builder.build_trial(input_text="What is Python?", output="A programming language",
                                score=0.9)
    assert trial["feedback"]["score"] == 0.9
    assert trial["trajectory"]["output"] == "A programming language"
    trial = builder.build_trial(input_text="Count to 3", output="1, 2, 3", score=1.0,
                                trace={"tool_calls": [{"name": "count"}]},
                                extra_trajectory={"component": "counter"})
    assert "trace" in trial["trajectory"]
    assert trial["trajectory"]["component"] == "counter"

    assert normalize_feedback(0.75, "Good but verbose") == {"score": 0.75,
                                                            "feedback_text": "Good but verbose"}
    assert normalize_feedback(0.45, {"feedback_text": "Too clinical",
                                     "dimension_scores": {"voice": 0.2},
                                     "actionable_guidance": "Add I statements"}) == {
        "score": 0.45, "feedback_text": "Too clinical", "dimensions": {"voice": 0.2},
        "guidance": "Add I statements"}
    assert normalize_feedback(0.6, {"feedback": "Legacy format"}) == {
        "score": 0.6, "feedback_text": "Legacy format"}
    assert normalize_feedback(0.6, None) == {"score": 0.6, "feedback_text": ""}


# --------------------------------------------------------------------------- seed 003


def on_evaluation_failure(evaluation) -> None:
    print(f"Evaluation failed - Score: {evaluation.score}/10")
    print(f"Reason: {evaluation.reason[:100]}...")


def test_seed_003_agent_as_judge_basic_cookbook(script, tmp_path, capsys):
    """Agno's ``agent_as_judge_basic.py``: a sync eval (threshold 7) and an async one
    (threshold 10) on one db, each with ``on_fail``, then the stored runs read back."""
    from studio import AgentAsJudgeEval  # was: from agno.eval.agent_as_judge import ...
    from studio.store import open_store

    db = open_store(f"sqlite:///{tmp_path}/agent_as_judge.db", cached=False)
    judge_model = script({"score": 9, "reason": "Clear and beginner-friendly; one term "
                                                "(endpoint) is left unexplained."})
    answer = "An API is a menu: a program lists what it can do, and others order from it."

    sync_evaluation = AgentAsJudgeEval(
        name="Explanation Quality", model=judge_model,
        criteria="Explanation should be clear, beginner-friendly, and use simple language",
        scoring_strategy="numeric", threshold=7, on_fail=on_evaluation_failure, db=db)
    result = sync_evaluation.run(input="Explain what an API is", output=answer,
                                 print_results=True, print_summary=True)
    assert result is not None and result.results[0].passed is True

    async_evaluation = AgentAsJudgeEval(
        name="ML Explanation Quality", model=judge_model,
        criteria="Explanation should be clear, beginner-friendly, and avoid jargon",
        scoring_strategy="numeric", threshold=10, on_fail=on_evaluation_failure, db=db)
    async_result = asyncio.run(async_evaluation.arun(
        input="Explain machine learning", output=answer, print_results=True,
        print_summary=True))
    assert async_result.pass_rate == 0.0

    print("Database Results:")
    eval_runs = db.get_eval_runs()
    print(f"Total evaluations stored: {len(eval_runs)}")
    if eval_runs:
        latest = eval_runs[-1]
        print(f"Eval ID: {latest.run_id}")
        print(f"Name: {latest.name}")

    printed = capsys.readouterr().out
    assert "Score   9/10" in printed and "Status  PASSED" in printed
    assert "Evaluation failed - Score: 9/10" in printed  # the async eval's threshold is 10
    assert "Reason: Clear and beginner-friendly" in printed
    assert "Total evaluations stored: 2" in printed
    assert f"Eval ID: {async_result.run_id}\nName: ML Explanation Quality" in printed


# --------------------------------------------------------------------------- seed 004


def test_seed_004_contract_trajectory_and_tool_use():
    from studio.evaluators import (  # was: from potato.evaluators import ...
        ToolCallAccuracyEvaluator,
        ToolUseEvaluator,
        TrajectoryMatchEvaluator,
    )

    ev = TrajectoryMatchEvaluator(mode="unordered", tool_args_match_mode="subset",
                                  tool_args_match_overrides={"search": "ignore"})
    result = ev.evaluate(outputs=TRACE, reference_outputs=GOLD)
    assert (result.score, result.value) == (1.0, True)
    assert isinstance(result.comment, str) and isinstance(result.metadata, dict)
    assert ToolUseEvaluator(expected_tool="submit", expected_args={"id": 1}).evaluate(
        outputs=TRACE).score == 1.0
    partial = ToolCallAccuracyEvaluator(args_match_mode="exact").evaluate(
        outputs=TRACE, reference_outputs=GOLD)
    assert partial.score == 0.0  # neither reference call is reproduced with the exact args


def test_seed_004_heuristic_evaluators():
    from studio.evaluators import (
        Contains,
        EditDistance,
        EmbeddingDistance,
        ExactMatch,
        JSONSchemaMatch,
    )

    assert ExactMatch(case_sensitive=False).evaluate(outputs="HI", reference_outputs="hi") \
        .score == 1.0
    text = "Traceback: error in step 3"
    assert Contains(substring="error").evaluate(outputs=text).score == 1.0
    assert EditDistance().evaluate(outputs="kitten", reference_outputs="sitting").score == \
        pytest.approx(1 - 3 / 7)
    schema = {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}
    assert JSONSchemaMatch(schema).evaluate(outputs='{"id": 7}').score == 1.0
    no_ml = EmbeddingDistance().evaluate(outputs="a cat", reference_outputs="a kitten")
    assert no_ml.score is None and "sentence-transformers" in no_ml.comment  # lazy, said
    injected = EmbeddingDistance(embed_fn=lambda text: [1.0, 0.0])
    assert injected.evaluate(outputs="a cat", reference_outputs="a kitten").score == 1.0


def test_seed_004_llm_judges(script):
    from studio.evaluators import (
        RUBRIC_PRESETS,
        AgentAsJudgeEvaluator,
        LLMTrajectoryJudge,
        make_rubric_dag,
        rag_triad,
    )

    def reply(request) -> object:
        system = request.system
        if "choice" in json.dumps(request.json_schema or {}):
            return {"choice": "yes", "reasoning": "Paris, with a source."}
        if "verdicts" in json.dumps(request.json_schema or {}):
            return {"verdicts": [
                {"requirement": "The flight is under $400", "satisfied": True,
                 "evidence": "AF1 $320"},
                {"requirement": "The flight is refundable", "satisfied": True,
                 "evidence": "refundable fare"},
                {"requirement": "The itinerary was emailed to the user", "satisfied": False,
                 "evidence": "only promised"}]}
        if "claims" in json.dumps(request.json_schema or {}):
            return {"claims": [{"claim": "Paris is the capital", "supported": True},
                               {"claim": "It has 9 million people", "supported": False}]}
        return {"score": 0.8, "reasoning": "Sensible path."} if "score" in system \
            else {"pass": True, "reasoning": "ok"}

    config = task_config(script(reply))
    judge = LLMTrajectoryJudge(config=config, continuous=True)
    assert judge.evaluate(outputs=TRACE, inputs="Book a flight").score == 0.8

    ev = make_rubric_dag(config, preset="answer_quality")
    result = ev.evaluate(inputs="Capital of France?", outputs="Paris [gouvernement.fr].")
    assert result.score == 1.0
    assert [step["choice"] for step in result.metadata["path"]] == ["yes", "yes"]
    assert "answer_quality" in RUBRIC_PRESETS

    triad = rag_triad(config)
    assert set(triad) == {"context_relevance", "groundedness", "answer_relevance"}
    g = triad["groundedness"].evaluate(
        inputs={"question": "Capital of France?", "context": ["Paris is France's capital."]},
        outputs="Paris is the capital. It has 9 million people.")
    assert g.score == 0.5 and [c["supported"] for c in g.metadata["claims"]] == [True, False]

    ev = AgentAsJudgeEvaluator(config, requirements=[
        "The flight is under $400", "The flight is refundable",
        "The itinerary was emailed to the user"])
    r = ev.evaluate(inputs={"question": "Book the cheapest refundable flight"}, outputs=TRACE)
    assert r.score == pytest.approx(2 / 3)
    assert [v["satisfied"] for v in r.metadata["verdicts"]] == [True, True, False]


def test_seed_004_rubric_yaml_agentevals_and_registry(script):
    from studio.evaluators import agentevals_adapter, build_evaluator, list_evaluators

    model = script({"choice": "partially", "reasoning": "Half of it."})
    dag = {"key": "answer_quality", "root": "answers", "nodes": {
        "answers": {"question": "Does the response directly answer the question?",
                    "choices": ["yes", "partially", "no"],
                    "branches": {"yes": "grounded",
                                 "partially": {"score": 0.5, "label": "partial"},
                                 "no": {"score": 0.0, "label": "no answer"}}},
        "grounded": {"question": "Is the answer well-supported (no fabricated claims)?",
                     "choices": ["yes", "no"],
                     "branches": {"yes": {"score": 1.0, "label": "complete"},
                                  "no": {"score": 0.7, "label": "unsourced"}}}}}
    rubric = build_evaluator("rubric_dag", {"dag": dag, "model": model})
    assert rubric.evaluate(inputs="Capital of France?", outputs="France.").score == 0.5

    ev = None
    if agentevals_adapter.is_available():
        ev = agentevals_adapter.graph_trajectory_strict_match()
    assert ev.evaluate(outputs={"steps": [["__start__", "agent"]]},
                       reference_outputs={"steps": [["__start__", "agent"]]}).score == 1.0

    assert {"name": "trajectory_match"}.items() <= list_evaluators()[0].items() or any(
        e["name"] == "trajectory_match" for e in list_evaluators())
    ev = build_evaluator("trajectory_match", {"mode": "unordered"})
    assert ev.evaluate(outputs=TRACE, reference_outputs=TRACE).score == 1.0
