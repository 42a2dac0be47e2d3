"""End to end in headless Chromium: ``studio ui --agents DIR`` offers the ADK agent folder under
DIR on the Projects page; picking it with its eval set starts a run (the scripted model) that the
Run page shows, and the run completes with the folder as its agent.

Run with ``pytest -m browser tests/browser/test_browser_adk_agents.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from studio.store import open_store
from tests.browser.test_browser import wait_idle
from tests.helpers import wait_until
from tests.projects.adk_samples import write_sample_folder
from tests.projects.test_adk_models import digest
from tests.projects.test_adk_projects import write_agent_folder, write_eval_set
from tests.projects.test_served_agents import write_graph_folder
from tests.ui.browser import (
    ARTIFACTS,
    chromium_page,
    failure_shot,
    full_page_shot,
    nav,
    studio_ui_agents,
)

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("STUDIO_SHOTS_DIR") or ARTIFACTS)


@pytest.fixture
def served(tmp_path, monkeypatch):
    """``studio ui --agents DIR`` on a free port, DIR holding one agent folder and its eval
    set."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "agents"
    folder = write_agent_folder(root, "browser_haiku", "BROWSER_HAIKU_TASK")
    write_eval_set(folder / "haiku.evalset.json")
    db = f"sqlite:///{tmp_path}/studio.db"
    with studio_ui_agents(db, root) as (url, _):
        yield url, db, folder


def test_studio_ui_agents_offers_the_folder_and_runs_it(served):
    url, db, folder = served
    with chromium_page() as page:
        try:
            page.goto(url)
            page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
            nav(page, "Projects")
            page.get_by_role("heading", name="Your ADK agents").wait_for()
            page.get_by_role("textbox", name="Reflection model").wait_for()
            page.get_by_role("textbox", name="Reflection model").fill("scripted/demo")
            page.get_by_role("spinbutton", name="Iterations").fill("1")
            full_page_shot(page, SHOTS / "adk_agents_projects.png")
            page.get_by_role("button", name="Start a run").click()
            page.get_by_role("heading", name="Run", exact=True).first.wait_for()
            page.get_by_text("browser_haiku").first.wait_for()
            wait_until(lambda: _status(db) == "completed", 90, step=0.5,
                       message="the served agent's run to complete")
            page.get_by_text("completed", exact=True).first.wait_for()
            page.get_by_text("1 of 1 iterations done", exact=False).first.wait_for()
            wait_idle(page)
            full_page_shot(page, SHOTS / "adk_agents_run.png")
        except Exception:
            failure_shot(page, SHOTS / "adk_agents_failure.png")
            raise
    store = open_store(db, cached=False)
    [run] = store.list_runs()
    store.close()
    assert run.spec.agent_folder == str(folder.resolve())


def _status(db: str) -> str | None:
    store = open_store(db, cached=False)
    try:
        runs = store.list_runs()
        return runs[0].status.value if runs else None
    finally:
        store.close()


