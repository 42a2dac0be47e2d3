"""Each page's logic under Streamlit's AppTest, against a real (temporary) store."""

from __future__ import annotations

import re

import pytest

from studio.engine import EvolutionConfig, decide, override
from studio.engine.hosting.worker import get_manager
from studio.model.records import ProposalStatus, RunStatus, TrialPhase
from studio.projects.files import parse_project
from studio.projects.workspace import (
    EXAMPLES_DIR,
    import_example,
    pending_proposal,
    start_project_run,
)
from studio.views.drafts import RowsTarget
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, open_tab, texts

SCRIPTED = EXAMPLES_DIR / "haiku_scripted.yaml"


def review_run(store, **config):
    """A run of the scripted example waiting at its first gate."""
    project = import_example(store, SCRIPTED)
    values = {"max_iterations": 4, "minibatch_size": 3, "review": "review", "seed": 7} | config
    run = start_project_run(store, project.id, EvolutionConfig(**values))
    wait_until(lambda: pending_proposal(store, run.id))
    return run


def finished_run(store, **config):
    project = import_example(store, SCRIPTED)
    values = {"max_iterations": 3, "minibatch_size": 3, "review": "auto", "seed": 7} | config
    run = start_project_run(store, project.id, EvolutionConfig(**values))
    get_manager(store).handle(run.id).wait(timeout=60)
    return run


def button(at, label):
    return next(b for b in at.button if b.label == label)


# --------------------------------------------------------------------------- home


@pytest.mark.slow
def test_home_guides_a_new_user_and_quick_starts(app, studio_db):
    at = app()
    assert any("Get started" in s for s in texts(at.subheader))
    button(at, "Load the scripted demo project and open Run").click().run()
    assert_ok(at)
    assert texts(at.title) == ["Run"]
    assert studio_db.find_project("haiku-scripted") is not None
    assert any("Loaded the example" in s for s in texts(at.success))


@pytest.mark.slow
def test_home_lists_recent_runs(app, studio_db):
    run = finished_run(studio_db)
    at = app()
    table = at.dataframe(key="home.runs").value
    assert list(table["id"]) == [run.id] and table.loc[0, "status"] == "completed"


# --------------------------------------------------------------------------- projects


def editor_key(at, studio_db, field):
    project = studio_db.find_project("haiku-scripted")
    return f"projects.field.{project.id}.{field}"


@pytest.mark.slow
def test_projects_load_example_edit_validate_and_save(app, studio_db):
    at = app("projects")
    assert any("No projects yet" in s for s in texts(at.info))
    button(at, "Load example: haiku-scripted").click().run()
    assert_ok(at)
    key = lambda field: editor_key(at, studio_db, field)  # noqa: E731
    assert at.text_input(key=key("agent_model")).value == "scripted/demo@150ms"
    assert button(at, "Save project").disabled  # nothing changed yet

    at.text_input(key=key("agent_model")).set_value("nope/model").run()
    assert any("unknown model provider" in s for s in texts(at.error))
    assert any("need attention" in s for s in texts(at.warning))
    assert button(at, "Save project").disabled

    at.text_input(key=key("agent_model")).set_value("scripted/demo").run()
    at.text_area(key=key("agent_instruction")).set_value("Write a haiku. Name the topic.").run()
    at.text_area(key=key("agent_schema")).set_value('{"type": "string"}').run()
    assert any("must describe an object" in s for s in texts(at.error))
    at.text_area(key=key("agent_schema")).set_value("").run()
    at.text_area(key=key("agent_few_shot")).set_value('[{"input": "rain"}]').run()
    assert any("agent.few_shot[0]" in s and "output" in s for s in texts(at.error))
    at.text_area(key=key("agent_few_shot")).set_value(
        '[{"input": "topic: rain", "output": "<b>Rain on the roof</b>"}]').run()
    open_tab(at, studio_db.find_project("haiku-scripted").id, "Reflection")
    at.text_area(key=key("reflection_instruction")).set_value("Improve {component_text}").run()
    assert any("{trials}" in s for s in texts(at.error))
    at.text_area(key=key("reflection_instruction")).set_value("").run()
    at.selectbox(key=key("reflection_strategy")).set_value("rules").run()
    assert not at.error
    save = button(at, "Save project")
    assert not save.disabled
    save.click().run()
    assert_ok(at)
    stored = parse_project(studio_db.find_project("haiku-scripted").yaml)
    assert stored.agent.instruction == "Write a haiku. Name the topic."
    assert stored.reflection.strategy == "rules"
    assert stored.agent.model == "scripted/demo"
    assert [d.output for d in stored.agent.few_shot] == ["<b>Rain on the roof</b>"]


