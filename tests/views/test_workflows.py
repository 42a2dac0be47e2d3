"""The pure view logic of multi-agent projects and runs: the workflow picture, the builder's
fields, the pipeline trace, per-agent diffs and merge lineage."""

from __future__ import annotations

import re

import pytest

from studio.model.records import Candidate, RunSpec
from studio.model.workflow import WorkflowSpec
from studio.projects.files import dump_project, parse_project
from studio.views import builder, drafts
from studio.views.charts import lineage_layout
from studio.views.diffing import changes_by_agent
from studio.views.workflows import (
    AgentBox,
    describe_component,
    pipeline_steps,
    quote,
    scored_author,
    workflow_dot,
)

PIPELINE = """\
name: pipe
agents:
  - {name: outliner, model: scripted/pipeline, instruction: Outline the topic., output_key: outline}
  - name: writer
    model: scripted/pipeline
    instruction: "Write a haiku from this outline: {outline}"
    output_key: draft
    generate_content_config: {temperature: 0.3}
  - {name: polisher, model: scripted/pipeline, instruction: "Polish. Draft: {draft}"}
components: {writer: [instruction, generate_content_config]}
critic: {model: scripted/pipeline}
reflection: {model: scripted/pipeline}
dataset: {train: [{topic: autumn leaves}, {topic: city rain}]}
"""


def edges(dot: str) -> list[tuple[str, str]]:
    return re.findall(r"^\s*(\w+) -> (\w+)", dot, re.M)


def node_of(dot: str, name: str) -> str:
    return re.search(rf'^\s*(\w+) \[label="{name}(\\n|")', dot, re.M).group(1)


# --------------------------------------------------------------------------- the picture


def test_sequential_picture_hands_state_keys_on_and_marks_the_scored_agent():
    workflow = WorkflowSpec(type="sequential", name="pipeline", steps=["a", "b", "c"])
    boxes = [AgentBox("a", "m", "outline"), AgentBox("b", "m", "draft", ("instruction",)),
             AgentBox("c", "m")]
    dot = workflow_dot(workflow, boxes, primary="b")
    a, b, c = (node_of(dot, n) for n in "abc")
    assert edges(dot) == [(a, b), (b, c), ("input", a), (b, "critic")]
    assert f'{a} -> {b} [label="{{outline}}"]' in dot
    assert "peripheries=2" in next(line for line in dot.splitlines() if line.strip()
                                   .startswith(f"{b} ["))
    assert "evolves: instruction" in dot and 'label="pipeline (sequential)"' in dot


def test_loop_and_parallel_pictures():
    loop = WorkflowSpec(type="loop", name="draft_loop", steps=["a", "b"], max_iterations=3)
    dot = workflow_dot(loop, [AgentBox("a"), AgentBox("b")])
    a, b = node_of(dot, "a"), node_of(dot, "b")
    assert (b, a) in edges(dot) and "repeat ×3" in dot and "draft_loop (loop, ×3)" in dot
    fan = WorkflowSpec(type="sequential", name="root", steps=[
        WorkflowSpec(type="parallel", name="fan", steps=["x", "y"]), "z"])
    dot = workflow_dot(fan, [AgentBox("x"), AgentBox("y"), AgentBox("z")])
    x, y, z = (node_of(dot, n) for n in "xyz")
    assert {("input", x), ("input", y), (x, z), (y, z), (z, "critic")} <= set(edges(dot))
    assert (x, y) not in edges(dot) and "subgraph cluster_2" in dot


@pytest.mark.parametrize("typed", ['a"; evil [label="x', "back\\slash", "<b>html</b>",
                                   "line\nbreak"])
def test_typed_text_cannot_escape_its_dot_string(typed):
    quoted = quote(typed)
    body = quoted[1:-1]
    assert quoted.startswith('"') and quoted.endswith('"')
    assert not re.search(r'(?<!\\)(\\\\)*"', body)  # every quote inside is escaped
    assert "\n" not in quoted
    dot = workflow_dot(WorkflowSpec.model_construct(type="sequential", name="w", steps=[typed]),
                       [AgentBox(typed, model=typed, output_key=typed)])
    for line in dot.splitlines()[6:-1]:
        assert re.fullmatch(r'\s*(subgraph cluster_\d+ \{|label=.*;|\}|\w+ (->|\[).*;)', line), line


