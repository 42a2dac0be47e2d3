"""Deciding from the shell (issue 31): ``studio run --review review`` shows each waiting
proposal's word diff and minibatch evidence and, on a terminal, asks for the decision inline;
``studio proposals RUN --pending [--json]`` carries the text, the diff and the evidence; an edit
says which new proposal is the person's.

The inline question is driven through a real pseudo-terminal (Python's ``pty``) in front of a
real ``studio run`` process: scripted models through ADK and LiteLLM, a real SQLite store."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import re
import subprocess
import sys
import threading

import pytest

from studio.cli import main
from studio.cli.gate import QUESTION, ShellGate, Terminal
from studio.engine import EvolutionConfig, build_engine, create_run, decide
from studio.engine.hosting.worker import get_manager
from studio.engine.people.history import proposal_rows
from studio.model.errors import RunStateError
from studio.model.records import ProposalStatus
from studio.store import open_store
from tests.helpers import ROOT, demo_spec, trainset, wait_until

EXAMPLE = ROOT / "examples" / "haiku_scripted.yaml"
EDITED = "Write a haiku about the given topic. Name the topic in the poem."


class Pty:
    """A process on a pseudo-terminal: everything it writes is collected; lines are typed."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave,
                                        cwd=ROOT, env=env, close_fds=True)
        os.close(slave)
        self.output = ""
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # the process closed the terminal
                return
            if not data:
                return
            with self.lock:
                self.output += data.decode("utf-8", "replace").replace("\r", "")

    def text(self) -> str:
        with self.lock:
            return self.output

    def expect(self, pattern: str, after: int = 0, timeout: float = 90) -> int:
        """Wait until ``pattern`` (a regex) shows after offset ``after``; the offset past it."""
        def found():
            return re.compile(pattern, re.S).search(self.text(), after)
        match = wait_until(found, timeout=timeout, step=0.1,
                           message=f"{pattern!r} on the terminal; it shows:\n"
                                   f"{self.text()[after:][-3000:]}")
        return match.end()

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        os.close(self.master)


@pytest.mark.slow
def test_the_gate_asks_inline_on_a_terminal_like_git_add_p(tmp_path):
    """Help, a reason refused when empty, an edit in $EDITOR that comes back as the person's
    own proposal and is accepted, then a rejection with its reason: the run completes and the
    store holds exactly those decisions."""
    editor = tmp_path / "editor.py"
    editor.write_text(f"import sys\nopen(sys.argv[1], 'w').write({EDITED!r})\n")
    db = f"sqlite:///{tmp_path}/gate.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EDITOR": f"{sys.executable} {editor}",
           "VISUAL": ""}
    term = Pty([sys.executable, "-m", "studio.cli", "--db", db, "run", str(EXAMPLE),
                "--review", "review", "--max-iterations", "2"], env)
    try:
        at = term.expect(r"Proposal 1 \(id 1\): iteration 1, changes instruction of #0.*"
                         r"evidence: 0\.000 → 0\.750 on 3 examples.*GEPA's rule would accept.*"
                         r"Write a haiku about the given topic\.\{\+.*three lines.*\+\}.*"
                         r"accept / reject \(reason\) / edit \(\$EDITOR\) / skip \[a,r,e,s,\?\]\? ")
        term.type("?")
        at = term.expect(r"e - edit: open the text in \$EDITOR.*skip \[a,r,e,s,\?\]\? ", at)
        term.type("e")
        at = term.expect(r"decision 1: edit proposal 1.*Proposal 2 \(id 2\) is your edit of "
                         r"proposal 1 \(id 1\)", at)
        at = term.expect(r"Proposal 2 \(id 2\): iteration 1.*the person's edit of proposal 1 "
                         r"\(id 1\), by cli.*Name the topic in the poem.*skip \[a,r,e,s,\?\]\? ",
                         at)
        term.type("a")
        at = term.expect(r"decision 2: accept proposal 2.*Proposal 3 \(id 3\): iteration 2.*"
                         r"skip \[a,r,e,s,\?\]\? ", at)
        term.type("r")
        at = term.expect(r"why reject it \(the next reflection reads this\)\? ", at)
        term.type("")
        at = term.expect(r"a rejection needs a reason; asking again.*skip \[a,r,e,s,\?\]\? ", at)
        term.type("r")
        at = term.expect(r"why reject it", at)
        term.type("too wordy")
        term.expect(r"decision 3: reject proposal 3.*\"status\": \"completed\"", at)
        assert term.process.wait(60) == 0
    finally:
        term.close()
    store = open_store(db, cached=False)
    try:
        run_id = store.list_runs(limit=1)[0].id
        decisions = [(d.proposal_id, d.action.value, d.author, d.reason, d.automatic)
                     for d in store.decisions(run_id)]
        assert decisions == [(1, "edit", "cli", "", False), (2, "accept", "cli", "", False),
                             (3, "reject", "cli", "too wordy", False)]
        assert store.get_proposal(2).text == EDITED and store.get_proposal(2).edited_from == 1
    finally:
        store.close()


