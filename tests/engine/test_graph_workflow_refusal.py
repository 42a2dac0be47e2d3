"""An ADK 2 graph ``Workflow`` is refused before anything runs where a tree of agents is expected
(``evolve_workflow``), naming its LlmAgent nodes and what to call instead (it used to be a run
that "completed" having changed nothing); ``evolve()`` and a project's ``agent.ref`` evolve it
(tests/engine/test_graph_workflows.py) and refuse a component it cannot evolve."""

from __future__ import annotations

import asyncio
import sys
import types

import pytest
from google.adk.agents import LlmAgent
from google.adk.workflow import FunctionNode, JoinNode, Workflow

from studio.engine.hosting.api import evolve, evolve_workflow
from studio.model.errors import ConfigError
from studio.runtime.agents import load_agent
from studio.runtime.providers import litellm_model


def shout(node_input: str) -> str:
    return str(node_input).upper()


def graph(model: str) -> Workflow:
    """A chain into a fan-out of two LlmAgents joined, and a function node."""
    def agent(name: str) -> LlmAgent:
        return LlmAgent(name=name, model=litellm_model(model), instruction=f"You are {name}.")
    draft, left, right = agent("draft"), agent("left"), agent("right")
    join, upper = JoinNode(name="join"), FunctionNode(func=shout, name="upper")
    return Workflow(name="pipeline", edges=[("START", draft), (draft, left), (draft, right),
                                            (left, join), (right, join), (join, upper)])


@pytest.fixture
def calls(script):
    seen: list[str] = []
    model = script(lambda request: seen.append(request.prompt_text) or "ok")
    return seen, graph(model)


def test_evolve_refuses_a_function_nodes_component_before_any_model_call_or_run(store, calls):
    seen, workflow = calls
    with pytest.raises(ConfigError) as caught:
        asyncio.run(evolve(workflow, [{"topic": "a"}], components={"upper": ["instruction"]},
                           store=store, reflection_model="x"))
    message = caught.value.message
    assert "'upper', which is not an LlmAgent node of graph 'pipeline'" in message
    assert "['draft', 'left', 'right']" in message
    assert seen == [] and store.list_runs() == []


def test_evolve_workflow_refuses_it_too(store, calls):
    seen, workflow = calls
    with pytest.raises(ConfigError, match="graph Workflow.*evolve\\(workflow, trainset.*"
                       "'draft', 'left', 'right'") as caught:
        asyncio.run(evolve_workflow(workflow, [{"topic": "a"}], store=store))
    assert caught.value.where == "workflow"
    assert seen == [] and store.list_runs() == []


def test_a_reference_to_a_graph_workflow_loads_it_as_it_is(calls, monkeypatch):
    """A project's ``agent.ref`` may name a graph: its nodes evolve with the graph kept
    (tests/projects/test_graph_projects.py)."""
    module = types.ModuleType("graph_agents_for_test")
    module.root_agent = calls[1]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert load_agent("graph_agents_for_test:root_agent") is calls[1]


@pytest.mark.slow
def test_checking_an_llm_agent_does_not_load_the_graph_machinery():
    """Loading ADK's graph ``Workflow`` costs ~0.2 s of CPU: checking an LlmAgent in a fresh
    process must not pay it to learn that its agent is not one."""
    import subprocess

    code = ("import sys; from google.adk.agents import LlmAgent; "
            "from studio.engine.hosting.api import check_agent; "
            "from studio.runtime.graphs import GRAPH_WORKFLOW_MODULE; "
            "check_agent(LlmAgent(name='w', model='scripted/demo'), ['instruction']); "
            "print(GRAPH_WORKFLOW_MODULE in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr[-500:]
