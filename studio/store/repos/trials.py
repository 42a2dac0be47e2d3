"""Trials: one judged output each, read back with their effective override."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import and_, bindparam, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.sql import ColumnElement, Select

import studio.store.schema as t
from studio.model.errors import LeaseLostError, NotFoundError
from studio.model.feedback import Feedback
from studio.model.jsontools import finite_json
from studio.model.records import Override, Split, Trial, merge_overrides
from studio.model.redaction import redact
from studio.store.repos.base import Repository, guard, in_chunks, inserted_id, to_model
from studio.store.repos.scores import effective_score, is_overridden

_INSERT_TRIAL = insert(t.trials)
_RUN_HOLDER = (select(t.runs.c.worker).where(t.runs.c.id == bindparam("run_id"))
               .with_for_update(read=True))
_FIRST_TRIALS = (select(t.trials)
                 .where(t.trials.c.candidate_id == bindparam("candidate_id"),
                        t.trials.c.example_id.in_(bindparam("example_ids", expanding=True)))
                 .order_by(t.trials.c.id))
_OVERRIDES_OF = (select(t.overrides)
                 .where(t.overrides.c.trial_id.in_(bindparam("trial_ids", expanding=True)),
                        t.overrides.c.undone_at.is_(None))
                 .order_by(t.overrides.c.id))
_RUN_OVERRIDES_AFTER = (select(t.overrides)
                        .where(t.overrides.c.run_id == bindparam("run_id"),
                               t.overrides.c.trial_id > bindparam("after_id"),
                               t.overrides.c.undone_at.is_(None))
                        .order_by(t.overrides.c.id))


class TrialRepository(Repository):
    """Trials: one judged output each, read back with their effective override."""

    @guard
    def add_trial(self, trial: Trial) -> Trial:
        """Insert and commit one trial (the UI sees it on its next poll): :meth:`add_trials`
        with one trial.

        Raises:
            LeaseLostError: ``trial.worker`` no longer holds the run.
        """
        return self.add_trials([trial])[0]

    @guard
    def add_trials(self, trials: Sequence[Trial]) -> list[Trial]:
        """Insert ``trials`` and commit them in one transaction: all are stored, or none.

        The engine commits the trials of chains that finish together this way
        (:mod:`studio.engine.scoring.batch`): one transaction instead of one each, and every trial
        is
        committed before anything (the event the UI follows, the loop) sees it.

        A trial judged by a worker is committed only while that worker holds the run: the run's
        row is read under a share lock after the inserts, so a takeover either waits for this
        commit or makes it roll back (then nothing a lost worker judged is ever stored).

        Stored as judged, secrets included: reflection and a resumed run read trials back, and
        must read what the critic wrote; every exit (pages, CLI, logs, exports) redacts. Only
        the error is redacted here: it is an exception's text, shown and logged, and one short
        string (the trace, the costly part, is not walked).

        Raises:
            LeaseLostError: a trial's ``worker`` no longer holds its run (nothing is stored).
        """
        rows = [_trial_row(trial) for trial in trials]
        with self.engine.begin() as c:
            ids = [inserted_id(c.execute(_INSERT_TRIAL, row)) for row in rows]
            for run_id, worker in dict.fromkeys((trial.run_id, trial.worker) for trial in trials
                                                if trial.worker is not None):
                holder = c.execute(_RUN_HOLDER, {"run_id": run_id}).scalar()
                if holder != worker:
                    raise LeaseLostError(f"worker {worker} lost run {run_id}: it "
                                         f"is now held by {holder or 'no worker'}")
        return [trial.model_copy(update={"id": new_id}) for trial, new_id in zip(trials, ids,
                                                                                   strict=True)]

    @guard
    def rejudge_trial(self, trial_id: int, feedback: Feedback, error: str | None) -> None:
        """Replace a trial's verdict with one recomputed from its stored output, nothing judged
        again: an align run's trial whose label (the person's correction) changed or was undone
        (:mod:`studio.engine.people.labels`). Output, trace and the trial's place stay as they
        were."""
        values: dict[str, Any] = {"score": feedback.score, "feedback": feedback.model_dump(),
                                  "error": error, "trace": {}}
        values = _finite_trial(values)
        values["error"] = _redacted_error(values["error"])
        values.pop("trace")
        with self.engine.begin() as c:
            c.execute(update(t.trials).where(t.trials.c.id == trial_id).values(**values))

    @guard
    def trials(
        self,
        run_id: str,
        *,
        after_id: int = 0,
        candidate_id: int | None = None,
        phase: str | None = None,
        proposal_id: int | None = None,
        ids: Iterable[int] | None = None,
        phases: Iterable[str] | None = None,
        iteration: int | None = None,
        with_trace: bool = True,
        newest_first: bool = False,
        limit: int | None = None,
    ) -> list[Trial]:
        """Trials of a run with each trial's active override attached: oldest first, or with
        ``newest_first`` the newest ``limit`` ones (for "latest trials" strips)."""
        given = {"candidate_id": candidate_id, "phase": phase, "proposal_id": proposal_id,
                 "ids": None if ids is None else list(ids),
                 "phases": None if phases is None else list(phases), "iteration": iteration,
                 "limit": limit}
        given = {name: value for name, value in given.items() if value is not None}
        query = _trials_query(frozenset(given), with_trace, newest_first)
        with self.engine.connect() as c:
            rows = c.execute(query, {"run_id": run_id, "after_id": after_id, **given}).all()
            active = self._active_overrides(c, run_id, after_id)
        return [self._trial(row, active.get(row.id)) for row in rows]

    @guard
    def get_trial(self, trial_id: int) -> Trial:
        with self.engine.connect() as c:
            row = c.execute(select(t.trials).where(t.trials.c.id == trial_id)).first()
            if row is None:
                raise NotFoundError(f"trial {trial_id} does not exist")
            active = self._effective_overrides(c, t.overrides.c.trial_id == trial_id)
        return self._trial(row, active.get(trial_id))

    @guard
    def first_trials(self, candidate_id: int, example_ids: list[int]) -> dict[int, Trial]:
        """The committed trial per example for one candidate (one query for a whole batch)."""
        with self.engine.connect() as c:
            rows = [row for ids in in_chunks(example_ids) for row in c.execute(
                _FIRST_TRIALS, {"candidate_id": candidate_id, "example_ids": ids})]
            active = self._overrides_of(c, [row.id for row in rows])
        found: dict[int, Trial] = {}
        for row in rows:
            if row.example_id not in found:
                found[row.example_id] = self._trial(row, active.get(row.id))
        return found

    @guard
    def trial_page(self, run_id: str, *, offset: int = 0, limit: int = 500,
                   **filters: Any) -> tuple[list[Trial], int]:
        """One page of a run's trials (oldest first, without traces) and how many trials pass
        ``filters`` (see :func:`_trial_filters`): filtering, counting and paging in SQL, so a
        100,000-trial run is never read whole."""
        where = [t.trials.c.run_id == run_id, *_trial_filters(run_id, **filters)]
        columns = [col for col in t.trials.c if col.name != "trace"]
        query = (select(*columns).where(*where).order_by(t.trials.c.id)
                 .offset(max(0, offset)).limit(limit))
        count = select(func.count()).select_from(t.trials).where(*where)
        with self.engine.connect() as c:
            total = c.execute(count).scalar_one()
            rows = c.execute(query).all()
            active = self._overrides_of(c, [row.id for row in rows])
        return [self._trial(row, active.get(row.id)) for row in rows], total

    def iter_trials(self, run_id: str, *, batch_size: int = 1000, with_trace: bool = True,
                    candidate_id: int | None = None, phase: str | None = None,
                    offset: int = 0, limit: int | None = None) -> Iterator[Trial]:
        """Every trial of a run (or of one candidate, or one phase), oldest first, with its
        effective override, read ``batch_size`` at a time (keyset pages on the primary key, one
        short read each): constant memory for exports and listings, and no read transaction
        held open while the caller writes. ``offset`` and ``limit`` page in SQL."""
        columns = list(t.trials.c) if with_trace else [
            col for col in t.trials.c if col.name != "trace"]
        where = [t.trials.c.run_id == run_id]
        if candidate_id is not None:
            where.append(t.trials.c.candidate_id == candidate_id)
        if phase is not None:
            where.append(t.trials.c.phase == phase)
        left = limit
        skip, last = max(0, offset), 0
        while left is None or left > 0:
            size = batch_size if left is None else min(batch_size, left)
            rows, active = self._trial_batch(run_id, columns, where, last, size, skip)
            for row in rows:
                yield self._trial(row, active.get(row.id))
            if len(rows) < size:
                return
            skip, last = 0, rows[-1].id
            left = None if left is None else left - len(rows)
            del rows, active  # the next page replaces this one instead of joining it in memory

    @guard
    def _trial_batch(self, run_id: str, columns: list, where: list, after_id: int, size: int,
                     skip: int = 0) -> tuple[Sequence[Row], dict[int, Override]]:
        query = (select(*columns).where(*where, t.trials.c.id > after_id)
                 .order_by(t.trials.c.id).offset(skip or None).limit(size))
        with self.engine.connect() as c:
            rows = c.execute(query).all()
            if not rows:
                return rows, {}
            active = self._effective_overrides(
                c, t.overrides.c.run_id == run_id,
                t.overrides.c.trial_id.between(rows[0].id, rows[-1].id),
                *([t.overrides.c.trial_id.in_([row.id for row in rows])]
                  if len(where) > 1 else []))  # a filtered page's ids can span the run
        return rows, active

    @guard
    def count_trials(self, run_id: str, *, loop_only: bool = False) -> int:
        """A run's trials; ``loop_only`` leaves out the held-out test set's (the metric-call
        budget counts what the loop judged)."""
        where = [t.trials.c.run_id == run_id]
        if loop_only:
            where.append(t.trials.c.split != Split.TEST.value)
        with self.engine.connect() as c:
            return c.execute(select(func.count()).select_from(t.trials)
                             .where(*where)).scalar_one()

    @guard
    def trial_numbers(self, run_id: str, trial_ids: Iterable[int]) -> dict[int, int]:
        """``trial id -> its number in the run`` (1, 2, 3 … in the order the run stored its
        trials), for the trials of ``trial_ids`` that belong to the run: people follow a run's
        own count, not the database's ids, which every run shares. Computed, not stored: a
        count of the run's ids up to each for a few trials (a trial shown in full), else one
        window over the run's ids (a page of a table)."""
        wanted = sorted(set(trial_ids))
        if not wanted:
            return {}
        if len(wanted) <= 4:
            return self._counted_numbers(run_id, wanted)
        number = func.row_number().over(order_by=t.trials.c.id).label("number")
        ranked = select(t.trials.c.id, number).where(t.trials.c.run_id == run_id).subquery()
        found: dict[int, int] = {}
        with self.engine.connect() as c:
            for start in range(0, len(wanted), 1000):  # bounded IN lists on either database
                chunk = wanted[start:start + 1000]
                found.update(c.execute(select(ranked.c.id, ranked.c.number)
                                       .where(ranked.c.id.in_(chunk))).tuples().all())
        return found

    def _counted_numbers(self, run_id: str, wanted: list[int]) -> dict[int, int]:
        run = t.trials.c.run_id == run_id
        with self.engine.connect() as c:
            mine = set(c.execute(select(t.trials.c.id).where(run, t.trials.c.id.in_(wanted)))
                       .scalars())
            return {tid: c.execute(select(func.count()).select_from(t.trials)
                                   .where(run, t.trials.c.id <= tid)).scalar_one()
                    for tid in wanted if tid in mine}

    @guard
    def candidate_costs(self, run_id: str) -> dict[int, float]:
        """Candidate id -> the summed price of its trials (US dollars; see ``Trial.cost_usd``)."""
        c_ = t.trials.c
        query = (select(c_.candidate_id, func.coalesce(func.sum(c_.cost_usd), 0.0))
                 .where(c_.run_id == run_id).group_by(c_.candidate_id))
        with self.engine.connect() as c:
            return {int(row[0]): float(row[1] or 0.0) for row in c.execute(query)}

    @guard
    def run_costs(self, run_ids: Iterable[str]) -> dict[str, float]:
        """Run id -> the run's price: its trials' and its reflection calls' (the proposals'),
        for the runs given (one query per table)."""
        ids = list(run_ids)
        if not ids:
            return {}
        found = dict.fromkeys(ids, 0.0)
        with self.engine.connect() as c:
            for table in (t.trials, t.proposals):
                query = (select(table.c.run_id, func.coalesce(func.sum(table.c.cost_usd), 0.0))
                         .where(table.c.run_id.in_(ids)).group_by(table.c.run_id))
                for run_id, cost in c.execute(query):
                    found[run_id] += float(cost or 0.0)
        return found

    @staticmethod
    def _trial(row: Row, override: Override | None) -> Trial:
        data = dict(row._mapping)
        data.setdefault("trace", {})
        data["override"] = override
        return Trial.model_validate(data)

    @staticmethod
    def _active_overrides(connection, run_id: str, after_id: int = 0) -> dict[int, Override]:
        return _merged(connection.execute(_RUN_OVERRIDES_AFTER,
                                          {"run_id": run_id, "after_id": after_id}))

    @staticmethod
    def _overrides_of(connection, trial_ids: list[int]) -> dict[int, Override]:
        """``trial_id -> merge_overrides(active overrides)`` for these trials."""
        found: dict[int, Override] = {}
        for ids in in_chunks(trial_ids):  # a trial's overrides are all in its chunk
            found.update(_merged(connection.execute(_OVERRIDES_OF, {"trial_ids": ids})))
        return found

    @staticmethod
    def _effective_overrides(connection, *where) -> dict[int, Override]:
        """``trial_id -> merge_overrides(active overrides)`` for the trials ``where`` selects."""
        return _merged(connection.execute(
            select(t.overrides).where(*where, t.overrides.c.undone_at.is_(None))
            .order_by(t.overrides.c.id)))


