"""Several reviewers per trial on the real engine (scripted model): the queue offers a trial to
each until enough labelled it, their consensus (or an owner's ruling) is what every reader of
an effective score reads, disagreements and progress are listed, and the align step trains on
the consensus and reports its distance from each reviewer."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from studio.engine.hosting.worker import get_manager
from studio.engine.people.gates import adjudicate, override, undo_override
from studio.engine.propose.proposer import reflection_trials
from studio.model.config import EvolutionConfig
from studio.model.records import Candidate, Run, Split, TrialPhase
from studio.model.team import Actor, Role
from studio.projects.aligning import align_report, collect_labels, create_align_run
from studio.projects.export import trial_record
from studio.projects.reviewing import queue_inputs, record_review
from studio.projects.team import add_user
from studio.projects.team_review import disagreements, people_summary, reviewer_progress
from studio.projects.workspace import import_example, start_project_run
from studio.views.review_queue import build_queue
from tests.helpers import ROOT
from tests.projects.test_aligning import EXAMPLE as SHORT_ANSWERS
from tests.projects.test_aligning import finish
from tests.store.test_sqlite import add_trial

HAIKU = ROOT / "examples" / "haiku_scripted.yaml"
OWNER = Actor("olga", Role.OWNER, verified=True)


def seeded_trials(store, count: int = 4):
    """A run of ``count`` judged trials (one per example) stored directly: no engine."""
    run = store.create_run(Run(id="r1", name="team", spec={"critic": {"name": "c"}}))
    store.add_examples(run.id, Split.TRAIN, [{"topic": str(i)} for i in range(count)])
    examples = store.examples(run.id)
    candidate = store.add_candidate(Candidate(run_id=run.id, index=0, content_hash="h",
                                              components={"instruction": "x"}))
    return run, [add_trial(store, run, candidate, example, score=0.5) for example in examples]


def scored_run(store, example=HAIKU):
    project = import_example(store, example)
    run = start_project_run(store, project.id, EvolutionConfig(max_iterations=0, seed=7))
    get_manager(store).handle(run.id).wait(60)
    return run


def label(store, trial_id, reviewer, score, feedback=None):
    return override(trial_id, score=score, feedback=feedback, author=reviewer, store=store,
                    reviewer=reviewer)


def queued_ids(store, run_id, reviewer=None, wanted=1):
    inputs = queue_inputs(store, run_id, reviewer=reviewer, wanted=wanted)
    return {item.trial.id for item in build_queue(
        trials=inputs.trials, reviewed_ids=inputs.reviewed_ids,
        reviewed_example_ids=inputs.reviewed_example_ids, open_ids=inputs.open_ids)}


def test_a_trial_stays_in_the_queue_until_enough_people_labelled_it(store):
    run, trials = seeded_trials(store)
    first = trials[0].id
    assert first in queued_ids(store, run.id, "ana", wanted=2)
    label(store, first, "ana", 0.2)
    assert first not in queued_ids(store, run.id, "ana", wanted=2)  # she gave hers
    assert first in queued_ids(store, run.id, "bo", wanted=2)  # one label of two
    record_review(store, run.id, first, seconds=3, action="confirmed", author="bo")
    assert first not in queued_ids(store, run.id, "cy", wanted=2)  # two people: done
    assert first in queued_ids(store, run.id, "cy", wanted=3)
    adjudicate(first, score=0.5, author="olga", store=store)
    assert first not in queued_ids(store, run.id, "cy", wanted=3)  # settled
    assert first not in queued_ids(store, run.id)  # the local studio: labelled is done


def test_every_reader_of_an_effective_score_reads_the_consensus_then_the_ruling(store):
    run = scored_run(store)
    trial = store.trials(run.id, phase=TrialPhase.VALSET)[0]
    label(store, trial.id, "ana", 0.2, "too plain")
    label(store, trial.id, "bo", 0.8, "lovely imagery")

    def read() -> set:
        stored = store.get_trial(trial.id)
        pair = (trial.candidate_id, trial.example_id)
        reflected = reflection_trials([stored], [])[0]["feedback"]
        human = {p.trial_id: p.human_score for p in store.override_pairs(run.id)}[trial.id]
        aligned = {x.trial_id: x.human_score for x in collect_labels(store, run.id)}[trial.id]
        return {round(value, 9) for value in (
            stored.effective_score, store.effective_scores(run.id)[pair],
            store.first_scores(run.id, example_ids=[trial.example_id])[pair][1],
            reflected["score"], human, aligned, trial_record(stored)["effective_score"])}

    assert read() == {0.5}
    assert store.get_trial(trial.id).effective_feedback == "too plain\nlovely imagery"
    ruling = adjudicate(trial.id, score=0.9, feedback="settled: good", author="olga",
                        store=store)
    assert read() == {0.9}
    reflected = reflection_trials([store.get_trial(trial.id)], [])[0]["feedback"]
    assert reflected["feedback_text"] == "settled: good"
    assert len(store.overrides(run.id, trial_id=trial.id)) == 3  # everyone's values kept
    undo_override(ruling.id, store=store)
    assert read() == {0.5}


def test_disagreements_list_everyone_s_label_and_the_ruling(store):
    run, (first, second, third, _) = seeded_trials(store)
    label(store, first.id, "ana", 0.2)
    label(store, first.id, "bo", 0.9)
    label(store, second.id, "ana", 0.6)
    label(store, second.id, "bo", 0.7)  # close, same side of 0.5: no disagreement
    label(store, third.id, "ana", 0.45)
    label(store, third.id, "bo", 0.55)  # close, but on both sides of 0.5
    found = disagreements(store, run.id, 0.5)
    assert [d.trial_id for d in found] == [first.id, third.id]
    assert [(x.reviewer, x.score) for x in found[0].labels] == [("ana", 0.2), ("bo", 0.9)]
    assert found[0].consensus == pytest.approx(0.55) and not found[0].settled
    adjudicate(first.id, score=0.3, author="olga", store=store)
    found = disagreements(store, run.id, 0.5)
    assert [(d.trial_id, d.settled) for d in found] == [(third.id, False), (first.id, True)]
    assert (found[1].ruling, found[1].ruled_by) == (0.3, "olga")


def test_people_agreement_matches_the_reference_per_project(store):
    run, trials = seeded_trials(store)
    given = {"ana": [0.1, 0.9, 0.5, 0.3], "bo": [0.2, 0.8, 0.9, None], "cy": [0.0, 1.0, None,
                                                                               0.2]}
    for person, scores in given.items():
        for trial, score in zip(trials, scores, strict=True):
            if score is not None:
                label(store, trial.id, person, score)
    summary = people_summary(store, run.id)
    data = np.array([[np.nan if s is None else s for s in scores] for scores in given.values()])
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert summary.overall.alpha == pytest.approx(expected)
    assert list(summary.per_project) == ["team"]  # no project: the run's name
    assert summary.per_project["team"].alpha == pytest.approx(expected)
    assert summary.overall.kappa is None and summary.overall.units == 4


def test_each_reviewer_s_progress_counts_labels_skips_and_time(store):
    run, (a, b, c, _) = seeded_trials(store)
    add_user(store, Actor("local"), "olga", "owner")
    add_user(store, OWNER, "bo", "reviewer")
    label(store, a.id, "ana", 0.2)
    record_review(store, run.id, a.id, seconds=12, action="corrected", author="ana")
    record_review(store, run.id, b.id, seconds=8, action="confirmed", author="bo")
    record_review(store, run.id, c.id, seconds=2, action="skipped", author="bo")
    record_review(store, run.id, c.id, seconds=2, action="skipped", author="nobody-known")
    found = {p.name: p for p in reviewer_progress(store, run.id)}
    assert set(found) == {"ana", "bo"}
    assert (found["ana"].labelled, found["ana"].seconds) == ({a.id}, 12)
    assert (found["bo"].labelled, found["bo"].skipped, found["bo"].mean_seconds) == (
        {b.id}, 1, 8)


@pytest.mark.slow
def test_the_align_step_trains_on_the_consensus_and_measures_each_reviewer(store):
    run = scored_run(store, SHORT_ANSWERS)
    for trial in store.trials(run.id)[:12]:
        label(store, trial.id, "ana", 0.9)
        label(store, trial.id, "bo", 0.5)
    assert {round(x.human_score, 9) for x in collect_labels(store, run.id)} == {0.7}
    align = create_align_run(store, run.id, config=EvolutionConfig(max_iterations=1, seed=3))
    finish(store, align.id)
    report = align_report(store, align.id)
    assert [r.reviewer for r in report.reviewers] == ["ana", "bo"]
    assert all(r.labels == report.active_held_out for r in report.reviewers)
    before = {r.reviewer: r.before for r in report.reviewers}
    assert before["ana"] != pytest.approx(before["bo"])  # each reviewer's own distance
    ana_pairs = [(critic, 0.9) for critic, _ in _critic_scores(store, align.id, report)]
    assert before["ana"] == pytest.approx(
        sum(abs(c - h) for c, h in ana_pairs) / len(ana_pairs))


def _critic_scores(store, align_run_id, report):
    """(the original critic's score, consensus) on each held-out label, from the report's
    own consensus error: every held-out consensus is 0.7 here."""
    from studio.critics.alignment import reply_score
    from studio.engine.policies.pool import load_view

    view = load_view(store, align_run_id)
    baseline = view.candidates[0].id
    return [(reply_score(t.output), 0.7) for t in store.trials(align_run_id,
                                                               phase=TrialPhase.TEST)
            if t.candidate_id == baseline]
