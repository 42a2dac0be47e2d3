"""Project files that are hostile or broken, through the upload the Projects page uses and the
command line's ``studio validate``: each refused with the file, the line or field, and the problem;
the project already stored is untouched."""

from __future__ import annotations

import pytest
import yaml

from studio.cli import main
from studio.model.errors import ConfigError
from studio.projects.workspace import import_upload
from tests.bad_inputs.conftest import BASE, project, write_project

ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n"
    for i in range(8))


def _yaml(**sections) -> bytes:
    return yaml.safe_dump(project(**sections)).encode()


BAD_PROJECT_FILES = [
    # (id, file bytes, fragments the error must contain)
    ("alias-bomb", ALIAS_BOMB.encode(), ["aliases", "line 2"]),
    ("alias-in-project", (yaml.safe_dump(BASE) + "description: *x\n").encode(),
     ["aliases"]),
    ("nested-5000", (b"name: x\nagent: " + b"[" * 5000 + b"]" * 5000 + b"\n"),
     ["nested more than 64", "line 2"]),
    ("nested-mapping-200", ("name: x\n" + "".join(" " * i + "k:\n" for i in range(200))
                            ).encode(), ["nested more than 64"]),
    ("latin-1", yaml.safe_dump(project(description="café crème"), allow_unicode=True)
     .encode("latin-1"), ["not UTF-8", "line", "0xe9"]),
    ("utf-16", yaml.safe_dump(project()).encode("utf-16"), ["UTF-16", "save it as UTF-8"]),
    ("binary", b"\x00\xff\xfe\x00garbage", ["not UTF-8"]),
    ("3-MB", b"name: x\ndescription: '" + b"a" * 3_000_000 + b"'\n", ["limit is 2,000,000"]),
    ("not-a-mapping", b"- just\n- a list\n", ["must be a YAML mapping"]),
    ("empty", b"", ["must be a YAML mapping"]),
    ("syntax", b"name: [unclosed\nagent: {}\n", ["does not parse", "line"]),
    ("unknown-field", _yaml(agent={"instructoin": "x"}), ["agent.instructoin",
                                                          "did you mean 'instruction'"]),
    ("timeout-inf", _yaml(run={"call_timeout_seconds": float("inf")}),
     ["run.call_timeout_seconds", "finite"]),
    ("timeout-nan", _yaml(run={"call_timeout_seconds": float("nan")}),
     ["run.call_timeout_seconds", "finite"]),
    ("iterations-negative", _yaml(run={"max_iterations": -5}),
     ["run.max_iterations", "greater than or equal to 0"]),
    ("budget-zero", _yaml(run={"max_metric_calls": 0}), ["run.max_metric_calls"]),
    ("critic-schema-name", _yaml(critic={"schema": "fancy"}), ["critic.schema"]),
    ("review-mode", _yaml(run={"review": "sometimes"}), ["review 'sometimes' is not one of"]),
    ("no-train", _yaml(dataset={"val": [{"topic": "x"}]}), ["dataset.train is required"]),
    ("duplicate-top-key", (yaml.safe_dump(BASE) + "name: second\n").encode(),
     ["key 'name' appears twice", "line"]),
    ("duplicate-nested-key", b"name: x\nagent:\n  instruction: a\n  instruction: b\n"
                             b"dataset: {train: [{t: 1}]}\n",
     ["key 'instruction' appears twice", "line 4"]),
    ("name-missing", yaml.safe_dump({k: v for k, v in BASE.items() if k != "name"}).encode(),
     ["name: Field required"]),
]


@pytest.mark.parametrize("data, fragments", [c[1:] for c in BAD_PROJECT_FILES],
                         ids=[c[0] for c in BAD_PROJECT_FILES])
def test_an_uploaded_bad_project_is_refused_by_name_and_nothing_saved_changes(
        store, saved, data, fragments):
    with pytest.raises(ConfigError) as refused:
        import_upload(store, data, "upload.yaml")
    message = str(refused.value)
    assert "upload.yaml" in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert saved()


@pytest.mark.parametrize("data, fragments", [c[1:] for c in BAD_PROJECT_FILES[:8]],
                         ids=[c[0] for c in BAD_PROJECT_FILES[:8]])
def test_the_command_line_refuses_the_same_files_with_the_path(tmp_path, capsys, data,
                                                               fragments):
    path = tmp_path / "bad.yaml"
    path.write_bytes(data)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.mark.slow
def test_a_large_but_allowed_project_imports(store):
    rows = [{"topic": f"topic {i}", "notes": "x" * 200} for i in range(2000)]
    record = import_upload(store, _yaml(dataset={"train": rows}), "big.yaml")
    assert record.name == "bad-input" and "topic 1999" in record.yaml


def test_validate_passes_a_good_project(tmp_path, capsys):
    path = write_project(tmp_path, project())
    assert main(["validate", str(path)]) == 0
    assert "ok (2 training rows" in capsys.readouterr().out
