"""A project whose ``agent.ref`` names an ADK 2 graph ``Workflow``: ``studio run`` evolves the
chosen node with the graph kept, and the stored spec carries the graph's shape."""

from __future__ import annotations

import json
import sys

import pytest

from studio.cli import main
from studio.engine.hosting.api import load_result
from studio.store import open_store
from tests.engine.test_graph_workflows import BETTER, node_model

AGENT_PY = '''from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.workflow import JoinNode, Workflow

model = LiteLlm(model="{model}")
plan = LlmAgent(name="plan", model=model, instruction="Plan it.")
pros = LlmAgent(name="pros", model=model, instruction="List pros.")
cons = LlmAgent(name="cons", model=model, instruction="List cons.")
final = LlmAgent(name="final", model=model, instruction="Decide.")
root_agent = Workflow(name="decide",
                      edges=[("START", plan, (pros, cons), JoinNode(name="join"), final)])
'''

PROJECT = """
name: graph
agent: {agent}
components: {{pros: [instruction]}}
critic: {{type: evaluator, evaluator: {{evaluator: contains, params: {{substring: in detail}}}}}}
reflection: {{model: {reflection}}}
dataset: {{train: [{{topic: a bike}}, {{topic: a car}}]}}
run: {{max_iterations: 1, minibatch_size: 2, review: auto}}
"""


@pytest.mark.slow
@pytest.mark.parametrize("agent", ['{ref: "graph_project_agents.agent:root_agent"}',
                                   "{folder: graph_project_agents}"])
def test_a_project_evolves_a_graph_workflow_by_reference(tmp_path, capsys, script, monkeypatch,
                                                         agent):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "graph_project_agents", raising=False)
    monkeypatch.delitem(sys.modules, "graph_project_agents.agent", raising=False)
    model, reflection = script(node_model), script(lambda request: BETTER)
    package = tmp_path / "graph_project_agents"
    package.mkdir()
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(AGENT_PY.format(model=model))
    (tmp_path / "project.yaml").write_text(PROJECT.format(reflection=reflection, agent=agent))
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(tmp_path / "project.yaml")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "completed"
    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    run = store.get_run(summary["run_id"])
    evolved = load_result(store, run.id).evolved_components
    store.close()
    assert run.spec.components == ["pros.instruction"] and run.spec.primary == "final"
    assert run.spec.graph is not None and run.spec.graph.node("join") is not None
    assert evolved == {"pros.instruction": BETTER}
