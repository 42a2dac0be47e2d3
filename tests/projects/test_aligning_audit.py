"""Audit fixes of aligning: honest before/after when replies are unusable, held-out labels kept
apart from duplicates, the run's own default model, later project edits kept, bounded scans
and background failures redacted."""

from __future__ import annotations

import threading

import pytest
import yaml

from studio.critics.agreement import agreement
from studio.engine.hosting.build import spec_model
from studio.model.errors import ConfigError
from studio.model.records import RunSpec
from studio.projects import background
from studio.projects.aligning import (
    AlignReport,
    Label,
    align_report,
    align_runs,
    counted_agreement,
    measure_held_out,
    measure_marker,
    run_default_model,
    split_labels,
    use_for_next_run,
)
from studio.projects.workspace import stored_project
from studio.runtime.providers.strict import FIX_PHRASE
from studio.views.aligning import align_summary
from tests.helpers import wait_until
from tests.projects.test_aligning_judges import JUDGE, aligned, judged_run


def report(before, after) -> AlignReport:
    return AlignReport(align_run_id="a", source_run_id="s", status="completed",
                       target="instruction", labels=10, held_out=3, threshold=0.5,
                       before=before, after=after, best_index=2)


def test_unusable_replies_count_as_the_worst_error_not_as_agreement():
    humans = [0.9, 0.8, 0.2]
    before = counted_agreement(list(zip([0.3, 0.3, 0.7], humans, strict=True)), 0.5)
    after = counted_agreement(list(zip([None, None, 0.2], humans, strict=True)), 0.5)
    assert before.mae == pytest.approx(0.5333, abs=1e-3)
    assert (after.count, after.unusable, after.skipped) == (3, 2, 0)
    assert after.mae == pytest.approx((0.9 + 0.8 + 0.0) / 3)  # 0.9->0, 0.8->0 count in full
    done = report(before, after)
    assert done.improved is False
    summary = align_summary(done)
    assert "does not agree better" in summary and "original 0, aligned 2" in summary


def test_before_and_after_on_different_labels_cannot_be_compared():
    humans = [0.9, 0.8, 0.2]
    before = agreement(list(zip([0.2, 0.1, 0.8], humans, strict=True)), 0.5)
    after = agreement(list(zip([None, None, 0.2], humans, strict=True)), 0.5)  # 1 of 3 kept
    done = report(before, after)
    assert after.mae == 0.0 and done.improved is None
    assert "cannot be compared" in align_summary(done)
    assert "aligned: 1 compared, 2 skipped" in align_summary(done)


def label(trial_id: int, text: str) -> Label:
    return Label(trial_id=trial_id, critic_input=text, human_score=0.9, human_feedback=None,
                 critic_score=0.2, critic_feedback=None)


@pytest.mark.parametrize("seed", range(8))
def test_labels_with_the_same_critic_input_stay_on_one_side(seed):
    labels = [label(i, f"input {i % 4}") for i in range(12)]  # 4 inputs, 3 labels each
    train, test = split_labels(labels, 0.3, seed)
    assert train and test and len(train) + len(test) == 12
    assert not {x.critic_input for x in train} & {x.critic_input for x in test}


def test_distinct_inputs_split_as_before_and_one_input_is_refused():
    labels = [label(i, f"input {i}") for i in range(10)]
    train, test = split_labels(labels, 0.3, 3)
    assert (len(train), len(test)) == (7, 3)
    with pytest.raises(ConfigError, match="same input") as info:
        split_labels([label(i, "same") for i in range(10)], 0.3, 3)
    assert info.value.where == "labels"


def test_an_agent_loaded_by_reference_gives_its_own_default_model():
    spec = RunSpec(agent_ref="tests.engine.ref_pipeline:pipeline", primary="writer")
    assert spec_model(spec) == "local/smollm2"  # what aligning used to fall back to
    assert run_default_model(spec) == "scripted/pipeline"


def judge_project(store, name: str) -> tuple[str, str]:
    source = judged_run(store, JUDGE, name)
    return source, aligned(store, source)


def edit_project(store, name: str, change) -> None:
    record = store.find_project(name)
    data = yaml.safe_load(record.yaml)
    change(data)
    store.save_project(name, yaml.safe_dump(data), project_id=record.id)


@pytest.mark.slow
def test_use_for_next_run_keeps_later_project_edits_and_refuses_a_gone_part(store):
    source, run_id = judge_project(store, "judged")
    measure_held_out(store, run_id)
    assert align_report(store, run_id).after.unusable == 0
    marker = measure_marker(store, run_id)
    measure_held_out(store, run_id)
    assert measure_marker(store, run_id) not in (None, marker)  # a new marker each time

    edit_project(store, "judged", lambda d: d["critic"].update(name="edited judge"))
    copy = stored_project(store, use_for_next_run(store, run_id).id)
    assert copy.critic.name == "edited judge"  # the later edit survives
    assert FIX_PHRASE in copy.critic.evaluator["agent_as_judge"]["criteria"]
    assert copy.critic.evaluator["agent_as_judge"]["model"] == "scripted/strict"

    edit_project(store, "judged", lambda d: d["critic"].update(
        evaluator={"evaluator": "contains", "params": {"substring": "x"}}))
    with pytest.raises(ConfigError, match="no longer has the criteria") as info:
        use_for_next_run(store, run_id)
    assert info.value.where == "critic.evaluator"


@pytest.mark.slow
def test_align_runs_are_the_critics_own_however_many_runs_the_project_has(store):
    """Found by query (``tests/store/test_run_lookups.py`` adds 5,001 newer runs)."""
    source, run_id = judge_project(store, "judged")
    assert [r.id for r in align_runs(store, source)] == [run_id]
    assert align_runs(store, run_id) == []  # an align run has none of its own


def run_job(key: str, work) -> background.Job:
    job = background.start_job(key, "test", work)
    wait_until(lambda: job.finished, timeout=10, message="the job to end")
    return job


def test_a_failed_job_is_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnop1234")

    def leak(job):
        raise RuntimeError("call failed with key sk-test-abcdefghijklmnop1234")

    job = run_job("audit:leak", leak)
    assert job.error.startswith("RuntimeError") and "abcdefghijklmnop1234" not in job.error


def test_a_job_ended_by_a_base_exception_records_it():
    hook = threading.excepthook
    threading.excepthook = lambda args: None  # the re-raised exit ends the thread quietly
    try:
        def leave(job):
            raise SystemExit("worker shutting down")

        job = run_job("audit:exit", leave)
    finally:
        threading.excepthook = hook
    assert job.result is None and job.error == "SystemExit: worker shutting down"
