"""ADK users' own files in a project: eval sets as datasets, agent folders as the agent."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
from google.adk.evaluation.eval_set import EvalSet
from google.genai import types

from studio.cli import main
from studio.model.errors import ConfigError, ProjectFileError
from studio.projects.files import Origin, check_project_datasets, parse_project
from studio.store import open_store


def write_eval_set(path: Path) -> Path:
    """An eval set as ``adk web`` saves it: two single-turn cases, one with a tool call."""
    def case(eval_id: str, query: str, reply: str, tools: list[types.FunctionCall]) -> EvalCase:
        return EvalCase(eval_id=eval_id, conversation=[Invocation(
            user_content=types.Content(role="user", parts=[types.Part.from_text(text=query)]),
            final_response=types.Content(role="model", parts=[types.Part.from_text(text=reply)]),
            intermediate_data=IntermediateData(tool_uses=tools))])
    eval_set = EvalSet(eval_set_id="haiku", eval_cases=[
        case("leaves", "autumn leaves", "Red leaves fall", []),
        case("rain", "city rain", "Rain on the roofs",
             [types.FunctionCall(name="weather", args={"city": "Oslo"})])])
    path.write_text(eval_set.model_dump_json(indent=2), encoding="utf-8")
    return path


def test_an_eval_set_is_a_projects_train_set(tmp_path):
    write_eval_set(tmp_path / "haiku.evalset.json")
    project = parse_project("""
