"""Reviewing from the keyboard alone, in Debian's headless Chromium: reach the score field with
Tab, score and comment one trial, Enter; the next trial appears with the focus back on the score;
score it, Enter; Esc skips the third. Each step waits on what the page shows, never on a fixed
time. Screenshots go to ``/tmp/ui_shots_rq/`` (look at them).

Run with ``pytest -m browser tests/browser/test_review_keyboard.py``.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from studio.engine.hosting.worker import get_manager
from studio.projects.reviewing import record_review, review_records
from studio.store import open_store
from tests.helpers import wait_until
from tests.ui.browser import chromium_page, failure_shot, full_page_shot, studio_server
from tests.ui.test_pages import review_run

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/ui_shots_rq")
MAX_TABS = 80
"""Tab presses allowed to reach the score field from the top of the page."""


@pytest.fixture
def waiting_run(tmp_path):
    """A review-mode run of the scripted example, waiting at its first gate, and its store."""
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    run = review_run(store)
    yield db, store, run
    manager = get_manager(store)
    manager.stop(run.id)
    handle = manager.handle(run.id)
    if handle is not None:
        with contextlib.suppress(Exception):
            handle.wait(timeout=30)
    store.close()


def shot(page, name: str) -> None:
    full_page_shot(page, SHOTS / f"{name}.png")


def focused_label(page) -> str | None:
    return page.evaluate("() => document.activeElement?.getAttribute('aria-label')")


def wait_focused(page, label: str) -> None:
    page.wait_for_function(
        f"() => document.activeElement?.getAttribute('aria-label') === {label!r}")


def card_trial(page, other_than: tuple[int, ...] = ()) -> int:
    """The trial on the card, once it is none of ``other_than`` (the card is redrawn after the
    notice above it)."""
    header = page.get_by_text(re.compile(r"^Trial \d+ \(id \d+\)")).first
    header.wait_for()
    found = []

    def drawn() -> bool:
        found[:] = [int(re.match(r"Trial \d+ \(id (\d+)\)", header.inner_text()).group(1))]
        return found[0] not in other_than

    wait_until(drawn, 30, step=0.1, message="the next trial's card")
    return found[0]


def test_review_two_trials_with_the_keyboard_only(waiting_run):
    db, store, run = waiting_run
    with studio_server(db) as url, chromium_page() as page:
        try:
            review_by_keyboard(page, url, store, run.id)
        except Exception:
            failure_shot(page, SHOTS / "failure_keyboard_review.png")
            raise


def review_by_keyboard(page, url: str, store, run_id: str) -> None:
    page.goto(f"{url}/review?run={run_id}")
    page.get_by_role("heading", name="Review next").wait_for()
    first = card_trial(page)
    page.get_by_label("Your score").wait_for()  # the form is drawn, not a skeleton
    page.get_by_text("topic:").first.wait_for()  # the card's input is shown
    shot(page, "01_queue_first_trial")

    for _ in range(MAX_TABS):  # from the top of the page to the score field, by Tab alone
        if focused_label(page) == "Your score":
            break
        page.keyboard.press("Tab")
    assert focused_label(page) == "Your score"
    page.keyboard.type("0.9")
    page.keyboard.press("Tab")
    assert focused_label(page) == "Your feedback"
    page.keyboard.type("Vivid and on topic: the critic is too strict.")
    shot(page, "02_first_trial_typed")
    page.keyboard.press("Enter")
    page.get_by_text(f"(id {first}) (score").wait_for()
    second = card_trial(page, (first,))
    assert second != first
    wait_focused(page, "Your score")  # back on the score, not left in the feedback
    shot(page, "03_second_trial_shown")

    page.keyboard.type("0.2")
    page.keyboard.press("Enter")
    page.get_by_text(f"(id {second}) (score").wait_for()
    third = card_trial(page, (first, second))
    assert third not in (first, second)
    wait_focused(page, "Your score")
    page.keyboard.press("Escape")
    page.get_by_text(f"(id {third}) for now.").wait_for()
    shot(page, "04_after_two_reviews_and_a_skip")

    page.goto(f"{url}/run?run={run_id}")  # the Run page's ETA counts the review still due
    eta = re.compile(r"Review mode: the ETA counts .* mean of 2 timed review")
    page.get_by_text(eta).wait_for()
    shot(page, "05_run_eta_counts_review")

    active = {o.trial_id: (o.score, o.feedback) for o in store.overrides(run_id,
                                                                        include_undone=False)}
    assert active == {first: (0.9, "Vivid and on topic: the critic is too strict."),
                      second: (0.2, None)}
    assert [(r.trial_id, r.action) for r in review_records(store, run_id)] == [
        (first, "corrected"), (second, "corrected"), (third, "skipped")]


def test_entries_typed_for_a_trial_never_land_on_the_one_swapped_in(waiting_run):
    """Issue 30's swap hazard on the queue, in the browser: a score typed (not yet saved) for
    the trial on the card stays in the form when the card changes on its own (another tab
    reviewed that trial, then any widget redrew the page). Enter then saved it on the new
    trial; now it is refused once, with the page saying so, and the next Enter saves it."""
    db, store, run = waiting_run
    with studio_server(db) as url, chromium_page() as page:
        try:
            page.goto(f"{url}/review?run={run.id}")
            page.get_by_role("heading", name="Review next").wait_for()
            first = card_trial(page)
            score = page.get_by_label("Your score")
            score.fill("0.3")
            record_review(store, run.id, first, seconds=1.0, action="confirmed", author="ben")
            name = page.get_by_label("Your name", exact=True)  # any widget redraws the page
            name.fill("ana")
            name.press("Tab")
            second = card_trial(page, (first,))
            changed = re.compile(rf"^The page changed: Trial \d+ \(id {second}\)")
            page.get_by_text(changed).wait_for()
            assert score.input_value() == "0.30"  # the entry meant for the first trial
            shot(page, "06_card_swapped_under_typed_score")
            score.press("Enter")
            page.get_by_text(re.compile(rf"\(id {second}\) is now shown\. Nothing was saved")
                             ).wait_for()
            shot(page, "07_save_refused_after_swap")
            assert store.overrides(run.id) == []
            page.get_by_label("Your score").press("Enter")
            page.get_by_text(f"(id {second}) (score 0.30)").wait_for()
        except Exception:
            failure_shot(page, SHOTS / "failure_swapped_card.png")
            raise
    assert [(o.trial_id, o.score, o.author) for o in store.overrides(run.id)] == [
        (second, 0.3, "ana")]
