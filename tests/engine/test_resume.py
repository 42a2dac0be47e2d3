"""Crash safety: SIGKILL a run mid-way, resume it, lose nothing and re-score nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from studio.engine import decide, load_result, override
from studio.engine.hosting import worker
from studio.engine.hosting.worker import get_manager
from studio.model.records import EventKind, ProposalStatus, RunStatus
from tests import zygote
from tests.helpers import HEARTBEAT_SECONDS, wait_until

ROOT = Path(__file__).resolve().parents[2]
STALE = "1.5"


@pytest.fixture(autouse=True)
def fast_heartbeats(monkeypatch):
    monkeypatch.setattr(worker, "STALE_AFTER_SECONDS", float(STALE))


def start_worker(url: str, review: str) -> tuple[zygote.Process, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STUDIO_STALE_AFTER_SECONDS": STALE,
           "STUDIO_HEARTBEAT_SECONDS": HEARTBEAT_SECONDS}
    process = zygote.popen([sys.executable, "-m", "tests.engine.resume_worker", url, review],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(10)


def counts(store, run_id):
    return (store.count_trials(run_id), len(store.overrides(run_id)),
            len(store.decisions(run_id)), len(store.proposals(run_id)))


@pytest.mark.slow
def test_resume_after_sigkill_loses_nothing_and_rescores_nothing(store):
    process, run_id = start_worker(store.url, "auto")
    try:
        wait_until(lambda: len(store.decisions(run_id)) >= 2 and store.count_trials(run_id) >= 14,
                   timeout=60)
        first_trial = store.trials(run_id)[0]
        override(first_trial.id, score=1.0, feedback="human: fine", author="ana", store=store)
        before_trials = {t.id: (t.candidate_id, t.example_id, t.score)
                         for t in store.trials(run_id)}
        before = counts(store, run_id)
    finally:
        kill(process)
    manager = get_manager(store)
    wait_until(lambda: run_id in manager.recover_orphans(), timeout=30,
               message="the killed worker's run is found orphaned")
    assert store.get_run(run_id).status is RunStatus.ORPHANED
    assert manager.resume(run_id).wait(60) == "max_iterations"
    after_trials = store.trials(run_id)
    pairs = [(t.candidate_id, t.example_id) for t in after_trials]
    assert len(pairs) == len(set(pairs)), "a committed (candidate, example) was scored again"
    kept = {t.id: (t.candidate_id, t.example_id, t.score) for t in after_trials
            if t.id in before_trials}
    assert kept == before_trials
    after = counts(store, run_id)
    assert all(a >= b for a, b in zip(after, before, strict=True)), (before, after)
    assert store.get_trial(first_trial.id).effective_score == 1.0
    result = load_result(store, run_id)
    assert result.status == "completed"
    assert {row["iteration"] for row in result.iteration_history} == {1, 2, 3, 4, 5}


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_a_pending_proposal_survives_a_restart(store):
    process, run_id = start_worker(store.url, "review")
    try:
        wait_until(lambda: bool(store.proposals(run_id, status=ProposalStatus.PENDING)),
                   timeout=60)
        pending = store.proposals(run_id, status=ProposalStatus.PENDING)[0]
        trials_before = store.count_trials(run_id)
        evaluated_before = len(evaluations(store, run_id, pending.id))
        proposals_before = [p.id for p in store.proposals(run_id)]
    finally:
        kill(process)
    manager = get_manager(store)
    wait_until(lambda: run_id in manager.recover_orphans(), timeout=30,
               message="the killed worker's run is found orphaned")
    handle = manager.resume(run_id)
    # the resumed engine re-evaluates the proposal from stored trials and enters the gate again
    wait_until(lambda: len(evaluations(store, run_id, pending.id)) > evaluated_before,
               timeout=30, message="the resumed engine reaches the gate")
    assert store.get_proposal(pending.id).status is ProposalStatus.PENDING
    assert store.count_trials(run_id) == trials_before
    assert [p.id for p in store.proposals(run_id)] == proposals_before  # nothing new proposed
    decide(pending.id, "stop", store=store)
    assert handle.wait(30) == "user"


def evaluations(store, run_id: str, proposal_id: int) -> list:
    return [e for e in store.events(run_id, kind=EventKind.PROPOSAL_EVALUATED)
            if e.payload.get("proposal_id") == proposal_id]
