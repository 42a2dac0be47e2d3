"""Project files: parsing, validation messages, datasets (inline, CSV, JSONL, split)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.model.errors import DatasetError, ProjectFileError
from studio.projects.files import (
    PROJECT_JSON_SCHEMA,
    create_project_run,
    dump_project,
    inline_datasets,
    load_project,
    parse_project,
    resolve_datasets,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MINIMAL = """
name: demo
agent: {name: writer, model: scripted/demo, instruction: Write a haiku.}
critic: {model: scripted/demo}
reflection: {model: scripted/demo}
dataset:
  train: [{topic: a}, {topic: b}, {topic: c}, {topic: d}]
"""


def test_examples_validate():
    for path in EXAMPLES.glob("*.yaml"):
        project, base = load_project(path)
        train, _ = resolve_datasets(project, base, source=str(path))
        assert train, path


def test_typo_in_a_field_name_names_file_field_and_suggestion():
    with pytest.raises(ProjectFileError, match=r"p.yaml: run.max_iteratons: unknown field "
                                               r"\(did you mean 'max_iterations'\?\)"):
        parse_project(MINIMAL + "run: {max_iteratons: 3}\n", source="p.yaml")
    with pytest.raises(ProjectFileError, match="agent.instrction: unknown field"):
        parse_project(MINIMAL.replace("instruction:", "instrction:"), source="p.yaml")


def test_bad_values_and_yaml():
    with pytest.raises(ProjectFileError, match="review 'later' is not one of: auto, review"):
        parse_project(MINIMAL + "run: {review: later}\n")
    with pytest.raises(ProjectFileError, match="bad.yaml, line 3: YAML does not parse"):
        parse_project("name: x\nagent: [\n", source="bad.yaml")
    with pytest.raises(ProjectFileError, match="must be a YAML mapping"):
        parse_project("- just a list")
    with pytest.raises(ProjectFileError, match="dataset.train is required"):
        parse_project("name: x\nagent: {}\ndataset: {}\n")
    with pytest.raises(ProjectFileError, match="file not found"):
        load_project("/no/such/project.yaml")


def test_missing_dataset_file_names_the_project_and_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(MINIMAL.replace("train: [{topic: a}, {topic: b}, {topic: c}, {topic: d}]",
                                    "train: {path: data/missing.csv}"))
    project, base = load_project(path)
    with pytest.raises(DatasetError, match=rf"{path}: dataset.train.path: dataset file not "
                                           r"found: .*missing.csv"):
        resolve_datasets(project, base, source=str(path))


def test_csv_columns_expected_and_missing(tmp_path):
    (tmp_path / "qa.csv").write_text("question,answer\nWhat is 2+2?,4\nCapital of France?,Paris\n")
    text = MINIMAL.replace("train: [{topic: a}, {topic: b}, {topic: c}, {topic: d}]",
                           "train: {path: qa.csv}\n  input_column: question\n"
                           "  expected_column: answer")
    (tmp_path / "p.yaml").write_text(text)
    project, base = load_project(tmp_path / "p.yaml")
    train, val = resolve_datasets(project, base)
    assert train[0] == {"question": "What is 2+2?", "expected": "4"} and val is None
    assert project.run_spec().input_key == "question"
    (tmp_path / "p.yaml").write_text(text.replace("input_column: question",
                                                  "input_column: prompt"))
    project, base = load_project(tmp_path / "p.yaml")
    with pytest.raises(DatasetError, match=r"row 0 has no column 'prompt' \(dataset.input_column"
                                           r"\); columns: \['answer', 'question'\]"):
        resolve_datasets(project, base)


def test_jsonl_errors_name_the_line(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"topic": "a"}\n{"topic": \n')
    project = parse_project(MINIMAL.replace(
        "train: [{topic: a}, {topic: b}, {topic: c}, {topic: d}]", "train: {path: d.jsonl}"))
    with pytest.raises(DatasetError, match="line 2 is not JSON"):
        resolve_datasets(project, tmp_path)


def test_split_carves_a_validation_set():
    project = parse_project(MINIMAL.replace("dataset:\n", "dataset:\n  split: "
                                            "{val_fraction: 0.5, seed: 1}\n"))
    train, val = resolve_datasets(project, Path("."))
    assert len(train) == 2 and len(val) == 2
    assert {r["topic"] for r in train + val} == {"a", "b", "c", "d"}


def test_round_trip_and_inline(tmp_path):
    project, base = load_project(EXAMPLES / "haiku_scripted.yaml")
    again = parse_project(dump_project(inline_datasets(project, base)))
    assert again.agent.instruction == project.agent.instruction
    assert again.critic.schema_kind == "advanced"
    assert "properties" in PROJECT_JSON_SCHEMA and "agent" in PROJECT_JSON_SCHEMA["properties"]
    assert json.dumps(PROJECT_JSON_SCHEMA)


def test_start_run_stores_the_spec_and_examples(store):
    project = parse_project(MINIMAL)
    run = create_project_run(store, project, Path("."), name="from yaml")
    assert run.spec.project == "demo" and run.spec.critic.agent.model == \
        "scripted/demo"
    assert len(store.examples(run.id)) == 4
