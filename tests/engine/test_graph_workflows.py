"""ADK 2 graph ``Workflow``s evolved with the graph kept: a candidate is a new graph with the same
edges and routes and the chosen node's agent swapped, run by ADK's real runner with the scripted
model; reflection describes the node by its neighbours; what cannot be evolved is refused before
any model call."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.workflow import FunctionNode, JoinNode, Workflow

from studio.critics.adapters import build_critic
from studio.engine.hosting.api import evolve
from studio.engine.run.agent_texts import apply_components
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.model.graph import NodeKind, node_role
from studio.runtime.graphs import edge_list, graph_agents, graph_shape
from studio.runtime.providers import litellm_model
from studio.runtime.providers.scripted import recorded_requests, request_mark

BETTER = "List the pros in detail."


def node_model(request):
    """Each node says what its instruction asks, over what it received."""
    detail = " in detail" if "in detail" in request.system else ""
    return f"<{request.system.splitlines()[0][:40]}{detail}> {request.last_user[:200]}"


def decision_graph(model: str) -> Workflow:
    """A chain with a fan-out and a join: plan -> (pros, cons) -> join -> final."""
    def agent(name: str, instruction: str) -> LlmAgent:
        return LlmAgent(name=name, model=litellm_model(model), instruction=instruction)
    plan, pros, cons = agent("plan", "Plan it."), agent("pros", "List pros."), \
        agent("cons", "List cons.")
    return Workflow(name="decide", edges=[
        ("START", plan, (pros, cons), JoinNode(name="join"), agent("final", "Decide."))])


def instructions(workflow: Workflow) -> dict[str, str]:
    return {name: node.instruction for name, node in graph_agents(workflow).items()}


def test_a_chain_with_a_fan_out_evolves_the_chosen_node_only_with_the_edges_kept(script, store):
    model = script(node_model)
    reflection = script(lambda request: BETTER)
    workflow = decision_graph(model)
    before, edges = instructions(workflow), edge_list(workflow)
    critic = build_critic({"evaluator": "contains", "params": {"substring": "in detail"}})
    result = evolve_sync_graph(workflow, critic, reflection, store)
    assert result.status == "completed"
    assert result.evolved_components == {"pros.instruction": BETTER}
    assert instructions(workflow) == before and edge_list(workflow) == edges  # never mutated
    best = apply_components(workflow, result.evolved_components)
    assert instructions(best) == {**before, "pros": BETTER}
    assert edge_list(best) == edges
    prompts = [r.prompt_text for r in recorded_requests(reflection.split("/", 1)[1])]
    assert prompts and all("node 'pros' of graph 'decide': receives from plan; feeds join"
                           in prompt for prompt in prompts)
    [trial, *_] = store.trials(result.run_id)
    assert {e["author"] for e in trial.trace["events"]} == {"plan", "pros", "cons", "final"}


def evolve_sync_graph(workflow, critic, reflection, store):
    import asyncio

    return asyncio.run(evolve(
        workflow, [{"topic": "a bike"}, {"topic": "a car"}], critic=critic,
        components={"pros": ["instruction"]}, reflection_model=reflection, store=store,
        config=EvolutionConfig(max_iterations=1, minibatch_size=2, review="auto")))


def route(node_input: str) -> str:
    return "long" if len(str(node_input)) > 10 else "short"


def test_routes_functions_and_nested_workflows_survive_a_rebuild(script):
    model = script(node_model)

    def agent(name: str) -> LlmAgent:
        return LlmAgent(name=name, model=litellm_model(model), instruction=f"Be {name}.")
    inner = Workflow(name="inner", edges=[("START", agent("draft"), agent("edit"))])
    router = FunctionNode(func=route, name="router")
    workflow = Workflow(name="outer", edges=[
        ("START", agent("intake"), router, {"long": inner, "short": agent("brief")})])
    edges = edge_list(workflow)
    assert ("router", "inner", "long") in edges and ("draft", "edit", None) in edges
    rebuilt = apply_components(workflow, {"edit.instruction": "Edit harder."})
    assert edge_list(rebuilt) == edges
    assert instructions(rebuilt) == {**instructions(workflow), "edit": "Edit harder."}
    shape = graph_shape(workflow)
    assert shape.node("router").kind is NodeKind.FUNCTION
    assert shape.node("inner").kind is NodeKind.WORKFLOW
    assert node_role(shape, "brief") == ("node 'brief' of graph 'outer': receives from router "
                                         "(a function) when routed 'short'; its output ends "
                                         "the graph")


def refused_graphs(model: str) -> list[tuple[object, dict, str]]:
    def agent(name: str, **extra) -> LlmAgent:
        return LlmAgent(name=name, model=litellm_model(model), instruction="Do it.", **extra)
    twin = Workflow(name="nested", edges=[("START", agent("same"))])
    return [
        (Workflow(name="w", edges=[("START", agent("fan", parallel_worker=True))]), {},
         "runs LlmAgent 'fan' as a parallel worker"),
        (Workflow(name="w", edges=[("START", SequentialAgent(name="seq", sub_agents=[
            agent("inside")]))]), {}, "node 'seq' of graph 'w' is a SequentialAgent holding "
                                      "LlmAgents ['inside']"),
        (Workflow(name="w", edges=[("START", agent("same"), twin)]), {},
         "two LlmAgent nodes are named 'same'"),
        (Workflow(name="w", edges=[("START", FunctionNode(func=route, name="only"))]), {},
         "has no LlmAgent node"),
        (Workflow(name="w", edges=[("START", agent("a"), FunctionNode(func=route, name="f"))]),
         {"f": ["instruction"]}, "components name node 'f', which is not an LlmAgent node"),
        (Workflow(name="w", edges=[("START", agent("a"))]), {"a": ["output_schema"]},
         "node 'a' has no output_schema"),
        (Workflow(name="empty"), {}, "has no edges"),
    ]


def test_evolve_refuses_what_it_cannot_evolve_before_any_model_call(script, store):
    model = script(node_model)
    for workflow, components, refusal in refused_graphs(model):
        mark = request_mark()
        with pytest.raises(ConfigError, match=refusal.replace("[", r"\[").replace("]", r"\]")):
            evolve_sync_refused(workflow, components or ("instruction",), store)
        assert recorded_requests(since=mark) == [], refusal
    assert store.list_runs() == []


def evolve_sync_refused(workflow, components, store):
    import asyncio

    asyncio.run(evolve(workflow, [{"topic": "x"}], critic=build_critic(
        {"evaluator": "contains", "params": {"substring": "x"}}), components=components,
        store=store, reflection_model="scripted/echo"))


def test_a_node_is_told_what_its_upstream_agents_sent_not_its_siblings(script):
    from studio.engine.propose.proposer import PipelineView
    from studio.model.graph import upstream_agents

    shape = graph_shape(decision_graph(script(node_model)))
    assert upstream_agents(shape, "pros") == ("plan",)
    assert set(upstream_agents(shape, "final")) == {"pros", "cons"}  # through the join
    view = PipelineView(agent="cons", role=node_role(shape, "cons"), primary="final",
                        sources=upstream_agents(shape, "cons"))
    trace = {"events": [{"author": a, "type": "text", "text": f"{a} says"}
                        for a in ("plan", "pros", "cons", "final")]}
    step = view.step_of(trace)
    assert step["received_from_earlier_agents"] == [{"from": "plan", "text": "plan says"}]
    assert step["this_agent_produced"] == ["cons says"]
