"""Every page on multi-agent projects and runs, under Streamlit's AppTest against a real
(temporary) store: the workflow builder on Projects, the pipeline trace on Run, the agent and
component of a proposal, per-agent diffs and lineage on Compare, Agreement on a group run."""

from __future__ import annotations

import pytest
import streamlit as st

from studio.engine import EvolutionConfig, override
from studio.engine.hosting.worker import get_manager
from studio.model.records import Candidate, ProposalStatus
from studio.projects.files import dump_project, parse_project
from studio.projects.workspace import (
    EXAMPLES_DIR,
    import_example,
    pending_proposal,
    start_project_run,
)
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, open_tab, texts

SCRIPTED = EXAMPLES_DIR / "haiku_scripted.yaml"
TWO_AGENTS = """\
name: two-agents
agents:
  - {name: outliner, model: scripted/pipeline, instruction: Outline the topic., output_key: outline}
  - name: writer
    model: scripted/pipeline
    instruction: "Write a haiku from this outline: {outline}"
workflow: {type: sequential, name: pipeline, steps: [outliner, writer]}
primary: writer
components: {writer: [instruction]}
critic: {model: scripted/pipeline, schema: advanced}
reflection: {model: scripted/pipeline}
dataset:
  train: [{topic: autumn leaves}, {topic: city rain}, {topic: old bridge}, {topic: snow owl}]
  val: [{topic: harbor fog}, {topic: desert wind}]
"""


def button(at, label):
    return next(b for b in at.button if b.label == label)


def group_project(store):
    return store.save_project("two-agents", dump_project(parse_project(TWO_AGENTS)))


def group_review_run(store, **config):
    """A two-agent run waiting at its first gate (a proposal for writer.instruction)."""
    project = group_project(store)
    values = {"max_iterations": 3, "minibatch_size": 2, "review": "review", "seed": 3} | config
    run = start_project_run(store, project.id, EvolutionConfig(**values))
    wait_until(lambda: pending_proposal(store, run.id))
    return run


def group_finished_run(store):
    project = group_project(store)
    run = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=2, minibatch_size=2, review="auto", seed=3))
    get_manager(store).handle(run.id).wait(timeout=60)
    return run


# --------------------------------------------------------------------------- projects


