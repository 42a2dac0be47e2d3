"""ToolUseEvaluator and ToolCallAccuracyEvaluator."""

from __future__ import annotations

import pytest

from studio.evaluators import ToolCallAccuracyEvaluator, ToolUseEvaluator
from studio.model.errors import ConfigError


def call(name, **args):
    return {"name": name, "args": args}


TRACE = [call("search", q="flights"), call("submit", id=1, note="x")]


def test_seed_example_tool_use_with_expected_args():
    result = ToolUseEvaluator(expected_tool="submit", expected_args={"id": 1}).evaluate(
        outputs=TRACE)
    assert result.score == 1.0
    assert result.value is True
    assert result.metadata["matching_call"] == "submit(id=1, note='x')"
    assert result.metadata["called_tools"] == ["search", "submit"]


def test_tool_use_name_only_and_missing_tool():
    assert ToolUseEvaluator("search").evaluate(outputs=TRACE).score == 1.0
    missing = ToolUseEvaluator("email").evaluate(outputs=TRACE)
    assert missing.score == 0.0
    assert missing.comment == "tool 'email' was not called"


def test_tool_use_with_wrong_args_says_what_was_called():
    result = ToolUseEvaluator("submit", {"id": 2}).evaluate(outputs=TRACE)
    assert result.score == 0.0
    assert "calls with other args: submit(id=1, note='x')" in result.comment


def test_tool_use_exact_args_mode():
    assert ToolUseEvaluator("submit", {"id": 1}, args_match_mode="exact").evaluate(
        outputs=TRACE).score == 0.0
    assert ToolUseEvaluator("submit", {"id": 1, "note": "x"}, args_match_mode="exact").evaluate(
        outputs=TRACE).score == 1.0


def test_tool_use_edge_cases():
    assert ToolUseEvaluator("submit").evaluate(outputs=[]).score == 0.0
    assert ToolUseEvaluator("submit").evaluate(outputs=None).score is None
    with pytest.raises(ConfigError, match="expected_tool must be a tool name"):
        ToolUseEvaluator("  ")
    with pytest.raises(ValueError, match="args_match_mode must be one of"):
        ToolUseEvaluator("submit", args_match_mode="fuzzy")


def test_seed_example_tool_call_accuracy_partial_credit():
    gold = [call("search", q="flights"), call("book", id=3), call("email", to="me")]
    result = ToolCallAccuracyEvaluator(args_match_mode="exact").evaluate(
        outputs=TRACE, reference_outputs=gold)
    assert result.score == pytest.approx(1 / 3)
    assert result.value == "1/3"
    assert result.metadata["missing_calls"] == ["book(id=3)", "email(to='me')"]
    assert "reproduced 1 of 3 reference tool calls" in result.comment


def test_tool_call_accuracy_uses_a_maximum_matching_not_greedy():
    gold = [call("search", q="x", lang="en"), call("search", q="x")]
    agent = [call("search", q="x"), call("search", q="x", lang="en")]
    # With subset args a greedy pass would credit only one of the two reference calls.
    result = ToolCallAccuracyEvaluator(args_match_mode="subset").evaluate(
        outputs=agent, reference_outputs=gold)
    assert result.score == 1.0


def test_tool_call_accuracy_each_reference_call_credited_once():
    gold = [call("search", q="x"), call("search", q="x")]
    result = ToolCallAccuracyEvaluator().evaluate(outputs=[call("search", q="x")],
                                                  reference_outputs=gold)
    assert result.score == 0.5


def test_tool_call_accuracy_empty_reference_is_undefined_not_zero():
    result = ToolCallAccuracyEvaluator().evaluate(outputs=TRACE, reference_outputs=[])
    assert result.score is None
    assert result.comment == "the reference has no tool calls, so accuracy is undefined"
    assert ToolCallAccuracyEvaluator().evaluate(outputs=[], reference_outputs=TRACE).score == 0.0
    assert ToolCallAccuracyEvaluator().evaluate(outputs=None, reference_outputs=TRACE).score is None
