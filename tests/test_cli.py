"""The `studio` command: headless runs into the shared store, export, decisions."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from studio.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "haiku_scripted.yaml"


@pytest.mark.slow
def test_run_then_export(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["--db", db, "run", str(EXAMPLE), "--max-iterations", "2"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["status"] == "completed" and summary["final_score"] > summary["original_score"]
    assert "iteration 2/2" in err
    assert "run finished: max_iterations (reached its iteration limit)" in err
    run_id = summary["run_id"]

    assert main(["--db", db, "export", run_id, "--format", "jsonl",
                 "--out", str(tmp_path / "run.jsonl")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert {line["type"] for line in lines} == {"candidate", "provenance", "proposal", "trial"}
    assert sum(line["type"] == "trial" for line in lines) == summary["metric_calls"]
    assert [line["iteration"] for line in lines if line["type"] == "proposal"] == [1, 2]

    assert main(["--db", db, "export", run_id, "--format", "csv",
                 "--out", str(tmp_path / "run")]) == 0
    with open(tmp_path / "run_trials.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == summary["metric_calls"] and "effective_score" in rows[0]

    assert main(["--db", db, "runs"]) == 0
    [listed] = [line for line in capsys.readouterr().out.splitlines() if run_id in line]
    assert "completed" in listed and "reached its iteration limit" in listed


@pytest.mark.slow
def test_run_waits_through_a_commit_lost_to_an_outage_and_completes(tmp_path, capsys,
                                                                   monkeypatch):
    """A connection lost in the middle of a commit stops the run (the commit may have landed;
    here it did); `studio run` resumes it once the database answers and ends completed, with
    no pair judged twice."""
    from studio.model.errors import StoreUnavailableError
    from studio.store import Store, open_store

    real_add_trials, calls = Store.add_trials, []

    def commit_then_lose_the_reply(self, trials):
        stored = real_add_trials(self, trials)
        calls.append(len(trials))
        if len(calls) == 3:
            raise StoreUnavailableError("database x: server closed the connection unexpectedly")
        return stored

    monkeypatch.setattr(Store, "add_trials", commit_then_lose_the_reply)
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["--db", db, "run", str(EXAMPLE), "--max-iterations", "2"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["status"] == "completed", err
    assert "resuming it when it answers" in err and "resumed from its last committed trial" in err
    trials = open_store(db, cached=False).trials(summary["run_id"], with_trace=False)
    pairs = [(t.candidate_id, t.example_id) for t in trials]
    assert len(calls) > 3 and len(pairs) == len(set(pairs)) == summary["metric_calls"]


@pytest.mark.slow
def test_override_and_decide_from_the_command_line(tmp_path, capsys, store):
    from studio.store import open_store

    db = f"sqlite:///{tmp_path}/cli2.db"
    main(["--db", db, "run", str(EXAMPLE), "--max-iterations", "1"])
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    trial = open_store(db).trials(run_id)[0]
    assert main(["--db", db, "override", str(trial.id), "--score", "0.9", "--feedback",
                 "fine"]) == 0
    assert "judge said" in capsys.readouterr().out
    assert main(["--db", db, "decide", "1", "accept"]) == 2
    assert "already decided by the acceptance rule" in capsys.readouterr().err


def test_errors_are_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nagent: {instruction: hi}\ndataset: {train: []}\n")
    assert main(["--db", f"sqlite:///{tmp_path}/e.db", "run", str(bad)]) == 2
    assert "bad.yaml: dataset.train: dataset.train is empty" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert main(["--db", f"sqlite:///{tmp_path}/e.db", "export", "nope"]) == 2
    assert "run 'nope' does not exist" in capsys.readouterr().err


def test_schema_and_validate(capsys):
    assert main(["schema"]) == 0
    assert "properties" in json.loads(capsys.readouterr().out)
    assert main(["validate", str(EXAMPLE)]) == 0
    assert "ok (5 training rows, 3 validation rows)" in capsys.readouterr().out


@pytest.mark.slow
def test_proposals_and_trials_show_what_waits_and_what_was_corrected(tmp_path, capsys):
    from studio.store import open_store

    db = f"sqlite:///{tmp_path}/cli3.db"
    main(["--db", db, "run", str(EXAMPLE), "--max-iterations", "2"])
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    child = open_store(db).trials(run_id, phase="child")[0]
    assert main(["--db", db, "override", str(child.id), "--score", "0.05", "--feedback",
                 "human: too long"]) == 0
    capsys.readouterr()

    assert main(["--db", db, "proposals", run_id, "--json"]) == 0
    proposals = json.loads(capsys.readouterr().out)
    assert len(proposals) == 2 and {p["iteration"] for p in proposals} == {1, 2}
    assert all(p["decided_by"] == "rule" and p["decided_at"] for p in proposals
               if p["status"] in ("accepted", "rejected"))
    assert main(["--db", db, "proposals", run_id, "--pending"]) == 0
    assert "no proposal waits for a decision" in capsys.readouterr().out

    assert main(["--db", db, "trials", run_id, "--phase", "child", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert all(r["phase"] == "child" for r in rows.values())
    corrected = rows[child.id]
    assert corrected["overridden"] and corrected["effective_score"] == 0.05
    assert corrected["feedback"] == "human: too long" and corrected["score"] == child.score
    assert main(["--db", db, "trials", run_id]) == 0
    assert "corrected" in capsys.readouterr().out

    assert main(["--db", db, "trials", run_id, "--json"]) == 0
    everything = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in everything] == sorted(r["id"] for r in everything)
    assert main(["--db", db, "trials", run_id, "--offset", "3", "--limit", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == everything[3:7]
    seed = everything[0]["candidate"]
    assert seed == 0 and everything[0]["candidate_id"] == child.candidate_id - 1
    assert main(["--db", db, "trials", run_id, "--candidate", str(seed), "--limit", "2"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 2 and all(f"cand #{seed} " in line for line in listed)
    assert main(["--db", db, "trials", run_id, "--offset", "999", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    with pytest.raises(SystemExit):
        main(["--db", db, "trials", run_id, "--limit", "0"])
    assert "--limit: 0 is not allowed: give a number at least 1" in capsys.readouterr().err

    assert main(["--db", db, "trials", run_id, "--phase", "kid"]) == 2
    assert "phase 'kid' is not one of" in capsys.readouterr().err
    assert main(["--db", db, "proposals", "no-such-run"]) == 2
    assert "no-such-run" in capsys.readouterr().err


def _two_runs(db: str, capsys) -> str:
    """Two runs of the example in one database; the second's id."""
    for _ in range(2):
        assert main(["--db", db, "run", str(EXAMPLE), "--max-iterations", "2"]) == 0
        run_id = json.loads(capsys.readouterr().out)["run_id"]
    return run_id


