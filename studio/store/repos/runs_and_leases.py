"""Runs and the lease a worker holds on one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import and_, bindparam, insert, or_, select, update

import studio.store.schema as t
from studio.model.errors import LeaseLostError, NotFoundError
from studio.model.records import Run, RunRequest, RunStatus
from studio.model.redaction import redact, redact_data
from studio.store.connection import database_now
from studio.store.repos.base import Repository, guard, to_model

_RUN = t.runs.c.id == bindparam("run_id")
_BY_ID = select(t.runs).where(_RUN)
_RENEW = (update(t.runs).where(_RUN, t.runs.c.worker == bindparam("b_worker"))
          .values(heartbeat_at=bindparam("now")))
_CONTROL_AND_WORKER = select(t.runs.c.control, t.runs.c.worker).where(_RUN)
"""Built once: a run reads itself and beats every second."""


class RunRepository(Repository):
    """Runs and the lease a worker holds on one."""

    @guard
    def create_run(self, run: Run) -> Run:
        values = run.model_dump()
        values["spec"] = redact_data(run.spec.model_dump(mode="json", by_alias=True))
        values["config"] = redact_data(run.config.model_dump(mode="json"))
        values.update(t.run_sources(values["spec"]))  # found by query: forks, align runs
        with self.engine.begin() as c:
            c.execute(insert(t.runs), values)
        return self.get_run(run.id)

    @guard
    def get_run(self, run_id: str) -> Run:
        with self.engine.connect() as c:
            row = c.execute(_BY_ID, {"run_id": run_id}).first()
        if row is None:
            raise NotFoundError(f"run {run_id!r} does not exist")
        return to_model(Run, row)

    @guard
    def list_runs(self, limit: int = 200, project_id: int | None = None) -> list[Run]:
        query = select(t.runs).order_by(t.runs.c.created_at.desc()).limit(limit)
        if project_id is not None:
            query = query.where(t.runs.c.project_id == project_id)
        with self.engine.connect() as c:
            return [to_model(Run, r) for r in c.execute(query)]

    @guard
    def forks_of(self, run_id: str) -> list[Run]:
        """Every run forked from ``run_id``, however old, oldest first (one indexed query)."""
        query = (select(t.runs).where(t.runs.c.forked_from_run == run_id)
                 .order_by(t.runs.c.created_at, t.runs.c.id))
        with self.engine.connect() as c:
            return [to_model(Run, r) for r in c.execute(query)]

    @guard
    def align_runs_of(self, run_id: str) -> list[Run]:
        """Every run aligning ``run_id``'s critic, however old, newest first (one indexed
        query)."""
        query = (select(t.runs).where(t.runs.c.aligns_run == run_id)
                 .order_by(t.runs.c.created_at.desc(), t.runs.c.id.desc()))
        with self.engine.connect() as c:
            return [to_model(Run, r) for r in c.execute(query)]

    @guard
    def update_run(self, run_id: str, **fields: Any) -> None:
        if "error" in fields and fields["error"]:
            fields["error"] = redact(str(fields["error"]))
        for name in ("status", "control"):
            if isinstance(fields.get(name), RunStatus | RunRequest):
                fields[name] = fields[name].value
        with self.engine.begin() as c:
            c.execute(update(t.runs).where(t.runs.c.id == run_id).values(**fields))

    @guard
    def request_control(self, run_id: str, request: RunRequest | None) -> None:
        """Store a person's request for the run's worker (``pause``, ``stop``, or None: go
        on), counted in ``control_seq``."""
        value = None if request is None else RunRequest(request).value
        with self.engine.begin() as c:
            c.execute(update(t.runs).where(_RUN).values(
                control=value, control_seq=t.runs.c.control_seq + 1), {"run_id": run_id})

    @guard
    def clear_control(self, run_id: str, seen_seq: int) -> bool:
        """Withdraw the run's request as it was when ``control_seq`` was ``seen_seq`` (read
        before a resume claimed the run); a request made since, e.g. a Stop that arrived while
        the run was being resumed, is kept. True when one was withdrawn."""
        with self.engine.begin() as c:
            return bool(c.execute(update(t.runs).where(
                _RUN, t.runs.c.control_seq == seen_seq, t.runs.c.control.is_not(None))
                .values(control=None), {"run_id": run_id}).rowcount)

    @guard
    def claim_run(self, run_id: str, worker: str, *, stale_after_s: float) -> bool:
        """Make ``worker`` the owner of a run unless another worker holds a live lease on it.

        One conditional UPDATE: it succeeds when no worker holds the run, when ``worker``
        already does, or when the holder's heartbeat is older than ``stale_after_s`` (it
        died). Of two processes claiming at once, exactly one wins (row lock on PostgreSQL,
        one writer at a time on SQLite)."""
        with self.engine.begin() as c:
            now = database_now(c)
            stale = now - timedelta(seconds=stale_after_s)
            result = c.execute(
                update(t.runs)
                .where(t.runs.c.id == run_id)
                .where(or_(t.runs.c.worker.is_(None), t.runs.c.worker == worker,
                           t.runs.c.heartbeat_at.is_(None), t.runs.c.heartbeat_at < stale))
                .values(worker=worker, heartbeat_at=now)
            )
        return result.rowcount == 1

    @guard
    def heartbeat(self, run_id: str, worker: str) -> RunRequest | None:
        """Record that ``worker`` is alive; returns the pending control request, if any.

        Raises:
            LeaseLostError: ``worker`` no longer holds the run (another worker took it over).
        """
        with self.engine.begin() as c:
            renewed = c.execute(_RENEW, {"run_id": run_id, "b_worker": worker,
                                         "now": database_now(c)}).rowcount
            row = c.execute(_CONTROL_AND_WORKER, {"run_id": run_id}).first()
        if not renewed:
            holder = row[1] if row else None
            raise LeaseLostError(f"worker {worker} lost run {run_id}: it is now held by "
                                 f"{holder or 'no worker'}")
        return RunRequest(row[0]) if row and row[0] else None

    @guard
    def release_lease(self, run_id: str, worker: str) -> bool:
        """Let go of a run, only if ``worker`` still holds it (never another worker's lease)."""
        with self.engine.begin() as c:
            return bool(c.execute(update(t.runs).where(and_(t.runs.c.id == run_id,
                                                            t.runs.c.worker == worker))
                                  .values(worker=None)).rowcount)

    @guard
    def mark_orphans(self, stale_after_s: float) -> list[str]:
        """Runs whose worker stopped sending heartbeats become ``orphaned`` (resumable)."""
        active = [RunStatus.RUNNING.value, RunStatus.PAUSED.value, RunStatus.PENDING.value]
        with self.engine.begin() as c:
            stale = database_now(c) - timedelta(seconds=stale_after_s)
            condition = and_(t.runs.c.status.in_(active),
                             or_(t.runs.c.heartbeat_at.is_(None), t.runs.c.heartbeat_at < stale),
                             t.runs.c.created_at < stale)
            ids = [r[0] for r in c.execute(select(t.runs.c.id).where(condition))]
            if ids:
                c.execute(update(t.runs).where(t.runs.c.id.in_(ids))
                          .values(status=RunStatus.ORPHANED.value, worker=None))
        return ids