def _merged(rows: Iterable[Row]) -> dict[int, Override]:
    """``trial_id -> merge_overrides(its active overrides)`` from override rows in id order."""
    per_trial: dict[int, list[Override]] = {}
    for row in rows:
        per_trial.setdefault(row.trial_id, []).append(to_model(Override, row))
    return {trial_id: merged for trial_id, found in per_trial.items()
            if (merged := merge_overrides(found)) is not None}  # active ones: never None


_TRIAL_FILTERS = {
    "candidate_id": lambda: t.trials.c.candidate_id == bindparam("candidate_id"),
    "phase": lambda: t.trials.c.phase == bindparam("phase"),
    "proposal_id": lambda: t.trials.c.proposal_id == bindparam("proposal_id"),
    "ids": lambda: t.trials.c.id.in_(bindparam("ids", expanding=True)),
    "phases": lambda: t.trials.c.phase.in_(bindparam("phases", expanding=True)),
    "iteration": lambda: t.trials.c.iteration == bindparam("iteration"),
}
"""The optional filters of :meth:`TrialRepository.trials`, each bound to its argument."""


@functools.cache
def _trials_query(given: frozenset[str], with_trace: bool, newest_first: bool) -> Select:
    """:meth:`TrialRepository.trials`'s query for the filters ``given``, built once per shape
    and reused with each call's values (parameters): building a statement and its cache key
    costs more than running it on the engine's hot paths (``bench/README.md``)."""
    columns = list(t.trials.c) if with_trace else [
        col for col in t.trials.c if col.name != "trace"]
    query = select(*columns).where(t.trials.c.run_id == bindparam("run_id"),
                                   t.trials.c.id > bindparam("after_id"))
    query = query.where(*(_TRIAL_FILTERS[name]() for name in sorted(given) if name != "limit"))
    query = query.order_by(t.trials.c.id.desc() if newest_first else t.trials.c.id)
    return query.limit(bindparam("limit")) if "limit" in given else query


