"""Random interleavings of a person and the engine end in a consistent store.

A seeded driver runs a review-mode run in a real worker process (the CLI), under a timeout and a
metric-call budget drawn by the seed (or none), and, step by step, picks what a person (or the
machine) does next: decide a pending proposal (accept, reject with a reason, edit, edit it again,
stop), decide it a second time, correct or un-correct a trial, pause, unpause, stop, resume, or
SIGKILL the worker. At the end the run is resumed and run to its end (the pending proposals
decided), and the store must hold:

- every (candidate, example) pair judged at most once;
- every proposal settled or pending, never left evaluating; in the completed run, none pending;
- at most one decision per proposal, and every decision recorded applied (accepted: the proposal
  accepted and its child pooled; rejected: rejected; edited: edited, with a successor);
- no pooled candidate repeating another's components;
- the pool and the Pareto front equal to a recomputation from the stored trials' effective scores.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from studio.engine import decide, override, undo_override
from studio.engine.hosting.worker import get_manager
from studio.engine.people.gates import latest_pending
from studio.engine.policies.pareto import pareto_front
from studio.engine.policies.pool import load_view, val_example_ids
from studio.model.errors import StudioError
from studio.model.records import DecisionAction, ProposalStatus, RunStatus
from studio.store import open_store
from tests.engine.invariants import nothing_stranded
from tests.helpers import CliWorker, wait_until

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [int(s) for s in os.environ.get("STUDIO_INTERLEAVING_SEEDS", "1,2,3").split(",")]
STEPS = int(os.environ.get("STUDIO_INTERLEAVING_STEPS", "80"))
SETTLED = {ProposalStatus.ACCEPTED, ProposalStatus.REJECTED, ProposalStatus.EDITED,
           ProposalStatus.INVALID, ProposalStatus.PENDING}


def project_file(folder: Path, rng: random.Random) -> Path:
    """The review run, with a timeout and a budget drawn by the seed: the timeout may fall in
    any phase of an iteration (only machine time counts), the budget may refuse an edit."""
    data = yaml.safe_load((ROOT / "examples" / "haiku_scripted.yaml").read_text())
    for part in ("agent", "critic", "reflection"):
        data[part]["model"] = "scripted/demo@30ms"
    data["run"].update(review="review", max_iterations=8, max_concurrency=3,
                       timeout_seconds=rng.choice([3.0, None, 6.0]),
                       max_metric_calls=rng.choice([40, None, 60]))
    path = folder / "project.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def pending(store, run_id):
    """Proposals waiting for a person (decided ones wait only for the engine)."""
    waiting = latest_pending(store.proposals(run_id))
    return [waiting] if waiting is not None else []


def person_step(rng: random.Random, store, worker: CliWorker) -> str:
    """One thing a person (or the machine) does; returns its name for the failure message."""
    run_id = worker.run_id
    manager = get_manager(store)
    choice = rng.choice(["decide", "decide", "decide", "decide_again", "override", "override",
                         "undo", "pause", "unpause", "stop", "kill", "resume", "wait", "wait"])
    waiting = pending(store, run_id)
    if choice in ("decide", "decide_again") and waiting:
        proposal = waiting[0]
        action = rng.choice([DecisionAction.ACCEPT, DecisionAction.REJECT, DecisionAction.EDIT,
                             DecisionAction.ACCEPT, DecisionAction.STOP, DecisionAction.REJECT,
                             DecisionAction.EDIT])
        text = proposal.text + f" Keep it vivid ({rng.randrange(10**6)})."
        for _ in range(2 if choice == "decide_again" else 1):
            with refused_is_fine():
                decide(proposal.id, action, reason="driver", author="driver", store=store,
                       edited_text=text if action is DecisionAction.EDIT else None)
    elif choice == "override":
        trials = store.trials(run_id)
        if trials:
            trial = rng.choice(trials)
            score = rng.choice([None, 0.0, 0.5, 1.0])
            feedback = rng.choice([None, "driver: too flat"]) if score is not None else "driver"
            override(trial.id, score=score, feedback=feedback, author="driver", store=store)
    elif choice == "undo":
        active = [o for o in store.overrides(run_id) if o.undone_at is None]
        if active:
            undo_override(rng.choice(active).id, store=store)
    elif choice in ("pause", "unpause", "stop"):
        with refused_is_fine():  # steering a run that is not active is refused
            getattr(manager, choice)(run_id)
    elif choice == "kill":
        worker.kill()
    elif choice == "resume" and not worker.alive and _resumable(store, run_id):
        worker.resume()
    else:
        count = store.count_trials(run_id)  # let the engine work a little (it may be paused)
        with contextlib.suppress(AssertionError):
            wait_until(lambda: store.count_trials(run_id) > count or not worker.alive
                       or pending(store, run_id), timeout=2, message="progress")
    return choice


def refused_is_fine():
    """A person's action the studio refuses with a clear error (deciding twice, steering a
    stopped run) is a legitimate outcome of a random interleaving."""
    return contextlib.suppress(StudioError)


def _resumable(store, run_id) -> bool:
    return store.get_run(run_id).status is not RunStatus.COMPLETED


def finish(store, worker: CliWorker, rng: random.Random) -> None:
    """Resume once more and run to the end, accepting or rejecting each proposal that waits."""
    run_id = worker.run_id
    worker.kill()
    if _resumable(store, run_id):
        worker.resume()
        with refused_is_fine():
            get_manager(store).unpause(run_id)
        while worker.alive:
            try:
                wait_until(lambda: pending(store, run_id) or not worker.alive, timeout=180,
                           message="the resumed run to reach a gate or its end")
            except AssertionError as exc:  # say where it stood: slow, paused, or stuck
                run = store.get_run(run_id)
                raise AssertionError(f"{exc}: the run is {run.status} (control {run.control}), "
                                     f"{store.count_trials(run_id)} trials") from None
            waiting = pending(store, run_id)
            if waiting and worker.alive:
                decide_and_wait(store, worker, waiting[0].id, rng.choice(["accept", "reject"]))
    worker.wait_exit(60)


def decide_and_wait(store, worker: CliWorker, proposal_id: int, action: str) -> None:
    with refused_is_fine():  # decided by the driver's doubled decision already
        decide(proposal_id, action, reason="driver done", store=store)
    wait_until(lambda: proposal_id not in {p.id for p in pending(store, worker.run_id)}
               or not worker.alive, timeout=60, message="the gate to move on")


def check_invariants(store, run_id: str, history: list[str]) -> None:
    where = f"after steps {history}"
    trials = store.trials(run_id)
    pairs = Counter((t.candidate_id, t.example_id) for t in trials)
    assert max(pairs.values(), default=1) == 1, f"a pair was judged twice {where}"

    proposals = store.proposals(run_id)
    stuck = [p.id for p in proposals if p.status not in SETTLED]
    assert not stuck, f"proposals {stuck} were left evaluating {where}"
    assert store.get_run(run_id).status is RunStatus.COMPLETED, f"the run did not end {where}"
    nothing_stranded(store, run_id, where)

    per_proposal = Counter(d.proposal_id for d in store.decisions(run_id))
    doubled = [p for p, n in per_proposal.items() if n > 1]
    assert not doubled, f"proposals {doubled} got two decisions {where}"

    view = load_view(store, run_id)
    run = store.get_run(run_id)
    val = val_example_ids(store, run)
    effective = {(t.candidate_id, t.example_id): t.effective_score for t in trials}
    accepted_children = {p.child_id for p in proposals if p.status is ProposalStatus.ACCEPTED}
    seed = min(c.id for c in store.candidates(run_id))
    expected_pool = {c.id for c in store.candidates(run_id)
                     if (c.id == seed or c.id in accepted_children)
                     and all((c.id, e) in effective for e in val)}
    assert set(view.pooled_ids) == expected_pool, f"pool differs from the stored trials {where}"
    matrix = {c: {e: effective.get((c, e)) for e in val} for c in expected_pool}
    assert view.front == pareto_front(matrix), f"front differs from a recomputation {where}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_random_interleavings_keep_the_store_consistent(tmp_path, seed, database_url):
    url = database_url
    store = open_store(url, cached=False)
    rng = random.Random(seed)
    worker = CliWorker(url, project_file(tmp_path, rng))
    history: list[str] = []
    try:
        run_id = worker.start()
        deadline = time.monotonic() + 120
        while len(history) < STEPS and time.monotonic() < deadline:
            history.append(person_step(rng, store, worker))
        finish(store, worker, rng)
        check_invariants(store, run_id, history)
        # a drawn limit may end a slow run (a loaded machine, PostgreSQL) before its first gate
        ended_early = store.get_run(run_id).stop_reason in ("timeout", "max_metric_calls")
        assert store.count_trials(run_id) > 0 and (store.decisions(run_id) or ended_early), \
            f"the driver never reached the engine {history}"
    finally:
        worker.kill()
        store.close()
