"""The gate in the shell: ``studio run --review review`` shows each proposal that waits (its
word diff against the parent and its minibatch evidence) and, on a terminal, asks for the
decision inline, as ``git add -p`` asks about each hunk:

    accept / reject (reason) / edit ($EDITOR) / skip [a,r,e,s,?]?

Not on a terminal (a pipe, a CI log), it prints the card and the run waits as before, for the
Proposals page or ``studio decide``. The engine announces a waiting proposal on its own thread;
the card is printed, and the question asked, on the main thread between two looks at the run
(:meth:`ShellGate.poll`), so Ctrl-C at the question stops the run as it always has.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TextIO

from studio.engine.people.gates import decide, wait_for_edit
from studio.engine.people.history import ProposalRow, proposal_rows
from studio.model.errors import ConfigError, StudioError
from studio.model.records import EventKind, ProposalStatus
from studio.store import Store
from studio.views.proposal_card import card_lines

QUESTION = "accept / reject (reason) / edit ($EDITOR) / skip [a,r,e,s,?]? "
HELP = """a - accept: its child joins the pool
r - reject: say why (the next reflection reads your reason)
e - edit: open the text in $EDITOR; your text is scored on the same minibatch and comes back
s - skip: leave it waiting, for the Proposals page or `studio decide`
? - this help"""


class Answer(StrEnum):
    ACCEPT = "a"
    REJECT = "r"
    EDIT = "e"
    SKIP = "s"
    HELP = "?"


class Outcome(StrEnum):
    """How a question ended without an answer typed in."""

    CLOSED = "closed"
    """The input ended (Ctrl-D): the proposal is left waiting, as a skip."""
    DECIDED_ELSEWHERE = "decided elsewhere"
    """Someone decided it meanwhile (the Proposals page, `studio decide`)."""
    RUN_ENDED = "run ended"
    """The run stopped meanwhile (a person's stop): the proposal waits for its resume."""


@dataclass
class Terminal:
    """Where the gate speaks and listens: the card and questions go to ``out`` (stderr: stdout
    keeps the run's JSON summary), answers come from ``into``."""

    out: TextIO
    into: TextIO
    interactive: bool

    @classmethod
    def of_process(cls) -> Terminal:
        """This process's terminal: interactive when both stdin and stderr are one."""
        def tty(stream: object) -> bool:
            return bool(getattr(stream, "isatty", lambda: False)())
        return cls(sys.stderr, sys.stdin, tty(sys.stdin) and tty(sys.stderr))

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


class ShellGate:
    """A run's listener and the main thread's question: see the module's docstring."""

    def __init__(self, store: Store, run_id: str, *, terminal: Terminal | None = None,
                 author: str = "cli",
                 hold: Callable[[], contextlib.AbstractContextManager[object]] | None = None
                 ) -> None:
        self.store = store
        self.run_id = run_id
        self.terminal = terminal or Terminal.of_process()
        self.author = author
        self.hold = hold or contextlib.nullcontext
        """A context in which the progress bar does not redraw (the question owns the line)."""
        self.announced: queue.SimpleQueue[int] = queue.SimpleQueue()

    def __call__(self, event: Any) -> None:
        """The engine's event, on its thread: a proposal that waits is queued for the main
        thread (nothing is printed here)."""
        if event.kind is EventKind.AWAITING_DECISION:
            self.announced.put(event.proposal_id)

    def poll(self) -> None:
        """Show (and on a terminal, ask about) each proposal announced since the last poll."""
        while True:
            try:
                proposal_id = self.announced.get_nowait()
            except queue.Empty:
                return
            row = self._pending_row(proposal_id)
            if row is not None:  # decided meanwhile (another tab, `studio decide`)
                with self.hold():
                    self.present(row)

    def _pending_row(self, proposal_id: int) -> ProposalRow | None:
        rows = proposal_rows(self.store, self.run_id, pending_only=True, with_text=True)
        return next((row for row in rows if row.id == proposal_id), None)

    def present(self, row: ProposalRow) -> None:
        term = self.terminal
        term.say("\n" + "\n".join(card_lines(row)))
        if not term.interactive:
            term.say(f"decide it on the studio's Proposals page, or with `studio decide "
                     f"{row.id} accept|reject|edit`")
            return
        while not self.ask(row):
            pass

    def ask(self, row: ProposalRow) -> bool:
        """One question; True when the proposal is settled for this gate (decided, skipped,
        decided elsewhere), False to ask again."""
        reply = self.read(QUESTION, row.id)
        if isinstance(reply, Outcome):
            return self._ended(row, reply)
        choice = reply.strip().lower()[:1]
        if choice == Answer.ACCEPT:
            return self.decide(row, "accept")
        if choice == Answer.REJECT:
            return self.reject(row)
        if choice == Answer.EDIT:
            return self.edit(row)
        if choice == Answer.SKIP:
            self.terminal.say(f"skipped: proposal {row.id} stays waiting (the Proposals page, "
                              f"or `studio decide {row.id} accept|reject|edit`)")
            return True
        self.terminal.say(HELP)
        return False

    def _ended(self, row: ProposalRow, outcome: Outcome) -> bool:
        if outcome is Outcome.DECIDED_ELSEWHERE:
            self.terminal.say(f"\nproposal {row.id} was decided elsewhere: "
                              f"{self.store.already_decided(self.store.get_proposal(row.id))}")
        elif outcome is Outcome.RUN_ENDED:
            self.terminal.say(f"\nrun {self.run_id} stopped: proposal {row.id} waits for its "
                              f"resume (`studio resume {self.run_id}`)")
        else:
            self.terminal.say(f"\nno answer: proposal {row.id} stays waiting")
        return True

    def reject(self, row: ProposalRow) -> bool:
        reason = self.read("why reject it (the next reflection reads this)? ", row.id)
        if isinstance(reason, Outcome):
            return self._ended(row, reason)
        if not reason.strip():
            self.terminal.say("a rejection needs a reason; asking again")
            return False
        return self.decide(row, "reject", reason=reason.strip())

    def edit(self, row: ProposalRow) -> bool:
        if row.merge is not None:
            self.terminal.say("a merge takes whole components from its parents: there is no "
                              "text to edit; accept or reject it")
            return False
        try:
            text = edit_in_editor(row.text or "", name=f"proposal-{row.id}")
        except StudioError as exc:
            self.terminal.say(f"error: {exc}")
            return False
        if text.strip() == (row.text or "").strip():
            self.terminal.say("the text is unchanged: nothing to edit; asking again")
            return False
        return self.decide(row, "edit", edited_text=text)

    def decide(self, row: ProposalRow, action: str, **fields: Any) -> bool:
        try:
            decision = decide(row.id, action, author=self.author, store=self.store, **fields)
        except StudioError as exc:  # invalid edit, budget, decided meanwhile: said, ask again
            self.terminal.say(f"error: {exc}")
            return not self._still_waiting(row.id)
        if decision is None:  # only a stop returns None, and the gate never asks for one
            return True
        self.terminal.say(f"decision {decision.id}: {decision.action.value} proposal {row.id}")
        if action == "edit":
            self.terminal.say(edit_outcome(self.store, row.id))
        return True

    def read(self, prompt: str, proposal_id: int) -> str | Outcome:
        """A line typed at ``prompt``; an :class:`Outcome` when the input ends, or the proposal
        is decided elsewhere or its run stops while the question waits (looked at twice a
        second)."""
        term = self.terminal
        term.out.write(prompt)
        term.out.flush()
        while not _readable(term.into, 0.5):
            if not self._still_waiting(proposal_id):
                return Outcome.DECIDED_ELSEWHERE
            if not self.store.get_run(self.run_id).status.is_active:
                return Outcome.RUN_ENDED
        line = term.into.readline()
        return Outcome.CLOSED if line == "" else line.rstrip("\n")

    def _still_waiting(self, proposal_id: int) -> bool:
        proposal = self.store.get_proposal(proposal_id)
        return proposal.status is ProposalStatus.PENDING and proposal.decided_at is None


def _readable(stream: TextIO, seconds: float) -> bool:
    """Whether a line can be read from ``stream`` within ``seconds`` (a stream without a file
    descriptor, such as a test's StringIO, always can)."""
    try:
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return True
    ready, _, _ = select.select([fileno], [], [], seconds)
    return bool(ready)


def edit_outcome(store: Store, proposal_id: int) -> str:
    """What became of a person's edit: the new proposal's number, once the live run has made
    it (it is scored on the same minibatch, then comes back to the gate), or when it will be."""
    proposal = store.get_proposal(proposal_id)
    run = store.get_run(proposal.run_id)
    if not run.status.is_active:
        return (f"your edit becomes a new proposal when run {run.id} resumes "
                f"(`studio resume {run.id}`)")
    edited = wait_for_edit(store, proposal_id)
    if edited is None:
        return (f"your edit becomes a new proposal as soon as run {run.id} reads the decision "
                f"(`studio proposals {run.id} --pending` lists it)")
    row = next(r for r in proposal_rows(store, run.id) if r.id == edited.id)
    return (f"{row.title} is your edit of proposal {row.edited_from_number} (id {proposal_id}): "
            "it is scored on the same minibatch, then comes back to the gate")


EDITORS = ("VISUAL", "EDITOR")
"""The variables naming the person's editor, in the order git reads them."""


def edit_in_editor(text: str, *, name: str) -> str:
    """``text`` as the person leaves it after editing it in ``$VISUAL``/``$EDITOR`` (``vi``
    when neither is set), through a temporary file that is removed afterwards.

    Raises:
        ConfigError: the editor cannot be started or exits with an error.
    """
    command = next((os.environ[v] for v in EDITORS if os.environ.get(v, "").strip()), "vi")
    with tempfile.TemporaryDirectory(prefix="studio-edit-") as folder:
        path = Path(folder) / f"{name}.txt"
        path.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run([*shlex.split(command), str(path)], check=False)
        except OSError as exc:
            raise ConfigError(f"cannot start the editor {command!r} ({exc}): set $EDITOR to "
                              "an editor on this machine", where="$EDITOR", value=command) from exc
        if done.returncode != 0:
            raise ConfigError(f"the editor {command!r} exited with status {done.returncode}; "
                              "nothing was decided", where="$EDITOR", value=command)
        return path.read_text(encoding="utf-8")
