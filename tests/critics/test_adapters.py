"""Evaluators and judges as critics (studio.critics.protocol.Critic), and declarative configs."""

from __future__ import annotations

import asyncio

import pytest

from studio.critics.adapters import (
    EvaluatorCritic,
    JudgeCritic,
    WeightedCritic,
    as_critic,
    build_critic,
)
from studio.critics.protocol import Critic, Sample
from studio.evaluators import (
    AgentAsJudgeEval,
    ExactMatch,
    TrajectoryMatchEvaluator,
    UnknownEvaluatorError,
    make_rubric_dag,
)
from studio.model.errors import ConfigError, CriticOutputParseError
from studio.model.feedback import Feedback

TRACE = {
    "events": [
        {"author": "user", "type": "text", "text": "find flights"},
        {"author": "agent", "type": "tool_call", "id": "1", "name": "search", "args": {"q": "x"}},
        {"author": "agent", "type": "tool_result", "id": "1", "name": "search", "result": "ok"},
        {"author": "agent", "type": "text", "text": "Paris"},
    ],
    "tool_calls": [{"id": "1", "name": "search", "args": {"q": "x"}, "result": "ok"}],
    "state_delta": {}, "usage": {"total_tokens": 10},
}


def sample(output="Paris", expected="paris", trace=None, **example):
    return Sample(input_text="Capital of France?", output=output, expected=expected,
                  example={"input": "Capital of France?", **example}, trace=trace or {})


def assess(critic, s):
    return asyncio.run(critic.assess(s))


class Fixed:
    """A stand-in critic with a fixed answer."""

    def __init__(self, name, score, feedback="", **metadata):
        self.name = name
        self.result = Feedback(score=score, text=feedback, extra=metadata)

    async def assess(self, sample):
        return self.result


class Raises:
    name = "unparseable"

    async def assess(self, sample):
        raise CriticOutputParseError("no JSON in reply", raw_output="meh")


def test_evaluator_critic_implements_the_protocol_and_passes_feedback():
    critic = EvaluatorCritic(ExactMatch(case_sensitive=False))
    assert isinstance(critic, Critic)
    assert critic.name == "exact_match" and critic.use == "output"
    feedback = assess(critic, sample())
    assert feedback.score == 1.0
    assert feedback.text == "output equals the reference"
    assert feedback.extra["evaluator"] == "exact_match" and feedback.extra["value"] is True
    assert feedback.error is None


def test_none_score_comes_with_an_error():
    feedback = assess(EvaluatorCritic(ExactMatch()), sample(expected=None))
    assert feedback.score is None
    assert feedback.error == "no reference to compare with (it is None)"


def test_trajectory_evaluator_reads_the_trace_and_the_expected_trajectory_column():
    critic = EvaluatorCritic(TrajectoryMatchEvaluator(), name="tools")
    assert critic.use == "trace"
    good = sample(trace=TRACE, expected_trajectory=['search(q="x")'])
    feedback = assess(critic, good)
    assert feedback.score == 1.0
    assert feedback.extra["agent_tools"] == ["search"]
    bad = sample(trace=TRACE, expected_trajectory=[{"name": "book", "args": {}}])
    feedback = assess(critic, bad)
    assert feedback.score == 0.0
    assert "call 1 is search(q='x'), expected book()" in feedback.text


def test_trajectory_reference_falls_back_to_expected_and_to_reference_key():
    critic = EvaluatorCritic(TrajectoryMatchEvaluator())
    # The sample's `expected` is text for text evaluators, never a trajectory reference.
    assert assess(critic, sample(trace=TRACE, expected=["search(q='x')"])).score is None
    s = sample(trace=TRACE, expected="unused")
    s.example["expected"] = ['search(q="x")']
    assert assess(critic, s).score == 1.0
    keyed = EvaluatorCritic(TrajectoryMatchEvaluator(), reference_key="gold")
    assert assess(keyed, sample(trace=TRACE, gold=["search(q='x')"])).score == 1.0


def test_failed_agent_run_or_missing_trace_is_none_with_a_reason():
    critic = EvaluatorCritic(TrajectoryMatchEvaluator())
    feedback = assess(critic, sample(trace={"error": "timed out after 5s", "attempts": 2},
                                            expected_trajectory=[]))
    assert feedback.score is None
    assert feedback.error == "no trajectory: the agent run failed (timed out after 5s)"
    feedback = assess(critic, sample(expected_trajectory=[]))
    assert feedback.error == "no trajectory was recorded for this sample"


