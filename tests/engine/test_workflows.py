"""Multi-agent runs on real ADK workflow agents (SequentialAgent, LoopAgent, ParallelAgent,
nested), scripted models behind LiteLLM: the right agent's text changes, the structure runs as
built, and every agent's proposal is checked against what it can read."""

from __future__ import annotations

import asyncio
import time

import pytest

import studio.runtime.providers.demo as demo
from studio.engine import EvolutionConfig, evolve, evolve_group, evolve_workflow, load_result
from studio.engine.run.agent_texts import apply_components, extract_components, validate_proposal
from studio.model.errors import ConfigError, ProposalError
from studio.model.records import AgentSpec, TrialPhase
from studio.model.workflow import WorkflowSpec, role_of, state_before
from studio.runtime.agents import build_agent
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers.scripted import recorded_requests
from studio.runtime.workflows import build_workflow, describe_workflow
from tests.helpers import PIPELINE_INSTRUCTIONS, critic, pipeline_agents, pipeline_spec

TOPICS = [{"topic": t} for t in ("autumn leaves", "city rain", "old bridge", "snow owl")]


@pytest.mark.slow
def test_evolving_a_pipeline_changes_the_writer_and_only_the_writer(runner, store):
    run_id, reason = runner.run(pipeline_spec(), TOPICS, max_iterations=6)
    result = load_result(store, run_id)
    assert reason == "max_iterations"
    assert result.original_score == 0.0 and result.final_score > 0.5
    best = result.evolved_components
    assert set(best) == {"outliner.instruction", "writer.instruction", "polisher.instruction"}
    assert best["outliner.instruction"] == PIPELINE_INSTRUCTIONS["outliner"]
    assert best["polisher.instruction"] == PIPELINE_INSTRUCTIONS["polisher"]
    assert best["writer.instruction"].startswith(PIPELINE_INSTRUCTIONS["writer"])
    assert "Rule:" in best["writer.instruction"]
    # round robin over (agent, component) pairs, in the workflow's order
    assert [h["component"] for h in result.iteration_history] == [
        "outliner.instruction", "writer.instruction", "polisher.instruction"] * 2
    accepted = {h["component"] for h in result.iteration_history if h["accepted"]}
    assert accepted == {"writer.instruction"}
    assert result.to_dict()["evolved_components"] == best


def test_the_trial_output_is_the_primary_agents_and_the_trace_shows_each_step(runner, store):
    run_id, _ = runner.run(pipeline_spec(primary="writer"), TOPICS[:2], max_iterations=0)
    trial = store.trials(run_id, phase=TrialPhase.VALSET)[0]
    authors = [e["author"] for e in trial.trace["events"] if e["type"] == "text"]
    assert authors == ["outliner", "writer", "polisher"]
    writer_text = [e["text"] for e in trial.trace["events"] if e["author"] == "writer"][-1]
    assert trial.output == writer_text


def test_reflection_on_an_agent_sees_its_role_input_and_output(runner, store, script):
    # a model of its own: the shared "pipeline" script's history holds other tests' prompts
    model = script("pipeline_roles", demo.pipeline_reply)
    runner.run(pipeline_spec(model), TOPICS[:3], max_iterations=2)
    prompts = [r.prompt_text for r in recorded_requests("pipeline_roles")
               if "## Component Text to Improve" in r.prompt_text]
    writer_prompt = next(p for p in prompts if "Write a haiku from this outline" in
                         p.split("## Trials")[0])
    assert "step 2 of 3 in sequential 'pipeline' (after outliner; before polisher)" in \
        writer_prompt
    assert "received_from_earlier_agents" in writer_prompt and "Outline for" in writer_prompt
    assert "scored_output_is_from" in writer_prompt


