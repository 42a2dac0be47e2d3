"""Hostile command lines (issue 20): ids beyond the store's integer range, exports into missing,
read-only or full folders, escape sequences in model text, a closed pipe, Ctrl-C twice. Each
through the real ``studio`` entry point: one clear line, no traceback, nothing stored lost."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from studio.cli import main
from studio.model.records import RunStatus
from studio.store import open_store
from tests import zygote
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "haiku_scripted.yaml"
HUGE = str(2**70)
INJECTED = ("bad \x1b]0;pwned\x07 \x1b[2J \x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ "
            "\u202eevil\u202c \x9b31m end")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run whose first trial's feedback carries terminal escape sequences (set
    through ``studio override``, the same printing and export path as a critic's feedback)."""
    folder = tmp_path_factory.mktemp("hostile_cli")
    db = f"sqlite:///{folder}/cli.db"
    out = io.StringIO()  # in this process: the run's engine is the same, without a new
    with contextlib.redirect_stdout(out):  # interpreter importing ADK and LiteLLM again
        assert main(["--db", db, "run", str(EXAMPLE), "--max-iterations", "1"]) == 0
    run_id = json.loads(out.getvalue())["run_id"]
    trial = open_store(db).trials(run_id)[0]
    assert main(["--db", db, "override", str(trial.id), "--feedback", INJECTED]) == 0
    return db, run_id, folder


