"""Numbers people can follow: the status a person sees (paused at once, a completed run's stop
reason by name), the run a new session opens, and per-run proposal and trial numbers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from studio.engine.people.history import numbered, proposal_numbers
from studio.model.config import EvolutionConfig
from studio.model.records import (
    Proposal,
    ProposalStatus,
    Run,
    RunRequest,
    RunStatus,
    Split,
    StopReason,
    Trial,
    TrialPhase,
)
from studio.projects.inbox import run_to_open
from studio.views.tables import review_frame, runs_frame, status_line, trial_frame

NOW = datetime(2026, 11, 24, 23, 0, tzinfo=UTC)


def run(run_id: str, status: RunStatus = RunStatus.RUNNING, *, minutes_ago: int = 0,
        **fields) -> Run:
    return Run(id=run_id, name=run_id, status=status, config=EvolutionConfig(),
               created_at=NOW - timedelta(minutes=minutes_ago), **fields)


def proposal(pid: int, run_id: str = "r", *, minutes_ago: int = 0) -> Proposal:
    return Proposal(id=pid, run_id=run_id, iteration=1, parent_id=1, component="instruction",
                    text="t", status=ProposalStatus.PENDING,
                    created_at=NOW - timedelta(minutes=minutes_ago))


def test_a_completed_run_names_its_stop_reason_in_the_words_the_cli_prints():
    done = run("a", RunStatus.COMPLETED, stop_reason=StopReason.MAX_ITERATIONS)
    assert status_line(done) == "completed: finished, reached its iteration limit"
    assert StopReason.PATIENCE.words == "no gain for too many iterations"
    assert status_line(run("b", RunStatus.COMPLETED)) == (
        "completed: finished: a stop condition was reached")  # an older run without a reason
    assert status_line(run("c", RunStatus.STOPPED, stop_reason=StopReason.USER)).startswith(
        "stopped: stopped by a person")


def test_pause_shows_paused_at_once_in_the_status_line_and_the_run_list():
    asked = run("a", control=RunRequest.PAUSE)
    assert asked.status is RunStatus.RUNNING and asked.shown_status is RunStatus.PAUSED
    assert status_line(asked).startswith("paused: holds before its next model call")
    held = run("b", RunStatus.PAUSED, control=RunRequest.PAUSE)
    assert status_line(held) == "paused: resume it to continue"
    assert run("c").shown_status is RunStatus.RUNNING
    stopping = run("d", RunStatus.COMPLETED, control=RunRequest.PAUSE)  # too late to pause
    assert stopping.shown_status is RunStatus.COMPLETED
    frame = runs_frame([asked, run("c")]).set_index("id")
    assert frame.loc["a", "status"] == "paused" and frame.loc["c", "status"] == "running"


def test_a_new_session_opens_the_run_that_has_waited_longest_for_the_person():
    runs = [run("new", minutes_ago=1), run("old", minutes_ago=90), run("mid", minutes_ago=30)]
    waiting = {"new": proposal(9, "new", minutes_ago=1), "mid": proposal(5, "mid",
                                                                         minutes_ago=25)}
    assert run_to_open(runs, waiting) == "mid"
    assert run_to_open(runs, {}) == "new"  # nothing waits: the newest run
    assert run_to_open([], {}) is None


def test_proposals_are_numbered_in_the_order_their_run_made_them():
    numbers = proposal_numbers([proposal(31), proposal(26), proposal(40)])
    assert numbers == {26: 1, 31: 2, 40: 3}
    assert numbered("Proposal", numbers[31], 31) == "Proposal 2 (id 31)"
    assert numbered("Trial", None, 481) == "Trial #481"  # no number known: the id alone


def test_the_trials_table_shows_the_runs_number_beside_the_database_id():
    trials = [Trial(id=tid, run_id="r", candidate_id=7, example_id=1, example_index=0,
                    split=Split.TRAIN, iteration=0, phase=TrialPhase.VALSET, input_text="x",
                    output="y", score=0.5) for tid in (480, 481)]
    frame = trial_frame(trials, {7: 0}, {480: 11, 481: 12})
    assert frame["number"].tolist() == [11, 12] and frame["id"].tolist() == [480, 481]
    assert frame["candidate"].tolist() == [0, 0]
    review = review_frame(trials, {7: 0}, {480: 11, 481: 12})  # Review's "Correct many"
    assert review["number"].tolist() == [11, 12] and review["id"].tolist() == [480, 481]
