"""Shared fixtures: every test gets its own SQLite store and never touches ~/.evolution-studio."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

# Before anything imports the studio: keep the default database out of the home folder. A
# pytest-xdist worker inherits its controller's environment, so it takes a home of its own.
if os.environ.get("PYTEST_XDIST_WORKER") or "STUDIO_HOME" not in os.environ:
    os.environ["STUDIO_HOME"] = tempfile.mkdtemp(prefix="studio-home-")

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


SLOW_MARKERS = ("local_model", "browser", "slow")
"""The tests the default ``pytest`` skips: the embedded SmolLM2 model, Chromium, and real
processes that take seconds each. ``pytest --all`` runs them; CI always does."""
SLOW_REASON = "slow, marked {marker}: pytest --all runs it"


def pytest_configure(config):
    """Under pytest-xdist, each worker gets a PostgreSQL database of its own: tests empty their
    database by dropping every table, so two workers on one database would destroy each other's
    data. ``STUDIO_TEST_PG_URL`` is rewritten before collection (test modules read it at import,
    and the processes tests start inherit it), and the database is created if missing."""
    from tests.helpers import create_postgres_database, worker_postgres_url

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    url = os.environ.get("STUDIO_TEST_PG_URL")
    if worker and url:
        os.environ["STUDIO_TEST_PG_URL"] = worker_postgres_url(url, worker)
        create_postgres_database(os.environ["STUDIO_TEST_PG_URL"])


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", dest="run_all",
                     help="also run the slow tests a plain pytest skips (markers "
                          f"{', '.join(SLOW_MARKERS)}), as CI does; a -m expression that "
                          "names one of these markers runs that group too")


TESTS = Path(__file__).resolve().parent
TIER_FOLDERS = {"browser": "browser", "processes": "slow"}
"""The tiers the layout shows: every test under tests/browser/ drives Chromium, every test
under tests/processes/ starts, kills or restarts real processes. A test there is marked by its
folder, so it can never land in the fast tier by a forgotten marker."""


def pytest_itemcollected(item):
    """Mark a test by its tier folder (before ``-m`` selects and the slow tiers are skipped)."""
    path = Path(item.path).resolve()
    parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
    marker = TIER_FOLDERS.get(parts[0]) if len(parts) > 1 else None
    if marker is not None and item.get_closest_marker(marker) is None:
        item.add_marker(getattr(pytest.mark, marker))


def markers_skipped_as_slow(config) -> set[str]:
    """The slow markers this run skips: all, unless ``--all``, or a ``-m`` that names the marker
    (``-m browser`` asks for those tests; ``-m "not browser"`` deselects them anyway). Under
    ``STUDIO_REQUIRE_BROWSER=1`` (CI) the browser tests are never skipped."""
    if config.getoption("run_all"):
        return set()
    expression = config.option.markexpr or ""
    required = {"browser"} if os.environ.get("STUDIO_REQUIRE_BROWSER") == "1" else set()
    return {m for m in SLOW_MARKERS if not re.search(rf"\b{m}\b", expression)} - required


def pytest_collection_modifyitems(config, items):
    """Skip the slow groups unless asked; browser tests also need Debian's chromium, and CI
    (STUDIO_REQUIRE_BROWSER=1) must never skip them."""
    skipped = markers_skipped_as_slow(config)
    for item in items:
        marker = next((m for m in SLOW_MARKERS
                       if m in skipped and item.get_closest_marker(m) is not None), None)
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=SLOW_REASON.format(marker=marker)))
    if Path("/usr/bin/chromium").exists() or os.environ.get("STUDIO_REQUIRE_BROWSER") == "1":
        return
    skip = pytest.mark.skip(reason="Debian's chromium is not installed "
                                   "(apt-get install chromium chromium-driver)")
    for item in items:
        if item.get_closest_marker("browser") is not None and "browser" not in skipped:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after the short summary
def pytest_terminal_summary(terminalreporter):
    """After pytest's short summary: how many tests were skipped as slow, and how to run them."""
    result = yield
    prefix = "Skipped: " + SLOW_REASON.split("{")[0]
    count = sum(1 for report in terminalreporter.stats.get("skipped", [])
                if isinstance(report.longrepr, tuple) and report.longrepr[2].startswith(prefix))
    if count:
        terminalreporter.write_line(f"{count} tests skipped as slow ({', '.join(SLOW_MARKERS)}):"
                                    " pytest --all runs them (CI does)")
    return result
