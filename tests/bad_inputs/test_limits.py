"""Inputs that would freeze the server are bounded: a catastrophic project regex is
"could not evaluate" after a timeout, with the pattern and the reason named."""

from __future__ import annotations

import time

import pytest

from studio.evaluators.text import REGEX_TIMEOUT_S, RegexMatch


@pytest.mark.parametrize("pattern, output", [
    ("(x+x+)+y", "x" * 5000),
    ("(a|aa)+$", "a" * 5000 + "b"),
], ids=["nested-quantifier", "alternation-backtracking"])
def test_a_catastrophic_regex_is_could_not_evaluate_after_the_timeout(pattern, output):
    started = time.monotonic()
    result = RegexMatch(pattern).evaluate(outputs=output)
    elapsed = time.monotonic() - started
    assert result.score is None and "could not evaluate" in result.comment
    assert pattern in result.comment and f"{len(output)}-character output" in result.comment
    assert elapsed < REGEX_TIMEOUT_S + 2.0


def test_the_classic_redos_pattern_stays_fast_and_correct():
    result = RegexMatch("^(a+)+$").evaluate(outputs="a" * 40 + "b")
    assert result.score == 0.0 and "does not match" in result.comment
    assert RegexMatch("^(a+)+$").evaluate(outputs="a" * 40).score == 1.0