def _trial_filters(run_id: str, *, iterations: tuple[int, int] | None = None,
                   candidates: Iterable[int] = (), phases: Iterable[str] = (),
                   score_range: tuple[float, float] = (0.0, 1.0), include_unscored: bool = True,
                   errors: str = "any", overridden: str = "any") -> list:
    """SQL conditions for the trials table's filters: an inclusive ``iterations`` range,
    candidate *indexes*, phases, an effective ``score_range`` (trials that could not be
    evaluated pass only with ``include_unscored``), ``errors`` (``any``, ``only errors``,
    ``no errors``) and ``overridden`` (``any``, ``overridden``, ``not overridden``)."""
    c = t.trials.c
    where: list[ColumnElement[bool]] = []
    if iterations is not None:
        where.append(c.iteration.between(*iterations))
    candidates = list(candidates)
    if candidates:
        where.append(c.candidate_id.in_(select(t.candidates.c.id).where(
            t.candidates.c.run_id == run_id, t.candidates.c.idx.in_(candidates))))
    phases = list(phases)
    if phases:
        where.append(c.phase.in_(phases))
    low, high = score_range
    if (low, high) != (0.0, 1.0) or not include_unscored:  # scores are in [0, 1]
        effective = effective_score()
        scored = effective.between(low, high)
        where.append(or_(scored, effective.is_(None)) if include_unscored else scored)
    if errors == "only errors":
        where.append(and_(c.error.is_not(None), c.error != ""))
    elif errors == "no errors":
        where.append(or_(c.error.is_(None), c.error == ""))
    elif errors != "any":
        raise ValueError(f"errors filter {errors!r} is not one of any, only errors, no errors")
    if overridden == "overridden":
        where.append(is_overridden())
    elif overridden == "not overridden":
        where.append(~is_overridden())
    elif overridden != "any":
        raise ValueError(f"overridden filter {overridden!r} is not one of any, overridden, "
                         "not overridden")
    return where


