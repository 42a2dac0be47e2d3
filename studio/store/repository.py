"""The store: every record a run produces, committed as it happens.

It is the only channel between a run (engine in a worker thread or another process) and the UI.
All methods are thread-safe (one short transaction each) and return domain records.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import and_, delete, exists, func, insert, or_, select, update
from sqlalchemy.engine import Engine, Row
from sqlalchemy.exc import DatabaseError, IntegrityError, StatementError

import studio.store.schema as t
from studio.model.errors import (
    ConfigError,
    LeaseLostError,
    NotFoundError,
    RunStateError,
    StoreError,
    StudioError,
)
from studio.model.feedback import Feedback
from studio.model.jsontools import finite_json
from studio.model.records import (
    Candidate,
    Decision,
    EventKind,
    Example,
    Override,
    Project,
    Proposal,
    ProposalKind,
    ProposalStatus,
    Run,
    RunEvent,
    RunRequest,
    RunStatus,
    Split,
    Trial,
    WorkerInfo,
    merge_overrides,
    utcnow,
)
from studio.model.redaction import redact, redact_data
from studio.store.connection import (
    explain_database_error,
    sqlite_file,
    with_retry,
    write_transaction,
)


class EvalRun(BaseModel):
    """A logged judge evaluation (Agno's eval runs)."""

    id: int
    name: str
    kind: str
    summary: dict[str, Any]
    cases: list[dict[str, Any]]
    created_at: datetime


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


def _guard(method):
    """Turn database failures into a StoreError that says what to do, and refuse to read or
    write a SQLite file that was deleted or replaced since the store opened it."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        self.check_file()
        try:
            return with_retry(lambda: method(self, *args, **kwargs), self.url)
        except DatabaseError as exc:
            raise explain_database_error(exc, self.url) from exc
        except StatementError as exc:  # a value refused before it reached the database
            if isinstance(exc.orig, StudioError):
                raise exc.orig from None
            raise

    return wrapper


def _model(cls, row: Row | None, **rename: str):
    if row is None:
        return None
    data = dict(row._mapping)
    for source, target in rename.items():
        data[target] = data.pop(source)
    return cls.model_validate(data)


_INSERT_TRIAL = insert(t.trials)
_EXAMPLE_RENAME = {"idx": "index"}
_CANDIDATE_RENAME = {"idx": "index"}


class Store:
    """Repository over the studio database. Create it with :func:`studio.store.open_store`."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.path = sqlite_file(url)
        self._identity = _file_identity(self.path) if self.path else None

    def file_intact(self) -> bool:
        """False when the SQLite file this store opened was deleted or replaced (another file,
        or none, at its path): writes would go to a file nobody can see any more."""
        return self.path is None or _file_identity(self.path) == self._identity

    def check_file(self) -> None:
        """Raise StoreError when :meth:`file_intact` is False, so a run stops with an error
        instead of reporting as done what is not stored."""
        if not self.file_intact():
            state = "was deleted" if _file_identity(self.path) is None else "was replaced"
            raise StoreError(
                f"the database file {self.path} {state} while the studio was using it; "
                "anything saved since then is lost with the old file. Restore the file from a "
                "backup (or keep the new one) and restart; resume interrupted runs with "
                "`studio resume`.")

    # ------------------------------------------------------------------ projects

    @_guard
    def save_project(self, name: str, yaml_text: str, project_id: int | None = None) -> Project:
        """Create a project, or replace the YAML of ``project_id``."""
        if not name.strip():
            raise ConfigError("a project needs a name", where="project.name")
        now = utcnow()
        try:
            with self.engine.begin() as c:
                if project_id is None:
                    project_id = c.execute(insert(t.projects).values(
                        name=name, yaml=yaml_text, created_at=now, updated_at=now)
                    ).inserted_primary_key[0]
                else:
                    c.execute(update(t.projects).where(t.projects.c.id == project_id)
                              .values(name=name, yaml=yaml_text, updated_at=now))
        except IntegrityError as exc:
            raise ConfigError(f"a project named {name!r} already exists; choose another name",
                              where="project.name", value=name) from exc
        return self.get_project(project_id)

    @_guard
    def get_project(self, project_id: int) -> Project:
        with self.engine.connect() as c:
            row = c.execute(select(t.projects).where(t.projects.c.id == project_id)).first()
        if row is None:
            raise NotFoundError(f"project {project_id} does not exist")
        return _model(Project, row)

    @_guard
    def find_project(self, name: str) -> Project | None:
        with self.engine.connect() as c:
            row = c.execute(select(t.projects).where(t.projects.c.name == name)).first()
        return _model(Project, row)

    @_guard
    def list_projects(self) -> list[Project]:
        with self.engine.connect() as c:
            rows = c.execute(select(t.projects).order_by(t.projects.c.updated_at.desc()))
            return [_model(Project, r) for r in rows]

    @_guard
    def delete_project(self, project_id: int) -> None:
        with self.engine.begin() as c:
            c.execute(delete(t.projects).where(t.projects.c.id == project_id))

    # ------------------------------------------------------------------ runs

    @_guard
    def create_run(self, run: Run) -> Run:
        values = run.model_dump()
        values["spec"] = redact_data(run.spec.model_dump(mode="json", by_alias=True))
        values["config"] = redact_data(run.config.model_dump(mode="json"))
        with self.engine.begin() as c:
            c.execute(insert(t.runs), values)
        return self.get_run(run.id)

    @_guard
    def get_run(self, run_id: str) -> Run:
        with self.engine.connect() as c:
            row = c.execute(select(t.runs).where(t.runs.c.id == run_id)).first()
        if row is None:
            raise NotFoundError(f"run {run_id!r} does not exist")
        return _model(Run, row)

    @_guard
    def list_runs(self, limit: int = 200, project_id: int | None = None) -> list[Run]:
        query = select(t.runs).order_by(t.runs.c.created_at.desc()).limit(limit)
        if project_id is not None:
            query = query.where(t.runs.c.project_id == project_id)
        with self.engine.connect() as c:
            return [_model(Run, r) for r in c.execute(query)]

    @_guard
    def update_run(self, run_id: str, **fields: Any) -> None:
        if "error" in fields and fields["error"]:
            fields["error"] = redact(str(fields["error"]))
        for name in ("status", "control"):
            if isinstance(fields.get(name), RunStatus | RunRequest):
                fields[name] = fields[name].value
        with self.engine.begin() as c:
            c.execute(update(t.runs).where(t.runs.c.id == run_id).values(**fields))

    @_guard
    def clear_control(self, run_id: str, seen: RunRequest | None) -> bool:
        """Withdraw the run's request ``seen`` (read before a resume claimed the run); a request
        made since, e.g. a Stop that arrived while the run was being resumed, is kept."""
        current = t.runs.c.control.is_(None) if seen is None else \
            t.runs.c.control == RunRequest(seen).value
        with self.engine.begin() as c:
            return bool(c.execute(update(t.runs).where(t.runs.c.id == run_id, current)
                                  .values(control=None)).rowcount)

    @_guard
    def claim_run(self, run_id: str, worker: str, *, stale_after_s: float) -> bool:
        """Make ``worker`` the owner of a run unless another worker holds a live lease on it.

        One conditional UPDATE: it succeeds when no worker holds the run, when ``worker``
        already does, or when the holder's heartbeat is older than ``stale_after_s`` (it
        died). Of two processes claiming at once, exactly one wins (row lock on PostgreSQL,
        one writer at a time on SQLite)."""
        now = utcnow()
        stale = now - timedelta(seconds=stale_after_s)
        with self.engine.begin() as c:
            result = c.execute(
                update(t.runs)
                .where(t.runs.c.id == run_id)
                .where(or_(t.runs.c.worker.is_(None), t.runs.c.worker == worker,
                           t.runs.c.heartbeat_at.is_(None), t.runs.c.heartbeat_at < stale))
                .values(worker=worker, heartbeat_at=now)
            )
        return result.rowcount == 1

    @_guard
    def heartbeat(self, run_id: str, worker: str) -> RunRequest | None:
        """Record that ``worker`` is alive; returns the pending control request, if any.

        Raises:
            LeaseLostError: ``worker`` no longer holds the run (another worker took it over).
        """
        with self.engine.begin() as c:
            renewed = c.execute(update(t.runs).where(and_(t.runs.c.id == run_id,
                                                          t.runs.c.worker == worker))
                                .values(heartbeat_at=utcnow())).rowcount
            row = c.execute(select(t.runs.c.control, t.runs.c.worker)
                            .where(t.runs.c.id == run_id)).first()
        if not renewed:
            holder = row[1] if row else None
            raise LeaseLostError(f"worker {worker} lost run {run_id}: it is now held by "
                                 f"{holder or 'no worker'}")
        return RunRequest(row[0]) if row and row[0] else None

    @_guard
    def release_lease(self, run_id: str, worker: str) -> bool:
        """Let go of a run, only if ``worker`` still holds it (never another worker's lease)."""
        with self.engine.begin() as c:
            return bool(c.execute(update(t.runs).where(and_(t.runs.c.id == run_id,
                                                            t.runs.c.worker == worker))
                                  .values(worker=None)).rowcount)

    @_guard
    def mark_orphans(self, stale_after_s: float) -> list[str]:
        """Runs whose worker stopped sending heartbeats become ``orphaned`` (resumable)."""
        stale = utcnow() - timedelta(seconds=stale_after_s)
        active = [RunStatus.RUNNING.value, RunStatus.PAUSED.value, RunStatus.PENDING.value]
        condition = and_(t.runs.c.status.in_(active),
                         or_(t.runs.c.heartbeat_at.is_(None), t.runs.c.heartbeat_at < stale),
                         t.runs.c.created_at < stale)
        with self.engine.begin() as c:
            ids = [r[0] for r in c.execute(select(t.runs.c.id).where(condition))]
            if ids:
                c.execute(update(t.runs).where(t.runs.c.id.in_(ids))
                          .values(status=RunStatus.ORPHANED.value, worker=None))
        return ids

    # ------------------------------------------------------------------ queue & workers

    @_guard
    def enqueue_run(self, run_id: str, queue: str) -> bool:
        """Hand a created (``pending``, unclaimed) run to the workers of ``queue``. Done after
        its examples are stored, so a worker never claims a run that is half written."""
        with self.engine.begin() as c:
            result = c.execute(update(t.runs).where(
                t.runs.c.id == run_id, t.runs.c.status == RunStatus.PENDING.value,
                t.runs.c.worker.is_(None)).values(status=RunStatus.QUEUED.value, queue=queue))
        return result.rowcount == 1

    @_guard
    def claim_next_run(self, worker: str, queue: str, *, stale_after_s: float) -> Run | None:
        """Take the oldest run of ``queue`` that nobody holds (queued, or its worker's lease
        expired) and make ``worker`` its holder; None when there is none.

        One transaction holding the write lock from the start: on PostgreSQL the candidate row
        is locked with ``FOR UPDATE SKIP LOCKED`` (workers claiming at once take different runs
        instead of queueing behind one row), on SQLite ``BEGIN IMMEDIATE`` serializes claims.
        The update repeats the condition, so a claim can only take what is still free."""
        now = utcnow()
        free = _claimable(queue, now - timedelta(seconds=stale_after_s))
        with write_transaction(self.engine) as c:
            row = c.execute(select(t.runs.c.id).where(free)
                            .order_by(t.runs.c.created_at, t.runs.c.id).limit(1)
                            .with_for_update(skip_locked=True)).first()
            if row is None:
                return None
            claimed = c.execute(update(t.runs).where(t.runs.c.id == row.id, free).values(
                worker=worker, heartbeat_at=now, status=RunStatus.PENDING.value)).rowcount
        return self.get_run(row.id) if claimed == 1 else None

    @_guard
    def requeue_run(self, run_id: str, queue: str) -> bool:
        """Put a stopped, failed or orphaned run back in ``queue`` so a worker continues it
        from its checkpoint (after a worker's shutdown, or "Resume" with workers alive)."""
        settled = [RunStatus.STOPPED.value, RunStatus.FAILED.value, RunStatus.ORPHANED.value]
        with self.engine.begin() as c:
            result = c.execute(update(t.runs).where(
                t.runs.c.id == run_id, t.runs.c.status.in_(settled), t.runs.c.worker.is_(None)
            ).values(status=RunStatus.QUEUED.value, queue=queue, heartbeat_at=None,
                     stop_reason=None, finished_at=None, error=None, control=None))
        return result.rowcount == 1

    @_guard
    def cancel_queued(self, run_id: str) -> bool:
        """Stop a run that no worker has claimed yet; False if one claimed it meanwhile (then
        the run is steered through its worker like any other)."""
        with self.engine.begin() as c:
            result = c.execute(update(t.runs).where(
                t.runs.c.id == run_id, t.runs.c.status == RunStatus.QUEUED.value,
                t.runs.c.worker.is_(None)).values(status=RunStatus.STOPPED.value,
                                                  stop_reason="user", finished_at=utcnow()))
        return result.rowcount == 1

    @_guard
    def beat_worker(self, worker: WorkerInfo) -> None:
        """Record that a worker process is alive (registering it on its first beat), and
        renew the lease of the run it holds: the lease lives from the claim on, also while
        the run's engine is still being built."""
        now = utcnow()
        values = worker.model_dump() | {"last_seen": now}
        with self.engine.begin() as c:
            seen = c.execute(update(t.workers).where(t.workers.c.id == worker.id)
                             .values(**values)).rowcount
            if seen == 0:
                c.execute(insert(t.workers).values(**values))
            if worker.run_id is not None:
                c.execute(update(t.runs).where(t.runs.c.id == worker.run_id,
                                               t.runs.c.worker == worker.id)
                          .values(heartbeat_at=now))

    @_guard
    def remove_worker(self, worker_id: str) -> None:
        with self.engine.begin() as c:
            c.execute(delete(t.workers).where(t.workers.c.id == worker_id))

    @_guard
    def live_workers(self, stale_after_s: float, queue: str | None = None
                     ) -> list[WorkerInfo]:
        """Workers seen within ``stale_after_s`` (a killed one stays listed until then)."""
        query = select(t.workers).where(
            t.workers.c.last_seen >= utcnow() - timedelta(seconds=stale_after_s))
        if queue is not None:
            query = query.where(t.workers.c.queue == queue)
        with self.engine.connect() as c:
            return [_model(WorkerInfo, r) for r in c.execute(query.order_by(t.workers.c.id))]

    @_guard
    def forget_workers(self, older_than_s: float) -> None:
        """Drop the rows of workers gone for long (killed ones never remove their own)."""
        with self.engine.begin() as c:
            c.execute(delete(t.workers).where(
                t.workers.c.last_seen < utcnow() - timedelta(seconds=older_than_s)))

    # ------------------------------------------------------------------ examples

    @_guard
    def add_examples(self, run_id: str, split: Split, rows: Iterable[dict]) -> list[Example]:
        values = [{"run_id": run_id, "split": Split(split).value, "idx": i, "data": row}
                  for i, row in enumerate(rows)]
        with self.engine.begin() as c:
            if values:
                c.execute(insert(t.examples), values)
        return self.examples(run_id, split)

    @_guard
    def examples(self, run_id: str, split: Split | None = None) -> list[Example]:
        query = select(t.examples).where(t.examples.c.run_id == run_id)
        if split is not None:
            query = query.where(t.examples.c.split == Split(split).value)
        query = query.order_by(t.examples.c.split, t.examples.c.idx)
        with self.engine.connect() as c:
            return [_model(Example, r, **_EXAMPLE_RENAME) for r in c.execute(query)]

    @_guard
    def set_example_data(self, example_id: int, data: dict[str, Any]) -> None:
        """Replace an example's fields: an align run's label read again from the person's
        correction as it is now (:mod:`studio.engine.labels`)."""
        with self.engine.begin() as c:
            c.execute(update(t.examples).where(t.examples.c.id == example_id)
                      .values(data=data))

    @_guard
    def get_example(self, example_id: int) -> Example:
        """One example (a trial view reads its images from it)."""
        with self.engine.connect() as c:
            row = c.execute(select(t.examples).where(t.examples.c.id == example_id)).first()
        if row is None:
            raise NotFoundError(f"example {example_id} does not exist")
        return _model(Example, row, **_EXAMPLE_RENAME)

    # ------------------------------------------------------------------ candidates

    @_guard
    def add_candidate(self, candidate: Candidate) -> Candidate:
        values = candidate.model_dump(exclude={"id"})
        values["idx"] = values.pop("index")
        with self.engine.begin() as c:
            new_id = c.execute(insert(t.candidates), values).inserted_primary_key[0]
        return candidate.model_copy(update={"id": new_id})

    @_guard
    def candidates(self, run_id: str) -> list[Candidate]:
        query = (select(t.candidates).where(t.candidates.c.run_id == run_id)
                 .order_by(t.candidates.c.idx))
        with self.engine.connect() as c:
            return [_model(Candidate, r, **_CANDIDATE_RENAME) for r in c.execute(query)]

    @_guard
    def find_candidate(self, run_id: str, content_hash: str) -> Candidate | None:
        """The run's first candidate with these components (by content hash), or None: one
        lookup in SQL, not every candidate read (duplicate checks on long runs)."""
        query = (select(t.candidates).where(t.candidates.c.run_id == run_id,
                                            t.candidates.c.content_hash == content_hash)
                 .order_by(t.candidates.c.idx).limit(1))
        with self.engine.connect() as c:
            return _model(Candidate, c.execute(query).first(), **_CANDIDATE_RENAME)

    @_guard
    def pooled_ids(self, run_id: str) -> list[int]:
        """The pooled candidates' ids, by index (the seed first)."""
        query = (select(t.candidates.c.id).where(t.candidates.c.run_id == run_id,
                                                 t.candidates.c.pooled.is_(True))
                 .order_by(t.candidates.c.idx))
        with self.engine.connect() as c:
            return [row[0] for row in c.execute(query)]

    def iter_candidates(self, run_id: str, *, batch_size: int = 200) -> Iterator[Candidate]:
        """Every candidate of a run by index, read ``batch_size`` at a time (exports)."""
        last = -1
        while True:
            batch = self._candidate_batch(run_id, last, batch_size)
            yield from batch
            if len(batch) < batch_size:
                return
            last = batch[-1].index

    @_guard
    def _candidate_batch(self, run_id: str, after_index: int, size: int) -> list[Candidate]:
        query = (select(t.candidates).where(t.candidates.c.run_id == run_id,
                                            t.candidates.c.idx > after_index)
                 .order_by(t.candidates.c.idx).limit(size))
        with self.engine.connect() as c:
            return [_model(Candidate, r, **_CANDIDATE_RENAME) for r in c.execute(query)]

    @_guard
    def get_candidate(self, candidate_id: int) -> Candidate:
        with self.engine.connect() as c:
            row = c.execute(select(t.candidates).where(t.candidates.c.id == candidate_id)).first()
        if row is None:
            raise NotFoundError(f"candidate {candidate_id} does not exist")
        return _model(Candidate, row, **_CANDIDATE_RENAME)

    @_guard
    def set_pooled(self, candidate_id: int, pooled: bool = True) -> None:
        with self.engine.begin() as c:
            c.execute(update(t.candidates).where(t.candidates.c.id == candidate_id)
                      .values(pooled=pooled))

    # ------------------------------------------------------------------ trials

    @_guard
    def add_trial(self, trial: Trial) -> Trial:
        """Insert and commit one trial (the UI sees it on its next poll).

        A trial judged by a worker is committed only while that worker holds the run: the run's
        row is read under a share lock after the insert, so a takeover either waits for this
        commit or makes it roll back (then nothing a lost worker judged is ever stored).

        Raises:
            LeaseLostError: ``trial.worker`` no longer holds the run.
        """
        values = _finite_trial(redact_data(trial.model_dump(exclude={"id", "override"})))
        with self.engine.begin() as c:
            new_id = c.execute(_INSERT_TRIAL, values).inserted_primary_key[0]
            if trial.worker is not None:
                holder = c.execute(select(t.runs.c.worker).where(t.runs.c.id == trial.run_id)
                                   .with_for_update(read=True)).scalar()
                if holder != trial.worker:
                    raise LeaseLostError(f"worker {trial.worker} lost run {trial.run_id}: it "
                                         f"is now held by {holder or 'no worker'}")
        return trial.model_copy(update={"id": new_id})

    @_guard
    def rejudge_trial(self, trial_id: int, feedback: Feedback, error: str | None) -> None:
        """Replace a trial's verdict with one recomputed from its stored output, nothing judged
        again: an align run's trial whose label (the person's correction) changed or was undone
        (:mod:`studio.engine.labels`). Output, trace and the trial's place stay as they were."""
        values = {"score": feedback.score, "feedback": feedback.model_dump(),
                  "error": error, "trace": {}}
        values = _finite_trial(redact_data(values))
        values.pop("trace")
        with self.engine.begin() as c:
            c.execute(update(t.trials).where(t.trials.c.id == trial_id).values(**values))

    @_guard
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
        columns = list(t.trials.c) if with_trace else [
            col for col in t.trials.c if col.name != "trace"]
        query = select(*columns).where(t.trials.c.run_id == run_id, t.trials.c.id > after_id)
        if candidate_id is not None:
            query = query.where(t.trials.c.candidate_id == candidate_id)
        if phase is not None:
            query = query.where(t.trials.c.phase == phase)
        if proposal_id is not None:
            query = query.where(t.trials.c.proposal_id == proposal_id)
        if ids is not None:
            query = query.where(t.trials.c.id.in_(list(ids)))
        if phases is not None:
            query = query.where(t.trials.c.phase.in_(list(phases)))
        if iteration is not None:
            query = query.where(t.trials.c.iteration == iteration)
        query = query.order_by(t.trials.c.id.desc() if newest_first else t.trials.c.id)
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as c:
            rows = c.execute(query).all()
            active = self._active_overrides(c, run_id, after_id)
        return [self._trial(row, active.get(row.id)) for row in rows]

    @_guard
    def get_trial(self, trial_id: int) -> Trial:
        with self.engine.connect() as c:
            row = c.execute(select(t.trials).where(t.trials.c.id == trial_id)).first()
            if row is None:
                raise NotFoundError(f"trial {trial_id} does not exist")
            active = self._effective_overrides(c, t.overrides.c.trial_id == trial_id)
        return self._trial(row, active.get(trial_id))

    @_guard
    def first_trials(self, candidate_id: int, example_ids: list[int]) -> dict[int, Trial]:
        """The committed trial per example for one candidate (one query for a whole batch)."""
        query = (select(t.trials).where(t.trials.c.candidate_id == candidate_id,
                                        t.trials.c.example_id.in_(example_ids))
                 .order_by(t.trials.c.id))
        with self.engine.connect() as c:
            rows = c.execute(query).all()
            ids = [row.id for row in rows]
            active = (self._effective_overrides(c, t.overrides.c.trial_id.in_(ids))
                      if ids else {})
        found: dict[int, Trial] = {}
        for row in rows:
            if row.example_id not in found:
                found[row.example_id] = self._trial(row, active.get(row.id))
        return found

    @_guard
    def effective_scores(self, run_id: str, *, example_ids: Iterable[int] | None = None,
                         candidate_ids: Iterable[int] | None = None,
                         pooled_only: bool = False) -> dict[tuple[int, int], float | None]:
        """``(candidate_id, example_id) -> effective score`` of the first trial of each pair,
        straight from SQL (no records built), for views over thousands of trials.

        ``example_ids``, ``candidate_ids`` and ``pooled_only`` narrow the pairs in SQL (the
        pool's views need only the pooled candidates on the validation examples, not every
        minibatch pair)."""
        where = [t.trials.c.run_id == run_id]
        if example_ids is not None:
            where.append(t.trials.c.example_id.in_(list(example_ids)))
        if candidate_ids is not None:
            where.append(t.trials.c.candidate_id.in_(list(candidate_ids)))
        if pooled_only:
            where.append(t.trials.c.candidate_id.in_(
                select(t.candidates.c.id).where(t.candidates.c.run_id == run_id,
                                                t.candidates.c.pooled.is_(True))))
        first = (select(func.min(t.trials.c.id)).where(*where)
                 .group_by(t.trials.c.candidate_id, t.trials.c.example_id))
        query = select(t.trials.c.candidate_id, t.trials.c.example_id,
                       _effective_score()).where(t.trials.c.id.in_(first))
        with self.engine.connect() as c:  # the overrides are merged in SQL: none are loaded
            return {(row[0], row[1]): row[2] for row in c.execute(query)}

    @_guard
    def first_scores(self, run_id: str, *, example_ids: Iterable[int],
                     candidate_ids: Iterable[int] | None = None
                     ) -> dict[tuple[int, int], tuple[float | None, float | None]]:
        """``(candidate_id, example_id) -> (judge's score, effective score)`` of the first
        trial of each pair, in one query: what a proposal's evidence is computed from
        (:mod:`studio.engine.evidence`). ``candidate_ids`` narrows the pairs in SQL."""
        where = [t.trials.c.run_id == run_id, t.trials.c.example_id.in_(list(example_ids))]
        if candidate_ids is not None:
            where.append(t.trials.c.candidate_id.in_(list(candidate_ids)))
        first = (select(func.min(t.trials.c.id)).where(*where)
                 .group_by(t.trials.c.candidate_id, t.trials.c.example_id))
        query = select(t.trials.c.candidate_id, t.trials.c.example_id, t.trials.c.score,
                       _effective_score()).where(t.trials.c.id.in_(first))
        with self.engine.connect() as c:
            return {(row[0], row[1]): (row[2], row[3]) for row in c.execute(query)}

    @_guard
    def child_means(self, run_id: str) -> dict[int, float]:
        """Per proposal, the mean effective score of its child's minibatch trials (trials
        that could not be evaluated left out; proposals with none left out), one SQL query."""
        effective = _effective_score()
        query = (select(t.trials.c.proposal_id, func.avg(effective))
                 .where(t.trials.c.run_id == run_id, t.trials.c.phase == "child",
                        t.trials.c.proposal_id.is_not(None))
                 .group_by(t.trials.c.proposal_id).having(func.count(effective) > 0))
        with self.engine.connect() as c:
            return {row[0]: float(row[1]) for row in c.execute(query)}

    @_guard
    def candidate_indexes(self, run_id: str) -> dict[int, int]:
        """``candidate id -> index`` (#0 is the seed), without the components."""
        query = select(t.candidates.c.id, t.candidates.c.idx).where(
            t.candidates.c.run_id == run_id).order_by(t.candidates.c.idx)
        with self.engine.connect() as c:
            return {row[0]: row[1] for row in c.execute(query)}

    @_guard
    def run_marker(self, run_id: str) -> tuple[int, ...]:
        """Changes whenever a trial, an override (added or undone) or a decision is added: a
        cheap key (one round trip, indexed counts) for caching views of a run."""
        trials, overrides, decisions = t.trials.c, t.overrides.c, t.decisions.c
        query = select(func.count(), func.coalesce(func.max(trials.id), 0)).where(
            trials.run_id == run_id)
        o = (select(func.count(), func.coalesce(func.max(overrides.id), 0),
                    func.count(overrides.undone_at)).where(overrides.run_id == run_id))
        d = select(func.count()).select_from(t.decisions).where(decisions.run_id == run_id)
        with self.engine.connect() as c:
            first = tuple(c.execute(query).one())
            second = tuple(c.execute(o).one())
            third = c.execute(d).scalar_one()
        return (*first, *second, third)

    @_guard
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
            ids = [row.id for row in rows]
            active = (self._effective_overrides(c, t.overrides.c.trial_id.in_(ids))
                      if ids else {})
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

    @_guard
    def _trial_batch(self, run_id: str, columns: list, where: list, after_id: int, size: int,
                     skip: int = 0) -> tuple[list[Row], dict[int, Override]]:
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

    @_guard
    def count_trials(self, run_id: str, *, loop_only: bool = False) -> int:
        """A run's trials; ``loop_only`` leaves out the held-out test set's (the metric-call
        budget counts what the loop judged)."""
        where = [t.trials.c.run_id == run_id]
        if loop_only:
            where.append(t.trials.c.split != Split.TEST.value)
        with self.engine.connect() as c:
            return c.execute(select(func.count()).select_from(t.trials)
                             .where(*where)).scalar_one()

    @staticmethod
    def _trial(row: Row, override: Override | None) -> Trial:
        data = dict(row._mapping)
        data.setdefault("trace", {})
        data["override"] = override
        return Trial.model_validate(data)

    @classmethod
    def _active_overrides(cls, connection, run_id: str, after_id: int = 0) -> dict[int, Override]:
        return cls._effective_overrides(connection, t.overrides.c.run_id == run_id,
                                        t.overrides.c.trial_id > after_id)

    @staticmethod
    def _effective_overrides(connection, *where) -> dict[int, Override]:
        """``trial_id -> merge_overrides(active overrides)`` for the trials ``where`` selects."""
        rows = connection.execute(
            select(t.overrides).where(*where, t.overrides.c.undone_at.is_(None))
            .order_by(t.overrides.c.id))
        per_trial: dict[int, list[Override]] = {}
        for row in rows:
            per_trial.setdefault(row.trial_id, []).append(_model(Override, row))
        return {trial_id: merge_overrides(found) for trial_id, found in per_trial.items()}

    # ------------------------------------------------------------------ overrides

    @_guard
    def add_override(self, trial_id: int, *, score: float | None, feedback: str | None,
                     author: str) -> Override:
        """Record a person's correction; the judge's own values are copied beside it."""
        trial = self.get_trial(trial_id)
        override = Override(trial_id=trial_id, score=score,
                            feedback=None if feedback is None else redact(feedback),
                            judge_score=trial.score, judge_feedback=trial.feedback_text,
                            author=author or "anonymous")
        values = override.model_dump(exclude={"id"})
        values["run_id"] = trial.run_id
        with self.engine.begin() as c:
            new_id = c.execute(insert(t.overrides), values).inserted_primary_key[0]
        return override.model_copy(update={"id": new_id})

    @_guard
    def undo_override(self, override_id: int) -> Override:
        with self.engine.begin() as c:
            c.execute(update(t.overrides).where(t.overrides.c.id == override_id,
                                                t.overrides.c.undone_at.is_(None))
                      .values(undone_at=utcnow()))
            row = c.execute(select(t.overrides).where(t.overrides.c.id == override_id)).first()
        if row is None:
            raise NotFoundError(f"override {override_id} does not exist")
        return _model(Override, row)

    @_guard
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
            return [_model(Override, r) for r in c.execute(query)]

    @_guard
    def override_pairs(self, run_id: str | None = None) -> list[OverridePair]:
        """One pair per corrected trial (its effective correction beside the judge's values),
        per critic, for agreement statistics: a re-corrected trial counts once."""
        o, tr, r = t.overrides, t.trials, t.runs
        query = (select(o.c.run_id, o.c.trial_id, o.c.judge_score, o.c.score, o.c.judge_feedback,
                        o.c.feedback, o.c.author, o.c.created_at, tr.c.input_text, tr.c.output,
                        r.c.spec)
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

    # ------------------------------------------------------------------ proposals & decisions

    @_guard
    def add_proposal(self, proposal: Proposal) -> Proposal:
        values = redact_data(proposal.model_dump(exclude={"id"}))
        with self.engine.begin() as c:
            new_id = c.execute(insert(t.proposals), values).inserted_primary_key[0]
        return proposal.model_copy(update={"id": new_id})

    @_guard
    def update_proposal(self, proposal_id: int, **fields: Any) -> Proposal:
        if isinstance(fields.get("status"), ProposalStatus):
            fields["status"] = fields["status"].value
        with self.engine.begin() as c:
            c.execute(update(t.proposals).where(t.proposals.c.id == proposal_id).values(**fields))
        return self.get_proposal(proposal_id)

    @_guard
    def get_proposal(self, proposal_id: int) -> Proposal:
        with self.engine.connect() as c:
            row = c.execute(select(t.proposals).where(t.proposals.c.id == proposal_id)).first()
        if row is None:
            raise NotFoundError(f"proposal {proposal_id} does not exist")
        return _model(Proposal, row)

    @_guard
    def proposals(self, run_id: str, *, status: ProposalStatus | None = None,
                  iteration: int | None = None, kind: ProposalKind | None = None
                  ) -> list[Proposal]:
        query = select(t.proposals).where(t.proposals.c.run_id == run_id)
        if status is not None:
            query = query.where(t.proposals.c.status == ProposalStatus(status).value)
        if iteration is not None:
            query = query.where(t.proposals.c.iteration == iteration)
        if kind is not None:
            query = query.where(t.proposals.c.kind == ProposalKind(kind).value)
        with self.engine.connect() as c:
            return [_model(Proposal, r) for r in c.execute(query.order_by(t.proposals.c.id))]

    @_guard
    def add_decision(self, decision: Decision) -> Decision:
        """Record the decision on a proposal that has none yet: the first decision wins.

        The proposal row is claimed and the decision inserted in one transaction
        (``UPDATE ... WHERE decided_at IS NULL``), so of two people deciding at once, or a
        person and a second engine, exactly one succeeds.

        Raises:
            RunStateError: the proposal was already decided (says by whom and when).
        """
        proposal = self.get_proposal(decision.proposal_id)
        values = decision.model_dump(exclude={"id"})
        values["run_id"] = proposal.run_id
        open_statuses = [ProposalStatus.EVALUATING.value, ProposalStatus.PENDING.value]
        with self.engine.begin() as c:
            claimed = c.execute(
                update(t.proposals)
                .where(t.proposals.c.id == decision.proposal_id,
                       t.proposals.c.decided_at.is_(None),
                       t.proposals.c.status.in_(open_statuses))
                .values(decided_at=decision.created_at)).rowcount
            if claimed == 1:
                new_id = c.execute(insert(t.decisions), values).inserted_primary_key[0]
        if claimed != 1:
            raise RunStateError(self.already_decided(proposal))
        return decision.model_copy(update={"id": new_id})

    def already_decided(self, proposal: Proposal) -> str:
        """Why a proposal cannot be decided again: who decided it, when, and how."""
        first = next(iter(self.decisions(proposal_id=proposal.id)), None)
        if first is None:
            return (f"proposal {proposal.id} is {proposal.status.value}: only a proposal "
                    "waiting at the gate can be decided")
        who = "the acceptance rule" if first.automatic else first.author
        return (f"proposal {proposal.id} was already decided by {who} at "
                f"{first.created_at:%Y-%m-%d %H:%M:%S} UTC ({first.action.value})")

    @_guard
    def decisions(self, run_id: str | None = None, *, proposal_id: int | None = None
                  ) -> list[Decision]:
        query = select(*[c for c in t.decisions.c if c.name != "run_id"]).order_by(
            t.decisions.c.id)
        if run_id is not None:
            query = query.where(t.decisions.c.run_id == run_id)
        if proposal_id is not None:
            query = query.where(t.decisions.c.proposal_id == proposal_id)
        with self.engine.connect() as c:
            return [_model(Decision, r) for r in c.execute(query)]

    # ------------------------------------------------------------------ events & checkpoints

    @_guard
    def add_event(self, run_id: str, kind: EventKind, iteration: int = 0,
                  payload: dict[str, Any] | None = None) -> RunEvent:
        event = RunEvent(run_id=run_id, kind=kind, iteration=iteration, payload=payload or {})
        with self.engine.begin() as c:
            values = event.model_dump(exclude={"id"}) | {"kind": event.kind.value,
                                                         "payload": finite_json(event.payload)}
            new_id = c.execute(insert(t.run_events), values).inserted_primary_key[0]
        return event.model_copy(update={"id": new_id})

    @_guard
    def events(self, run_id: str, *, after_id: int = 0, kind: EventKind | None = None
               ) -> list[RunEvent]:
        query = select(t.run_events).where(t.run_events.c.run_id == run_id,
                                           t.run_events.c.id > after_id)
        if kind is not None:
            query = query.where(t.run_events.c.kind == kind)
        with self.engine.connect() as c:
            return [_model(RunEvent, r) for r in c.execute(query.order_by(t.run_events.c.id))]

    @_guard
    def latest_event(self, run_id: str, kind: EventKind) -> RunEvent | None:
        query = (select(t.run_events).where(t.run_events.c.run_id == run_id,
                                            t.run_events.c.kind == kind)
                 .order_by(t.run_events.c.id.desc()).limit(1))
        with self.engine.connect() as c:
            return _model(RunEvent, c.execute(query).first())

    @_guard
    def save_checkpoint(self, run_id: str, iteration: int, state: dict[str, Any]) -> None:
        state = finite_json(state)
        with self.engine.begin() as c:
            updated = c.execute(update(t.checkpoints).where(t.checkpoints.c.run_id == run_id)
                                .values(iteration=iteration, state=state, updated_at=utcnow()))
            if updated.rowcount == 0:
                c.execute(insert(t.checkpoints).values(run_id=run_id, iteration=iteration,
                                                       state=state, updated_at=utcnow()))

    @_guard
    def load_checkpoint(self, run_id: str) -> tuple[int, dict[str, Any]] | None:
        with self.engine.connect() as c:
            row = c.execute(select(t.checkpoints).where(t.checkpoints.c.run_id == run_id)).first()
        return (row.iteration, row.state) if row else None

    # ------------------------------------------------------------------ eval runs (judges)

    @_guard
    def add_eval_run(self, name: str, kind: str, summary: dict[str, Any],
                     cases: list[dict[str, Any]]) -> int:
        with self.engine.begin() as c:
            return c.execute(insert(t.eval_runs).values(
                name=name, kind=kind, summary=finite_json(redact_data(summary)),
                cases=finite_json(redact_data(cases)),
                created_at=utcnow())).inserted_primary_key[0]

    @_guard
    def list_eval_runs(self, name: str | None = None, limit: int = 100) -> list[EvalRun]:
        query = select(t.eval_runs).order_by(t.eval_runs.c.id.desc()).limit(limit)
        if name is not None:
            query = query.where(t.eval_runs.c.name == name)
        with self.engine.connect() as c:
            return [_model(EvalRun, r) for r in c.execute(query)]

    def close(self) -> None:
        self.engine.dispose()


def _human_score():
    """The latest active human score of the trial in the enclosing query (a correlated
    subquery; NULL when nobody corrected the score): ``merge_overrides``'s rule in SQL."""
    o = t.overrides.c
    return (select(o.score).where(o.trial_id == t.trials.c.id, o.undone_at.is_(None),
                                  o.score.is_not(None))
            .order_by(o.id.desc()).limit(1).scalar_subquery())


def _effective_score():
    """A trial's effective score in SQL: the person's corrected score, else the judge's
    (:func:`studio.model.records.corrected_score`)."""
    return func.coalesce(_human_score(), t.trials.c.score)


def _overridden():
    o = t.overrides.c
    return exists().where(o.trial_id == t.trials.c.id, o.undone_at.is_(None))


def _trial_filters(run_id: str, *, iterations: tuple[int, int] | None = None,
                   candidates: Iterable[int] = (), phases: Iterable[str] = (),
                   score_range: tuple[float, float] = (0.0, 1.0), include_unscored: bool = True,
                   errors: str = "any", overridden: str = "any") -> list:
    """SQL conditions for the trials table's filters: an inclusive ``iterations`` range,
    candidate *indexes*, phases, an effective ``score_range`` (trials that could not be
    evaluated pass only with ``include_unscored``), ``errors`` (``any``, ``only errors``,
    ``no errors``) and ``overridden`` (``any``, ``overridden``, ``not overridden``)."""
    c = t.trials.c
    where = []
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
        effective = _effective_score()
        scored = effective.between(low, high)
        where.append(or_(scored, effective.is_(None)) if include_unscored else scored)
    if errors == "only errors":
        where.append(and_(c.error.is_not(None), c.error != ""))
    elif errors == "no errors":
        where.append(or_(c.error.is_(None), c.error == ""))
    elif errors != "any":
        raise ValueError(f"errors filter {errors!r} is not one of any, only errors, no errors")
    if overridden == "overridden":
        where.append(_overridden())
    elif overridden == "not overridden":
        where.append(~_overridden())
    elif overridden != "any":
        raise ValueError(f"overridden filter {overridden!r} is not one of any, overridden, "
                         "not overridden")
    return where


_CLAIMABLE = [RunStatus.QUEUED.value, RunStatus.PENDING.value, RunStatus.RUNNING.value,
              RunStatus.PAUSED.value, RunStatus.ORPHANED.value]


def _claimable(queue: str, stale: datetime):
    """A run of ``queue`` that no live worker holds: never claimed, released, or its holder's
    last heartbeat is older than ``stale`` (the worker died)."""
    runs = t.runs.c
    return and_(runs.queue == queue, runs.status.in_(_CLAIMABLE),
                or_(runs.worker.is_(None), runs.heartbeat_at.is_(None), runs.heartbeat_at < stale))


def _override_pair(rows: list[Row]) -> OverridePair:
    """One trial's active override rows (oldest first) as its effective correction."""
    merged = merge_overrides(Override(trial_id=row.trial_id, score=row.score,
                                      feedback=row.feedback, judge_score=row.judge_score,
                                      judge_feedback=row.judge_feedback, author=row.author,
                                      created_at=row.created_at) for row in rows)
    row = rows[-1]
    return OverridePair(
        run_id=row.run_id, critic=_critic_name(row.spec), trial_id=row.trial_id,
        judge_score=merged.judge_score, human_score=merged.score,
        judge_feedback=merged.judge_feedback, human_feedback=merged.feedback,
        author=merged.author, created_at=merged.created_at, input_text=row.input_text,
        output=row.output,
    )


def _not_finite_fields(value: Any, where: str) -> list[str]:
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where} = {value}"]
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in _not_finite_fields(v, f"{where}.{k}")]
    if isinstance(value, list | tuple):
        return [f for i, v in enumerate(value) for f in _not_finite_fields(v, f"{where}[{i}]")]
    return []


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


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _critic_name(spec: dict[str, Any] | None) -> str:
    critic = (spec or {}).get("critic") or {}
    return str(critic.get("name") or critic.get("type") or "critic")