def test_an_evaluator_bug_becomes_a_recorded_none():
    class Buggy(ExactMatch):
        def evaluate(self, **kwargs):
            raise ZeroDivisionError("oops")

    feedback = assess(EvaluatorCritic(Buggy()), sample())
    assert feedback.score is None
    assert feedback.error == "evaluator exact_match failed: ZeroDivisionError: oops"


def test_example_columns_reach_llm_evaluators(script):
    model = script({"verdicts": [{"id": 1, "requirement": "Say Paris", "satisfied": True,
                                   "evidence": "final answer"}], "reasoning": "ok"})
    from studio.evaluators import AgentAsJudgeEvaluator

    critic = EvaluatorCritic(AgentAsJudgeEvaluator(model=model))
    feedback = assess(critic, sample(trace=TRACE, requirements=["Say Paris"]))
    assert feedback.score == 1.0
    assert feedback.extra["verdicts"][0]["requirement"] == "Say Paris"


def test_rubric_path_is_kept_in_the_critic_metadata(script):
    model = script({"choice": "partially", "reasoning": "hedges"})
    critic = EvaluatorCritic(make_rubric_dag(preset="answer_quality", model=model))
    feedback = assess(critic, sample())
    assert feedback.score == 0.5
    assert feedback.extra["path"][0]["choice"] == "partially"
    assert feedback.text.startswith("partial answer (answers=partially)")


def test_use_must_be_output_or_trace():
    with pytest.raises(ValueError, match="use must be one of output, trace; got 'both'"):
        EvaluatorCritic(ExactMatch(), use="both")


def test_judge_critic_normalizes_numeric_scores(script):
    judge = AgentAsJudgeEval(criteria="Correct capital", scoring_strategy="numeric",
                             model=script({"score": 7, "reason": "right, terse"}))
    critic = as_critic(judge)
    assert isinstance(critic, JudgeCritic) and isinstance(critic, Critic)
    feedback = assess(critic, sample())
    assert feedback.score == pytest.approx(6 / 9)
    assert feedback.text == "right, terse" and feedback.extra == {
        "judge_score": 7, "passed": True, "scoring_strategy": "numeric", "threshold": 7}


def test_judge_critic_binary_and_failures(script):
    binary = JudgeCritic(AgentAsJudgeEval(criteria="c", model=script(
        {"passed": False, "reason": "wrong"})), name="judge")
    assert assess(binary, sample()).score == 0.0
    broken = JudgeCritic(AgentAsJudgeEval(criteria="c", scoring_strategy="numeric",
                                          model=script({"score": 11, "reason": "!"})))
    feedback = assess(broken, sample())
    assert feedback.score is None
    assert feedback.error == "judge score 11 is outside 1-10"


def test_weighted_mean_over_components_that_scored():
    critic = WeightedCritic([(Fixed("a", 1.0, "great"), 3), (Fixed("b", 0.0, "poor"), 1)],
                            name="combo")
    feedback = assess(critic, sample())
    assert feedback.score == 0.75
    assert feedback.extra["excluded"] == []
    assert feedback.text == ("[a] score 1.00 (weight 3): great\n"
                             "[b] score 0.00 (weight 1): poor")
    assert [c["name"] for c in feedback.extra["components"]] == ["a", "b"]


def test_none_components_are_excluded_never_averaged_as_zero():
    critic = WeightedCritic([(Fixed("a", 0.8), 1), (Fixed("b", None, error="timed out"), 5),
                             (Raises(), 1)])
    feedback = assess(critic, sample())
    assert feedback.score == pytest.approx(0.8)
    assert feedback.extra["excluded"] == ["b", "unparseable"]
    assert "[b] could not evaluate (excluded): timed out" in feedback.text
    assert "CriticOutputParseError: no JSON in reply" in feedback.text


def test_all_components_none_gives_none():
    critic = WeightedCritic([(Fixed("a", None, error="x"), 1), (Fixed("b", None, error="y"), 1)])
    feedback = assess(critic, sample())
    assert feedback.score is None
    assert feedback.error == "no component could evaluate: a: x; b: y"


def test_weighted_accepts_evaluators_and_lifts_their_details(script):
    rubric = make_rubric_dag(preset="answer_quality",
                             model=script({"choice": "no", "reasoning": "wrong city"}))
    critic = WeightedCritic([(ExactMatch(case_sensitive=False), 1), (rubric, 1),
                             (ExactMatch(), 2)])
    feedback = assess(critic, sample())
    assert feedback.score == pytest.approx((1.0 + 0.0 + 0.0) / 4)
    assert [c["name"] for c in feedback.extra["components"]] == [
        "exact_match", "answer_quality", "exact_match#2"]
    assert feedback.extra["path"][0]["choice"] == "no"  # one rubric component: shown at the top


