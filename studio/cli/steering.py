"""``studio stop|pause|unpause RUN``: the Run page's buttons from any shell, on a run running
anywhere (this process, a ``studio run`` in another terminal, a ``studio worker`` elsewhere)."""

from __future__ import annotations

import argparse
import sys

from studio.cli.common import _store
from studio.engine.people.steering import Steered, pause_run, stop_run, unpause_run


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the run at its next step (between model calls); what it judged is kept."""
    run_id = args.run_id
    store = _store(args)
    done = stop_run(store, run_id)
    status = store.get_run(run_id).status.value
    print({
        Steered.ASKED: f"run {run_id}: asked to stop; it stops within seconds, between model "
                       f"calls, keeping what it judged. Resume it with `studio resume {run_id}`",
        Steered.CANCELLED: f"run {run_id} was still queued: stopped before a worker took it",
        Steered.SETTLED: f"run {run_id} stopped (no process was running it); resume it with "
                         f"`studio resume {run_id}`",
        Steered.ALREADY: f"run {run_id} is already {status}: nothing to stop",
    }[done], file=sys.stderr)
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    """Hold the run before its next model call until ``studio unpause``."""
    pause_run(_store(args), args.run_id)
    print(f"run {args.run_id}: asked to pause; it holds before its next model call (the calls "
          f"in flight end first). Let it go on with `studio unpause {args.run_id}`",
          file=sys.stderr)
    return 0


def cmd_unpause(args: argparse.Namespace) -> int:
    """Let a paused run go on."""
    unpause_run(_store(args), args.run_id)
    print(f"run {args.run_id}: unpaused; it goes on from where it held", file=sys.stderr)
    return 0