def test_a_loop_keeps_its_iterations_and_the_original_tree_is_untouched():
    agents = pipeline_agents()
    loop = WorkflowSpec(type="loop", name="drafts", steps=["writer", "polisher"],
                        max_iterations=3)
    root = build_workflow(agents, WorkflowSpec(name="pipeline", steps=["outliner", loop]))
    copy = apply_components(root, {"writer.instruction": "Write three lines. {outline}"})
    result = asyncio.run(AgentExecutor().execute(copy, "topic: city rain",
                                                  state={"topic": "city rain"},
                                                  output_author="polisher"))
    authors = [e["author"] for e in result.trace["events"] if e["type"] == "text"]
    assert authors == ["outliner"] + ["writer", "polisher"] * 3
    assert root.find_agent("writer").instruction == PIPELINE_INSTRUCTIONS["writer"]
    assert copy.find_agent("writer").parent_agent is copy.find_agent("drafts")
    assert root.find_agent("writer").parent_agent is root.find_agent("drafts")
    shape, _ = describe_workflow(copy)
    assert shape.steps[1].max_iterations == 3


@pytest.mark.slow
def test_parallel_branches_overlap_in_time(script):
    latency_s = 2.0
    starts: dict[str, float] = {}

    def reply(request):
        name = "a" if "Branch A" in request.system else "b"
        starts[name] = time.monotonic()
        return f"branch {name} done"

    model = script("branches", reply, latency_s=latency_s)
    agents = [AgentSpec(name="a", model=model, instruction="Branch A."),
              AgentSpec(name="b", model=model, instruction="Branch B.")]
    root = build_workflow(agents, WorkflowSpec(type="parallel", name="fan", steps=["a", "b"]))
    result = asyncio.run(AgentExecutor().execute(root, "go", output_author="b"))
    assert result.ok and result.output == "branch b done"
    # sequential branches would start at least one latency apart
    assert abs(starts["a"] - starts["b"]) < latency_s


def test_a_nested_workflow_evolves_end_to_end(store):
    agents = {a.name: build_agent(a, output_key=a.output_key) for a in pipeline_agents()}
    from google.adk.agents import LoopAgent, SequentialAgent

    inner = LoopAgent(name="drafting", sub_agents=[agents["writer"]], max_iterations=2)
    root = SequentialAgent(name="pipeline",
                           sub_agents=[agents["outliner"], inner, agents["polisher"]])
    result = asyncio.run(evolve_workflow(
        root, TOPICS[:3], critic=critic("scripted/pipeline"),
        components={"writer": ["instruction"], "outliner": [], "polisher": []},
        config=EvolutionConfig(max_iterations=2), store=store))
    assert set(result.evolved_components) == {"writer.instruction"}
    assert result.final_score > result.original_score
    assert root.find_agent("writer").instruction == PIPELINE_INSTRUCTIONS["writer"]
    run = store.get_run(result.run_id)
    assert run.spec.workflow.steps[1].type == "loop" and run.spec.primary == "polisher"


def test_evolve_group_and_evolve_with_a_workflow(store):
    agents = [build_agent(a, output_key=a.output_key) for a in pipeline_agents()]
    result = asyncio.run(evolve_group({a.name: a for a in agents}, "polisher", TOPICS[:3],
                                      critic=critic("scripted/pipeline"),
                                      components={"writer": ["instruction"]},
                                      config=EvolutionConfig(max_iterations=1), store=store))
    assert list(result.evolved_components) == ["writer.instruction"]
    assert all(a.parent_agent is None for a in agents)  # the caller's agents stay theirs
    from google.adk.agents import SequentialAgent

    flow = SequentialAgent(name="flow", sub_agents=agents)
    again = asyncio.run(evolve(flow, TOPICS[:3], critic=critic("scripted/pipeline"),
                               config=EvolutionConfig(max_iterations=1), store=store))
    assert set(again.evolved_components) == {f"{n}.instruction" for n in PIPELINE_INSTRUCTIONS}
    # gepa-adk's default: without components, only the first agent's instruction evolves
    first = asyncio.run(evolve_workflow(flow, TOPICS[:3], critic=critic("scripted/pipeline"),
                                        config=EvolutionConfig(max_iterations=0), store=store))
    assert list(first.evolved_components) == ["outliner.instruction"]