@pytest.mark.slow
def test_trials_and_proposals_speak_the_runs_own_numbers_beside_the_database_ids(tmp_path,
                                                                                  capsys):
    """A second run's first proposal is "1 (id 3)", its trials count from 1, its candidates are
    #0, #1 … whatever the database holds; a filtered listing keeps each trial's number."""
    db = f"sqlite:///{tmp_path}/numbers.db"
    second = _two_runs(db, capsys)

    assert main(["--db", db, "proposals", second, "--json"]) == 0
    proposals = json.loads(capsys.readouterr().out)
    assert [p["number"] for p in proposals] == [1, 2]
    assert [p["id"] for p in proposals] == [3, 4]  # the first run made ids 1 and 2
    assert main(["--db", db, "proposals", second]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].lstrip().startswith("1 (id 3)") and lines[1].lstrip().startswith("2 (id 4)")

    assert main(["--db", db, "trials", second, "--json"]) == 0
    trials = json.loads(capsys.readouterr().out)
    assert [t["number"] for t in trials] == list(range(1, len(trials) + 1))
    assert trials[0]["id"] > len(trials)  # the database id counts the first run's trials too
    assert {t["candidate"] for t in trials} <= {0, 1, 2}
    assert all(t["candidate_id"] > 2 for t in trials)  # ids: the first run has 1..3 at most
    child = next(t for t in trials if t["phase"] == "child")
    assert main(["--db", db, "trials", second, "--candidate", str(child["candidate"]),
                 "--json"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert child["number"] in [t["number"] for t in only]
    assert all(t == next(u for u in trials if u["id"] == t["id"]) for t in only)
    assert main(["--db", db, "trials", second, "--offset", "2", "--limit", "1"]) == 0
    assert capsys.readouterr().out.lstrip().startswith(f"3 (id {trials[2]['id']})")
    assert main(["--db", db, "trials", second, "--candidate", "9"]) == 2
    assert "the run has no candidate #9 (it has: #0" in capsys.readouterr().err


@pytest.mark.slow
def test_the_export_carries_decisions_reasons_and_the_runs_numbers(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/export.db"
    second = _two_runs(db, capsys)
    assert main(["--db", db, "export", second, "--out", "-"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    proposals = [line for line in lines if line["type"] == "proposal"]
    assert [p["number"] for p in proposals] == [1, 2] and proposals[0]["proposal_id"] == 3
    assert all(p["decision"] in ("accept", "reject") and p["automatic"] is True
               and p["decided_by"] == "rule" and p["reason"] for p in proposals)
    trials = [line for line in lines if line["type"] == "trial"]
    assert [t["number"] for t in trials] == list(range(1, len(trials) + 1))
    children = [t for t in trials if t["phase"] == "child"]
    assert children and {t["proposal_number"] for t in children} <= {1, 2}
    assert all(t["candidate"] is not None and t["candidate_id"] > 2 for t in trials)


@pytest.mark.slow
def test_trials_are_listed_without_reading_the_run_at_once(tmp_path, capsys, monkeypatch):
    from studio.store import Store, open_store

    db = f"sqlite:///{tmp_path}/cli4.db"
    main(["--db", db, "run", str(EXAMPLE), "--max-iterations", "1"])
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    expected = open_store(db).trials(run_id, with_trace=False)
    monkeypatch.setattr(Store, "trials", lambda *a, **k: pytest.fail(
        "studio trials read every trial at once"))
    assert main(["--db", db, "trials", run_id, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [t.id for t in expected] and len(rows) > 3
    assert [r["effective_score"] for r in rows] == [t.effective_score for t in expected]


@pytest.mark.slow
def test_queue_then_a_worker_runs_it_and_exits_after_max_runs(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["--db", db, "workers"]) == 0
    assert "no live worker" in capsys.readouterr().out
    assert main(["--db", db, "queue", str(EXAMPLE), "--max-iterations", "1",
                 "--queue", "cli"]) == 0
    out, err = capsys.readouterr()
    run_id = out.strip()
    assert f"run {run_id} queued in 'cli'" in err and "0 live workers" in err
    assert main(["--db", db, "worker", "--queue", "cli", "--max-runs", "1",
                 "--poll-seconds", "0.1"]) == 0
    err = capsys.readouterr().err
    assert f"run {run_id} claimed (new)" in err and "exits after 1 run" in err
    assert main(["--db", db, "runs"]) == 0
    assert f"{run_id}  completed" in capsys.readouterr().out


def test_worker_options_are_checked(capsys):
    import pytest

    for bad in (["--max-runs", "0"], ["--poll-seconds", "0"], ["--poll-seconds", "nan"]):
        with pytest.raises(SystemExit):
            main(["worker", *bad])
        assert "not allowed" in capsys.readouterr().err


def test_every_command_of_the_parser_runs_a_function_of_the_command_table():
    import argparse

    from studio.cli.commands import COMMANDS, load, parser

    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(COMMANDS)
    for name, reference in COMMANDS.items():
        assert callable(load(reference)), name
