"""Shared fixtures: every test gets its own SQLite store and never touches ~/.evolution-studio."""

from __future__ import annotations

import os
import re
import sys
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


@pytest.fixture(scope="module", autouse=True)
def chromium_closed_after_each_module():
    """A module's browser tests share one Chromium (tests/ui/browser.py); it is closed when
    the module ends. Playwright's sync API keeps an event loop running in this thread while it
    lives, so a later module's ``asyncio.run`` would fail "cannot be called from a running
    event loop" in the same process (a serial run, or an xdist worker)."""
    yield
    browser = sys.modules.get("tests.ui.browser")
    if browser is not None:
        browser.close_shared_chromium()


SLOW_MARKERS = ("local_model", "browser", "slow")
"""The tests the default ``pytest`` skips: the embedded SmolLM2 model, Chromium, and the
tests over a second on an idle machine (real processes, a whole run, a page drawn by
Streamlit's AppTest, the type checker). ``pytest --all`` runs them; CI always does."""
SLOW_REASON = "slow, marked {marker}: pytest --all runs it"


def pytest_configure(config):
    """Under pytest-xdist, each worker gets a PostgreSQL database of its own: tests empty their
    database by dropping every table, so two workers on one database would destroy each other's
    data. ``STUDIO_TEST_PG_URL`` is rewritten before collection (test modules read it at import,
    and the processes tests start inherit it), and the database is created if missing.

    The embedded model gets the worker's share of the cores, as a run's worker processes do
    (:func:`studio.engine.scoring.processes.worker_environment`): with three workers on two
    cores, llama.cpp's threads spin on each other's cores (one pipeline test under two busy
    cores: 228 s with 2 threads, 65 s with 1)."""
    from studio.runtime.providers.local import THREADS_VARIABLE, default_threads
    from tests.helpers import create_postgres_database, worker_postgres_url

    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist's --dist loadfile
        config.option.loadscopereorder = False  # keep heaviest_files_first's order
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if worker and not os.environ.get(THREADS_VARIABLE):
        os.environ[THREADS_VARIABLE] = str(default_threads(sharing=workers))
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
    heaviest_files_first(items)
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


BUSIEST = ("browser", "local_model")
"""Tiers whose tests keep the cores busy (Chromium and a Streamlit server; the embedded model)
rather than wait on processes: no two of their files should run at once if it can be helped."""


def heaviest_files_first(items: list) -> None:
    """Run the slow tiers' files first, one busy file to two waiting ones, then the fast tier.

    Under ``-n 3 --dist loadfile`` each worker takes the next file when it is free, and
    pytest-xdist put the files with the most tests first (its reorder, turned off in
    :func:`pytest_configure`): the browser files (half a minute each, one or two tests) and the
    type check (one to two minutes) came last, and one worker ran them for minutes after the
    others were done. With the slow files first, the fast tier's second-long files fill the
    end; with the browser and embedded-model files spread one in three, three Chromiums never
    fight over two cores at the start (30 s waits ran out when they did). A file keeps its
    tests together and in their order."""
    files = list(dict.fromkeys(item.path for item in items))
    markers: dict[Path, set[str]] = {path: set() for path in files}
    for item in items:
        markers[item.path].update(m for m in SLOW_MARKERS if item.get_closest_marker(m))
    busy = [path for path in files if markers[path] & set(BUSIEST)]
    waiting = [path for path in files if markers[path] and path not in busy]
    order: list[Path] = []
    while busy or waiting:
        order += busy[:1] + waiting[:2]
        busy, waiting = busy[1:], waiting[2:]
    order += [path for path in files if not markers[path]]
    position = {path: i for i, path in enumerate(order)}
    items.sort(key=lambda item: position[item.path])


FAST_TIER_SECONDS = 1.0
"""What a test of the fast tier (no marker of :data:`SLOW_MARKERS`) may take on an idle machine:
setup, call and teardown together. Over it, a test belongs in a slow tier."""
FAST_TIER_LIMIT_ENV = "STUDIO_FAST_TIER_LIMIT"
"""Where the limit is enforced: CI sets it to a number of seconds (the idle limit times a
margin for the machine's load and the parallel workers), and a fast-tier test over it fails the
session, named in the summary. Unset (a person's run on a busy laptop), the tests over
:data:`FAST_TIER_SECONDS` are only listed: a check that fails with the machine's load would be
a flaky test of its own."""
_DURATIONS: dict[str, list] = {}
"""nodeid -> [tier, seconds]: setup, call and teardown summed (under pytest-xdist, the
controller's copy, fed by every worker's reports)."""


