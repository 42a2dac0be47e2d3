"""``studio run my_agent --evalset ...``: an ADK agent folder and its eval sets, no project file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from google.adk.optimization.gepa_root_agent_prompt_optimizer import (
    GEPARootAgentPromptOptimizerConfig,
)

from studio.cli import main
from studio.model.errors import ConfigError, DatasetError
from studio.projects.adk_runs import (
    FolderRunRequest,
    SamplerConfig,
    critic_section,
    folder_project,
)
from studio.store import open_store
from tests.projects.test_adk_projects import write_agent_folder, write_eval_set


@pytest.fixture
def agent_dir(tmp_path, monkeypatch, request):
    """An agent folder (its name unique per test: Python caches an imported package) holding
    the eval set ``haiku.evalset.json``, as ``adk web`` saves it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"run_agent_{request.node.name.split('[')[0][-24:]}"
    folder = write_agent_folder(tmp_path, name, f"TASK_{name.upper()}")
    monkeypatch.delenv(f"TASK_{name.upper()}", raising=False)
    write_eval_set(folder / "haiku.evalset.json")
    return folder


def stored_run(db: str, run_id: str):
    store = open_store(db, cached=False)
    try:
        return store.get_run(run_id), store.trials(run_id)
    finally:
        store.close()


def test_studio_run_takes_an_agent_folder_and_an_eval_set(agent_dir, tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/s.db"
    code = main(["--db", db, "run", str(agent_dir), "--evalset",
                 str(agent_dir / "haiku.evalset.json"), "--max-iterations", "1",
                 "--reflection-model", "scripted/demo"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "completed"
    run, trials = stored_run(db, summary["run_id"])
    assert run.spec.agent_folder == str(agent_dir.resolve())
    assert run.spec.critic.evaluator["adk_metrics"] == {"criteria": {
        "tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
    assert run.spec.reflection.model == "scripted/demo"
    assert trials and all(t.feedback.verdict is not None for t in trials)
    assert all("[response_match_score]" in t.feedback.text for t in trials)


def test_write_project_saves_a_project_that_runs_the_same(agent_dir, tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/s.db"
    target = tmp_path / "project.yaml"
    assert main(["--db", db, "run", str(agent_dir), "--evalset",
                 str(agent_dir / "haiku.evalset.json"), "--max-iterations", "0",
                 "--write-project", str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    assert f"folder: {agent_dir.name}" in text
    assert f"path: {agent_dir.name}/haiku.evalset.json" in text
    capsys.readouterr()
    assert main(["--db", db, "run", str(target), "--max-iterations", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "completed"


def write_json(path: Path, model) -> Path:
    path.write_text(model.model_dump_json(), encoding="utf-8")
    return path


def test_adk_optimize_configs_map_to_the_studios_settings(agent_dir, tmp_path):
    """The sampler config's eval sets (found in the agent folder, as ADK's
    LocalEvalSetsManager finds them), case ids and criteria; the optimizer config's model,
    budget and minibatch."""
    sampler = write_json(tmp_path / "sampler.json", SamplerConfig.model_validate({
        "app_name": agent_dir.name, "train_eval_set": "haiku",
        "train_eval_case_ids": ["rain"], "validation_eval_set": "haiku",
        "eval_config": {"criteria": {"response_match_score": 0.5}}}))
    optimizer = write_json(tmp_path / "optimizer.json", GEPARootAgentPromptOptimizerConfig(
        optimizer_model="scripted/demo", max_metric_calls=40, reflection_minibatch_size=2))
    made = folder_project(FolderRunRequest(folder=agent_dir, sampler_config=sampler,
                                           optimizer_config=optimizer))
    project = made.project
    assert [row["input"] for row in project.dataset.train] == ["city rain"]
    assert project.dataset.val.path == f"{agent_dir.name}/haiku.evalset.json"
    assert project.critic.adk_metrics == {"criteria": {"response_match_score": 0.5}}
    assert project.reflection.model == "scripted/demo"
    assert (project.run.max_metric_calls, project.run.minibatch_size) == (40, 2)


def test_a_criteria_file_is_judged_by_adks_own_evaluators(agent_dir, tmp_path):
    criteria = tmp_path / "test_config.json"
    criteria.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": {
        "threshold": 1.0, "match_type": "ANY_ORDER"}}}), encoding="utf-8")
    made = folder_project(FolderRunRequest(folder=agent_dir, criteria=criteria,
                                           evalsets=(agent_dir / "haiku.evalset.json",)))
    critic = made.project.critic
    assert (critic.type, critic.score) == ("adk_metrics", "graded")
    criterion = critic.adk_metrics["criteria"]["tool_trajectory_avg_score"]
    assert (criterion["threshold"], criterion["match_type"]) == (1.0, "ANY_ORDER")


def test_two_eval_sets_are_read_as_inline_rows(agent_dir, tmp_path):
    other = write_eval_set(tmp_path / "more.evalset.json")
    made = folder_project(FolderRunRequest(folder=agent_dir, evalsets=(
        agent_dir / "haiku.evalset.json", other)))
    assert len(made.project.dataset.train) == 4


def test_any_adk_metric_is_judged_by_adks_own_evaluators_with_the_judge_given():
    criteria = {"final_response_match_v2": {"threshold": 0.5}, "response_match_score": 0.8}
    assert critic_section(criteria, judge_model="scripted/demo") == {
        "type": "adk_metrics", "name": "adk_criteria", "adk_metrics": {"criteria": criteria},
        "score": "graded", "model": "scripted/demo"}


@pytest.mark.parametrize(("args", "message"), [
    ([], "give the eval set to train on: --evalset"),
    (["--evalset", "missing.evalset.json"], "eval set not found"),
    (["--evalset", "rows.csv"], "is not named as ADK names eval sets"),
])
def test_bad_eval_sets_are_refused_with_what_to_give(agent_dir, tmp_path, capsys, args, message):
    args = [str(tmp_path / a) if a.endswith(".json") or a.endswith(".csv") else a for a in args]
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(agent_dir), *args]) == 2
    assert message in capsys.readouterr().err


def test_a_sampler_config_for_another_app_is_refused(agent_dir, tmp_path):
    sampler = write_json(tmp_path / "sampler.json", SamplerConfig.model_validate({
        "app_name": "other_agent", "train_eval_set": "haiku", "eval_config": {}}))
    with pytest.raises(ConfigError, match="app_name 'other_agent' is not the agent folder's"):
        folder_project(FolderRunRequest(folder=agent_dir, sampler_config=sampler))


def test_an_unknown_case_id_is_refused(agent_dir, tmp_path):
    sampler = write_json(tmp_path / "sampler.json", SamplerConfig.model_validate({
        "app_name": agent_dir.name, "train_eval_set": "haiku",
        "train_eval_case_ids": ["snow"], "eval_config": {}}))
    with pytest.raises(DatasetError, match=r"eval case ids \['snow'\] are not in"):
        folder_project(FolderRunRequest(folder=agent_dir, sampler_config=sampler))


def test_a_folder_without_root_agent_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "no_root_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (folder / "agent.py").write_text("helper = 1\n", encoding="utf-8")
    write_eval_set(folder / "haiku.evalset.json")
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(folder), "--evalset",
                 str(folder / "haiku.evalset.json")]) == 2
    assert "no_root_agent has no root_agent: its no_root_agent.agent module must define one" \
        in capsys.readouterr().err


def test_a_folder_that_is_not_an_agent_folder_is_refused(tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(tmp_path / "plain"),
                 "--evalset", "x.evalset.json"]) == 2
    assert "is not an ADK agent folder" in capsys.readouterr().err