def test_a_served_graph_workflow_is_drawn_on_the_projects_page(tmp_path, monkeypatch):
    """An agent folder whose root_agent is a graph Workflow: its picture (nodes, edges) under
    the agent picker, drawn by Streamlit's Graphviz renderer from the DOT the page makes."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "agents"
    write_graph_folder(root, "browser_graph")
    db = f"sqlite:///{tmp_path}/studio.db"
    with studio_ui_agents(db, root) as (url, _), chromium_page() as page:
        try:
            page.goto(url)
            page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
            nav(page, "Projects")
            page.get_by_role("heading", name="Your ADK agents").wait_for()
            page.get_by_text("Graph workflow decide").click()
            svg = page.locator("svg").filter(has_text="pros")
            svg.first.wait_for()
            full_page_shot(page, SHOTS / "adk_agents_graph.png")
        except Exception:
            failure_shot(page, SHOTS / "adk_agents_graph_failure.png")
            raise
        for name in ("plan", "pros", "cons", "join", "final"):
            assert svg.first.get_by_text(name, exact=True).count() >= 1, name


def test_the_agents_form_runs_a_gemini_folder_on_another_model(tmp_path, monkeypatch):
    """The *Model* field of the ``--agents`` form: a folder written for Gemini (ADK samples'
    shape), no key on the server, runs on ``scripted/demo`` with no edit; the Run page says so."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "agents"
    folder = write_sample_folder(root, "browser_facts")
    before = digest(folder)
    db = f"sqlite:///{tmp_path}/studio.db"
    with studio_ui_agents(db, root, GOOGLE_API_KEY="", GEMINI_API_KEY="") as (url, _), \
            chromium_page() as page:
        try:
            page.goto(url)
            page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
            nav(page, "Projects")
            page.get_by_role("heading", name="Your ADK agents").wait_for()
            page.get_by_role("textbox", name="Model", exact=True).fill("scripted/demo")
            page.get_by_role("spinbutton", name="Iterations").fill("1")
            full_page_shot(page, SHOTS / "adk_agents_model_form.png")
            page.get_by_role("button", name="Start a run").click()
            # the start imports the folder and ADK's evaluators: give a loaded machine time
            page.get_by_role("heading", name="Run", exact=True).first.wait_for(
                timeout=120_000)
            page.get_by_text("Running on scripted/demo (the folder says "
                             "gemini-2.5-flash).").first.wait_for()
            wait_until(lambda: _status(db) == "completed", 120, step=0.5,
                       message="the served agent's run on scripted/demo to complete")
            page.get_by_text("1 of 1 iterations done", exact=False).first.wait_for()
            wait_idle(page)
            full_page_shot(page, SHOTS / "adk_agents_model_run.png")
        except Exception:
            failure_shot(page, SHOTS / "adk_agents_model_failure.png")
            raise
    store = open_store(db, cached=False)
    [run] = store.list_runs()
    store.close()
    assert run.spec.models.every == "scripted/demo"
    assert run.spec.code_models == dict.fromkeys(("fact_checker", "summarizer", "researcher"),
                                                 "gemini-2.5-flash")
    assert digest(folder) == before  # zero edits


def test_served_folders_that_cannot_run_say_why_on_the_form(tmp_path, monkeypatch):
    """Two sample-shaped folders: one whose agent.py calls sys.exit(3) as it is imported, one
    on a Gemini model with no key on the server. Each is said on the Projects page's form in
    one line (never Streamlit's exception box), the server lives on, and no run is stored."""
    from tests.browser.test_browser_guard_fork import choose
    from tests.projects.sample_agents import break_sample, write_sample_agent
    from tests.projects.test_folder_failures import GOOGLE_SETTINGS

    for name in GOOGLE_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "agents"
    exiting = write_sample_agent(root, "a_exiting_agent")
    line, _ = break_sample(exiting, "sys.exit(3)")
    write_sample_agent(root, "b_keyless_agent")
    db = f"sqlite:///{tmp_path}/studio.db"
    with studio_ui_agents(db, root) as (url, server):
        with chromium_page() as page:
            try:
                page.goto(url)
                page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
                nav(page, "Projects")
                page.get_by_role("heading", name="Your ADK agents").wait_for()
                said = f"a_exiting_agent/agent.py, line {line}: it called sys.exit(3)"
                page.get_by_text(said).first.wait_for()  # when picked
                page.get_by_role("textbox", name="Reflection model").fill("scripted/demo")
                page.get_by_role("button", name="Start a run").click()
                page.get_by_role("alert").filter(has_text=said).wait_for()
                choose(page, "Agent", "b_keyless")
                wait_idle(page)
                page.get_by_role("button", name="Start a run").click()
                page.get_by_role("alert").filter(has_text="GOOGLE_API_KEY").wait_for()
                full_page_shot(page, SHOTS / "adk_agents_cannot_run.png")
                assert page.locator("[data-testid='stException']").count() == 0
            except Exception:
                failure_shot(page, SHOTS / "adk_agents_cannot_run_failure.png")
                raise
        assert server.process.poll() is None, server.text  # sys.exit(3) ended nothing
    assert _status(db) is None  # no run stored
