"""The "Review next" queue: its order on a constructed run, the rule's flip arithmetic, the
feedback heuristics, the time a review takes and what the ETA counts of it."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from studio.engine.people.gates import override
from studio.model.config import EvolutionConfig, ReviewMode
from studio.model.errors import ConfigError, NotFoundError
from studio.model.records import (
    Candidate,
    EventKind,
    Proposal,
    ProposalStatus,
    Run,
    RunEvent,
    RunStatus,
    Split,
    Trial,
    TrialPhase,
)
from studio.projects.reviewing import (
    MAX_REVIEW_SECONDS,
    queue_inputs,
    record_review,
    review_records,
    reviewed_seconds,
)
from studio.views.review_queue import (
    DEFAULT_REVIEW_SECONDS,
    Group,
    build_queue,
    contradiction,
    disagreement,
    expected_review_trials,
    feedback_cues,
    margin_flips,
    next_item,
    queue_summary,
    review_estimate,
)
from studio.views.tables import progress_summary
from tests.helpers import empty_postgres_store, postgres_url

NEUTRAL = "Three lines about the topic."


def trial(id_, score, *, example=1, phase=TrialPhase.PARENT, split=Split.TRAIN, feedback=NEUTRAL,
          candidate=1, **extra):
    return Trial(id=id_, run_id="r", candidate_id=candidate, example_id=example, split=split,
                 example_index=example, iteration=1, phase=phase, score=score,
                 feedback={"feedback": feedback, **extra})


# --------------------------------------------------------------------------- a constructed run


class ConstructedRun:
    """A run waiting at its first gate, built row by row in the store.

    Proposal #1's minibatch is train examples 0-2: parent 0.30 / 0.30 / 0.30 (sum 0.90) and
    child 0.90 / 0.30 / 0.15 (sum 1.35), so the rule accepts by 0.45. Alone, each parent trial
    could flip it (0.30 -> 0.75) and so could the 0.90 child (-> 0.45); the 0.30 and 0.15 children
    cannot (they would need a score below 0). The parent on train 1 is also praised with a low
    score. Besides: a high score with a "Missing:" list (val 1), a critic whose dimensions disagree
    with its score (val 0), a corrected trial and a confirmed one, and train 3 never reviewed.
    """

    def __init__(self, store):
        self.store = store
        run = store.create_run(Run(id="constructed", status=RunStatus.RUNNING,
                                   config=EvolutionConfig(review=ReviewMode.REVIEW,
                                                          max_iterations=5, minibatch_size=3)))
        self.run_id = run.id
        store.add_examples(run.id, Split.TRAIN, [{"topic": f"t{i}"} for i in range(4)])
        store.add_examples(run.id, Split.VAL, [{"topic": f"v{i}"} for i in range(2)])
        train, val = store.examples(run.id, Split.TRAIN), store.examples(run.id, Split.VAL)
        self.train, self.val = [e.id for e in train], [e.id for e in val]
        components = {"instruction": "Write."}
        self.parent = store.add_candidate(Candidate(run_id=run.id, index=0, components=components,
                                                    content_hash="p", pooled=True))
        self.child = store.add_candidate(Candidate(run_id=run.id, index=1, parent_ids=[
            self.parent.id], components={"instruction": "Write well."}, content_hash="c",
            iteration=1))
        self.disagreeing = self.add(self.parent, self.val[0], 0.9, TrialPhase.VALSET,
                                    dimensions={"imagery": 0.1, "form": 0.2})
        self.contradicting = self.add(self.parent, self.val[1], 0.95, TrialPhase.VALSET,
                                      feedback="Missing: a season word, the topic")
        self.proposal = store.add_proposal(Proposal(
            run_id=run.id, iteration=1, parent_id=self.parent.id, component="instruction",
            text="Write well.", status=ProposalStatus.PENDING, child_id=self.child.id,
            minibatch=self.train[:3]))
        self.parents = [self.add(self.parent, self.train[0], 0.3),
                        self.add(self.parent, self.train[1], 0.3,
                                 feedback="Excellent, a perfect haiku."),
                        self.add(self.parent, self.train[2], 0.3)]
        self.children = [self.add(self.child, e, s, TrialPhase.CHILD)
                         for e, s in zip(self.train[:3], (0.9, 0.3, 0.15), strict=True)]
        self.never_reviewed = self.add(self.parent, self.train[3], 0.5)
        self.corrected = self.add(self.child, self.train[3], 0.99, TrialPhase.VALSET,
                                  feedback="Missing: everything")
        override(self.corrected.id, score=0.1, author="ana", store=store)
        self.confirmed = self.add(self.child, self.val[1], 0.2, TrialPhase.VALSET,
                                  feedback="Great and correct.")
        record_review(store, run.id, self.confirmed.id, seconds=12.0, action="confirmed")

    def add(self, candidate, example_id, score, phase=TrialPhase.PARENT, feedback=NEUTRAL,
            **extra):
        split = Split.VAL if example_id in self.val else Split.TRAIN
        index = (self.val if split is Split.VAL else self.train).index(example_id)
        return self.store.add_trial(Trial(
            run_id=self.run_id, candidate_id=candidate.id, example_id=example_id, split=split,
            example_index=index, iteration=0 if phase is TrialPhase.VALSET else 1, phase=phase,
            proposal_id=self.proposal.id if phase is TrialPhase.CHILD else None,
            output=f"output of {candidate.index} on {example_id}", score=score,
            feedback={"feedback": feedback, **extra}))

    def queue(self):
        inputs = queue_inputs(self.store, self.run_id)
        evidence = inputs.evidence
        return build_queue(trials=inputs.trials, reviewed_ids=inputs.reviewed_ids,
                           reviewed_example_ids=inputs.reviewed_example_ids,
                           pending_id=evidence.proposal.id, parent=evidence.parent,
                           child=evidence.child)


@pytest.fixture
def constructed(store):
    return ConstructedRun(store)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request, store):
    """The test's SQLite store, and CI's PostgreSQL server (``STUDIO_TEST_PG_URL``; skipped
    without one, never in CI) with its tables dropped first."""
    if request.param == "sqlite":
        yield store
        return
    pg = empty_postgres_store(postgres_url())
    yield pg
    pg.close()


def test_the_trial_at_the_margin_of_the_pending_proposal_comes_first(any_store):
    constructed = ConstructedRun(any_store)
    queue = constructed.queue()
    ids = [item.trial.id for item in queue]
    praised_parent = constructed.parents[1]
    assert queue[0].trial.id == praised_parent.id and queue[0].group is Group.MARGIN
    assert queue[0].flip_distance == pytest.approx(0.45)
    assert any("a low score with praise" in r for r in queue[0].reasons)
    margin = [item.trial.id for item in queue if item.group is Group.MARGIN]
    others = sorted([constructed.parents[0].id, constructed.parents[2].id,
                     constructed.children[0].id])
    assert margin == [praised_parent.id, *others]
    assert ids[:4] == margin
    after = [(item.group, item.trial.id) for item in queue[4:]]
    assert after == [(Group.CONTRADICTION, constructed.contradicting.id),
                     (Group.DISAGREEMENT, constructed.disagreeing.id)]


def test_the_queue_leaves_out_what_a_person_reviewed_and_what_cannot_flip(constructed):
    ids = {item.trial.id for item in constructed.queue()}
    assert constructed.corrected.id not in ids and constructed.confirmed.id not in ids
    assert constructed.children[1].id not in ids and constructed.children[2].id not in ids
    # train 3 was reviewed through the corrected trial; val 0 and val 1 stand in groups 2-3
    assert constructed.never_reviewed.id not in ids


def test_every_reason_says_why_in_numbers(constructed):
    first = constructed.queue()[0]
    margin = first.reasons[0]
    assert "proposal #" in margin and "would accept" in margin and "0.45 above" in margin
    assert "≥ 0.75" in margin and "the judge gave 0.30" in margin and "flip it to reject" in margin


def test_a_correction_at_the_margin_moves_the_queue(constructed):
    override(constructed.parents[1].id, score=0.6, author="ana", store=constructed.store)
    queue = constructed.queue()
    assert constructed.parents[1].id not in {item.trial.id for item in queue}
    # the margin is now 1.35 - 1.20 = 0.15: the 0.30 child can now flip it too
    margin = [item for item in queue if item.group is Group.MARGIN]
    assert constructed.children[1].id in {item.trial.id for item in margin}
    assert all(item.flip_distance == pytest.approx(0.15) for item in margin)


def test_an_example_never_reviewed_is_queued_once_validation_first():
    trials = [trial(10, 0.5, example=1), trial(11, 0.5, example=2, split=Split.VAL),
              trial(12, 0.5, example=0), trial(13, 0.6, example=1, candidate=2),
              trial(14, 0.5, example=3)]
    trials += [trial(15, 0.5, example=4, phase=TrialPhase.TEST, split=Split.TEST),
               trial(16, 0.5, example=5, phase=TrialPhase.PROBE)]
    queue = build_queue(trials=trials, reviewed_ids={14}, reviewed_example_ids={3})
    assert [(i.group, i.trial.id) for i in queue] == [
        (Group.UNREVIEWED, 11), (Group.UNREVIEWED, 12), (Group.UNREVIEWED, 13)]
    assert queue[0].reasons == ("no trial on val example 2 has been reviewed yet",)


def test_queue_summary_and_next_item_after_skips(constructed):
    queue = constructed.queue()
    assert queue_summary(queue).startswith(f"{len(queue)} trial(s) wait: 4 could flip")
    assert next_item(queue, []) is queue[0]
    assert next_item(queue, [queue[0].trial.id]) is queue[1]
    skipped = [item.trial.id for item in reversed(queue)]
    assert next_item(queue, skipped) is queue[-1]
    assert next_item([], []) is None
    assert "Nothing waits" in queue_summary([])


# --------------------------------------------------------------------------- the rule's arithmetic


def pair(parent_score, child_score, example, ids):
    return (trial(ids[0], parent_score, example=example),
            trial(ids[1], child_score, example=example, phase=TrialPhase.CHILD))


def test_a_rejected_proposal_flips_when_a_child_rises_or_a_parent_falls_past_the_gap():
    (p1, c1), (p2, c2) = pair(0.8, 0.5, 1, (1, 2)), pair(0.2, 0.3, 2, (3, 4))
    flips = margin_flips(9, [p1, p2], [c1, c2])  # child 0.8 vs parent 1.0: reject by 0.2
    assert set(flips) == {1, 2, 4}  # the 0.2 parent cannot fall below 0.0
    assert all(f.distance == pytest.approx(0.2) for f in flips.values())
    assert "> 0.70" in flips[2].reason and "flip it to accept" in flips[2].reason
    assert "< 0.60" in flips[1].reason
    high = margin_flips(9, *zip(*[pair(0.9, 0.85, 1, (1, 2))], strict=True))
    assert set(high) == {1, 2} and "< 0.85" in high[1].reason and "> 0.90" in high[2].reason
    capped = margin_flips(9, *zip(*[pair(0.95, 0.05, 1, (1, 2)), pair(0.9, 0.1, 2, (3, 4))],
                                  strict=True))
    assert capped == {}  # reject by 1.7: no single score in [0, 1] moves that far


def test_equal_sums_flip_with_any_rise_of_a_child():
    flips = margin_flips(9, *zip(*[pair(0.5, 0.5, 1, (1, 2))], strict=True))
    assert flips[2].distance == pytest.approx(0.0) and "are equal" in flips[2].reason
    assert "> 0.50" in flips[2].reason and "< 0.50" in flips[1].reason


def test_a_merge_accepts_ties_so_its_bounds_move_by_one_side():
    tie = margin_flips(9, *zip(*[pair(0.5, 0.5, 1, (1, 2))], strict=True), ties_accept=True)
    assert "would accept" in tie[2].reason and "< 0.50" in tie[2].reason
    assert "> 0.50" in tie[1].reason
    above = margin_flips(9, *zip(*[pair(0.4, 0.6, 1, (1, 2))], strict=True), ties_accept=True)
    assert "< 0.40" in above[2].reason and "> 0.60" in above[1].reason
    below = margin_flips(9, *zip(*[pair(0.6, 0.4, 1, (1, 2))], strict=True), ties_accept=True)
    assert "≥ 0.60" in below[2].reason and "≤ 0.40" in below[1].reason
    floor = margin_flips(9, *zip(*[pair(0.6, 0.2, 1, (1, 2))], strict=True), ties_accept=True)
    assert set(floor) == {1, 2} and "≥ 0.60" in floor[2].reason and "≤ 0.20" in floor[1].reason
    at_zero = margin_flips(9, *zip(*[pair(0.0, 0.0, 1, (1, 2))], strict=True), ties_accept=True)
    assert set(at_zero) == {1}  # a tie at 0 accepts; no child score can fall below 0


def test_an_unscored_trial_brings_its_example_into_the_comparison():
    parent = [trial(1, 0.5, example=1), trial(3, 0.4, example=2)]
    child = [trial(2, 0.7, example=1, phase=TrialPhase.CHILD),
             trial(4, None, example=2, phase=TrialPhase.CHILD)]
    flips = margin_flips(9, parent, child)  # accepts by 0.2 on example 1 only
    assert flips[4].distance is None and "could not score" in flips[4].reason
    assert "≤ 0.20" in flips[4].reason
    queue = build_queue(trials=[], reviewed_ids=set(), reviewed_example_ids={1, 2},
                        pending_id=9, parent=parent, child=child)
    assert queue[-1].trial.id == 4 and queue[-1].group is Group.MARGIN


# --------------------------------------------------------------------------- the heuristics


def test_feedback_that_contradicts_its_score():
    missing = contradiction(trial(1, 0.9, feedback="Missing: rhyme, season; topic"))
    assert missing is not None and "'Missing:' list ×3" in missing.reason
    praise = contradiction(trial(2, 0.1, feedback="Excellent imagery, perfectly on topic."))
    assert praise is not None and "a low score with praise" in praise.reason
    assert contradiction(trial(3, 0.9, feedback="Excellent imagery.")) is None
    assert contradiction(trial(4, 0.5, feedback="Missing: rhyme")) is None
    assert contradiction(trial(5, None, feedback="Missing: rhyme")) is None
    assert missing.size > contradiction(trial(6, 0.75, feedback="Missing: rhyme")).size


def test_negated_praise_is_not_praise():
    negative, positive = feedback_cues("The poem is not correct and not very clear.")
    assert negative == {"negated praise": 2} and positive == {}
    assert contradiction(trial(1, 0.9, feedback="Not good: not correct at all.")) is not None


def test_scores_that_disagree_within_one_trial():
    dims = disagreement(trial(1, 0.9, dimensions={"imagery": 0.1, "form": 0.3}))
    assert dims is not None and dims.size == pytest.approx(0.7)
    assert "mean of its 2 dimension score(s) 0.20" in dims.reason
    components = [{"name": "exact_match", "score": 1.0}, {"name": "judge", "score": 0.2},
                  {"name": "broken", "score": None}]
    parts = disagreement(trial(2, 0.6, components=components))
    assert parts is not None and "exact_match 1.00 vs judge 0.20" in parts.reason
    assert disagreement(trial(3, 0.5, dimensions={"a": 0.4, "b": 0.6})) is None
    assert disagreement(trial(4, 0.5, components="not a list")) is None
    long_name = disagreement(trial(5, 1.0, dimensions={"x" * 500: 0.0}))
    assert len(long_name.reason) < 200


# --------------------------------------------------------------------------- review time and ETA


def test_review_time_is_recorded_per_trial_as_an_event(constructed):
    store, run_id = constructed.store, constructed.run_id
    target = constructed.parents[0].id
    event = record_review(store, run_id, target, seconds=31.5, action="corrected", author="ana")
    assert event.kind is EventKind.REVIEW_TIME and event.payload["trial_id"] == target
    record_review(store, run_id, target, seconds=10_000, action="skipped")
    records = review_records(store, run_id)
    assert [(r.trial_id, r.seconds, r.action) for r in records][-2:] == [
        (target, 31.5, "corrected"), (target, MAX_REVIEW_SECONDS, "skipped")]
    assert reviewed_seconds(records) == [12.0, 31.5]  # a skip is not a review
    assert target not in {i.trial.id for i in constructed.queue()}


@pytest.mark.parametrize("seconds, action, where", [
    (-1, "confirmed", "review.seconds"), (math.inf, "confirmed", "review.seconds"),
    ("5", "confirmed", "review.seconds"), (3, "approved", "review.action")])
def test_bad_review_records_are_refused_naming_the_field(constructed, seconds, action, where):
    with pytest.raises(ConfigError) as refused:
        record_review(constructed.store, constructed.run_id, constructed.parents[0].id,
                      seconds=seconds, action=action)
    assert refused.value.where == where


def test_a_review_of_another_runs_trial_is_refused(constructed):
    with pytest.raises(NotFoundError):
        record_review(constructed.store, constructed.run_id, 10_000, seconds=1,
                      action="confirmed")


def test_the_review_estimate_uses_the_mean_or_the_default():
    assumed = review_estimate([], 6)
    assert assumed.seconds == 6 * DEFAULT_REVIEW_SECONDS and assumed.measured == 0
    assert "no review timed yet" in assumed.text()
    measured = review_estimate([10.0, 30.0, math.nan], 4)
    assert (measured.per_trial, measured.seconds, measured.measured) == (20.0, 80.0, 2)
    assert "1 min 20 s of your review (4 trial(s) × 20 s, mean of 2 timed" in measured.text()
    assert expected_review_trials(5, 3, 2) == 5 + 3 * 2 * 2
    assert expected_review_trials(5, -1, 2) == 5


def test_the_eta_counts_the_expected_review_time():
    run = Run(id="r", status=RunStatus.RUNNING, config=EvolutionConfig(review="review"))
    now = datetime(2030, 1, 1, tzinfo=UTC)
    event = RunEvent(run_id="r", kind=EventKind.PROGRESS, iteration=1,
                     payload={"max_iterations": 4, "eta_seconds": 60.0},
                     created_at=now - timedelta(seconds=0))
    review = review_estimate([30.0], 10).seconds
    summary = progress_summary(run, event, 3, now=now, review_seconds=review)
    assert summary.total_eta_seconds == pytest.approx(360.0)
    assert "ETA 6 min 00 s (incl. 5 min 00 s of your review)" in summary.text()
    plain = progress_summary(run, event, 3, now=now)
    assert plain.total_eta_seconds == pytest.approx(60.0) and "your review" not in plain.text()
