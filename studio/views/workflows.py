"""What the pages show of a multi-agent run: a picture of the workflow (Graphviz DOT) and a
trial's trace as the pipeline's steps, agent by agent.

Everything here is pure: the DOT text is drawn by ``st.graphviz_chart`` and the steps by
``components/trial_detail.py``. Names, models and state keys are typed by people and may be
half-edited, so every label is quoted and escaped (DOT has no HTML inside a quoted string) and
bounded in length; model-written text never goes into the picture.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from studio.model.graph import START_NODE, GraphNode, GraphShape, NodeKind
from studio.model.records import Run, RunSpec
from studio.model.workflow import WorkflowKind, WorkflowSpec, last_agent, role_of, split_component

LABEL_CHARS = 40
"""Longest piece of text in one line of a node's label."""
MAX_NODES = 200
"""A picture with more agents than this is refused (the builder never gets near it)."""


@dataclass(frozen=True)
class AgentBox:
    """What the picture says about one agent."""

    name: str
    model: str = ""
    output_key: str | None = None
    components: tuple[str, ...] = ()


# --------------------------------------------------------------------------- the picture


def workflow_dot(workflow: WorkflowSpec, agents: list[AgentBox], primary: str | None = None
                 ) -> str:
    """DOT for ``workflow``: agents as boxes (the scored one doubled), sequences as arrows
    labelled with the state key handed on, loops with a back edge, parallel branches fanned out
    and joined, nested workflows as clusters."""
    boxes = {a.name: a for a in agents}
    scored = primary or _last_or_none(workflow)
    graph = _Graph(boxes, scored)
    graph.lines += ['digraph workflow {', '  rankdir=LR;',
                    '  node [shape=box, style="rounded,filled", fillcolor="#f5f7fa", '
                    'fontname="Helvetica", fontsize=11];',
                    '  edge [fontname="Helvetica", fontsize=10, color="#607d8b"];',
                    '  input [shape=plaintext, style="", label="input"];',
                    '  critic [shape=plaintext, style="", label="critic"];']
    entries, exits = graph.add(workflow, depth=1)
    for entry in entries:
        graph.edge("input", entry)
    if scored in set(_steps(workflow)):
        graph.edge(graph.node_id(scored), "critic", label="scored", color="#2e7d32")
    else:
        for exit_ in exits:
            graph.edge(exit_, "critic")
    graph.lines.append("}")
    return "\n".join(graph.lines)


def latest_graph_spec(runs: Iterable[Run], project_id: int | None, project_name: str
                      ) -> RunSpec | None:
    """The spec of the newest of ``runs`` (newest first) that ran this project as an ADK 2
    graph ``Workflow``: its stored shape is what the Projects page draws for a project whose
    agent is loaded from Python, so the page never imports the project's code to draw it (the
    trusted side that ran it, ``studio run`` or a served folder, read the graph then)."""
    for run in runs:
        ours = (project_id is not None and run.project_id == project_id) or (
            bool(project_name) and run.spec.project == project_name)
        if ours and run.spec.graph is not None:
            return run.spec
    return None


def graph_dot(shape: GraphShape, components: list[str] | tuple[str, ...] = (),
              primary: str | None = None) -> str:
    """DOT for an ADK 2 graph ``Workflow``: its nodes (LlmAgents as boxes, blue where a
    component evolves, the scored one doubled; functions, joins and the start in their own
    shapes) and its edges labelled with their routes; nested workflows as clusters."""
    if len(shape.nodes) > MAX_NODES:
        raise ValueError(f"the graph has more than {MAX_NODES} nodes to draw")
    evolving = {agent for agent, _ in map(split_component, components) if agent}
    ids = {node.name: f"n{i}" for i, node in enumerate(shape.nodes)}
    lines = ['digraph graph_workflow {', '  rankdir=LR;',
             '  node [fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=10, color="#607d8b"];']
    for parent in dict.fromkeys(n.parent for n in shape.nodes):
        members = [n for n in shape.nodes if n.parent == parent]
        nested = parent != shape.name
        if nested:
            lines.append(f"  subgraph cluster_{ids.get(parent, 'x')} {{ "
                         f'label={quote(_short(parent))}; style="rounded,dashed"; '
                         'color="#90a4ae";')
        lines += [f"    {ids[n.name]} [{_graph_node_attrs(n, evolving, primary)}];"
                  for n in members if n.kind is not NodeKind.WORKFLOW]
        if nested:
            lines.append("  }")
    for edge in shape.edges:
        tail, head = _edge_end(shape, edge.source, ids, last=True), _edge_end(
            shape, edge.target, ids, last=False)
        label = f" [label={quote(_short(edge.route))}]" if edge.route else ""
        lines.append(f"  {tail} -> {head}{label};")
    lines.append("}")
    return "\n".join(lines)


