"""The blame view on Compare (AppTest): each sentence of a compared version beside the proposal
that introduced it; a person's edit credited to them; hostile text shown as text."""

from __future__ import annotations

import pytest

from studio.engine import EvolutionConfig, decide
from studio.engine.hosting.worker import get_manager
from studio.model.records import ProposalStatus
from studio.projects.workspace import EXAMPLES_DIR, import_example, start_project_run
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, texts

SCRIPTED = EXAMPLES_DIR / "haiku_scripted.yaml"
HOSTILE = "<img src=x onerror=alert(1)> Be **bold** [here](javascript:alert(1))."


def pending(store, run_id, seen):
    found = wait_until(lambda: [p for p in store.proposals(run_id, status=ProposalStatus.PENDING)
                                if p.id not in seen], timeout=60, message="a proposal")[0]
    seen.add(found.id)
    return found


def blame_table(at):
    [table] = [d.value for d in at.dataframe if list(d.value.columns) == ["sentence", "origin"]]
    return table


def edited_run(store):
    """Two iterations in review mode: the first accepted as the reflection wrote it, the second
    edited by a person (adding a hostile sentence) and then accepted."""
    project = import_example(store, SCRIPTED)
    run = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=2, minibatch_size=3, review="review", seed=7))
    seen: set[int] = set()
    decide(pending(store, run.id, seen).id, "accept", author="bo", store=store)
    second = pending(store, run.id, seen)
    decide(second.id, "edit", edited_text=second.text + "\n" + HOSTILE, author="<b>ana</b>",
           store=store)
    edited = pending(store, run.id, seen)
    decide(edited.id, "accept", author="bo", store=store)
    assert get_manager(store).handle(run.id).wait(timeout=60) == "max_iterations"
    return run, second, edited


@pytest.mark.slow
def test_compare_shows_where_each_sentence_came_from(app, studio_db):
    run, second, edited = edited_run(studio_db)
    at = app("compare", run_id=run.id)
    assert "Where each sentence came from" in texts(at.subheader)
    table = blame_table(at)
    rows = list(zip(table["sentence"], table["origin"], strict=True))
    assert rows[0] == ("Write a haiku about the given topic.", "seed (candidate #0)")
    assert rows[1][1].startswith("it 1 · p1 · reflection · +")
    assert rows[2][1].startswith(f"it 2 · p{second.id} · reflection · ")
    assert rows[3] == ("<img src=x onerror=alert(1)> Be **bold** [here](javascript:alert(1)).",
                       rows[3][1])
    assert rows[3][1].startswith(f"it 2 · p{edited.id} · edited by <b>ana</b> · ")
    caption = next(c for c in texts(at.caption) if "edited by" in c)
    assert "1 from the seed, 2 from reflections, 1 edited by <b>ana</b>" in caption
    raw = next(str(c.value) for c in at.caption if "edited by" in str(c.value))
    assert "\\<b\\>ana\\<\\/b\\>" in raw  # escaped: Markdown shows the name, never a tag

    candidates = studio_db.candidates(run.id)
    at.multiselect(key=f"compare.selected.{run.id}").set_value(
        [candidates[0].id, candidates[1].id, candidates[-1].id]).run()
    at.selectbox(key=f"compare.blame.{run.id}").set_value(candidates[1].id).run()
    assert_ok(at)
    table = blame_table(at)
    assert len(table) == 2 and table["origin"].iloc[1].startswith("it 1 · p1 · reflection")
