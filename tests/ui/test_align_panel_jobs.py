"""The Align critic panel's background work under AppTest: a stopped align run's held-out
scoring, a judge measured as it will be applied, a failed re-score shown, align runs labelled."""

from __future__ import annotations

import pytest
import yaml

from studio.engine import build_engine
from studio.engine.hosting.worker import get_manager
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.model.records import ProposalStatus, RunStatus, TrialPhase
from studio.projects import aligning, background
from studio.projects.aligning import create_align_run, measure_key, rescore_key
from studio.projects.workspace import start_project_run
from tests.helpers import ROOT, wait_until
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_align_panel import button, corrected

EXAMPLE = ROOT / "examples" / "short_answers_scripted.yaml"
JUDGE = {"agent_as_judge": {"criteria": "The answer is good.", "scoring_strategy": "numeric",
                            "model": "scripted/strict"}}


def finished_align(store, source: str, **config) -> str:
    run = create_align_run(store, source, config=EvolutionConfig(max_iterations=3, seed=3,
                                                                 **config))
    get_manager(store).start(build_engine(store, run.id)).wait(90)
    return run.id


def judged(store) -> str:
    from studio.runtime.providers.strict import is_short

    data = yaml.safe_load(EXAMPLE.read_text())
    data["critic"] = {"type": "evaluator", "name": "judge", "evaluator": JUDGE}
    project = store.save_project("judged", yaml.safe_dump(data))
    run = start_project_run(store, project.id, EvolutionConfig(max_iterations=0, seed=7))
    get_manager(store).handle(run.id).wait(60)
    for trial in store.trials(run.id)[:12]:
        store.add_override(trial.id, score=0.9 if is_short(trial.output) else 0.8,
                           feedback="Short is fine.", author="ana")
    return run.id


@pytest.mark.slow
def test_a_stopped_align_run_scores_its_held_out_labels_from_a_button(app, studio_db):
    source = corrected(studio_db, 12)
    align = create_align_run(studio_db, source, config=EvolutionConfig(
        max_iterations=3, seed=3, review="review"))
    manager = get_manager(studio_db)
    handle = manager.start(build_engine(studio_db, align.id))
    wait_until(lambda: studio_db.proposals(align.id, status=ProposalStatus.PENDING), timeout=60,
               message="a proposal at the gate")
    manager.stop(align.id)
    handle.wait(60)
    assert studio_db.get_run(align.id).status is RunStatus.STOPPED
    at = app("agreement", run_id=source)
    assert any("studio test" in t for t in texts(at.markdown))
    button(at, "Score the held-out labels").click().run()
    assert_ok(at)
    wait_until(lambda: studio_db.trials(align.id, phase=TrialPhase.TEST)
               and not manager.running(), timeout=60, message="the held-out scoring")
    wait_until(lambda: not at.run().info or not any(
        "Scoring the original" in t for t in texts(at.info)), timeout=30,
        message="the page to see the scoring end")
    assert_ok(at)
    frames = [d.value for d in at.dataframe if "statistic" in getattr(d.value, "columns", [])]
    assert frames and "original critic" in frames[0].columns


@pytest.mark.slow
def test_a_judge_is_measured_in_the_background_as_it_will_be_applied(app, studio_db):
    source = judged(studio_db)
    align_id = finished_align(studio_db, source)
    at = app("agreement", run_id=source)
    assert any("Running the judge as it will be applied" in t for t in texts(at.info))
    job = background.job(measure_key(align_id))
    wait_until(lambda: job.finished, timeout=60, message="the judge on the held-out labels")
    at.run()
    assert_ok(at)
    assert job.error is None and job.total == 2 * 4
    assert any("the real critic as applied" in t for t in texts(at.caption))
    table = next(d.value for d in at.dataframe
                 if "statistic" in getattr(d.value, "columns", [])).set_index("statistic")
    mae = table.loc["Mean absolute error"]
    assert float(mae["aligned critic"]) < float(mae["original critic"])
    assert mae["recorded scores (reference)"] == mae["original critic"]


