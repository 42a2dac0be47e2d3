"""Dataset files that are broken or hostile, read by ``studio validate`` (the same check ``run``
makes) and by the browser's upload path: each refused with the file and the line, or handled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.cli import main
from studio.model.errors import DatasetError
from studio.projects.files import decode_text
from studio.views.drafts import parse_rows
from tests.bad_inputs.conftest import project, write_project

DEEP = "[" * 100_000 + "]" * 100_000

BAD_FILES = [
    # (id, file name, bytes, fragments the error must contain)
    ("csv-latin-1", "rows.csv", "topic,notes\nautumn,ok\ncafé,crème\n".encode("latin-1"),
     ["line 3 is not UTF-8", "0xe9", "save it as UTF-8"]),
    ("csv-utf-16", "rows.csv", "topic\nautumn\n".encode("utf-16"), ["UTF-16"]),
    ("csv-utf-16-be", "rows.csv", b"\xfe\xff" + "topic\n".encode("utf-16-be"), ["UTF-16"]),
    ("csv-utf-32", "rows.csv", "topic\nx\n".encode("utf-32"), ["UTF-32"]),
    ("csv-2MB-cell", "rows.csv", b"topic\n\"" + b"a" * 2_000_000 + b"\"\n",
     ["line 2", "field larger than field limit", "1,000,000"]),
    ("csv-missing-cell", "rows.csv", b"topic,notes\nautumn,ok\nrain\n",
     ["line 3 has 1 cells", "missing: notes"]),
    ("csv-extra-cell", "rows.csv", b"topic\nautumn,extra\n", ["line 2 has 2 cells"]),
    ("csv-duplicate-header", "rows.csv", b"topic,topic\na,b\n",
     ["column name 'topic' appears twice", "line 1"]),
    ("csv-empty-header", "rows.csv", b"topic,,notes\na,b,c\n",
     ["column 2 of the header has no name", "line 1"]),
    ("csv-blank-header", "rows.csv", b"topic, \na,b\n", ["column 2 of the header has no name"]),
    ("csv-empty", "rows.csv", b"", ["no header row"]),
    ("csv-header-only", "rows.csv", b"topic\n", ["has no rows"]),
    ("csv-unclosed-quote", "rows.csv", b"topic\n\"never closed\n", ["line 2",
                                                                    "unexpected end of data"]),
    ("jsonl-deep-100k", "rows.jsonl", ('{"a": ' + DEEP + "}\n").encode(),
     ["line 1 nests more than 64 levels"]),
    ("evalset-deep-5000", "rows.evalset.json",
     ('{"eval_set_id": "x", "eval_cases": [' + "[" * 5000 + "]" * 5000 + "]}").encode(),
     ["rows.evalset.json nests more than 64 levels deep"]),
    ("jsonl-nan", "rows.jsonl", b'{"topic": "a"}\n{"topic": NaN}\n',
     ["line 2", "NaN is not a number JSON can hold"]),
    ("jsonl-infinity", "rows.jsonl", b'{"x": -Infinity}\n', ["line 1", "-Infinity"]),
    ("jsonl-not-object", "rows.jsonl", b'{"topic": "a"}\n[1, 2]\n',
     ["line 2 is not a JSON object"]),
    ("jsonl-broken", "rows.jsonl", b'{"topic": "a"\n', ["line 1 is not JSON"]),
    ("jsonl-latin-1", "rows.jsonl", '{"topic": "café"}\n'.encode("latin-1"), ["not UTF-8"]),
    ("txt-extension", "rows.txt", b"topic\nx\n", ["unsupported dataset file type '.txt'"]),
    ("directory", "rows_dir.csv", None, ["not a regular file"]),
]


@pytest.mark.parametrize("name, data, fragments", [c[1:] for c in BAD_FILES],
                         ids=[c[0] for c in BAD_FILES])
def test_a_bad_dataset_file_is_named_with_its_line(tmp_path, capsys, name, data, fragments):
    if data is None:
        (tmp_path / name).mkdir()
    else:
        (tmp_path / name).write_bytes(data)
    path = write_project(tmp_path, project(dataset={"train": {"path": name}}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and name in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err[:500])


HANDLED = [
    ("csv-200KB-cell", "rows.csv", b"topic\n\"" + b"a" * 200_000 + b"\"\nb\n", 2),
    ("csv-utf-8-bom", "rows.csv", "\ufefftopic\nautumn\n".encode(), 1),
    ("csv-empty-cells", "rows.csv", b"topic,notes\nautumn,\nrain,ok\n", 2),
    ("csv-crlf-and-blank-lines", "rows.csv", b"topic\r\n\r\nautumn\r\nrain\r\n", 2),
    ("csv-quoted-newline", "rows.csv", b"topic\n\"two\nlines\"\n", 1),
    ("jsonl-nested-60", "rows.jsonl", ('{"topic": "a", "x": ' + "[" * 60 + "]" * 60 + "}\n"
                                       ).encode(), 1),
    ("jsonl-brackets-in-strings", "rows.jsonl",
     json.dumps({"topic": "[" * 500 + "\\\"{"}).encode() + b"\n", 1),
]


@pytest.mark.parametrize("name, data, rows", [c[1:] for c in HANDLED],
                         ids=[c[0] for c in HANDLED])
def test_awkward_but_valid_files_are_read_whole(tmp_path, capsys, name, data, rows):
    (tmp_path / name).write_bytes(data)
    path = write_project(tmp_path, project(dataset={"train": {"path": name}}))
    assert main(["validate", str(path)]) == 0
    assert f"ok ({rows} training rows" in capsys.readouterr().out


def test_empty_csv_cells_stay_empty_not_the_text_null(tmp_path, store, script):
    from studio.projects.files import create_project_run, load_project

    (tmp_path / "rows.csv").write_bytes(b"topic,notes\nautumn,\nrain,ok\n")
    path = write_project(tmp_path, project(dataset={"train": {"path": "rows.csv"}}))
    run = create_project_run(store, *load_project(path), source=str(path))
    inputs = [e.data for e in store.examples(run.id)]
    assert inputs[0] == {"topic": "autumn", "notes": ""} and "null" not in json.dumps(inputs)


INLINE = [
    ("nan-in-yaml", [{"topic": float("nan")}], ["dataset.train[0].topic is nan"]),
    ("inf-nested", [{"topic": "a", "meta": {"w": [1.0, float("inf")]}}],
     ["dataset.train[0].meta.w[1] is inf"]),
    ("same-input-and-expected", None, ["input_column and expected_column are both 'topic'"]),
    ("missing-input-column", "missing", ["row 0 has no column 'subject'"]),
    ("empty-train", [], ["dataset.train is empty"]),
]


@pytest.mark.parametrize("rows, fragments", [c[1:] for c in INLINE],
                         ids=[c[0] for c in INLINE])
def test_inline_rows_that_cannot_run_are_refused(tmp_path, capsys, rows, fragments):
    dataset = {"train": rows if isinstance(rows, list) else [{"topic": "a"}]}
    if rows is None:
        dataset |= {"input_column": "topic", "expected_column": "topic"}
    elif rows == "missing":
        dataset |= {"input_column": "subject"}
    path = write_project(tmp_path, project(dataset=dataset))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


BROWSER = [
    ("latin-1", "café,crème\n".encode("latin-1"), ["rows.csv", "line 1 is not UTF-8"]),
    ("utf-16", "topic\nx\n".encode("utf-16"), ["rows.csv", "UTF-16"]),
]


@pytest.mark.parametrize("data, fragments", [c[1:] for c in BROWSER],
                         ids=[c[0] for c in BROWSER])
def test_the_browser_upload_refuses_other_encodings_instead_of_garbling(data, fragments):
    with pytest.raises(DatasetError) as refused:
        decode_text(data, "rows.csv")
    for fragment in fragments:
        assert fragment in str(refused.value)


@pytest.mark.parametrize("text, fmt, fragment", [
    ("topic,notes\na\n", "csv", "line 2 has 1 cells"),
    ("a,a\n1,2\n", "csv", "appears twice"),
    ('{"x": NaN}\n', "jsonl", "NaN"),
    ("[" * 100_000 + "]" * 100_000, "json", "nests more than 64 levels"),
    ('[{"x": Infinity}]', "json", "Infinity is not a number"),
    ('[{"x": 1e400}]', "json", "1e400 is beyond the range of a number"),  # not read as inf
    ('{"x": -1e999}\n', "jsonl", "line 1: -1e999 is beyond the range of a number"),
    ('[{"x": 1}', "json", "is not JSON"),
    ("[1, 2]", "json", "must be an array of objects"),
])
def test_pasted_rows_are_checked_like_files(text, fmt, fragment):
    with pytest.raises(DatasetError, match=fragment):
        parse_rows(text, fmt, source="pasted rows")


@pytest.mark.slow
def test_a_budget_that_cannot_pay_for_the_baseline_is_an_error_before_start(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": f"t{i}"}) + "\n" for i in range(100_000)))
    path = write_project(tmp_path, project(dataset={"train": {"path": "rows.jsonl"}},
                                           run={"max_metric_calls": 10}))
    db = f"sqlite:///{tmp_path}/b.db"
    assert main(["--db", db, "run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "run.max_metric_calls" in err and "baseline evaluation of 100,000" in err
    from studio.store import open_store

    assert open_store(db, cached=False).list_runs() == []  # nothing half-created
    assert Path(path).read_text()  # the project file is untouched
