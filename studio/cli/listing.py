"""``studio runs``: the list of runs. Its own module because it needs only the store: listing
runs does not wait for the engine and ADK to load."""

from __future__ import annotations

import argparse

from studio.cli.common import _store


def cmd_runs(args: argparse.Namespace) -> int:
    store = _store(args)
    for run in store.list_runs(limit=args.limit):
        reason = run.stop_reason.words if run.stop_reason else ""
        print(f"{run.id}  {run.shown_status.value:<10} {run.created_at:%Y-%m-%d %H:%M}  "
              f"{reason:<32} {run.name}")
    return 0
