"""`studio align`, `align-report`, `align-apply` and `rescore` on the scripted strict critic."""

from __future__ import annotations

import json

import pytest

from studio.cli import main
from studio.runtime.providers.strict import FIX_PHRASE, is_short
from studio.store import open_store
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "short_answers_scripted.yaml"


@pytest.mark.slow
def test_align_a_critic_from_the_command_line(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["--db", db, "run", str(EXAMPLE)]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = open_store(db)
    trials = store.trials(run_id)
    assert main(["--db", db, "align", run_id]) == 2
    assert "10 more corrections with a score needed" in capsys.readouterr().err
    for trial in trials[:12]:
        score = "0.9" if is_short(trial.output) else "0.8"
        assert main(["--db", db, "override", str(trial.id), "--score", score]) == 0

    assert main(["--db", db, "align", run_id, "--max-iterations", "4", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "the aligned critic (#1) agrees better with the person" in out
    align_id = next(r.id for r in store.list_runs() if r.spec.aligns is not None)

    assert main(["--db", db, "align-report", align_id, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["after"]["mae"] < report["before"]["mae"] and report["held_out"] == 4
    assert FIX_PHRASE in report["text_after"]

    assert main(["--db", db, "align-apply", align_id]) == 2  # a file run has no studio project
    assert "studio.aligned_critic" in capsys.readouterr().err

    assert main(["--db", db, "rescore", run_id, "--critic-from", align_id, "--json"]) == 0
    scoring = json.loads(capsys.readouterr().out)
    assert scoring["after"]["mae"] < scoring["before"]["mae"]
    assert [t.score for t in store.trials(run_id)] == [t.score for t in trials]


@pytest.mark.slow
def test_align_a_part_of_a_weighted_judge_from_the_command_line(tmp_path, capsys):
    import yaml

    data = yaml.safe_load(EXAMPLE.read_text())
    judge = {"criteria": "The answer is good.", "scoring_strategy": "numeric",
             "model": "scripted/strict"}
    data["critic"] = {"type": "evaluator", "name": "combo", "evaluator": {"evaluators": [
        {"agent_as_judge": judge, "label": "quality"},
        {"agent_as_judge": {**judge, "criteria": "The answer is polite."}, "label": "tone"}]}}
    project = tmp_path / "weighted.yaml"
    project.write_text(yaml.safe_dump(data))
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["--db", db, "run", str(project)]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = open_store(db)
    for trial in store.trials(run_id)[:12]:
        score = "0.9" if is_short(trial.output) else "0.8"
        assert main(["--db", db, "override", str(trial.id), "--score", score]) == 0
    capsys.readouterr()
    assert main(["--db", db, "align", run_id]) == 2
    assert "several parts of this weighted critic can be aligned (quality, tone)" in (
        capsys.readouterr().err)
    assert main(["--db", db, "align", run_id, "--part", "quality", "--max-iterations", "3",
                 "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "measured by the real critic as applied (criteria of quality" in out
    assert "agrees better with the person" in out
    align_id = next(r.id for r in store.list_runs() if r.spec.aligns is not None)
    assert main(["--db", db, "align-report", align_id, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["part_name"] == "quality" and report["recorded"]["count"] == 4
