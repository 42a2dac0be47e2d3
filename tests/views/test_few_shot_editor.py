"""The project editor shows and edits an agent's few-shot demos as JSON text, names a bad one,
and keeps them when the agent becomes a workflow step and back."""

from __future__ import annotations

import json

from studio.model.limits import MAX_DEMOS
from studio.projects.files import dump_project, parse_project
from studio.views import builder, drafts

PROJECT = """name: p
agent:
  name: answerer
  model: scripted/echo
  instruction: Answer.
  few_shot:
    - {input: "What is the capital of Italy?", output: "<b>Rome</b>"}
critic: {type: evaluator, name: c, evaluator: {evaluator: exact_match}}
reflection: {model: scripted/echo}
components: [few_shot, instruction]
dataset: {train: [{question: q, expected: a}], input_column: question}
"""


def test_the_editor_shows_demos_as_json_and_saves_them_back_unchanged():
    project = parse_project(PROJECT)
    fields = drafts.to_fields(project)
    assert json.loads(fields["agent_few_shot"]) == [
        {"input": "What is the capital of Italy?", "output": "<b>Rome</b>"}]  # text, not HTML
    saved, errors = drafts.from_fields(fields)
    assert errors == {} and dump_project(saved) == dump_project(project)
    edited, errors = drafts.from_fields({**fields, "agent_few_shot": ""})
    assert errors == {} and edited.agent.few_shot == []


def test_a_bad_demo_box_is_reported_on_its_field_naming_where():
    fields = drafts.to_fields(parse_project(PROJECT))
    cases = {"[{": "not valid JSON", '{"input": "q"}': "must be a list",
             '[{"input": "q", "output": ""}]': "agent.few_shot[0]",
             json.dumps([{"input": "q", "output": "a"}] * (MAX_DEMOS + 1)): "the limit is"}
    for text, words in cases.items():
        project, errors = drafts.from_fields({**fields, "agent_few_shot": text})
        assert project is None and words in errors["agent_few_shot"], text


def test_demos_survive_making_the_agent_a_workflow_step_and_back():
    fields = drafts.to_fields(parse_project(PROJECT))
    workflow = {**fields, **builder.to_workflow(fields)}
    saved, errors = drafts.from_fields(workflow)
    assert errors == {} and saved.agents[0].few_shot[0].output == "<b>Rome</b>"
    single = {**workflow, **builder.to_single(workflow)}
    assert json.loads(single["agent_few_shot"])[0]["output"] == "<b>Rome</b>"
