"""The project editor's logic: fields to project and back, an error per field, datasets."""

from __future__ import annotations

import pytest

from studio.model.errors import DatasetError
from studio.projects.files import dump_project, load_project
from studio.projects.workspace import EXAMPLES_DIR
from studio.views import drafts


@pytest.fixture
def fields():
    project, _ = load_project(EXAMPLES_DIR / "haiku_scripted.yaml")
    return drafts.to_fields(project)


def test_round_trip(fields):
    project, errors = drafts.from_fields(fields)
    assert errors == {}
    original, _ = load_project(EXAMPLES_DIR / "haiku_scripted.yaml")
    assert dump_project(project) == dump_project(original)


def test_each_problem_is_reported_on_its_field(fields):
    fields.update(agent_model="nope/model", agent_schema="{not json",
                  reflection_instruction="Improve {component_text}", components=[], name=" ")
    project, errors = drafts.from_fields(fields)
    assert project is None
    assert "unknown model provider" in errors["agent_model"]
    assert "not valid JSON" in errors["agent_schema"]
    assert "{trials}" in errors["reflection_instruction"]
    assert "component" in errors["components"]
    assert "name" in errors["name"]


def test_scripted_and_local_models_need_no_key():
    assert drafts.model_problem("scripted/demo@150ms") is None
    assert drafts.model_problem("local/smollm2") is None
    assert "unknown scripted model" in drafts.model_problem("scripted/nope")


def test_missing_api_key_says_which_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "OPENAI_API_KEY" in drafts.model_problem("openai/gpt-4o-mini")


def test_schema_must_describe_an_object(fields):
    fields["agent_schema"] = '{"type": "string"}'
    _, errors = drafts.from_fields(fields)
    assert "object" in errors["agent_schema"]
    fields["agent_schema"] = '{"type": "object", "properties": {"a": {"type": "string"}}}'
    project, errors = drafts.from_fields(fields)
    assert errors == {} and project.agent.output_schema["properties"]["a"]["type"] == "string"


def test_custom_critic_needs_its_schema(fields):
    fields["critic_schema"] = "custom"
    _, errors = drafts.from_fields(fields)
    assert "critic_output_schema" in errors


def test_evaluator_critic(fields):
    fields.update(critic_type="evaluator", critic_evaluator='{"evaluator": "no_such_thing"}')
    _, errors = drafts.from_fields(fields)
    assert "no_such_thing" in errors["critic_evaluator"]
    names = [e["name"] for e in drafts.available_evaluators()]
    assert "exact_match" in names
    fields["critic_evaluator"] = '{"evaluator": "exact_match"}'
    project, errors = drafts.from_fields(fields)
    assert errors == {} and project.critic.type == "evaluator"


def test_dataset_columns_are_checked(fields):
    fields.update(train_rows=[{"q": "a", "answer": "b"}], val_rows=None, input_column="question")
    _, errors = drafts.from_fields(fields)
    assert "question" in errors["input_column"]
    fields.update(input_column="q", expected_column="answer")
    project, errors = drafts.from_fields(fields)
    assert errors == {}
    assert drafts.training_examples(project) == [{"q": "a", "expected": "b"}]


def test_split_that_leaves_no_training_rows(fields):
    fields.update(train_rows=[{"q": "a"}], val_rows=None, val_fraction=0.5)
    _, errors = drafts.from_fields(fields)
    assert "no training rows" in errors["val_fraction"]


def test_file_backed_dataset_says_how_to_fix(fields):
    fields.update(train_rows=None, train_path="data/train.csv")
    _, errors = drafts.from_fields(fields)
    assert "upload the file or paste" in errors["train_rows"]


def test_parse_rows_in_every_format():
    assert drafts.parse_rows("topic,expected\nrain,wet\n") == [{"topic": "rain",
                                                                 "expected": "wet"}]
    assert drafts.parse_rows('{"a": 1}\n\n{"a": 2}') == [{"a": 1}, {"a": 2}]
    assert drafts.parse_rows('[{"a": 1}]') == [{"a": 1}]
    assert drafts.detect_format("x", "data.jsonl") == "jsonl"
    with pytest.raises(DatasetError, match="line 2"):
        drafts.parse_rows('{"a": 1}\nnot json', "jsonl")
    with pytest.raises(DatasetError, match="no data"):
        drafts.parse_rows("  ")
    with pytest.raises(DatasetError, match="array of objects"):
        drafts.parse_rows("[1, 2]", "json")
    assert drafts.columns([{"a": 1}, {"b": 2, "a": 3}]) == ["a", "b"]


# --------------------------------------------------------------------------- loading new rows


@pytest.mark.parametrize(("names", "current", "wanted"), [
    (["topic", "expected"], ("topic", "expected"), ("topic", "expected")),  # still there: kept
    (["question", "answer"], ("input", "expected"), ("question", "answer")),  # usual names
    (["Prompt", "Reference"], ("input", ""), ("Prompt", "Reference")),  # any case
    (["id", "body"], ("input", ""), ("id", "")),  # nothing usual: the first column
    (["id", "body"], ("", ""), ("", "")),  # all fields was the choice: still works
    (["answer", "x"], ("answer", ""), ("x", "answer")),  # one column is not both
])
def test_new_rows_get_their_columns_suggested(names, current, wanted):
    assert drafts.suggest_columns(names, *current) == wanted


def test_loaded_rows_say_where_they_go_what_they_replace_and_their_columns():
    pending = drafts.read_import("q,a\nx,y\n", "auto", "data.csv", drafts.RowsTarget.TRAIN,
                                 [{"topic": "t"}] * 3)
    assert (pending.replaces, pending.columns) == (3, ["q", "a"])
    assert pending.summary() == ("1 row(s) from data.csv for the training rows, with the "
                                 "columns 'q', 'a'.")
    with pytest.raises(DatasetError, match="no data"):
        drafts.read_import(" ", "auto", "data.csv", drafts.RowsTarget.TEST, None)


def test_unsaved_compares_values_not_how_a_widget_holds_them(fields):
    drawn = dict(fields, description=fields["description"] or "", split_seed=float(
        fields["split_seed"]), agent_tools="")
    assert not drafts.unsaved(drawn, fields)
    assert drafts.unsaved(dict(fields, agent_model="nope/model"), fields)
    assert drafts.unsaved(dict(fields, train_rows=[{"topic": "other"}]), fields)
