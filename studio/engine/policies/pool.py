"""Views of a run computed from the store, with human overrides applied.

Everything that depends on the pool's scores (the means, the Pareto front, the best candidate) is
computed here from the trials' *effective* scores at the moment of asking, so an override changes
it at once, for the engine and the studio alike (a proposal's evidence: :mod:`.evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.engine.policies.pareto import best_candidate, mean_score, pareto_front
from studio.model.records import Candidate, Run, Split, stored_id
from studio.store.seams import PolicyStore


def val_example_ids(store: PolicyStore, run: Run) -> list[int]:
    split = Split.TRAIN if run.spec.val_is_train else Split.VAL
    return [stored_id(e) for e in store.examples(run.id, split)]



@dataclass
class RunView:
    run: Run
    candidates: list[Candidate]
    val_ids: list[int]
    matrix: dict[int, dict[int, float | None]]
    """Pooled candidate id -> validation example id -> effective score."""
    means: dict[int, float | None] = field(default_factory=dict)
    front: dict[int, int] = field(default_factory=dict)
    best_id: int | None = None

    @property
    def pooled_ids(self) -> list[int]:
        return [stored_id(c) for c in self.candidates if c.pooled]

    @property
    def best_score(self) -> float | None:
        return self.means.get(self.best_id) if self.best_id is not None else None

    def candidate(self, candidate_id: int) -> Candidate:
        return next(c for c in self.candidates if c.id == candidate_id)


def load_view(store: PolicyStore, run_id: str) -> RunView:
    run = store.get_run(run_id)
    candidates = store.candidates(run_id)
    scores = pool_scores(store, run, [stored_id(c) for c in candidates if c.pooled])
    return RunView(run=run, candidates=candidates, val_ids=scores.val_ids, matrix=scores.matrix,
                   means=scores.means, front=scores.front, best_id=scores.best_id)


@dataclass
class PoolScores:
    """The pool's validation scores and what follows from them (no candidate records)."""

    val_ids: list[int]
    matrix: dict[int, dict[int, float | None]]
    means: dict[int, float | None]
    front: dict[int, int]
    best_id: int | None

    @property
    def pooled_ids(self) -> list[int]:
        """By index, the seed first."""
        return list(self.matrix)

    @property
    def best_score(self) -> float | None:
        return self.means.get(self.best_id) if self.best_id is not None else None


def pool_scores(store: PolicyStore, run: Run, pooled: list[int] | None = None,
                val_ids: list[int] | None = None) -> PoolScores:
    """Means, Pareto front and best candidate of the pooled candidates (``pooled``: their ids
    by index; ``val_ids``: the validation examples; each read from the store when not given),
    from effective scores."""
    pooled = store.pooled_ids(run.id) if pooled is None else pooled
    val_ids = val_example_ids(store, run) if val_ids is None else val_ids
    scores = store.effective_scores(run.id, example_ids=val_ids, pooled_only=True)
    matrix = {c: {e: scores.get((c, e)) for e in val_ids} for c in pooled}
    return scored_pool(matrix, val_ids, {c: mean_score(row) for c, row in matrix.items()})


def scored_pool(matrix: dict[int, dict[int, float | None]], val_ids: list[int],
                means: dict[int, float | None]) -> PoolScores:
    """What follows from the pool's matrix (its rows by index, the seed first)."""
    pooled = list(matrix)
    return PoolScores(val_ids=val_ids, matrix=matrix, means=means,
                      front=pareto_front(matrix, pooled), best_id=best_candidate(matrix, pooled))


class PooledRows:
    """The pooled candidates' effective validation scores, each candidate's row read once and
    kept, so a read between iterations does not grow with the run.

    A pooled candidate's row changes only when a person corrects (or undoes a correction of)
    a score: each read first asks the store for the run's corrections' marker (their count,
    newest id and undone count, one indexed query) and reads every row again when it moved,
    so a correction made in any process counts at the next read. A row with a pair not yet
    judged is not kept. An align run's trials are judged again when a label changes, so its
    engine keeps no rows (``keep=False``)."""

    def __init__(self, store: PolicyStore, run_id: str, val_ids: list[int], *, keep: bool = True
                 ) -> None:
        self.store, self.run_id, self.val_ids, self.keep = store, run_id, val_ids, keep
        self._rows: dict[int, tuple[dict[int, float | None], float | None]] = {}
        self._marker: tuple[int, ...] | None = None

    def pool(self, pooled: list[int]) -> PoolScores:
        """The pool of ``pooled`` (ids by index) from the effective scores as stored now."""
        marker = self.store.override_marker(self.run_id)
        if marker != self._marker or not self.keep:
            self._rows.clear()
            self._marker = marker
        missing = [c for c in pooled if c not in self._rows]
        rows = {**self._rows, **self._read(missing)} if missing else self._rows
        return scored_pool({c: rows[c][0] for c in pooled}, self.val_ids,
                           {c: rows[c][1] for c in pooled})

    def _read(self, candidates: list[int]) -> dict[int, tuple[dict[int, float | None],
                                                               float | None]]:
        """The rows of ``candidates``, kept when complete (a pair not yet judged may be
        judged by the next read)."""
        scores = self.store.effective_scores(self.run_id, example_ids=self.val_ids,
                                             candidate_ids=candidates)
        read = {}
        for c in candidates:
            row = {e: scores.get((c, e)) for e in self.val_ids}
            read[c] = (row, mean_score(row))
            if self.keep and all((c, e) in scores for e in self.val_ids):
                self._rows[c] = read[c]
        return read


class PoolReader:
    """The engine's reads of its pool: as stored now (corrections count at once), each
    candidate's scores read once (:class:`PooledRows`), with the last read kept for the step
    right after it when nothing was awaited between them (the engine reads three times in a
    row between iterations: accepted, iteration settled, next parent)."""

    def __init__(self, store: PolicyStore, run: Run, val_ids: list[int], *, keep_rows: bool = True
                 ) -> None:
        self.store, self.run = store, run
        self.rows = PooledRows(store, run.id, val_ids, keep=keep_rows)
        self._last: PoolScores | None = None

    def read(self) -> PoolScores:
        """The pool's means, front and best from the effective scores as stored now (kept for
        :meth:`recent`)."""
        return self.keep(self.rows.pool(self.store.pooled_ids(self.run.id)))

    def recent(self) -> PoolScores:
        """The kept read, taken once, else a fresh one: a correction made while the run waits
        for a model or a person counts at the next read."""
        pool, self._last = self._last, None
        return pool if pool is not None else self.rows.pool(self.store.pooled_ids(self.run.id))

    def through(self, iteration: int) -> PoolScores:
        """The pool as iteration ``iteration`` left it: the seed and the pooled children of
        iterations up to it, never a later one pooled early (parallel proposals read this, so
        what finishes first elsewhere changes no draw: :mod:`studio.engine.loop.window`)."""
        return self.rows.pool(self.store.pooled_ids(self.run.id, through=iteration))

    def keep(self, pool: PoolScores) -> PoolScores:
        self._last = pool
        return pool

    def forget(self) -> None:
        """Drop the kept read: the engine is about to wait (a person may correct scores)."""
        self._last = None
