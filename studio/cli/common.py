"""What the commands share: the store a command opens, and how a run shows in a terminal."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

from studio.model.records import EventKind, ProposalKind
from studio.model.redaction import mask_url
from studio.store import open_store

if TYPE_CHECKING:
    from studio.model.team import Actor


class ProgressBar:
    """One terminal line, redrawn on each event (a plain line per update when not a TTY), and
    what the run is doing now (its phase, model, time so far and the estimate this machine
    gave), kept current by :meth:`tick` while a long phase gives no event."""

    PLAIN_TICK_SECONDS = 60.0
    """Not a TTY: a phase still under way is said again this often."""

    def __init__(self, stream: TextIO | None = None, width: int = 24, *, gated: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.trials = 0
        self.last: dict[str, Any] = {}
        self.tty = getattr(stream, "isatty", lambda: False)()
        self.clock = clock
        self.phase: Any = None  # the PhaseStarted under way (read only when one is)
        self.phase_since = 0.0
        self.said_at = 0.0
        self.gated = gated
        """A :class:`~studio.cli.gate.ShellGate` shows waiting proposals: no one-line note."""
        self.held = False
        """While the gate asks a question, the bar does not redraw over it."""

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No drawing inside the block (the gate's question owns the terminal)."""
        self.held = True
        try:
            yield
        finally:
            self.held = False

    def __call__(self, event: Any) -> None:
        """One in-process :class:`~studio.engine.run.events.EngineEvent`: its fields are read as
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
        elif kind is EventKind.AWAITING_DECISION and not self.gated:
            self.note(f"proposal {event.proposal_id} waits for a decision: open the "
                      f"studio's Proposals page, or run `studio decide "
                      f"{event.proposal_id} accept|reject|edit`")
        elif kind is EventKind.PHASE_STARTED:
            self.phase, self.phase_since = event, self.clock()
            self.said_at = self.phase_since
            if self.tty:
                self.draw()
            else:
                self.note(self.doing(started=True))
        elif kind is EventKind.ITERATION_SKIPPED:
            self.note(f"iteration {event.iteration} skipped: {event.reason}")
        elif kind in (EventKind.LANES_REDUCED, EventKind.OUT_OF_IDEAS):
            self.note(event.words())
        elif kind is EventKind.RUN_FINISHED:
            self.phase = None
            reason = event.stop_reason
            self.note(f"run finished: {reason}" + (f" ({reason.words})" if reason else ""))

    def draw(self, newline: bool = False) -> None:
        if self.held:
            return
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
        if self.tty and self.phase is not None:  # the whole line, cut to the terminal's width
            line = (line + " | " + self.doing())[:shutil.get_terminal_size().columns - 1]
            line += "\x1b[K"  # clear what a longer line left
        self.stream.write(("\r" + line) if self.tty and not newline else line + "\n")
        self.stream.flush()

    def doing(self, *, started: bool = False) -> str:
        """The current phase in words, with the time it has taken so far (not when it has
        just ``started``)."""
        from studio.views.tables import phase_line  # pandas: only once a run shows progress

        return phase_line(self.phase, None if started else self.clock() - self.phase_since)

    def tick(self) -> None:
        """Called while the run goes on (``studio run`` waits in a loop): a TTY's line shows
        the time so far; a plain stream is told again every :attr:`PLAIN_TICK_SECONDS`."""
        if self.phase is None:
            return
        if self.tty:
            self.draw()
        elif self.clock() - self.said_at >= self.PLAIN_TICK_SECONDS:
            self.said_at = self.clock()
            self.note(self.doing())

    def note(self, text: str) -> None:
        self.stream.write(("\n" if self.tty else "") + text + "\n")
        self.stream.flush()



def _store(args: argparse.Namespace):
    return open_store(args.db)


def acting_user(args: argparse.Namespace, permission: str) -> Actor:
    """Who the command acts as (:func:`studio.projects.team.cli_actor`), checked for
    ``permission`` (a :class:`~studio.model.team.Permission` name).

    Raises:
        AccessError: an unknown user, a bad token, or a role that does not allow it."""
    from studio.model.team import Permission
    from studio.projects.team import cli_actor

    actor = cli_actor(_store(args))
    actor.require(Permission[permission])
    return actor


def author_of(args: argparse.Namespace) -> str:
    """The name a command records: ``--author`` in the local studio, else the acting user."""
    from studio.projects.team import author_for

    return author_for(args.actor, getattr(args, "author", None))



def database_label(url: str) -> str:
    """The database for a person to read: a SQLite file's path, or a URL without password."""
    return url.split("///")[-1] if url.startswith("sqlite") else mask_url(url)
