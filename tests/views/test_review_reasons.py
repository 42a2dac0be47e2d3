"""Review next's reasons stay quiet where they would be noise (issue 21, defect 5): praise
beside criticism is not praise, and a weighted critic whose components differ on every trial by
design is not flagged on every trial."""

from __future__ import annotations

import pytest

from studio.views.review_queue import (
    Group,
    build_queue,
    contradiction,
    disagreement,
    feedback_cues,
    usual_component_gap,
)
from tests.views.test_review_queue import trial


def test_praise_beside_criticism_is_not_praise():
    negative, positive = feedback_cues("Too short: a good answer explains itself.")
    assert negative == {"too short/long": 1} and positive == {}
    assert contradiction(trial(1, 0.1, feedback="Too short: a good answer explains itself")) \
        is None
    hedged = "A correct answer would name the season. Needs to be clear."
    assert feedback_cues(hedged) == ({}, {})
    assert contradiction(trial(2, 0.2, feedback=hedged)) is None


def test_praise_in_its_own_sentence_still_counts():
    negative, positive = feedback_cues("Too long. Excellent imagery, correct form.")
    assert negative == {"too short/long": 1} and positive == {"excellent": 1, "correct": 1}
    praise = contradiction(trial(1, 0.1, feedback="Excellent imagery, perfectly on topic."))
    assert praise is not None and "a low score with praise" in praise.reason


def parts(exact: float, judge: float) -> list[dict]:
    return [{"name": "exact_match", "score": exact}, {"name": "judge", "score": judge}]


def test_a_weighted_critics_usual_gap_is_not_a_disagreement():
    by_design = [trial(i, 0.5, example=i, components=parts(1.0, 0.3)) for i in range(1, 6)]
    odd = trial(6, 0.5, example=6, components=parts(0.0, 1.0))
    assert usual_component_gap([*by_design, odd]) == pytest.approx(0.7)
    queue = build_queue(trials=[*by_design, odd], reviewed_ids=set(),
                        reviewed_example_ids=set(range(1, 7)))
    assert [(item.trial.id, item.group) for item in queue] == [(6, Group.DISAGREEMENT)]
    assert "they usually differ by 0.70" in queue[0].reasons[0]
    assert disagreement(by_design[0], usual_component_gap(by_design)) is None
    assert disagreement(by_design[0]) is not None  # alone, with no run to compare with


def test_too_few_trials_have_no_usual_gap():
    assert usual_component_gap([trial(1, 0.5, components=parts(1.0, 0.0))] * 2) == 0.0
    assert usual_component_gap([trial(1, 0.5)]) == 0.0
