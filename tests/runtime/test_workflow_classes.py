"""``is_workflow`` answers without importing ADK's workflow agents (their modules cost ~7 ms of
CPU on a process's first ``evolve()``), and still recognises every workflow agent passed in."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent

from studio.model.workflow import WorkflowKind
from studio.runtime.workflows import (
    WORKFLOW_CLASSES,
    describe_workflow,
    is_workflow,
    workflow_classes,
)


class StepsInOrder(SequentialAgent):
    """A user's subclass: still a workflow."""


def _writer(name: str = "writer") -> LlmAgent:
    return LlmAgent(name=name, model="scripted/demo", instruction="Write.")


def test_the_table_names_where_adk_defines_each_workflow_class():
    for kind, cls in workflow_classes().items():
        assert (cls.__module__, cls.__name__) == WORKFLOW_CLASSES[kind]


@pytest.mark.parametrize("make", [
    lambda: SequentialAgent(name="seq", sub_agents=[_writer()]),
    lambda: LoopAgent(name="loop", sub_agents=[_writer()], max_iterations=2),
    lambda: ParallelAgent(name="par", sub_agents=[_writer("a"), _writer("b")]),
    lambda: StepsInOrder(name="mine", sub_agents=[_writer()]),
], ids=["sequential", "loop", "parallel", "subclass"])
def test_every_workflow_agent_is_recognised(make):
    agent = make()
    assert is_workflow(agent)
    shape, agents = describe_workflow(agent)
    assert shape.type in set(WorkflowKind) and agents


def test_an_llm_agent_is_not_a_workflow():
    assert not is_workflow(_writer())
    assert not is_workflow("writer")


@pytest.mark.slow
def test_the_check_imports_no_workflow_module_and_still_sees_a_loop_imported_later():
    """In a fresh interpreter: an ``LlmAgent`` is answered with none of the three modules
    imported; a ``LoopAgent`` made afterwards (its module now imported) is a workflow."""
    script = textwrap.dedent("""
        import sys
        from google.adk.agents import LlmAgent
        from studio.runtime.workflows import WORKFLOW_CLASSES, is_workflow
        modules = [module for module, _ in WORKFLOW_CLASSES.values()]
        before = [m for m in modules if m in sys.modules]
        answer = is_workflow(LlmAgent(name="w", model="scripted/demo", instruction="x"))
        after = [m for m in modules if m in sys.modules]
        from google.adk.agents import LoopAgent
        loop = LoopAgent(name="l", sub_agents=[LlmAgent(name="w", model="scripted/demo")])
        print(before, answer, after, is_workflow(loop))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n")[-2] == "[] False [] True"
