"""The Projects page's "Your ADK agents" panel under AppTest: shown only with ``--agents``, and
a pick starts a trusted run of the folder's agent on its eval set."""

from __future__ import annotations

import shutil

import pytest
import streamlit as st

from studio.engine.hosting.build import create_run
from studio.engine.hosting.worker import get_manager
from studio.projects.files import dump_project, parse_project
from studio.projects.served_agents import AGENTS_DIR_ENV, served_agent_graph
from tests.projects.test_served_agents import agents_root, write_graph_folder  # noqa: F401
from tests.projects.test_session_import import APP, database, scripted  # noqa: F401
from tests.ui.conftest import assert_ok, texts


def test_no_panel_without_agents(app, monkeypatch):
    monkeypatch.delenv(AGENTS_DIR_ENV, raising=False)
    at = app("projects")
    assert "Your ADK agents" not in texts(at.subheader)


def test_a_served_agent_starts_a_run_from_the_projects_page(app, studio_db, monkeypatch,
                                                            agents_root):  # noqa: F811
    monkeypatch.setenv(AGENTS_DIR_ENV, str(agents_root))
    at = app("projects")
    assert "Your ADK agents" in texts(at.subheader)
    assert at.selectbox(key="projects.agents.agent").options == ["served_haiku"]
    assert at.selectbox(key="projects.agents.evalset").options == ["haiku.evalset.json"]
    at.text_input(key="projects.agents.model").set_value("scripted/demo")
    at.number_input(key="projects.agents.iterations").set_value(1)
    next(b for b in at.button if b.label == "Start a run").click().run()
    assert_ok(at)
    [run] = studio_db.list_runs()
    assert run.name == "served_haiku"
    assert run.spec.agent_folder == str((agents_root / "served_haiku").resolve())
    get_manager(studio_db).handle(run.id).wait(timeout=60)
    assert studio_db.get_run(run.id).status.value == "completed"


def test_a_served_graph_workflow_shows_its_graph_on_the_projects_page(app, monkeypatch,
                                                                      agents_root):  # noqa: F811
    write_graph_folder(agents_root)
    monkeypatch.setenv(AGENTS_DIR_ENV, str(agents_root))
    at = app("projects")
    assert at.selectbox(key="projects.agents.agent").options == ["served_graph", "served_haiku"]
    assert at.selectbox(key="projects.agents.agent").value == "served_graph"
    assert_ok(at)
    assert any(e.label == "Graph workflow `decide`" for e in at.expander)
    [chart] = at.get("graphviz_chart")
    spec = chart.proto.spec
    assert all(f'"{node}"' in spec for node in ("plan", "pros", "cons", "join", "final"))
    at.selectbox(key="projects.agents.agent").set_value("served_haiku").run()
    assert_ok(at)
    assert not any(e.label.startswith("Graph workflow") for e in at.expander)
    assert not at.get("graphviz_chart")


GRAPH_PROJECT = """
name: decide-graph
agent: {ref: "served_graph.agent:root_agent"}
critic: {type: agent, schema: advanced, model: scripted/demo}
reflection: {model: scripted/demo}
dataset: {train: {path: served_graph/haiku.evalset.json}}
"""


@pytest.mark.slow
def test_a_stored_graph_project_shows_its_latest_runs_graph_without_importing_it(
        app, studio_db, agents_root):  # noqa: F811
    write_graph_folder(agents_root)
    project = studio_db.save_project("decide-graph", dump_project(parse_project(GRAPH_PROJECT)))
    at = app("projects", project_id=project.id)
    assert "loaded from Python" in " ".join(texts(at.info))
    assert not any(e.label.startswith("Graph workflow") for e in at.expander)  # never run
    # a trusted side (studio run, a served folder) ran it and stored the graph's shape
    spec = served_agent_graph("served_graph", agents_root).model_copy(
        update={"project": "decide-graph"})
    create_run(studio_db, spec=spec, trainset=[{"topic": "x"}], name="decide-graph")
    st.cache_data.clear()  # the runs list is read at most every 2 s; a page open that late
    at = app("projects", project_id=project.id)
    assert_ok(at)
    assert any(e.label == "Graph workflow `decide`" for e in at.expander)
    [chart] = at.get("graphviz_chart")
    assert '"pros"' in chart.proto.spec and '"join"' in chart.proto.spec


@pytest.mark.slow
def test_recorded_sessions_become_an_eval_set_from_the_projects_page(
        app, monkeypatch, agents_root, database):  # noqa: F811
    """The database ``adk web`` keeps in the agent's .adk folder is offered by name; the import
    writes an eval set into the agent's folder, which the start form lists at once."""
    folder = agents_root / "served_haiku"
    (folder / ".adk").mkdir()
    shutil.copy(database, folder / ".adk" / "session.db")
    monkeypatch.setenv(AGENTS_DIR_ENV, str(agents_root))
    at = app("projects")
    assert at.selectbox(key="projects.sessions.source").options == [
        "served_haiku/.adk/session.db"]
    at.text_input(key="projects.sessions.app").set_value(APP)
    at.text_input(key="projects.sessions.name").set_value("prod.evalset.json")
    next(b for b in at.button if b.label == "Import").click().run()
    assert_ok(at)
    assert any("3 examples from 3 sessions written to served_haiku/prod.evalset.json" in s
               for s in texts(at.success))
    assert (folder / "prod.evalset.json").is_file()
    at.run()
    assert at.selectbox(key="projects.agents.evalset").options == ["haiku.evalset.json",
                                                                   "prod.evalset.json"]
