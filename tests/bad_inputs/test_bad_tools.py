"""Function tools in project files: a project from the browser may not name any unless the
server opted in (a tool runs code on the server whenever the model calls it); a bad tool is
refused by ``studio validate`` and ``studio run`` with the agent, the tool and the place named."""

from __future__ import annotations

import sys

import pytest
import yaml

from studio.cli import main
from studio.engine.hosting.build import create_run
from studio.model.config import EvolutionConfig
from studio.model.errors import ProjectFileError
from studio.model.records import AgentSpec, RunSpec
from studio.projects.files import ALLOW_CODE_REFS_ENV, parse_project
from studio.projects.probe import probe_sync
from studio.projects.workspace import (
    import_upload,
    resume_run,
    save_project,
    start_project_run,
)
from studio.views.drafts import from_fields, to_fields
from tests.bad_inputs.conftest import project, write_project
from tests.runtime.test_tools import LEAP_INSTRUCTION, leap_model

TOOL = "calendar:isleap"


def _tools_yaml(*tools: str, **agent) -> str:
    return yaml.safe_dump(project(agent={"tools": list(tools), **agent}))


def _says_refused(message: str, where: str) -> None:
    assert f"{where}: agent.tools[0]" in message, message
    assert f"agent 'writer' tool {TOOL!r} runs Python code on the server" in message
    assert "studio ui --allow-code-refs" in message and ALLOW_CODE_REFS_ENV in message


def test_an_upload_with_tools_is_refused_with_the_opt_in_named(store, saved):
    with pytest.raises(ProjectFileError) as refused:
        import_upload(store, _tools_yaml(TOOL).encode(), "tools.yaml")
    _says_refused(str(refused.value), "tools.yaml")
    assert saved()


def test_the_yaml_editor_cannot_save_tools(store, saved):
    with pytest.raises(ProjectFileError) as refused:
        save_project(store, parse_project(_tools_yaml(TOOL), source="YAML editor"), None)
    _says_refused(str(refused.value), "project 'bad-input'")
    assert saved()


def test_a_stored_project_with_tools_neither_starts_nor_tries(store):
    record = store.save_project("legacy", _tools_yaml(TOOL))  # stored before tools were checked
    with pytest.raises(ProjectFileError) as refused:
        start_project_run(store, record.id, EvolutionConfig(max_iterations=1))
    _says_refused(str(refused.value), "project 'legacy'")
    with pytest.raises(ProjectFileError, match=r"agent\.tools\[0\].*--allow-code-refs"):
        probe_sync(parse_project(record.yaml), {"topic": "x"})
    assert store.list_runs() == []


def test_resuming_a_run_with_tools_from_the_studio_is_refused(store):
    spec = RunSpec(agent=AgentSpec(name="writer", model="scripted/demo", tools=[TOOL]))
    run = create_run(store, spec=spec, trainset=[{"topic": "a"}])
    with pytest.raises(ProjectFileError) as refused:
        resume_run(store, run.id)
    _says_refused(str(refused.value), f"run {run.id}")
    assert store.get_run(run.id).status.value == "pending"


def test_with_the_opt_in_a_browser_project_runs_its_tool(store, monkeypatch, script):
    monkeypatch.setenv(ALLOW_CODE_REFS_ENV, "1")
    model = script(leap_model)
    record = import_upload(store, _tools_yaml(TOOL, model=model, instruction=LEAP_INSTRUCTION)
                           .encode(), "opted-in.yaml")
    result = probe_sync(parse_project(record.yaml), {"year": "2024"})
    assert result.output == "leap"
    assert result.trace["tool_calls"][0]["args"] == {"year": 2024}


@pytest.mark.parametrize("agent, fragments", [
    ({"tools": ["calendar.isleap"]},
     ["agent.tools[0]: agent 'writer' tool 'calendar.isleap'", "'package.module:function'"]),
    ({"tools": [TOOL, "calendar:_validate_month"]},
     ["agent.tools[1]: agent 'writer' tool 'calendar:_validate_month'", "private names"]),
    ({"tools": [TOOL], "ref": "my_agents:writer"},
     ["agent 'writer': 'tools' are for a declared agent"]),
])
def test_a_malformed_tool_is_refused_where_the_file_is_parsed(tmp_path, capsys, agent,
                                                              fragments):
    path = write_project(tmp_path, project(agent=agent))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.mark.slow
@pytest.mark.parametrize("tool, problem", [
    ("project_tools:lookup", "no installed package provides"),
    ("collections:OrderedDict", "is a class, not a function"),
])
def test_validate_names_the_agent_and_the_tool(tmp_path, capsys, monkeypatch, tool, problem):
    (tmp_path / "project_tools.py").write_text("def lookup(city: str) -> str:\n    return city\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m studio.cli` puts the cwd first
    path = write_project(tmp_path, project(agent={"tools": [TOOL, tool]}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: agent.tools[1]" in err and f"agent 'writer' tool {tool!r}" in err
    assert problem in err and "Traceback" not in err
    assert "project_tools" not in sys.modules


def test_validate_accepts_an_installed_tool(tmp_path, capsys):
    path = write_project(tmp_path, project(agent={"tools": [TOOL]}))
    assert main(["validate", str(path)]) == 0


def test_the_project_editor_keeps_tools_and_places_a_bad_one_in_its_field():
    fields = to_fields(parse_project(_tools_yaml(TOOL, "calendar:monthrange")))
    assert fields["agent_tools"] == "calendar:isleap\ncalendar:monthrange"
    rebuilt, errors = from_fields(fields)
    assert errors == {} and rebuilt.agent.tools == [TOOL, "calendar:monthrange"]
    _, errors = from_fields({**fields, "agent_tools": "calendar:isleap\n\nnot a tool"})
    assert "agent 'writer' tool 'not a tool'" in errors["agent_tools"]


def test_the_json_schema_describes_tool_refs():
    import jsonschema

    from studio.projects.files import PROJECT_JSON_SCHEMA

    validator = jsonschema.Draft202012Validator(PROJECT_JSON_SCHEMA)
    assert validator.is_valid(project(agent={"tools": [TOOL, "os.path:basename"]}))
    assert not validator.is_valid(project(agent={"tools": ["calendar.isleap"]}))