def test_a_group_without_a_shared_session_runs_each_agent_alone(store):
    alone = [build_agent(AgentSpec(name=n, model="scripted/pipeline", instruction=text))
             for n, text in (("outliner", "Outline the topic."),
                             ("writer", "Write a haiku about the topic."))]
    result = asyncio.run(evolve_group(alone, "writer", TOPICS[:2], share_session=False,
                                      critic=critic("scripted/pipeline"),
                                      config=EvolutionConfig(max_iterations=0), store=store))
    trial = store.trials(result.run_id)[0]
    writer_events = [e for e in trial.trace["events"] if e["author"] == "writer"]
    assert writer_events and "Outline for" not in trial.output
    assert store.get_run(result.run_id).spec.workflow.type == "parallel"


def test_group_arguments_are_checked(store):
    agents = [build_agent(a, output_key=a.output_key) for a in pipeline_agents()]
    with pytest.raises(ConfigError, match="not an agent of workflow"):
        asyncio.run(evolve_group(agents, "editor", TOPICS, store=store))
    with pytest.raises(ConfigError, match="'critic2'.*not in the workflow"):
        asyncio.run(evolve_group(agents, "polisher", TOPICS, components={"critic2": ["x"]},
                                 store=store))
    with pytest.raises(ConfigError, match="leaves every agent out"):
        asyncio.run(evolve_group(agents, "polisher", TOPICS, components={"writer": []},
                                 store=store))
    with pytest.raises(ConfigError, match="keys must be the agents' names"):
        asyncio.run(evolve_group({"w": agents[1]}, "writer", TOPICS, store=store))
    with pytest.raises(ConfigError, match=r"\{outline\}"):  # alone, the writer cannot read it
        asyncio.run(evolve_group(agents, "polisher", TOPICS, share_session=False, store=store))
    deep = pipeline_agents()
    nest = WorkflowSpec(name="l1", steps=[WorkflowSpec(name="l2", steps=[WorkflowSpec(
        name="l3", steps=["writer"])])])
    root = build_workflow([deep[1]], WorkflowSpec(name="top", steps=[nest]))
    with pytest.raises(ConfigError, match="max_depth=3"):
        asyncio.run(evolve_workflow(root, TOPICS, store=store, max_depth=3))


def test_the_state_guard_knows_which_agent_reads_what():
    agents = pipeline_agents()
    shape = WorkflowSpec(name="pipeline", steps=["outliner", WorkflowSpec(
        type="parallel", name="fan", steps=["writer", "polisher"])])
    readable = state_before(shape, {a.name: a.output_key for a in agents})
    assert readable == {"outliner": set(), "writer": {"outline"}, "polisher": {"outline"}}
    keys = {"topic"} | readable["writer"]
    assert validate_proposal("writer.instruction", "Use {outline} and {topic}.", "x", keys)
    with pytest.raises(ProposalError, match=r"of writer uses \{draft\}.*no agent before writer "
                                            r"writes") as caught:
        validate_proposal("writer.instruction", "Polish {draft}.", "x", keys)
    assert caught.value.reason == "unknown_placeholder"
    assert "one of 2 parallel branches of 'fan'" in role_of(shape, "writer")


def test_components_of_a_workflow_are_read_and_written_per_agent():
    root = build_workflow(pipeline_agents(), WorkflowSpec(name="pipeline", steps=[
        "outliner", "writer", "polisher"]))
    seed = extract_components(root, ["writer.instruction", "writer.generate_content_config"])
    assert seed["writer.instruction"] == PIPELINE_INSTRUCTIONS["writer"]
    copy = apply_components(root, {**seed, "writer.generate_content_config": "temperature: 0.3"})
    assert copy.find_agent("writer").generate_content_config.temperature == 0.3
    assert root.find_agent("writer").generate_content_config is None or \
        root.find_agent("writer").generate_content_config.temperature is None
    with pytest.raises(ConfigError, match="no agent named 'editor'"):
        extract_components(root, ["editor.instruction"])
