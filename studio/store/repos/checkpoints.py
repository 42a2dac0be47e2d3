"""The one checkpoint per run a resume starts from."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update

import studio.store.schema as t
from studio.model.jsontools import finite_json
from studio.model.records import utcnow
from studio.store.repos.base import Repository, guard


class CheckpointRepository(Repository):
    """The one checkpoint per run a resume starts from."""

    @guard
    def save_checkpoint(self, run_id: str, iteration: int, state: dict[str, Any]) -> None:
        state = finite_json(state)
        with self.engine.begin() as c:
            updated = c.execute(update(t.checkpoints).where(t.checkpoints.c.run_id == run_id)
                                .values(iteration=iteration, state=state, updated_at=utcnow()))
            if updated.rowcount == 0:
                c.execute(insert(t.checkpoints).values(run_id=run_id, iteration=iteration,
                                                       state=state, updated_at=utcnow()))

    @guard
    def load_checkpoint(self, run_id: str) -> tuple[int, dict[str, Any]] | None:
        with self.engine.connect() as c:
            row = c.execute(select(t.checkpoints).where(t.checkpoints.c.run_id == run_id)).first()
        return (row.iteration, row.state) if row else None

