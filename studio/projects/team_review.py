"""Several people reviewing the same run: each one's labels, how far they agree with each other
(per project and per critic dimension), the trials they disagree on (for an owner to
adjudicate), and how far each reviewer has got.

A label here is a verified person's (``Override.reviewer``): corrections made in the local
studio are one person's and have no one to agree with. What the loop reads from several labels
is :func:`studio.model.records.merge_overrides`'s rule, not anything computed here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field

from studio.critics.interrater import PeopleAgreement, people_agreement
from studio.model.records import Override, labels_by_person, merge_overrides
from studio.projects.reviewing import REVIEWED_ACTIONS, review_records
from studio.projects.team import run_project
from studio.store.seams import HasOverrides, TeamReviewStore

DISAGREEMENT = 0.3
"""Two people's scores of one trial this far apart (or on both sides of the pass threshold)
are a disagreement an owner should see."""


@dataclass
class TrialLabels:
    """One trial's labels: each verified person's own, and an owner's ruling if any."""

    trial_id: int
    run_id: str
    people: dict[str, Override]
    ruling: Override | None = None

    @property
    def scores(self) -> dict[str, float]:
        return {name: o.score for name, o in self.people.items() if o.score is not None}

    @property
    def dimensions(self) -> dict[str, dict[str, float]]:
        return {name: o.dimensions for name, o in self.people.items() if o.dimensions}


def trial_labels(store: HasOverrides, run_id: str | None = None) -> list[TrialLabels]:
    """Every trial (of ``run_id``, or of every run) a verified person labelled or an owner
    adjudicated, oldest first."""
    per_trial: dict[int, list[Override]] = defaultdict(list)
    for o in store.overrides(run_id, include_undone=False):
        if o.reviewer is not None or o.adjudicated:
            per_trial[o.trial_id].append(o)
    found = []
    for trial_id, rows in per_trial.items():
        people = {name: o for name, o in labels_by_person(rows).items() if name is not None}
        rulings = [o for o in rows if o.adjudicated]
        found.append(TrialLabels(trial_id, str(rows[0].run_id), people,
                                 merge_overrides(rulings) if rulings else None))
    return found


# --------------------------------------------------------------------------- agreement


class PeopleSummary(BaseModel):
    """Agreement between people, over the scope and per project."""

    overall: PeopleAgreement
    per_project: dict[str, PeopleAgreement] = Field(default_factory=dict)


def people_summary(store: TeamReviewStore, run_id: str | None = None, threshold: float = 0.5
                   ) -> PeopleSummary:
    """Krippendorff's alpha (and Cohen's kappa for two) between the people who labelled the
    same trials of ``run_id`` (or of every run), overall, per project and per dimension."""
    labels = trial_labels(store, run_id)
    projects: dict[str, str] = {}
    for run in {x.run_id for x in labels}:
        projects[run] = run_project(store, store.get_run(run))
    grouped: dict[str, list[TrialLabels]] = defaultdict(list)
    for x in labels:
        grouped[projects[x.run_id]].append(x)
    return PeopleSummary(overall=_agreement(labels, threshold),
                         per_project={name: _agreement(group, threshold)
                                      for name, group in sorted(grouped.items())})


def _agreement(labels: list[TrialLabels], threshold: float) -> PeopleAgreement:
    return people_agreement({x.trial_id: x.scores for x in labels},
                            {x.trial_id: x.dimensions for x in labels}, threshold)


# --------------------------------------------------------------------------- disagreements


class PersonLabel(BaseModel):
    reviewer: str
    score: float | None
    feedback: str | None
    created_at: datetime


class PeopleDisagreement(BaseModel):
    """A trial the people labelled differently: everyone's label, their consensus, and the
    owner's ruling once given."""

    trial_id: int
    run_id: str
    labels: list[PersonLabel]
    spread: float
    """Highest score minus lowest."""
    consensus: float | None
    """What the loop reads until an owner rules (:mod:`studio.model.consensus`)."""
    ruling: float | None = None
    ruled_by: str | None = None
    ruling_id: int | None = None

    @property
    def settled(self) -> bool:
        return self.ruling_id is not None


def disagreements(store: TeamReviewStore, run_id: str, threshold: float = 0.5, *,
                  include_settled: bool = True) -> list[PeopleDisagreement]:
    """The run's trials whose people's scores are :data:`DISAGREEMENT` apart or on both sides
    of ``threshold``; unsettled first, then the widest."""
    found = []
    for x in trial_labels(store, run_id):
        scores = list(x.scores.values())
        if len(scores) < 2:
            continue
        spread = max(scores) - min(scores)
        split = len({score >= threshold for score in scores}) > 1
        if spread < DISAGREEMENT - 1e-9 and not split:
            continue
        if x.ruling is not None and not include_settled:
            continue
        consensus = merge_overrides(list(x.people.values()))
        found.append(PeopleDisagreement(
            trial_id=x.trial_id, run_id=x.run_id, spread=spread,
            consensus=consensus.score if consensus is not None else None,
            labels=[PersonLabel(reviewer=name, score=o.score, feedback=o.feedback,
                                created_at=o.created_at) for name, o in x.people.items()],
            ruling=x.ruling.score if x.ruling is not None else None,
            ruled_by=x.ruling.author if x.ruling is not None else None,
            ruling_id=x.ruling.id if x.ruling is not None else None))
    return sorted(found, key=lambda d: (d.settled, -d.spread, d.trial_id))


# --------------------------------------------------------------------------- progress


@dataclass
class ReviewerProgress:
    """How far one person has got on a run."""

    name: str
    labelled: set[int] = field(default_factory=set)
    """Trials they gave a label (a correction, or a confirmation of the judge)."""
    skipped: int = 0
    seconds: float = 0.0

    @property
    def mean_seconds(self) -> float | None:
        return self.seconds / len(self.labelled) if self.labelled else None


def reviewer_progress(store: TeamReviewStore, run_id: str) -> list[ReviewerProgress]:
    """Per verified reviewer of the run: trials labelled, skips, time spent; most work first."""
    people: dict[str, ReviewerProgress] = {}
    for x in trial_labels(store, run_id):
        for name in x.people:
            people.setdefault(name, ReviewerProgress(name)).labelled.add(x.trial_id)
    known = set(people) | {user.name for user in store.list_users()}
    for record in review_records(store, run_id):
        if record.author not in known:
            continue
        person = people.setdefault(record.author, ReviewerProgress(record.author))
        if record.action in REVIEWED_ACTIONS:
            person.labelled.add(record.trial_id)
            person.seconds += record.seconds
        else:
            person.skipped += 1
    return sorted(people.values(), key=lambda p: (-len(p.labelled), p.name))
