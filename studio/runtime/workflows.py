"""Real ADK workflow agents (``SequentialAgent``, ``LoopAgent``, ``ParallelAgent``) from a
:class:`WorkflowSpec`, and the spec of a live ADK tree, so both paths share one description."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from studio.model.errors import ConfigError
from studio.model.records import AgentSpec
from studio.model.workflow import (
    MAX_WORKFLOW_DEPTH,
    WorkflowKind,
    WorkflowSpec,
    check_workflow,
    last_agent,
    state_before,
)
from studio.runtime.agents import build_agent
from studio.runtime.graphs import is_graph_workflow

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent

WORKFLOW_CLASSES = {
    WorkflowKind.SEQUENTIAL: ("google.adk.agents.sequential_agent", "SequentialAgent"),
    WorkflowKind.LOOP: ("google.adk.agents.loop_agent", "LoopAgent"),
    WorkflowKind.PARALLEL: ("google.adk.agents.parallel_agent", "ParallelAgent"),
}
"""Where ADK defines each workflow agent class (``google.adk.agents`` imports them lazily)."""


def workflow_classes() -> dict[WorkflowKind, type]:
    from google.adk.agents import LoopAgent, ParallelAgent, SequentialAgent

    return {WorkflowKind.SEQUENTIAL: SequentialAgent, WorkflowKind.LOOP: LoopAgent,
            WorkflowKind.PARALLEL: ParallelAgent}


def loaded_workflow_classes() -> tuple[type, ...]:
    """The workflow agent classes already imported in this process. An agent of a class never
    imported cannot be an instance of it (a subclass imports its base's module), so
    :func:`is_workflow` need not import ADK's three workflow modules to answer no for an
    ``LlmAgent``: ~7 ms of CPU on every process's first ``evolve()``."""
    found = (getattr(sys.modules.get(module), name, None)
             for module, name in WORKFLOW_CLASSES.values())
    return tuple(cls for cls in found if isinstance(cls, type))


def build_workflow(agents: list[AgentSpec], workflow: WorkflowSpec) -> BaseAgent:
    """The ADK workflow agent for ``workflow``, its steps built from ``agents`` by name."""
    check_workflow(workflow, [a.name for a in agents])
    by_name = {agent.name: agent for agent in agents}
    return _build(workflow, by_name)


def _build(node: str | WorkflowSpec, agents: dict[str, AgentSpec]) -> BaseAgent:
    if isinstance(node, str):
        spec = agents[node]
        return build_agent(spec, output_key=spec.output_key, where=f"agents.{spec.name}")
    cls = workflow_classes()[node.type]
    extra = {"max_iterations": node.max_iterations} if node.type is WorkflowKind.LOOP else {}
    return cls(name=node.name, sub_agents=[_build(step, agents) for step in node.steps], **extra)


def is_workflow(agent: object) -> bool:
    """Whether ``agent`` is a ``SequentialAgent``, ``LoopAgent`` or ``ParallelAgent`` (or a
    subclass), importing none of them (:func:`loaded_workflow_classes`)."""
    classes = loaded_workflow_classes()
    return bool(classes) and isinstance(agent, classes)


def refuse_graph_workflow(obj: Any, where: str = "agent") -> None:
    """Refuse an ADK 2 graph ``Workflow`` (``google.adk.workflow.Workflow``) up front where a
    tree of agents is expected (``evolve_workflow()``), naming its ``LlmAgent`` nodes: patching
    a graph as a tree would run a whole evolution that changes nothing. ``evolve()`` and a
    project's ``agent.ref`` evolve a graph itself (:func:`studio.engine.hosting.api.evolve_graph`).

    Raises:
        ConfigError: ``obj`` is a graph ``Workflow``; the message says what to evolve instead.
    """
    if not is_graph_workflow(obj):
        return
    nodes = graph_llm_agents(obj)
    shown = ", ".join(repr(name) for name in nodes) or "none"
    raise ConfigError(
        f"{obj.name!r} is an ADK 2 graph Workflow (google.adk.workflow.Workflow), which is "
        f"not a tree of agents; evolve it from Python with evolve(workflow, trainset, "
        f"components={{node: ['instruction']}}) or a project's agent.ref, which keep the "
        f"graph's edges and routes. Its LlmAgent nodes: {shown}",
        where=where, value=type(obj).__name__)


def graph_llm_agents(workflow: object) -> list[str]:
    """The names of a graph ``Workflow``'s ``LlmAgent`` nodes, nested workflows included."""
    from google.adk.agents import LlmAgent

    names: list[str] = []
    graph = getattr(workflow, "graph", None)
    for node in graph.nodes if graph is not None else []:
        if isinstance(node, LlmAgent):
            names.append(node.name)
        elif getattr(node, "graph", None) is not None:
            names += graph_llm_agents(node)
    return names


def describe_workflow(root: object, *, max_depth: int = MAX_WORKFLOW_DEPTH,
                      where: str = "workflow") -> tuple[WorkflowSpec, dict[str, Any]]:
    """The spec of a live ADK workflow and its ``LlmAgent``s by name.

    Raises:
        ConfigError: a step is neither an ``LlmAgent`` nor a workflow agent, two agents share a
            name, or the tree nests deeper than ``max_depth``.
    """
    agents: dict[str, Any] = {}
    spec = _describe(root, agents, 1, max_depth, where)
    return spec, agents


def _describe(node: Any, agents: dict[str, Any], depth: int, max_depth: int,
              where: str) -> WorkflowSpec:
    from google.adk.agents import LlmAgent

    if depth > max_depth:
        raise ConfigError(f"the workflow nests deeper than max_depth={max_depth}", where=where,
                          value=node.name)
    kind = next((k for k, cls in workflow_classes().items() if isinstance(node, cls)), None)
    if kind is None:
        raise ConfigError(f"{node.name!r} is a {type(node).__name__}; a workflow is made of "
                          "SequentialAgent, LoopAgent, ParallelAgent and LlmAgent",
                          where=where, value=node.name)
    if not node.sub_agents:  # else WorkflowSpec's pydantic "at least 1 item" leaks out
        raise ConfigError(f"{type(node).__name__} {node.name!r} has no sub_agents: a workflow "
                          "needs at least one agent to run and evolve; add its agents with "
                          "sub_agents=[...]", where=where, value=node.name)
    steps: list[str | WorkflowSpec] = []
    for child in node.sub_agents:
        if isinstance(child, LlmAgent):
            if child.name in agents:
                raise ConfigError(f"two agents are named {child.name!r}; names must be unique "
                                  "to evolve them", where=where, value=child.name)
            agents[child.name] = child
            steps.append(child.name)
        else:
            steps.append(_describe(child, agents, depth + 1, max_depth, where))
    extra = {"max_iterations": node.max_iterations or 1} if kind is WorkflowKind.LOOP else {}
    return WorkflowSpec(type=kind, name=node.name, steps=steps, **extra)


def state_keys(root: object) -> dict[str, set[str]]:
    """Per agent of a live workflow, the state keys earlier agents have written when it starts
    (from each agent's ``output_key``)."""
    workflow, agents = describe_workflow(root)
    return state_before(workflow, {name: getattr(a, "output_key", None)
                                   for name, a in agents.items()})


def primary_for(root: Any, primary: str | None = None) -> str | None:
    """Whose reply a run scores: None for a single agent (its own reply), else ``primary``
    checked against the workflow's agents, or by default the workflow's last agent."""
    if not is_workflow(root):
        return None
    workflow, agents = describe_workflow(root)
    if primary is None:
        return last_agent(workflow)
    if primary not in agents:
        raise ConfigError(f"primary {primary!r} is not an agent of workflow {root.name!r} "
                          f"({sorted(agents)})", where="primary", value=primary)
    return primary
