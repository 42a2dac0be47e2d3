"""The run queue and the worker processes that serve it."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from sqlalchemy import and_, case, delete, insert, or_, select, update

import studio.store.schema as t
from studio.model.records import Run, RunStatus, StopReason, WorkerInfo, utcnow
from studio.model.redaction import redact
from studio.store.connection import database_now, write_transaction
from studio.store.repos.base import Database, Repository, guard, to_model
from studio.store.repos.runs_and_leases import RunRepository

_CLAIMABLE = [RunStatus.QUEUED.value, RunStatus.PENDING.value, RunStatus.RUNNING.value,
              RunStatus.PAUSED.value, RunStatus.ORPHANED.value]


class QueueRepository(Repository):
    """The run queue and the worker processes that serve it."""

    def __init__(self, db: Database, runs: RunRepository) -> None:
        super().__init__(db)
        self.runs = runs  # a claimed run is read back whole

    @guard
    def enqueue_run(self, run_id: str, queue: str) -> bool:
        """Hand a created (``pending``, unclaimed) run to the workers of ``queue``. Done after
        its examples are stored, so a worker never claims a run that is half written."""
        with self.engine.begin() as c:
            result = c.execute(update(t.runs).where(
                t.runs.c.id == run_id, t.runs.c.status == RunStatus.PENDING.value,
                t.runs.c.worker.is_(None)).values(status=RunStatus.QUEUED.value, queue=queue))
        return result.rowcount == 1

    @guard
    def claim_next_run(self, worker: str, queue: str, *, stale_after_s: float,
                       skip: Collection[str] = ()) -> Run | None:
        """Take the oldest run of ``queue`` that nobody holds (queued, or its worker's lease
        expired) and make ``worker`` its holder; None when there is none. ``skip``: runs this
        worker could not build a moment ago (another worker may). Leases are compared on the
        database's clock (:func:`~studio.store.connection.database_now`).

        One transaction holding the write lock from the start: on PostgreSQL the candidate row
        is locked with ``FOR UPDATE SKIP LOCKED`` (workers claiming at once take different runs
        instead of queueing behind one row), on SQLite ``BEGIN IMMEDIATE`` serializes claims.
        The update repeats the condition, so a claim can only take what is still free."""
        with write_transaction(self.engine) as c:
            now = database_now(c)
            free = _claimable(queue, now - timedelta(seconds=stale_after_s), skip)
            row = c.execute(select(t.runs.c.id).where(free)
                            .order_by(t.runs.c.created_at, t.runs.c.id).limit(1)
                            .with_for_update(skip_locked=True)).first()
            if row is None:
                return None
            claimed = c.execute(update(t.runs).where(t.runs.c.id == row.id, free).values(
                worker=worker, heartbeat_at=now, status=RunStatus.PENDING.value)).rowcount
        return self.runs.get_run(row.id) if claimed == 1 else None

    @guard
    def requeue_run(self, run_id: str, queue: str, *, withdraw_seq: int | None = None) -> bool:
        """Put a stopped, failed or orphaned run back in ``queue`` so a worker continues it
        from its checkpoint (after a worker's shutdown, or "Resume" with workers alive).

        A person's pending request (Pause, Stop) stays for the worker that takes it, unless
        ``withdraw_seq`` is given (a resume a person asked for, which read the run's
        ``control_seq`` as that): the request as it was then is withdrawn in the same update,
        one made since is kept (:func:`studio.engine.people.steering.withdraw_requests`)."""
        settled = [RunStatus.STOPPED.value, RunStatus.FAILED.value, RunStatus.ORPHANED.value]
        runs = t.runs.c
        control = runs.control if withdraw_seq is None else \
            case((runs.control_seq == withdraw_seq, None), else_=runs.control)
        with self.engine.begin() as c:
            result = c.execute(update(t.runs).where(
                runs.id == run_id, runs.status.in_(settled), runs.worker.is_(None)
            ).values(status=RunStatus.QUEUED.value, queue=queue, heartbeat_at=None,
                     stop_reason=None, finished_at=None, error=None, control=control,
                     build_tries=0, build_error=None))
        return result.rowcount == 1

    @guard
    def requeue_unbuilt(self, run_id: str, worker: str, reason: str, *, max_tries: int
                        ) -> tuple[int, bool]:
        """A run ``worker`` claimed but could not build (a key missing on its machine): back in
        its queue for another worker, with the try counted and the reason kept, or failed with
        that reason once ``max_tries`` workers (or tries) could not. Returns (tries, failed);
        (0, False) when ``worker`` no longer holds the run (nothing changed)."""
        runs = t.runs.c
        reason = redact(reason)[:2000]
        with write_transaction(self.engine) as c:
            row = c.execute(select(runs.build_tries).where(runs.id == run_id,
                                                           runs.worker == worker)).first()
            if row is None:
                return 0, False
            tries = int(row[0] or 0) + 1
            failed = tries >= max_tries
            values: dict = dict(worker=None, heartbeat_at=None, build_tries=tries,
                                build_error=reason, build_tries_max=max_tries)
            if failed:
                values |= dict(status=RunStatus.FAILED.value,
                               stop_reason=StopReason.NOT_STARTED.value,
                               finished_at=database_now(c),
                               error=f"no worker could start the run after {tries} tries; the "
                                     f"last said: {reason}")
            else:
                values |= dict(status=RunStatus.QUEUED.value)
            c.execute(update(t.runs).where(runs.id == run_id, runs.worker == worker)
                      .values(**values))
        return tries, failed

    @guard
    def cancel_queued(self, run_id: str) -> bool:
        """Stop a run that no worker has claimed yet; False if one claimed it meanwhile (then
        the run is steered through its worker like any other)."""
        with self.engine.begin() as c:
            result = c.execute(update(t.runs).where(
                t.runs.c.id == run_id, t.runs.c.status == RunStatus.QUEUED.value,
                t.runs.c.worker.is_(None)).values(status=RunStatus.STOPPED.value,
                                                  stop_reason="user", finished_at=utcnow()))
        return result.rowcount == 1

    @guard
    def beat_worker(self, worker: WorkerInfo) -> None:
        """Record that a worker process is alive (registering it on its first beat), and
        renew the lease of the run it holds: the lease lives from the claim on, also while
        the run's engine is still being built."""
        with self.engine.begin() as c:
            now = database_now(c)
            values = worker.model_dump() | {"last_seen": now}
            seen = c.execute(update(t.workers).where(t.workers.c.id == worker.id)
                             .values(**values)).rowcount
            if seen == 0:
                c.execute(insert(t.workers).values(**values))
            if worker.run_id is not None:
                c.execute(update(t.runs).where(t.runs.c.id == worker.run_id,
                                               t.runs.c.worker == worker.id)
                          .values(heartbeat_at=now))

    @guard
    def remove_worker(self, worker_id: str) -> None:
        with self.engine.begin() as c:
            c.execute(delete(t.workers).where(t.workers.c.id == worker_id))

    @guard
    def live_workers(self, stale_after_s: float, queue: str | None = None
                     ) -> list[WorkerInfo]:
        """Workers seen within ``stale_after_s`` (a killed one stays listed until then)."""
        with self.engine.connect() as c:
            query = select(t.workers).where(
                t.workers.c.last_seen >= database_now(c) - timedelta(seconds=stale_after_s))
            if queue is not None:
                query = query.where(t.workers.c.queue == queue)
            return [to_model(WorkerInfo, r) for r in c.execute(query.order_by(t.workers.c.id))]

    @guard
    def forget_workers(self, older_than_s: float) -> None:
        """Drop the rows of workers gone for long (killed ones never remove their own)."""
        with self.engine.begin() as c:
            c.execute(delete(t.workers).where(
                t.workers.c.last_seen < database_now(c) - timedelta(seconds=older_than_s)))


def _claimable(queue: str, stale: datetime, skip: Collection[str] = ()):
    """A run of ``queue`` that no live worker holds: never claimed, released, or its holder's
    last heartbeat is older than ``stale`` (the worker died); none of ``skip``."""
    runs = t.runs.c
    free = and_(runs.queue == queue, runs.status.in_(_CLAIMABLE),
                or_(runs.worker.is_(None), runs.heartbeat_at.is_(None), runs.heartbeat_at < stale))
    return and_(free, runs.id.not_in(list(skip))) if skip else free

