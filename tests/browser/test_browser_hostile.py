"""Issue 20's two browser cases in real headless Chromium: two tabs deciding one proposal (one
decision is stored and the tab that lost is told who decided), and model-written URLs that
never become live links on the Proposals, Run and Compare pages.

Runs started here execute in the test process (scripted models registered here) and write to
the database the server reads, as a worker on another machine would.
"""

from __future__ import annotations

import re

import pytest

from studio.engine import EvolutionConfig
from studio.engine.hosting.worker import get_manager
from studio.projects.workspace import import_example, pending_proposal, start_project_run
from studio.store import open_store
from tests.helpers import wait_until
from tests.ui.browser import ARTIFACTS, chromium_page, full_page_shot, settled, studio_server
from tests.ui.test_model_links import phishing_project
from tests.ui.test_pages import SCRIPTED

pytestmark = pytest.mark.browser

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("hostile") / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    with studio_server(db) as url:
        yield url, store
    manager = get_manager(store)
    for run_id in manager.running():
        manager.stop(run_id)
    store.close()


def shot(page, name: str) -> None:
    full_page_shot(page, ARTIFACTS / f"hostile_{name}.png")


def stopped_at_the_gate(store) -> tuple[str, int]:
    """A review run stopped while its first proposal waits: the proposal stays pending (a stop
    is not a decision) and nothing but the two tabs touches it."""
    project = import_example(store, SCRIPTED)
    run = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=3, minibatch_size=3, review="review", seed=7))
    proposal = wait_until(lambda: pending_proposal(store, run.id), timeout=60,
                          message="a proposal at the gate")
    get_manager(store).stop(run.id)
    get_manager(store).handle(run.id).wait(timeout=30)
    return run.id, proposal.id


def open_proposal(page, url: str, run_id: str, proposal_id: int) -> None:
    page.goto(f"{url}/proposals?run={run_id}")
    page.get_by_text(re.compile(rf"Proposal \d+ \(id {proposal_id}\)")).first.wait_for()
    page.get_by_role("button", name="Reject", exact=True).wait_for()
    settled(page)


def test_two_tabs_deciding_one_proposal(server):
    url, store = server
    run_id, proposal_id = stopped_at_the_gate(store)
    with chromium_page() as first:
        second = first.context.new_page()
        try:
            open_proposal(first, url, run_id, proposal_id)
            open_proposal(second, url, run_id, proposal_id)
            reason = second.get_by_label("Reason for rejecting")
            reason.fill("Too long: keep the rules short.")
            reason.press("Tab")
            settled(second)
            accept = first.get_by_role("button", name="Accept", exact=True).element_handle()
            reject = second.get_by_role("button", name="Reject", exact=True).element_handle()
            # both clicks leave within microseconds, before either page can redraw
            first.evaluate("button => button.click()", accept)
            second.evaluate("button => button.click()", reject)
            decided = wait_until(lambda: store.decisions(proposal_id=proposal_id), timeout=30,
                                 message="a decision stored")
            loser = second if decided[0].action.value == "accept" else first
            loser.get_by_text(re.compile(
                rf"Proposal \d+ \(id {proposal_id}\): .*already decided by")).wait_for()
            shot(loser, "two_tabs_loser")
        except Exception:
            shot(first, "two_tabs_failure_first")
            shot(second, "two_tabs_failure_second")
            raise
    assert len(store.decisions(proposal_id=proposal_id)) == 1


def assert_no_live_link(page, what: str) -> None:
    """The planted text is on the page, and no element links to it."""
    page.get_by_text(re.compile("evil")).first.wait_for()
    settled(page)
    outside = page.evaluate(  # a heading's own anchor (#run-http-evil-...) stays on the page
        "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
        ".filter(h => new URL(h).host !== location.host)")
    assert not [h for h in outside if "evil" in h or h.startswith("mailto:")], (what, outside)


def test_model_written_urls_are_never_live_links(server, script):
    url, store = server
    project = phishing_project(store, script)
    waiting = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=2, review="review", seed=7), name="Run http://evil.example/x")
    wait_until(lambda: pending_proposal(store, waiting.id), timeout=60,
               message="the planted proposal at the gate")
    store.update_run(waiting.id, error="model said: see www.evil.example/fix")
    finished = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=3, minibatch_size=3, review="auto", seed=7), name="www.evil.example")
    get_manager(store).handle(finished.id).wait(timeout=60)
    with chromium_page() as page:
        try:
            for path, run_id in (("proposals", waiting.id), ("run", waiting.id),
                                 ("compare", finished.id)):
                page.goto(f"{url}/{path}?run={run_id}")
                assert_no_live_link(page, path)
                shot(page, f"no_links_{path}")
        except Exception:
            shot(page, "no_links_failure")
            raise
