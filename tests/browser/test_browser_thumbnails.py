"""In real headless Chromium: a trial whose example holds an image shows a thumbnail on the Run
page (next to the trial's input) and on the Review page (next to the correction form).
Screenshots go to ``test-artifacts/ui/``."""

from __future__ import annotations

import pytest

from studio.model.limits import THUMBNAIL_PIXELS
from studio.store import open_store
from tests.browser.test_browser import select_first_row, shot, wait_idle
from tests.ui.browser import chromium_page, studio_server
from tests.ui.test_thumbnails import image_run

pytestmark = pytest.mark.browser


def thumbnail_sizes(page) -> list[tuple[int, int]]:
    """Natural size of each picture ``st.image`` drew (a small PNG, not the original)."""
    page.locator("[data-testid='stImage'] img").first.wait_for()
    return [tuple(size) for size in page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=\"stImage\"] img')]"
        ".map(img => [img.naturalWidth, img.naturalHeight])")]


def test_run_and_review_pages_show_the_trial_s_thumbnail(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    run = image_run(store)
    store.close()
    with studio_server(db) as url, chromium_page() as page:
        page.goto(f"{url}/run?run={run.id}")
        page.get_by_role("heading", name="Run", exact=True).wait_for()
        wait_idle(page)
        select_first_row(page)
        assert thumbnail_sizes(page) == [(THUMBNAIL_PIXELS, THUMBNAIL_PIXELS // 2)]
        page.get_by_text("photo · image/png").first.wait_for()
        shot(page, "images_run_trial")

        page.goto(f"{url}/review?run={run.id}")
        page.get_by_role("heading", name="Review", exact=True).wait_for()
        wait_idle(page)
        assert thumbnail_sizes(page) == [(THUMBNAIL_PIXELS, THUMBNAIL_PIXELS // 2)]
        shot(page, "images_review")