def test_folder_options_with_a_project_file_are_refused(tmp_path, capsys):
    project = tmp_path / "p.yaml"
    project.write_text("name: x\n", encoding="utf-8")
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(project), "--evalset",
                 "x.evalset.json"]) == 2
    assert "--evalset is for an agent folder" in capsys.readouterr().err


def test_a_legacy_test_file_is_an_eval_set_too(agent_dir, tmp_path):
    legacy = tmp_path / "dice.test.json"
    legacy.write_text(json.dumps([{"query": "Roll a die", "reference": "I rolled a 4.",
                                   "expected_tool_use": []}]), encoding="utf-8")
    made = folder_project(FolderRunRequest(folder=agent_dir, evalsets=(legacy,)))
    assert made.project.dataset.train.path == "dice.test.json"
    assert made.base_dir == tmp_path


def test_a_multi_turn_case_is_refused_by_its_eval_id(agent_dir, tmp_path, capsys):
    from google.adk.evaluation.eval_case import EvalCase, Invocation
    from google.adk.evaluation.eval_set import EvalSet
    from google.genai import types

    def turn(text: str) -> Invocation:
        return Invocation(user_content=types.Content(role="user",
                                                     parts=[types.Part.from_text(text=text)]))
    talk = tmp_path / "talk.evalset.json"
    talk.write_text(EvalSet(eval_set_id="talk", eval_cases=[EvalCase(
        eval_id="chat", conversation=[turn("hi"), turn("and then?")])]).model_dump_json(),
        encoding="utf-8")
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(agent_dir), "--evalset",
                 str(talk)]) == 2
    assert "eval case 'chat' in" in capsys.readouterr().err


