"""The Agreement page's "Align critic" panel under AppTest (scripted strict-critic world)."""

from __future__ import annotations

import pytest

from studio.engine import build_engine
from studio.engine.hosting.worker import get_manager
from studio.model.config import EvolutionConfig
from studio.projects import background
from studio.projects.aligning import create_align_run, rescore_key
from studio.projects.workspace import import_example, import_yaml, start_project_run
from studio.runtime.providers.strict import FIX_PHRASE, is_short
from tests.helpers import ROOT, wait_until
from tests.ui.conftest import assert_ok, texts

EXAMPLE = ROOT / "examples" / "short_answers_scripted.yaml"


def corrected(store, count: int) -> str:
    project = import_example(store, EXAMPLE)
    run = start_project_run(store, project.id, EvolutionConfig(max_iterations=0, seed=7))
    get_manager(store).handle(run.id).wait(60)
    for trial in store.trials(run.id)[:count]:
        store.add_override(trial.id, score=0.9 if is_short(trial.output) else 0.8,
                           feedback="Short is fine.", author="ana")
    return run.id


def button(at, label):
    return next(b for b in at.button if b.label == label)


def test_the_panel_says_how_many_more_labels_are_needed(app, studio_db):
    run_id = corrected(studio_db, 4)
    at = app("agreement", run_id=run_id)
    assert any("6 more corrections with a score needed" in t for t in texts(at.info))
    assert not [b for b in at.button if b.label == "Align critic"]


@pytest.mark.slow
def test_finished_align_run_shows_before_after_and_is_used(app, studio_db):
    run_id = corrected(studio_db, 12)
    align = create_align_run(studio_db, run_id, config=EvolutionConfig(max_iterations=4, seed=3))
    get_manager(studio_db).start(build_engine(studio_db, align.id)).wait(60)
    at = app("agreement", run_id=run_id)
    assert any("agrees better with the person" in t for t in texts(at.markdown))
    frames = [d.value for d in at.dataframe if "statistic" in getattr(d.value, "columns", [])]
    mae = frames[0].set_index("statistic").loc["Mean absolute error"]
    assert float(mae["aligned critic"]) < float(mae["original critic"])
    assert any(FIX_PHRASE in t for t in texts(at.markdown))  # the instruction diff

    button(at, "Use for next run").click().run()
    assert_ok(at)
    assert studio_db.find_project("short-answers-scripted (aligned critic)") is not None
    button(at, "Re-score this run").click().run()
    assert_ok(at)
    job = background.job(rescore_key(run_id))
    assert job is not None  # started in the background, the page did not wait for it
    wait_until(lambda: job.finished, timeout=60, message="the scoring pass")
    at.run()
    assert_ok(at)
    assert job.error is None and job.done == job.total == 20
    assert any("Scoring pass" in t for t in texts(at.success))
    assert any("Scoring pass" in t for t in texts(at.caption))
    assert len(studio_db.trials(run_id)) == 20  # the old trials are untouched, none added


PROGRAMMATIC = """
name: coded critic
agent: {name: answerer, model: scripted/demo, instruction: Answer the question.}
critic: {type: evaluator, evaluator: {evaluators: [{name: contains, weight: 1},
         {name: regex_match, weight: 1, params: {pattern: '^\\w+$'}}]}}
reflection: {model: scripted/demo}
dataset: {train: [{question: "capital of France?", expected: Paris},
                  {question: "capital of Italy?", expected: Rome}]}
"""


def test_a_programmatic_critic_is_refused_before_any_correction_is_asked_for(app, studio_db):
    """capitals.yaml's critic is code (contains + regex): the panel says at once that there is
    nothing to align, instead of counting corrections it would refuse."""
    project = import_yaml(studio_db, PROGRAMMATIC)
    run = start_project_run(studio_db, project.id, EvolutionConfig(max_iterations=0, seed=1))
    get_manager(studio_db).handle(run.id).wait(60)
    at = app("agreement", run_id=run.id)
    assert_ok(at)
    refusals = [t for t in texts(at.info) if "critic cannot be aligned" in t]
    assert refusals and "regex_match is programmatic" in refusals[0]
    assert not any("more corrections" in t for t in texts(at.info))


@pytest.mark.slow
def test_the_panel_shows_how_many_labels_are_active_now(app, studio_db):
    from studio.engine.people.gates import undo_override

    run_id = corrected(studio_db, 12)
    align = create_align_run(studio_db, run_id, config=EvolutionConfig(max_iterations=2, seed=3))
    get_manager(studio_db).start(build_engine(studio_db, align.id)).wait(60)
    at = app("agreement", run_id=run_id)
    assert any("12 labels, all active now" in t for t in texts(at.caption))
    for trial_id in align.spec.aligns.label_trial_ids[:2]:  # the person undoes two corrections
        for correction in studio_db.overrides(trial_id=trial_id, include_undone=False):
            undo_override(correction.id, store=studio_db)
    at.run()
    assert_ok(at)
    assert any("10 of 12 labels active now (2 corrections undone since it started)" in t
               for t in texts(at.caption))
