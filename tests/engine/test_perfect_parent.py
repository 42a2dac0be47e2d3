"""GEPA's ``skip_perfect_score``: a parent perfect on its minibatch is not reflected on (no child
could beat it), and the iteration still counts, with the scripted model through the real ADK
runner."""

from __future__ import annotations

from studio.engine import load_result
from studio.engine.run.events import EventKind, SkipCause
from studio.model.records import AgentSpec
from tests.helpers import demo_spec, trainset

PERFECT = ("Write a haiku in three lines; name the topic; include a season word; use a sensory "
           "image.")
"""The demo writer's every rule: it scores 1.0 on every topic."""


def perfect_spec():
    return demo_spec(agent=AgentSpec(name="writer", model="scripted/demo", instruction=PERFECT))


def skipped_events(store, run_id):
    return store.events(run_id, kind=EventKind.ITERATION_SKIPPED)


def test_a_perfect_parent_is_skipped_without_a_reflection(runner, store):
    valset = [{"topic": "paper lantern"}, {"topic": "harbour fog"}]
    run_id, reason = runner.run(perfect_spec(), trainset(4), valset=valset, max_iterations=3,
                                minibatch_size=2, seed=5)
    assert reason == "max_iterations" and load_result(store, run_id).original_score == 1.0
    assert store.proposals(run_id) == []  # no reflection, so no proposal and no child
    skipped = skipped_events(store, run_id)  # two lanes: in the order they settled
    assert sorted(e.iteration for e in skipped) == [1, 2, 3]
    assert {e.payload["cause"] for e in skipped} == {SkipCause.PERFECT_PARENT.value}
    assert "no reflection" in skipped[0].payload["reason"]
    # baseline on the 2 validation examples, then the parent on 3 minibatches of 2 (4 new
    # training examples: the last minibatch is judged already): all count against the budget
    assert store.count_trials(run_id, loop_only=True) == 2 + 4


def test_skipped_iterations_count_as_iterations_without_improvement(runner, store):
    run_id, reason = runner.run(perfect_spec(), trainset(3), max_iterations=10, patience=2,
                                minibatch_size=2, parallel_proposals=1)  # lanes: k-1 more
    assert reason == "patience"
    assert len(skipped_events(store, run_id)) == 2


def test_the_skip_can_be_turned_off(runner, store):
    run_id, _ = runner.run(perfect_spec(), trainset(3), max_iterations=1, minibatch_size=2,
                           skip_perfect_score=False)
    causes = {e.payload["cause"] for e in skipped_events(store, run_id)}
    assert SkipCause.PERFECT_PARENT.value not in causes
    assert store.proposals(run_id)  # reflected on, as before (the demo reflector, with nothing
    # to add, repeats the parent's text, so the memory's retries may end the iteration)


def test_a_perfect_score_below_one_counts_as_perfect(runner, store):
    """``perfect_score`` is the bar: a parent at 0.75 everywhere is skipped at 0.75, not at 1.0."""
    three_rules = "Write a haiku in three lines; include a season word; use a sensory image."
    spec = demo_spec(agent=AgentSpec(name="writer", model="scripted/demo",
                                     instruction=three_rules))
    skipped_run, _ = runner.run(spec, trainset(3), max_iterations=1, minibatch_size=2,
                                perfect_score=0.75)
    reflected_run, _ = runner.run(spec, trainset(3), max_iterations=1, minibatch_size=2)
    assert len(skipped_events(store, skipped_run)) == 1
    assert store.proposals(skipped_run) == []
    assert not skipped_events(store, reflected_run) and store.proposals(reflected_run)


def test_a_project_file_sets_them_and_the_schema_lists_them():
    import json
    from pathlib import Path

    from studio.projects.files import PROJECT_JSON_SCHEMA, parse_project

    text = (Path(__file__).parents[2] / "examples/haiku_scripted.yaml").read_text()
    project = parse_project(text + "  skip_perfect_score: false\n  perfect_score: 0.9\n")
    assert project.run.skip_perfect_score is False and project.run.perfect_score == 0.9
    schema = json.dumps(PROJECT_JSON_SCHEMA)
    assert "skip_perfect_score" in schema and "perfect_score" in schema