@pytest.mark.slow
def test_builder_turns_one_agent_into_a_two_agent_workflow_and_saves_it(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    key = lambda field: f"projects.field.{project.id}.{field}"  # noqa: E731
    button(at, "Make this a workflow of several agents").click().run()
    assert_ok(at)
    assert at.session_state[key("agent_order")] == ["a0"]
    assert at.text_input(key=key("wf_a0_name")).value == "writer"  # the agent became step 1
    button(at, "Add agent").click().run()
    assert at.session_state[key("agent_order")] == ["a0", "a1"]

    at.text_input(key=key("wf_a0_name")).set_value("outliner")
    at.text_input(key=key("wf_a0_model")).set_value("scripted/pipeline")
    at.text_input(key=key("wf_a0_output_key")).set_value("outline")
    at.text_area(key=key("wf_a0_instruction")).set_value("Outline the topic.")
    at.multiselect(key=key("wf_a0_components")).set_value([])
    at.text_input(key=key("wf_a1_name")).set_value("writer")
    at.text_input(key=key("wf_a1_model")).set_value("scripted/pipeline")
    at.text_area(key=key("wf_a1_instruction")).set_value(
        "Write a haiku from this outline: {outline}").run()
    assert_ok(at)
    assert not at.error, texts(at.error)

    dot = at.get("graphviz_chart")[0].proto.spec  # the picture follows the edits
    assert "outliner" in dot and "writer" in dot and "{outline}" in dot
    assert 'peripheries=2' in dot.split("writer", 1)[1].split("\n", 1)[0]  # writer is scored

    button_key = f"projects.builder.{project.id}"
    at.button(key=f"{button_key}.btn_up_a1").click().run()  # order: writer, outliner
    assert at.session_state[key("agent_order")] == ["a1", "a0"]
    at.button(key=f"{button_key}.btn_down_a1").click().run()
    assert at.session_state[key("agent_order")] == ["a0", "a1"]
    at.selectbox(key=key("primary")).set_value("a1").run()
    at.segmented_control(key=key("workflow_type")).set_value("loop").run()
    assert at.number_input(key=key("workflow_max_iterations")).value == 2
    at.segmented_control(key=key("workflow_type")).set_value("sequential").run()

    button(at, "Save project").click().run()
    assert_ok(at)
    stored = parse_project(studio_db.get_project(project.id).yaml)
    assert [a.name for a in stored.agents] == ["outliner", "writer"]
    assert stored.agents[0].output_key == "outline"
    assert stored.workflow.steps == ["outliner", "writer"]
    assert stored.workflow.type.value == "sequential"
    assert stored.primary == "writer"
    assert stored.component_keys() == ["writer.instruction"]
    assert stored.agent is None


@pytest.mark.slow
def test_builder_shows_errors_next_to_the_agent(app, studio_db):
    project = group_project(studio_db)
    at = app("projects", project_id=project.id)
    key = lambda field: f"projects.field.{project.id}.{field}"  # noqa: E731
    at.text_input(key=key("wf_a1_name")).set_value("outliner").run()
    assert any("two agents are named 'outliner'" in s for s in texts(at.error))
    assert button(at, "Save project").disabled
    at.text_input(key=key("wf_a1_name")).set_value("my writer").run()
    assert any("must be an identifier" in s for s in texts(at.error))
    at.text_input(key=key("wf_a1_name")).set_value("writer")
    at.text_input(key=key("wf_a1_model")).set_value("nope/model").run()
    assert any("unknown model provider" in s for s in texts(at.error))
    at.text_input(key=key("wf_a1_model")).set_value("scripted/pipeline")
    at.multiselect(key=key("wf_a1_components")).set_value([]).run()
    assert any("at least one component" in s for s in texts(at.error))


@pytest.mark.slow
def test_builder_round_trips_through_the_yaml_editor(app, studio_db):
    project = group_project(studio_db)
    at = app("projects", project_id=project.id)
    key = lambda field: f"projects.field.{project.id}.{field}"  # noqa: E731
    assert button(at, "Save project").disabled  # loading the stored project changes nothing
    text = studio_db.get_project(project.id).yaml.replace("type: sequential", "type: loop")
    open_tab(at, project.id, "YAML")
    at.text_area(key=f"projects.yaml.{project.id}").set_value(text)
    button(at, "Apply YAML to the editor").click().run()
    assert_ok(at)
    open_tab(at, project.id, "Agent")
    assert at.segmented_control(key=key("workflow_type")).value == "loop"
    assert at.session_state[key("primary")] == "a1"
    button(at, "Save project").click().run()
    stored = parse_project(studio_db.get_project(project.id).yaml)
    assert stored.workflow.type.value == "loop" and stored.primary == "writer"


def test_builder_keeps_nested_workflows_for_yaml(app, studio_db):
    nested = TWO_AGENTS.replace(
        "workflow: {type: sequential, name: pipeline, steps: [outliner, writer]}",
        "workflow: {type: sequential, name: pipeline, steps: [outliner, "
        "{type: loop, name: rewrite, max_iterations: 2, steps: [writer]}]}")
    project = studio_db.save_project("nested", dump_project(parse_project(nested)))
    at = app("projects", project_id=project.id)
    assert any("nests workflows" in s for s in texts(at.info))
    assert at.button(key=f"projects.builder.{project.id}.btn_add").disabled
    dot = at.get("graphviz_chart")[0].proto.spec
    assert "rewrite (loop, ×2)" in dot and "repeat ×2" in dot
    assert button(at, "Save project").disabled  # nothing lost: same text as stored


@pytest.mark.slow
def test_try_on_one_example_runs_the_workflow_and_scores_the_primary(app, studio_db):
    project = group_project(studio_db)
    at = app("projects", project_id=project.id)
    button(at, "Try it").click().run()
    assert_ok(at)
    assert at.session_state[f"projects.probe.{project.id}.job"].wait(timeout=60)  # in background
    at.run()
    assert_ok(at)
    assert float({m.label: m.value for m in at.metric}["Critic score"]) >= 0.0
    assert "Pipeline: 2 step(s) in order" in texts(at.caption)
    assert "Output (scored: writer's reply)" in texts(at.caption)
    assert any(c.value.startswith("Outline for autumn leaves") for c in at.code)


# --------------------------------------------------------------------------- run


@pytest.mark.slow
def test_run_page_shows_the_pipeline_step_by_step(app, studio_db):
    run = group_finished_run(studio_db)
    at = app("run", run_id=run.id)
    table = at.dataframe(key=f"run.table.{run.id}").value
    at.session_state[f"run.table.{run.id}"] = {
        "selection": {"rows": [len(table) - 1], "columns": [], "cells": []}}
    at.run()
    assert_ok(at)
    trial = studio_db.get_trial(int(table["id"].iloc[-1]))
    shown = texts(at.markdown)
    steps = [s for s in shown if s.startswith(("**1. ", "**2. "))]
    assert steps[0] == "**1. outliner**" and steps[1].startswith("**2. writer**")
    assert "scored output" in steps[1] and "scored" not in steps[0]
    codes = [c.value for c in at.code]
    outline = next(c for c in codes if c.startswith("Outline for "))
    assert codes.index(outline) < codes.index(trial.output, codes.index(outline))
    assert any("Output (scored: writer's reply)" in s for s in texts(at.caption))


# --------------------------------------------------------------------------- proposals


@pytest.mark.slow
def test_proposals_name_the_agent_and_component(app, studio_db):
    run = group_review_run(studio_db)
    proposal = pending_proposal(studio_db, run.id)
    assert proposal.component == "writer.instruction"
    at = app("proposals", run_id=run.id)
    assert any("writer · instruction" in s for s in texts(at.subheader))
    assert any(s.startswith("Changes the instruction of agent writer (step 2 of 2 in "
                            "sequential 'pipeline'") and "its reply is scored" in s
               for s in texts(at.markdown))
    assert any("Parent #0: writer · instruction" in s for s in texts(at.caption))
    assert any(":green-background[" in s for s in texts(at.markdown))  # the diff
    assert {m.label for m in at.metric} >= {"Parent minibatch sum", "Child minibatch sum"}
    button(at, "Accept").click().run()
    assert_ok(at)
    wait_until(lambda: studio_db.get_proposal(proposal.id).status is ProposalStatus.ACCEPTED)
    at.run()
    history = at.dataframe(key="proposals.history").value
    row = history[history["id"] == proposal.id].iloc[0]
    assert (row["agent"], row["component"], row["decision"]) == ("writer", "instruction",
                                                                 "accept")


# --------------------------------------------------------------------------- compare, agreement


@pytest.mark.slow
def test_compare_groups_diffs_by_agent_and_draws_merges(app, studio_db):
    run = group_finished_run(studio_db)
    seed, *others = studio_db.candidates(run.id)
    assert others, "the scripted pipeline improves the writer at least once"
    at = app("compare", run_id=run.id)
    assert_ok(at)
    markdown = texts(at.markdown)
    assert "**Agent writer** · 1 of 1 component(s) changed" in markdown
    assert any("#0 · writer · instruction" in s for s in texts(at.caption))
    assert any(c.startswith("Δ") for frame in at.dataframe  # per-example scores
               for c in frame.value.columns)

    last = others[-1]
    studio_db.add_candidate(Candidate(  # a merge of the seed and the last: two parents
        run_id=run.id, index=last.index + 1, parent_ids=[last.id, seed.id],
        components=dict(last.components), content_hash="merge-test", iteration=last.iteration + 1))
    st.cache_resource.clear()  # (a real merge arrives with its trials: a new run marker)
    at = app("compare", run_id=run.id)
    lineage = next(c for c in at.get("plotly_chart") if '"dash"' in c.proto.spec)
    assert "merge of #" in lineage.proto.spec
    assert any("a merge's two parents" in s for s in texts(at.caption))


@pytest.mark.slow
def test_review_and_agreement_work_on_a_group_run(app, studio_db):
    run = group_finished_run(studio_db)
    at = app("review", run_id=run.id)
    assert len(at.dataframe[0].value) > 0  # the group run's trials, ready to correct
    trials = studio_db.trials(run.id, with_trace=False)
    override(trials[0].id, score=1.0, author="a", store=studio_db)
    override(trials[1].id, score=0.0, author="a", store=studio_db)
    at = app("agreement", run_id=run.id)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Overrides compared"] == "2" and "Cohen's kappa" in metrics
