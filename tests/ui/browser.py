"""Helpers for the browser test and the UI benchmark: a studio server on a free port and a page
in Debian's headless Chromium driven by Playwright (no browser is ever downloaded)."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests import zygote
from tests.helpers import StudioProcess, wait_until

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def studio_server(db: Path, *, port: int | None = None, timeout: float = 180.0,
                  flags: tuple[str, ...] = ()) -> Iterator[str]:
    """``streamlit run studio/app.py`` on a fresh port with ``STUDIO_DB_URL`` at ``db``
    (``flags``: more of Streamlit's, e.g. ``("--secrets.files", path)``), healthy once it has
    imported what the first page needs (tests/ui/streamlit_warm.py): ``timeout`` covers that
    cold start, so a test's own waits for the page never do."""
    port = port or free_port()
    env = dict(os.environ, STUDIO_DB_URL=f"sqlite:///{db}", PYTHONUNBUFFERED="1")
    log = open(db.with_suffix(".server.log"), "w")  # noqa: SIM115 (closed below)
    process = zygote.popen(
        [sys.executable, "-m", "tests.ui.streamlit_warm", "run", "studio/app.py",
         "--server.port", str(port),
         "--server.headless", "true", "--server.fileWatcherType", "none", *flags],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}"
    try:
        _wait_healthy(url, process, timeout)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@contextlib.contextmanager
def studio_ui_agents(db: str, root: Path, **env: str) -> Iterator[tuple[str, StudioProcess]]:
    """``studio ui --agents ROOT`` (the CLI's own server, as an ADK developer starts it) on a
    free port, ``env`` added to its environment: ``(url, server)`` once it serves. What it said
    is printed when it stops, so a failing test shows it."""
    port = free_port()
    server = StudioProcess(db, "ui", "--agents", str(root), "--port", str(port), **env)
    url = f"http://localhost:{port}"
    try:
        wait_until(lambda: server.process.poll() is not None or _healthy(url), 60, step=0.3,
                   message="studio ui to serve")
        assert server.process.poll() is None, server.text
        yield url, server
    finally:
        server.stop()
        print(f"studio ui said:\n{server.text[-4000:]}")


def _healthy(url: str) -> bool:
    """The studio's own health endpoint, on localhost only."""
    port = int(url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/_stcore/health")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _wait_healthy(url: str, process: zygote.Process, timeout: float) -> None:
    def healthy() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the studio server exited with {process.returncode}")
        return _healthy(url)

    wait_until(healthy, timeout, step=0.3, message=f"the studio server at {url} to be healthy")


@contextlib.contextmanager
def chromium_page(width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A page in a fresh browser context (tests/conftest.py skips browser tests without
    Debian's chromium, unless CI requires them)."""
    with chromium_pages(1, width, height) as pages:
        yield pages[0]


@contextlib.contextmanager
def chromium_pages(count: int, width: int = 1400, height: int = 1000) -> Iterator[list]:
    """``count`` pages, each in a fresh context of its own (its own cookies, storage and
    sign-in: separate browsers as far as the server can tell), all in the one Chromium this
    process shares (:func:`shared_chromium`); the contexts are closed afterwards."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser = shared_chromium()
    with contextlib.ExitStack() as stack:
        pages = []
        for _ in range(count):
            context = browser.new_context(viewport={"width": width, "height": height})
            stack.callback(context.close)
            # every wait is on a condition, so a long deadline costs nothing when it passes;
            # 30 s was too short for a fresh server's first page beside three test workers and
            # two busy cores (issue 33's load runs)
            context.set_default_timeout(90_000)
            page = context.new_page()
            _keep_a_log(page)
            pages.append(page)
        yield pages


_CHROMIUM: list = []
"""[Playwright, Browser] while this process's Chromium runs."""


def shared_chromium():
    """This process's one Chromium, launched on first use (and again if it went away):
    launching a browser per test cost seconds each, and a fresh context isolates a test as
    well as a fresh browser did. tests/conftest.py closes it when each module ends."""
    if _CHROMIUM and _CHROMIUM[1].is_connected():
        return _CHROMIUM[1]
    close_shared_chromium()
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                             headless=True)
    except BaseException:
        playwright.stop()
        raise
    _CHROMIUM[:] = [playwright, browser]
    return browser


def close_shared_chromium() -> None:
    """Close this process's Chromium and its Playwright, if running."""
    if not _CHROMIUM:
        return
    playwright, browser = _CHROMIUM
    _CHROMIUM.clear()
    with contextlib.suppress(Exception):  # a crashed browser has nothing left to close
        browser.close()
    playwright.stop()


def _keep_a_log(page) -> None:
    """What the browser said while a test ran (console errors, uncaught errors, navigations,
    closed WebSockets), for ``failure_shot`` to print: a blank page alone says nothing."""
    lines: list[str] = []
    page.studio_log = lines
    page.on("console", lambda message: message.type in ("error", "warning")
            and lines.append(f"console {message.type}: {message.text[:300]}"))
    page.on("pageerror", lambda error: lines.append(f"page error: {str(error)[:300]}"))
    page.on("framenavigated", lambda frame: frame.parent_frame is None
            and lines.append(f"navigated to {frame.url}"))
    page.on("websocket", lambda socket: socket.on(
        "close", lambda _socket: lines.append(f"websocket closed: {socket.url}")))


SCRIPT_IDLE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app ? app.getAttribute('data-test-script-state') : 'initial';
    return state !== 'running' && state !== 'rerunRequested'
        && !document.querySelector('[data-testid="stStatusWidget"]');
}"""
"""No script runs. The app root's script state changes as soon as the server says a run started
or ended; Streamlit's status widget shows only once a run has lasted 500 ms."""


APP_READY = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return Boolean(app) && app.getAttribute('data-test-connection-state') === 'CONNECTED'
        && app.getAttribute('data-test-script-state') !== 'initial' && (""" + SCRIPT_IDLE + """)();
}"""
"""Connected, its first run drawn, and no run going: a click now reaches a page that listens.
(Under load, a sidebar link clicked while the first run was still starting was lost and the
page stayed on Home: issue 33's load runs, session 40.)"""


def nav(page, title: str) -> None:
    """Open a page from the sidebar, as a person does once the app has drawn, and wait until
    its heading shows and its run has ended."""
    page.wait_for_function(APP_READY)
    page.get_by_test_id("stSidebar").get_by_role("link", name=title, exact=True).click()
    heading = "Evolution Studio" if title == "Home" else title
    page.get_by_role("heading", name=heading, exact=True).first.wait_for()
    settled(page)


def settled(page) -> None:
    """No script is running and the browser has painted twice since (charts, fragments)."""
    page.wait_for_function(SCRIPT_IDLE)
    page.evaluate("() => new Promise(done => requestAnimationFrame("
                  "() => requestAnimationFrame(done)))")


def full_page_shot(page, path: Path) -> None:
    """A screenshot of the whole page (Streamlit scrolls inside its main area, so the viewport
    is stretched to the content's height for the shot)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    settled(page)
    size = page.viewport_size
    height = page.evaluate(
        "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
    settled(page)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


def failure_shot(page, path: Path) -> None:
    """What the page showed when a test failed, taken without ever hiding that failure: the
    page may be mid-navigation or an error page with no Streamlit main area, so any error here
    falls back to a plain screenshot, and that failing too is only reported."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        body = page.evaluate("() => document.body ? document.body.innerText : ''")
        print(f"page at failure: {page.url}\n{str(body)[:2000]}")
        print("browser log:\n" + "\n".join(getattr(page, "studio_log", [])[-40:]))
    except Exception as error:  # noqa: BLE001
        print(f"page text at failure unreadable: {error}")
    try:
        full_page_shot(page, path)
    except Exception as error:  # noqa: BLE001 - the test's own failure is the one to raise
        print(f"full-page failure shot failed ({error}); taking the viewport")
        try:
            page.screenshot(path=str(path))
        except Exception as again:  # noqa: BLE001
            print(f"failure shot failed: {again}")


def new_run(store, before: set[str]) -> str | None:
    """The id of a run created since ``before`` (the ids there were), if one was."""
    return next((run.id for run in store.list_runs() if run.id not in before), None)


def clicked_into_a_run(page, store, button: str, label: str) -> str:
    """Click ``button`` and return the id of the run it started once the page shows that id.

    Waits on the store and then on the page, never on the "<label> … started" message alone:
    that message shows for a few seconds only (until the next full rerun after them), so on a
    loaded machine the run could start, finish and redraw the page before the browser's wait
    looked, and the test timed out on a run that had started. The store says at once which
    run the click created; the page then shows its id (in that message, or in the run's
    header that stays)."""
    before = {run.id for run in store.list_runs()}
    page.get_by_role("button", name=button).click()
    run_id = wait_until(lambda: new_run(store, before), timeout=60,
                        message=f"the {label} the {button!r} click starts")
    page.get_by_text(re.compile(rf"\b{run_id}\b")).first.wait_for()
    return run_id
