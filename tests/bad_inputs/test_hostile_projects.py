"""Hostile project files and datasets (issue 20), through the Projects page's import, ``studio
validate``/``fork``/``align`` and the function every run start calls: each refused naming the
field and why, or handled exactly; the project already stored is untouched."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml

from studio.cli import main
from studio.model.errors import ConfigError
from studio.projects.files import check_project_datasets, load_project
from studio.projects.workspace import import_upload
from tests.bad_inputs.conftest import project, write_project
from tests.helpers import ROOT


def _yaml(**sections) -> bytes:
    return yaml.safe_dump(project(**sections), allow_unicode=True).encode()


REFUSED_AT_IMPORT = [
    ("non-ascii-agent-name", _yaml(agent={"name": "写手"}),
     ["agent.name '写手'", "ASCII identifiers"]),
    ("non-ascii-name-in-agents", _yaml(agent=None, agents=[
        {"name": "写手", "model": "scripted/demo", "instruction": "Write about {topic}."}]),
     ["agents[0]: name '写手' must be an identifier"]),
    ("output-schema-banana", _yaml(agent={"output_schema": {"type": "banana"}}),
     ["agent.output_schema", "'banana'"]),
    ("output-schema-a-list", _yaml(agent={"output_schema": ["type", "object"]}),
     ["agent.output_schema"]),
    ("split-and-val", _yaml(dataset={"train": [{"topic": "a"}, {"topic": "b"}],
                                     "val": [{"topic": "c"}],
                                     "split": {"val_fraction": 0.5}}),
     ["split.val_fraction", "val is given: remove one"]),
    ("train-a-string", _yaml(dataset={"train": "rows.csv"}), ["dataset.train"]),
    ("iterations-a-word", _yaml(run={"max_iterations": "ten"}),
     ["run.max_iterations", "valid integer"]),
    ("val-fraction-one", _yaml(dataset={"train": [{"topic": "a"}],
                                        "split": {"val_fraction": 1.0}}),
     ["dataset.split.val_fraction", "less than 1"]),
    ("agent-instruction-1-MB", _yaml(agent={"instruction": "Write. " * 150_000}),
     ["agent.instruction: the text is 1,050,000 characters; the limit is 50,000"]),
    ("critic-instruction-1-MB", _yaml(critic={"instruction": "Judge. " * 150_000}),
     ["critic.instruction: the text is 1,050,000 characters; the limit is 50,000"]),
    ("reflection-instruction-1-MB", _yaml(reflection={
        "model": "scripted/demo", "instruction": "{component_text} {trials} " * 40_000}),
     ["reflection.instruction: the text is 1,040,000 characters; the limit is 50,000"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("section", ["agent", "critic"])
def test_studio_run_refuses_a_1_mb_instruction_before_creating_a_run(tmp_path, capsys,
                                                                     section):
    """docs/security.md's cap, as the project file is read: no run created, then failed."""
    from studio.store import open_store

    path = write_project(tmp_path, project(**{section: {"instruction": "Write. " * 150_000}},
                                           run={"max_iterations": 0}))
    db = f"sqlite:///{tmp_path}/s.db"
    assert main(["--db", db, "run", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{section}.instruction: the text is 1,050,000 characters; the limit is 50,000" in err
    assert "Traceback" not in err
    assert open_store(db, cached=False).list_runs() == []


@pytest.mark.slow
@pytest.mark.parametrize("data, fragments", [c[1:] for c in REFUSED_AT_IMPORT],
                         ids=[c[0] for c in REFUSED_AT_IMPORT])
def test_the_import_refuses_naming_the_field(store, saved, data, fragments):
    with pytest.raises(ConfigError) as refused:
        import_upload(store, data, "upload.yaml")
    message = str(refused.value)
    assert "upload.yaml" in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert saved()


@pytest.mark.parametrize("data, fragments", [c[1:] for c in REFUSED_AT_IMPORT[:5]],
                         ids=[c[0] for c in REFUSED_AT_IMPORT[:5]])
def test_validate_refuses_the_same_with_the_path(tmp_path, capsys, data, fragments):
    path = tmp_path / "bad.yaml"
    path.write_bytes(data)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err and "pydantic" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_an_unknown_reflection_placeholder_is_refused_by_validate(tmp_path, capsys):
    path = write_project(tmp_path, project(reflection={
        "model": "scripted/demo",
        "instruction": "Improve {component_text} given {trials}; also {evil} and {ok?}."}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "reflection.instruction" in err and "{evil}" in err and "{ok?}" not in err
    assert "{component_text} and {trials}" in err


def test_jsonl_with_line_separators_inside_strings_is_read_exactly(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "a\u2028b"}\n{"topic": "c\u0085d\u2029e"}\r\n\n'
                    '{"topic": "f\\u000cg"}\n', encoding="utf-8")
    path = write_project(tmp_path, project(dataset={"train": {"path": "rows.jsonl"}}))
    assert main(["validate", str(path)]) == 0
    assert "ok (3 training rows" in capsys.readouterr().out
    loaded, base = load_project(path)
    train = check_project_datasets(loaded, base, source=str(path)).train
    assert [row["topic"] for row in train] == ["a\u2028b", "c\u0085d\u2029e", "f\x0cg"]


def test_jsonl_error_lines_count_newlines_only(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "a\u2028b"}\n{"topic": broken}\n', encoding="utf-8")
    path = write_project(tmp_path, project(dataset={"train": {"path": "rows.jsonl"}}))
    assert main(["validate", str(path)]) == 2
    assert "line 2" in capsys.readouterr().err


HANDLED_FILES = [
    ("bom", b"\xef\xbb\xbf" + _yaml()),
    ("crlf", _yaml().replace(b"\n", b"\r\n")),
    ("empty-agent-name", _yaml(agent={"name": ""})),
]


@pytest.mark.parametrize("data", [c[1] for c in HANDLED_FILES], ids=[c[0] for c in HANDLED_FILES])
def test_a_bom_crlf_or_empty_name_project_validates(tmp_path, capsys, data):
    path = tmp_path / "p.yaml"
    path.write_bytes(data)
    assert main(["validate", str(path)]) == 0
    assert "ok (2 training rows" in capsys.readouterr().out


BAD_DATASETS = [
    ("header-only.csv", b"topic\n", ["header-only.csv has no rows"]),
    ("empty.jsonl", b"", ["empty.jsonl has no rows"]),
    ("duplicate-columns.csv", b"topic,topic\na,b\n", ["column name 'topic' appears twice"]),
    ("latin1.csv", "topic\ncafé\n".encode("latin-1"), ["line 2", "not UTF-8", "0xe9"]),
    ("utf16.jsonl", '{"topic": "a"}\n'.encode("utf-16"), ["UTF-16"]),
    ("array.jsonl", b'[{"topic": "a"}]\n', ["line 1 is not a JSON object"]),
    ("ragged.csv", b"topic,notes\na\n", ["line 2 has 1 cells but the header has 2", "notes"]),
    ("duplicate-key.jsonl", b'{"topic": "a", "topic": "b"}\n',
     ["line 1", "the key 'topic' appears twice"]),
    ("nan.jsonl", b'{"topic": NaN}\n', ["line 1", "NaN is not a number JSON can hold"]),
    ("unnamed-column.csv", b"topic,\na,b\n", ["column 2 of the header has no name"]),
]


@pytest.mark.parametrize("name, data, fragments", BAD_DATASETS, ids=[c[0] for c in BAD_DATASETS])
def test_bad_dataset_files_are_named(tmp_path, capsys, name, data, fragments):
    (tmp_path / name).write_bytes(data)
    path = write_project(tmp_path, project(dataset={"train": {"path": name}}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and name in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_a_project_path_with_spaces_and_a_newline_validates(tmp_path, capsys):
    path = write_project(tmp_path, project(), name="my project\nfile.yaml")
    assert main(["validate", str(path)]) == 0


def test_a_folder_given_as_the_project_is_named(tmp_path, capsys):
    (tmp_path / "folder.yaml").mkdir()
    assert main(["validate", str(tmp_path / "folder.yaml")]) == 2
    assert "not a regular file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def corrected_run(tmp_path_factory):
    """A short-answers run with 12 corrected trials (enough to align)."""
    from studio.runtime.providers.strict import is_short
    from studio.store import open_store

    db = f"sqlite:///{tmp_path_factory.mktemp('align')}/a.db"
    out = io.StringIO()  # in this process: no second interpreter importing ADK and LiteLLM
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, "run",
                     str(ROOT / "examples" / "short_answers_scripted.yaml")]) == 0
    run_id = json.loads(out.getvalue())["run_id"]
    for trial in open_store(db).trials(run_id)[:12]:
        score = "0.9" if is_short(trial.output) else "0.8"
        assert main(["--db", db, "override", str(trial.id), "--score", score]) == 0
    return db, run_id


@pytest.mark.slow
def test_align_holding_out_nearly_every_label_is_refused_with_the_counts(corrected_run, capsys):
    from studio.store import open_store

    db, run_id = corrected_run
    before = len(open_store(db).list_runs())
    assert main(["--db", db, "align", run_id, "--held-out", "0.99"]) == 2
    err = capsys.readouterr().err
    assert "held_out 0.99 keeps" in err and "of the 12 labels out and leaves 1 to align on" in err
    assert len(open_store(db).list_runs()) == before  # no align run stored


@pytest.mark.slow
def test_fork_with_a_missing_critic_file_says_it_does_not_exist(corrected_run, capsys):
    db, run_id = corrected_run
    assert main(["--db", db, "fork", run_id, "--candidate", "0", "--critic",
                 "no/such critic.yaml"]) == 2
    err = capsys.readouterr().err
    assert "--critic" in err and "'no/such critic.yaml' does not exist" in err
    assert "YAML mapping" not in err


@pytest.mark.slow  # its module's run is made for it: seconds
def test_fork_with_an_unknown_run_or_candidate_is_named(corrected_run, capsys):
    db, run_id = corrected_run
    assert main(["--db", db, "fork", "nope", "--candidate", "0"]) == 2
    assert "run 'nope' does not exist" in capsys.readouterr().err
    assert main(["--db", db, "fork", run_id, "--candidate", "999"]) == 2
    err = capsys.readouterr().err
    assert "999" in err and "Traceback" not in err


@pytest.mark.parametrize("name, data", [
    ("bom-crlf.csv", b"\xef\xbb\xbftopic\r\nautumn\r\nrain\r\n"),
    ("bom-crlf.jsonl", b'\xef\xbb\xbf{"topic": "autumn"}\r\n{"topic": "rain"}\r\n'),
], ids=["csv", "jsonl"])
def test_datasets_with_a_bom_and_crlf_are_read_exactly(tmp_path, capsys, name, data):
    (tmp_path / name).write_bytes(data)
    path = write_project(tmp_path, project(dataset={"train": {"path": name},
                                                    "input_column": "topic"}))
    assert main(["validate", str(path)]) == 0
    loaded, base = load_project(path)
    train = check_project_datasets(loaded, base, source=str(path)).train
    assert [row["topic"] for row in train] == ["autumn", "rain"]