def _not_finite_fields(value: object, where: str) -> list[str]:
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where} = {value}"]
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in _not_finite_fields(v, f"{where}.{k}")]
    if isinstance(value, list | tuple):
        return [f for i, v in enumerate(value) for f in _not_finite_fields(v, f"{where}[{i}]")]
    return []


def _trial_row(trial: Trial) -> dict[str, Any]:
    """The row of one trial to insert: non-finite numbers made null, the error redacted."""
    values = _finite_trial(trial.model_dump(exclude={"id", "override"}))
    values["error"] = _redacted_error(values["error"])
    return values


def _finite_trial(values: dict[str, Any]) -> dict[str, Any]:
    """A critic that returns NaN or Infinity could not evaluate: its score is stored as null
    and the reason, naming the fields, goes into the feedback (``extra.error``)."""
    values["trace"] = finite_json(values["trace"])
    bad = _not_finite_fields(values["score"], "score") + _not_finite_fields(
        values["feedback"], "feedback")
    if not bad:
        return values
    feedback = finite_json(values["feedback"])
    if not math.isfinite(values["score"] if values["score"] is not None else 0.0):
        values["score"] = None
        feedback["score"] = None
    extra = feedback.setdefault("extra", {})
    extra["error"] = ("could not evaluate: the critic returned values that are not numbers ("
                      + ", ".join(bad) + "); stored as null")
    values["feedback"] = feedback
    return values


def _redacted_error(error: str | None) -> str | None:
    """A trial's error as stored: redacted, like a run's (an exception's text may quote a key
    or a URL with its password)."""
    return redact(error) if error else error
