"""The browser tier: tests that drive Debian's Chromium against a real studio server (seconds
each). Everything in this folder is marked ``browser`` by tests/conftest.py, so a plain
``pytest`` skips it and ``pytest --all`` or ``-m browser`` (CI) runs it; the harness is
tests/ui/browser.py."""

import pytest

from tests.ui.browser import close_shared_chromium


@pytest.fixture(scope="session", autouse=True)
def one_chromium_per_session():
    """The browser tests share one Chromium per process (a fresh context per test), closed at
    the end of the session."""
    yield
    close_shared_chromium()
