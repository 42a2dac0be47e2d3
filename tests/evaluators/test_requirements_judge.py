"""AgentAsJudgeEvaluator: verdicts matched to requirements, score over requirements."""

from __future__ import annotations

import pytest

from studio.evaluators import AgentAsJudgeEvaluator
from studio.evaluators.requirements_judge import match_verdicts
from studio.model.errors import ConfigError

REQUIREMENTS = [
    "The flight is under $400",
    "The flight is refundable",
    "The itinerary was emailed to the user",
]
TRAJECTORY = [
    {"role": "user", "content": "Book a refundable flight under $400 and email me"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function",
         "function": {"name": "book", "arguments": '{"flight": "AF1", "refundable": true}'}}]},
    {"role": "tool", "tool_call_id": "1", "content": "confirmed AF1 $320"},
    {"role": "assistant", "content": "Booked! I will email the itinerary."},
]


def verdict(i, satisfied, evidence="", text=None):
    return {"id": i, "requirement": text or REQUIREMENTS[i - 1], "satisfied": satisfied,
            "evidence": evidence}


def test_seed_example_per_requirement_verdicts(script):
    model = script({"verdicts": [
        verdict(1, True, "step 3: $320"),
        verdict(2, True, "step 2: refundable=true"),
        verdict(3, False, "step 4 only promises an email; no email tool call"),
    ], "reasoning": "Plans to email but never does."})
    ev = AgentAsJudgeEvaluator({"model": model}, requirements=REQUIREMENTS)
    r = ev.evaluate(inputs={"question": "Book a flight"}, outputs=TRAJECTORY)
    assert r.score == pytest.approx(2 / 3)
    assert r.value == "2/3 requirements satisfied"
    assert r.metadata["verdicts"][2] == {
        "requirement": "The itinerary was emailed to the user", "satisfied": False,
        "evidence": "step 4 only promises an email; no email tool call", "flag": None}
    assert "not satisfied: The itinerary was emailed to the user" in r.comment
    request = script.requests(model)[-1]
    assert "Requirements:\n1. The flight is under $400\n2. The flight is refundable" in (
        request.last_user)
    assert 'calls tool book({"flight": "AF1", "refundable": true})' in request.last_user


def test_a_requirement_without_a_verdict_counts_as_not_satisfied_and_is_flagged(script):
    # Potato divides by the verdicts returned, so a skipped requirement vanishes (2 of 2 -> 1.0).
    model = script({"verdicts": [verdict(1, True), verdict(2, True)], "reasoning": ""})
    r = AgentAsJudgeEvaluator(model=model, requirements=REQUIREMENTS).evaluate(
        outputs=TRAJECTORY)
    assert r.score == pytest.approx(2 / 3) and r.value == "2/3 requirements satisfied"
    assert r.metadata["verdicts"][2] == {"requirement": REQUIREMENTS[2], "satisfied": False,
                                         "evidence": "", "flag": "missing verdict"}
    assert (r.metadata["satisfied"], r.metadata["total"], r.metadata["flagged"],
            r.metadata["missing"]) == (2, 3, 1, 1)
    assert ("The itinerary was emailed to the user: the judge gave no verdict (counted as not "
            "satisfied)") in r.comment


def test_verdicts_are_matched_by_text_not_position(script):
    model = script({"verdicts": [
        {"requirement": "the itinerary was emailed to the user.", "satisfied": False},
        {"requirement": "The flight is under $400", "satisfied": True},
        {"requirement": "The flight is refundable", "satisfied": True},
    ], "reasoning": ""})
    r = AgentAsJudgeEvaluator(model=model, requirements=REQUIREMENTS).evaluate(
        outputs=TRAJECTORY)
    assert [v["satisfied"] for v in r.metadata["verdicts"]] == [True, True, False]


def test_match_verdicts_by_number_fuzzy_text_duplicates_and_strangers():
    verdicts, unmatched = match_verdicts(REQUIREMENTS, [
        {"requirement": "Requirement 2", "satisfied": "yes"},
        {"requirement": "The flight is under 400 dollars", "satisfied": True},
        {"id": 2, "requirement": "again", "satisfied": False},
        {"requirement": "The hotel has a pool", "satisfied": True},
        {"id": 3, "satisfied": "perhaps"},
    ])
    assert [v["satisfied"] for v in verdicts] == [True, True, False]
    assert verdicts[2]["flag"] == "unreadable verdict"
    assert [u["why"] for u in unmatched] == ["repeats a requirement", "matches no requirement"]


def test_no_usable_verdict_is_none_not_zero(script):
    model = script({"verdicts": [], "reasoning": "could not tell"})
    r = AgentAsJudgeEvaluator(model=model, requirements=REQUIREMENTS).evaluate(outputs=TRAJECTORY)
    assert r.score is None
    assert r.comment == "the judge returned no verdict that matches a requirement"
    prose = script("All good!")
    r = AgentAsJudgeEvaluator(model=prose, requirements=REQUIREMENTS).evaluate(outputs=TRAJECTORY)
    assert r.score is None
    assert r.comment.startswith("judge reply holds no JSON object")


def test_requirements_from_inputs_or_keyword(script):
    model = script({"verdicts": [verdict(1, True, text="Say hi")], "reasoning": ""})
    ev = AgentAsJudgeEvaluator(model=model)
    from_inputs = ev.evaluate(inputs={"question": "greet", "requirements": ["Say hi"]},
                              outputs="hi")
    assert from_inputs.score == 1.0
    from_keyword = ev.evaluate(inputs="greet", outputs="hi", requirements="Say hi")
    assert from_keyword.score == 1.0
    assert ev.evaluate(inputs="greet", outputs="hi").comment == "no requirements given"


def test_empty_requirements_are_rejected():
    with pytest.raises(ConfigError) as info:
        AgentAsJudgeEvaluator(requirements=[])
    assert "requirements is empty: give at least one requirement" in str(info.value)
    with pytest.raises(ConfigError, match="requirement 2 is '  '; each requirement must be"):
        AgentAsJudgeEvaluator(requirements=["ok", "  "])


def test_empty_requirements_at_evaluate_time_are_none(script):
    model = script({"verdicts": [], "reasoning": ""})
    r = AgentAsJudgeEvaluator(model=model).evaluate(outputs="hi", requirements=[])
    assert r.score is None
    assert "requirements is empty" in r.comment
    assert script.requests(model) == []


def test_none_and_unknown_trajectories(script):
    model = script({"verdicts": [], "reasoning": ""})
    ev = AgentAsJudgeEvaluator(model=model, requirements=REQUIREMENTS)
    assert ev.evaluate(outputs=None).comment == "no trajectory to judge (it is None)"
    assert "unknown trajectory shape" in ev.evaluate(outputs={"odd": 1}).comment
