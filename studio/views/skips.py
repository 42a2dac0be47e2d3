"""Iterations that ended without a proposal to decide on, said plainly where a person watches
a run (the Run and Proposals pages; the CLI prints the same events)."""

from __future__ import annotations

from collections.abc import Sequence

from studio.engine.run.events import IterationSkipped
from studio.model.records import RunEvent

SHOWN = 5
"""The newest skipped iterations a note names (it counts them all)."""


def skipped_note(events: Sequence[RunEvent]) -> str | None:
    """One line about the run's ``iteration_skipped`` events, newest last; None without any.
    A skipped iteration counts toward ``max_iterations`` (and as no gain for patience), so the
    note says so: a run can end with fewer proposals than iterations."""
    if not events:
        return None
    lines = [f"iteration {e.iteration}: {skip_text(e)}" for e in events[-SHOWN:]]
    count = len(events)
    head = (f"{count} iteration{'s' if count != 1 else ''} ended without a proposal to decide on "
            "(each counts as an iteration)")
    return head + ": " + "; ".join(lines)


def skip_text(event: RunEvent) -> str:
    """A stored ``iteration_skipped`` event in words."""
    skipped = IterationSkipped.from_stored(event)
    reason = skipped.reason or skipped.cause.value
    return reason if "skipped" in reason else f"{reason}; iteration skipped"
