"""Several people's labels of one trial: the one rule (studio.model.consensus) that
merge_overrides applies, and that the store's SQL mirrors (tests/store/test_consensus_sql.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from studio.model.consensus import TIE, consensus_score, is_pass_fail, mean_dimensions
from studio.model.records import Override, labels_by_person, merge_overrides

START = datetime(2026, 1, 1, tzinfo=UTC)


def label(n: int, reviewer: str | None, score: float | None = None, feedback: str | None = None,
          **extra) -> Override:
    return Override(id=n, trial_id=1, score=score, feedback=feedback, reviewer=reviewer,
                    author=reviewer or "local", judge_score=0.3, judge_feedback="judge says",
                    created_at=START + timedelta(seconds=n), **extra)


@pytest.mark.parametrize("scores, expected", [
    ([0.2, 0.8], 0.5), ([0.4], 0.4), ([1.0, 1.0, 0.0], 1.0), ([0.0, 0.0, 1.0], 0.0),
    ([1.0, 0.0], TIE), ([1.0, 0.5], 0.75), ([], None),
])
def test_the_consensus_is_the_mean_or_a_pass_fail_majority(scores, expected):
    assert consensus_score(scores) == expected
    assert is_pass_fail([1.0, 0.0]) and not is_pass_fail([1.0, 0.5])


def test_one_local_person_keeps_the_latest_value_of_each_field_as_before():
    merged = merge_overrides([label(1, None, 0.9), label(2, None, feedback="keep it"),
                              label(3, None, 0.4)])
    assert (merged.score, merged.feedback, merged.id) == (0.4, "keep it", 3)
    assert (merged.judge_score, merged.judge_feedback) == (0.3, "judge says")


def test_two_reviewers_are_combined_never_replaced():
    merged = merge_overrides([label(1, "ana", 0.2, "too long"), label(2, "bo", 0.8, "fine"),
                              label(3, "ana", 0.4)])  # ana's own latest score is 0.4
    assert merged.score == pytest.approx(0.6)
    assert merged.feedback == "too long\nfine"
    assert merged.author == "ana, bo" and not merged.adjudicated


def test_a_pass_fail_vote_takes_the_majority_and_a_tie_waits_at_the_middle():
    votes = [label(1, "ana", 1.0), label(2, "bo", 0.0), label(3, "cy", 1.0)]
    assert merge_overrides(votes).score == 1.0
    assert merge_overrides(votes[:2]).score == TIE


def test_an_adjudication_settles_the_fields_it_gives_and_keeps_the_labels():
    rows = [label(1, "ana", 0.2, "too long"), label(2, "bo", 0.8, "fine"),
            label(3, "owner", 0.7, adjudicated=True)]
    merged = merge_overrides(rows)
    assert (merged.score, merged.author, merged.adjudicated) == (0.7, "owner", True)
    assert merged.feedback == "too long\nfine"  # not given by the ruling: the consensus's
    people = labels_by_person(rows)
    assert {name: o.score for name, o in people.items()} == {"ana": 0.2, "bo": 0.8}
    withdrawn = rows[2].model_copy(update={"undone_at": START})
    assert merge_overrides([*rows[:2], withdrawn]).score == pytest.approx(0.5)


def test_an_undone_label_is_no_label():
    rows = [label(1, "ana", 0.2), label(2, "bo", 0.8).model_copy(update={"undone_at": START})]
    assert merge_overrides(rows).score == 0.2
    assert merge_overrides([rows[1]]) is None


def test_dimension_scores_are_combined_per_dimension():
    rows = [label(1, "ana", 0.5, dimensions={"structure": 0.2, "imagery": 1.0}),
            label(2, "bo", 0.5, dimensions={"structure": 0.6})]
    assert merge_overrides(rows).dimensions == pytest.approx({"structure": 0.4, "imagery": 1.0})
    assert mean_dimensions([None, {}]) is None
    with pytest.raises(ValueError, match="structure"):
        Override(trial_id=1, dimensions={"structure": 1.5})
