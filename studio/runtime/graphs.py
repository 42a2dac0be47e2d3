"""ADK 2 graph ``Workflow``s (``google.adk.workflow.Workflow``): their ``LlmAgent`` nodes found
by name, their shape (:class:`~studio.model.graph.GraphShape`), and a candidate built as a new
graph with the same edges and routes, one node's agent swapped.

A graph is evolvable when each of its ``LlmAgent`` nodes (nested workflows' included) has a
unique name and stands in the graph as itself. Refused up front, naming the node: an
``LlmAgent`` run as a parallel worker (``parallel_worker=True``: ADK wraps it, and the wrapper
keeps its own copy), an agent of another kind holding ``LlmAgent``s (a ``SequentialAgent`` as a
node), two ``LlmAgent``s sharing a name, a graph without edges or without any ``LlmAgent``, and
nesting deeper than ``max_depth``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard

from studio.model.errors import ConfigError
from studio.model.graph import START_NODE, GraphEdge, GraphNode, GraphShape, NodeKind
from studio.model.workflow import MAX_WORKFLOW_DEPTH

if TYPE_CHECKING:
    from google.adk.workflow import Workflow

GRAPH_WORKFLOW_MODULE = "google.adk.workflow._workflow"
"""Where ADK defines the graph ``Workflow`` class (``google.adk.workflow`` loads it lazily)."""


def is_graph_workflow(obj: object) -> TypeGuard[Workflow]:
    """True when ``obj`` is an ADK 2 graph ``Workflow``, without importing one: an object can
    only be an instance of the class once its module is loaded, and loading it (the graph
    machinery, ~0.2 s of CPU) is not needed to check an agent (``check_agent``, ``load_agent``).
    ADK 2.13's ``Runner`` loads it at its first run anyway, so a run itself saves nothing here.
    An ADK without graph workflows never loads the module."""
    module = sys.modules.get(GRAPH_WORKFLOW_MODULE)
    workflow = getattr(module, "Workflow", None)
    return isinstance(workflow, type) and isinstance(obj, workflow)


def graph_agents(workflow: Any, *, max_depth: int = MAX_WORKFLOW_DEPTH,
                 where: str = "agent") -> dict[str, Any]:
    """The graph's ``LlmAgent`` nodes by name, nested workflows' included.

    Raises:
        ConfigError: the graph cannot be evolved (see the module docstring), naming the node.
    """
    agents: dict[str, Any] = {}
    _collect(workflow, agents, 1, max_depth, where)
    if not agents:
        raise ConfigError(f"graph workflow {workflow.name!r} has no LlmAgent node: there is "
                          "no instruction to evolve", where=where, value=workflow.name)
    return agents


def _collect(workflow: Any, agents: dict[str, Any], depth: int, max_depth: int,
             where: str) -> None:
    from google.adk.agents import LlmAgent

    if depth > max_depth:
        raise ConfigError(f"graph workflow {workflow.name!r} nests deeper than max_depth="
                          f"{max_depth}", where=where, value=workflow.name)
    if workflow.graph is None:
        raise ConfigError(f"graph workflow {workflow.name!r} has no edges: give it edges=[...] "
                          "(e.g. ('START', agent)) so it runs", where=where, value=workflow.name)
    for node in workflow.graph.nodes:
        if isinstance(node, LlmAgent):
            if node.name in agents:
                raise ConfigError(f"two LlmAgent nodes are named {node.name!r}; names must be "
                                  "unique to evolve them", where=where, value=node.name)
            agents[node.name] = node
        elif is_graph_workflow(node):
            _collect(node, agents, depth + 1, max_depth, where)
        else:
            _refuse_hidden_agents(node, workflow.name, where)


def _refuse_hidden_agents(node: Any, parent: str, where: str) -> None:
    """A node that holds ``LlmAgent``s the studio cannot swap in a rebuilt graph."""
    from google.adk.agents import LlmAgent

    wrapped = getattr(node, "_node", None)
    if isinstance(wrapped, LlmAgent):
        raise ConfigError(
            f"node {node.name!r} of graph {parent!r} runs LlmAgent {wrapped.name!r} as a "
            "parallel worker (parallel_worker=True), which the studio cannot evolve yet: ADK "
            "wraps it in its own copy. Evolve it without parallel_worker, or leave it as is "
            "and evolve the graph's other nodes with it outside", where=where, value=node.name)
    held = [a.name for a in getattr(node, "sub_agents", None) or [] if isinstance(a, LlmAgent)]
    if held:
        raise ConfigError(
            f"node {node.name!r} of graph {parent!r} is a {type(node).__name__} holding "
            f"LlmAgents {held}; the studio evolves a graph's LlmAgent nodes, so make them nodes "
            "of the graph (or a nested Workflow), or evolve that agent with evolve_workflow()",
            where=where, value=node.name)


def graph_agent(workflow: Any, name: str) -> Any:
    """The ``LlmAgent`` node called ``name``.

    Raises:
        ConfigError: no such node (naming the graph's ``LlmAgent`` nodes).
    """
    agents = graph_agents(workflow)
    if name not in agents:
        raise ConfigError(f"graph workflow {workflow.name!r} has no LlmAgent node named "
                          f"{name!r} (its LlmAgent nodes: {sorted(agents)})", where="components",
                          value=name)
    return agents[name]


def rebuild_graph(workflow: Any, replace: Callable[[Any], Any | None]) -> Any:
    """A new ``Workflow`` of the same class and settings with the same edges and routes, each
    ``LlmAgent`` node for which ``replace(node)`` answers an agent swapped for it (nested
    workflows rebuilt the same way). ``workflow`` is never changed."""
    from google.adk.agents import LlmAgent
    from google.adk.workflow import Edge

    swapped: dict[int, Any] = {}

    def swap(node: object) -> Any:
        if id(node) not in swapped:
            new = replace(node) if isinstance(node, LlmAgent) else None
            if new is None and is_graph_workflow(node):
                new = rebuild_graph(node, replace)
            swapped[id(node)] = node if new is None else new
        return swapped[id(node)]

    edges = [Edge(from_node=swap(e.from_node), to_node=swap(e.to_node), route=e.route)
             for e in workflow.graph.edges]
    settings = {name: getattr(workflow, name) for name in workflow.model_fields_set
                if name not in ("edges", "graph", "parent_agent")}
    return type(workflow)(**settings, edges=edges)


def graph_shape(workflow: Any) -> GraphShape:
    """The nodes and edges of ``workflow`` (nested workflows' too, each under its name)."""
    shape = GraphShape(name=workflow.name)
    _add_shape(workflow, shape)
    return shape


def _add_shape(workflow: Any, shape: GraphShape) -> None:
    for node in workflow.graph.nodes if workflow.graph is not None else []:
        shape.nodes.append(GraphNode(name=node.name, kind=node_kind(node),
                                     parent=workflow.name))
        if is_graph_workflow(node):
            _add_shape(node, shape)
    shape.edges += [GraphEdge(source=e.from_node.name, target=e.to_node.name,
                              route=_route_text(e.route), parent=workflow.name)
                    for e in workflow.graph.edges] if workflow.graph is not None else []


def node_kind(node: Any) -> NodeKind:
    from google.adk.agents import LlmAgent
    from google.adk.workflow import FunctionNode, JoinNode

    if node.name == START_NODE:
        return NodeKind.START
    if isinstance(node, LlmAgent):
        return NodeKind.LLM_AGENT
    if isinstance(node, FunctionNode):
        return NodeKind.FUNCTION
    if isinstance(node, JoinNode):
        return NodeKind.JOIN
    return NodeKind.WORKFLOW if is_graph_workflow(node) else NodeKind.OTHER


def _route_text(route: object) -> str | None:
    from google.adk.workflow import DEFAULT_ROUTE

    if route is None:
        return None
    values = route if isinstance(route, list) else [route]
    return " | ".join("DEFAULT" if v == DEFAULT_ROUTE else str(v) for v in values)


def edge_list(workflow: Any) -> list[tuple[str, str, Any]]:
    """``(from, to, route)`` of every edge, nested workflows' after their parent's: what a
    rebuilt candidate must keep."""
    edges = [(e.from_node.name, e.to_node.name, e.route) for e in workflow.graph.edges]
    for node in workflow.graph.nodes:
        if is_graph_workflow(node):
            edges += edge_list(node)
    return edges
