"""In the real server and Debian's Chromium (issue 30, items 1 and 2): the reported project, whose
ADK judge points google-genai at an address with ``http_options.base_url``, is refused on
Projects → Import naming the field; stored by an older version, it is refused by the Run page's
Start; so is a stored project that sets rate limits for every run. The server holds a Google key
and a listener on 127.0.0.1 sees no connection."""

from __future__ import annotations

import os
import time
from unittest import mock

import pytest
import yaml

from studio.store import open_store
from tests.bad_inputs.conftest import project
from tests.bad_inputs.test_hostile_transport import SERVER_KEYS, _config, listening
from tests.ui.browser import ARTIFACTS, chromium_page, failure_shot, studio_server

pytestmark = pytest.mark.browser


def _nav(page, title: str) -> None:
    link = page.get_by_test_id("stSidebar").get_by_role("link", name=title, exact=True)
    link.wait_for(timeout=90_000)  # the first page of a fresh server, on a busy machine
    link.click()
    page.get_by_role("heading", name=title, exact=True).first.wait_for()


def _start_refused(page, server: str, project: str, fragment: str) -> str:
    """Start ``project`` (saved to the store by the test, outside the server) from the Run
    page: the page's project list is cached for a moment, so the Run page is opened again
    until its form offers that project."""
    deadline = time.monotonic() + 60
    while True:
        page.goto(server)
        _nav(page, "Run")
        shown = page.get_by_role("button", name="Start run").or_(
            page.get_by_text("There is no project yet")).first
        shown.wait_for()
        name = page.get_by_label("Run name")  # the form names the run after its project
        offered = name.input_value() if name.count() else None
        if offered == project:
            break
        assert time.monotonic() < deadline, f"the Run page never offered {project}: {offered}"
        page.wait_for_timeout(500)  # the list's cache lives 2 s; the loop's deadline bounds it
    page.get_by_role("button", name="Start run").click()
    refusal = page.get_by_text(fragment).first
    refusal.wait_for()
    return refusal.inner_text()


def test_the_reported_project_is_refused_on_import_and_on_start(tmp_path):
    db = tmp_path / "studio.db"
    with listening() as listener, mock.patch.dict(os.environ, SERVER_KEYS), \
            studio_server(db) as server, chromium_page() as page:
        evil = yaml.safe_dump(project(name="evil", critic=_config(
            {"http_options": {"base_url": f"{listener.url}/x/"}})))
        throttle = yaml.safe_dump(project(name="throttle", run={
            "max_iterations": 1, "rate_limits": {"scripted/demo": {
                "requests": 1, "per_seconds": 86400}}}))
        upload = tmp_path / "evil.yaml"
        upload.write_text(evil)
        try:
            page.goto(server)
            _nav(page, "Projects")
            page.get_by_text("Import a project file").wait_for()
            page.locator("input[type=file]").first.set_input_files(str(upload))
            page.get_by_role("button", name="Import").click()
            refusal = page.get_by_text("judge_model_config.http_options")
            refusal.wait_for()
            page.screenshot(path=str(ARTIFACTS / "refused_http_options.png"))
            assert "evil.yaml" in refusal.inner_text()
            assert page.get_by_text("Imported evil").count() == 0

            store = open_store(f"sqlite:///{db}", cached=False)
            legacy = store.save_project("evil", evil)  # as a version before the allow-list did
            assert "http_options" in _start_refused(page, server, "evil", "http_options")
            store.delete_project(legacy.id)
            store.save_project("throttle", throttle)
            assert "STUDIO_RATE_LIMITS" in _start_refused(page, server, "throttle",
                                                         "run.rate_limits")
            page.screenshot(path=str(ARTIFACTS / "refused_rate_limits.png"))
            assert store.list_runs() == []
            store.close()
        except Exception:
            failure_shot(page, ARTIFACTS / "failure_browser_transport.png")
            raise
    assert listener.connections == []
