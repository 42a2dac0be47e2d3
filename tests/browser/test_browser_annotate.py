"""The annotation queue from the keyboard alone, in Debian's headless Chromium: the focus is on
the score when the page opens and after every save; ``?`` opens the cheatsheet; three trials in
a row are reviewed, the first with a corrected output (Ctrl+Enter saves from it); Alt+P goes
back to it and shows the correction as a diff against the output; Alt+N comes back to the
queue. Each step waits on what the page shows, never on a fixed time. Screenshots go to
``/tmp/ui_shots_annotate/`` (look at them).

Run with ``pytest -m browser tests/browser/test_browser_annotate.py``.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
import yaml

from studio.engine import EvolutionConfig
from studio.engine.hosting.worker import get_manager
from studio.projects.workspace import (
    EXAMPLES_DIR,
    import_example,
    pending_proposal,
    start_project_run,
)
from studio.store import open_store
from tests.helpers import wait_until
from tests.ui.browser import chromium_page, failure_shot, full_page_shot, studio_server

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/ui_shots_annotate")
CORRECTED = "Harbor fog at dawn, the cranes fade one by one."


def expected_project(folder: Path) -> Path:
    """The scripted haiku project with an expected answer on every example."""
    project = yaml.safe_load((EXAMPLES_DIR / "haiku_scripted.yaml").read_text())
    project["name"] = "haiku-expected"
    for split in ("train", "val"):
        for row in project["dataset"][split]:
            row["expected"] = f"A haiku about {row['topic']}, three lines."
    path = folder / "haiku_expected.yaml"
    path.write_text(yaml.safe_dump(project))
    return path


def expected_review_run(store, folder: Path):
    """A review-mode run of that project, waiting at its first gate."""
    project = import_example(store, expected_project(folder))
    run = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=4, minibatch_size=3, review="review", seed=7))
    wait_until(lambda: pending_proposal(store, run.id))
    return run


@pytest.fixture
def waiting_run(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    run = expected_review_run(store, tmp_path)
    yield db, store, run
    manager = get_manager(store)
    manager.stop(run.id)
    handle = manager.handle(run.id)
    if handle is not None:
        with contextlib.suppress(Exception):
            handle.wait(timeout=30)
    store.close()


def score_focused(page) -> None:
    page.wait_for_function(
        "() => document.activeElement?.getAttribute('aria-label') === 'Your score'")


def card_trial(page, other_than: tuple[int, ...] = ()) -> int:
    """The trial on the card, once it is none of ``other_than``."""
    found: list[int] = []

    def shown() -> bool:
        header = page.get_by_text(re.compile(r"^Trial \d+ \(id \d+\)")).first
        if not header.is_visible():
            return False
        number = int(re.match(r"Trial \d+ \(id (\d+)\)", header.inner_text()).group(1))
        found[:] = [number]
        return number not in other_than

    wait_until(shown, 30, step=0.1, message="the next trial's card")
    return found[0]


def test_keyboard_only_review_of_three_trials_with_a_corrected_output(waiting_run):
    db, store, run = waiting_run
    with studio_server(db) as url, chromium_page() as page:
        try:
            annotate(page, url, store, run.id)
        except Exception:
            failure_shot(page, SHOTS / "failure.png")
            raise


def annotate(page, url: str, store, run_id: str) -> None:
    page.goto(f"{url}/review?run={run_id}")
    page.get_by_role("heading", name="Review next").wait_for()
    first = card_trial(page)
    page.get_by_text("Expected answer").first.wait_for()
    page.get_by_text(re.compile(r"A haiku about .*, three lines\.")).first.wait_for()
    page.get_by_text(re.compile(r"^0 of \d+ done")).wait_for()
    score_focused(page)  # on the score from the start: no Tab needed

    page.keyboard.press("?")
    page.get_by_text("previous / next trial of this sitting").wait_for()
    full_page_shot(page, SHOTS / "01_cheatsheet.png")
    page.keyboard.press("?")  # and closed again
    page.get_by_text("previous / next trial of this sitting").wait_for(state="hidden")

    score_focused(page)
    page.keyboard.type("0.2")
    page.keyboard.press("Tab")
    page.keyboard.type("Too plain: the critic is too kind.")
    page.keyboard.press("Tab")
    page.keyboard.type(CORRECTED)
    full_page_shot(page, SHOTS / "02_first_typed.png")
    page.keyboard.press("Control+Enter")
    page.get_by_text(f"(id {first}) (score 0.20, feedback, corrected "
                     "output)").wait_for()
    second = card_trial(page, (first,))
    score_focused(page)  # defect 3: the focus came back to the score, not the feedback

    page.keyboard.type("0.9")
    page.keyboard.press("Tab")
    page.keyboard.type("Vivid.")
    page.keyboard.press("Enter")  # Enter in the feedback saves
    page.get_by_text(f"(id {second}) (score 0.90, feedback)").wait_for()
    third = card_trial(page, (first, second))
    score_focused(page)

    page.keyboard.type("0.4")
    page.keyboard.press("Enter")
    page.get_by_text(f"(id {third}) (score 0.40)").wait_for()
    card_trial(page, (first, second, third))
    score_focused(page)
    page.get_by_text(re.compile(r"^3 of \d+ done")).wait_for()
    full_page_shot(page, SHOTS / "03_three_done.png")

    for expected in (third, second, first):  # back through the sitting
        page.keyboard.press("Alt+P")
        page.get_by_text(re.compile(rf"^Trial \d+ \(id {expected}\) ·")).wait_for()
        score_focused(page)
    page.get_by_text("What the answer should have been").first.wait_for()
    page.get_by_text("shown earlier in this sitting").wait_for()
    full_page_shot(page, SHOTS / "04_back_on_the_first.png")
    for expected in (second, third):  # and forward again, a key once its card shows: a key
        page.keyboard.press("Alt+N")   # pressed while the page reruns may be lost
        page.get_by_text(re.compile(rf"^Trial \d+ \(id {expected}\) ·")).wait_for()
        score_focused(page)
    page.keyboard.press("Alt+N")
    card_trial(page, (first, second, third))
    score_focused(page)

    active = {o.trial_id: (o.score, o.feedback, o.corrected_output)
              for o in store.overrides(run_id, include_undone=False)}
    assert active == {first: (0.2, "Too plain: the critic is too kind.", CORRECTED),
                      second: (0.9, "Vivid.", None), third: (0.4, None, None)}
