"""Where a created run runs: handed to the ``studio worker`` processes of a queue, or started in
this process's run manager. Every way of starting a run (the studio's buttons, the CLI, the
library's align) creates it first (:func:`studio.engine.hosting.build.create_run`) and then calls
:func:`dispatch`, so the rule "queue it when a worker is live, else run it here" is written once.

Both functions take the whole :class:`~studio.store.Store`: starting a run here builds its
engine (:func:`~studio.engine.hosting.build.build_engine`), whose context carries every
part's store, and the run manager opens stores of its own by the store's URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from studio.engine.hosting.build import build_engine, mark_not_started
from studio.engine.hosting.queue import DEFAULT_QUEUE, live_workers, queue_run
from studio.engine.hosting.worker import RunHandle, get_manager
from studio.engine.run.context import Listener
from studio.model.records import Run
from studio.store import Store

__all__ = ["Dispatched", "Placement", "dispatch", "launch"]


class Placement(StrEnum):
    """Where :func:`dispatch` sends a run."""

    AUTO = "auto"
    """Queued when a worker of the queue is live (the team setup: any worker sharing the
    database takes it); with none, here, as a single-user studio always has."""
    HERE = "here"
    """In this process (``studio run``, a fork or align run without ``--queue``)."""
    QUEUE = "queue"
    """In the queue, whether or not a worker is live (``studio queue``, ``--queue``)."""


@dataclass(frozen=True)
class Dispatched:
    """A dispatched run, as stored when it was handed over."""

    run: Run
    handle: RunHandle | None = None
    """The run's handle when it started in this process; None when it waits in a queue."""


def dispatch(store: Store, run_id: str, placement: Placement = Placement.AUTO, *,
             queue: str = DEFAULT_QUEUE, listeners: list[Listener] | None = None
             ) -> Dispatched:
    """Queue a created run or start it here, as ``placement`` says.

    Raises:
        RunStateError: a queued run cannot be rebuilt from the store, or is not freshly
            created (see :func:`studio.engine.hosting.queue.queue_run`). Anything building the
            engine
            raises (a model or key missing): the run is then marked failed with the reason.
    """
    if placement is Placement.QUEUE or (placement is Placement.AUTO
                                        and live_workers(store, queue)):
        return Dispatched(queue_run(store, run_id, queue))
    run = store.get_run(run_id)
    return Dispatched(run, launch(store, run_id, listeners))


def launch(store: Store, run_id: str, listeners: list[Listener] | None = None) -> RunHandle:
    """Start a created run in this process's run manager; if it cannot start, the run is marked
    failed with the reason (never left ``pending``) and the error is raised."""
    try:
        return get_manager(store).start(build_engine(store, run_id, listeners=listeners))
    except BaseException as exc:
        mark_not_started(store, run_id, exc)
        raise
