"""In real headless Chromium: switching the current run clears the trial shown in full and the
table's selection (issue 21, defect 1: run B showed run A's trial, and a row ticked by
position in a run never clicked). Screenshots go to ``test-artifacts/ui/``."""

from __future__ import annotations

import re

import pytest

from studio.store import open_store
from tests.browser.test_browser import select_first_row, shot, wait_idle
from tests.browser.test_browser_guard_fork import choose
from tests.ui.browser import chromium_page, studio_server
from tests.ui.test_pages import finished_run

pytestmark = pytest.mark.browser

DETAIL = re.compile(r"Trial \d+ \(id (\d+)\) · iteration")


def selected_rows(page) -> int:
    """Rows the trials grid marks as selected (its row markers are checked boxes)."""
    return page.locator("[class*='st-key-run-table-'] [aria-selected='true']").count()


def test_switching_runs_clears_the_detail_and_the_selection(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    first, second = finished_run(store), finished_run(store, seed=3)
    store.close()
    with studio_server(db) as url, chromium_page() as page:
        page.goto(f"{url}/run?run={first.id}")
        page.get_by_role("heading", name="Run", exact=True).wait_for()
        wait_idle(page)
        select_first_row(page)
        detail = page.get_by_text(DETAIL)
        detail.wait_for(timeout=10_000)
        shown = DETAIL.search(detail.inner_text()).group(1)
        assert selected_rows(page) == 1
        shot(page, "run_state_selected")

        choose(page, "Current run", second.id[:8])
        page.wait_for_url(re.compile(rf"run={second.id}"))
        page.get_by_text(second.id).first.wait_for()  # the run's header
        wait_idle(page)
        detail.wait_for(state="detached")  # no trial of the first run
        assert page.get_by_text(f"(id {shown}) · iteration").count() == 0
        assert selected_rows(page) == 0
        shot(page, "run_state_switched")
