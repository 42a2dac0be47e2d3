"""In real headless Chromium (Debian's): the overfitting guard scores a stopped run's test set
from Compare and shows train / validation / test side by side; a fork started from Compare's
form runs and its Compare page shows the lineage across runs. Screenshots go to
``/tmp/ui_shots_i13/`` (``STUDIO_UI_SHOTS`` moves them).

Run with ``pytest -m browser tests/browser/test_browser_guard_fork.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from studio.engine import EvolutionConfig, build_engine, create_run, decide
from studio.engine.hosting.worker import get_manager
from studio.model.records import ProposalStatus
from studio.store import open_store
from tests.helpers import demo_spec, trainset, wait_until
from tests.ui.browser import (
    chromium_page,
    clicked_into_a_run,
    failure_shot,
    full_page_shot,
    settled,
    studio_server,
)

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("STUDIO_UI_SHOTS", "/tmp/ui_shots_i13"))
VAL = [{"topic": t} for t in ("harbor fog", "desert wind", "paper lantern")]
TEST = [{"topic": t} for t in ("river stone", "winter moon", "garden gate", "temple bell",
                               "green tea")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("guard_fork") / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    with studio_server(db) as url:
        yield url, store
    store.close()


def shot(page, name: str) -> None:
    full_page_shot(page, SHOTS / f"{name}.png")




def choose(page, label: str, starts_with: str, attempts: int = 3) -> None:
    """Pick a selectbox option by typing the start of its text (as a keyboard user does).

    A rerun that redraws the box while its list is open closes the list, and the Enter then
    takes nothing (seen in a load run of issue 33: the box kept the typed text): the person sees
    it and chooses again, and so does this, up to ``attempts`` times."""
    box = page.get_by_role("combobox", name=label, exact=True)
    chosen = re.compile(re.escape(starts_with) + r".+")
    for attempt in range(1, attempts + 1):
        settled(page)  # a rerun still drawing the page below would redraw the open list
        box.click()
        box.press("ControlOrMeta+a")  # what a lost attempt typed is replaced
        box.press_sequentially(starts_with)
        page.get_by_role("option").filter(has_text=starts_with).first.wait_for()
        box.press("Enter")  # the typed text filters the list; Enter takes its focused option
        page.get_by_role("listbox").wait_for(state="hidden")
        try:  # a choice shows in the box at once, with the list's closing
            expect(box).to_have_value(chosen, timeout=5_000)
            return
        except AssertionError:
            if attempt == attempts:
                raise


def accepted_then_stopped(store) -> str:
    """A review-mode run: a person accepts the first proposal and stops at the next gate, so
    the best candidate beats the baseline and the test set is not scored yet."""
    run = create_run(store, spec=demo_spec(), trainset=trainset(5), valset=VAL, testset=TEST,
                     config=EvolutionConfig(max_iterations=4, review="review", seed=7))
    handle = get_manager(store).start(build_engine(store, run.id))
    seen: set[int] = set()
    for action in ("accept", "accept", "stop"):
        pending = wait_until(lambda: [p for p in store.proposals(
            run.id, status=ProposalStatus.PENDING) if p.id not in seen], timeout=30,
            message="a proposal at the gate")[0]
        seen.add(pending.id)
        decide(pending.id, action, author="ana", store=store)
    assert handle.wait(30) == "user"
    return run.id


def test_guard_scores_the_test_set_from_compare(server):
    url, store = server
    run_id = accepted_then_stopped(store)
    with chromium_page() as page:
        try:
            page.goto(f"{url}/compare?run={run_id}")
            page.get_by_role("heading", name="Train / validation / test").wait_for()
            page.get_by_text("not both scored on the test set").wait_for()
            shot(page, "guard_01_before_scoring")
            page.get_by_role("button", name="Score on the test set").click()
            page.get_by_text(re.compile("carries to the test set")).wait_for()
            page.get_by_role("button", name="Score again on the test set").wait_for()
            page.get_by_role("heading", name="Train / validation / test")\
                .scroll_into_view_if_needed()
            shot(page, "guard_02_scored_carries")
        except Exception:
            failure_shot(page, SHOTS / "guard_failure.png")
            raise
    assert len(store.trials(run_id, phase="test")) == 2 * len(TEST)


def test_fork_from_compare_and_see_the_lineage_across_runs(server):
    url, store = server
    run = create_run(store, spec=demo_spec(), trainset=trainset(5), valset=VAL,
                     config=EvolutionConfig(max_iterations=3, seed=7))
    assert get_manager(store).start(build_engine(store, run.id)).wait(30) == "max_iterations"
    with chromium_page() as page:
        try:
            page.goto(f"{url}/compare?run={run.id}")
            page.get_by_text("Fork from this candidate").wait_for()
            choose(page, "Candidate", "#2 ·")
            page.get_by_label("Max iterations").fill("2")
            page.get_by_role("heading", name="Forks").scroll_into_view_if_needed()
            shot(page, "fork_01_form")
            fork_id = clicked_into_a_run(page, store, "Start fork", "fork")
            wait_until(lambda: store.get_run(fork_id).status.value == "completed", timeout=60,
                       message="the fork to complete")
            page.get_by_role("button", name=f"Open the fork {fork_id}").click()
            page.get_by_text("Lineage across runs").wait_for()
            page.locator(".js-plotly-plot").last.wait_for()
            page.get_by_role("heading", name="Forks").scroll_into_view_if_needed()
            shot(page, "fork_02_lineage_across_runs")
        except Exception:
            shot(page, "fork_failure")
            raise
    fork = store.get_run(fork_id)
    assert fork.spec.forked_from.run_id == run.id and fork.spec.forked_from.candidate_index == 2
    assert store.candidates(fork_id)[0].components == store.candidates(run.id)[2].components
