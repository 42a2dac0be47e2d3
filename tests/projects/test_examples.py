"""The shipped example projects: each validates, fits the JSON Schema `studio schema` prints, is
offered by the Projects page; the scripted pipeline improves by evolving its middle agent only,
and the embedded-model pipeline runs one iteration offline."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest
import yaml

from studio.cli import main
from studio.engine import build_engine
from studio.model.records import RunStatus
from studio.projects.files import PROJECT_JSON_SCHEMA, create_project_run, load_project
from studio.projects.workspace import (
    EXAMPLES_DIR,
    import_example,
    list_examples,
    start_project_run,
    stored_project,
)
from tests.helpers import ScriptedModels, wait_until

PIPELINES = ["pipeline_scripted.yaml", "pipeline.yaml"]
AGENTS = ("outliner", "writer", "polisher")


@pytest.mark.parametrize("filename, rows", [("pipeline_scripted.yaml", "5 training rows, 3 "
                                             "validation rows"),
                                            ("pipeline.yaml", "3 training rows, 2 validation "
                                             "rows")])
def test_each_pipeline_example_validates(capsys, filename, rows):
    assert main(["validate", str(EXAMPLES_DIR / filename)]) == 0
    assert f"ok ({rows})" in capsys.readouterr().out


def test_the_projects_page_offers_the_pipeline_examples():
    offered = {e.path.name: e for e in list_examples()}
    for filename in PIPELINES:
        assert filename in offered and "SequentialAgent" in offered[filename].description


@pytest.mark.slow
def test_a_loaded_pipeline_example_runs_from_the_studio(store):
    record = import_example(store, EXAMPLES_DIR / "pipeline_scripted.yaml")
    project = stored_project(store, record.id)
    assert [a.name for a in project.agents] == list(AGENTS)
    config = project.run.model_copy(update={"max_iterations": 1})
    run = start_project_run(store, record.id, config)  # as the Run page's "Start run"
    finished = wait_until(lambda: store.get_run(run.id).status is RunStatus.COMPLETED,
                          timeout=60, message="the example's run completes")
    assert finished and run.spec.components == ["writer.instruction"]
    assert run.spec.primary == "polisher" and run.spec.workflow.name == "haiku_pipeline"


def schema_errors(data) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(PROJECT_JSON_SCHEMA)
            .iter_errors(data)]


@pytest.mark.parametrize("path", sorted(EXAMPLES_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_fits_the_json_schema(path):
    assert schema_errors(yaml.safe_load(path.read_text())) == []


def test_the_printed_schema_is_a_valid_schema_covering_groups(capsys):
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(PROJECT_JSON_SCHEMA))
    jsonschema.Draft202012Validator.check_schema(printed)
    assert {"agents", "workflow", "primary", "components"} <= set(printed["properties"])
    assert "output_key" in printed["$defs"]["AgentSection"]["properties"]


def test_the_schema_refuses_what_the_project_format_refuses():
    good = yaml.safe_load((EXAMPLES_DIR / "pipeline_scripted.yaml").read_text())
    broken = {
        "component name": {**good, "components": {"writer": ["instructions"]}},
        "component key": {**good, "components": ["writer.prompt"]},
        "agent and agents": {**good, "agent": good["agents"][0]},
        "no agent": {k: v for k, v in good.items() if k != "agents"},
        "workflow kind": {**good, "workflow": {"type": "fan-out", "steps": ["writer"]}},
        "nested loop iterations": {**good, "workflow": {"steps": [
            "outliner", {"type": "loop", "name": "refine", "steps": ["writer", "polisher"],
                         "max_iterations": 50}]}},
        "empty steps": {**good, "workflow": {"steps": []}},
    }
    for mistake, data in broken.items():
        assert schema_errors(data), mistake
    per_key = {**good, "components": ["writer.instruction", "polisher.output_schema"]}
    assert schema_errors(per_key) == []


@pytest.mark.slow
def test_the_scripted_pipeline_improves_by_evolving_only_the_writer(tmp_path, capsys):
    seen = {id(r) for r in ScriptedModels().requests("scripted/pipeline")}
    db = f"sqlite:///{tmp_path}/pipeline.db"
    assert main(["--db", db, "run", str(EXAMPLES_DIR / "pipeline_scripted.yaml")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "completed"
    assert summary["final_score"] > summary["original_score"]
    assert list(summary["evolved_components"]) == ["writer.instruction"]
    evolved = summary["evolved_components"]["writer.instruction"]
    assert evolved.startswith("Write a haiku from this outline: {outline}") and "Rule:" in evolved

    requests = [r for r in ScriptedModels().requests("scripted/pipeline") if id(r) not in seen]
    systems = {name: [r.system for r in requests if f'internal name is "{name}"' in r.system]
               for name in AGENTS}
    assert all(systems.values()), "each agent of the pipeline ran"
    assert all(s.startswith("Outline a haiku about the topic.\n") for s in systems["outliner"])
    assert all(s.startswith("Polish the haiku. Draft:\n") and "Rule:" not in s
               for s in systems["polisher"])
    assert any("Rule:" in s for s in systems["writer"]), "the evolved writer ran"


@pytest.mark.local_model
def test_the_embedded_pipeline_runs_one_iteration_offline(store):
    project, base = load_project(EXAMPLES_DIR / "pipeline.yaml")
    smaller = project.dataset.model_copy(update={"val": project.dataset.val[:1]})
    # 4 trials: 13 model calls; 12 tokens a reply (not 40) is enough to pass text on and be scored
    agents = [a.model_copy(update={"generate_content_config": a.generate_content_config
                                   .model_copy(update={"max_output_tokens": 12})})
              for a in project.agents]
    project = project.model_copy(update={"dataset": smaller, "agents": agents})
    config = project.run.model_copy(update={"max_iterations": 1, "minibatch_size": 1})
    run = create_project_run(store, project, base, config=config)
    assert asyncio.run(build_engine(store, run.id).run()) == "max_iterations"
    assert store.get_run(run.id).status is RunStatus.COMPLETED
    trials = store.trials(run.id)
    assert trials and all(t.score is None or 0.0 <= t.score <= 1.0 for t in trials)
    authors = [[e["author"] for e in t.trace["events"]] for t in trials if t.error is None]
    assert any(a[:3] == list(AGENTS) for a in authors), authors
    (proposal,) = store.proposals(run.id)
    assert proposal.component == "writer.instruction"
