"""Shared fixtures: every test gets its own SQLite store and never touches ~/.evolution-studio."""

from __future__ import annotations

import os
import tempfile

# Before anything imports the studio: keep the default database out of the home folder.
os.environ.setdefault("STUDIO_HOME", tempfile.mkdtemp(prefix="studio-home-"))

import pytest  # noqa: E402

import studio  # noqa: E402,F401
from studio.llm.scripted import register_script, unregister_script  # noqa: E402


@pytest.fixture
def store(tmp_path):
    from studio.store import open_store

    db = open_store(f"sqlite:///{tmp_path}/studio.db", cached=False)
    yield db
    db.close()


@pytest.fixture
def script():
    """Register scripted models for one test: ``model = script("name", fn)``."""
    names: list[str] = []

    def register(name, fn, **kwargs):
        names.append(name)
        return register_script(name, fn, **kwargs)

    yield register
    for name in names:
        unregister_script(name)


def pytest_collection_modifyitems(config, items):
    """Browser tests need Debian's chromium; CI (STUDIO_REQUIRE_BROWSER=1) must never skip them."""
    from pathlib import Path

    if Path("/usr/bin/chromium").exists() or os.environ.get("STUDIO_REQUIRE_BROWSER") == "1":
        return
    skip = pytest.mark.skip(reason="Debian's chromium is not installed "
                                   "(apt-get install chromium chromium-driver)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)
