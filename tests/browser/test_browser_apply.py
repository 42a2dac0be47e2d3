"""End to end in headless Chromium: a finished run of an agent folder served by
``studio ui --agents DIR``; on Compare, *Apply to the folder* shows the diff first, and the
confirm rewrites the folder's ``prompt.py`` (issue 31). The browser names no path: the run's
own folder, inside the served one, is the only place it may write.

Run with ``pytest -m browser tests/browser/test_browser_apply.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from studio.cli import main
from studio.engine.policies.pool import load_view
from studio.projects.applying import applications
from studio.store import open_store
from tests.browser.test_browser import wait_idle
from tests.projects.adk_haiku_sample import COORDINATOR_PROMPT, write_sample_folder
from tests.projects.test_adk_projects import write_eval_set
from tests.projects.test_applying import PROJECT, imported_instruction
from tests.ui.browser import (
    ARTIFACTS,
    chromium_page,
    failure_shot,
    full_page_shot,
    studio_ui_agents,
)

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("STUDIO_SHOTS_DIR") or ARTIFACTS)


@pytest.fixture
def served_run(tmp_path, monkeypatch):
    """A finished run of a sample-shaped folder under the served folder, and the server:
    ``(url, db, run_id, folder, best instruction)``."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "agents"
    folder = write_sample_folder(root, "browser_apply")
    write_eval_set(tmp_path / "haiku.evalset.json")
    project = tmp_path / "project.yaml"
    project.write_text(PROJECT.format(folder="agents/browser_apply"), encoding="utf-8")
    db = f"sqlite:///{tmp_path}/studio.db"
    assert main(["--db", db, "run", str(project)]) == 0
    store = open_store(db, cached=False)
    run = store.list_runs(limit=1)[0]
    best = next(c for c in store.candidates(run.id) if c.id == load_view(store, run.id).best_id)
    store.close()
    with studio_ui_agents(db, root) as (url, _):
        yield url, db, run.id, folder, best.components["instruction"]


def test_apply_to_the_folder_shows_the_diff_then_rewrites_prompt_py(served_run):
    url, db, run_id, folder, best = served_run
    prompt = folder / "prompt.py"
    before = prompt.read_text()
    with chromium_page() as page:
        try:
            page.goto(f"{url}/compare?run={run_id}")
            page.get_by_role("heading", name="Ship the winner").wait_for()
            page.get_by_role("button", name="Download the best").wait_for()
            page.get_by_role("button", name="Apply to the folder (browser_apply)").click()
            page.get_by_text("instruction: prompt.py:8 (the constant COORDINATOR_PROMPT)"
                             ).wait_for()
            page.get_by_text("+++ b/browser_apply/prompt.py").wait_for()
            wait_idle(page)
            assert prompt.read_text() == before  # shown, not written
            full_page_shot(page, SHOTS / "apply_diff.png")
            page.get_by_role("button", name="Write prompt.py").click()
            page.get_by_text("Written: prompt.py.").wait_for()
            wait_idle(page)
            full_page_shot(page, SHOTS / "apply_written.png")
        except Exception:
            failure_shot(page, SHOTS / "apply_failure.png")
            raise
    assert prompt.read_text() != before
    assert imported_instruction(folder) == best != COORDINATOR_PROMPT
    store = open_store(db, cached=False)
    try:
        [record] = applications(store, run_id)
    finally:
        store.close()
    assert (record.files, record.folder) == (["prompt.py"], str(folder.resolve()))