_GRAPH_SHAPES = {NodeKind.START: 'shape=circle, label="start", fontsize=9',
                 NodeKind.FUNCTION: 'shape=cds, style=filled, fillcolor="#fff8e1"',
                 NodeKind.JOIN: 'shape=invtriangle, style=filled, fillcolor="#eceff1"',
                 NodeKind.OTHER: 'shape=box, style="dashed"'}


def _graph_node_attrs(node: GraphNode, evolving: set[str], primary: str | None) -> str:
    if node.kind is not NodeKind.LLM_AGENT:
        shape = _GRAPH_SHAPES.get(node.kind, "shape=box")
        if node.kind is NodeKind.START:
            return shape
        return f"label={quote(_short(node.name))}, {shape}"
    fill = "#e3f2fd" if node.name in evolving else "#f5f7fa"
    attrs = [f"label={quote(_short(node.name))}", "shape=box",
             f'style="rounded,filled", fillcolor="{fill}"']
    if node.name == primary:
        attrs += ["peripheries=2", 'color="#2e7d32"', "penwidth=2"]
    return ", ".join(attrs)


def _edge_end(shape: GraphShape, name: str, ids: dict[str, str], *, last: bool) -> str:
    """A nested workflow's edge lands on its first node (or leaves from its last ones')."""
    node = shape.node(name)
    if node is None or node.kind is not NodeKind.WORKFLOW:
        return ids.get(name, "missing")
    inner = [e for e in shape.edges if e.parent == name]
    if not inner:
        return ids.get(name, "missing")
    if last:
        sources = {e.source for e in inner}
        ends = [e.target for e in inner if e.target not in sources]
        return _edge_end(shape, ends[-1], ids, last=True) if ends else ids[name]
    starts = [e.target for e in inner if e.source == START_NODE]
    return _edge_end(shape, starts[0], ids, last=False) if starts else ids[name]


def _last_or_none(workflow: WorkflowSpec) -> str | None:
    try:
        return last_agent(workflow)
    except (IndexError, AttributeError):
        return None


def _steps(node: str | WorkflowSpec) -> list[str]:
    if isinstance(node, str):
        return [node]
    return [name for step in node.steps for name in _steps(step)]


@dataclass
class _Graph:
    boxes: dict[str, AgentBox]
    scored: str | None
    lines: list[str] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    count: int = 0

    def node_id(self, name: str) -> str:
        if name not in self.ids:
            self.ids[name] = f"n{len(self.ids)}"
        return self.ids[name]

    def edge(self, tail: str, head: str, *, label: str = "", color: str = "",
             style: str = "") -> None:
        attrs = [f"label={quote(label)}"] if label else []
        attrs += [f"color={quote(color)}"] if color else []
        attrs += [f"style={quote(style)}"] if style else []
        self.lines.append(f"  {tail} -> {head}" + (f" [{', '.join(attrs)}]" if attrs else "")
                          + ";")

    def add(self, node: str | WorkflowSpec, depth: int) -> tuple[list[str], list[str]]:
        """Draw ``node``; returns its entry and exit node ids."""
        self.count += 1
        if self.count > MAX_NODES:
            raise ValueError(f"the workflow has more than {MAX_NODES} steps to draw")
        if isinstance(node, str):
            return self._agent(node)
        self.lines.append(f"  subgraph cluster_{self.count} {{")
        self.lines.append(f"    label={quote(_workflow_label(node))}; style=\"rounded,dashed\"; "
                          "color=\"#90a4ae\"; fontname=\"Helvetica\"; fontsize=10;")
        parts = [self.add(step, depth + 1) for step in node.steps]
        self.lines.append("  }")
        if node.type is WorkflowKind.PARALLEL:
            return ([e for entries, _ in parts for e in entries],
                    [x for _, exits in parts for x in exits])
        for (_, exits), (entries, _) in zip(parts, parts[1:], strict=False):
            for tail in exits:
                for head in entries:
                    self.edge(tail, head, label=self._handed_on(tail))
        if node.type is WorkflowKind.LOOP and parts:
            for tail in parts[-1][1]:
                for head in parts[0][0]:
                    self.edge(tail, head, label=f"repeat ×{node.max_iterations}",
                              style="dashed", color="#ef6c00")
        return parts[0][0] if parts else [], parts[-1][1] if parts else []

    def _agent(self, name: str) -> tuple[list[str], list[str]]:
        node = self.node_id(name)
        box = self.boxes.get(name, AgentBox(name))
        lines = [_short(name)] + ([_short(box.model)] if box.model else [])
        if box.output_key:
            lines.append(_short(f"writes {{{box.output_key}}}"))
        if box.components:
            lines.append(_short("evolves: " + ", ".join(box.components)))
        attrs = [f"label={quote(chr(10).join(lines))}"]
        if box.components:
            attrs.append('fillcolor="#e3f2fd"')
        if name == self.scored:
            attrs += ["peripheries=2", 'color="#2e7d32"', "penwidth=2"]
        self.lines.append(f"    {node} [{', '.join(attrs)}];")
        return [node], [node]

    def _handed_on(self, tail: str) -> str:
        name = next((n for n, i in self.ids.items() if i == tail), "")
        key = self.boxes.get(name, AgentBox(name)).output_key
        return _short(f"{{{key}}}") if key else ""


