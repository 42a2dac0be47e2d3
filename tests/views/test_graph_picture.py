"""The picture of an ADK 2 graph workflow (``studio.views.workflows.graph_dot``); the Run page
that shows it: tests/ui/test_graph_run_page.py."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.workflow import FunctionNode, JoinNode, Workflow

from studio.model.graph import GraphEdge, GraphNode, GraphShape, NodeKind
from studio.runtime.graphs import graph_shape
from studio.runtime.providers import litellm_model
from studio.views.workflows import graph_dot


def pick(node_input: str) -> str:
    return "long" if len(str(node_input)) > 10 else "short"


def routed_graph(model: str) -> Workflow:
    def agent(name: str) -> LlmAgent:
        return LlmAgent(name=name, model=litellm_model(model), instruction=f"Be {name}.")
    inner = Workflow(name="inner", edges=[("START", agent("draft"), agent("edit"))])
    brief = agent("brief")
    return Workflow(name="outer", edges=[
        ("START", agent("intake"), FunctionNode(func=pick, name="router"),
         {"long": inner, "short": (brief, agent("terse"))}),
        (brief, JoinNode(name="join"))])


def test_the_picture_draws_nodes_edges_routes_and_nested_clusters():
    dot = graph_dot(graph_shape(routed_graph("scripted/echo")), ["edit.instruction"], "brief")
    ids = {name: line.split()[0] for line in dot.splitlines()
           for name in ("intake", "router", "draft", "edit", "brief", "terse")
           if f'label="{name}"' in line}
    assert f'{ids["router"]} -> {ids["draft"]} [label="long"]' in dot  # into the nested graph
    assert f'{ids["router"]} -> {ids["brief"]} [label="short"]' in dot
    assert 'subgraph cluster_' in dot and 'label="inner"' in dot
    edit = next(line for line in dot.splitlines() if line.strip().startswith(ids["edit"] + " "))
    brief = next(line for line in dot.splitlines() if line.strip().startswith(ids["brief"] + " "))
    assert "#e3f2fd" in edit and "peripheries=2" in brief and "peripheries=2" not in edit
    assert "shape=cds" in dot and "shape=invtriangle" in dot


def test_a_hostile_name_stays_inside_its_quoted_label():
    shape = GraphShape(name="g", nodes=[
        GraphNode(name='x"];evil[label="<b>', kind=NodeKind.FUNCTION, parent="g")],
        edges=[GraphEdge(source='x"];evil[label="<b>', target="y", route='a"b', parent="g")])
    dot = graph_dot(shape)
    assert 'label="x\\"];evil[label=\\"<b>"' in dot and 'label="a\\"b"' in dot
