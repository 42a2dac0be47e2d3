"""Judged as ADK judges: a run of an agent folder judges each case by ADK's criteria as ``adk
eval`` does (each metric against its own threshold, a case passing only when every metric
passes), the trial carries that verdict, and the exported ``EvalSetResult`` carries ADK's
statuses exactly: the same as ADK's own ``LocalEvalService`` gives on the same invocations,
offline, including the issue's case, a haiku given in answer to a fact question (no tool
expected and none called, so the trajectory passes; the reply matches nothing, so the response
fails, and so does the case)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceResult,
    InferenceStatus,
)
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
from google.adk.evaluation.eval_result import EvalSetResult
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService

from studio.cli import main
from studio.model.verdicts import EvalStatus
from studio.projects.adk_runs import ADK_DEFAULT_CRITERIA
from studio.store import open_store
from tests.projects.adk_samples import write_sample_folder


@pytest.fixture
def judged_run(tmp_path, monkeypatch, capsys):
    """The sample folder run on ``scripted/demo`` (a haiku writer) for its seed only: its
    validation trials, the database and the folder."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = write_sample_folder(tmp_path, "facts_verdicts")
    db = f"sqlite:///{tmp_path}/s.db"
    assert main(["--db", db, "run", str(folder), "--evalset", str(folder / "facts.evalset.json"),
                 "--model", "scripted/demo", "--max-iterations", "0"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = open_store(db, cached=False)
    trials = store.trials(run_id, phase="valset")
    store.close()
    return db, run_id, folder, trials


def adk_evaluates(folder, cases) -> dict[str, object]:
    """ADK's own evaluation service on the exported cases' actual invocations, with ADK's
    default criteria (what ``adk eval`` scores without a config): eval id -> EvalCaseResult."""
    eval_set = EvalSet.model_validate_json((folder / "facts.evalset.json").read_text())
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set("facts_app", eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case("facts_app", eval_set.eval_set_id, case)
    service = LocalEvalService(root_agent=None, eval_sets_manager=manager)
    inferences = [InferenceResult(
        app_name="facts_app", eval_set_id=eval_set.eval_set_id, eval_case_id=case.eval_id,
        inferences=[case.eval_metric_result_per_invocation[0].actual_invocation],
        status=InferenceStatus.SUCCESS, session_id=None) for case in cases]
    metrics = get_eval_metrics_from_config(EvalConfig(criteria=ADK_DEFAULT_CRITERIA))
    request = EvaluateRequest(inference_results=inferences,
                              evaluate_config=EvaluateConfig(eval_metrics=metrics))

    async def results():
        return [result async for result in service.evaluate(request)]

    return {result.eval_id: result for result in asyncio.run(results())}


def statuses(case) -> tuple[str, dict[str, tuple[float | None, float | None, str]]]:
    return case.final_eval_status.name, {
        m.metric_name: (m.score, m.threshold, m.eval_status.name)
        for m in case.overall_eval_metric_results if m.eval_status.name != "INFORMATIONAL"}


def test_verdicts_and_the_export_equal_adks_own_evaluation_service(judged_run, capsys):
    db, run_id, folder, trials = judged_run
    history = folder / ".adk" / "eval_history"  # never opened in adk web: created
    assert main(["--db", db, "export", run_id, "--format", "adk-evalset-result",
                 "--out", str(history)]) == 0
    [path] = capsys.readouterr().out.split()
    exported = EvalSetResult.model_validate_json(Path(path).read_text(encoding="utf-8"))
    cases = {case.eval_id: case for case in exported.eval_case_results}
    theirs = adk_evaluates(folder, exported.eval_case_results)
    assert {eval_id: statuses(case) for eval_id, case in cases.items()} == {
        eval_id: statuses(case) for eval_id, case in theirs.items()}
    by_case = {t.example_index: t for t in trials}
    for index, eval_id in enumerate(("boiling", "planets")):  # the trial carries the same
        verdict = by_case[index].feedback.verdict
        status, metrics = statuses(cases[eval_id])
        assert (verdict.status.value, {m.name: (m.score, m.threshold, m.status.value)
                                       for m in verdict.metrics}) == (status, metrics)


def test_a_haiku_answering_a_fact_question_fails_though_its_trajectory_passes(judged_run):
    _, _, _, trials = judged_run
    haiku = trials[0]
    metrics = {m.name: m for m in haiku.feedback.verdict.metrics}
    assert metrics["tool_trajectory_avg_score"].status is EvalStatus.PASSED  # no tool, none used
    assert metrics["response_match_score"].status is EvalStatus.FAILED
    assert haiku.feedback.verdict.status is EvalStatus.FAILED
    assert haiku.feedback.verdict.text().startswith("FAILED: response_match_score ")
    assert 0.5 <= haiku.score < 1.0  # what GEPA optimises (graded): below 1 as the case fails
    assert haiku.feedback.verdict.score_rule.value == "graded"
