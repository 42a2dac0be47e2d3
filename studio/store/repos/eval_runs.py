"""Logged judge evaluations (Agno's eval runs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import insert, select

import studio.store.schema as t
from studio.model.jsontools import finite_json
from studio.model.records import utcnow
from studio.model.redaction import redact_data
from studio.store.repos.base import Repository, guard, inserted_id, to_model


class EvalRun(BaseModel):
    """A logged judge evaluation (Agno's eval runs)."""

    id: int
    name: str
    kind: str
    summary: dict[str, Any]
    cases: list[dict[str, Any]]
    created_at: datetime

    @property
    def run_id(self) -> str:
        """The evaluation's own run id (``AgentAsJudgeResult.run_id``, kept in the summary),
        the name Agno's eval records carry; the row's id for a run logged without one."""
        return str(self.summary.get("run_id") or self.id)


class EvalRunRepository(Repository):
    """Logged judge evaluations (Agno's eval runs)."""

    @guard
    def add_eval_run(self, name: str, kind: str, summary: Mapping[str, object],
                     cases: Sequence[Mapping[str, object]]) -> int:
        with self.engine.begin() as c:
            return inserted_id(c.execute(insert(t.eval_runs).values(
                name=name, kind=kind, summary=finite_json(redact_data(summary)),
                cases=finite_json(redact_data(cases)),
                created_at=utcnow())))

    @guard
    def get_eval_runs(self, limit: int | None = None) -> list[EvalRun]:
        """Agno's ``db.get_eval_runs()``: every logged eval run (the newest ``limit`` when
        given), oldest first, so that its cookbook's ``eval_runs[-1]`` is the latest."""
        query = select(t.eval_runs).order_by(t.eval_runs.c.id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as c:
            return [to_model(EvalRun, r) for r in c.execute(query)][::-1]

    @guard
    def list_eval_runs(self, name: str | None = None, limit: int = 100) -> list[EvalRun]:
        query = select(t.eval_runs).order_by(t.eval_runs.c.id.desc()).limit(limit)
        if name is not None:
            query = query.where(t.eval_runs.c.name == name)
        with self.engine.connect() as c:
            return [to_model(EvalRun, r) for r in c.execute(query)]

