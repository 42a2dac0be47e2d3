"""Trial scores read straight from SQL, no records built."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, exists, func, select
from sqlalchemy.sql import Select

import studio.store.schema as t
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
        (:mod:`studio.engine.evidence`). ``candidate_ids`` narrows the pairs in SQL."""
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
        effective scores checks before trusting them (:class:`studio.engine.pool.PooledRows`)."""
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
    """The latest active human score of the trial in the enclosing query (a correlated
    subquery; NULL when nobody corrected the score): ``merge_overrides``'s rule in SQL."""
    o = t.overrides.c
    return (select(o.score).where(o.trial_id == t.trials.c.id, o.undone_at.is_(None),
                                  o.score.is_not(None))
            .order_by(o.id.desc()).limit(1).scalar_subquery())


def effective_score():
    """A trial's effective score in SQL: the person's corrected score, else the judge's
    (:func:`studio.model.records.corrected_score`)."""
    return func.coalesce(_human_score(), t.trials.c.score)


def is_overridden():
    """Whether the trial in the enclosing query has an active (not undone) override, in SQL."""
    o = t.overrides.c
    return exists().where(o.trial_id == t.trials.c.id, o.undone_at.is_(None))