@pytest.mark.slow
def test_a_failed_rescore_is_shown_and_the_page_stays_usable(app, studio_db, monkeypatch):
    source = corrected(studio_db, 12)
    align_id = finished_align(studio_db, source)

    def broken(store, run_id, align_run_id, **_):
        raise ConfigError("the judge's model is unreachable", where="critic.model")

    monkeypatch.setattr(aligning, "rescore_run", broken)
    at = app("agreement", run_id=source)
    button(at, "Re-score this run").click().run()
    job = background.job(rescore_key(source))
    wait_until(lambda: job.finished, timeout=30, message="the failing pass")
    at.run()
    assert_ok(at)
    assert any("Re-scoring run" in t and "unreachable" in t and "critic.model" in t
               for t in texts(at.error))
    assert not button(at, "Re-score this run").disabled  # can be tried again
    assert aligning.rescore_passes(studio_db, source) == []
    assert align_id


@pytest.mark.slow
def test_align_runs_are_labelled_in_the_run_list_and_on_the_run_page(app, studio_db):
    source = corrected(studio_db, 12)
    align_id = finished_align(studio_db, source)
    at = app("run", run_id=align_id)
    assert any(f"aligns the critic of run {source} (its instruction)" in t
               for t in texts(at.info))
    home = app()
    names = home.dataframe(key="home.runs").value.set_index("id")["name"]
    assert f"aligns the critic of run {source}" in names[align_id]
    assert "aligns" not in names[source]


@pytest.mark.slow
def test_the_part_of_a_weighted_critic_is_picked_on_the_panel(app, studio_db):
    from studio.runtime.providers.strict import is_short

    data = yaml.safe_load(EXAMPLE.read_text())
    data["critic"] = {"type": "evaluator", "name": "combo", "evaluator": {"evaluators": [
        {**JUDGE, "label": "quality"},
        {"name": "rubric_dag", "label": "rubric",
         "params": {"preset": "answer_quality", "model": "scripted/strict"}},
        {"name": "contains", "params": {"substring": "."}}]}}
    project = studio_db.save_project("combo", yaml.safe_dump(data))
    run = start_project_run(studio_db, project.id, EvolutionConfig(max_iterations=0, seed=7))
    get_manager(studio_db).handle(run.id).wait(60)
    for trial in studio_db.trials(run.id)[:12]:
        studio_db.add_override(trial.id, score=0.9 if is_short(trial.output) else 0.8,
                               feedback=None, author="ana")
    at = app("agreement", run_id=run.id)
    picker = at.selectbox(key="agreement.align.part")
    assert picker.options == ["quality", "rubric"]
    picker.set_value("rubric")
    at.number_input(key="agreement.align.iterations").set_value(1)
    next(b for b in at.button if b.label == "Align critic").click().run()
    assert_ok(at)
    align = wait_until(lambda: [r for r in studio_db.list_runs() if r.spec.aligns], timeout=30,
                       message="the align run")[0]
    assert (align.spec.aligns.part_name, align.spec.aligns.target) == ("rubric", "rubric")
    get_manager(studio_db).handle(align.id).wait(90)


@pytest.mark.slow
def test_a_pass_outcome_stays_for_every_session_and_a_missing_result_is_an_error(
        app, studio_db, monkeypatch):
    source = corrected(studio_db, 12)
    finished_align(studio_db, source)
    at = app("agreement", run_id=source)
    button(at, "Re-score this run").click().run()
    job = background.job(rescore_key(source))
    wait_until(lambda: job.finished, timeout=60, message="the scoring pass")
    at.run()
    other = app("agreement", run_id=source)  # a second session sees the outcome too
    for page in (at, other):
        assert_ok(page)
        assert any("Scoring pass" in t for t in texts(page.success))
        assert any("held-out labels" in t for t in texts(page.caption))
        assert any("In-sample reference" in t for t in texts(page.caption))

    monkeypatch.setattr(aligning, "rescore_run", lambda *a, **k: None)
    button(other, "Re-score this run").click().run()
    job = background.job(rescore_key(source))
    wait_until(lambda: job.finished, timeout=30, message="the empty pass")
    other.run()
    assert_ok(other)
    assert any("ended without a result" in t for t in texts(other.error))


def test_the_copied_project_name_is_not_rendered_as_markdown(monkeypatch):
    from types import SimpleNamespace

    from components import align_panel, session

    chosen = []
    monkeypatch.setattr(session, "set_current_project", chosen.append)
    name = "[win](http://evil.example) **x**"
    message = align_panel.chosen_project(SimpleNamespace(id=7, name=name))
    assert chosen == [7]
    assert "[win](" not in message and "**x**" not in message
    assert "\\[win\\]\\(http" in message  # shown literally, not as a link
