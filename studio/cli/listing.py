"""``studio runs``: the list of runs. Its own module because it needs only the store: listing
runs does not wait for the engine and ADK to load."""

from __future__ import annotations

import argparse

from studio.cli.common import _store
from studio.model.applied import Applied
from studio.model.costs import format_cost
from studio.model.records import EventKind


def cmd_runs(args: argparse.Namespace) -> int:
    store = _store(args)
    runs = store.list_runs(limit=args.limit)
    costs = store.run_costs(run.id for run in runs)
    for run in runs:
        reason = run.stop_reason.words if run.stop_reason else ""
        note = f"  ({run.waiting_note})" if run.waiting_note else ""
        applied = store.latest_event(run.id, EventKind.APPLIED)
        if applied is not None:
            note += f"  ({Applied.from_event(applied).short()})"
        print(f"{run.id}  {run.shown_status.value:<10} {run.created_at:%Y-%m-%d %H:%M}  "
              f"{reason:<32} {format_cost(costs.get(run.id, 0.0)):>9}  {run.name}{note}")
    return 0
