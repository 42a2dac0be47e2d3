"""``studio export RUN --format adk-evalset-result``: the best candidate's validation results as
ADK's EvalSetResult, read back by ADK's own results manager."""

from __future__ import annotations

import json

from google.adk.evaluation.eval_result import EvalSetResult
from google.adk.evaluation.evaluator import EvalStatus
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager

from studio.cli import main
from studio.store import open_store
from tests.projects.test_adk_runs import agent_dir  # noqa: F401  (the fixture)


def folder_run(agent_dir, tmp_path, capsys) -> tuple[str, str]:  # noqa: F811
    db = f"sqlite:///{tmp_path}/s.db"
    assert main(["--db", db, "run", str(agent_dir), "--evalset",
                 str(agent_dir / "haiku.evalset.json"), "--max-iterations", "0"]) == 0
    return db, json.loads(capsys.readouterr().out)["run_id"]


def test_the_export_is_an_eval_set_result_adk_reads(agent_dir, tmp_path, capsys):  # noqa: F811
    db, run_id = folder_run(agent_dir, tmp_path, capsys)
    history = agent_dir / ".adk" / "eval_history"  # never opened in adk web: created
    assert main(["--db", db, "export", run_id, "--format", "adk-evalset-result",
                 "--out", str(history)]) == 0
    [path] = capsys.readouterr().out.split()
    result_id = path.rsplit("/", 1)[1].removesuffix(".evalset_result.json")
    manager = LocalEvalSetResultsManager(agents_dir=str(agent_dir.parent))
    assert manager.list_eval_set_results(agent_dir.name) == [result_id]
    result = manager.get_eval_set_result(agent_dir.name, result_id)
    assert result.eval_set_id == "haiku"
    assert [case.eval_id for case in result.eval_case_results] == ["leaves", "rain"]
    rain = result.eval_case_results[1]
    assert [m.metric_name for m in rain.overall_eval_metric_results] == [
        "tool_trajectory_avg_score", "response_match_score"]
    invocation = rain.eval_metric_result_per_invocation[0]
    assert invocation.expected_invocation.final_response.parts[0].text == "Rain on the roofs"
    assert invocation.expected_invocation.intermediate_data.tool_uses[0].name == "weather"
    assert invocation.actual_invocation.user_content.parts[0].text == "city rain"


def test_a_correction_decides_the_case_and_replaces_the_critics_parts(agent_dir, tmp_path,  # noqa: F811
                                                                       capsys):
    db, run_id = folder_run(agent_dir, tmp_path, capsys)
    store = open_store(db, cached=False)
    [trial] = [t for t in store.trials(run_id, phase="valset") if t.example_index == 0]
    store.close()
    assert main(["--db", db, "override", str(trial.id), "--score", "0.9"]) == 0
    out = tmp_path / "best.evalset_result.json"
    assert main(["--db", db, "export", run_id, "--format", "adk-evalset-result",
                 "--out", str(out), "--threshold", "0.8"]) == 0
    result = EvalSetResult.model_validate_json(out.read_text(encoding="utf-8"))
    leaves = result.eval_case_results[0]
    assert leaves.final_eval_status == EvalStatus.PASSED
    [metric] = leaves.overall_eval_metric_results
    assert (metric.score, metric.threshold) == (0.9, 0.8)


def test_a_run_not_scored_yet_is_refused(tmp_path, capsys):
    from studio.engine.hosting.build import create_run
    from studio.model.records import AgentSpec, CriticSpec, RunSpec

    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    spec = RunSpec(agent=AgentSpec(name="a", model="scripted/demo"),
                   critic=CriticSpec(type="evaluator", name="c",
                                     evaluator={"evaluator": "exact_match"}))
    run = create_run(store, spec=spec, trainset=[{"input": "x", "expected": "y"}])
    store.close()
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "export", run.id, "--format",
                 "adk-evalset-result"]) == 2
    assert "has no scored candidate yet" in capsys.readouterr().err
