"""A run's candidates (#0 is the seed) and which of them are pooled."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

import studio.store.schema as t
from studio.model.errors import DuplicateCandidateError, NotFoundError
from studio.model.records import Candidate, stored_id
from studio.store.repos.base import Repository, guard, inserted_id, to_model

_CANDIDATE_RENAME = {"idx": "index"}
_RUN = t.candidates.c.run_id == bindparam("run_id")
_INSERT = insert(t.candidates)
_CANDIDATES = select(t.candidates).where(_RUN).order_by(t.candidates.c.idx)
_BY_HASH = (select(t.candidates).where(_RUN, t.candidates.c.content_hash == bindparam("hash"))
            .order_by(t.candidates.c.idx).limit(1))
_POOLED_IDS = (select(t.candidates.c.id).where(_RUN, t.candidates.c.pooled.is_(True))
               .order_by(t.candidates.c.idx))
_POOLED_THROUGH = _POOLED_IDS.where(t.candidates.c.iteration <= bindparam("through"))
_NEXT_INDEX = select(func.coalesce(func.max(t.candidates.c.idx), -1) + 1).where(_RUN)
_BY_ID = select(t.candidates).where(t.candidates.c.id == bindparam("candidate_id"))
_SET_POOLED = (update(t.candidates).where(t.candidates.c.id == bindparam("candidate_id"))
               .values(pooled=bindparam("b_pooled")))
_INDEXES = (select(t.candidates.c.id, t.candidates.c.idx)
            .where(_RUN, t.candidates.c.id > bindparam("after_id")).order_by(t.candidates.c.idx))
"""Built once (the engine reads candidates every iteration: building a statement costs more
than running it)."""


class CandidateRepository(Repository):
    """A run's candidates (#0 is the seed) and which of them are pooled."""

    @guard
    def add_candidate(self, candidate: Candidate) -> Candidate:
        """Store a new candidate of its run.

        Raises:
            DuplicateCandidateError: the run already has a candidate with its content hash
                (the unique index refused it), naming that candidate.
        """
        values = candidate.model_dump(exclude={"id"})
        values["idx"] = values.pop("index")
        try:
            with self.engine.begin() as c:
                new_id = inserted_id(c.execute(_INSERT, values))
        except IntegrityError:
            existing = self.find_candidate(candidate.run_id, candidate.content_hash)
            if existing is None:  # another constraint (the index taken meanwhile)
                raise
            raise DuplicateCandidateError(candidate.run_id, existing.index,
                                          stored_id(existing)) from None
        return candidate.model_copy(update={"id": new_id})

    @guard
    def candidates(self, run_id: str) -> list[Candidate]:
        with self.engine.connect() as c:
            return [to_model(Candidate, r, **_CANDIDATE_RENAME)
                    for r in c.execute(_CANDIDATES, {"run_id": run_id})]

    @guard
    def find_candidate(self, run_id: str, content_hash: str) -> Candidate | None:
        """The run's first candidate with these components (by content hash), or None: one
        lookup in SQL, not every candidate read (duplicate checks on long runs)."""
        with self.engine.connect() as c:
            row = c.execute(_BY_HASH, {"run_id": run_id, "hash": content_hash}).first()
        return to_model(Candidate, row, **_CANDIDATE_RENAME)

    @guard
    def pooled_ids(self, run_id: str, *, through: int | None = None) -> list[int]:
        """The pooled candidates' ids, by index (the seed first); ``through``: only those made
        by iterations up to it."""
        query = _POOLED_IDS
        values: dict[str, str | int] = {"run_id": run_id}
        if through is not None:
            query, values["through"] = _POOLED_THROUGH, through
        with self.engine.connect() as c:
            return [row[0] for row in c.execute(query, values)]

    def iter_candidates(self, run_id: str, *, batch_size: int = 200) -> Iterator[Candidate]:
        """Every candidate of a run by index, read ``batch_size`` at a time (exports)."""
        last = -1
        while True:
            batch = self._candidate_batch(run_id, last, batch_size)
            yield from batch
            if len(batch) < batch_size:
                return
            last = batch[-1].index

    @guard
    def _candidate_batch(self, run_id: str, after_index: int, size: int) -> list[Candidate]:
        query = (select(t.candidates).where(t.candidates.c.run_id == run_id,
                                            t.candidates.c.idx > after_index)
                 .order_by(t.candidates.c.idx).limit(size))
        with self.engine.connect() as c:
            return [to_model(Candidate, r, **_CANDIDATE_RENAME) for r in c.execute(query)]

    @guard
    def get_candidate(self, candidate_id: int) -> Candidate:
        with self.engine.connect() as c:
            row = c.execute(_BY_ID, {"candidate_id": candidate_id}).first()
        if row is None:
            raise NotFoundError(f"candidate {candidate_id} does not exist")
        return to_model(Candidate, row, **_CANDIDATE_RENAME)

    @guard
    def set_pooled(self, candidate_id: int, pooled: bool = True) -> None:
        with self.engine.begin() as c:
            c.execute(_SET_POOLED, {"candidate_id": candidate_id, "b_pooled": pooled})

    @guard
    def next_candidate_index(self, run_id: str) -> int:
        """The index the run's next candidate takes (indexes count from 0 without gaps): one
        lookup in the run's index of candidates, not every candidate read."""
        with self.engine.connect() as c:
            return c.execute(_NEXT_INDEX, {"run_id": run_id}).scalar_one()

    @guard
    def candidate_indexes(self, run_id: str, *, after_id: int = 0) -> dict[int, int]:
        """``candidate id -> index`` (#0 is the seed), without the components; ``after_id``:
        only the candidates made after candidate ``after_id``."""
        with self.engine.connect() as c:
            return {row[0]: row[1] for row in c.execute(
                _INDEXES, {"run_id": run_id, "after_id": after_id})}

