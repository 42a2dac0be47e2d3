"""Reviewing trials one by one: the time a person spends on each (an event in the run's log, so
no schema change), which trials count as reviewed, and what the review queue is built from.

A review is ``corrected`` (the person saved a score or feedback), ``confirmed`` (the person
read it and kept the judge's values) or ``skipped`` (left for later: not a review). Seconds are
capped at :data:`MAX_REVIEW_SECONDS`, so a person who walked away does not skew the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from studio.engine.policies.evidence import EvidenceTrials, evidence_trials
from studio.model.errors import ConfigError, NotFoundError
from studio.model.records import EventKind, Override, RunEvent, Trial
from studio.projects.workspace import pending_proposal
from studio.store.seams import HasEvents, ReviewingStore

REVIEW_ACTIONS = ("corrected", "confirmed", "skipped")
REVIEWED_ACTIONS = ("corrected", "confirmed")
MAX_REVIEW_SECONDS = 600.0
"""Longest time one review is recorded as (ten minutes)."""
QUEUE_WINDOW = 2_000
"""The newest trials the queue considers besides the pending proposal's evidence."""


@dataclass(frozen=True)
class ReviewRecord:
    trial_id: int
    seconds: float
    action: str
    author: str


def record_review(store: ReviewingStore, run_id: str, trial_id: int, *, seconds: float, action: str,
                  author: str = "anonymous") -> RunEvent:
    """Store how long a person spent on one trial of the run, and what they did.

    Raises:
        ConfigError: an unknown action or a negative, infinite or non-numeric duration.
        NotFoundError: the trial is not one of the run's.
    """
    if action not in REVIEW_ACTIONS:
        raise ConfigError(f"action {action!r} is not one of: {', '.join(REVIEW_ACTIONS)}",
                          where="review.action", value=action)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or \
            not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"review time {seconds!r} is not a duration in seconds",
                          where="review.seconds", value=seconds)
    trials = store.trials(run_id, ids=[trial_id], with_trace=False)
    if not trials:
        raise NotFoundError(f"trial {trial_id} is not a trial of run {run_id}")
    payload = {"trial_id": trial_id, "seconds": round(min(float(seconds), MAX_REVIEW_SECONDS), 2),
               "action": action, "author": author or "anonymous"}
    return store.add_event(run_id, EventKind.REVIEW_TIME, trials[0].iteration, payload)


def review_records(store: HasEvents, run_id: str) -> list[ReviewRecord]:
    """Every recorded review of the run, oldest first (malformed payloads are skipped)."""
    records = []
    for event in store.events(run_id, kind=EventKind.REVIEW_TIME):
        payload = event.payload
        try:
            records.append(ReviewRecord(int(payload["trial_id"]), float(payload["seconds"]),
                                        str(payload["action"]), str(payload.get("author", ""))))
        except (KeyError, TypeError, ValueError):
            continue
    return records


def reviewed_seconds(records: list[ReviewRecord]) -> list[float]:
    """The durations of real reviews (skips are not reviews)."""
    return [r.seconds for r in records if r.action in REVIEWED_ACTIONS]


@dataclass
class QueueInputs:
    """What :func:`studio.views.review_queue.build_queue` orders."""

    trials: list[Trial]
    reviewed_ids: set[int]
    reviewed_example_ids: set[int]
    evidence: EvidenceTrials | None = None
    records: list[ReviewRecord] = field(default_factory=list)
    open_ids: set[int] = field(default_factory=set)
    """Trials others labelled that still wait for this reviewer (several per trial)."""


def queue_inputs(store: ReviewingStore, run_id: str, *, window: int = QUEUE_WINDOW,
                 reviewer: str | None = None, wanted: int = 1) -> QueueInputs:
    """The newest ``window`` trials, who reviewed what, and the pending proposal's evidence.

    ``reviewer`` (a verified person) and ``wanted`` (people per trial, the project's review
    settings): a trial stays in that person's queue until they labelled it, ``wanted`` people
    did, or an owner adjudicated it. Without a reviewer (the local studio) a trial anyone
    reviewed is done, as always."""
    trials = store.trials(run_id, with_trace=False, newest_first=True, limit=window)
    records = review_records(store, run_id)
    overrides = store.overrides(run_id, include_undone=True)
    reviewed = {o.trial_id for o in overrides}
    reviewed |= {r.trial_id for r in records if r.action in REVIEWED_ACTIONS}
    closed, open_ids = reviewed, set()
    if reviewer is not None:
        closed = _closed_for(reviewer, wanted, overrides, records)
        open_ids = reviewed - closed
    known = {t.id: t.example_id for t in trials}
    unknown = [i for i in reviewed if i not in known]
    if unknown:
        known |= {t.id: t.example_id for t in store.trials(run_id, ids=unknown,
                                                           with_trace=False)}
    proposal = pending_proposal(store, run_id)
    evidence = evidence_trials(store, proposal) if proposal is not None else None
    return QueueInputs(trials, closed, {known[i] for i in reviewed if i in known}, evidence,
                       records, open_ids)


def _closed_for(reviewer: str, wanted: int, overrides: list[Override],
                records: list[ReviewRecord]) -> set[int]:
    """Trials no longer in ``reviewer``'s queue: theirs (labelled, confirmed, even undone
    since), those ``wanted`` people labelled, and the adjudicated ones."""
    mine = {o.trial_id for o in overrides if o.reviewer == reviewer}
    mine |= {r.trial_id for r in records if r.action in REVIEWED_ACTIONS and r.author == reviewer}
    people: dict[int, set[str | None]] = {}
    for o in overrides:
        if o.undone_at is None and not o.adjudicated:
            people.setdefault(o.trial_id, set()).add(o.reviewer)
    for r in records:
        if r.action == "confirmed":
            people.setdefault(r.trial_id, set()).add(r.author)
    settled = {o.trial_id for o in overrides if o.adjudicated and o.undone_at is None}
    return mine | settled | {t for t, who in people.items() if len(who) >= wanted}