def test_weights_must_be_positive():
    with pytest.raises(ValueError, match="weight of 'a' must be a positive number; got 0"):
        WeightedCritic([(Fixed("a", 1.0), 0)])
    with pytest.raises(ValueError, match="at least one"):
        WeightedCritic([])
    with pytest.raises(ValueError, match="expected a critic, an evaluator or an AgentAsJudgeEval"):
        WeightedCritic([("exact_match", 1)])


def test_build_critic_single_evaluator():
    critic = build_critic({"type": "evaluator", "evaluator": "exact_match",
                           "params": {"case_sensitive": False}, "name": "exact"})
    assert isinstance(critic, EvaluatorCritic) and critic.name == "exact"
    assert assess(critic, sample()).score == 1.0


def test_build_critic_weighted_combination(script):
    judge_model = script({"passed": True, "reason": "concise"})
    critic = build_critic({"name": "combo", "evaluators": [
        {"name": "exact_match", "params": {"case_sensitive": False}, "weight": 2},
        {"name": "contains", "params": {"substring": "Lyon"}, "label": "mentions_lyon"},
        {"agent_as_judge": {"criteria": "Be concise", "model": judge_model}, "weight": 1},
    ]})
    assert isinstance(critic, WeightedCritic) and critic.name == "combo"
    assert [(label, weight) for label, _, weight in critic.components] == [
        ("exact_match", 2.0), ("mentions_lyon", 1.0), ("agent_as_judge", 1.0)]
    assert assess(critic, sample()).score == pytest.approx((2 * 1.0 + 0.0 + 1.0) / 4)


def test_build_critic_agent_as_judge(script):
    critic = build_critic({"agent_as_judge": {
        "criteria": "Correct", "scoring_strategy": "numeric", "threshold": 8,
        "model": script({"score": 10, "reason": "perfect"})}})
    assert isinstance(critic, JudgeCritic)
    assert assess(critic, sample()).score == 1.0


def test_build_critic_unknown_evaluator_names_the_known_ones():
    with pytest.raises(UnknownEvaluatorError) as info:
        build_critic({"evaluator": "bleu"})
    assert "unknown evaluator 'bleu'; known evaluators: agent_as_judge" in str(info.value)
    with pytest.raises(UnknownEvaluatorError, match="'rouge'"):
        build_critic({"evaluators": [{"name": "exact_match"}, {"name": "rouge"}]})


def test_build_critic_bad_shapes():
    with pytest.raises(ConfigError, match="give exactly one of 'evaluator', 'evaluators', "
                                          "'agent_as_judge' or 'adk_metrics'"):
        build_critic({"evaluator": "exact_match", "agent_as_judge": {"criteria": "c"}})
    with pytest.raises(ConfigError, match="give exactly one of"):
        build_critic({"name": "nothing"})
    with pytest.raises(ConfigError, match="unknown key 'weights'; accepted keys: "):
        build_critic({"evaluator": "exact_match", "weights": 2})
    with pytest.raises(ConfigError, match=r"critic.evaluators\[0\].weight: weight of "
                                          r"'exact_match' must be a positive number; got -1"):
        build_critic({"evaluators": [{"name": "exact_match", "weight": -1}]})
    with pytest.raises(ConfigError, match="'evaluators' must be a non-empty list"):
        build_critic({"evaluators": []})
    with pytest.raises(ConfigError, match="scoring_strategy must be one of numeric, binary"):
        build_critic({"agent_as_judge": {"criteria": "c", "scoring_strategy": "stars"}})
    with pytest.raises(ConfigError, match="unknown key 'on_fail'"):
        build_critic({"agent_as_judge": {"criteria": "c", "on_fail": "print"}})
    with pytest.raises(ConfigError, match=r"critic.use: use must be one of output, trace"):
        build_critic({"evaluator": "exact_match", "use": "both"})
    with pytest.raises(ConfigError, match="a critic config must be a mapping"):
        build_critic(["exact_match"])


@pytest.mark.parametrize("bad", [7.0, -0.5, float("nan"), float("inf")])
def test_an_out_of_range_component_score_is_excluded_not_averaged(bad):
    critic = WeightedCritic([(Fixed("custom", bad, "great"), 1.0), (Fixed("sane", 0.5), 1.0)])
    feedback = assess(critic, sample())
    assert feedback.score == 0.5 and feedback.extra["excluded"] == ["custom"]
    assert repr(bad) in feedback.text and "outside 0.0 to 1.0" in feedback.text
