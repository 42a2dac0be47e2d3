"""``response_match``: ROUGE-1 F, the offline counterpart of ADK's ``response_match_score``."""

from __future__ import annotations

import pytest

from studio.evaluators import build_evaluator


def test_rouge1_f_counts_shared_words_with_their_multiplicity():
    result = build_evaluator("response_match").evaluate(
        outputs="The cat sat on the mat.", reference_outputs="the cat lay on the mat")
    # 5 of 6 words shared each way: precision 5/6, recall 5/6
    assert result.score == pytest.approx(5 / 6)
    assert "words of the expected response missing: lay" in result.comment


def test_no_shared_word_is_zero_and_no_reference_is_unscored():
    evaluator = build_evaluator("response_match")
    assert evaluator.evaluate(outputs="sunny", reference_outputs="rain").score == 0.0
    assert evaluator.evaluate(outputs="sunny", reference_outputs=None).score is None
    assert evaluator.evaluate(outputs="", reference_outputs="").score == 1.0
