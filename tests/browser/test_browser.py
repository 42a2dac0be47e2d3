"""End to end in real headless Chromium (Debian's, never a downloaded browser): start the server,
load the scripted example, start a run in review mode, watch trials arrive, override a score,
accept a proposal, reject the next with a reason, open Compare. Screenshots of every step go to
``test-artifacts/ui/``.

Run with ``pytest -m browser tests/ui``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from studio.store import open_store
from tests import zygote
from tests.helpers import wait_until
from tests.ui.browser import (
    ARTIFACTS,
    ROOT,
    SCRIPT_IDLE,
    chromium_page,
    clicked_into_a_run,
    failure_shot,
    full_page_shot,
    nav,
    studio_server,
)

pytestmark = pytest.mark.browser

_DATABASES: dict[str, object] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("browser") / "studio.db"
    with studio_server(db) as url:
        _DATABASES[url] = db
        yield url


def server_db(url: str):
    return _DATABASES[url]


def shot(page, name: str) -> None:
    full_page_shot(page, ARTIFACTS / f"{name}.png")


def wait_idle(page) -> None:
    """Wait until the app is not running a script.

    Streamlit shows its status widget only once a run has lasted 500 ms, so a run younger than
    that is seen by the app root's script state, which changes as soon as the server says a run
    started or ended. The pause before is the one fixed wait left: it lets a click's rerun
    request reach the server and its "running" come back. A test that waits for what the rerun
    draws, or for it to vanish, needs no pause at all; prefer that where there is such a thing."""
    page.wait_for_timeout(300)
    page.wait_for_function(SCRIPT_IDLE)


def test_new_user_flow(server):
    with chromium_page() as page:
        try:
            new_user_flow(page, server)
        except Exception:
            failure_shot(page, ARTIFACTS / "failure_new_user_flow.png")
            raise


def new_user_flow(page, server: str) -> None:
    page.goto(server)
    page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
    page.get_by_text("Get started").wait_for()
    shot(page, "01_home_empty")

    nav(page, "Projects")
    page.get_by_text("No projects yet").wait_for()
    shot(page, "02_projects_empty")
    page.get_by_role("button", name="Load example: haiku-scripted").click()
    page.get_by_text("Loaded the example").wait_for()
    page.get_by_role("tab", name="Dataset").click()
    page.get_by_text("Load rows: upload a CSV/JSONL file or paste").wait_for()  # drawn on open
    wait_idle(page)
    shot(page, "03_project_loaded")
    page.get_by_role("button", name="Try it").click()
    page.get_by_text("Critic score", exact=True).wait_for()
    shot(page, "03b_try_on_one_example")

    nav(page, "Run")
    page.get_by_text("Review: I decide on each proposal").click()
    store = open_store(f"sqlite:///{server_db(server)}", cached=False)
    try:
        run_id = clicked_into_a_run(page, store, "Start run", "run")
    finally:
        store.close()
    page.get_by_text(NEWEST).wait_for()
    page.get_by_text("is waiting for your decision").wait_for()
    shot(page, "04_run_live")
    select_first_row(page)
    page.get_by_text(re.compile(r"Trial \d+ \(id \d+\) · iteration")).wait_for()
    shot(page, "05_run_trial_detail")

    nav(page, "Review")
    page.get_by_text("Correct one trial").wait_for()
    page.get_by_label("Human score").fill("1")
    page.get_by_label("Human feedback").fill("Reads well; the critic was too strict.")
    page.get_by_role("button", name="Save correction").click()
    page.get_by_text("Saved 1 correction(s)").wait_for()
    shot(page, "06_review_override")

    nav(page, "Proposals")
    accept = page.get_by_role("button", name="Accept", exact=True)
    accept.wait_for()
    first = proposal_heading(page)
    shot(page, "07_proposal_pending")
    accept.click()
    wait_until_decided(page, first)
    wait_for_new_proposal(page, first)
    second = proposal_heading(page)
    page.get_by_label("Reason for rejecting").fill("Too long: keep the rules short.")
    page.get_by_label("Reason for rejecting").press("Tab")
    wait_idle(page)
    page.get_by_role("button", name="Reject", exact=True).click()
    wait_until_decided(page, second)
    page.get_by_text(re.compile(r"Rejected; the next reflection")).wait_for(timeout=5_000)
    shot(page, "08_proposal_after_reject")

    second_tab = page.context.new_page()  # another tab on the same run sees the same state
    second_tab.goto(f"{server}/run?run={run_id}")
    second_tab.get_by_text(NEWEST).wait_for()
    second_tab.get_by_text(run_id).first.wait_for()
    second_tab.close()

    nav(page, "Compare")
    page.get_by_text("Per-example scores").wait_for()
    page.locator(".js-plotly-plot").first.wait_for()
    shot(page, "09_compare")

    nav(page, "Agreement")
    page.get_by_text("Mean absolute error").first.wait_for()
    shot(page, "10_agreement")

    nav(page, "Home")
    page.get_by_text("Recent runs").wait_for()
    shot(page, "12_home_with_runs")
    nav(page, "Agreement")

    page.reload()  # a refresh loses nothing: the run is still the current one
    page.get_by_role("heading", name="Agreement", exact=True).wait_for()
    page.get_by_text("Mean absolute error").first.wait_for()
    assert run_id[:8] in page.get_by_test_id("stSidebar").get_by_label(
        "Current run").input_value()
    assert f"run={run_id}" in page.evaluate("location.href")


def slow_example(tmp_path) -> Path:
    """The scripted example with 600 ms per model call, so a run lasts well beyond the checks
    made while it streams (on a loaded machine too)."""
    text = (ROOT / "examples" / "haiku_scripted.yaml").read_text()
    assert "scripted/demo@150ms" in text
    path = tmp_path / "haiku_slow.yaml"
    path.write_text(text.replace("scripted/demo@150ms", "scripted/demo@600ms"))
    return path


def test_headless_cli_run_is_watchable(server, tmp_path):
    """A run started with the CLI in another process streams into the Run page."""
    db = server_db(server)
    cli = zygote.popen(
        [sys.executable, "-m", "studio.cli", "--db", f"sqlite:///{db}", "run",
         str(slow_example(tmp_path)), "--max-iterations", "6"],
        cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        run_id = None
        for _ in range(50):  # the CLI's first lines (library warnings may come first)
            found = re.search(r"run (\w+) started", cli.stderr.readline())
            if found:
                run_id = found.group(1)
                break
        assert run_id, "the CLI did not report its run"
        threading.Thread(target=cli.stderr.read, daemon=True).start()  # never let the pipe fill
        with chromium_page() as page:
            try:
                page.goto(f"{server}/run?run={run_id}")
                page.get_by_text(NEWEST).wait_for()
                page.get_by_text(run_id).first.wait_for()
                keeps_scroll_and_selection_while_trials_arrive(page)
                page.get_by_text("completed", exact=True).first.wait_for(timeout=180_000)
                shot(page, "11_cli_run_watched")
            except Exception:
                failure_shot(page, ARTIFACTS / "failure_cli_run.png")
                raise
    finally:
        cli.wait(timeout=180)


def select_first_row(page) -> None:
    """Click the first data row of the trials table (a canvas grid: click by position)."""
    grid = page.locator("[class*='st-key-run-table-'] canvas").first
    grid.wait_for()
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 16, box["y"] + 35 + 17)


def proposal_heading(page) -> str:
    heading = page.get_by_role("heading", name=re.compile(r"Proposal \d+ \(id \d+\) · iteration"))
    heading.first.wait_for()
    return heading.first.inner_text()


def proposal_headings(page) -> list[str]:
    """The proposal headings shown now (``all_inner_texts`` never waits)."""
    return page.get_by_role(
        "heading", name=re.compile(r"Proposal \d+ \(id \d+\) · iteration")).all_inner_texts()


def wait_until_decided(page, previous: str, timeout: float = 30.0) -> None:
    """The proposal leaves the gate once the engine applies the decision."""
    wait_until(lambda: (headings := proposal_headings(page)) == [] or headings[0] != previous,
               timeout, step=0.3, message=f"{previous!r} to leave the gate after the decision")


def wait_for_new_proposal(page, previous: str, timeout: float = 60.0) -> None:
    def new_one_waits() -> bool:
        headings = proposal_headings(page)
        return bool(headings and headings[0] != previous
                    and page.get_by_role("button", name="Accept", exact=True).count())

    wait_until(new_one_waits, timeout, step=0.3,
               message=f"a new pending proposal after {previous!r}")


NEWEST = re.compile(r"newest trial \d+ \(id \d+\)")


def newest_trial(page) -> int:
    caption = page.get_by_text(NEWEST).inner_text()
    return int(re.search(r"newest trial \d+ \(id (\d+)\)", caption).group(1))


def trials_shown(page) -> int:
    caption = page.get_by_text(NEWEST).inner_text()
    return int(re.search(r"Showing \d+ of (\d+) trials", caption).group(1))


def keeps_scroll_and_selection_while_trials_arrive(page) -> None:
    """New rows arrive in place: the table's scroll position and the selected trial stay."""
    wait_until(lambda: trials_shown(page) >= 20, 60, step=0.2,
               message="enough rows to scroll the trials table")
    select_first_row(page)
    selected = page.get_by_text(re.compile(r"Trial \d+ \(id \d+\) · iteration"))
    selected.wait_for(timeout=10_000)
    trial = re.search(r"Trial \d+ \(id (\d+)\)", selected.inner_text()).group(1)
    scroller = page.locator("[class*='st-key-run-table-']").locator(".dvn-scroller").first
    scroller.evaluate("element => { element.scrollTop = 70; }")
    assert scroller.evaluate("element => element.scrollTop") == 70
    for _ in range(2):  # two refreshes of the live panel, each bringing a new trial
        before = newest_trial(page)
        wait_until(lambda before=before: newest_trial(page) > before, 30, step=0.1,
                   message=f"a trial newer than #{before} in the live panel")
    assert scroller.evaluate("element => element.scrollTop") == 70
    page.get_by_text(re.compile(rf"Trial \d+ \(id {trial}\) · iteration")).wait_for(
        timeout=5_000)
