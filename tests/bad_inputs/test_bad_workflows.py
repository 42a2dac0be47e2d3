"""Broken multi-agent projects through ``studio validate``: each refused in one line that names
the file, the agent (or workflow) and what is wrong; and ``agent: {ref: module:workflow}``
pointing at a SequentialAgent in the user's own module, its components qualified by agent."""

from __future__ import annotations

import copy
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from studio.cli import main
from studio.model.errors import ConfigError
from studio.projects.files import check_project, create_project_run, load_project
from tests.bad_inputs.conftest import write_project

PIPELINE: dict[str, Any] = {
    "name": "pipe",
    "agents": [
        {"name": "outliner", "model": "scripted/pipeline", "instruction": "Outline the topic.",
         "output_key": "outline"},
        {"name": "writer", "model": "scripted/pipeline",
         "instruction": "Write a haiku from this outline: {outline}", "output_key": "draft"},
        {"name": "polisher", "model": "scripted/pipeline",
         "instruction": "Polish the haiku. Draft:\n{draft}"},
    ],
    "components": {"writer": ["instruction"]},
    "critic": {"model": "scripted/pipeline"},
    "reflection": {"model": "scripted/pipeline"},
    "dataset": {"train": [{"topic": "autumn leaves"}, {"topic": "city rain"}]},
    "run": {"max_iterations": 1},
}