@pytest.mark.slow
def test_projects_draw_only_the_open_tab_and_keep_the_closed_tabs_edits(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    key = lambda field: f"projects.field.{project.id}.{field}"  # noqa: E731
    drawn = {w.key for w in at.text_input} | {w.key for w in at.text_area}
    assert key("agent_model") in drawn and key("critic_name") not in drawn
    at.text_input(key=key("agent_model")).set_value("nope/model").run()

    open_tab(at, project.id, "Critic")
    drawn = {w.key for w in at.text_input} | {w.key for w in at.text_area}
    assert key("critic_name") in drawn and key("agent_model") not in drawn
    # the closed Agent tab's bad field still blocks Save, and the warning says where it is
    assert any("(Agent tab)" in s for s in texts(at.warning)), texts(at.warning)
    assert button(at, "Save project").disabled
    at.text_input(key=key("critic_name")).set_value("strict_judge").run()

    open_tab(at, project.id, "Agent")
    assert at.text_input(key=key("agent_model")).value == "nope/model"  # kept while closed
    at.text_input(key=key("agent_model")).set_value("scripted/demo").run()
    button(at, "Save project").click().run()
    assert_ok(at)
    stored = parse_project(studio_db.get_project(project.id).yaml)
    assert stored.agent.model == "scripted/demo" and stored.critic.name == "strict_judge"


@pytest.mark.slow
def test_projects_critic_template_and_dataset_paste(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    key = lambda field: f"projects.field.{project.id}.{field}"  # noqa: E731
    open_tab(at, project.id, "Critic")
    button(at, "Use template").click().run()
    assert at.text_area(key=key("critic_instruction")).value.startswith(
        "Evaluate the quality of the output.")
    open_tab(at, project.id, "Dataset")
    at.text_area(key=f"projects.rows_paste.{project.id}").set_value(
        "question,answer\nWhat is 2+2?,4\nCapital of France?,Paris\n").run()
    button(at, "Use the pasted rows").click().run()
    assert_ok(at)
    replace = next(b for b in at.button if b.label.startswith("Replace the"))
    replace.click().run()
    assert at.session_state[key("train_rows")][1] == {"question": "Capital of France?",
                                                       "answer": "Paris"}
    # the new rows' usual names were chosen, so only the separate validation rows (the old
    # columns) are in the way
    assert at.selectbox(key=key("input_column")).value == "question"
    assert at.selectbox(key=key("expected_column")).value == "answer"
    assert not any("has no column 'question'" in s for s in texts(at.error)
                   if "train" in s), texts(at.error)
    button(at, "Split the training rows instead").click().run()
    assert not at.error, texts(at.error)


@pytest.mark.slow
def test_projects_new_columns_wait_for_a_confirmation_with_the_columns_chosen(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    key = lambda field: f"projects.field.{project.id}.{field}"  # noqa: E731
    open_tab(at, project.id, "Dataset")
    before = at.session_state[key("train_rows")]
    at.text_area(key=f"projects.rows_paste.{project.id}").set_value(
        "id,prompt,reference\n1,Say hi,hi\n2,Say bye,bye\n").run()
    button(at, "Use the pasted rows").click().run()
    assert_ok(at)
    assert at.session_state[key("train_rows")] == before  # nothing replaced yet
    assert any("2 row(s) from pasted data" in s and "'prompt'" in s and "'reference'" in s
               for s in texts(at.markdown))
    assert at.selectbox(key=f"projects.rows_pending_input.{project.id}").value == "prompt"
    assert at.selectbox(key=f"projects.rows_pending_expected.{project.id}").value == "reference"
    keep = button(at, "Keep the current rows")
    assert keep.proto.type == "primary"  # the safe choice
    keep.click().run()
    assert at.session_state[key("train_rows")] == before
    assert not any(b.label.startswith("Replace the") for b in at.button)

    at.text_area(key=f"projects.rows_paste.{project.id}").set_value(
        "id,prompt,reference\n1,Say hi,hi\n2,Say bye,bye\n").run()
    button(at, "Use the pasted rows").click().run()
    at.selectbox(key=f"projects.rows_pending_input.{project.id}").set_value("id").run()
    button(at, f"Replace the {len(before)} training rows").click().run()
    assert_ok(at)
    assert [r["prompt"] for r in at.session_state[key("train_rows")]] == ["Say hi", "Say bye"]
    assert at.selectbox(key=key("input_column")).value == "id"
    assert at.selectbox(key=key("expected_column")).value == "reference"
    assert not any("has no column" in s for s in texts(at.error)
                   if "dataset.train" in s), texts(at.error)


def test_projects_never_say_saved_beside_a_field_that_needs_attention(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    key = lambda field: f"projects.field.{project.id}.{field}"  # noqa: E731
    assert "All changes saved." in texts(at.caption)
    at.text_input(key=key("agent_model")).set_value("nope/model").run()
    assert any("need attention" in s for s in texts(at.warning))
    assert "All changes saved." not in texts(at.caption)
    assert any(s.startswith("Unsaved changes: fix the field(s) above") for s in texts(at.caption))
    at.text_input(key=key("agent_model")).set_value("scripted/demo@150ms").run()
    assert "All changes saved." in texts(at.caption)


def test_projects_test_set_is_shown_and_added_on_the_dataset_tab(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    open_tab(at, project.id, "Dataset")
    assert any("No test set" in s for s in texts(at.caption))
    at.radio(key=f"projects.rows_target.{project.id}").set_value(RowsTarget.TEST).run()
    at.text_area(key=f"projects.rows_paste.{project.id}").set_value(
        '{"topic": "snow at dusk"}\n{"topic": "a kettle"}\n').run()
    button(at, "Use the pasted rows").click().run()
    button(at, "Use these rows as the test rows").click().run()
    assert_ok(at)
    assert any(s.startswith("2 test rows") for s in texts(at.caption))
    button(at, "Save project").click().run()
    assert_ok(at)
    stored = parse_project(studio_db.get_project(project.id).yaml)
    assert [row["topic"] for row in stored.dataset.test] == ["snow at dusk", "a kettle"]


def test_projects_import_duplicate_export(app, studio_db):
    import_example(studio_db, SCRIPTED)
    at = app("projects")
    yaml_text = (EXAMPLES_DIR / "haiku_scripted.yaml").read_text().replace(
        "name: haiku-scripted", "name: imported")
    at.get("file_uploader")[0].upload("imported.yaml", yaml_text.encode(), "application/x-yaml")
    at.run()
    button(at, "Import").click().run()
    assert_ok(at)
    assert studio_db.find_project("imported") is not None
    button(at, "Duplicate").click().run()
    assert studio_db.find_project("imported copy") is not None
    assert at.get("download_button")


def test_projects_reimport_under_the_same_name_reads_the_new_file(app, studio_db):
    import_example(studio_db, SCRIPTED)
    at = app("projects")
    yaml_text = (EXAMPLES_DIR / "haiku_scripted.yaml").read_text()
    for n, description in enumerate(("first version", "fixed version")):
        text = yaml_text.replace("name: haiku-scripted", f"name: same-file-{n}").replace(
            "description:", f"description: {description}.", 1)
        at.get("file_uploader")[0].upload("project.yaml", text.encode(), "application/x-yaml")
        at.run()
        button(at, "Import").click().run()
        assert_ok(at)
        stored = studio_db.find_project(f"same-file-{n}")
        assert stored is not None and description in stored.yaml


def test_projects_import_error_is_shown_inline(app, studio_db):
    import_example(studio_db, SCRIPTED)
    at = app("projects")
    at.get("file_uploader")[0].upload("bad.yaml", b"name: x\nagnet: {}\n", "application/x-yaml")
    at.run()
    button(at, "Import").click().run()
    assert_ok(at)
    assert any("agnet" in s and "unknown field" in s for s in texts(at.error))


@pytest.mark.slow
def test_projects_try_on_one_example(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    button(at, "Try it").click().run()
    assert_ok(at)
    job = at.session_state[f"projects.probe.{project.id}.job"]
    assert job.wait(timeout=60)
    at.run()
    assert_ok(at)
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["Critic score"]) >= 0.0
    assert any("Missing" in c.value for c in at.code)


@pytest.mark.slow
def test_projects_try_it_shows_progress_and_cancel_stops_it(app, studio_db):
    text = SCRIPTED.read_text().replace("scripted/demo@150ms", "scripted/demo@30000ms", 1)
    project = studio_db.save_project("slow", text.replace("name: haiku-scripted", "name: slow"))
    at = app("projects", project_id=project.id)
    button(at, "Try it").click().run()
    job = at.session_state[f"projects.probe.{project.id}.job"]
    wait_until(lambda: job.phase.value == "running the agent", timeout=30)
    at.run()
    assert any(s.startswith("Running the agent…") for s in texts(at.info)), texts(at.info)
    assert button(at, "Try it").disabled
    button(at, "Cancel").click().run()
    assert_ok(at)
    assert not job.running  # stopped, not left behind
    assert any(s.startswith("Cancelled after") for s in texts(at.warning)), texts(at.warning)
    assert not button(at, "Try it").disabled and not at.metric


# --------------------------------------------------------------------------- run


@pytest.mark.slow
def test_run_page_starts_a_review_run_and_fills_the_table(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("run", project_id=project.id)
    assert any("No run yet" in s for s in texts(at.info))
    at.radio[0].set_value("review")
    button(at, "Start run").click().run()
    assert_ok(at)
    run = studio_db.list_runs()[0]
    assert run.config.review == "review" and at.session_state["app.run_id"] == run.id
    wait_until(lambda: pending_proposal(studio_db, run.id))
    at.run()
    table = at.dataframe(key=f"run.table.{run.id}").value
    assert len(table) == studio_db.count_trials(run.id) > 0
    assert list(table["id"]) == sorted(table["id"])  # oldest first: new rows move nothing
    latest = next(d for d in at.dataframe if d.key != f"run.table.{run.id}").value
    assert list(latest["id"]) == sorted(table["id"], reverse=True)[:5]  # the newest, to watch
    assert any("is waiting for your decision" in s for s in texts(at.warning))
    assert any(re.search(r"newest trial \d+ \(id \d+\)", s) for s in texts(at.caption))

    # select a row: the trial is shown in full, and stays selected when filters change
    newest = int(table["id"].iloc[0])  # (the oldest: row 0)
    at.session_state[f"run.table.{run.id}"] = {"selection": {"rows": [0], "columns": [],
                                                             "cells": []}}
    at.run()
    assert any(f"(id {newest}) · iteration" in s for s in texts(at.markdown))
    at.segmented_control(key=f"run.filter.{run.id}.errors").set_value("no errors").run()
    assert at.session_state[f"run.selected.{run.id}"] == newest

    override(newest, score=1.0, author="t", store=studio_db)
    at.segmented_control(key=f"run.filter.{run.id}.overridden").set_value("overridden").run()
    table = at.dataframe(key=f"run.table.{run.id}").value
    assert list(table["id"]) == [newest] and table["score"].iloc[0] == 1.0


@pytest.mark.slow
def test_run_page_shows_one_page_of_trials_filtered_in_sql(app, studio_db, monkeypatch):
    from components import trial_table
    from tests.store.test_large_runs import seeded_run

    monkeypatch.setattr(trial_table, "PAGE_ROWS", 10)
    run_id = seeded_run(studio_db)
    trials = studio_db.trials(run_id, with_trace=False)
    ids = [t.id for t in trials]
    at = app("run", run_id=run_id)
    assert at.dataframe(key=f"run.table.{run_id}").value["id"].tolist() == ids[:10]
    assert any(f"Showing 10 of {len(ids)} trials (rows 1–10 of {len(ids)})" in s
               for s in texts(at.caption))
    latest = next(d for d in at.dataframe if d.key != f"run.table.{run_id}").value
    assert latest["id"].tolist() == ids[::-1][:5]

    at.number_input(key=f"run.page.{run_id}").set_value(2).run()
    assert_ok(at)
    assert at.dataframe(key=f"run.table.{run_id}").value["id"].tolist() == ids[10:20]
    last = (len(ids) - 1) // 10 + 1
    at.number_input(key=f"run.page.{run_id}").set_value(last).run()
    assert at.dataframe(key=f"run.table.{run_id}").value["id"].tolist() == ids[(last - 1) * 10:]

    # a filter is applied in SQL and brings the table back to its first page
    at.multiselect(key=f"run.filter.{run_id}.phases").set_value(["child"]).run()
    children = [t.id for t in trials if t.phase.value == "child"]
    assert at.dataframe(key=f"run.table.{run_id}").value["id"].tolist() == children[:10]
    assert any(f"of {len(children)} matching" in s for s in texts(at.caption))

    # a correction made elsewhere shows at the next refresh (the run's marker changed)
    corrected = children[0]
    override(corrected, score=0.123, author="t", store=studio_db)
    at.run()
    table = at.dataframe(key=f"run.table.{run_id}").value
    assert table.loc[table["id"] == corrected, "score"].iloc[0] == 0.123


@pytest.mark.slow
def test_tabs_watching_one_run_share_one_page_read_per_change(app, studio_db, monkeypatch):
    """Ten tabs on a run's page cost the store one page read per change of the run, not ten:
    the page (rows and tables) is shared by every session, keyed by the run's marker."""
    from components import loaders
    from tests.store.test_large_runs import seeded_run

    run_id = seeded_run(studio_db)
    reads: list[tuple] = []
    real = loaders.trial_page
    monkeypatch.setattr(loaders, "trial_page",
                        lambda *args, **kwargs: reads.append(args) or real(*args, **kwargs))
    tabs = [app("run", run_id=run_id) for _ in range(3)]
    tables = [tab.dataframe(key=f"run.table.{run_id}").value["id"].tolist() for tab in tabs]
    assert tables[0] == tables[1] == tables[2] and tables[0]
    assert len(reads) == 1

    first = tables[0][0]
    override(first, score=0.321, author="t", store=studio_db)  # the run's marker changes
    for tab in tabs:
        tab.run()
        table = tab.dataframe(key=f"run.table.{run_id}").value
        assert table.loc[table["id"] == first, "score"].iloc[0] == 0.321
    assert len(reads) == 2


@pytest.mark.slow
def test_run_controls_pause_resume_stop(app, studio_db):
    run = review_run(studio_db)
    at = app("run", run_id=run.id)
    button(at, "Pause").click().run()
    assert studio_db.get_run(run.id).control == "pause"
    # the status line says paused at once (the worker holds the run at its next step)
    assert any(run.id in s and "**paused**: holds before its next model call" in s
               for s in texts(at.caption))
    at.switch_page("../pages/home.py").run()
    assert at.dataframe(key="home.runs").value.set_index("id").loc[run.id, "status"] == "paused"
    at.switch_page("../pages/run.py").run()
    button(at, "Resume").click().run()
    assert studio_db.get_run(run.id).control is None
    assert any(run.id in s and "**running**:" in s for s in texts(at.caption))
    button(at, "Stop").click().run()
    assert_ok(at)
    wait_until(lambda: studio_db.get_run(run.id).status is RunStatus.STOPPED)


def test_stop_answers_at_once_while_the_run_finishes_its_step(app, studio_db):
    text = SCRIPTED.read_text().replace("scripted/demo@150ms", "scripted/demo@3000ms")
    project = studio_db.save_project("slow", text.replace("name: haiku-scripted", "name: slow"))
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=20, minibatch_size=3, review="auto", seed=7))
    wait_until(lambda: studio_db.get_run(run.id).status is RunStatus.RUNNING)
    at = app("run", run_id=run.id)
    button(at, "Stop").click().run()
    assert_ok(at)
    assert not any(b.label == "Stop" for b in at.button)  # no second Stop to click
    if studio_db.get_run(run.id).status.is_active:  # still finishing its model call
        assert button(at, "Stopping…").disabled
        assert not any(b.label == "Pause" for b in at.button)
    wait_until(lambda: studio_db.get_run(run.id).status is RunStatus.STOPPED, timeout=60)
    get_manager(studio_db).handle(run.id).wait(timeout=60)  # its thread has ended too


def test_run_start_errors_are_inline(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    text = studio_db.get_project(project.id).yaml.replace("scripted/demo@150ms", "nope/model", 1)
    studio_db.save_project(project.name, text, project.id)
    at = app("run", project_id=project.id)
    button(at, "Start run").click().run()
    assert_ok(at)
    assert any("unknown model provider" in s for s in texts(at.error))
    assert studio_db.list_runs() == []


# --------------------------------------------------------------------------- review


@pytest.mark.slow
def test_review_corrects_many_trials_shows_the_effect_and_undoes(app, studio_db):
    run = review_run(studio_db)
    at = app("review", run_id=run.id)
    verdict = {m.label: m.value for m in at.metric}
    proposal = pending_proposal(studio_db, run.id)
    assert verdict[f"Proposal 1 (id {proposal.id}): the rule would"] == "accept"
    editor_key = f"review.editor.{run.id}.0"
    frame = at.data_editor(key=editor_key).value
    parents = [i for i, phase in enumerate(frame["phase"]) if phase == "parent"]
    at.session_state[editor_key] = {
        "edited_rows": {i: {"human_score": 1.0} for i in parents},
        "added_rows": [], "deleted_rows": []}
    at.run()
    save = button(at, f"Save {len(parents)} correction(s)")
    save.click().run()
    assert_ok(at)
    overrides = studio_db.overrides(run.id, include_undone=False)
    assert len(overrides) == len(parents) and all(o.score == 1.0 for o in overrides)
    metrics = {m.label: m for m in at.metric}
    rule = metrics[f"Proposal 1 (id {proposal.id}): the rule would"]
    assert rule.value == "reject" and "was accept" in rule.delta

    button(at, "Undo").click().run()
    assert_ok(at)
    assert len(studio_db.overrides(run.id, include_undone=False)) == len(parents) - 1


@pytest.mark.slow
def test_review_single_trial_form_keeps_the_other_human_value(app, studio_db):
    run = review_run(studio_db)
    at = app("review", run_id=run.id)
    trial_id = at.selectbox(key="review.single.trial").value
    at.text_input(key="review.single.feedback").set_value("too strict")
    at.number_input(key="review.single.score").set_value(0.8)
    at.button(key="FormSubmitter:review.single-Save correction").click().run()
    assert_ok(at)
    at.selectbox(key="review.single.trial").set_value(trial_id)
    at.text_input(key="review.single.feedback").set_value("really too strict")
    at.button(key="FormSubmitter:review.single-Save correction").click().run()
    active = studio_db.overrides(run.id, include_undone=False)[-1]
    assert (active.score, active.feedback, active.author) == (0.8, "really too strict",
                                                              at.session_state["app.author"])


# --------------------------------------------------------------------------- proposals


@pytest.mark.slow
def test_proposals_accept_and_reject_with_reason(app, studio_db):
    run = review_run(studio_db)
    first = pending_proposal(studio_db, run.id)
    at = app("proposals", run_id=run.id)
    assert any(f"(id {first.id})" in s for s in texts(at.subheader))
    assert {m.label for m in at.metric} >= {"Parent minibatch sum", "Child minibatch sum"}
    assert any(":green-background[" in s for s in texts(at.markdown))  # the diff
    button(at, "Accept").click().run()
    assert_ok(at)
    assert studio_db.decisions(proposal_id=first.id)[-1].action.value == "accept"

    second = wait_until(lambda: (p := pending_proposal(studio_db, run.id)) and p.id != first.id
                      and p)
    at.run()
    button(at, "Reject").click().run()
    assert any("say why" in s for s in texts(at.error))  # a reason is required
    assert not studio_db.decisions(proposal_id=second.id)
    at.text_input(key=f"proposals.reason.{second.id}").set_value("do not mention seasons")
    button(at, "Reject").click().run()
    decision = studio_db.decisions(proposal_id=second.id)[-1]
    assert (decision.action.value, decision.reason) == ("reject", "do not mention seasons")


@pytest.mark.slow
def test_proposals_edit_is_rescored(app, studio_db):
    run = review_run(studio_db)
    first = pending_proposal(studio_db, run.id)
    at = app("proposals", run_id=run.id)
    at.text_area(key=f"proposals.edit.{first.id}").set_value(
        first.text + "\nRule: Name the topic in the poem (name the topic).")
    button(at, "Save the edit and re-score").click().run()
    assert_ok(at)
    edited = wait_until(lambda: next((p for p in studio_db.proposals(run.id)
                                    if p.edited_from == first.id
                                    and p.status is ProposalStatus.PENDING), None))
    at.run()
    assert any(f"(id {edited.id})" in s for s in texts(at.subheader))


@pytest.mark.slow
def test_proposals_history_shows_the_sums_at_decision_and_now(app, studio_db):
    run = finished_run(studio_db, max_iterations=1)
    [proposal] = studio_db.proposals(run.id)
    seen = studio_db.decisions(proposal_id=proposal.id)[0].evidence
    parent = studio_db.trials(run.id, phase=TrialPhase.PARENT, iteration=1)[0]
    override(parent.id, score=0.0 if parent.score else 1.0, author="ana", store=studio_db)
    at = app("proposals", run_id=run.id)
    history = next(d.value for d in at.dataframe if "evidence" in d.value.columns)
    evidence = history.loc[0, "evidence"]
    assert evidence.startswith(f"at decision {seen.parent_sum:.3f} → {seen.child_sum:.3f} · now ")
    assert evidence.endswith("(corrected since)")
    assert history.loc[0, "parent_sum"] != seen.parent_sum  # the sums now


@pytest.mark.slow
def test_model_written_html_is_shown_escaped(app, studio_db, script):
    """A proposal is model-written: `<script>` must reach the page as text, never as HTML."""
    from studio.runtime.providers import demo

    payload = "<script>alert('x')</script> ![img](http://evil.example/x.png) [link](http://e)"

    def reflector(request):
        if demo.REFLECTION_MARKER in request.prompt_text:
            return "Write a haiku about the given topic.\n" + payload
        return demo.reply(request)

    model = script("xss_reflector", reflector)
    project = import_example(studio_db, SCRIPTED)
    text = studio_db.get_project(project.id).yaml.replace(
        "reflection:\n  model: scripted/demo@150ms", f"reflection:\n  model: {model}")
    studio_db.save_project(project.name, text, project.id)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=2, review="review", seed=7))
    wait_until(lambda: pending_proposal(studio_db, run.id))
    at = app("proposals", run_id=run.id)
    bodies = [m.value for m in at.markdown]
    assert any("\\<script\\>" in b for b in bodies)
    assert not any("<script>" in b for b in bodies)
    assert not any("](http" in b for b in bodies)
    assert not any(m.allow_html for m in at.markdown)


def test_no_page_or_component_allows_html():
    from tests.ui.conftest import ROOT

    sources = [*ROOT.glob("pages/*.py"), *ROOT.glob("components/*.py"), ROOT / "studio/app.py"]
    assert all("unsafe_allow_html=" not in p.read_text() for p in sources)


# --------------------------------------------------------------------------- compare & agreement


@pytest.mark.slow
def test_compare_shows_diffs_scores_and_charts(app, studio_db):
    run = finished_run(studio_db)
    at = app("compare", run_id=run.id)
    chosen = at.multiselect(key=f"compare.selected.{run.id}").value
    assert len(chosen) == 2
    assert len(at.get("plotly_chart")) == 3
    per_example = next(d.value for d in at.dataframe if "example" in d.value.columns
                       and not (d.key or "").startswith("compare.matrix."))  # not the outputs
    assert [c for c in per_example.columns if c.startswith("Δ")]
    candidates = [c.id for c in studio_db.candidates(run.id)]
    at.multiselect(key=f"compare.selected.{run.id}").set_value(candidates[:3]).run()
    assert_ok(at)
    assert len(at.tabs) >= 2


@pytest.mark.slow
def test_agreement_empty_then_with_corrections(app, studio_db):
    run = finished_run(studio_db)
    at = app("agreement", run_id=run.id)
    assert any("No corrections yet" in s for s in texts(at.info))
    trials = studio_db.trials(run.id, with_trace=False)
    override(trials[0].id, score=1.0, author="a", store=studio_db)
    override(trials[1].id, score=0.0, author="a", store=studio_db)
    at.run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Overrides compared"] == "2"
    assert "Cohen's kappa" in metrics


@pytest.mark.slow
def test_pages_without_a_run_say_what_to_do(app):
    for page in ("review", "proposals", "compare"):
        at = app(page)
        assert any("No run is selected" in s for s in texts(at.info)), page


@pytest.mark.parametrize("page", ["home", "projects", "run", "review", "proposals", "compare",
                                  "agreement"])
def test_pages_are_thin(page):
    from tests.ui.conftest import ROOT

    lines = (ROOT / "pages" / f"{page}.py").read_text().splitlines()
    assert len(lines) < 100, f"pages/{page}.py has {len(lines)} lines"


@pytest.mark.slow
def test_decide_from_another_tab_is_seen(app, studio_db):
    """Two tabs on one run: a decision made elsewhere shows on the next poll."""
    run = review_run(studio_db)
    first = pending_proposal(studio_db, run.id)
    at = app("proposals", run_id=run.id)
    decide(first.id, "accept", author="other tab", store=studio_db)
    at.run()
    assert any("Decision recorded: accept by other tab" in s for s in texts(at.success)) or \
        not any(f"(id {first.id}) ·" in s for s in texts(at.subheader))


@pytest.mark.slow
def test_opening_a_run_from_home_and_switching_runs_in_the_sidebar(app, studio_db):
    first = finished_run(studio_db)
    second = finished_run(studio_db, seed=3)
    at = app()
    at.session_state["home.runs"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    at.run()
    assert_ok(at)
    assert texts(at.title) == ["Run"] and at.session_state["app.run_id"] == first.id
    assert at.query_params["run"] == first.id
    at.selectbox(key="app.run_picker").set_value(second.id).run()
    assert_ok(at)
    assert at.session_state["app.run_id"] == second.id
    assert at.query_params["run"] == second.id
    assert any(second.id in s for s in texts(at.caption))
