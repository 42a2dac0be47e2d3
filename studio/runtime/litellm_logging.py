"""LiteLLM's background logging, one worker per event loop.

After each async call LiteLLM queues its success logging on one process-wide ``LoggingWorker``
whose queue and worker task belong to one event loop. The studio runs several loops at once (a
thread and loop per run, "Try it", alignment jobs, worker processes' loops): when a second loop
logs, the worker moves to it and drops its references to the first loop's worker task and
in-flight logging tasks, which are then garbage-collected while still pending; Python prints
"Task was destroyed but it is pending! ... LoggingWorker._worker_loop()" on the server console.

:func:`per_loop_logging` gives every loop its own ``LoggingWorker`` (the shared instance hands
each call to the worker of the loop it runs on), so each worker task stays referenced by its
own worker until its loop ends, where ``asyncio.run`` (and the studio's runners) cancel it and
wait for it: nothing is destroyed while pending.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Any

_installed = False
_lock = threading.Lock()
_workers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

PER_LOOP_METHODS = ("start", "enqueue", "ensure_initialized_and_enqueue", "stop", "flush",
                    "clear_queue")
"""The ``LoggingWorker`` methods that are about a loop's queue (all its public ones)."""


def per_loop_logging() -> None:
    """Make LiteLLM's shared logging worker dispatch to a worker per running loop (idempotent,
    thread-safe). Called where the studio registers its providers with LiteLLM."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        from litellm.litellm_core_utils import logging_worker

        shared = logging_worker.GLOBAL_LOGGING_WORKER
        for name in PER_LOOP_METHODS:
            # An instance attribute: modules that imported the shared worker use it too.
            setattr(shared, name, _dispatch(name, getattr(shared, name),
                                            logging_worker.LoggingWorker))
        _installed = True


def loop_worker(factory: Callable[[], Any]) -> Any:
    """The worker of the running loop (made on first use), or None outside a loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    with _lock:
        worker = _workers.get(loop)
        if worker is None:
            worker = _workers[loop] = factory()
        return worker


def _dispatch(name: str, shared_method: Callable[..., Any], factory: Callable[[], Any]
              ) -> Callable[..., Any]:
    """``name`` on the running loop's worker; outside a loop, on the shared one (which then
    starts nothing: LiteLLM's worker needs a running loop)."""

    def method(*args: object, **kwargs: object) -> Any:
        worker = loop_worker(factory)
        if worker is None:
            return shared_method(*args, **kwargs)
        return getattr(worker, name)(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"LoggingWorker.{name} on the running loop's own worker."
    return method
