"""Shared fixtures: every test gets its own SQLite store and never touches ~/.evolution-studio."""

from __future__ import annotations

import os
import tempfile

# Before anything imports the studio: keep the default database out of the home folder.
os.environ.setdefault("STUDIO_HOME", tempfile.mkdtemp(prefix="studio-home-"))

import pytest  # noqa: E402

import studio  # noqa: E402,F401
from tests.helpers import ScriptedModels  # noqa: E402


@pytest.fixture
def store(tmp_path):
    from studio.store import open_store

    db = open_store(f"sqlite:///{tmp_path}/studio.db", cached=False)
    yield db
    db.close()


@pytest.fixture
def script():
    """Scripted models for one test: ``script(reply)`` or ``script("name", fn, **kwargs)``."""
    models = ScriptedModels()
    yield models
    models.remove_all()


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
