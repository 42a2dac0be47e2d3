"""People's corrections of a critic, and the pairs agreement is computed from."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import insert, select, update
from sqlalchemy.engine import Row

import studio.store.schema as t
from studio.model.errors import NotFoundError, StoreError
from studio.model.records import Override, merge_overrides, utcnow
from studio.store.repos.base import Database, Repository, guard, inserted_id, to_model
from studio.store.repos.trials import TrialRepository


class OverridePair(BaseModel):
    """A judge's score beside the human's, for agreement statistics (``human_score`` is None when
    the person corrected only the feedback)."""

    run_id: str
    critic: str
    trial_id: int
    judge_score: float | None
    human_score: float | None
    judge_feedback: str | None
    human_feedback: str | None
    author: str
    created_at: datetime
    input_text: str
    output: str


class OverrideRepository(Repository):
    """People's corrections of a critic, and the pairs agreement is computed from."""

    def __init__(self, db: Database, trials: TrialRepository) -> None:
        super().__init__(db)
        self.trials = trials  # a correction copies the judge's values from its trial

    @guard
    def add_override(self, trial_id: int, *, score: float | None, feedback: str | None,
                     author: str, corrected_output: str | None = None,
                     reviewer: str | None = None, adjudicated: bool = False,
                     dimensions: dict[str, float] | None = None) -> Override:
        """Record a person's correction (their label; ``reviewer``: the verified person it is
        from, ``adjudicated``: an owner's ruling, ``dimensions``: their score per critic
        dimension); the judge's own values are copied beside it. The feedback and the corrected
        output are stored as written (reflection reads them); they are redacted where shown."""
        trial = self.trials.get_trial(trial_id)
        override = Override(trial_id=trial_id, score=score,
                            feedback=feedback,
                            judge_score=trial.score, judge_feedback=trial.feedback_text,
                            author=author or "anonymous", reviewer=reviewer,
                            adjudicated=adjudicated, dimensions=dimensions)
        if corrected_output is not None:  # what the answer should have been (version 7)
            override.corrected_output = corrected_output
        values = override.model_dump(exclude={"id"})
        values["run_id"] = trial.run_id
        with self.engine.begin() as c:
            new_id = inserted_id(c.execute(insert(t.overrides), values))
        return override.model_copy(update={"id": new_id})

    @guard
    def undo_override(self, override_id: int) -> Override:
        with self.engine.begin() as c:
            c.execute(update(t.overrides).where(t.overrides.c.id == override_id,
                                                t.overrides.c.undone_at.is_(None))
                      .values(undone_at=utcnow()))
            row = c.execute(select(t.overrides).where(t.overrides.c.id == override_id)).first()
        if row is None:
            raise NotFoundError(f"override {override_id} does not exist")
        return to_model(Override, row)

    @guard
    def overrides(self, run_id: str | None = None, *, trial_id: int | None = None,
                  include_undone: bool = True) -> list[Override]:
        query = select(t.overrides).order_by(t.overrides.c.id)
        if run_id is not None:
            query = query.where(t.overrides.c.run_id == run_id)
        if trial_id is not None:
            query = query.where(t.overrides.c.trial_id == trial_id)
        if not include_undone:
            query = query.where(t.overrides.c.undone_at.is_(None))
        with self.engine.connect() as c:
            return [to_model(Override, r) for r in c.execute(query)]

    @guard
    def override_pairs(self, run_id: str | None = None) -> list[OverridePair]:
        """One pair per corrected trial (its effective correction, the people's consensus or
        an owner's ruling, beside the judge's values), per critic, for agreement statistics: a
        re-corrected trial counts once."""
        o, tr, r = t.overrides, t.trials, t.runs
        query = (select(o.c.run_id, o.c.trial_id, o.c.judge_score, o.c.score, o.c.judge_feedback,
                        o.c.feedback, o.c.author, o.c.created_at, o.c.reviewer,
                        o.c.adjudicated, tr.c.input_text, tr.c.output, r.c.spec)
                 .join(tr, tr.c.id == o.c.trial_id).join(r, r.c.id == o.c.run_id)
                 .where(o.c.undone_at.is_(None)).order_by(o.c.id))
        if run_id is not None:
            query = query.where(o.c.run_id == run_id)
        with self.engine.connect() as c:
            rows = c.execute(query).all()
        per_trial: dict[int, list[Row]] = {}
        for row in rows:
            per_trial.setdefault(row.trial_id, []).append(row)
        return [_override_pair(found) for found in per_trial.values()]


def _override_pair(rows: list[Row]) -> OverridePair:
    """One trial's active override rows (oldest first) as its effective correction."""
    merged = merge_overrides(Override(trial_id=row.trial_id, score=row.score,
                                      feedback=row.feedback, judge_score=row.judge_score,
                                      judge_feedback=row.judge_feedback, author=row.author,
                                      created_at=row.created_at, reviewer=row.reviewer,
                                      adjudicated=row.adjudicated) for row in rows)
    row = rows[-1]
    if merged is None:  # the rows are active corrections: they always merge to one
        raise StoreError(f"trial {row.trial_id}: its active corrections merged to nothing")
    return OverridePair(
        run_id=row.run_id, critic=_critic_name(row.spec), trial_id=row.trial_id,
        judge_score=merged.judge_score, human_score=merged.score,
        judge_feedback=merged.judge_feedback, human_feedback=merged.feedback,
        author=merged.author, created_at=merged.created_at, input_text=row.input_text,
        output=row.output,
    )


def _critic_name(spec: dict[str, Any] | None) -> str:
    critic = (spec or {}).get("critic") or {}
    return str(critic.get("name") or critic.get("type") or "critic")

