"""Views of a run computed from the store, with human overrides applied.

Everything that depends on the pool's scores (the means, the Pareto front, the best candidate) is
computed here from the trials' *effective* scores at the moment of asking, so an override changes
it at once, for the engine and the studio alike (a proposal's evidence: :mod:`.evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.engine.pareto import best_candidate, mean_score, pareto_front
from studio.model.records import Candidate, Run, Split, stored_id
from studio.store import Store


def val_example_ids(store: Store, run: Run) -> list[int]:
    split = Split.TRAIN if run.spec.val_is_train else Split.VAL
    return [e.id for e in store.examples(run.id, split)]



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


def load_view(store: Store, run_id: str) -> RunView:
    run = store.get_run(run_id)
    candidates = store.candidates(run_id)
    scores = pool_scores(store, run, [c.id for c in candidates if c.pooled])
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


def pool_scores(store: Store, run: Run, pooled: list[int] | None = None,
                val_ids: list[int] | None = None) -> PoolScores:
    """Means, Pareto front and best candidate of the pooled candidates (``pooled``: their ids
    by index; ``val_ids``: the validation examples; each read from the store when not given),
    from effective scores."""
    pooled = store.pooled_ids(run.id) if pooled is None else pooled
    val_ids = val_example_ids(store, run) if val_ids is None else val_ids
    scores = store.effective_scores(run.id, example_ids=val_ids, pooled_only=True)
    matrix = {c: {e: scores.get((c, e)) for e in val_ids} for c in pooled}
    return PoolScores(val_ids=val_ids, matrix=matrix,
                      means={c: mean_score(row) for c, row in matrix.items()},
                      front=pareto_front(matrix, pooled), best_id=best_candidate(matrix, pooled))


class PoolReader:
    """The engine's reads of its pool: fresh from the store (corrections count at once), with
    the last read kept for the step right after it when nothing was awaited between them (the
    engine reads three times in a row between iterations: accepted, iteration settled, next
    parent). The engine knows its validation examples, so each read is two short queries."""

    def __init__(self, store: Store, run: Run, val_ids: list[int]) -> None:
        self.store, self.run, self.val_ids = store, run, val_ids
        self._last: PoolScores | None = None

    def read(self) -> PoolScores:
        """The pool's means, front and best from the effective scores as stored now (kept for
        :meth:`recent`)."""
        return self.keep(pool_scores(self.store, self.run, val_ids=self.val_ids))

    def recent(self) -> PoolScores:
        """The kept read, taken once, else a fresh one: a correction made while the run waits
        for a model or a person counts at the next read."""
        pool, self._last = self._last, None
        return pool if pool is not None else pool_scores(self.store, self.run,
                                                          val_ids=self.val_ids)

    def through(self, iteration: int) -> PoolScores:
        """The pool as iteration ``iteration`` left it: the seed and the pooled children of
        iterations up to it, never a later one pooled early (parallel proposals read this, so
        what finishes first elsewhere changes no draw: :mod:`studio.engine.lanes`)."""
        made = {c.id: c.iteration for c in self.store.candidates(self.run.id)}
        pooled = [c for c in self.store.pooled_ids(self.run.id) if made.get(c, 0) <= iteration]
        return pool_scores(self.store, self.run, pooled=pooled, val_ids=self.val_ids)

    def keep(self, pool: PoolScores) -> PoolScores:
        self._last = pool
        return pool

    def forget(self) -> None:
        """Drop the kept read: the engine is about to wait (a person may correct scores)."""
        self._last = None
