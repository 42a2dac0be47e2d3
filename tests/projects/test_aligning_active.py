"""Align runs read the active corrections at every step (scripted world: scripted/strict).

A person undoes some corrections and changes one, before an align run starts, while it waits at
its gate, or while it is stopped: its labels, the agreement score of every (candidate, label)
pair it judged, and its report follow the corrections as they are now, and no pair is judged
twice for it.
"""

from __future__ import annotations

import json

import pytest

from studio.cli import main
from studio.critics.alignment import CriticAgreement, reply_score, undone_label
from studio.engine import build_engine, decide
from studio.engine.hosting.worker import get_manager
from studio.engine.people.gates import override, undo_override
from studio.engine.run.events import TrialCommitted
from studio.engine.scoring.holdout import test_problem as held_out_problem
from studio.model.config import EvolutionConfig
from studio.model.records import ProposalStatus, RunStatus, Split
from studio.projects.aligning import align_report, create_align_run, current_align_labels
from studio.runtime.providers.strict import is_short
from studio.store import open_store
from tests.helpers import ROOT, wait_until
from tests.projects.test_aligning import corrected_run, finish

EXAMPLE = ROOT / "examples" / "short_answers_scripted.yaml"
CHANGED_SCORE = 0.1


# ----------------------------------------------------------------- oracles (not product code)


def source_of(store, align_run_id: str) -> dict[int, int]:
    """Align example id -> source trial id, by the order the align run was created in."""
    origin = store.get_run(align_run_id).spec.aligns
    held = origin.held_out_trial_ids
    train = [t for t in origin.label_trial_ids if t not in held]
    return {e.id: (held if e.split is Split.TEST else train)[e.index]
            for e in store.examples(align_run_id)}


def human_now(store, source_run_id: str, trial_id: int) -> float | None:
    """The person's score on a trial now: the latest correction not undone, None if none."""
    active = [o for o in store.overrides(source_run_id, trial_id=trial_id, include_undone=False)
              if o.score is not None]
    return active[-1].score if active else None


def assert_follows_the_corrections(store, align_run_id: str) -> int:
    """Every judged pair scores 1 - |critic - person now|, or could not evaluate when the
    correction was undone; no pair twice. Returns how many pairs were undone."""
    source_run = store.get_run(align_run_id).spec.aligns.run_id
    sources = source_of(store, align_run_id)
    trials = store.trials(align_run_id)
    pairs = [(t.candidate_id, t.example_id) for t in trials]
    assert len(pairs) == len(set(pairs)), "a (candidate, label) was judged twice"
    undone = 0
    for trial in trials:
        human = human_now(store, source_run, sources[trial.example_id])
        if human is None:
            undone += 1
            assert trial.score is None and "was undone" in trial.error, trial
        else:
            critic = reply_score(trial.output)
            assert abs(trial.score - max(0.0, 1 - abs(critic - human))) < 1e-9, (trial, human)
    return undone


def undo_all(store, trial_id: int) -> None:
    for correction in store.overrides(trial_id=trial_id, include_undone=False):
        undo_override(correction.id, store=store)


def pick(store, align_run_id: str) -> tuple[list[int], int, list[int]]:
    """Three training labels and one held-out label to undo, one training label to change."""
    origin = store.get_run(align_run_id).spec.aligns
    held = origin.held_out_trial_ids
    train = [t for t in origin.label_trial_ids if t not in held]
    return train[:3] + held[:1], train[3], train


# ----------------------------------------------------------------- tests


def test_an_undone_label_is_not_scored_and_says_why():
    metric = CriticAgreement()
    result = metric.evaluate(outputs='{"score": 0.2, "feedback": "x"}',
                             reference_outputs=undone_label(41))
    assert result.score is None
    assert "correction of trial 41 was undone" in result.comment
    assert result.metadata["error_kind"] == "label_undone"


@pytest.mark.slow
def test_corrections_undone_or_changed_before_the_align_run_starts(store):
    source = corrected_run(store)
    run = create_align_run(store, source, config=EvolutionConfig(max_iterations=3, seed=3))
    undone, changed, _ = pick(store, run.id)
    for trial_id in undone:
        undo_all(store, trial_id)
    store.add_override(changed, score=CHANGED_SCORE, feedback="Too short after all.",
                       author="ana")
    assert finish(store, run.id) == "max_iterations"

    labels = current_align_labels(store, run.id)
    assert len(labels) == 16 and not {x.trial_id for x in labels} & set(undone)
    assert next(x.human_score for x in labels if x.trial_id == changed) == CHANGED_SCORE
    assert assert_follows_the_corrections(store, run.id) > 0
    report = align_report(store, run.id)
    assert (report.labels, report.active_labels) == (20, 16)
    assert (report.held_out, report.active_held_out) == (6, 5)
    assert report.before.count == report.after.count == 5
    assert report.recorded.count == 5
    assert held_out_problem(store, run.id) is None  # an undone held-out label is no failure


@pytest.mark.slow
def test_a_correction_made_again_rescores_the_kept_reply_without_a_new_call(store):
    source = corrected_run(store)
    run = create_align_run(store, source, config=EvolutionConfig(max_iterations=2, seed=3))
    undone, _, _ = pick(store, run.id)
    undo_all(store, undone[0])
    finish(store, run.id)
    before = len(store.trials(run.id))
    assert align_report(store, run.id).active_labels == 19

    store.add_override(undone[0], score=0.5, feedback="Fine.", author="ana")
    report = align_report(store, run.id)
    assert report.active_labels == 20 and len(store.trials(run.id)) == before
    assert assert_follows_the_corrections(store, run.id) == 0
    example = next(e for e, t in source_of(store, run.id).items() if t == undone[0])
    data = next(e.data for e in store.examples(run.id) if e.id == example)
    assert json.loads(data["expected"])["score"] == 0.5