name: from-adk
agent: {name: writer, model: scripted/demo, instruction: Write a haiku about the topic.}
critic: {type: evaluator, evaluator: {evaluator: trajectory_match, params: {mode: strict}}}
reflection: {model: scripted/demo}
dataset: {train: {path: haiku.evalset.json}}
""", source="p.yaml")
    sets = check_project_datasets(project, tmp_path, source="p.yaml")
    assert sets.train == [
        {"input": "autumn leaves", "eval_id": "leaves", "eval_set_id": "haiku",
         "expected": "Red leaves fall", "expected_trajectory": []},
        {"input": "city rain", "eval_id": "rain", "eval_set_id": "haiku",
         "expected": "Rain on the roofs",
         "expected_trajectory": [{"name": "weather", "args": {"city": "Oslo"}}]}]


def write_agent_folder(parent: Path, name: str, instruction_env: str = "HAIKU_TASK") -> Path:
    """An agent folder as ``adk create`` lays it out, its instruction read from its ``.env``."""
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (folder / "agent.py").write_text(f'''import os

from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm

root_agent = LlmAgent(name="writer", model=LiteLlm(model="scripted/demo"),
                      instruction=os.environ["{instruction_env}"])
''', encoding="utf-8")
    (folder / ".env").write_text(f"{instruction_env}=Write a haiku about the given topic.\n"
                                 "ADK_FOLDER_TEST_KEPT=from-dotenv\n", encoding="utf-8")
    return folder


PROJECT = """
name: from-adk
agent: {agent}
critic: {{type: agent, schema: advanced, model: scripted/demo}}
reflection: {{model: scripted/demo}}
dataset: {{train: {{path: haiku.evalset.json}}}}
run: {{max_iterations: 1, minibatch_size: 2, review: auto}}
"""


def test_an_agent_folder_and_an_eval_set_run_through_studio_run(tmp_path, capsys, monkeypatch):
    """No PYTHONPATH: the folder's parent is put on sys.path; its .env gives the instruction
    and never overrides a variable already set."""
    monkeypatch.delenv("ADK_TEST_TASK_A", raising=False)
    monkeypatch.setenv("ADK_FOLDER_TEST_KEPT", "from-shell")
    monkeypatch.setattr(sys, "path", list(sys.path))
    write_agent_folder(tmp_path / "agents", "haiku_agent_a", "ADK_TEST_TASK_A")
    write_eval_set(tmp_path / "haiku.evalset.json")
    path = tmp_path / "project.yaml"
    path.write_text(PROJECT.format(agent="{folder: agents/haiku_agent_a}"), encoding="utf-8")
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "completed"
    assert os.environ["ADK_TEST_TASK_A"] == "Write a haiku about the given topic."
    assert os.environ["ADK_FOLDER_TEST_KEPT"] == "from-shell"
    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    run = store.get_run(summary["run_id"])
    store.close()
    assert run.spec.agent_ref == "haiku_agent_a.agent:root_agent"
    assert run.spec.agent_folder == str((tmp_path / "agents" / "haiku_agent_a").resolve())


def test_a_ref_into_a_folder_next_to_the_project_needs_no_pythonpath(tmp_path, monkeypatch):
    monkeypatch.delenv("ADK_TEST_TASK_B", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    write_agent_folder(tmp_path, "haiku_agent_b", "ADK_TEST_TASK_B")
    write_eval_set(tmp_path / "haiku.evalset.json")
    project = parse_project(PROJECT.format(agent='{ref: "haiku_agent_b.agent:root_agent"}'))
    check_project_datasets(project, tmp_path, source="p.yaml")
    assert project.run_spec(tmp_path).agent_folder == str(tmp_path / "haiku_agent_b")
    assert str(tmp_path) in sys.path


def test_an_agent_folder_from_the_browser_is_refused(tmp_path):
    project = parse_project(PROJECT.format(agent="{folder: my_agent}"))
    with pytest.raises(ProjectFileError, match="agent.folder 'my_agent' imports the agent "
                                               "folder's Python code") as caught:
        check_project_datasets(project, tmp_path, source="upload.yaml", origin=Origin.BROWSER)
    assert caught.value.where == "upload.yaml: agent.folder"


def test_a_ref_that_does_not_import_from_the_folder_is_refused():
    with pytest.raises(ProjectFileError, match="does not import from agent.folder 'my_agent'"):
        parse_project(PROJECT.format(agent='{folder: my_agent, ref: "other.agent:root_agent"}'))


def test_a_folder_without_an_agent_says_what_adk_expects(tmp_path):
    (tmp_path / "empty_agent").mkdir()
    write_eval_set(tmp_path / "haiku.evalset.json")
    project = parse_project(PROJECT.format(agent="{folder: empty_agent}"))
    with pytest.raises(ConfigError, match="is not an ADK agent folder: it needs agent.py"):
        check_project_datasets(project, tmp_path, source="p.yaml")


ADK_METRICS_PROJECT = """
name: scored-as-adk
agent: {name: writer, model: scripted/demo, instruction: Write a haiku about the topic.}
critic: {type: adk_metrics, adk_metrics: test_config.json, model: scripted/demo, score: mean}
reflection: {model: scripted/demo}
dataset: {train: {path: haiku.evalset.json}}
run: {max_iterations: 1, minibatch_size: 2, review: auto}
"""


@pytest.mark.slow
def test_adks_criteria_file_scores_a_studio_run(tmp_path, capsys):
    """``critic: {type: adk_metrics, adk_metrics: test_config.json}``: the trials carry ADK's
    per-metric verdicts, and the run's stored spec carries the criteria themselves."""
    write_eval_set(tmp_path / "haiku.evalset.json")
    criteria = {"criteria": {"response_match_score": 0.5, "tool_trajectory_avg_score": 1.0}}
    (tmp_path / "test_config.json").write_text(json.dumps(criteria), encoding="utf-8")
    (tmp_path / "project.yaml").write_text(ADK_METRICS_PROJECT, encoding="utf-8")
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run",
                 str(tmp_path / "project.yaml")]) == 0
    summary = json.loads(capsys.readouterr().out)
    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    run, trials = store.get_run(summary["run_id"]), store.trials(summary["run_id"])
    store.close()
    assert run.spec.critic.evaluator == {"adk_metrics": criteria, "judge_model": "scripted/demo",
                                         "score": "mean"}
    verdicts = [trial.feedback.verdict for trial in trials]
    assert verdicts and all({m.name for m in v.metrics} == set(criteria["criteria"])
                            for v in verdicts)
    assert all(trial.feedback.text.startswith("[response_match_score]") for trial in trials)


@pytest.mark.parametrize(("value", "refusal"), [
    ("../test_config.json", "outside the project's folder"),
    ("/etc/passwd", "an absolute path"),
])
def test_a_criteria_file_outside_the_project_is_refused(tmp_path, value, refusal):
    project = parse_project(ADK_METRICS_PROJECT.replace("test_config.json", value),
                            source="p.yaml")
    write_eval_set(tmp_path / "haiku.evalset.json")
    with pytest.raises(ProjectFileError, match=refusal):
        check_project_datasets(project, tmp_path, source="p.yaml")


def test_a_criteria_file_from_the_browser_is_refused_and_inline_criteria_are_not(tmp_path):
    project = parse_project(ADK_METRICS_PROJECT, source="p.yaml")
    with pytest.raises(ProjectFileError, match="cannot read files on the server; paste"):
        check_project_datasets(project, tmp_path, source="p.yaml", origin=Origin.BROWSER)
    inline = parse_project(ADK_METRICS_PROJECT.replace(
        "adk_metrics: test_config.json", "adk_metrics: {criteria: {response_match_score: 0.5}}"
    ).replace("{path: haiku.evalset.json}", "[{input: autumn, expected: red leaves}]"),
        source="p.yaml")
    check_project_datasets(inline, tmp_path, source="p.yaml", origin=Origin.BROWSER)
