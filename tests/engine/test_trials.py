"""TrialBuilder and normalize_feedback: the trial records reflection reads."""

from __future__ import annotations

from studio.engine.propose.trials import TrialBuilder, normalize_feedback


def test_seed_module_example():
    trial = TrialBuilder().build_trial(input_text="What is 2+2?", output="4", score=0.95,
                                       metadata={"feedback": "Correct answer"})
    assert trial["feedback"]["score"] == 0.95
    assert trial["trajectory"]["input"] == "What is 2+2?"
    assert trial["feedback"]["feedback_text"] == "Correct answer"


def test_minimal_and_full_trials():
    builder = TrialBuilder()
    trial = builder.build_trial(input_text="Hello", output="Hi there!", score=0.8)
    assert trial == {"feedback": {"score": 0.8},
                     "trajectory": {"input": "Hello", "output": "Hi there!"}}
    full = builder.build_trial(
        input_text="Explain AI", output="AI is...", score=0.9,
        metadata={"feedback": "Clear explanation", "dimension_scores": {"clarity": 0.95},
                  "actionable_guidance": "Add examples"},
        extra_trajectory={"component": "instruction"})
    assert full["feedback"] == {"score": 0.9, "feedback_text": "Clear explanation",
                                "feedback_guidance": "Add examples",
                                "feedback_dimensions": {"clarity": 0.95}}
    assert full["trajectory"]["component"] == "instruction"


def test_build_feedback_seed_examples():
    builder = TrialBuilder()
    assert builder.build_feedback(0.75) == {"score": 0.75}
    feedback = builder.build_feedback(0.85, metadata={"feedback": "Good work",
                                                      "dimension_scores": {"accuracy": 0.9}})
    assert "feedback_text" in feedback and feedback["feedback_dimensions"] == {"accuracy": 0.9}


def test_empty_values_are_left_out_and_errors_kept():
    feedback = TrialBuilder().build_feedback(
        0.1, {"feedback": "  ", "dimension_scores": {}, "actionable_guidance": ""},
        error="timeout", log_passthrough=True)
    assert feedback == {"score": 0.1, "error": "timeout"}


def test_trace_and_optional_input():
    builder = TrialBuilder()
    trial = builder.build_trial(input_text="Count to 3", output="1, 2, 3", score=1.0,
                                trace={"tool_calls": [{"name": "count"}]},
                                extra_trajectory={"component": "counter"})
    assert "trace" in trial["trajectory"] and trial["trajectory"]["component"] == "counter"
    assert "input" not in builder.build_trial(None, "out", 0.5)["trajectory"]


def test_could_not_evaluate_keeps_none():
    trial = TrialBuilder().build_trial("q", "", None, error="critic reply is not JSON")
    assert trial["feedback"] == {"score": None, "error": "critic reply is not JSON"}


def test_normalize_feedback_documented_examples():
    assert normalize_feedback(0.75, "Good but verbose") == {
        "score": 0.75, "feedback_text": "Good but verbose"}
    assert normalize_feedback(0.45, {"feedback_text": "Too clinical",
                                     "dimension_scores": {"voice": 0.2},
                                     "actionable_guidance": "Add I statements"}) == {
        "score": 0.45, "feedback_text": "Too clinical", "dimensions": {"voice": 0.2},
        "guidance": "Add I statements"}
    assert normalize_feedback(0.6, {"feedback": "Legacy format"}) == {
        "score": 0.6, "feedback_text": "Legacy format"}
    assert normalize_feedback(0.3, None) == {"score": 0.3, "feedback_text": ""}


def test_normalize_feedback_mapping_rules():
    result = normalize_feedback(0.9, {"score": 0.1, "feedback_text": 42, "dimension_scores": {},
                                      "custom": "kept"})
    assert result == {"score": 0.9, "feedback_text": "42", "custom": "kept"}
