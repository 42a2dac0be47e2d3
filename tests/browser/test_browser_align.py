"""In real headless Chromium: run the scripted strict-critic example, correct its scores (two on
the Review page, the rest seeded), start "Align critic" on the Agreement page, see agreement
before/after on the held-out labels, use the aligned critic for the next run and start it.
Screenshots go to ``test-artifacts/ui/align_*.png``.

Run with ``pytest -m browser tests/browser/test_browser_align.py``.
"""

from __future__ import annotations

import re

import pytest

from studio.model.records import RunStatus
from studio.runtime.providers.strict import FIX_PHRASE, is_short
from studio.store import open_store
from tests.helpers import wait_until
from tests.ui.browser import (
    ARTIFACTS,
    chromium_page,
    clicked_into_a_run,
    failure_shot,
    full_page_shot,
    nav,
    settled,
    studio_server,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("align") / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    with studio_server(db) as url:
        yield url, store
    store.close()


def shot(page, name: str) -> None:
    full_page_shot(page, ARTIFACTS / f"align_{name}.png")


def finished(store, run_id: str) -> bool:
    return store.get_run(run_id).status is RunStatus.COMPLETED


def started_run(page, store) -> str:
    """Start the current project's run on the Run page; its id once it completed."""
    nav(page, "Run")
    settled(page)
    form = page.locator("details", has_text="Start a new run").first
    if not form.evaluate("el => el.open"):  # folded away (a run is shown, or was folded)
        page.get_by_text("Start a new run", exact=True).click()
        page.wait_for_function("el => el.open", arg=form.element_handle())
    start = page.get_by_role("button", name="Start run")
    start.wait_for(state="visible")
    run_id = clicked_into_a_run(page, store, "Start run", "run")
    wait_until(lambda: finished(store, run_id), timeout=60, message="the run to complete")
    return run_id


def correct_on_review(page, score: str, feedback: str) -> None:
    nav(page, "Review")
    page.get_by_text("Correct one trial").wait_for()
    page.get_by_label("Human score").fill(score)
    page.get_by_label("Human feedback").fill(feedback)
    page.get_by_role("button", name="Save correction").click()
    page.get_by_text("Saved 1 correction(s)").wait_for()


def test_align_the_critic_and_use_it_for_the_next_run(server):
    url, store = server
    with chromium_page() as page:
        try:
            align_flow(page, url, store)
        except Exception:
            failure_shot(page, ARTIFACTS / "align_failure.png")
            raise


def align_flow(page, url: str, store) -> None:
    page.goto(url)
    nav(page, "Projects")
    page.get_by_role("button", name="Load example: short-answers-scripted").click()
    page.get_by_text("Loaded the example").wait_for()
    run_id = started_run(page, store)

    correct_on_review(page, "0.9", "Short is fine: it answers the question.")
    nav(page, "Agreement")
    page.get_by_text(re.compile(r"9 more corrections with a score needed")).wait_for()
    shot(page, "01_labels_needed")
    for trial in store.trials(run_id):  # the rest of the person's corrections, seeded
        if not store.overrides(run_id, trial_id=trial.id):
            short = is_short(trial.output)
            store.add_override(trial.id, score=0.9 if short else 0.8,
                               feedback="Short is fine." if short else "Good.", author="ana")

    page.reload()
    page.get_by_role("heading", name="Align critic").wait_for()
    page.get_by_text("20 corrected trials are labels").wait_for()
    align_id = clicked_into_a_run(page, store, "Align critic", "align run")
    wait_until(lambda: finished(store, align_id), timeout=90, message="the align run")
    # no reload: the panel redraws itself when the align run ends
    page.get_by_text(re.compile("agrees better with the person")).first.wait_for()
    page.get_by_text("aligned instruction").scroll_into_view_if_needed()
    shot(page, "02_before_after")
    page.get_by_role("button", name="Use for next run").click()
    page.get_by_text(re.compile("judges with the aligned critic")).wait_for()
    shot(page, "03_used_for_next_run")

    next_run = started_run(page, store)
    page.get_by_text(re.compile(r"Showing 20 of 20 trials")).wait_for()
    shot(page, "04_next_run")
    run = store.get_run(next_run)
    assert FIX_PHRASE in run.spec.critic.agent.instruction
    assert store.get_project(run.project_id).name == "short-answers-scripted (aligned critic)"
    short_scores = [t.score for t in store.trials(next_run) if is_short(t.output)]
    assert short_scores and min(short_scores) >= 0.9