# --------------------------------------------------------------------------- the builder


def test_builder_fields_round_trip_a_workflow_project():
    project = parse_project(PIPELINE)
    fields = drafts.to_fields(project)
    assert fields["agent_order"] == ["a0", "a1", "a2"]
    assert fields["wf_a1_components"] == ["instruction", "generate_content_config"]
    assert fields["wf_a1_rest"] == {"generate_content_config": {"temperature": 0.3}}
    built, errors = drafts.from_fields(fields)
    assert errors == {}
    assert built.component_keys() == ["writer.instruction", "writer.generate_content_config"]
    assert built.agents[1].generate_content_config.temperature == 0.3
    again, _ = drafts.from_fields(drafts.to_fields(parse_project(dump_project(built))))
    assert dump_project(again) == dump_project(built)  # the YAML editor round-trips it


def test_builder_edits_move_add_remove_and_primary_by_id():
    fields = drafts.to_fields(parse_project(PIPELINE))
    fields["primary"] = "a1"
    fields["wf_a1_name"] = "poet"  # renaming the primary keeps it primary
    fields["agent_order"] = builder.move_agent(fields["agent_order"], "a2", -5)
    assert fields["agent_order"] == ["a2", "a0", "a1"]
    fields.update(builder.add_agent(fields))
    assert fields["agent_order"][-1] == "a3" and fields["wf_a3_name"] == "agent_4"
    fields.update(builder.remove_agent(fields, "a3"))
    project, errors = drafts.from_fields(fields)
    assert errors == {}
    assert project.workflow.steps == ["polisher", "outliner", "poet"]
    assert project.primary == "poet" and project.component_keys()[0] == "poet.instruction"
    fields.update(builder.remove_agent(fields, "a1"))
    assert fields["primary"] == ""
    with pytest.raises(ValueError, match="remove all but one"):
        builder.to_single(fields)


def test_builder_converts_one_agent_both_ways():
    single = parse_project(PIPELINE.split("agents:")[0] + "agent: {name: solo, model: "
                           "scripted/demo, instruction: Be brief.}\ncritic: {model: scripted/demo}"
                           "\nreflection: {model: scripted/demo}\ndataset: {train: [{q: a}]}\n")
    fields = drafts.to_fields(single)
    assert fields["agent_mode"] == "single"
    fields.update(builder.to_workflow(fields))
    project, errors = drafts.from_fields(fields)
    assert errors == {} and [a.name for a in project.agents] == ["solo"]
    assert project.component_keys() == ["solo.instruction"] and project.agent is None
    fields.update(builder.to_single(fields))
    project, errors = drafts.from_fields(fields)
    assert errors == {} and project.agent.name == "solo" and not project.agents


def test_builder_errors_name_the_agent_field():
    fields = drafts.to_fields(parse_project(PIPELINE))
    fields["wf_a2_name"] = "2bad"
    fields["wf_a0_output_key"] = "not a key"
    fields["wf_a1_model"] = "nope/model"
    fields["workflow_type"], fields["workflow_max_iterations"] = "loop", 99
    _, errors = drafts.from_fields(fields)
    assert set(errors) == {"wf_a2_name", "wf_a0_output_key", "wf_a1_model",
                           "workflow_max_iterations"}
    assert "identifier" in errors["wf_a2_name"]
    fields = drafts.to_fields(parse_project(PIPELINE))
    fields["workflow_name"] = "writer"  # clashes with an agent's name: said under the workflow
    _, errors = drafts.from_fields(fields)
    assert "workflow names must differ" in " ".join(errors.values())


def test_draft_picture_shows_half_typed_names():
    fields = drafts.to_fields(parse_project(PIPELINE))
    fields["wf_a0_name"] = ""
    fields["primary"] = "a2"
    workflow, boxes, primary = builder.draft_picture(fields)
    assert workflow.steps[0] == "(unnamed)" and primary == "polisher"
    assert "(unnamed)" in workflow_dot(workflow, boxes, primary)


# --------------------------------------------------------------------------- the trace


