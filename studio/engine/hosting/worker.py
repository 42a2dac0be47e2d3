"""Background runs: one worker thread with its own event loop per run, shared by the Streamlit
server, the CLI and :func:`studio.evolve`.

The worker sends a heartbeat to the store every second and picks up control requests (pause,
stop) from it, so a person can steer a run from any process. A run whose heartbeat stops (the
process was killed) is marked ``orphaned`` and can be resumed: it continues from its last
committed trial.

The run manager takes the whole :class:`~studio.store.Store`: it opens a store of its own per
run (by the store's URL) and builds each run's engine; :func:`raised_budget` only reads the
spent budget, a :class:`~studio.store.seams.PolicyStore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

from studio.engine.hosting.build import build_engine
from studio.engine.loop.engine import Engine
from studio.engine.people.steering import pause_run, stop_run, unpause_run, withdraw_requests
from studio.engine.policies.limits import spent_metric_calls
from studio.model.errors import (
    LeaseLostError,
    RunStateError,
    StoreError,
    StoreFullError,
    StoreUnavailableError,
)
from studio.model.records import Run, RunRequest, RunStatus, StopReason, utcnow
from studio.runtime import eventloop
from studio.runtime.timing import (  # noqa: F401 (seconds_setting: studio.engine.hosting.queue's)
    HEARTBEAT_SECONDS,
    OUTAGE_RETRY_SECONDS,
    STALE_AFTER_SECONDS,
    seconds_setting,
)
from studio.store import Store, open_store
from studio.store.seams import PolicyStore

logger = logging.getLogger(__name__)

LEASE_LOST = StopReason.LEASE_LOST
"""The stop reason of a run this worker gave up because another worker took it over."""
OUTAGE_RESUMES_WITHOUT_PROGRESS = 3
"""Resumes after outages in a row, none followed by a committed trial, before a run is left
stopped (a run waiting at a gate commits none and costs nothing; a commit that fails each time
would re-judge the same examples each time)."""


def _this_task() -> asyncio.Task:
    """The task running the caller: a run is always driven inside one (its cancel is the stop)."""
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("a run is driven inside an asyncio task: run it with asyncio.run")
    return task


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class RunHandle:
    """A run executing in this process."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.run_id = engine.run_id
        self.stop_reason: StopReason | None = None
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._waiters_lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task | None = None

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> StopReason | None:
        """Block until the run ends; returns its stop reason (re-raises a crash)."""
        self._done.wait(timeout)
        if self.error is not None:
            raise self.error
        return self.stop_reason

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the run to end; True when it has (never raises)."""
        return self._done.wait(timeout)

    async def wait_async(self) -> StopReason | None:
        """:meth:`wait` for a coroutine: woken by the worker thread the moment the run ends
        (no polling, so :func:`studio.evolve` returns without a poll interval's delay)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._waiters_lock:
            if not self._done.is_set():
                self._waiters.append((loop, future))
        if not self._done.is_set():
            try:
                await future
            finally:
                with self._waiters_lock:
                    if (loop, future) in self._waiters:
                        self._waiters.remove((loop, future))
        return self.wait()

    def _set_done(self) -> None:
        with self._waiters_lock:
            self._done.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop closed meanwhile
                loop.call_soon_threadsafe(_resolve, future)

    def cancel(self) -> None:
        """Cancel the engine's task (used on shutdown; people use :meth:`RunManager.stop`)."""
        if self.loop is not None and self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)


