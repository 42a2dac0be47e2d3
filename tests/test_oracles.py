"""The tests' own reference answers (tests/oracles.py) behave as the SQL they check is meant to."""

from __future__ import annotations

import pytest

from studio.model.records import Override, Split, Trial, TrialPhase
from studio.views.tables import TrialFilters, trial_frame
from tests.oracles import filter_trials, minibatch_means
from tests.views.test_tables import trial


def test_filters():
    o = Override(trial_id=3, score=1.0, judge_score=0.2, author="a")
    frame = trial_frame([trial(1, score=0.2, iteration=0, phase=TrialPhase.VALSET),
                         trial(2, score=None, error="timed out", iteration=1),
                         trial(3, score=0.2, iteration=2, override=o, candidate=2)],
                        {1: 0, 2: 1})
    ids = lambda f: list(filter_trials(frame, f)["id"])  # noqa: E731
    assert ids(TrialFilters()) == [1, 2, 3]
    assert ids(TrialFilters(iterations=(1, 2))) == [2, 3]
    assert ids(TrialFilters(candidates=[1])) == [3]
    assert ids(TrialFilters(phases=["valset"])) == [1]
    assert ids(TrialFilters(score_range=(0.5, 1.0))) == [2, 3]
    assert ids(TrialFilters(score_range=(0.5, 1.0), include_unscored=False)) == [3]
    assert ids(TrialFilters(errors="only errors")) == [2]
    assert ids(TrialFilters(errors="no errors")) == [1, 3]
    assert ids(TrialFilters(overridden="overridden")) == [3]
    assert ids(TrialFilters(overridden="not overridden")) == [1, 2]
    with pytest.raises(ValueError, match="errors filter"):
        filter_trials(frame, TrialFilters(errors="some"))


def test_minibatch_means_use_effective_child_scores():
    trials = [Trial(id=i, run_id="r", candidate_id=12, example_id=i, split=Split.TRAIN,
                    example_index=i, phase=TrialPhase.CHILD, proposal_id=2, score=s)
              for i, s in ((1, 0.5), (2, None), (3, 1.0))]
    assert minibatch_means(trials) == {2: {"child": 0.75}}


