"""``studio worker`` (take queued runs until told to stop) and ``studio workers`` (who is live)."""

from __future__ import annotations

import argparse
import signal
import sys

from studio.cli.common import _store, database_label
from studio.engine.queue import QueueWorker, live_workers


def cmd_worker(args: argparse.Namespace) -> int:
    """Take queued runs until ``--max-runs`` are done or SIGTERM/SIGINT (exit 0 either way)."""
    store = _store(args)
    worker = QueueWorker(store, queue=args.queue, poll_seconds=args.poll_seconds,
                         max_runs=args.max_runs,
                         say=lambda text: print(text, file=sys.stderr, flush=True))
    previous = {signum: signal.signal(signum, lambda *_: worker.request_shutdown())
                for signum in (signal.SIGTERM, signal.SIGINT)}
    print(f"worker {worker.id} takes runs from queue {args.queue!r} "
          f"(database: {database_label(store.url)})", file=sys.stderr, flush=True)
    try:
        done = worker.serve()
    finally:  # called in-process (tests), the caller's handlers come back
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print(f"worker {worker.id} exits after {done} run{'s' if done != 1 else ''}",
          file=sys.stderr)
    return 0


def cmd_workers(args: argparse.Namespace) -> int:
    workers = live_workers(_store(args), args.queue)
    if not workers:
        print("no live worker: start one with `studio worker`")
    for w in workers:
        print(f"{w.id}  queue {w.queue:<12} seen {w.last_seen:%H:%M:%S} UTC  "
              f"{'running ' + w.run_id if w.run_id else 'idle'}")
    return 0
