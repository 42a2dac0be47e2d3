"""``studio ui --agents``: a served folder that fails to import, or whose models lack their
keys, is said on the Projects page's form in one line (never Streamlit's exception box), and no
run is stored."""

from __future__ import annotations

import sys

import pytest

from studio.projects.served_agents import AGENTS_DIR_ENV
from tests.projects.sample_agents import break_sample, forget_modules, write_sample_agent
from tests.projects.test_folder_failures import GOOGLE_SETTINGS
from tests.ui.conftest import assert_ok, texts


@pytest.fixture
def served(tmp_path, monkeypatch, request):
    """``served(broken=None)``: the one sample folder ``--agents`` serves (its package name
    unique per test), on a machine without Google keys."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in GOOGLE_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "agents"
    monkeypatch.setenv(AGENTS_DIR_ENV, str(root))
    name = f"served_{request.node.name.split('[')[0][-24:]}"
    request.addfinalizer(lambda: forget_modules(name))

    def make(broken: str | None = None):
        folder = write_sample_agent(root, name)
        return (folder, *break_sample(folder, broken)) if broken else (folder, None, None)

    return make


def start(at) -> None:
    at.text_input(key="projects.agents.model").set_value("scripted/demo")
    next(b for b in at.button if b.label == "Start a run").click().run()


@pytest.mark.parametrize("broken", ["syntax error", "sys.exit(3)"])
def test_a_served_folder_that_fails_to_import_is_one_line_on_the_form(
        app, studio_db, served, broken):
    folder, line, cause = served(broken)
    at = app("projects")  # picking it imports it (a graph's picture)
    assert_ok(at)
    picked = " ".join(texts(at.caption))
    assert f"{folder.name}/agent.py, line {line}: " in picked and cause in picked
    start(at)
    assert_ok(at)
    [error] = texts(at.error)
    assert f"could not be imported: {folder.name}/agent.py, line {line}: " in error
    assert "\n" not in error and "Traceback" not in error
    assert studio_db.list_runs() == []


def test_a_served_gemini_folder_without_a_key_is_refused_on_the_form(app, studio_db, served):
    served()
    at = app("projects")
    start(at)
    assert_ok(at)
    [error] = texts(at.error)
    assert "haiku_writer.model: model 'gemini-2.5-flash'" in error
    assert "needs GOOGLE_API_KEY (or GEMINI_API_KEY)" in error
    assert studio_db.list_runs() == []
