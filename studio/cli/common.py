"""What the commands share: the store a command opens, and how a run shows in a terminal."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from studio.model.records import EventKind, ProposalKind
from studio.model.redaction import mask_url
from studio.store import open_store


class ProgressBar:
    """One terminal line, redrawn on each event (a plain line per update when not a TTY)."""

    def __init__(self, stream: Any = None, width: int = 24) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.trials = 0
        self.last: dict[str, Any] = {}
        self.tty = getattr(stream, "isatty", lambda: False)()

    def __call__(self, event: Any) -> None:
        """One in-process :class:`~studio.engine.events.EngineEvent`: its fields are read as
        attributes (the engine's event classes are not imported at the top of this module)."""
        kind = event.kind
        if kind is EventKind.TRIAL_COMMITTED:
            self.trials += 1
            if self.tty:
                self.draw()
        elif kind is EventKind.PROGRESS:
            self.last = event.payload() | {"iteration": event.iteration}
            self.trials = event.metric_calls
            self.draw(newline=not self.tty)
        elif kind is EventKind.PROPOSAL_CREATED and event.proposal_kind == ProposalKind.MERGE:
            self.note(f"proposal {event.proposal_id} merges the candidates with "
                      "ids " + " and ".join(map(str, event.parent_ids)))
        elif kind is EventKind.AWAITING_DECISION:
            self.note(f"proposal {event.proposal_id} waits for a decision: open the "
                      f"studio's Proposals page, or run `studio decide "
                      f"{event.proposal_id} accept|reject|edit`")
        elif kind is EventKind.ITERATION_SKIPPED:
            self.note(f"iteration {event.iteration} skipped: {event.reason}")
        elif kind in (EventKind.LANES_REDUCED, EventKind.OUT_OF_IDEAS):
            self.note(event.words())
        elif kind is EventKind.RUN_FINISHED:
            reason = event.stop_reason
            self.note(f"run finished: {reason}" + (f" ({reason.words})" if reason else ""))

    def draw(self, newline: bool = False) -> None:
        info = self.last
        total = info.get("max_iterations") or 1
        done = min(info.get("iteration", 0), total)
        filled = int(self.width * done / total)
        budget = info.get("max_metric_calls")
        best = info.get("best_score")
        eta = info.get("eta_seconds")
        line = (f"[{'#' * filled}{'-' * (self.width - filled)}] iteration {done}/{total}"
                f" | metric calls {self.trials}{f'/{budget}' if budget else ''}"
                f" | best {'-' if best is None else f'{best:.3f}'}"
                f" | ETA {'-' if eta is None else f'{eta:.0f}s'}")
        self.stream.write(("\r" + line) if self.tty and not newline else line + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        self.stream.write(("\n" if self.tty else "") + text + "\n")
        self.stream.flush()



def _store(args: argparse.Namespace):
    return open_store(args.db)



def database_label(url: str) -> str:
    """The database for a person to read: a SQLite file's path, or a URL without password."""
    return url.split("///")[-1] if url.startswith("sqlite") else mask_url(url)
