"""Inputs that would freeze the server are bounded: a catastrophic project regex is
"could not evaluate" after a timeout, with the pattern and the reason named."""

from __future__ import annotations

import random

import pytest

from studio.evaluators.text import REGEX_TIMEOUT_S, RegexMatch
from studio.views import diffing


@pytest.mark.slow
@pytest.mark.parametrize("pattern, output", [
    ("(x+x+)+y", "x" * 5000),
    ("(a|aa)+$", "a" * 5000 + "b"),
], ids=["nested-quantifier", "alternation-backtracking"])
def test_a_catastrophic_regex_is_could_not_evaluate_after_the_timeout(pattern, output):
    result = RegexMatch(pattern).evaluate(outputs=output)
    assert result.score is None and "could not evaluate" in result.comment
    assert pattern in result.comment and f"{len(output)}-character output" in result.comment
    assert f"{REGEX_TIMEOUT_S:g} s" in result.comment  # stopped by the timeout, not finished


def test_the_classic_redos_pattern_stays_fast_and_correct():
    result = RegexMatch("^(a+)+$").evaluate(outputs="a" * 40 + "b")
    assert result.score == 0.0 and "does not match" in result.comment
    assert RegexMatch("^(a+)+$").evaluate(outputs="a" * 40).score == 1.0


def _long_texts(layout: str, every: int = 97) -> tuple[str, str]:
    rng = random.Random(7)
    words = [rng.choice(["write", "a", "haiku", "rule", "three", "lines", "topic", "the"])
             for _ in range(20_000)]
    sep = " " if layout == "one-line" else "\n"
    return sep.join(words), sep.join("CHANGED" if i % every == 0 else w
                                     for i, w in enumerate(words))


@pytest.mark.parametrize("layout", ["one-line", "many-lines"])
def test_a_20k_word_diff_never_compares_more_than_the_pair_limit(layout, monkeypatch):
    """The word diff was quadratic (20k words: 249 s per render). Every block handed to the
    matcher is now within PAIR_LIMIT, and the diff still gives back both texts exactly."""
    sizes = []
    real = diffing.difflib.SequenceMatcher

    def recording(*, a, b, autojunk):
        sizes.append(len(a) * len(b))
        return real(a=a, b=b, autojunk=autojunk)

    monkeypatch.setattr(diffing.difflib, "SequenceMatcher", recording)
    old, new = _long_texts(layout)
    segments = diffing.word_diff(old, new)
    assert max(sizes, default=0) <= diffing.PAIR_LIMIT
    assert "".join(s.text for s in segments if s.kind != "insert") == old
    assert "".join(s.text for s in segments if s.kind != "delete") == new
    assert "CHANGED" in "".join(s.text for s in segments if s.kind == "insert")


def test_one_edit_in_a_long_instruction_is_shown_as_that_edit():
    old, _ = _long_texts("one-line")
    cut = old.index(" ", 50_000)
    new = old[:cut] + " EXTRA" + old[cut:]
    inserted = [s.text for s in diffing.word_diff(old, new) if s.kind == "insert"]
    deleted = [s.text for s in diffing.word_diff(old, new) if s.kind == "delete"]
    assert [text.strip() for text in inserted] == ["EXTRA"] and deleted == []


def test_a_page_computes_each_diff_once(monkeypatch):
    calls = []
    real = diffing._diff_tokens
    monkeypatch.setattr(diffing, "_diff_tokens", lambda *a, **k: calls.append(1) or real(*a, **k))
    diffing._cached_word_diff.cache_clear()
    old, new = _long_texts("many-lines", every=500)
    diffing.side_by_side_markdown(old, new)
    diffing.diff_stats(old, new)
    diffing.inline_markdown(old, new)
    assert len(calls) == 1
