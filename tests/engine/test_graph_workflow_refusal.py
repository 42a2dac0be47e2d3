"""An ADK 2 graph ``Workflow`` is refused before anything runs, naming its LlmAgent nodes and
what to evolve instead (it used to be a run that "completed" having changed nothing)."""

from __future__ import annotations

import asyncio
import sys
import types

import pytest
from google.adk.agents import LlmAgent
from google.adk.workflow import FunctionNode, JoinNode, Workflow

from studio.engine.api import evolve, evolve_workflow
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


def test_evolve_refuses_a_graph_workflow_before_any_model_call_or_run(store, calls):
    seen, workflow = calls
    with pytest.raises(ConfigError) as caught:
        asyncio.run(evolve(workflow, [{"topic": "a"}], store=store, reflection_model="x"))
    message = caught.value.message
    assert "'pipeline' is an ADK 2 graph Workflow" in message
    assert "'draft', 'left', 'right'" in message and "evolve(node)" in message
    assert "evolve_workflow()" in message
    assert seen == [] and store.list_runs() == []


def test_evolve_workflow_refuses_it_too(store, calls):
    seen, workflow = calls
    with pytest.raises(ConfigError, match="graph Workflow.*'draft', 'left', 'right'") as caught:
        asyncio.run(evolve_workflow(workflow, [{"topic": "a"}], store=store))
    assert caught.value.where == "workflow"
    assert seen == [] and store.list_runs() == []


def test_a_reference_to_a_graph_workflow_is_refused_naming_it(calls, monkeypatch):
    module = types.ModuleType("graph_agents_for_test")
    module.root_agent = calls[1]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    with pytest.raises(ConfigError, match="'pipeline' is an ADK 2 graph Workflow") as caught:
        load_agent("graph_agents_for_test:root_agent")
    assert caught.value.where == "agent.ref"


def test_checking_an_llm_agent_does_not_load_the_graph_machinery():
    """Loading ADK's graph ``Workflow`` costs ~0.2 s of CPU: checking an LlmAgent in a fresh
    process must not pay it to learn that its agent is not one."""
    import subprocess

    code = ("import sys; from google.adk.agents import LlmAgent; "
            "from studio.engine.api import check_agent; "
            "from studio.runtime.workflows import GRAPH_WORKFLOW_MODULE; "
            "check_agent(LlmAgent(name='w', model='scripted/demo'), ['instruction']); "
            "print(GRAPH_WORKFLOW_MODULE in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr[-500:]