@pytest.mark.parametrize("kind, said", [
    ("missing", "does not exist: give the path of the agent folder"),
    ("text file", "is a file, not an agent folder"),
    ("agent.py", "is a Python file, not an agent folder: give the folder holding it"),
    ("fifo", "is a FIFO, a named pipe, not an agent folder"),
])
def test_a_path_that_is_not_an_agent_folder_is_named_for_what_it_is(tmp_path, capsys, kind,
                                                                     said):
    path = tmp_path / {"missing": "my_agnet", "text file": "notes.txt", "agent.py": "agent.py",
                       "fifo": "pipe"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind != "missing":
        path.write_text("root_agent = None\n", encoding="utf-8")
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(path), "--evalset",
                 "x.evalset.json"]) == 2
    err = capsys.readouterr().err
    assert f"--evalset is for an agent folder (`studio run my_agent --evalset ...`); {path} " \
           f"{said}" in err
    assert "is a project file" not in err


def test_an_eval_set_that_is_a_fifo_is_named_as_one(agent_dir, tmp_path, capsys):
    pipe = tmp_path / "live.evalset.json"
    os.mkfifo(pipe)
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(agent_dir), "--evalset",
                 str(pipe)]) == 2  # refused without being opened: reading it would wait
    err = capsys.readouterr().err
    assert f"the eval set {pipe} is not a regular file (a FIFO, a named pipe)" in err
    assert "not found" not in err


def test_an_eval_set_nested_5000_deep_is_refused_in_one_line(agent_dir, tmp_path, capsys):
    deep = tmp_path / "deep.evalset.json"
    deep.write_text('{"eval_set_id": "deep", "eval_cases": [' + "[" * 5000 + "]" * 5000 + "]}",
                    encoding="utf-8")
    two_files = ["--evalset", str(deep), "--evalset", str(agent_dir / "haiku.evalset.json")]
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(agent_dir), *two_files]) == 2
    err = capsys.readouterr().err
    assert f"{deep} nests more than 64 levels deep" in err and "Traceback" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("where, number", [("sampler", "NaN"), ("sampler", "Infinity"),
                                           ("criteria", "NaN"), ("criteria", "1e400")])
def test_a_threshold_that_is_not_a_finite_number_is_refused(agent_dir, tmp_path, capsys, where,
                                                            number):
    """ADK's EvalConfig takes ``NaN``; every comparison with it is false. A threshold alone
    in the sampler config, an object with one in the criteria file."""
    threshold = number if where == "sampler" else f'{{"threshold": {number}}}'
    criteria = f'{{"criteria": {{"response_match_score": {threshold}}}}}'
    if where == "sampler":
        (tmp_path / "sampler.json").write_text(
            f'{{"app_name": "{agent_dir.name}", "train_eval_set": "haiku", '
            f'"eval_config": {criteria}}}', encoding="utf-8")
        args = ["--sampler-config", str(tmp_path / "sampler.json")]
    else:
        (tmp_path / "test_config.json").write_text(criteria, encoding="utf-8")
        args = ["--evalset", str(agent_dir / "haiku.evalset.json"), "--criteria",
                str(tmp_path / "test_config.json")]
    db = f"sqlite:///{tmp_path}/s.db"
    quick = ["--max-iterations", "0", "--reflection-model", "scripted/demo"]  # if it ran
    assert main(["--db", db, "run", str(agent_dir), *args, *quick]) == 2
    err = capsys.readouterr().err
    shown = "nan" if number == "NaN" else "inf"
    place = "criteria.response_match_score" + ("" if where == "sampler" else ".threshold")
    assert f"{place} is {shown}: a threshold must be a finite number" in err, err
    assert open_store(db, cached=False).list_runs() == []