def pipeline(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(PIPELINE)
    data.update(changes)
    return data


def with_agent(index: int, **fields: Any) -> dict[str, Any]:
    data = pipeline()
    data["agents"][index].update(fields)
    return data


def nested(depth: int) -> dict[str, Any]:
    """A workflow ``depth`` levels deep around the polisher."""
    inner: Any = "polisher"
    for level in range(depth - 1):
        inner = {"type": "sequential", "name": f"level{level}", "steps": [inner]}
    return {"type": "sequential", "name": "top", "steps": ["outliner", "writer", inner]}


def looped(max_iterations: int) -> dict[str, Any]:
    return {"type": "sequential", "name": "top", "steps": [
        "outliner", {"type": "loop", "name": "refine", "steps": ["writer", "polisher"],
                     "max_iterations": max_iterations}]}


REORDERED = pipeline()
REORDERED["agents"] = [REORDERED["agents"][i] for i in (1, 0, 2)]

BAD_WORKFLOWS = [
    # (id, project, fragments the one-line error must contain)
    ("unknown-step", pipeline(workflow={"steps": ["outliner", "writer", "nobody"]}),
     ["workflow", "step 'nobody' is not one of the agents", "'polisher'"]),
    ("agent-twice", pipeline(workflow={"steps": ["outliner", "writer", "writer", "polisher"]}),
     ["workflow", "agent 'writer' appears twice"]),
    ("agent-left-out", pipeline(workflow={"steps": ["outliner", "writer"]}),
     ["agent 'polisher' is declared but not in the workflow"]),
    ("primary-not-an-agent", pipeline(primary="ghost"),
     ["primary 'ghost' is not one of the agents", "'outliner', 'writer', 'polisher'"]),
    ("primary-not-in-workflow", pipeline(primary="ghost", workflow={
        "steps": ["outliner", "writer", "polisher"]}),
     ["primary", "'ghost' is not one of the agents", "'writer'"]),
    ("component-unknown-agent", pipeline(components={"ghost": ["instruction"]}),
     ["components", "'ghost.instruction'", "'outliner', 'writer', 'polisher'"]),
    ("component-unknown-agent-key", pipeline(components=["writer.instruction",
                                                         "editor.instruction"]),
     ["components", "'editor.instruction'"]),
    ("component-unknown-name", pipeline(components={"writer": ["instructions"]}),
     ["components", "unknown component 'writer.instructions'", "'instruction'"]),
    ("model-of-agents-1", with_agent(1, model="nope/xyz"),
     ["agents[1] (writer).model", "unknown model provider in 'nope/xyz'"]),
    ("model-key-of-agents-1", with_agent(1, model="openai/gpt-4o-mini"),
     ["agents[1] (writer).model", "needs OPENAI_API_KEY"]),
    ("field-typo-in-agents-2", with_agent(2, output_kye="x"),
     ["agents[2] (polisher).output_kye", "did you mean 'output_key'"]),
    ("name-not-identifier", with_agent(0, name="out liner"),
     ["agents[0]", "'out liner' must be an identifier"]),
    ("nested-6-deep", pipeline(workflow=nested(6)), ["nest 6 deep", "limit is 5"]),
    ("loop-0", pipeline(workflow={"type": "loop", "steps": ["outliner", "writer", "polisher"],
                                  "max_iterations": 0}),
     ["workflow.max_iterations", "greater than or equal to 1"]),
    ("nested-loop-21", pipeline(workflow=looped(21)),
     ["workflow.steps[1] (refine).max_iterations", "less than or equal to 20"]),
    ("nested-kind-typo", pipeline(workflow={"steps": ["outliner", {
        "type": "paralel", "name": "fan", "steps": ["writer", "polisher"]}]}),
     ["workflow.steps[1] (fan).type", "'sequential', 'loop' or 'parallel'"]),
    ("single-agent-primary", {**{k: v for k, v in PIPELINE.items() if k not in (
        "agents", "components")}, "agent": PIPELINE["agents"][0], "primary": "outliner"},
     ["primary 'outliner'", "with one agent leave it out"]),
    # the state guard on the seed: ADK would raise on the first example
    ("state-read-before-written", REORDERED,
     ["agents[0] (writer).instruction", "{outline}", "no agent before writer writes",
      "outliner writes 'outline' but has not finished when writer starts",
      "run writer after outliner"]),
    ("state-key-typo", with_agent(2, instruction="Polish the haiku. Draft:\n{drafts}"),
     ["agents[2] (polisher).instruction", "{drafts}", "polisher can read: ['draft', "
      "'outline', 'topic']", "write {drafts?} if it may be empty"]),
    ("state-across-parallel-branches", pipeline(workflow={"steps": [
        {"type": "parallel", "name": "fan", "steps": ["outliner", "writer"]}, "polisher"]}),
     ["agents[1] (writer).instruction", "{outline}", "run writer after outliner"]),
    ("state-own-key-in-a-loop", pipeline(agents=[
        {"name": "drafter", "model": "scripted/pipeline", "output_key": "draft",
         "instruction": "Improve this draft: {draft}"}], components=["instruction"],
        workflow={"type": "loop", "steps": ["drafter"], "max_iterations": 2}),
     ["agents[0] (drafter).instruction", "{draft}", "give an agent before drafter "
      "output_key: draft"]),
    ("state-artifact", with_agent(0, instruction="Outline {artifact.notes}."),
     ["agents[0] (outliner).instruction", "{artifact.notes}", "stores no artifacts"]),
]


@pytest.mark.parametrize("data, fragments", [c[1:] for c in BAD_WORKFLOWS],
                         ids=[c[0] for c in BAD_WORKFLOWS])
def test_validate_names_the_agent_and_the_problem(tmp_path, capsys, monkeypatch, data,
                                                  fragments):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = write_project(tmp_path, data)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"error: {path}: " in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


GOOD_WORKFLOWS = [
    ("as-declared", pipeline()),
    ("placeholder-from-the-dataset", with_agent(1, instruction="Write about {topic}: {outline}")),
    ("optional-placeholder", with_agent(0, instruction="Outline the topic. {notes?}")),
    ("nested-5-deep", pipeline(workflow=nested(5))),
    ("loop-reads-what-an-earlier-step-wrote", pipeline(workflow=looped(3))),
    ("parallel-then-merge", pipeline(agents=[
        {"name": "left", "model": "scripted/pipeline", "instruction": "Outline.",
         "output_key": "outline"},
        {"name": "right", "model": "scripted/pipeline", "instruction": "Draft.",
         "output_key": "draft"},
        {"name": "polisher", "model": "scripted/pipeline",
         "instruction": "Join {outline} and {draft}."}],
        components=["instruction"],
        workflow={"steps": [{"type": "parallel", "name": "fan", "steps": ["left", "right"]},
                            "polisher"]})),
]


@pytest.mark.parametrize("data", [c[1] for c in GOOD_WORKFLOWS], ids=[c[0] for c in GOOD_WORKFLOWS])
def test_validate_passes_workflows_that_adk_can_run(tmp_path, capsys, data):
    assert main(["validate", str(write_project(tmp_path, data))]) == 0
    assert "ok (2 training rows" in capsys.readouterr().out


# --------------------------------------------------------------------------- agent.ref

WORKFLOW_MODULE = '''
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.models.lite_llm import LiteLlm


def agent(name, instruction, output_key=None):
    return LlmAgent(name=name, model=LiteLlm(model="scripted/pipeline"),
                    instruction=instruction, output_key=output_key)


pipeline = SequentialAgent(name="haiku_pipeline", sub_agents=[
    agent("outliner", "Outline the topic.", "outline"),
    agent("writer", "Write a haiku from this outline: {outline}", "draft"),
    agent("polisher", "Polish the haiku. Draft:\\n{draft}"),
])
backwards = SequentialAgent(name="backwards", sub_agents=[
    agent("writer", "Write a haiku from this outline: {outline}", "draft"),
    agent("outliner", "Outline the topic.", "outline"),
])
'''


@pytest.fixture
def workflow_module(tmp_path, monkeypatch) -> str:
    """A trusted module of the user's (on sys.path, as an installed package would be) holding
    ADK workflow objects; returns its name."""
    name = f"user_pipeline_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / f"{name}.py").write_text(WORKFLOW_MODULE)
    monkeypatch.syspath_prepend(str(folder))
    yield name
    sys.modules.pop(name, None)


def ref_project(folder: Path, ref: str, **changes: Any) -> Path:
    data = {k: v for k, v in PIPELINE.items() if k not in ("agents", "components")}
    return write_project(folder, {**data, "agent": {"ref": ref}, **changes})


def test_a_referenced_workflow_validates_and_its_components_are_qualified(
        tmp_path, capsys, store, workflow_module):
    path = ref_project(tmp_path, f"{workflow_module}:pipeline")
    assert main(["validate", str(path)]) == 0
    assert "ok (2 training rows" in capsys.readouterr().out
    project, base = load_project(path)
    run = create_project_run(store, project, base)
    assert run.spec.components == ["outliner.instruction", "writer.instruction",
                                   "polisher.instruction"]
    assert run.spec.workflow.agent_names() == ["outliner", "writer", "polisher"]
    assert run.spec.primary == "polisher"

    per_agent = ref_project(tmp_path, f"{workflow_module}:pipeline",
                            components={"writer": ["instruction"]}, primary="writer")
    run = create_project_run(store, *load_project(per_agent))
    assert run.spec.components == ["writer.instruction"] and run.spec.primary == "writer"


@pytest.mark.parametrize("ref, changes, fragments", [
    (":pipeline", {"components": {"editor": ["instruction"]}},
     ["components", "'editor.instruction' names no agent of workflow 'haiku_pipeline'",
      "'outliner', 'polisher', 'writer'"]),
    (":pipeline", {"primary": "editor"},
     ["primary", "'editor' is not an agent of workflow 'haiku_pipeline'"]),
    (":backwards", {},
     ["agent.ref", ":backwards) > writer.instruction", "{outline}",
      "run writer after outliner"]),
    (":missing", {}, ["agent.ref", "has no attribute 'missing'"]),
], ids=["component-unknown-agent", "primary-unknown", "state-guard", "no-such-object"])
def test_a_referenced_workflow_is_checked_like_a_declared_one(
        tmp_path, capsys, workflow_module, ref, changes, fragments):
    path = ref_project(tmp_path, workflow_module + ref, **changes)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_check_project_raises_a_typed_error_naming_the_place(tmp_path):
    path = write_project(tmp_path, REORDERED)
    project, base = load_project(path)
    with pytest.raises(ConfigError) as refused:
        check_project(project, base, source="pipe.yaml")
    assert refused.value.where == "pipe.yaml: agents[0] (writer).instruction"
    assert refused.value.value == "outline"
