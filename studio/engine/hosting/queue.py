"""Many workers, one store: runs wait in the database and ``studio worker`` processes, on any
number of machines sharing it, take them one at a time.

The database is the only coordination point. A worker registers itself in ``workers`` and beats
there every :data:`~studio.engine.hosting.worker.HEARTBEAT_SECONDS`; it claims the oldest free run
of its
queue atomically (:meth:`studio.store.Store.claim_next_run`) with a lease it renews by the same
beat. When a worker dies its lease expires after
:data:`~studio.engine.hosting.worker.STALE_AFTER_SECONDS` and another worker claims the run and
resumes it from its checkpoint: committed trials are reused, so nothing is judged twice. On
SIGTERM a worker ends its run at the next step, puts it back in the queue and exits.

Queueing asks for a :class:`~studio.store.seams.QueueStore`; a worker (:class:`QueueWorker`) takes
the whole :class:`~studio.store.Store`: it claims runs and builds their engines.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from studio.engine.hosting.build import (
    build_engine,
    check_seed_state,
    check_spec_models,
    create_run,
)
from studio.engine.hosting.worker import (
    HEARTBEAT_SECONDS,
    OUTAGE_RETRY_SECONDS,
    STALE_AFTER_SECONDS,
    RunHandle,
    get_manager,
    seconds_setting,
)
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, RunStateError, StoreError, StoreUnavailableError
from studio.model.limits import MAX_QUEUE_CHARS, check_length
from studio.model.records import (
    Run,
    RunSpec,
    RunStatus,
    Split,
    StopReason,
    WorkerInfo,
    utcnow,
)
from studio.runtime.warm import warm_up
from studio.store import Store, open_store
from studio.store.seams import QueueStore

logger = logging.getLogger(__name__)

DEFAULT_QUEUE = "default"
FORGET_WORKERS_AFTER_SECONDS = 24 * 3600.0
"""A dead worker's row is dropped a day after its last beat (it is not live long before)."""
BUILD_TRIES = 5
"""Workers (or tries) that may fail to build a queued run before it fails for everyone."""
BUILD_RETRY_SECONDS = seconds_setting("STUDIO_BUILD_RETRY_SECONDS", 30.0, 0.0, 86_400.0)
"""How long a worker leaves a run it could not build to the others before trying it again."""
SLICE_SECONDS = 0.1
"""How often a waiting worker looks at its shutdown request (a signal handler only counts)."""

__all__ = ["DEFAULT_QUEUE", "QueueWorker", "enqueue", "live_workers", "queue_run"]


def queue_run(store: QueueStore, run_id: str, queue: str = DEFAULT_QUEUE) -> Run:
    """Hand a created run (see :func:`studio.engine.hosting.build.create_run`) to the workers.

    Raises:
        RunStateError: the run cannot be rebuilt from the store (started from live Python
            objects), or it is not a freshly created run. ConfigError: a ``{placeholder}`` of
            its seed that no training example or earlier agent fills.
    """
    run = store.get_run(run_id)
    if not run.spec.resumable:
        raise RunStateError(f"run {run_id} was made from live Python objects; a worker can only "
                            "run what the store describes (an agent spec or agent.ref)")
    check_seed_state(run.spec, [e.data for e in store.examples(run_id, Split.TRAIN)])
    if not store.enqueue_run(run_id, queue):
        raise RunStateError(f"run {run_id} is {run.status.value}; only a newly created run "
                            "can be queued")
    return store.get_run(run_id)


def enqueue(*, spec: RunSpec, trainset: list[dict[str, Any]],
            valset: list[dict[str, Any]] | None = None, config: EvolutionConfig | None = None,
            name: str = "", queue: str = DEFAULT_QUEUE, store: QueueStore | None = None,
            testset: list[dict[str, Any]] | None = None) -> Run:
    """Store a run and queue it for ``studio worker`` processes (the library's ``studio
    queue``): validated as :func:`studio.evolve` validates, then run by whichever worker of
    ``queue`` claims it first. Returns the queued run; watch it in the studio."""
    check_seed_state(spec, trainset)
    check_length(queue, MAX_QUEUE_CHARS, "queue name (--queue)")  # before a run is made
    store = store or open_store()
    run = create_run(store, spec=spec, trainset=trainset, valset=valset, config=config,
                     name=name, testset=testset)
    return queue_run(store, run.id, queue)


def open_store_when_reachable(url: str | None, *, say: Callable[[str], None],
                              shutdown: threading.Event) -> Store | None:
    """The store at ``url``, waiting while its database is unreachable (a server restarting or
    not up yet): a worker started first must wait and take runs once it is, not exit and leave
    the queue to no one. None when ``shutdown`` is set before the database answers.

    Raises:
        StoreError: the database answered and refused (a wrong password, a newer schema).
    """
    told = False
    while not shutdown.is_set():
        try:
            return open_store(url)
        except StoreUnavailableError as exc:
            if not told:
                say(f"waiting for the database (trying again every {OUTAGE_RETRY_SECONDS:g} s "
                    f"until it answers; Ctrl-C to stop): {exc}")
                told = True
            shutdown.wait(OUTAGE_RETRY_SECONDS)
    return None


