"""A person's correction counts at once and everywhere: one effective score and feedback per
trial, read the same way by the front, acceptance, reflection, exports and agreement."""

from __future__ import annotations

import pytest

from studio.critics.agreement import agreement_from_store
from studio.engine import load_result, override, undo_override
from studio.engine.policies.pool import load_view
from studio.engine.propose.proposer import reflection_trials
from studio.model.records import TrialPhase
from studio.projects.export import trial_record
from studio.runtime.providers.scripted import recorded_requests
from tests.helpers import demo_spec, trainset, wait_until


def _finished_run(runner, store):
    run_id, _ = runner.run(demo_spec(), trainset(3), valset=[{"topic": "harbor fog"}],
                           max_iterations=1)
    view = load_view(store, run_id)
    seed = view.pooled_ids[0]
    trial = next(iter(store.first_trials(seed, list(view.val_ids)).values()))
    return run_id, trial


def test_a_score_then_a_feedback_correction_keep_both_everywhere(runner, store):
    run_id, trial = _finished_run(runner, store)
    assert trial.score == 0.0 and not trial.overridden  # the judge's verdict on the seed
    override(trial.id, score=0.9, author="ana", store=store)
    override(trial.id, feedback="good enough, keep the imagery", author="bo", store=store)

    stored = store.get_trial(trial.id)
    listed = next(t for t in store.trials(run_id) if t.id == trial.id)
    front = store.effective_scores(run_id)[(trial.candidate_id, trial.example_id)]
    reflected = reflection_trials([listed], [])[0]
    exported = trial_record(stored)
    assert stored.effective_score == listed.effective_score == front == 0.9
    assert stored.effective_feedback == "good enough, keep the imagery"
    assert reflected["feedback"]["score"] == 0.9 and reflected["feedback"]["corrected_by_human"]
    assert reflected["feedback"]["feedback_text"] == "good enough, keep the imagery"
    assert exported["effective_score"] == 0.9 and exported["override_author"] == "bo"


def test_undoing_the_latest_correction_brings_back_the_earlier_value(runner, store):
    run_id, trial = _finished_run(runner, store)
    override(trial.id, score=0.9, author="ana", store=store)
    later = override(trial.id, score=0.4, feedback="too plain", author="bo", store=store)
    assert store.get_trial(trial.id).effective_score == 0.4
    undo_override(later.id, store=store)
    stored = store.get_trial(trial.id)
    assert stored.effective_score == 0.9 and stored.effective_feedback == trial.feedback_text
    assert store.effective_scores(run_id)[(trial.candidate_id, trial.example_id)] == 0.9


def test_agreement_counts_a_re_corrected_trial_once(runner, store):
    run_id, trial = _finished_run(runner, store)
    override(trial.id, score=0.9, author="ana", store=store)
    override(trial.id, feedback="keep the imagery", author="ana", store=store)
    override(trial.id, score=0.7, author="bo", store=store)
    pairs = store.override_pairs(run_id)
    assert len(store.overrides(run_id)) == 3
    assert [(p.trial_id, p.judge_score, p.human_score, p.human_feedback) for p in pairs] == [
        (trial.id, trial.score, 0.7, "keep the imagery")]
    assert agreement_from_store(store, run_id).overall.count == 1


@pytest.mark.slow
def test_a_correction_made_while_the_minibatch_scores_reaches_the_reflection(runner, store):
    slow = "scripted/demo@200ms"
    spec = demo_spec(slow).model_copy(deep=True)
    spec.reflection.model = "scripted/demo"
    run_id, handle = runner.start(spec, trainset(3), valset=[{"topic": "harbor fog"}],
                                  max_iterations=1, max_concurrency=1, minibatch_size=3)
    first = wait_until(lambda: store.trials(run_id, phase=TrialPhase.PARENT),
                       message="the first trial of the minibatch is stored")[0]
    override(first.id, score=0.8, author="ana", store=store)
    override(first.id, feedback="HUMAN NOTE: the second line drags", author="ana",
             store=store)
    still_scoring = len(store.trials(run_id, phase=TrialPhase.PARENT)) < 3
    handle.wait(30)
    assert still_scoring and len(store.trials(run_id, phase=TrialPhase.PARENT)) == 3
    prompts = [r.prompt_text for r in recorded_requests("demo")
               if "## Component Text to Improve" in r.prompt_text and first.output in r.prompt_text]
    assert prompts and "HUMAN NOTE: the second line drags" in prompts[-1]
    assert '"score": 0.8' in prompts[-1] and "corrected_by_human" in prompts[-1]


def test_iteration_history_shows_sums_with_later_corrections(runner, store):
    run_id, _ = runner.run(demo_spec(), trainset(3), valset=[{"topic": "harbor fog"}],
                           max_iterations=1)
    before = load_result(store, run_id).iteration_history[0]
    child_trials = store.trials(run_id, proposal_id=before["proposal_id"], phase=TrialPhase.CHILD)
    assert before["child_sum"] == sum(t.score for t in child_trials) and len(child_trials) == 3
    assert child_trials[0].score > 0.0
    override(child_trials[0].id, score=0.0, author="ana", store=store)
    after = load_result(store, run_id).iteration_history[0]
    assert after["child_sum"] == pytest.approx(before["child_sum"] - child_trials[0].score)
    assert after["parent_sum"] == before["parent_sum"]
