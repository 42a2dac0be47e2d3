"""Aligning judges (``AgentAsJudgeEval`` criteria, rubric DAGs, a part of a weighted critic) in
the scripted strict world: the held-out before/after is the real judge's, run as it will be
applied, original text against aligned text."""

from __future__ import annotations

import pytest
import yaml

from studio.critics.adapters import build_critic
from studio.critics.alignable import judge_text, rubric_from_text, rubric_text, with_judge_text
from studio.engine import build_engine
from studio.engine.hosting.worker import get_manager
from studio.evaluators.rubric_dag import RUBRIC_PRESETS, validate_rubric_dag
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.projects.aligning import (
    align_report,
    aligned_critic,
    create_align_run,
    measure_held_out,
    report_measured,
    use_for_next_run,
)
from studio.projects.workspace import start_project_run, stored_project
from studio.runtime.providers.strict import FIX_PHRASE, is_short
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "short_answers_scripted.yaml"
JUDGE = {"agent_as_judge": {"criteria": "The answer is good.", "scoring_strategy": "numeric",
                            "model": "scripted/strict"}}
RUBRIC = {"evaluator": "rubric_dag", "params": {"preset": "answer_quality",
                                                "model": "scripted/strict"}}


def judged_run(store, evaluator: dict, name: str) -> str:
    """The strict example judged by ``evaluator``, 20 trials corrected (short answers: 0.9)."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["name"] = name
    data["critic"] = {"type": "evaluator", "name": "judge", "evaluator": evaluator}
    project = store.save_project(name, yaml.safe_dump(data))
    run = start_project_run(store, project.id, EvolutionConfig(max_iterations=0, seed=7))
    get_manager(store).handle(run.id).wait(60)
    for trial in store.trials(run.id)[:20]:
        short = is_short(trial.output)
        store.add_override(trial.id, score=0.9 if short else 0.8,
                           feedback="Short is fine: it answers." if short else "Good.",
                           author="ana")
    return run.id


def aligned(store, source: str, **options) -> str:
    run = create_align_run(store, source, config=EvolutionConfig(max_iterations=4, seed=3),
                           **options)
    assert get_manager(store).start(build_engine(store, run.id)).wait(90) == "max_iterations"
    return run.id


@pytest.mark.slow
def test_a_criteria_judge_is_measured_as_the_real_judge_on_held_out_labels(store):
    source = judged_run(store, JUDGE, "judged")
    run_id = aligned(store, source)
    pending = align_report(store, run_id)
    assert pending.measure_pending and pending.before is None
    assert "real judge" in pending.note
    report = measure_held_out(store, run_id)
    assert not report.measure_pending and "real critic as applied" in report.measured_by
    assert report.before.count == report.after.count == report.held_out == 6
    assert report.after.mae < report.before.mae
    # the real judge's scale (1-10, (s-1)/9) is what before shows, not the proxy's 0.2
    assert report.before.mae == pytest.approx(report.recorded.mae, abs=1e-9)
    assert FIX_PHRASE in aligned_critic(store, run_id).evaluator["agent_as_judge"]["criteria"]
    assert align_report(store, run_id).after == report.after  # stored, not run again


@pytest.mark.slow
def test_a_rubric_dag_is_aligned_through_its_guidance_and_questions(store):
    source = judged_run(store, RUBRIC, "rubric")
    run_id = aligned(store, source)
    report = report_measured(store, run_id)
    assert report.target == "rubric" and "answers: " in report.text_before
    assert report.after.mae < report.before.mae
    critic = aligned_critic(store, run_id)
    dag = validate_rubric_dag(critic.evaluator["params"]["dag"])
    assert FIX_PHRASE in dag.guidance and "preset" not in critic.evaluator["params"]
    assert dag.nodes["answers"].question == RUBRIC_PRESETS["answer_quality"]["nodes"][
        "answers"]["question"]
    project = stored_project(store, use_for_next_run(store, run_id).id)
    assert project.critic.evaluator == critic.evaluator


@pytest.mark.slow
def test_one_part_of_a_weighted_critic_is_aligned_and_the_rest_kept(store):
    weighted = {"evaluators": [
        {"name": "contains", "params": {"substring": "."}, "weight": 1},
        {**JUDGE, "label": "quality", "weight": 2}]}
    source = judged_run(store, weighted, "weighted")
    run_id = aligned(store, source)
    report = report_measured(store, run_id)
    assert report.part_name == "quality" and report.after.mae < report.before.mae
    critic = aligned_critic(store, run_id)
    items = critic.evaluator["evaluators"]
    assert items[0] == weighted["evaluators"][0]
    assert FIX_PHRASE in items[1]["agent_as_judge"]["criteria"] and items[1]["weight"] == 2
    build_critic(critic.evaluator)  # still a valid critic


def test_several_alignable_parts_are_picked_by_name():
    both = {"evaluators": [{**JUDGE, "label": "quality"},
                           {"name": "rubric_dag", "params": RUBRIC["params"], "label": "rubric"}]}
    with pytest.raises(ConfigError, match=r"several parts .*\(quality, rubric\)") as info:
        judge_text(both)
    assert info.value.where == "part"
    assert judge_text(both, "rubric").kind == "rubric"
    assert judge_text(both, "rubric").part == 1
    with pytest.raises(ConfigError, match="no alignable part is named 'tone'") as unknown:
        judge_text(both, "tone")
    assert unknown.value.where == "part"


@pytest.mark.parametrize("config, why", [
    ({"evaluator": "exact_match"}, "exact_match is programmatic"),
    ({"evaluator": "groundedness"}, "groundedness is programmatic or has no"),
    ({"evaluators": [{"name": "contains", "params": {"substring": "x"}}]},
     "no part of this weighted critic can be aligned: contains"),
])
def test_what_has_no_text_to_align_is_refused_naming_it(config, why):
    with pytest.raises(ConfigError, match=why) as info:
        judge_text(config)
    assert info.value.where.startswith("critic.evaluator")


def test_a_trajectory_judge_prompt_maps_back():
    config = {"evaluator": "llm_trajectory_judge", "params": {"continuous": True}}
    found = judge_text(config)
    assert (found.kind, found.mode) == ("prompt", "score") and "trajectory" in found.text
    assert with_judge_text(config, "prompt", "Be fair.")["params"] == {
        "continuous": True, "prompt": "Be fair."}


def test_rubric_text_round_trips_and_keeps_unnamed_nodes():
    dag = validate_rubric_dag(RUBRIC_PRESETS["answer_quality"])
    text = rubric_text(dag)
    assert text.splitlines()[0].startswith("answers: ")
    edited = rubric_from_text(dag, "Length is not quality.\nanswers: Is it right?")
    again = validate_rubric_dag(edited)
    assert again.guidance == "Length is not quality."
    assert again.nodes["answers"].question == "Is it right?"
    assert again.nodes["grounded"].question == dag.nodes["grounded"].question
    assert again.nodes["answers"].branches == dag.nodes["answers"].branches