@pytest.mark.slow
def test_corrections_changed_while_the_align_run_is_judging_a_batch(store):
    source = corrected_run(store)
    run = create_align_run(store, source, config=EvolutionConfig(max_iterations=2, seed=3))
    sources = source_of(store, run.id)
    changed: list[int] = []

    def correct_mid_batch(event) -> None:
        """At the first reply judged after the baseline: the person undoes that label and
        changes another one, while the batch is still being judged."""
        if isinstance(event, TrialCommitted) and event.iteration >= 1 and not changed:
            trial = store.get_trial(event.trial_id)
            changed.append(sources[trial.example_id])
            for correction in store.overrides(trial_id=changed[0], include_undone=False):
                store.undo_override(correction.id)  # the store: only the engine reads it
            other = next(t for t in sources.values() if t != changed[0])
            store.add_override(other, score=CHANGED_SCORE, feedback=None, author="ana")

    engine = build_engine(store, run.id, listeners=[correct_mid_batch])
    assert get_manager(store).start(engine).wait(90) == "max_iterations"
    assert changed, "the run judged no reply after its baseline"
    assert assert_follows_the_corrections(store, run.id) > 0
    assert align_report(store, run.id).active_labels == 19


@pytest.mark.slow
def test_corrections_changed_while_the_align_run_waits_at_its_gate(store):
    source = corrected_run(store)
    run = create_align_run(store, source,
                           config=EvolutionConfig(max_iterations=2, seed=3, review="review"))
    handle = get_manager(store).start(build_engine(store, run.id))
    waiting = wait_until(lambda: store.proposals(run.id, status=ProposalStatus.PENDING),
                         timeout=60, message="a proposal at the align run's gate")[0]
    judged = {t.example_id for t in store.trials(run.id)}
    sources = source_of(store, run.id)
    _, _, train = pick(store, run.id)
    seen = [t for t in train if any(sources[e] == t for e in judged)]
    for trial_id in seen[:2]:  # labels the run has already judged pairs on
        undo_all(store, trial_id)
    override(seen[2], score=CHANGED_SCORE, feedback="Too short.", author="ana", store=store)
    # the evidence at the gate follows at once, before the engine takes another step
    assert assert_follows_the_corrections(store, run.id) > 0
    assert store.get_proposal(waiting.id).status is ProposalStatus.PENDING

    decide(waiting.id, "accept", author="ana", store=store)
    assert handle.wait(90) == "max_iterations"
    assert assert_follows_the_corrections(store, run.id) > 0
    report = align_report(store, run.id)
    assert report.active_labels == 18 and report.labels == 20


@pytest.mark.slow
def test_a_stop_at_the_align_gate_leaves_the_proposal_pending_and_resume_reads_new_labels(
        store):
    source = corrected_run(store)
    run = create_align_run(store, source,
                           config=EvolutionConfig(max_iterations=2, seed=3, review="review"))
    manager = get_manager(store)
    handle = manager.start(build_engine(store, run.id))
    waiting = wait_until(lambda: store.proposals(run.id, status=ProposalStatus.PENDING),
                         timeout=60, message="a proposal at the align run's gate")[0]
    manager.stop(run.id)
    handle.wait(60)
    assert store.get_run(run.id).status is RunStatus.STOPPED
    # Stop is not a decision: nothing align-specific settles the proposal
    assert store.get_proposal(waiting.id).status is ProposalStatus.PENDING

    undone, changed, _ = pick(store, run.id)
    for trial_id in undone:
        undo_all(store, trial_id)
    store.add_override(changed, score=CHANGED_SCORE, feedback="Too short.", author="ana")
    resumed = manager.resume(run.id)
    again = wait_until(lambda: store.proposals(run.id, status=ProposalStatus.PENDING),
                       timeout=60, message="the resumed align run at the gate")[0]
    assert assert_follows_the_corrections(store, run.id) > 0  # read again before any step
    decide(again.id, "accept", author="ana", store=store)
    assert resumed.wait(90) == "max_iterations"
    assert assert_follows_the_corrections(store, run.id) > 0
    assert align_report(store, run.id).active_labels == 16


@pytest.mark.slow
def test_the_command_line_reports_how_many_labels_are_active(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["--db", db, "run", str(EXAMPLE)]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = open_store(db)
    corrected = store.trials(run_id)[:12]
    for trial in corrected:
        score = "0.9" if is_short(trial.output) else "0.8"
        assert main(["--db", db, "override", str(trial.id), "--score", score]) == 0
    assert main(["--db", db, "align", run_id, "--max-iterations", "2", "--seed", "3"]) == 0
    assert "12 labels, all active now (4 held out)" in capsys.readouterr().out
    align_id = next(r.id for r in store.list_runs() if r.spec.aligns is not None)

    held = store.get_run(align_id).spec.aligns.held_out_trial_ids
    undo_all(store, held[0])
    undo_all(store, next(t.id for t in corrected if t.id not in held))
    override(held[1], score=0.3, feedback=None, author="cli", store=store)
    assert main(["--db", db, "align-report", align_id]) == 0
    out = capsys.readouterr().out
    assert "10 of 12 labels active now (2 corrections undone since it started)" in out
    assert "3 of 4 held out" in out
    assert main(["--db", db, "align-report", align_id, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["active_labels"], report["active_held_out"]) == (10, 3)
    assert report["recorded"]["count"] == 3
    changed = next(e for e in store.examples(align_id, Split.TEST) if e.index == 1)
    assert json.loads(changed.data["expected"])["score"] == 0.3
