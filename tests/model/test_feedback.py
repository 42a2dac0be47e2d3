"""The Feedback record: every key spelling read once, stored rows always open, bad shapes named."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import insert

from studio.model.errors import FeedbackShapeError
from studio.model.feedback import CRITIC_SCORER_KEYS, NORMALIZED_KEYS, Feedback, read_feedback
from studio.model.records import Candidate, Run, Split, Trial, TrialPhase
from studio.store import schema as tables

OLD_SPELLINGS = [
    {"feedback": "terse", "dimension_scores": {"clarity": 0.5}, "actionable_guidance": "expand"},
    {"feedback_text": "terse", "feedback_dimensions": {"clarity": 0.5},
     "feedback_guidance": "expand"},
    {"text": "terse", "dimensions": {"clarity": 0.5}, "guidance": "expand"},
]


@pytest.mark.parametrize("stored", OLD_SPELLINGS)
def test_every_spelling_reads_into_the_same_fields(stored):
    feedback = Feedback.model_validate({**stored, "verdicts": [{"ok": True}]})
    assert (feedback.text, feedback.guidance, feedback.dimensions) == (
        "terse", "expand", {"clarity": 0.5})
    assert feedback.extra == {"verdicts": [{"ok": True}]}


def test_strict_reading_names_the_bad_field_and_value():
    with pytest.raises(FeedbackShapeError, match=r"'dimension_scores' must be an object.*\[1, 2\]"):
        read_feedback({"dimension_scores": [1, 2]})
    with pytest.raises(FeedbackShapeError, match=r"'dimension_scores.clarity' must be a number"):
        read_feedback({"dimension_scores": {"clarity": "high"}})


def test_lenient_reading_keeps_a_bad_stored_value_instead_of_crashing():
    feedback = Feedback.model_validate({"feedback": "x", "dimension_scores": [1, 2],
                                        "feedback_dimensions": {"a": "high"}})
    assert feedback.text == "x" and feedback.extra["dimension_scores"] == [1, 2]
    feedback = Feedback.model_validate({"dimension_scores": {"a": 0.5, "b": "high"}})
    assert feedback.dimensions["a"] == 0.5 and math.isnan(feedback.dimensions["b"])


def _seed(store, run_id):
    run = store.create_run(Run(id=run_id, name="feedback", spec={"critic": {"name": "c"}}))
    store.add_examples(run.id, Split.TRAIN, [{"topic": "a"}])
    [example] = store.examples(run.id)
    candidate = store.add_candidate(Candidate(run_id=run.id, index=0,
                                              components={"instruction": "x"}, content_hash="h"))
    return run, example, candidate


def _trial(run, example, candidate, feedback):
    return Trial(run_id=run.id, candidate_id=candidate.id, example_id=example.id,
                 split=Split.TRAIN, example_index=0, phase=TrialPhase.VALSET, score=0.4,
                 feedback=feedback)


def test_feedback_round_trips_through_the_store(store):
    run, example, candidate = _seed(store, "fb-round-trip")
    written = Feedback(score=0.4, text="terse", guidance="expand", dimensions={"clarity": 0.5},
                       extra={"verdicts": [{"requirement": "r", "satisfied": False}]})
    store.add_trial(_trial(run, example, candidate, written))
    [read] = store.trials(run.id)
    assert read.feedback == written and read.feedback_text == "terse"


def test_a_row_stored_in_the_old_shape_still_opens(store):
    run, example, candidate = _seed(store, "fb-old-row")
    old = {"feedback": "judge says", "dimension_scores": {"clarity": 0.25},
           "actionable_guidance": "add a season word", "path": ["a", "b"]}
    values = _trial(run, example, candidate, Feedback()).model_dump(exclude={"id", "override"})
    with store.engine.begin() as connection:
        connection.execute(insert(tables.trials).values({**values, "feedback": old}))
    [read] = store.trials(run.id)
    assert read.feedback_text == "judge says" and read.feedback.score == 0.4
    assert read.feedback.dimensions == {"clarity": 0.25}
    assert read.feedback.guidance == "add a season word" and read.feedback.extra == {
        "path": ["a", "b"]}


def test_could_not_evaluate_is_a_named_record_never_zero():
    unscored = Feedback.unscored("the grader timed out", evaluator="exact_match")
    assert unscored.score is None and unscored.error == "the grader timed out"
    assert unscored.text == "the grader timed out"
    assert unscored.extra == {"evaluator": "exact_match", "error": "the grader timed out"}
    assert Feedback.unscored("no reply", text="the judge said nothing").text == \
        "the judge said nothing"
    assert Feedback(score=0.5).error is None


def test_each_seed_shape_is_written_from_the_record_and_says_only_what_is_there():
    feedback = Feedback(score=0.6, text="Needs work", guidance="Add examples",
                        dimensions={"clarity": 0.5, "odd": math.nan})
    assert feedback.trial_fields() == {"feedback_text": "Needs work",
                                       "feedback_guidance": "Add examples",
                                       "feedback_dimensions": {"clarity": 0.5}}
    assert feedback.trial_fields(CRITIC_SCORER_KEYS) == {"feedback_text": "Needs work",
                                                         "actionable_guidance": "Add examples",
                                                         "dimension_scores": {"clarity": 0.5}}
    assert feedback.trial_fields(NORMALIZED_KEYS) == {"feedback_text": "Needs work",
                                                      "guidance": "Add examples",
                                                      "dimensions": {"clarity": 0.5}}
    assert Feedback(score=0.6, text="  ").trial_fields() == {}


def test_a_trial_keeps_its_score_in_one_place():
    trial = Trial(run_id="r", candidate_id=1, example_id=1, split=Split.TRAIN, example_index=0,
                  phase=TrialPhase.PARENT, score=0.7, feedback=Feedback(text="fine"))
    assert trial.score == trial.feedback.score == 0.7
    assert trial.model_dump()["score"] == 0.7  # the store's column is written from the record
    assert Trial.model_validate(trial.model_dump()) == trial
    judged = trial.model_copy(update={"feedback": Feedback(score=0.2, text="worse")})
    assert judged.score == 0.2