@pytest.fixture
def waiting_run(store):
    """A review-mode run of the demo world, live in this process, its first proposal waiting."""
    run_id = create_run(store, spec=demo_spec(), trainset=trainset(3),
                        config=EvolutionConfig(max_iterations=1, minibatch_size=3,
                                               review="review")).id
    handle = get_manager(store).start(build_engine(store, run_id))
    pending = wait_until(lambda: store.proposals(run_id, status=ProposalStatus.PENDING),
                         message="a proposal waits at the gate")
    yield run_id, pending[0]
    with contextlib.suppress(RunStateError):  # a test may have let it finish
        get_manager(store).stop(run_id)
    handle.join(30)


def test_pending_proposals_show_their_diff_and_evidence_as_text_and_json(store, waiting_run,
                                                                         capsys):
    run_id, proposal = waiting_run
    assert main(["--db", store.url, "proposals", run_id, "--pending"]) == 0
    card = capsys.readouterr().out
    assert card.startswith(f"  1 (id {proposal.id})  iter 1   instruction") and \
        "WAITING FOR YOU" in card.splitlines()[0]  # the listing's line, then its card
    assert "evidence: 0.000 → 0.750 on 3 examples" in card
    assert "Write a haiku about the given topic.{+" in card and "+}" in card

    assert main(["--db", store.url, "proposals", run_id, "--pending", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["text"] == proposal.text
    assert row["parent_text"] == "Write a haiku about the given topic."
    assert "".join(s["text"] for s in row["diff"] if s["kind"] != "delete") == proposal.text
    assert [s["kind"] for s in row["diff"]] == ["equal", "insert"]
    assert (row["parent_sum"], row["child_sum"], row["compared"]) == (0.0, 0.75, 3)
    assert row["now"]["rule_accepts"] is True


def test_an_edit_from_the_shell_names_the_new_proposal_as_the_persons(store, waiting_run,
                                                                      capsys):
    """Also: the card shows a text's escape sequences inert (the CLI's printable stream)."""
    run_id, proposal = waiting_run
    assert main(["--db", store.url, "decide", str(proposal.id), "edit", "--text",
                 EDITED + " \x1b]0;owned\x07", "--author", "ana"]) == 0
    said = capsys.readouterr().out
    edited = next(p for p in store.proposals(run_id) if p.edited_from == proposal.id)
    assert (f"Proposal 2 (id {edited.id}) is your edit of proposal 1 (id {proposal.id}): it is "
            "scored on the same minibatch, then comes back to the gate") in said
    wait_until(lambda: store.get_proposal(edited.id).status is ProposalStatus.PENDING,
               message="the edit waits at the gate")
    assert main(["--db", store.url, "proposals", run_id, "--pending"]) == 0
    card = capsys.readouterr().out
    assert f"the person's edit of proposal 1 (id {proposal.id}), by ana" in card
    assert "\\x1b]0;owned\\x07" in card and "\x1b" not in card
    assert main(["--db", store.url, "proposals", run_id]) == 0
    assert "(edit of 1 by ana)" in capsys.readouterr().out


def test_a_question_ends_when_the_proposal_is_decided_elsewhere(store, waiting_run):
    """The Proposals page (here: the library's decide) answers first: the shell's question
    stops waiting and says who decided."""
    run_id, proposal = waiting_run
    read_end, write_end = os.pipe()
    into = os.fdopen(read_end)
    out = io.StringIO()
    gate = ShellGate(store, run_id, terminal=Terminal(out, into, interactive=True))
    [row] = proposal_rows(store, run_id, pending_only=True, with_text=True)
    asking = threading.Thread(target=gate.present, args=(row,))
    asking.start()
    wait_until(lambda: QUESTION in out.getvalue(), message="the question is asked")
    decide(proposal.id, "accept", author="maria", store=store)
    asking.join(10)
    assert not asking.is_alive()
    assert f"proposal {proposal.id} was decided elsewhere" in out.getvalue()
    assert "maria" in out.getvalue()
    into.close()
    os.close(write_end)