def tier(keywords) -> str:
    """A test's tier from its markers: the first of :data:`SLOW_MARKERS` it has, else fast."""
    return next((marker for marker in SLOW_MARKERS if marker in keywords), "fast")


PRELOADED = ("google.adk.agents", "google.adk.runners", "google.adk.models.lite_llm", "litellm")
"""Imported once collection is done (in each pytest-xdist worker too): ADK and LiteLLM take
seconds to import, and the first test to touch them would otherwise be charged for it, over
the fast tier's limit by the luck of the order."""


def pytest_collection_finish(session):
    if session.items and not session.config.option.collectonly:
        import importlib

        for module in PRELOADED:
            importlib.import_module(module)


_SKIPPED: set[str] = set()


def pytest_runtest_logreport(report):
    if report.skipped and report.when in ("setup", "call"):
        _SKIPPED.add(report.nodeid)  # a skipped test took no time of its tier
        _DURATIONS.pop(report.nodeid, None)
    if report.nodeid in _SKIPPED:
        return
    entry = _DURATIONS.setdefault(report.nodeid, [tier(report.keywords), 0.0])
    entry[1] += report.duration


def fast_tier_over(limit: float) -> list[tuple[str, float]]:
    """Fast-tier tests over ``limit`` seconds, slowest first."""
    return sorted(((nodeid, seconds) for nodeid, (name, seconds) in _DURATIONS.items()
                   if name == "fast" and seconds > limit), key=lambda item: -item[1])


def fast_tier_limit() -> float | None:
    """The enforced limit (``STUDIO_FAST_TIER_LIMIT``), or None where it is not enforced."""
    text = os.environ.get(FAST_TIER_LIMIT_ENV, "").strip()
    return float(text) if text else None


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session, exitstatus):
    """Under ``STUDIO_FAST_TIER_LIMIT``: a fast-tier test over the limit fails the session."""
    limit = fast_tier_limit()
    if limit is not None and fast_tier_over(limit) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return (yield)


def write_tier_times(terminalreporter) -> None:
    """Each tier's test time (setup, call and teardown summed over its tests; with workers
    running in parallel the sum exceeds the wall time), and the fast tier's tests over its
    limit."""
    totals: dict[str, list[float]] = {}
    for name, seconds in _DURATIONS.values():
        totals.setdefault(name, [0, 0.0])
        totals[name][0] += 1
        totals[name][1] += seconds
    if not totals:
        return
    terminalreporter.write_sep("-", "time per tier (tests' own time, summed)")
    for name in ("fast", *SLOW_MARKERS):
        if name in totals:
            count, seconds = totals[name]
            terminalreporter.write_line(f"{name:>12}: {count:5d} tests {seconds:9.1f} s")
    limit = fast_tier_limit()
    over = fast_tier_over(limit if limit is not None else FAST_TIER_SECONDS)
    if over:
        enforced = (f"over the limit of {limit:g} s ({FAST_TIER_LIMIT_ENV}): mark them slow "
                    "or move them to tests/processes/" if limit is not None else
                    f"over {FAST_TIER_SECONDS:g} s (enforced where {FAST_TIER_LIMIT_ENV} is set,"
                    " as in CI)")
        terminalreporter.write_line(f"{len(over)} fast-tier test(s) {enforced}:")
        for nodeid, seconds in over[:30]:
            terminalreporter.write_line(f"  {seconds:6.2f} s  {nodeid}")


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after the short summary
def pytest_terminal_summary(terminalreporter):
    """After pytest's short summary: each tier's time, the fast tier's slow tests, how many
    tests were skipped as slow, and how to run them."""
    result = yield
    write_tier_times(terminalreporter)
    prefix = "Skipped: " + SLOW_REASON.split("{")[0]
    count = sum(1 for report in terminalreporter.stats.get("skipped", [])
                if isinstance(report.longrepr, tuple) and report.longrepr[2].startswith(prefix))
    if count:
        terminalreporter.write_line(f"{count} tests skipped as slow ({', '.join(SLOW_MARKERS)}):"
                                    " pytest --all runs them (CI does)")
    return result
