"""The Compare page's output matrix under AppTest: seed and best shown on opening, both filters,
a bad regex answered with a message, a cell opened in full (issue 21)."""

from __future__ import annotations

import pytest

from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import finished_run


def matrix(at):
    return next(d for d in at.dataframe if d.key and d.key.startswith("compare.matrix.grid."))


def showing(at) -> str:
    return next(s for s in texts(at.caption) if s.startswith("Showing "))


@pytest.mark.slow
def test_opened_on_a_run_it_shows_the_seed_and_the_best(app, studio_db):
    run = finished_run(studio_db)
    at = app("compare", run_id=run.id)
    table = matrix(at).value
    assert list(table.columns)[0] == "example"
    assert any("seed" in c for c in table.columns[1:])
    val = [e for e in studio_db.examples(run.id) if e.split.value == "val"]
    assert len(table) == len(val)
    assert showing(at).startswith(f"Showing {len(val)} of {len(val)} example(s)")


@pytest.mark.slow
def test_only_failures_keeps_the_rows_a_version_failed(app, studio_db):
    run = finished_run(studio_db)
    at = app("compare", run_id=run.id)
    failures = at.toggle(key=f"compare.matrix.failures.{run.id}")
    failures.set_value(True).run()
    assert_ok(at)
    rows = matrix(at).value
    assert len(rows) == 3  # the seed fails every example of the scripted run
    assert all(any(str(cell).startswith("✗") for cell in row[1:]) for row in rows.values)
    at.number_input(key=f"compare.matrix.pass_at.{run.id}").set_value(0.0).run()
    assert_ok(at)  # everything passes at 0: no failure left
    assert showing(at).startswith("Showing 0 of 3")
    assert "No example passes these filters." in texts(at.info)


@pytest.mark.slow
def test_only_differing_rows_and_a_search(app, studio_db):
    run = finished_run(studio_db)
    at = app("compare", run_id=run.id)
    at.toggle(key=f"compare.matrix.differ.{run.id}").set_value(True).run()
    assert_ok(at)
    assert len(matrix(at).value) == 3  # seed and best answer differently everywhere
    picker = at.multiselect(key=f"compare.selected.{run.id}")
    picker.set_value(picker.value[:1]).run()
    assert_ok(at)  # one version never differs from itself
    assert showing(at).startswith("Showing 0 of 3")
    at.toggle(key=f"compare.matrix.differ.{run.id}").set_value(False).run()
    at.text_input(key=f"compare.matrix.search.{run.id}").input("HARBOR").run()
    assert_ok(at)
    rows = matrix(at).value
    assert list(rows["example"]) == ["val 0: harbor fog"]


@pytest.mark.slow
def test_a_regex_that_does_not_compile_is_a_message(app, studio_db):
    run = finished_run(studio_db)
    at = app("compare", run_id=run.id)
    at.toggle(key=f"compare.matrix.regex.{run.id}").set_value(True).run()
    at.text_input(key=f"compare.matrix.search.{run.id}").input("(unclosed").run()
    assert_ok(at)
    assert any("does not compile" in s for s in texts(at.warning))
    at.text_input(key=f"compare.matrix.search.{run.id}").input("(a+)+").run()
    assert_ok(at)
    assert any("repeats a group" in s for s in texts(at.warning))


@pytest.mark.slow
def test_a_selected_cell_opens_the_trial_and_takes_a_correction(app, studio_db):
    run = finished_run(studio_db)
    at = app("compare", run_id=run.id)
    key = matrix(at).key
    best = next(c for c in matrix(at).value.columns if c.endswith("best"))
    at.session_state[key] = {"selection": {"rows": [], "columns": [], "cells": [[0, best]]}}
    at.run()
    assert_ok(at)
    heads = [s for s in texts(at.markdown) if s.startswith("**Trial ")]
    assert heads and "valset" in heads[0] and f"candidate #{best.split()[0][1:]}" in heads[0]
    next(n for n in at.number_input if n.label == "Human score").set_value(0.1)
    next(b for b in at.button if b.label == "Save correction").click().run()
    assert_ok(at)
    assert any("Saved the correction of trial" in s for s in texts(at.success))
    assert str(matrix(at).value.loc[0, best]).startswith("✗ 0.10")
