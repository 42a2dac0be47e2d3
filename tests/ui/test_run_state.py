"""State belongs to its run and page (issue 21, defects 1 and 2), under AppTest: the trials
table's selection and the trial shown in full are the run's own, and a message about an action
is shown on the page and the run where it happened, not after the person moved on."""

from __future__ import annotations

import re

import pytest

from components import session
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import button, finished_run

DETAIL = re.compile(r"Trial \d+ \(id (\d+)\) · iteration")


def details(at) -> list[int]:
    """The ids of the trials shown in full on the page."""
    return [int(m.group(1)) for s in texts(at.markdown) if (m := DETAIL.search(s))]


def select_row(at, run_id: str, row: int) -> int:
    """Tick ``row`` of the run's trials table, as a click does; the trial id on that row."""
    table = at.dataframe(key=f"run.table.{run_id}").value
    at.session_state[f"run.table.{run_id}"] = {"selection": {"rows": [row], "columns": [],
                                                             "cells": []}}
    at.run()
    assert_ok(at)
    return int(table["id"].iloc[row])


@pytest.mark.slow
def test_switching_runs_clears_the_trial_detail_and_the_selection(app, studio_db):
    first = finished_run(studio_db)
    second = finished_run(studio_db, seed=3)
    at = app("run", run_id=first.id)
    picked = select_row(at, first.id, 2)
    assert details(at) == [picked]

    at.selectbox(key="app.run_picker").set_value(second.id).run()
    assert_ok(at)
    assert at.session_state["app.run_id"] == second.id
    assert details(at) == []  # not the other run's trial
    assert at.session_state[f"run.selected.{second.id}"] is None
    second_rows = at.session_state[f"run.table.{second.id}"]
    assert not second_rows or second_rows["selection"]["rows"] == []  # no row 2 by position
    assert f"run.table.{first.id}" not in at.session_state
    assert f"run.selected.{first.id}" not in at.session_state

    # coming back to the first run starts afresh too
    at.selectbox(key="app.run_picker").set_value(first.id).run()
    assert_ok(at)
    assert details(at) == [] and at.session_state[f"run.selected.{first.id}"] is None


@pytest.mark.slow
def test_a_selection_in_one_run_stays_while_the_run_stays(app, studio_db):
    run = finished_run(studio_db)
    at = app("run", run_id=run.id)
    picked = select_row(at, run.id, 1)
    at.switch_page("../pages/compare.py").run()
    at.switch_page("../pages/run.py").run()
    assert_ok(at)
    at.run()
    assert details(at) == [picked]


@pytest.mark.slow
def test_a_message_shows_where_it_happened_and_not_after_the_person_moved_on(
        app, studio_db, monkeypatch):
    monkeypatch.setattr(session, "FLASH_SECONDS", 600.0)  # only moving on may retire it here
    run = finished_run(studio_db)
    at = app(run_id=run.id)
    button(at, "Load the scripted demo project and open Run").click().run()
    assert_ok(at)
    assert texts(at.title) == ["Run"]
    assert any("Loaded the example" in s for s in texts(at.success))  # where it was meant

    at.switch_page("../pages/agreement.py").run()
    assert_ok(at)
    assert not any("Loaded the example" in s for s in texts(at.success))
    at.switch_page("../pages/run.py").run()
    assert_ok(at)
    assert not any("Loaded the example" in s for s in texts(at.success))  # said once


@pytest.mark.slow
def test_a_message_about_one_run_is_not_shown_on_another(app, studio_db, monkeypatch):
    monkeypatch.setattr(session, "FLASH_SECONDS", 600.0)
    first = finished_run(studio_db)
    second = finished_run(studio_db, seed=3)
    at = app(run_id=first.id)
    button(at, "Load the scripted demo project and open Run").click().run()
    assert any("Loaded the example" in s for s in texts(at.success))
    at.selectbox(key="app.run_picker").set_value(second.id).run()
    assert_ok(at)
    assert not any("Loaded the example" in s for s in texts(at.success))
