"""The shape of an ADK 2 graph ``Workflow`` (``google.adk.workflow.Workflow``) as plain records:
its nodes and edges, for reflection (a node described by its neighbours) and for drawing."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from studio.model.base import ConfigModel

START_NODE = "__START__"
"""ADK's name for the graph's entry (``google.adk.workflow.START``)."""


class NodeKind(StrEnum):
    """What a graph node is, as far as evolving it goes."""

    START = "start"
    LLM_AGENT = "llm_agent"
    """An ``LlmAgent``: its components can evolve."""
    FUNCTION = "function"
    JOIN = "join"
    """A ``JoinNode``: waits for all of its predecessors."""
    WORKFLOW = "workflow"
    """A nested graph ``Workflow``: its nodes are listed with it as their ``parent``."""
    OTHER = "other"
    """Any other node (a tool node, an agent of another kind): run as it is, never changed."""


class GraphNode(ConfigModel):
    name: str
    kind: NodeKind
    parent: str
    """The name of the (nested) workflow whose graph holds this node."""


class GraphEdge(ConfigModel):
    source: str
    target: str
    route: str | None = None
    """The route value(s) the edge follows, as text (``DEFAULT`` for ADK's default route);
    None: always followed."""
    parent: str = ""


class GraphShape(ConfigModel):
    """A graph workflow's nodes and edges, nested workflows' included (each under its name)."""

    name: str
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)

    def node(self, name: str) -> GraphNode | None:
        return next((n for n in self.nodes if n.name == name), None)

    def predecessors(self, name: str) -> list[GraphEdge]:
        return [e for e in self.edges if e.target == name]

    def successors(self, name: str) -> list[GraphEdge]:
        return [e for e in self.edges if e.source == name]

    def llm_agents(self) -> list[str]:
        return [n.name for n in self.nodes if n.kind is NodeKind.LLM_AGENT]


def node_role(shape: GraphShape, name: str) -> str:
    """One line on where node ``name`` sits, for reflection: e.g. ``node 'pros' of graph
    'decide': receives from plan; feeds join (a join: waits for all its inputs)``."""
    node = shape.node(name)
    if node is None:
        return "the agent being evolved"
    where = f"node {name!r} of graph {node.parent!r}"
    before = [_neighbour(shape, e.source, e.route) for e in shape.predecessors(name)]
    after = [_neighbour(shape, e.target, e.route) for e in shape.successors(name)]
    parts = [f"receives from {', '.join(before)}" if before else "",
             f"feeds {', '.join(after)}" if after else "its output ends the graph"]
    if len(after) > 1:
        parts.append(f"fans out to {len(after)} nodes")
    return where + ": " + "; ".join(p for p in parts if p)


def upstream_agents(shape: GraphShape, name: str) -> tuple[str, ...]:
    """The ``LlmAgent`` nodes whose replies reach node ``name``: its predecessors, looking
    through joins, functions and nested workflows to the agents behind them."""
    found: list[str] = []
    seen: set[str] = set()
    pending = [e.source for e in shape.predecessors(name)]
    while pending:
        source = pending.pop(0)
        if source in seen:
            continue
        seen.add(source)
        node = shape.node(source)
        if node is not None and node.kind is NodeKind.LLM_AGENT:
            found.append(source)
        else:
            inner = [e.target for e in shape.edges if e.parent == source]
            pending += [n for n in inner if not shape.successors(n)] or \
                [e.source for e in shape.predecessors(source)]
    return tuple(found)


def _neighbour(shape: GraphShape, name: str, route: str | None) -> str:
    node = shape.node(name)
    label = "the user's input" if name == START_NODE else name
    if node is not None and node.kind is NodeKind.JOIN:
        label += " (a join: waits for all its inputs)"
    elif node is not None and node.kind is NodeKind.FUNCTION:
        label += " (a function)"
    return label + (f" when routed {route!r}" if route else "")
