"""What a person watching a run should know about how it runs, said once on the Run page (the
CLI prints the same events as they happen): fewer parallel proposals than asked, and why; a run
that ended because the reflection ran out of ideas, and the calls that saved."""

from __future__ import annotations

from collections.abc import Sequence

from studio.engine.run.events import LanesReduced, OutOfIdeas
from studio.model.records import EventKind, RunEvent

NOTE_KINDS = (EventKind.LANES_REDUCED, EventKind.OUT_OF_IDEAS)
"""The stored events the notes are made from."""


def run_notes(events: Sequence[RunEvent]) -> list[str]:
    """One line per kind in :data:`NOTE_KINDS`, from its latest event, in that order."""
    latest = {event.kind: event for event in events if event.kind in NOTE_KINDS}
    notes = []
    if EventKind.LANES_REDUCED in latest:
        notes.append(LanesReduced.from_stored(latest[EventKind.LANES_REDUCED]).words())
    if EventKind.OUT_OF_IDEAS in latest:
        notes.append(OutOfIdeas.from_stored(latest[EventKind.OUT_OF_IDEAS]).words())
    return notes