def test_pipeline_steps_group_by_author_with_tool_calls_and_the_scored_reply():
    trace = {"events": [
        {"author": "outliner", "type": "text", "text": "Outline"},
        {"author": "writer", "type": "tool_call", "id": "c1", "name": "rhyme",
         "args": {"word": "sea"}},
        {"author": "writer", "type": "tool_result", "id": "c1", "name": "rhyme",
         "result": {"words": ["free"]}},
        {"author": "writer", "type": "text", "text": "draft one"},
        {"author": "critic_in_loop", "type": "text", "text": "again"},
        {"author": "writer", "type": "text", "text": "draft two"},
        {"author": "polisher", "type": "text", "text": "final"}]}
    steps = pipeline_steps(trace, scored="writer")
    assert [s.author for s in steps] == ["outliner", "writer", "critic_in_loop", "writer",
                                         "polisher"]
    assert steps[1].tool_calls == [{"id": "c1", "name": "rhyme", "args": {"word": "sea"},
                                    "result": {"words": ["free"]}}]
    assert [s.scored for s in steps] == [False, False, False, True, False]  # the last reply
    assert pipeline_steps(trace)[-1].scored  # no primary named: the last reply
    assert pipeline_steps({"events": ["junk", {"type": "text"}]})[0].author == "?"


def test_scored_author_and_component_words():
    spec = parse_project(PIPELINE).run_spec()
    assert scored_author(spec) == "polisher"
    assert scored_author(spec.model_copy(update={"primary": "writer"})) == "writer"
    assert scored_author(RunSpec()) is None
    words = describe_component("writer.instruction", spec)
    assert words == ("the instruction of agent writer (step 2 of 3 in sequential 'pipeline' "
                     "(after outliner; before polisher))")
    assert "its reply is scored" in describe_component("polisher.instruction", spec)
    assert describe_component("instruction") == "the instruction"


# --------------------------------------------------------------------------- compare


def test_changes_are_grouped_by_agent():
    old = {"outliner.instruction": "A", "writer.instruction": "B", "writer.output_schema": "{}"}
    new = {"outliner.instruction": "A", "writer.instruction": "B and more",
           "writer.output_schema": "{}", "polisher.instruction": "P"}
    groups = changes_by_agent(old, new)
    assert [(g.agent, g.changed, len(g.changes)) for g in groups] == [
        ("outliner", 0, 1), ("writer", 1, 2), ("polisher", 1, 1)]
    assert groups[2].changes[0].old == ""  # a component only the newer one has
    assert [g.agent for g in changes_by_agent({"instruction": "x"}, {"instruction": "y"})] == [""]


def test_lineage_draws_both_parents_of_a_merge():
    candidates = [
        Candidate(id=1, run_id="r", index=0, components={}, content_hash="a", pooled=True),
        Candidate(id=2, run_id="r", index=1, parent_ids=[1], components={}, content_hash="b",
                  iteration=1, pooled=True),
        Candidate(id=3, run_id="r", index=2, parent_ids=[1], components={}, content_hash="c",
                  iteration=2, pooled=True),
        Candidate(id=4, run_id="r", index=3, parent_ids=[2, 3], components={},
                  content_hash="d", iteration=3, pooled=True)]
    tree = lineage_layout(candidates, {1: 0.1, 2: 0.5, 3: 0.5, 4: 0.9}, {4: 2}, 4)
    assert sorted(tree.edges) == [(1, 2), (1, 3), (2, 4), (3, 4)]
    assert sorted(tree.merge_edges) == [(2, 4), (3, 4)]
    assert tree.nodes.set_index("id").loc[4, "parents"] == [1, 2]


def test_making_a_workflow_and_back_keeps_the_agents_other_fields():
    from studio.views import builder

    single = {"agent_name": "w", "agent_model": "scripted/demo", "agent_instruction": "x",
              "components": ["instruction"], "agent_temperature": 0.3, "agent_top_p": None,
              "agent_max_tokens": 128, "agent_tools": "calendar:isleap",
              "agent_schema": '{"type": "object", "properties": {"a": {"type": "string"}}}'}
    step = builder.to_workflow(single)
    assert step[builder.agent_key("a0", "rest")] == {
        "output_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "generate_content_config": {"temperature": 0.3, "max_output_tokens": 128},
        "tools": ["calendar:isleap"]}
    back = builder.to_single({**single, **step})
    assert (back["agent_temperature"], back["agent_max_tokens"], back["agent_tools"]) == \
        (0.3, 128, "calendar:isleap")
    assert '"a"' in back["agent_schema"]
