"""The export the studio's download buttons and ``studio export`` share: proposals with their
decisions, the person's reasons and the rule's verdicts, trials with corrections, and the run's
own numbers, streamed through a spooled file."""

from __future__ import annotations

import csv
import io
import json

import pytest

from studio.engine import decide, override
from studio.model.errors import NotFoundError
from studio.projects.export import Download, download_lines, export_run, spooled_download
from tests.engine.conftest import Runner
from tests.helpers import demo_spec, trainset

REASON = "Too florid: keep the lines plain"


@pytest.fixture
def reviewed(store):
    """A first run (so the second's database ids are not its numbers), then a review run: its
    first proposal rejected with a reason, its second accepted, a trial corrected."""
    runner = Runner(store)
    runner.run(demo_spec(), trainset(2), max_iterations=1)
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=2, review="review")
    seen: set[int] = set()
    first = runner.wait_for_pending(run_id, seen)
    decide(first.id, "reject", reason=REASON, author="ana", store=store)
    second = runner.wait_for_pending(run_id, seen)
    decide(second.id, "accept", author="ana", store=store)
    handle.wait(30)
    trial = store.trials(run_id)[1]
    override(trial.id, score=0.2, feedback="weak image", corrected_output="Fog on the bay.",
             author="ana", store=store)
    return run_id, first, trial


def lines_of(spool) -> list[dict]:
    with spool:
        return [json.loads(line) for line in spool.read().decode().splitlines()]


def test_the_jsonl_download_has_the_decisions_reasons_verdicts_and_corrections(store, reviewed):
    run_id, rejected, corrected = reviewed
    rows = lines_of(spooled_download(store, run_id, Download.JSONL))
    proposals = [r for r in rows if r["type"] == "proposal"]
    assert [(p["number"], p["decision"], p["automatic"]) for p in proposals] == [
        (1, "reject", False), (2, "accept", False)]
    first = proposals[0]
    assert first["proposal_id"] == rejected.id and rejected.id > 1  # the first run's came first
    assert first["reason"] == REASON and first["decided_by"] == "ana"
    assert first["at_decision_rule_accepts"] in (True, False)  # the rule's verdict, kept
    trials = [r for r in rows if r["type"] == "trial"]
    assert [t["number"] for t in trials] == list(range(1, len(trials) + 1))
    fixed = next(t for t in trials if t["trial_id"] == corrected.id)
    assert (fixed["number"], fixed["effective_score"], fixed["effective_feedback"],
            fixed["corrected_output"], fixed["override_author"]) == (
        2, 0.2, "weak image", "Fog on the bay.", "ana")
    assert fixed["overridden_at"] and fixed["judge_score"] == corrected.score
    assert {t["candidate"] for t in trials} >= {0, 1}
    assert all(t["proposal_number"] in (1, 2) for t in trials if t["phase"] == "child")


def test_the_download_is_the_cli_export_line_for_line(store, reviewed, tmp_path):
    run_id = reviewed[0]
    [path] = export_run(store, run_id, "jsonl", tmp_path / "run.jsonl")
    with spooled_download(store, run_id, Download.JSONL) as spool:
        assert spool.read() == path.read_bytes()


def test_the_trials_csv_download_has_one_row_per_trial_with_its_correction(store, reviewed):
    run_id, _, corrected = reviewed
    with spooled_download(store, run_id, Download.TRIALS_CSV) as spool:
        rows = list(csv.DictReader(io.StringIO(spool.read().decode())))
    assert len(rows) == store.count_trials(run_id)
    fixed = next(r for r in rows if r["trial_id"] == str(corrected.id))
    assert (fixed["number"], fixed["corrected_output"], fixed["effective_score"]) == (
        "2", "Fog on the bay.", "0.2")
    assert Download.TRIALS_CSV.file_name(run_id) == f"run_{run_id}_trials.csv"


def test_a_download_of_an_unknown_run_says_so_before_any_line(store):
    with pytest.raises(NotFoundError, match="nope"):
        download_lines(store, "nope", Download.JSONL)


def test_trial_numbers_count_each_run_from_one(store, reviewed):
    run_id, _, corrected = reviewed
    first_run = next(r.id for r in store.list_runs() if r.id != run_id)
    ids = [t.id for t in store.trials(run_id)]
    assert store.trial_numbers(run_id, ids) == {tid: n for n, tid in enumerate(ids, start=1)}
    assert store.trial_numbers(first_run, ids) == {}  # another run's trials have none there
    assert store.trial_numbers(first_run, ids[:2]) == {}  # (a few: counted, not windowed)
    assert store.trial_numbers(run_id, ids[-2:]) == {ids[-2]: len(ids) - 1, ids[-1]: len(ids)}
    assert store.trial_numbers(run_id, []) == {}
    assert store.trial_numbers(run_id, [corrected.id]) == {corrected.id: 2}
