"""``studio worker`` (take queued runs until told to stop) and ``studio workers`` (who is live)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from studio.cli.common import _store, database_label
from studio.engine.hosting.queue import QueueWorker, live_workers, open_store_when_reachable
from studio.runtime.tracing import enable_tracing


def cmd_worker(args: argparse.Namespace) -> int:
    """Take queued runs until ``--max-runs`` are done or SIGTERM/SIGINT (exit 0 either way);
    started before its database answers, it waits for it."""
    shutdown = threading.Event()
    workers: list[QueueWorker] = []  # the worker, once the database answered

    def stop(*_: object) -> None:
        shutdown.set()
        for worker in workers:
            worker.request_shutdown()

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        store = open_store_when_reachable(args.db, say=_say, shutdown=shutdown)
        if store is None:
            _say("worker stopped before its database answered")
            return 0
        enable_tracing()
        worker = QueueWorker(store, queue=args.queue, poll_seconds=args.poll_seconds,
                             max_runs=args.max_runs, say=_say, build_tries=args.build_tries)
        workers.append(worker)
        _say(f"worker {worker.id} takes runs from queue {args.queue!r} "
             f"(database: {database_label(store.url)})")
        done = 0 if shutdown.is_set() else worker.serve()
    finally:  # called in-process (tests), the caller's handlers come back
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    _say(f"worker {worker.id} exits after {done} run{'s' if done != 1 else ''}")
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cmd_workers(args: argparse.Namespace) -> int:
    workers = live_workers(_store(args), args.queue)
    if not workers:
        print("no live worker: start one with `studio worker`")
    for w in workers:
        print(f"{w.id}  queue {w.queue:<12} seen {w.last_seen:%H:%M:%S} UTC  "
              f"{'running ' + w.run_id if w.run_id else 'idle'}")
    return 0
