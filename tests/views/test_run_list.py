"""Run lists: the waiting proposal, best, gain over the seed and the stop reason in words."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from studio.model.config import EvolutionConfig
from studio.model.records import Proposal, ProposalStatus, Run, RunStatus, StopReason
from studio.projects.inbox import RunSummary
from studio.views.tables import runs_frame, stop_reason_words, waiting_words

NOW = datetime(2026, 11, 24, 23, 0, tzinfo=UTC)


def run(run_id: str, status: RunStatus, reason: str | None = None) -> Run:
    return Run(id=run_id, name=run_id, status=status, stop_reason=reason,
               config=EvolutionConfig(), created_at=NOW)


def test_every_stop_reason_reads_as_words():
    assert stop_reason_words(StopReason.MAX_ITERATIONS) == "reached its iteration limit"
    assert stop_reason_words(StopReason.USER) == "stopped by a person"
    assert all(stop_reason_words(reason) != reason.value for reason in StopReason)
    assert stop_reason_words(None) == ""


def test_waiting_says_for_how_long():
    assert waiting_words(NOW - timedelta(minutes=25), NOW) == "waiting 25 min 00 s"
    assert waiting_words(None, NOW) == ""


def test_runs_frame_carries_waiting_best_gain_and_reason():
    waiting, done = run("a", RunStatus.RUNNING), run("b", RunStatus.COMPLETED, "patience")
    proposal = Proposal(id=1, run_id="a", iteration=1, parent_id=1, component="instruction",
                        text="x", status=ProposalStatus.PENDING,
                        created_at=NOW - timedelta(seconds=40))
    summaries = [RunSummary(waiting, 0.25, 0.25, proposal), RunSummary(done, 0.5, 0.75, None)]
    frame = runs_frame([waiting, done], summaries, now=NOW).set_index("id")
    assert frame.loc["a", "waiting"] == "waiting 40 s" and frame.loc["b", "waiting"] == ""
    assert frame.loc["b", "gain"] == 0.25 and frame.loc["a", "gain"] == 0.0
    assert frame.loc["b", "stop reason"] == "no gain for too many iterations"
    bare = runs_frame([done], now=NOW)  # no summaries: the columns stay, empty
    assert math.isnan(bare.loc[0, "best"]) and bare.loc[0, "waiting"] == ""