def studio(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return zygote.run([sys.executable, "-m", "studio.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, **kwargs)


HUGE_IDS = [
    (["decide", HUGE, "accept"], "argument proposal_id"),
    (["override", HUGE, "--score", "1"], "argument trial_id"),
    (["trials", "r", "--offset", HUGE], "argument --offset"),
    (["trials", "r", "--candidate", HUGE], "argument --candidate"),
    (["trials", "r", "--limit", HUGE], "argument --limit"),
    (["runs", "--limit", HUGE], "argument --limit"),
    (["fork", "r", "--candidate", HUGE], "argument --candidate"),
    (["blame", "r", "--candidate", HUGE], "argument --candidate"),
    (["decide", "-3", "reject", "--reason", "x"], "argument proposal_id"),
    (["override", "0", "--score", "1"], "argument trial_id"),
]


@pytest.mark.parametrize("argv, argument", HUGE_IDS, ids=[" ".join(a[:3]) for a, _ in HUGE_IDS])
def test_ids_beyond_the_store_range_name_the_argument_and_its_range(capsys, argv, argument):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err and "OverflowError" not in err
    assert f"{argument}: " in err and "is not allowed: give a number" in err, err


@pytest.mark.slow
def test_the_largest_id_is_looked_up_and_not_found(finished, capsys):
    db, _, _ = finished
    assert main(["--db", db, "override", str(2**63 - 1), "--score", "1"]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_terminal_escapes_in_feedback_are_shown_inert_by_trials(finished):
    db, run_id, _ = finished
    shown = studio("--db", db, "trials", run_id)
    assert shown.returncode == 0 and "\x1b" not in shown.stdout and "\x9b" not in shown.stdout
    assert "\u202e" not in shown.stdout
    assert "bad \\x1b]0;pwned\\x07 \\x1b[2J \\x1b]8;;http://evil.example" in shown.stdout


def test_terminal_escapes_are_escaped_in_csv_and_exact_in_jsonl(finished):
    db, run_id, folder = finished
    assert main(["--db", db, "export", run_id, "--format", "csv",
                 "--out", str(folder / "esc")]) == 0
    text = (folder / "esc_trials.csv").read_text(encoding="utf-8")
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text
    rows = list(csv.DictReader(text.splitlines()))
    assert rows[0]["effective_feedback"].startswith("bad \\x1b]0;pwned\\x07")
    assert main(["--db", db, "export", run_id, "--out", str(folder / "esc.jsonl")]) == 0
    raw = (folder / "esc.jsonl").read_text(encoding="utf-8")
    assert "\x1b" not in raw and "\x9b" not in raw and "\u202e" not in raw
    trials = [json.loads(line) for line in raw.splitlines() if '"trial"' in line]
    assert trials[0]["effective_feedback"] == INJECTED  # the exact text, JSON-escaped


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_export_to_stdout_is_the_jsonl_stream(finished):
    db, run_id, _ = finished
    streamed = studio("--db", db, "export", run_id, "--out", "-")
    assert streamed.returncode == 0, streamed.stderr
    kinds = {json.loads(line)["type"] for line in streamed.stdout.splitlines()}
    assert {"candidate", "trial"} <= kinds
    refused = studio("--db", db, "export", run_id, "--format", "csv", "--out", "-")
    assert refused.returncode == 2 and "works with --format jsonl only" in refused.stderr


def test_export_into_a_missing_folder_names_it(finished, capsys):
    db, run_id, folder = finished
    assert main(["--db", db, "export", run_id, "--out", str(folder / "no" / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "does not exist: create it or choose another --out" in err and "no" in err


def test_export_path_with_spaces_and_a_newline_is_written(finished, capsys):
    db, run_id, folder = finished
    target = folder / "my run\nexport.jsonl"
    assert main(["--db", db, "export", run_id, "--out", str(target)]) == 0
    assert target.read_text(encoding="utf-8").count('"type": "trial"') > 0


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs (root only): too small for a run's CSV export."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_keeps_the_earlier_export_and_leaves_no_partial_file(finished, small_disk,
                                                                          capsys):
    db, run_id, _ = finished
    earlier = small_disk / "run.jsonl"
    earlier.write_text("the earlier export\n", encoding="utf-8")
    (small_disk / "filler").write_bytes(b"x" * (60 * 1024))
    assert main(["--db", db, "export", run_id, "--out", str(earlier)]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "No space left on device" in err and "run.jsonl" in err
    assert earlier.read_text(encoding="utf-8") == "the earlier export\n"
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "run.jsonl"]


def test_a_read_only_folder_is_named(finished, small_disk, capsys):
    db, run_id, _ = finished
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    assert main(["--db", db, "export", run_id, "--out", str(small_disk / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "Read-only file system" in err and "x.jsonl" in err


@pytest.mark.slow
def test_trials_into_a_closed_pipe_exits_quietly(finished):
    db, run_id, _ = finished
    shell = (f"{sys.executable} -m studio.cli --db {db} trials {run_id} | head -1; "
             "exit ${PIPESTATUS[0]}")
    done = subprocess.run(["bash", "-c", shell], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def _as_in_a_terminal() -> None:
    """Ctrl-C as a person's terminal delivers it. A job a shell starts in the background (CI
    started with ``&`` or ``nohup``) hands its children SIGINT ignored, and Python then raises
    no KeyboardInterrupt at all: the CLI would rightly keep running."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_ctrl_c_twice_leaves_the_run_stopped_and_resumable(tmp_path):
    db = f"sqlite:///{tmp_path}/ctrlc.db"
    process = subprocess.Popen([sys.executable, "-m", "studio.cli", "--db", db, "run",
                                str(EXAMPLE), "--review", "review", "--max-iterations", "3"],
                               cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_as_in_a_terminal)
    store = open_store(db)
    try:
        wait_until(lambda: any(p.status.value == "pending" for r in store.list_runs()
                               for p in store.proposals(r.id)), timeout=60,
                   message="the run waits at its gate")
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130 and "Traceback" not in err, err
    run = store.list_runs()[0]
    assert f"run {run.id} stopped; resume it with `studio resume {run.id}`" in err
    assert run.status is RunStatus.STOPPED and run.worker is None
    assert store.count_trials(run.id) > 0  # what was committed is kept


def test_unknown_run_ids_and_empty_strings_are_named(finished, capsys):
    db, _, _ = finished
    for argv in (["trials", "nope"], ["export", ""], ["proposals", uuid.uuid4().hex[:12]],
                 ["blame", "nope"], ["resume", "nope"]):
        code = main(["--db", db, *argv])
        err = capsys.readouterr().err
        assert code == 2 and "does not exist" in err and "Traceback" not in err, (argv, err)


MORE_ARGUMENTS = [
    (["override", "2", "--score", "nan"], "score nan is outside [0, 1]"),
    (["override", "2", "--score", "5"], "score 5.0 is outside [0, 1]"),
    (["override", "2"], "an override needs a score, a feedback text, or both"),
    (["align", "{run}", "--threshold", "nan"], "threshold: the pass threshold must be"),
    (["decide", "1", "reject"], "say why you reject it"),
    (["decide", "1", "edit", "--text", "x"], "proposal 1 was already decided by"),
    (["trials", "{run}", "--phase", "bogus"], "--phase: phase 'bogus' is not one of"),
    (["export", "{run}", "--out", "{folder}"], "is not a regular file (a folder or a device)"),
    (["resume", "{run}", "--max-metric-calls", "1"], "resuming would stop again at once"),
    (["blame", "{run}", "--candidate", "99"], "has no candidate #99"),
    (["fork", "{run}", "--candidate", "0", "--config", "max_iterations=-1"],
     "config.max_iterations"),
    (["fork", "{run}", "--candidate", "0", "--config", "nonsense"], "'nonsense' is not key=value"),
    (["fork", "{run}", "--candidate", "0", "--dataset", "/nonexistent.csv"],
     "/nonexistent.csv: file not found"),
    (["test", "{run}"], "has no test set"),
]


@pytest.mark.parametrize("argv, message", MORE_ARGUMENTS,
                         ids=[" ".join(a[:1] + a[2:4]) for a, _ in MORE_ARGUMENTS])
def test_more_hostile_arguments_are_one_clear_line(finished, capsys, argv, message):
    db, run_id, folder = finished
    before = open_store(db).count_trials(run_id)
    code = main(["--db", db, *[a.format(run=run_id, folder=folder) for a in argv]])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err
    assert open_store(db).count_trials(run_id) == before


@pytest.mark.slow
def test_a_run_name_with_escapes_is_listed_inert(finished, capsys):
    db, run_id, _ = finished
    name = "\x1b]0;owned\x07\x1b[2Jfork"
    forked = main(["--db", db, "fork", run_id, "--candidate", "0", "--queue", "nobody",
                   "--name", name])
    assert forked == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["--db", db, "runs"]) == 0
    listed = capsys.readouterr().out
    assert "\x1b" not in listed and "\\x1b]0;owned\\x07\\x1b[2Jfork" in listed
