"""In real headless Chromium at 1440x900: the Compare page's output matrix with its two filters
and a row opened in full, and the sidebar's "waiting for you" badge appearing while a proposal
waits and clearing once it is decided (issue 21). Screenshots go to ``test-artifacts/ui/``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from studio.engine.hosting.worker import get_manager
from studio.projects.workspace import pending_proposal
from studio.store import open_store
from tests.browser.test_browser import shot, wait_idle
from tests.helpers import wait_until
from tests.ui.browser import chromium_page, studio_server
from tests.ui.test_pages import finished_run, review_run

pytestmark = pytest.mark.browser

SIZE = {"width": 1440, "height": 900}


def showing(page, text: str) -> None:
    """Wait for the matrix's count line to start with ``text``."""
    page.get_by_text(re.compile("^" + re.escape(text))).first.wait_for()


def toggle(page, label: str) -> None:
    page.get_by_text(label, exact=True).click()
    wait_idle(page)


def test_the_output_matrix_filters_failures_and_differing_rows(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    run = finished_run(store)
    store.close()
    with studio_server(db) as url, chromium_page(**SIZE) as page:
        page.goto(f"{url}/compare?run={run.id}")
        page.get_by_role("heading", name="Outputs side by side").wait_for()
        showing(page, "Showing 3 of 3 example(s)")  # seed and best, nothing clicked
        wait_idle(page)
        shot(page, "compare_matrix")

        grid = page.locator("[class*='st-key-compare-matrix-grid-'] canvas").first
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 16, box["y"] + 35 + 17)  # the first row's marker
        page.get_by_text(re.compile(r"Trial \d+ \(id \d+\) · iteration 0 · valset")
                         ).first.wait_for()
        page.get_by_text("Score (effective)").first.wait_for()
        page.get_by_role("button", name="Save correction").first.wait_for()
        wait_idle(page)
        shot(page, "compare_matrix_row_opened")

        toggle(page, "Only failures")
        showing(page, "Showing 3 of 3")  # the seed fails every example
        pass_at = page.get_by_role("spinbutton", name="Pass at")
        pass_at.fill("0.00")
        pass_at.press("Enter")
        showing(page, "Showing 0 of 3")  # at 0 everything passes: no failure left
        page.get_by_text("No example passes these filters.").wait_for()
        toggle(page, "Only failures")
        showing(page, "Showing 3 of 3")

        toggle(page, "Only where versions differ")
        showing(page, "Showing 3 of 3")  # seed and best answer differently everywhere
        picker = page.get_by_test_id("stMultiSelect").first
        picker.get_by_role("button", name=re.compile(r"^Remove #\d+ .*best")).first.click()
        expect(picker.get_by_role("button", name=re.compile("^Remove "))).to_have_count(1)
        showing(page, "Showing 0 of 3")  # one version never differs from itself
        shot(page, "compare_matrix_filtered")


def test_the_inbox_badge_appears_while_a_proposal_waits_and_clears_when_decided(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    finished_run(store)
    run = None
    try:
        with studio_server(db) as url, chromium_page(**SIZE) as page:
            page.goto(url)
            page.get_by_role("heading", name="Evolution Studio", exact=True).first.wait_for()
            wait_idle(page)
            badge = page.get_by_test_id("stSidebar").get_by_text("1 run waiting for you")
            assert badge.count() == 0
            run = review_run(store, max_iterations=1)  # one gate: nothing waits after it
            badge.wait_for()  # no click, no reload: the badge polls
            page.reload()  # the run list is read when the page is drawn
            waiting = page.get_by_text(re.compile(r"^waiting \d")).first  # a cell of the grid
            waiting.wait_for(state="attached")
            wait_idle(page)
            shot(page, "home_inbox")

            page.get_by_role("button", name="Decide the oldest").click()
            page.get_by_role("heading", name="Proposals", exact=True).wait_for()
            page.get_by_role("button", name="Accept", exact=True).click()
            badge.wait_for(state="detached")
            wait_until(lambda: pending_proposal(store, run.id) is None, timeout=60)
            page.goto(url)
            page.get_by_role("heading", name="Evolution Studio", exact=True).first.wait_for()
            wait_idle(page)
            assert page.get_by_text("waiting for you").count() == 0
            shot(page, "home_inbox_cleared")
    finally:
        manager = get_manager(store)
        if run is not None and store.get_run(run.id).status.is_active:  # failed before deciding
            manager.stop(run.id)
        if run is not None and manager.handle(run.id) is not None:
            manager.handle(run.id).wait(timeout=30)
        store.close()
