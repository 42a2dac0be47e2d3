"""One judge call on the embedded SmolLM2 model, through the real ADK + LiteLLM path."""

from __future__ import annotations

import pytest

from studio.evaluators import AgentAsJudgeEval


@pytest.mark.local_model
def test_binary_criteria_judge_on_the_embedded_model():
    judge = AgentAsJudgeEval(criteria="The answer names the capital of France.")
    result = judge.run(input="What is the capital of France?", output="Paris.")
    (case,) = result.results
    # A 135M model may judge either way; the result must be well-formed either way: a verdict
    # with its reasoning, or a recorded error (never a dropped case).
    if case.error is None:
        assert case.passed in (True, False)
        assert result.pass_rate in (0.0, 100.0)
        assert case.normalized_score in (0.0, 1.0)
    else:
        assert case.passed is None and result.error_count == 1 and result.pass_rate is None
