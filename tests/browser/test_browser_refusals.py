"""In the real server: an uploaded project with ``agent.ref`` is refused on the Projects page, and
a WebSocket whose Host is not this machine's is refused (DNS rebinding). Debian's chromium."""

from __future__ import annotations

import base64
import http.client
import os

import pytest
import yaml

from tests.bad_inputs.conftest import project
from tests.ui.browser import ARTIFACTS, chromium_page, studio_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with studio_server(tmp_path_factory.mktemp("refusals") / "studio.db") as url:
        yield url


def test_the_projects_page_refuses_an_uploaded_agent_ref(server, tmp_path):
    upload = tmp_path / "evil.yaml"
    upload.write_text(yaml.safe_dump(project(name="evil", agent={"ref": "os:abort"})))
    with chromium_page() as page:
        page.goto(server)
        page.get_by_test_id("stSidebar").get_by_role("link", name="Projects", exact=True).click()
        page.get_by_text("Import a project file").wait_for()
        page.locator("input[type=file]").first.set_input_files(str(upload))
        page.get_by_role("button", name="Import").click()
        refusal = page.get_by_text("loads Python code on the server")
        refusal.wait_for()
        page.screenshot(path=str(ARTIFACTS / "refused_agent_ref.png"))
        assert "STUDIO_ALLOW_CODE_REFS" in refusal.inner_text()
        assert page.get_by_text("Imported evil").count() == 0
    assert _health(server)  # the server is alive: nothing was called


def _health(url: str) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=5)
    try:
        connection.request("GET", "/_stcore/health")
        return connection.getresponse().status == 200
    finally:
        connection.close()


def _websocket_status(url: str, host: str, origin: str) -> int:
    port = int(url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", "/_stcore/stream", skip_host=True)
        for name, value in (("Host", host), ("Origin", origin), ("Upgrade", "websocket"),
                            ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                            ("Sec-WebSocket-Key", base64.b64encode(os.urandom(16)).decode())):
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


def test_a_websocket_from_a_foreign_host_is_refused(server):
    port = server.rsplit(":", 1)[1]
    assert _websocket_status(server, f"localhost:{port}", f"http://localhost:{port}") == 101
    assert _websocket_status(server, "evil.example", "http://evil.example") != 101
    assert _websocket_status(server, f"localhost:{port}", "http://evil.example") != 101