def live_workers(store: QueueStore, queue: str | None = None) -> list[WorkerInfo]:
    """Workers that beat within the lease time (the studio queues runs when there is one)."""
    return store.live_workers(STALE_AFTER_SECONDS, queue)


class QueueWorker:
    """One ``studio worker`` process: claims the runs of one queue and runs them one at a time.

    :meth:`request_shutdown` is safe in a signal handler (it only counts): the main loop acts on
    it within :data:`SLICE_SECONDS`. The first request ends the current run at its next step
    (trials in flight are committed first) and releases it to the queue; a second one cancels
    the step in progress (still checkpointed, still released).
    """

    def __init__(self, store: Store, *, queue: str = DEFAULT_QUEUE, poll_seconds: float = 1.0,
                 max_runs: int | None = None, say: Callable[[str], None] | None = None,
                 build_tries: int = BUILD_TRIES) -> None:
        self.store = store
        check_length(queue, MAX_QUEUE_CHARS, "queue name (--queue)")
        if isinstance(build_tries, bool) or not isinstance(build_tries, int) or build_tries < 1:
            raise ConfigError(f"must be a whole number of tries, 1 or more, got {build_tries!r}",
                              where="studio worker --build-tries", value=build_tries)
        self.build_tries = build_tries
        self._unbuilt: dict[str, float] = {}
        """Runs this worker could not build -> when it may try again (monotonic seconds)."""
        self.manager = get_manager(store)
        now = utcnow()
        self.info = WorkerInfo(id=self.manager.worker_id, queue=queue,
                               host=socket.gethostname(), pid=os.getpid(), started_at=now,
                               last_seen=now)
        self.poll_seconds = poll_seconds
        self.max_runs = max_runs
        self.say = say or (lambda _text: None)
        self.done: list[str] = []
        """Runs this worker took to an end (completed, stopped, failed); not released ones."""
        self._requests = 0
        self._acted_on = 0
        self._handle: RunHandle | None = None

    @property
    def id(self) -> str:
        return self.info.id

    # ------------------------------------------------------------------ shutdown

    def request_shutdown(self) -> None:
        """Ask the worker to stop (signal-safe: no locks, no I/O)."""
        self._requests += 1

    @property
    def stopping(self) -> bool:
        return self._requests > 0

    def _act_on_requests(self) -> None:
        """The first request stops the current run at its next step, a second cancels it."""
        requests = self._requests
        if requests == self._acted_on:
            return
        self._acted_on = requests
        handle = self._handle
        if handle is None or not handle.running:
            return
        if requests == 1:
            self.say(f"stopping: run {handle.run_id} ends at its next step and goes back to "
                     "the queue")
            handle.engine.stop(StopReason.SHUTDOWN)
        else:
            handle.cancel()

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(SLICE_SECONDS, max(0.0, deadline - time.monotonic())))

    # ------------------------------------------------------------------ serving

    def serve(self) -> int:
        """Claim and run until ``max_runs`` runs are done or shutdown is requested; returns the
        number of runs done. The worker is registered (and beating) the whole time, from the
        end of its warm-up on."""
        self._warm_up()
        if self.stopping:
            return 0
        self.store.forget_workers(FORGET_WORKERS_AFTER_SECONDS)
        self.store.beat_worker(self.info)
        done = threading.Event()
        beat = threading.Thread(target=self._beat, args=(done,), name="worker-beat", daemon=True)
        beat.start()
        try:
            while not self.stopping and not self._enough():
                try:
                    run = self.store.claim_next_run(self.id, self.info.queue,
                                                    stale_after_s=STALE_AFTER_SECONDS,
                                                    skip=self._not_now())
                except StoreUnavailableError as exc:  # a restart: wait, never exit
                    self.say(f"waiting for the database: {exc}")
                    run = None
                if run is None:
                    self._sleep(self.poll_seconds)
                    continue
                try:
                    self._take(run)
                except StoreUnavailableError as exc:  # before or after its engine ran
                    self.say(f"run {run.id}: the database went away ({exc}); its lease lapses "
                             f"and a worker claims it again once the database answers")
        finally:
            done.set()
            beat.join(HEARTBEAT_SECONDS + 1)
            self.store.remove_worker(self.id)
        return len(self.done)

    def _warm_up(self) -> None:
        """Pay the first model call's imports before taking work (its first claimed run then
        starts as fast as the next), in a thread of its own: a shutdown asked meanwhile is
        honoured within :data:`SLICE_SECONDS`, not after seconds of imports."""
        warmed = threading.Event()

        def warm() -> None:
            try:
                asyncio.run(warm_up())
            finally:
                warmed.set()

        threading.Thread(target=warm, name="warm-up", daemon=True).start()
        while not warmed.wait(SLICE_SECONDS) and not self.stopping:
            pass

    def _not_now(self) -> list[str]:
        """Runs this worker could not build lately: left to other workers for a while."""
        now = time.monotonic()
        self._unbuilt = {run: until for run, until in self._unbuilt.items() if until > now}
        return list(self._unbuilt)

    def _enough(self) -> bool:
        return self.max_runs is not None and len(self.done) >= self.max_runs

    def _beat(self, done: threading.Event) -> None:
        """Keep the worker listed as live and the lease of its run renewed (from the claim on,
        so building a slow engine does not let the lease lapse). Its own thread, like the
        run's heartbeat: a busy engine must not make a live worker look dead."""
        while not done.wait(HEARTBEAT_SECONDS):
            try:
                self.store.beat_worker(self.info.model_copy())
            except StoreError as exc:  # a database away for a moment: a line, not a traceback
                logger.warning("worker %s: beat failed: %s", self.id, exc)
            except Exception:  # the store may be busy; the next beat retries
                logger.warning("worker %s: beat failed", self.id, exc_info=True)

    def _take(self, run: Run) -> None:
        """Run a claimed run to its end, or release it to the queue on shutdown."""
        self.info.run_id = run.id
        resumed = self.store.load_checkpoint(run.id) is not None
        self.say(f"run {run.id} claimed ({'resuming from its checkpoint' if resumed else 'new'})")
        try:
            reason = self._drive(run)
        finally:
            self.info.run_id = None
        if reason is None:  # could not build it here: back in the queue (already said)
            return
        if reason is StopReason.SHUTDOWN:
            try:
                released = self.store.requeue_run(run.id, self.info.queue)
            except StoreError as exc:  # the database is away: `studio resume` continues it
                self.say(f"run {run.id} left stopped (the database did not answer: {exc})")
                return
            self.say(f"run {run.id} checkpointed and "
                     f"{'back in the queue' if released else 'left as it was'}")
            return
        if reason is not StopReason.LEASE_LOST:
            self.done.append(run.id)
        self.say(f"run {run.id} ended: {reason}")

    def _drive(self, run: Run) -> StopReason | None:
        """Build the run's engine, run it, and return its stop reason (None: given back to the
        queue unbuilt)."""
        if self.stopping:
            self._release(run)
            return StopReason.SHUTDOWN
        try:
            check_spec_models(run.spec)  # a key missing on this machine: before any call
            self._handle = self.manager.start(build_engine(self.store, run.id))
        except RunStateError as exc:  # another worker holds it after all
            self.say(str(exc))
            return StopReason.LEASE_LOST
        except Exception as exc:  # a model or key missing here: back to the queue
            return self._give_back_unbuilt(run, exc)
        handle = self._handle
        while True:
            while not handle.join(SLICE_SECONDS):
                self._act_on_requests()
            try:
                return handle.wait() or StopReason.ERROR
            except StoreUnavailableError as exc:  # stopped by an outage: resumed once it ends
                resumed = self.manager.resume_after_outage(
                    handle, exc, say=self.say, stopping=lambda: self.stopping, sleep=self._sleep)
                if not isinstance(resumed, RunHandle):
                    return resumed
                handle = self._handle = resumed
            except BaseException as exc:  # recorded on the run by the engine
                self.say(f"run {run.id} failed ({type(exc).__name__})")
                return StopReason.ERROR

    def _give_back_unbuilt(self, run: Run, exc: Exception) -> StopReason | None:
        """A run this worker cannot build (a key missing on this machine) goes back to the
        queue for a worker that can, counted; it fails for everyone only after
        :attr:`build_tries` tries, with the last reason."""
        reason = f"{type(exc).__name__}: {exc}"
        tries, failed = self.store.requeue_unbuilt(run.id, self.id, reason,
                                                   max_tries=self.build_tries)
        self._unbuilt[run.id] = time.monotonic() + BUILD_RETRY_SECONDS
        if failed:
            self.say(f"run {run.id} could not be built after {tries} tries: {reason}")
            return StopReason.NOT_STARTED
        self.say(f"run {run.id} could not be built here ({reason}); back in the queue for "
                 f"another worker (tries {tries}/{self.build_tries})")
        return None

    def _release(self, run: Run) -> None:
        """Give back a claimed run that was never started (shutdown came first)."""
        self.store.update_run(run.id, worker=None, heartbeat_at=None,
                              status=RunStatus.STOPPED, stop_reason=StopReason.SHUTDOWN)

