"""In real headless Chromium: the Run page's Export gives the run as JSONL with each
proposal's decision and the person's reason (issue 21: export from the UI), and its trials as
CSV. Screenshots go to ``test-artifacts/ui/``."""

from __future__ import annotations

import csv
import io
import json

import pytest

from studio.engine import decide
from studio.engine.hosting.worker import get_manager
from studio.model.records import RunStatus
from studio.projects.workspace import pending_proposal
from studio.store import open_store
from tests.browser.test_browser import shot, wait_idle
from tests.helpers import wait_until
from tests.ui.browser import chromium_page, studio_server
from tests.ui.test_pages import review_run

pytestmark = pytest.mark.browser

REASON = "Too florid: a haiku names one plain image"


def rejected_run(store):
    """A one-iteration review run whose proposal a person rejected with a reason."""
    run = review_run(store, max_iterations=1)
    proposal = pending_proposal(store, run.id)
    decide(proposal.id, "reject", reason=REASON, author="ana", store=store)
    get_manager(store).handle(run.id).wait(timeout=60)
    assert store.get_run(run.id).status is RunStatus.COMPLETED
    return run, proposal


def download(page, label: str, where) -> bytes:
    """Click a download button in the Export popover; the file Chromium saved."""
    page.get_by_role("button", name="Export").first.click()
    button = page.get_by_role("button", name=label)
    button.wait_for()
    with page.expect_download() as started:
        button.click()
    saved = where / started.value.suggested_filename
    started.value.save_as(saved)
    page.keyboard.press("Escape")  # close the popover
    return saved.read_bytes()


def test_the_run_pages_export_holds_the_rejection_and_its_reason(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    run, proposal = rejected_run(store)
    trials = store.count_trials(run.id)
    store.close()
    with studio_server(db) as url, chromium_page(1440, 900) as page:
        page.goto(f"{url}/run?run={run.id}")
        page.get_by_text(run.id).first.wait_for()
        page.get_by_text("reached its iteration limit").first.wait_for()  # its stop, by name
        wait_idle(page)
        page.get_by_role("button", name="Export").first.click()
        page.get_by_role("button", name="Everything (JSONL)").wait_for()
        shot(page, "run_export_menu")
        page.keyboard.press("Escape")

        lines = [json.loads(line) for line in
                 download(page, "Everything (JSONL)", tmp_path).decode().splitlines()]
        wait_until(lambda: page.get_by_role("button", name="Export").first.is_visible(),
                   message="the popover closed")
        table = list(csv.DictReader(io.StringIO(
            download(page, "Trials (CSV)", tmp_path).decode())))
    [exported] = [line for line in lines if line["type"] == "proposal"]
    assert (exported["proposal_id"], exported["number"]) == (proposal.id, 1)
    assert (exported["decision"], exported["reason"], exported["decided_by"]) == (
        "reject", REASON, "ana")
    assert exported["automatic"] is False
    assert sum(line["type"] == "trial" for line in lines) == trials == len(table)
    assert (tmp_path / f"run_{run.id}.jsonl").exists()
    assert [row["number"] for row in table] == [str(n) for n in range(1, trials + 1)]
