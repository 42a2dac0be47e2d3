"""Fixtures for the studio's page tests: a fresh SQLite store per test (``STUDIO_DB_URL``), the
app under ``AppTest``, and runs that are always stopped at the end."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "studio" / "app.py"


@pytest.fixture
def studio_db(tmp_path, monkeypatch):
    """The store the app under test opens; every run started in it is stopped afterwards."""
    import streamlit as st

    from studio.engine.hosting.worker import get_manager
    from studio.store import open_store

    url = f"sqlite:///{tmp_path}/studio.db"
    monkeypatch.setenv("STUDIO_DB_URL", url)
    st.cache_data.clear()
    st.cache_resource.clear()
    store = open_store(url)
    yield store
    manager = get_manager(store)
    for run_id in manager.running():
        manager.stop(run_id)
    for run in store.list_runs():
        handle = manager.handle(run.id)
        if handle is not None:
            with contextlib.suppress(Exception):  # a run's failure is its own test's business
                handle.wait(timeout=30)
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def app(studio_db):
    """``app(page=None, run_id=None)``: the studio under AppTest, run once, on ``page``."""
    from streamlit.testing.v1 import AppTest

    def make(page: str | None = None, *, run_id: str | None = None, project_id=None):
        at = AppTest.from_file(str(APP), default_timeout=60)
        if run_id is not None:
            at.session_state["app.run_id"] = run_id
        if project_id is not None:
            at.session_state["app.project_id"] = project_id
        at.run()
        if page is not None:
            at.switch_page(f"../pages/{page}.py").run()
        assert_ok(at)
        return at

    return make


def assert_ok(at) -> None:
    problems = [f"{e.message}\n{''.join(e.stack_trace or [])}" for e in at.exception]
    assert not problems, problems[0]


def open_tab(at, project_id: int, label: str) -> None:
    """Open one of the project editor's tabs (only the open tab is drawn), as a click would."""
    from components.project_editor import tab_key

    at.session_state[tab_key(project_id)] = label
    at.run()
    assert_ok(at)


def texts(elements) -> list[str]:
    """Element texts with Markdown backslash escapes removed (as a person reads them)."""
    return [re.sub(r"\\(.)", r"\1", str(e.value)) for e in elements]
