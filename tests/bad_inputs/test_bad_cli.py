"""The ``studio`` command with bad arguments and projects that would fail at run time: each a
clear error (exit 2, no traceback) naming the argument or field, and nothing stored is lost."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from studio.cli import main
from tests import zygote
from tests.bad_inputs.conftest import project, write_project

ROOT = Path(__file__).resolve().parents[2]

BAD_ARGUMENTS = [
    (["run", "p.yaml", "--max-iterations", "-5"],
     "argument --max-iterations: -5 is not allowed: give a number at least 0"),
    (["run", "p.yaml", "--max-iterations", "lots"], "argument --max-iterations: 'lots' is not"),
    (["run", "p.yaml", "--max-metric-calls", "0"],
     "argument --max-metric-calls: 0 is not allowed: give a number at least 1"),
    (["run", "p.yaml", "--seed", "-1"], "argument --seed: -1 is not allowed"),
    (["runs", "--limit", "0"], "argument --limit: 0 is not allowed"),
    (["ui", "--port", "70000"], "argument --port: 70000 is not allowed: give a number between"),
    (["export", "abc", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
    (["decide", "one", "accept"], "argument proposal_id: 'one' is not a whole number"),
]


@pytest.mark.parametrize("argv, message", BAD_ARGUMENTS, ids=[" ".join(a[:3]) for a, _ in
                                                              BAD_ARGUMENTS])
def test_bad_arguments_are_named_without_a_traceback(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and message in err and "Traceback" not in err, err


def test_the_real_command_reports_a_negative_iteration_count_plainly(tmp_path):
    path = write_project(tmp_path, project())
    done = zygote.run([sys.executable, "-m", "studio.cli", "run", str(path),
                           "--max-iterations", "-5"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--max-iterations: -5 is not allowed" in done.stderr


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A small finished run in its own database: ``(db_url, run_id)``."""
    folder = tmp_path_factory.mktemp("cli")
    db = f"sqlite:///{folder}/cli.db"
    path = write_project(folder, project(run={"max_iterations": 0}))
    with _quiet():
        assert main(["--db", db, "run", str(path)]) == 0
    from studio.store import open_store

    return db, open_store(db, cached=False).list_runs()[0].id


class _quiet:
    def __enter__(self):
        import contextlib
        import io

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        self._stack.enter_context(contextlib.redirect_stderr(io.StringIO()))

    def __exit__(self, *exc):
        self._stack.close()


@pytest.mark.parametrize("fmt, out, fragment", [
    ("jsonl", "/missing/dir/x.jsonl", "folder '/missing/dir' does not exist"),
    ("csv", "/missing/dir/x", "folder '/missing/dir' does not exist"),
    ("csv", "/dev/null", "'/dev/null' is not a regular file"),
    ("jsonl", "/dev/null", "'/dev/null' is not a regular file"),
    ("jsonl", "{tmp}", "is not a regular file"),
])
def test_export_refuses_targets_that_are_not_regular_files(finished_run, tmp_path, capsys, fmt,
                                                           out, fragment):
    db, run_id = finished_run
    out = out.replace("{tmp}", str(tmp_path))
    assert main(["--db", db, "export", run_id, "--format", fmt, "--out", out]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and fragment in err, err
    assert main(["--db", db, "export", run_id, "--out", str(tmp_path / "ok.jsonl")]) == 0
    assert (tmp_path / "ok.jsonl").stat().st_size > 0  # the run is still whole


def test_export_writes_strict_json(finished_run, tmp_path):
    db, run_id = finished_run
    with _quiet():
        assert main(["--db", db, "export", run_id, "--out", str(tmp_path / "r.jsonl")]) == 0
    text = (tmp_path / "r.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
    rows = [json.loads(line, parse_constant=lambda c: pytest.fail(c)) for line in
            text.splitlines()]
    assert any(row["type"] == "trial" for row in rows)


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_rejecting_without_a_reason_is_refused_as_in_the_studio(finished_run, capsys, reason):
    db, _ = finished_run
    argv = ["--db", db, "decide", "1", "reject"] + ([] if reason is None else
                                                   ["--reason", reason])
    assert main(argv) == 2
    assert "reason: say why you reject it" in capsys.readouterr().err


CHECKED_BEFORE_RUN = [
    ("custom-schema-string", {"critic": {"schema": "custom", "output_schema": {"type": "string"}}},
     ["critic.output_schema", "must be {type: object"]),
    ("custom-schema-missing", {"critic": {"schema": "custom"}},
     ["critic.output_schema", "needs an output_schema"]),
    ("custom-score-text", {"critic": {"schema": "custom", "output_schema": {
        "type": "object", "properties": {"score": {"type": "string"}}}}},
     ["critic.output_schema.properties.score", "type number"]),
    ("evaluator-missing", {"critic": {"type": "evaluator"}},
     ["critic", "needs an 'evaluator:' config"]),
    ("evaluator-unknown", {"critic": {"type": "evaluator", "evaluator": {
        "evaluator": "no_such_metric"}}}, ["no_such_metric"]),
    ("evaluator-two-kinds", {"critic": {"type": "evaluator", "evaluator": {
        "evaluator": "exact_match", "agent_as_judge": {}}}}, ["give exactly one of"]),
    ("agent-model-unknown", {"agent": {"model": "nosuchprovider/x"}}, ["nosuchprovider"]),
    ("reflection-model-unknown", {"reflection": {"model": "local/nonexistent"}},
     ["nonexistent"]),
    ("component-unknown", {"components": ["instruction", "warp_drive"]}, ["warp_drive"]),
    ("val-fields-differ", {"dataset": {"train": [{"topic": "a"}],
                                       "val": [{"subject": "b"}]}}, ["valset[0]", "extra"]),
    ("val-fraction-all", {"dataset": {"train": [{"topic": "a"}],
                                      "split": {"val_fraction": 0.9}}}, ["leaves no training"]),
    ("budget-below-baseline", {"run": {"max_metric_calls": 1}},
     ["run.max_metric_calls", "at least 2"]),
]


@pytest.mark.parametrize("sections, fragments", [c[1:] for c in CHECKED_BEFORE_RUN],
                         ids=[c[0] for c in CHECKED_BEFORE_RUN])
def test_validate_runs_every_check_that_run_makes(tmp_path, capsys, sections, fragments):
    path = write_project(tmp_path, project(**sections))
    assert main(["validate", str(path)]) == 2
    validate_err = capsys.readouterr().err
    db = f"sqlite:///{tmp_path}/v.db"
    assert main(["--db", db, "run", str(path)]) == 2
    run_err = capsys.readouterr().err
    assert validate_err == run_err and str(path) in run_err and "Traceback" not in run_err
    for fragment in fragments:
        assert fragment in run_err, (fragment, run_err)
    from studio.store import open_store

    assert open_store(db, cached=False).list_runs() == []  # refused before anything is stored


def test_a_run_that_cannot_start_is_marked_failed_with_the_reason(store):
    from studio.engine.hosting.build import create_run
    from studio.engine.hosting.dispatch import launch
    from studio.model.records import RunSpec, RunStatus

    spec = RunSpec(agent_ref="no_such_module_for_agents:agent")
    run = create_run(store, spec=spec, trainset=[{"topic": "a"}])
    assert store.get_run(run.id).status is RunStatus.PENDING
    with pytest.raises(Exception, match="no_such_module_for_agents"):
        launch(store, run.id)
    failed = store.get_run(run.id)
    assert failed.status is RunStatus.FAILED and failed.stop_reason == "not_started"
    assert "could not start" in failed.error and "no_such_module_for_agents" in failed.error
