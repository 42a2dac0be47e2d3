"""Trial scores read straight from SQL, no records built."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, case, exists, func, select
from sqlalchemy.sql import Select

import studio.store.schema as t
from studio.model.consensus import PASS_FAIL_VALUES, TIE
from studio.store.repos.base import Repository, guard, in_chunks


class ScoreRepository(Repository):
    """Trial scores read straight from SQL, no records built."""

    @guard
    def effective_scores(self, run_id: str, *, example_ids: Iterable[int] | None = None,
                         candidate_ids: Iterable[int] | None = None,
                         pooled_only: bool = False) -> dict[tuple[int, int], float | None]:
        """``(candidate_id, example_id) -> effective score`` of the first trial of each pair,
        straight from SQL (no records built), for views over thousands of trials.

        ``example_ids``, ``candidate_ids`` and ``pooled_only`` narrow the pairs in SQL (the
        pool's views need only the pooled candidates on the validation examples, not every
        minibatch pair)."""
        values: dict[str, Any] = {"run_id": run_id}
        if candidate_ids is not None:
            values["candidate_ids"] = list(candidate_ids)
        query = _effective_scores_query(example_ids is not None, "candidate_ids" in values,
                                        pooled_only)
        found: dict[tuple[int, int], float | None] = {}
        with self.engine.connect() as c:  # the overrides are merged in SQL: none are loaded
            for part in _examples_in_chunks(example_ids):  # a pair is in its example's chunk
                found.update({(row[0], row[1]): row[2]
                              for row in c.execute(query, {**values, **part})})
        return found

    @guard
    def first_scores(self, run_id: str, *, example_ids: Iterable[int],
                     candidate_ids: Iterable[int] | None = None
                     ) -> dict[tuple[int, int], tuple[float | None, float | None]]:
        """``(candidate_id, example_id) -> (judge's score, effective score)`` of the first
        trial of each pair, in one query: what a proposal's evidence is computed from
        (:mod:`studio.engine.policies.evidence`). ``candidate_ids`` narrows the pairs in SQL."""
        values: dict[str, Any] = {"run_id": run_id}
        if candidate_ids is not None:
            values["candidate_ids"] = list(candidate_ids)
        query = _first_scores_query("candidate_ids" in values)
        found: dict[tuple[int, int], tuple[float | None, float | None]] = {}
        with self.engine.connect() as c:
            for part in _examples_in_chunks(example_ids):
                found.update({(row[0], row[1]): (row[2], row[3])
                              for row in c.execute(query, {**values, **part})})
        return found

    @guard
    def child_means(self, run_id: str) -> dict[int, float]:
        """Per proposal, the mean effective score of its child's minibatch trials (trials
        that could not be evaluated left out; proposals with none left out), one SQL query."""
        effective = effective_score()
        query = (select(t.trials.c.proposal_id, func.avg(effective))
                 .where(t.trials.c.run_id == run_id, t.trials.c.phase == "child",
                        t.trials.c.proposal_id.is_not(None))
                 .group_by(t.trials.c.proposal_id).having(func.count(effective) > 0))
        with self.engine.connect() as c:
            return {row[0]: float(row[1]) for row in c.execute(query)}

    @guard
    def run_marker(self, run_id: str) -> tuple[int, ...]:
        """Changes whenever a trial, an override (added or undone) or a decision is added: a
        cheap key (one round trip, indexed counts) for caching views of a run."""
        trials, decisions = t.trials.c, t.decisions.c
        query = select(func.count(), func.coalesce(func.max(trials.id), 0)).where(
            trials.run_id == run_id)
        d = select(func.count()).select_from(t.decisions).where(decisions.run_id == run_id)
        with self.engine.connect() as c:
            first = tuple(c.execute(query).one())
            second = tuple(c.execute(_OVERRIDE_MARKER, {"run_id": run_id}).one())
            third = c.execute(d).scalar_one()
        return (*first, *second, third)

    @guard
    def override_marker(self, run_id: str) -> tuple[int, ...]:
        """Changes whenever an override of the run is added or undone (their count, newest
        id and undone count, from the overrides' run index): what a reader that keeps
        effective scores checks before trusting them
        (:class:`studio.engine.policies.pool.PooledRows`)."""
        with self.engine.connect() as c:
            return tuple(c.execute(_OVERRIDE_MARKER, {"run_id": run_id}).one())


def _examples_in_chunks(example_ids: Iterable[int] | None) -> list[dict[str, list[int]]]:
    """The ``example_ids`` values of one query each (one without, when not narrowed)."""
    if example_ids is None:
        return [{}]
    return [{"example_ids": ids} for ids in in_chunks(example_ids)] or [{"example_ids": []}]


_OVERRIDE_MARKER = (select(func.count(), func.coalesce(func.max(t.overrides.c.id), 0),
                           func.count(t.overrides.c.undone_at))
                    .where(t.overrides.c.run_id == bindparam("run_id")))


def _first_trial_ids(by_examples: bool, by_candidates: bool, pooled_only: bool) -> Select:
    """The id of each (candidate, example) pair's first trial in the run, narrowed by the
    filters named (bound to ``example_ids``, ``candidate_ids``; the run's pooled candidates)."""
    where = [t.trials.c.run_id == bindparam("run_id")]
    if by_examples:
        where.append(t.trials.c.example_id.in_(bindparam("example_ids", expanding=True)))
    if by_candidates:
        where.append(t.trials.c.candidate_id.in_(bindparam("candidate_ids", expanding=True)))
    if pooled_only:
        where.append(t.trials.c.candidate_id.in_(
            select(t.candidates.c.id).where(t.candidates.c.run_id == bindparam("run_id"),
                                            t.candidates.c.pooled.is_(True))))
    return (select(func.min(t.trials.c.id)).where(*where)
            .group_by(t.trials.c.candidate_id, t.trials.c.example_id))


@functools.cache
def _effective_scores_query(by_examples: bool, by_candidates: bool, pooled_only: bool) -> Select:
    """Built once per shape and run with each call's values: building this statement and its
    cache key cost more than running it, on a path the engine takes every iteration."""
    first = _first_trial_ids(by_examples, by_candidates, pooled_only)
    return select(t.trials.c.candidate_id, t.trials.c.example_id,
                  effective_score()).where(t.trials.c.id.in_(first))


@functools.cache
def _first_scores_query(by_candidates: bool) -> Select:
    """As :func:`_effective_scores_query`, with the judge's score beside the effective one."""
    first = _first_trial_ids(True, by_candidates, False)
    return select(t.trials.c.candidate_id, t.trials.c.example_id, t.trials.c.score,
                  effective_score()).where(t.trials.c.id.in_(first))


def _human_score():
    """The people's score of the trial in the enclosing query, as
    :func:`~studio.model.records.merge_overrides` has it (:mod:`studio.model.consensus`), in
    SQL: the latest active adjudication with a score, else the consensus of each reviewer's
    latest active score (the majority of a pass/fail vote, else the mean); NULL when nobody
    gave a score. Correlated subqueries on ``ix_overrides_trial``."""
    return func.coalesce(_adjudicated_score(), _consensus_score())


def _active_scores(o):
    return (o.c.trial_id == t.trials.c.id, o.c.undone_at.is_(None), o.c.score.is_not(None))


def _adjudicated_score():
    ruling = t.overrides.alias("ruling")
    return (select(ruling.c.score).where(*_active_scores(ruling), ruling.c.adjudicated.is_(True))
            .order_by(ruling.c.id.desc()).limit(1).scalar_subquery())


def _consensus_score():
    """Each reviewer's latest score (the local studio's corrections, ``reviewer`` NULL, are one
    person's: SQL groups NULLs together), then their majority or mean."""
    mine = t.overrides.alias("mine")
    latest = (select(func.max(mine.c.id)).where(*_active_scores(mine),
                                                 mine.c.adjudicated.is_(False))
              .group_by(mine.c.reviewer).correlate(t.trials))  # two levels down: named
    label = t.overrides.alias("label")
    mean = func.avg(label.c.score)
    not_pass_fail = func.sum(case((label.c.score.in_(PASS_FAIL_VALUES), 0), else_=1))
    majority = case((mean > TIE, 1.0), (mean < TIE, 0.0), else_=TIE)
    return (select(case((not_pass_fail == 0, majority), else_=mean))
            .where(label.c.id.in_(latest)).scalar_subquery())


def effective_score():
    """A trial's effective score in SQL: the people's score (an adjudication, else their
    consensus), else the judge's (:func:`studio.model.records.corrected_score`). Read only
    for a trial with an active override (``CASE``), so trials nobody labelled cost one probe."""
    return case((is_overridden(), func.coalesce(_human_score(), t.trials.c.score)),
                else_=t.trials.c.score)


def is_overridden():
    """Whether the trial in the enclosing query has an active (not undone) override, in SQL."""
    o = t.overrides.c
    return exists().where(o.trial_id == t.trials.c.id, o.undone_at.is_(None))

