"""Issue 30's race in real headless Chromium: five tabs and a CLI deciding one proposal, round
after round. Each round, exactly one decision is stored, on the proposal everyone was shown;
the CLI, if it lost, says who decided; every tab that lost says who decided and when; and each
losing tab's late click, which lands on the proposal the page swapped in (as Playwright's
auto-waiting click did in the report, 14 s later, and as a person's click does when the page
changes under the pointer), decides nothing and says "the page changed". No decision ever lands
on a proposal nobody chose.

Every wait is on what a page shows or what the store holds, never on a fixed time. Screenshots
go to ``test-artifacts/ui/race_*.png`` (look at them).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from studio.engine import EvolutionConfig
from studio.engine.hosting.worker import get_manager
from studio.projects.workspace import import_example, pending_proposal, start_project_run
from studio.store import open_store
from tests import zygote
from tests.helpers import wait_until
from tests.ui.browser import (
    ARTIFACTS,
    ROOT,
    chromium_page,
    failure_shot,
    full_page_shot,
    settled,
    studio_server,
)
from tests.ui.test_pages import SCRIPTED

pytestmark = pytest.mark.browser

TABS = 5
ROUNDS = 2
"""Two rounds: the tabs click first in the even one, the CLI decides first in the odd one."""

CLICK_ACCEPT = """() => {
  const accept = [...document.querySelectorAll('button')]
    .find(b => b.querySelector('p')?.innerText === 'Accept');
  if (accept) accept.click();
  return Boolean(accept);
}"""
"""Clicks the Accept button the page draws now, if any, without waiting: the five tabs' clicks
leave within milliseconds of each other and of the CLI's start."""
CHANGED_NOTICE = re.compile(r"^The page changed: ")
"""The page's notice of a proposal swapped in (the refusal's words start in lower case)."""


@pytest.fixture
def racing(tmp_path):
    """A review run waiting at its first gate, with a proposal per round and one to spare."""
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    project = import_example(store, SCRIPTED)
    run = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=ROUNDS + 2, minibatch_size=3, review="review", seed=7))
    yield db, store, run.id
    manager = get_manager(store)
    if run.id in manager.running():
        manager.stop(run.id)
    handle = manager.handle(run.id)
    if handle is not None:
        handle.wait(timeout=60)
    store.close()


def test_five_tabs_and_a_cli_decide_each_proposal_once(racing):
    db, store, run_id = racing
    with studio_server(db) as url, chromium_page() as first:
        tabs = [first] + [first.context.new_page() for _ in range(TABS - 1)]
        try:
            for number, tab in enumerate(tabs):
                open_as(tab, url, run_id, f"tab{number}")
            raced = [race_once(store, db, run_id, tabs, round_) for round_ in range(ROUNDS)]
        except Exception:
            for number, tab in enumerate(tabs):
                failure_shot(tab, ARTIFACTS / f"race_failure_tab{number}.png")
            raise
    decided = [(d.proposal_id, d.author) for d in store.decisions(run_id)]
    assert decided == raced, "a decision landed on a proposal nobody chose"


def open_as(tab, url: str, run_id: str, author: str) -> None:
    tab.goto(f"{url}/proposals?run={run_id}")
    name = tab.get_by_label("Your name", exact=True)
    name.wait_for(timeout=120_000)
    name.fill(author)
    name.press("Enter")
    settled(tab)


def race_once(store, db, run_id: str, tabs: list, round_: int) -> tuple[int, str]:
    """One round; returns (the raced proposal, who won it)."""
    proposal = wait_until(lambda: pending_proposal(store, run_id), timeout=120,
                          message=f"round {round_}'s proposal at the gate")
    for tab in tabs:
        shows_for_deciding(tab, proposal.id)
    cli = zygote.popen(
        [sys.executable, "-m", "studio.cli", "--db", f"sqlite:///{db}", "decide",
         str(proposal.id), "accept", "--author", "cli"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if round_ % 2:  # odd rounds: the CLI decides first, the tabs click on what they still show
        cli.wait(timeout=120)
    for tab in tabs:
        tab.evaluate(CLICK_ACCEPT)
    out, err = cli.communicate(timeout=120)
    decisions = store.decisions(proposal_id=proposal.id)
    assert len(decisions) == 1, decisions
    winner = decisions[0].author
    if winner == "cli":
        assert cli.returncode == 0, err
    else:
        assert cli.returncode != 0 and f"already decided by {winner} at" in err, (out, err)
    losers = [tab for number, tab in enumerate(tabs) if f"tab{number}" != winner]
    for tab in losers:
        tab.get_by_text(re.compile(rf"{proposal.id}\D.*already decided by {winner} at "
                                   r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")).first.wait_for()
    full_page_shot(losers[0], ARTIFACTS / f"race_{round_}_lost_to_{winner}.png")
    for tab in losers:
        late_click_is_refused(tab, store, run_id, proposal.id, round_)
    return proposal.id, winner


def shown(tab, proposal_id: int):
    """Where the tab names the proposal it shows: its heading, or its diff's column header.

    Both are drawn in the run that draws the Accept button. Under load, Streamlit's browser
    side once dropped the heading (and the sidebar's waiting notice) of a full rerun that a
    fragment asked for, while the diff, the form and everything after them were drawn
    (issue 33's load runs, session 40): the tab still showed that proposal for deciding."""
    return tab.get_by_text(re.compile(rf"^Proposal \d+ \(id {proposal_id}\)( · |$)")).first


def shows_for_deciding(tab, proposal_id: int) -> None:
    """The tab shows the proposal with its buttons and nothing left to acknowledge."""
    shown(tab, proposal_id).wait_for(timeout=120_000)
    tab.get_by_role("button", name="Accept", exact=True).wait_for()
    wait_until(lambda: not tab.get_by_text(CHANGED_NOTICE).count(), timeout=120, step=0.25,
               message="no change left to acknowledge")
    settled(tab)


def late_click_is_refused(tab, store, run_id: str, decided_id: int, round_: int) -> None:
    """The tab swapped in the next proposal on its own; a click on it now (one meant for the
    proposal the tab showed, arriving after the swap) is refused and decides nothing. When the
    CLI took long enough to exit, the round's own click came after the swap and was refused
    already: the tab shows that refusal instead of the notice."""
    swapped_in = wait_until(
        lambda: (p := pending_proposal(store, run_id)) is not None and p.id != decided_id and p,
        timeout=120, message=f"the proposal after {decided_id} at the gate")
    shown(tab, swapped_in.id).wait_for()
    refused = tab.get_by_text(f"the page changed: proposal {swapped_in.id} is now shown")
    # one server redraws five tabs: beside two busy cores the notice took over a minute to
    # show on the last tab (issue 33's load run 2); the deadline is the test's others'
    wait_until(lambda: refused.count() or tab.get_by_text(CHANGED_NOTICE).count(), timeout=120,
               step=0.25, message=f"the notice that proposal {swapped_in.id} was swapped in")
    if not refused.count():
        settled(tab)  # the decided proposal's buttons are gone, not merely drawn over
        tab.get_by_role("button", name="Accept", exact=True).click()
        refused.first.wait_for()
    assert store.decisions(proposal_id=swapped_in.id) == []
    if round_ == 0:
        full_page_shot(tab, ARTIFACTS / "race_late_click_refused.png")
