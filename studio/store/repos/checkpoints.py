"""The one checkpoint per run a resume starts from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam, insert, select, update

import studio.store.schema as t
from studio.model.jsontools import finite_json
from studio.model.records import utcnow
from studio.store.repos.base import Repository, guard

_UPDATE = (update(t.checkpoints).where(t.checkpoints.c.run_id == bindparam("b_run_id"))
           .values(iteration=bindparam("b_iteration"), state=bindparam("b_state"),
                   updated_at=bindparam("b_updated_at")))
_INSERT = insert(t.checkpoints)
"""Built once: the engine saves a checkpoint after every iteration."""


class CheckpointRepository(Repository):
    """The one checkpoint per run a resume starts from."""

    @guard
    def save_checkpoint(self, run_id: str, iteration: int, state: Mapping[str, object]) -> None:
        values = {"run_id": run_id, "iteration": iteration, "state": finite_json(state),
                  "updated_at": utcnow()}
        with self.engine.begin() as c:  # an update's parameters may not be named as columns
            if c.execute(_UPDATE, {f"b_{k}": v for k, v in values.items()}).rowcount == 0:
                c.execute(_INSERT, values)

    @guard
    def load_checkpoint(self, run_id: str) -> tuple[int, dict[str, Any]] | None:
        with self.engine.connect() as c:
            row = c.execute(select(t.checkpoints).where(t.checkpoints.c.run_id == run_id)).first()
        return (row.iteration, row.state) if row else None