def _workflow_label(node: WorkflowSpec) -> str:
    kind = node.type.value if isinstance(node.type, WorkflowKind) else str(node.type)
    extra = f", ×{node.max_iterations}" if kind == WorkflowKind.LOOP.value else ""
    return _short(f"{node.name} ({kind}{extra})")


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def quote(text: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, newlines as DOT's line breaks, so
    nothing typed can close the string or start an HTML label."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


# --------------------------------------------------------------------------- the trace


@dataclass
class PipelineStep:
    """What one agent did in one turn of the pipeline (consecutive events of one author)."""

    author: str
    texts: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"name", "args", "result"}`` in the order they were made."""
    scored: bool = False
    """This step's last text is the output the critic scored."""

    @property
    def text(self) -> str:
        return "\n\n".join(self.texts)


def scored_author(spec: RunSpec | None) -> str | None:
    """The agent whose reply a group run scores (None for a single agent)."""
    if spec is None or not spec.is_group:
        return None
    if spec.primary:
        return spec.primary
    return last_agent(spec.workflow) if spec.workflow is not None else None


def describe_component(key: str, spec: RunSpec | None = None) -> str:
    """What a component key changes, in words: ``the instruction of agent writer (step 2 of 2
    in sequential 'pipeline' (after outliner); its reply is scored)``; just the name for a
    single agent."""
    agent, component = split_component(key)
    if agent is None:
        return f"the {component}"
    text = f"the {component} of agent {agent}"
    if spec is not None and spec.workflow is not None and agent in spec.workflow.agent_names():
        text += f" ({role_of(spec.workflow, agent)}"
        text += "; its reply is scored)" if agent == scored_author(spec) else ")"
    return text


def pipeline_steps(trace: dict[str, Any] | None, scored: str | None = None) -> list[PipelineStep]:
    """The trace's events grouped into steps by author, in order; tool calls and their results
    stay under the agent that made them. The last step of ``scored`` with text is marked (or
    the last step with text when no agent is named)."""
    steps: list[PipelineStep] = []
    for event in (trace or {}).get("events") or []:
        if not isinstance(event, dict):
            continue
        author = str(event.get("author") or "?")
        if not steps or steps[-1].author != author:
            steps.append(PipelineStep(author))
        _add_event(steps[-1], event)
    with_text = [s for s in steps if s.texts and (scored is None or s.author == scored)]
    if with_text:
        with_text[-1].scored = True
    return steps


def _add_event(step: PipelineStep, event: Mapping[str, object]) -> None:
    kind = event.get("type")
    if kind == "text":
        step.texts.append(str(event.get("text") or ""))
    elif kind == "tool_call":
        step.tool_calls.append({"id": event.get("id"), "name": str(event.get("name")),
                                "args": event.get("args") or {}, "result": None})
    elif kind == "tool_result":
        call = next((c for c in reversed(step.tool_calls) if c["result"] is None and (
            c["id"] == event.get("id") or c["name"] == str(event.get("name")))), None)
        if call is None:
            step.tool_calls.append({"id": event.get("id"), "name": str(event.get("name")),
                                    "args": {}, "result": event.get("result")})
        else:
            call["result"] = event.get("result")


def is_pipeline(steps: list[PipelineStep]) -> bool:
    """More than one agent spoke: worth showing step by step."""
    return len({s.author for s in steps}) > 1
