"""The blame view in real headless Chromium: a run whose second proposal a person edited (with a
hostile sentence) opened on Compare; the view shows each sentence's origin, nothing the person or
the model wrote runs or renders as HTML. Screenshots go to ``/tmp/ui_shots_blame/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.store import open_store
from tests.ui.browser import chromium_page, studio_server
from tests.ui.test_blame_view import edited_run

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/ui_shots_blame")


def test_blame_view_in_the_browser(tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    run, _second, _edited = edited_run(store)
    store.close()
    dialogs: list[str] = []
    with studio_server(db) as url, chromium_page(width=1400, height=1100) as page:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{url}/compare?run={run.id}")
        heading = page.get_by_role("heading", name="Where each sentence came from")
        heading.wait_for()
        page.get_by_text("1 edited by <b>ana</b>", exact=False).wait_for()
        page.wait_for_function(
            "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
        heading.scroll_into_view_if_needed()
        grid = page.get_by_test_id("stDataFrame").first
        grid.wait_for()
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                      "requestAnimationFrame(r)))")
        page.screenshot(path=str(SHOTS / "compare_blame.png"))
        page.get_by_test_id("stMain").screenshot(path=str(SHOTS / "compare_blame_main.png"))
        assert page.locator("img[src='x']").count() == 0
        assert page.locator("main b", has_text="ana").count() == 0
        assert not dialogs