class RunManager:
    """Starts, resumes and steers runs; one per process and database."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._handles: dict[str, RunHandle] = {}
        self._outage_resumes: dict[str, tuple[int, int]] = {}
        """Run -> (its trials when last resumed after an outage, such resumes in a row
        without a new trial)."""
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ starting

    def start(self, engine: Engine) -> RunHandle:
        """Run ``engine`` (see :func:`studio.engine.hosting.build.build_engine`) in a worker
        thread."""
        run_id = engine.run_id
        with self._lock:
            existing = self._handles.get(run_id)
            if existing is not None and existing.running:
                return existing
            if not self.store.claim_run(run_id, self.worker_id,
                                        stale_after_s=STALE_AFTER_SECONDS):
                raise RunStateError(held_by(self.store.get_run(run_id)))
            handle = RunHandle(engine)
            self._handles[run_id] = handle
        handle.thread = threading.Thread(target=self._work, args=(engine, handle),
                                         name=f"run-{run_id}", daemon=True)
        handle.thread.start()
        return handle

    def resume(self, run_id: str, *, listeners: list | None = None,
               max_metric_calls: int | None = None, keep_control: bool = False,
               **live_objects: Any) -> RunHandle:
        """Continue a stopped, failed or orphaned run from its last committed trial;
        ``max_metric_calls`` raises its budget (e.g. to pay for an edit at its gate).

        A refused resume changes nothing: the run is claimed first, and only then are its
        pending request (pause, stop, as read before the claim) cleared (unless
        ``keep_control``: a resume no person asked for) and its budget raised.

        Raises:
            RunStateError: the run completed, another worker holds it, or the budget is lower
                than what the run already spent.
        """
        handle = self.handle(run_id)
        if handle is not None and handle.running:
            return handle
        self.recover_orphans()
        run = self.store.get_run(run_id)
        if run.status is RunStatus.COMPLETED:
            raise RunStateError(completed_message(run))
        config = raised_budget(self.store, run, max_metric_calls)
        if not self.store.claim_run(run_id, self.worker_id, stale_after_s=STALE_AFTER_SECONDS):
            raise RunStateError(held_by(self.store.get_run(run_id)))
        try:
            if not keep_control:
                withdraw_requests(self.store, run)
            if config:
                self.store.update_run(run_id, **config)
            engine = build_engine(self.store, run_id, listeners=listeners, **live_objects)
        except BaseException:
            self.store.release_lease(run_id, self.worker_id)
            raise
        return self.start(engine)

    def resume_after_outage(self, stopped: RunHandle, exc: StoreUnavailableError, *,
                            say: Callable[[str], None], stopping: Callable[[], bool],
                            sleep: Callable[[float], None], listeners: list | None = None
                            ) -> RunHandle | StopReason:
        """Resume a run that stopped because the database went away (a restart; a connection
        lost in the middle of a commit, which no store call may repeat blindly, as the commit
        may have landed), once the database answers: from what was committed, as
        ``studio resume`` would, keeping a person's pending Pause, instead of leaving a
        stopped run for a person to find.

        Not resumed, and the reason returned instead of a handle: a run stopped by a full
        disk (``database_unavailable``: it says to free space and resume), a run whose completion
        landed as the outage began (its own reason), a run a person asked to stop (``user``,
        recorded), a run that failed, or one that cannot be built any more (``error``), one
        resumed :data:`OUTAGE_RESUMES_WITHOUT_PROGRESS` times in a row without committing a
        trial (``database_unavailable``: an outage that recurs at once would otherwise pay for
        the same model calls forever), one another worker took (``lease_lost``), and any run
        once ``stopping()`` (``database_unavailable``: left stopped for ``studio resume``,
        a person's Stop kept)."""
        run_id = stopped.run_id
        if isinstance(exc, StoreFullError):  # a disk rarely frees itself
            say(f"run {run_id} stopped: {exc}")
            return StopReason.DATABASE_UNAVAILABLE
        say(f"run {run_id} stopped: the database went away ({exc}); resuming it when it "
            f"answers (trying again every {OUTAGE_RETRY_SECONDS:g} s)")
        while not stopping():
            try:
                return self._resume_unless_settled(stopped, say, listeners)
            except StoreUnavailableError:
                sleep(OUTAGE_RETRY_SECONDS)
            except Exception as error:  # e.g. its project's model is gone: the run failed
                say(f"run {run_id} could not be resumed: {type(error).__name__}: {error}")
                return StopReason.ERROR
        if stopped.engine.ctx.control.stop_reason is StopReason.USER:
            return StopReason.USER  # the person's Stop is on the run's engine, not yet stored
        return StopReason.DATABASE_UNAVAILABLE

    def _resume_unless_settled(self, stopped: RunHandle, say: Callable[[str], None],
                               listeners: list | None) -> RunHandle | StopReason:
        run_id = stopped.run_id
        run = self.store.get_run(run_id)
        if run.worker not in (None, self.worker_id):  # another worker holds it now
            say(held_by(run))
            return LEASE_LOST
        if run.status is RunStatus.COMPLETED and run.stop_reason is not None:
            return run.stop_reason
        if run.status is RunStatus.FAILED:
            return StopReason.ERROR
        if StopReason.USER in (stopped.engine.ctx.control.stop_reason, run.stop_reason) or \
                run.control is RunRequest.STOP:
            self.store.update_run(run_id, status=RunStatus.STOPPED, stop_reason=StopReason.USER,
                                  control=None, worker=None, heartbeat_at=None,
                                  finished_at=run.finished_at or utcnow())
            say(f"run {run_id} stays stopped, as a person asked")
            return StopReason.USER
        trials = self.store.count_trials(run_id)
        last_trials, in_a_row = self._outage_resumes.get(run_id, (-1, 0))
        in_a_row = in_a_row + 1 if trials <= last_trials else 1
        if in_a_row > OUTAGE_RESUMES_WITHOUT_PROGRESS:
            self._outage_resumes.pop(run_id, None)
            say(f"run {run_id} was resumed {OUTAGE_RESUMES_WITHOUT_PROGRESS} times after "
                f"outages without committing a trial; it stays stopped: resume it with "
                f"`studio resume {run_id}` once the database is healthy")
            return StopReason.DATABASE_UNAVAILABLE
        try:
            handle = self.resume(run_id, listeners=listeners, keep_control=True)
        except RunStateError as refused:  # another worker holds it now
            say(str(refused))
            return LEASE_LOST
        self._outage_resumes[run_id] = (trials, in_a_row)
        say(f"run {run_id} resumed from its last committed trial")
        return handle

    def _work(self, engine: Engine, handle: RunHandle) -> None:
        try:
            handle.stop_reason = eventloop.run(self._drive(engine, handle))
        except BaseException as exc:  # surfaced by RunHandle.wait()
            handle.error = exc
        finally:
            handle._set_done()

    async def _drive(self, engine: Engine, handle: RunHandle) -> StopReason:
        handle.loop = asyncio.get_running_loop()
        beating = threading.Event()
        heartbeat = threading.Thread(target=self._heartbeat, args=(engine, handle, beating),
                                     name=f"heartbeat-{engine.run_id}", daemon=True)
        heartbeat.start()
        handle.task = task = _this_task()
        try:
            return await engine.run(worker=self.worker_id)
        except LeaseLostError as exc:  # found by a trial commit before the heartbeat saw it
            logger.warning("%s; this worker stopped the run without writing", exc)
            return LEASE_LOST
        except asyncio.CancelledError:
            if engine.lease_lost:
                task.uncancel()
                return LEASE_LOST
            raise
        finally:
            beating.set()
            heartbeat.join(HEARTBEAT_SECONDS + 1)
            self.store.release_lease(engine.run_id, self.worker_id)

    def _heartbeat(self, engine: Engine, handle: RunHandle, done: threading.Event) -> None:
        """Keep the lease on the run alive and deliver the store's control to the engine (which
        also wakes its waits, so a decision from another process is seen within a beat).

        A thread of its own: the engine's store calls run on its event loop, and one waiting
        on a lock must not starve the heartbeat, or a live run would look orphaned."""
        run_id = engine.run_id
        while not done.wait(HEARTBEAT_SECONDS):
            try:
                engine.apply_control(self.store.heartbeat(run_id, self.worker_id))
            except LeaseLostError as exc:
                logger.warning("%s; this worker stops the run without writing", exc)
                engine.lease_lost = True
                handle.cancel()
                return
            except StoreError as exc:  # said in a line: the run's own store call reports it
                logger.warning("heartbeat for run %s failed: %s", run_id, exc)
            except Exception:  # the store may be busy; the next beat retries
                logger.warning("heartbeat for run %s failed", run_id, exc_info=True)

    # ------------------------------------------------------------------ steering

    def pause(self, run_id: str) -> None:
        """:func:`studio.engine.people.steering.pause_run`."""
        pause_run(self.store, run_id)

    def unpause(self, run_id: str) -> None:
        """:func:`studio.engine.people.steering.unpause_run`."""
        unpause_run(self.store, run_id)

    def stop(self, run_id: str) -> None:
        """:func:`studio.engine.people.steering.stop_run`: stop at its next step, wherever it
        runs."""
        stop_run(self.store, run_id)

    # ------------------------------------------------------------------ queries

    def _local_engine(self, run_id: str) -> Engine | None:
        """The run's engine when it runs in this process (others act on their heartbeat)."""
        handle = self._handles.get(run_id)
        return handle.engine if handle is not None and handle.running else None

    def handle(self, run_id: str) -> RunHandle | None:
        return self._handles.get(run_id)

    def running(self) -> list[str]:
        return [run_id for run_id, h in self._handles.items() if h.running]

    def recover_orphans(self) -> list[str]:
        """Mark runs whose worker died as orphaned (resumable)."""
        return self.store.mark_orphans(STALE_AFTER_SECONDS)


def completed_message(run: Run) -> str:
    """Why a completed run is not resumed: it reached a limit, and resuming would stop at once."""
    limit = (run.stop_reason and run.stop_reason.limit_field) or "its limits"
    return (f"run {run.id} completed ({run.stop_reason}): resuming would stop again at once; "
            f"start a new run with a different {limit}")


def raised_budget(store: PolicyStore, run: Run, max_metric_calls: int | None
                  ) -> dict[str, object]:
    """The run's stored config with a new ``max_metric_calls`` (empty when none is given)."""
    if max_metric_calls is None:
        return {}
    spent = spent_metric_calls(store, run)
    if max_metric_calls < spent:
        raise RunStateError(f"run {run.id} already made {spent} metric calls: "
                            f"max_metric_calls {max_metric_calls} is below that")
    config = run.config.model_copy(update={"max_metric_calls": max_metric_calls})
    return {"config": config.model_dump(mode="json")}


def held_by(run: Run) -> str:
    """Who holds a run's lease, for the worker that lost the claim."""
    host, _, rest = (run.worker or "unknown").partition(":")
    pid = rest.split(":", 1)[0] or "?"
    beat = f"{run.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC" if run.heartbeat_at else "never"
    return (f"run {run.id} is being run by worker {run.worker} (pid {pid}, host {host}, last "
            f"heartbeat {beat}); it can be resumed elsewhere once that worker stops or its "
            f"heartbeat is {STALE_AFTER_SECONDS:.0f} s old")


_managers: dict[str, RunManager] = {}
_managers_lock = threading.Lock()


def get_manager(store: Store | None = None) -> RunManager:
    """The process-wide manager for ``store`` (the default database when None)."""
    store = store or open_store()
    with _managers_lock:
        manager = _managers.get(store.url)
        if manager is None or manager.store is not store:
            manager = RunManager(store)
            _managers[store.url] = manager
        return manager
