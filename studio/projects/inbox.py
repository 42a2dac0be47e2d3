"""The "waiting for you" inbox and the facts run lists show: which runs have a proposal waiting
for a person's decision, and each run's best score and gain over the seed.

Cheap by design (the sidebar reads it on every page): a few one-row reads per run, never a
run's trials. Scores are the ones the engine last reported (its baseline and progress events),
so a list of 50 runs does not re-score 50 pools; the Compare page has the corrected figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from studio.engine.run.events import BaselineScored, Progress, StoredEventError
from studio.model.records import EventKind, Proposal, Run, RunStatus
from studio.store.seams import InboxStore

CANNOT_WAIT = (RunStatus.COMPLETED, RunStatus.QUEUED)
"""Statuses whose runs never have a proposal waiting (a completed loop decided everything; a
queued one has not started), so the inbox does not read their proposals."""


@dataclass(frozen=True)
class RunSummary:
    """One line of a run list."""

    run: Run
    seed_score: float | None
    """The seed's validation mean as the engine scored it (None before the baseline)."""
    best_score: float | None
    """The best validation mean the engine last reported."""
    waiting: Proposal | None
    """The proposal waiting for a person's decision, or None."""

    @property
    def gain(self) -> float | None:
        if self.seed_score is None or self.best_score is None:
            return None
        return self.best_score - self.seed_score


def waiting_proposals(store: InboxStore, runs: Sequence[Run]) -> dict[str, Proposal]:
    """Run id -> its proposal waiting for a decision, for the listed runs that have one (one
    store query, whatever the number of runs)."""
    listed = {run.id for run in runs if run.status not in CANNOT_WAIT}
    return {run_id: proposal for run_id, proposal in store.waiting_proposals().items()
            if run_id in listed}


def run_to_open(runs: Sequence[Run], waiting: Mapping[str, Proposal]) -> str | None:
    """The run a new session opens: the one whose proposal has waited longest for a person's
    decision (what most needs them), else the newest run; None when there is no run."""
    if waiting:
        return min(waiting, key=lambda run_id: (waiting[run_id].created_at, run_id))
    if not runs:
        return None
    return max(runs, key=lambda run: run.created_at).id


def run_summaries(store: InboxStore, runs: Sequence[Run]) -> list[RunSummary]:
    waiting = waiting_proposals(store, runs)
    return [RunSummary(run, *_scores(store, run.id), waiting.get(run.id)) for run in runs]


def _scores(store: InboxStore, run_id: str) -> tuple[float | None, float | None]:
    """(seed, best) from the run's latest baseline and progress events (one row each); a row
    that does not read back leaves its figure empty rather than the list unreadable."""
    baseline = store.latest_event(run_id, EventKind.BASELINE_SCORED)
    progress = store.latest_event(run_id, EventKind.PROGRESS)
    try:
        seed = BaselineScored.from_stored(baseline).score if baseline else None
        best = Progress.from_stored(progress).best_score if progress else None
    except StoredEventError:
        return None, None
    return seed, seed if best is None else best
