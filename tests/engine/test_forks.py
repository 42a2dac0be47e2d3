"""Forks: a new run seeded with any candidate of another run (single agent and workflow keys),
with another critic, dataset or settings; its origin on the RunSpec; the lineage across runs;
from the library, the CLI and the Compare page. Scripted models through ADK + LiteLLM."""

from __future__ import annotations

import asyncio
import json

import pytest

from studio.cli import main
from studio.engine import EvolutionConfig, build_engine, create_run, fork, load_result
from studio.engine.hosting.worker import get_manager
from studio.model.errors import ConfigError, DatasetError, ProjectFileError, RunStateError
from studio.model.records import CriticSpec, Run, RunSpec, Split
from studio.projects.forking import ancestry, forks_of, parse_settings, start_fork
from studio.store import open_store
from studio.views.lineage import cross_run_lineage
from tests.helpers import BASE_INSTRUCTION, demo_spec, pipeline_spec, trainset, wait_until
from tests.ui.conftest import app, assert_ok, studio_db, texts  # noqa: F401 (fixtures)

VAL = [{"topic": t} for t in ("harbor fog", "desert wind", "paper lantern")]
EXACT = CriticSpec(type="evaluator", name="exact", evaluator={"evaluator": "exact_match"})


def finished(store, spec=None, **config):
    values = {"max_iterations": 4, "seed": 7} | config
    run = create_run(store, spec=spec or demo_spec(), trainset=trainset(5), valset=VAL,
                     config=EvolutionConfig(**values))
    asyncio.run(build_engine(store, run.id).run())
    return run.id


def run_to_end(store, run_id):
    return asyncio.run(build_engine(store, run_id).run())


@pytest.mark.slow
def test_a_fork_starts_from_the_chosen_candidate_and_records_its_origin(store):
    source = finished(store)
    middle = store.candidates(source)[2]
    assert middle.components["instruction"] != BASE_INSTRUCTION
    child = fork(store, source, middle.index, config={"max_iterations": 2})
    origin = child.spec.forked_from
    assert (origin.run_id, origin.candidate_id, origin.candidate_index) == (
        source, middle.id, middle.index)
    assert store.get_run(child.id).spec.forked_from == origin  # stored in the spec's JSON
    assert child.config.max_iterations == 2 and child.config.seed == 7
    assert child.spec.agent.instruction == BASE_INSTRUCTION  # the agent itself is unchanged
    assert run_to_end(store, child.id) == "max_iterations"
    seed = store.candidates(child.id)[0]
    assert seed.components == middle.components and seed.parent_ids == []
    assert [e.data for e in store.examples(child.id, Split.VAL)] == VAL
    source_view, child_result = load_result(store, source), load_result(store, child.id)
    source_mean = next(c.mean_score for c in source_view.candidates if c.id == middle.id)
    assert child_result.original_score == source_mean  # same candidate, same examples, judged
    assert child_result.final_score >= child_result.original_score


def test_a_fork_takes_another_critic_dataset_and_settings(store):
    source = finished(store, max_iterations=1)
    rows = [{"topic": "river stone", "expected": "x"}, {"topic": "winter moon", "expected": "y"}]
    child = fork(store, source, 0, critic=EXACT, trainset=rows, testset=rows[:1],
                 config={"review": "review", "minibatch_size": 1}, name="exact fork")
    assert child.name == "exact fork" and child.spec.critic == EXACT
    assert child.config.review.value == "review" and child.config.minibatch_size == 1
    assert [e.data for e in store.examples(child.id, Split.TRAIN)] == rows
    assert [e.data for e in store.examples(child.id, Split.VAL)] == VAL  # kept from the source
    assert [e.data for e in store.examples(child.id, Split.TEST)] == rows[:1]


@pytest.mark.slow
def test_forking_a_workflow_candidate_keeps_its_qualified_keys(store):
    topics = [{"topic": t} for t in ("autumn leaves", "city rain", "old bridge", "snow owl")]
    run = create_run(store, spec=pipeline_spec(), trainset=topics,
                     config=EvolutionConfig(max_iterations=6, seed=0))
    run_to_end(store, run.id)
    best = load_result(store, run.id)
    chosen = next(c for c in best.candidates if c.id == best.best_candidate_id)
    assert "Rule:" in chosen.components["writer.instruction"]
    child = fork(store, run.id, chosen.index, config={"max_iterations": 1})
    assert set(child.spec.forked_from.components) == {
        "outliner.instruction", "writer.instruction", "polisher.instruction"}
    run_to_end(store, child.id)
    seed = store.candidates(child.id)[0]
    assert seed.components == chosen.components
    assert load_result(store, child.id).original_score == chosen.mean_score


def test_fork_refusals_name_what_is_wrong(store):
    source = finished(store, max_iterations=1)
    with pytest.raises(ConfigError, match=r"has no candidate #9 \(it has #0 to #1\)") as bad:
        fork(store, source, 9)
    assert bad.value.where == "candidate"
    with pytest.raises(ConfigError, match="unknown setting 'max_iteration'") as bad:
        fork(store, source, 0, config={"max_iteration": 3})
    assert bad.value.where == "config.max_iteration"
    with pytest.raises(ConfigError) as bad:
        fork(store, source, 0, config={"max_iterations": -1})
    assert bad.value.where == "config.max_iterations"
    with pytest.raises(DatasetError, match="trainset rows|valset rows"):
        fork(store, source, 0, trainset=[{"theme": "x"}])
    with pytest.raises(ConfigError, match="is not key=value"):
        parse_settings(["max_iterations"])
    assert parse_settings(["max_iterations=5", "review=review", "patience=null"]) == {
        "max_iterations": 5, "review": "review", "patience": None}


@pytest.mark.slow
def test_the_lineage_spans_the_runs_a_fork_came_from(store):
    first = finished(store)
    picked = store.candidates(first)[2]
    second = fork(store, first, picked.index, config={"max_iterations": 2}).id
    run_to_end(store, second)
    third = fork(store, second, 1, config={"max_iterations": 1}).id
    run_to_end(store, third)
    chain = ancestry(store, third)
    assert [tree.run.id for tree in chain] == [first, second, third]
    lineage = cross_run_lineage(chain)
    nodes = lineage.nodes.set_index("id")
    path_first = [c.id for c in store.candidates(first) if c.id in nodes.index]
    assert path_first[0] == store.candidates(first)[0].id and path_first[-1] == picked.id
    assert (picked.id, store.candidates(second)[0].id) in lineage.edges  # the fork edge
    forked_in_second = store.candidates(second)[1]
    assert (forked_in_second.id, store.candidates(third)[0].id) in lineage.edges
    assert set(nodes[nodes["here"]]["run_id"]) == {third}
    assert nodes.loc[store.candidates(third)[0].id, "x"] > nodes.loc[picked.id, "x"]
    assert list(lineage.path["step"]).count("forked") == 2
    assert [r.id for r in forks_of(store, first)] == [second]
    assert cross_run_lineage(ancestry(store, first)).forked is False


# --------------------------------------------------------------------------- CLI


@pytest.mark.slow
def test_studio_fork_runs_a_fork_from_the_command_line(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/cli.db"
    project = tmp_path / "p.yaml"
    project.write_text("""
name: haiku
agent: {name: writer, model: scripted/demo, instruction: Write a haiku about the given topic.}
critic: {type: agent, name: rule_critic, schema: advanced, model: scripted/demo}
reflection: {model: scripted/demo}
dataset: {train: [{topic: autumn leaves}, {topic: city rain}, {topic: old bridge}]}
run: {max_iterations: 3, seed: 7}
""")
    assert main(["--db", db, "run", str(project)]) == 0
    source = json.loads(capsys.readouterr().out)["run_id"]
    (tmp_path / "train.csv").write_text("topic\nriver stone\nwinter moon\n")
    assert main(["--db", db, "fork", source, "--candidate", "1", "--config",
                 "max_iterations=1", "--config", "seed=3", "--dataset",
                 str(tmp_path / "train.csv")]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert f"forked from run {source} candidate #1" in err and summary["status"] == "completed"
    from studio.store import open_store

    store = open_store(db, cached=False)
    child = store.get_run(summary["run_id"])
    assert child.spec.forked_from.candidate_index == 1 and child.config.seed == 3
    assert [e.data["topic"] for e in store.examples(child.id, Split.TRAIN)] == [
        "river stone", "winter moon"]
    assert store.candidates(child.id)[0].components == store.candidates(source)[1].components

    critic = tmp_path / "critic.yaml"
    critic.write_text("critic: {type: evaluator, name: exact, evaluator: {evaluator: "
                      "exact_match}}\n")
    assert main(["--db", db, "fork", source, "--candidate", "0", "--critic", str(critic),
                 "--queue", "later"]) == 0
    queued = store.get_run(capsys.readouterr().out.strip())
    assert queued.status.value == "queued" and queued.spec.critic.type == "evaluator"

    assert main(["--db", db, "fork", source, "--candidate", "7"]) == 2
    assert "has no candidate #7" in capsys.readouterr().err
    assert main(["--db", db, "fork", source, "--candidate", "0", "--critic",
                 "{type: evaluator, evaluator: {evaluator: no_such}}"]) == 2
    assert "--critic" in capsys.readouterr().err
    assert main(["--db", db, "fork", source, "--candidate", "0", "--config", "colour=red"]) == 2
    assert "unknown setting 'colour'" in capsys.readouterr().err
    store.close()


# --------------------------------------------------------------------------- browser origin


def test_a_fork_from_the_browser_uses_only_what_the_run_has(store):
    source = finished(store, max_iterations=1)
    child = start_fork(store, source, 1, settings={"max_iterations": 1},
                       critic_yaml="{type: evaluator, name: season, evaluator: {evaluator: "
                                   "regex_match, params: {pattern: 'autumn|winter'}}}")
    assert child.spec.critic.evaluator["evaluator"] == "regex_match"
    assert get_manager(store).handle(child.id).wait(30) == "max_iterations"
    with pytest.raises(ProjectFileError, match="YAML does not parse|must be a YAML mapping"):
        start_fork(store, source, 0, critic_yaml="[not, a, mapping]")
    python_run = create_run(store, spec=demo_spec(resumable=False), trainset=trainset(2))
    with pytest.raises(RunStateError, match="started from Python objects"):
        start_fork(store, python_run.id, 0)


def test_a_fork_of_a_run_that_loads_code_needs_the_servers_opt_in(store):
    run = store.create_run(Run(id="withref", spec=RunSpec(agent_ref="os:abort")))
    with pytest.raises(ProjectFileError, match=f"run {run.id}: agent.ref"):
        start_fork(store, run.id, 0)
    assert forks_of(store, run.id) == []


# --------------------------------------------------------------------------- the Compare page


@pytest.mark.slow
def test_compare_forks_a_candidate_and_shows_the_lineage_across_runs(app, studio_db):  # noqa: F811
    source = finished(studio_db, max_iterations=3)
    at = app("compare", run_id=source)
    assert "Forks" in texts(at.subheader)
    key = f"compare.fork.{source}"
    at.selectbox(key=f"{key}.candidate").set_value(2)
    at.number_input(key=f"{key}.iterations").set_value(1)
    next(b for b in at.button if b.label == "Start fork").click().run()
    assert_ok(at)
    child = wait_until(lambda: forks_of(studio_db, source))[0]
    assert child.spec.forked_from.candidate_index == 2 and child.config.max_iterations == 1
    assert any(f"Fork run {child.id} started from candidate #2" in s for s in texts(at.success))
    get_manager(studio_db).handle(child.id).wait(30)
    next(b for b in at.button if b.label == f"Open the fork {child.id}").click().run()
    assert_ok(at)
    assert at.session_state["app.run_id"] == child.id
    path = next(d.value for d in at.dataframe if "step" in d.value.columns)
    assert list(path["step"])[-1] == "forked" and list(path["candidate"])[-1] == "#2"
    assert any("Lineage across runs" in s for s in texts(at.caption))


def test_compare_shows_a_fork_error_next_to_the_form(app, studio_db):  # noqa: F811
    source = finished(studio_db, max_iterations=0)
    at = app("compare", run_id=source)
    at.text_area(key=f"compare.fork.{source}.critic").set_value("{type: nope}")
    next(b for b in at.button if b.label == "Start fork").click().run()
    assert_ok(at)
    assert any("critic" in s for s in texts(at.error))
    assert forks_of(studio_db, source) == []


def test_a_fork_checks_its_seeds_placeholders_against_its_dataset(store, tmp_path, capsys):
    spec = demo_spec(components=["instruction"])
    spec = spec.model_copy(update={"agent": spec.agent.model_copy(
        update={"instruction": "Write a haiku about {topic}."})})
    source = finished(store, spec=spec, max_iterations=0)
    with pytest.raises(ConfigError, match=r"uses \{topic\}") as bad:
        fork(store, source, 0, trainset=[{"theme": "river"}], valset=[{"theme": "moon"}])
    assert bad.value.where == "agent.instruction"
    assert len(store.list_runs()) == 1  # nothing stored
    rows = tmp_path / "rows.yaml"
    rows.write_text("dataset:\n  train: [{theme: river}]\n  val: [{theme: moon}]\n")
    db = f"sqlite:///{tmp_path}/fork.db"
    cli_source = finished(open_store(db), spec=spec, max_iterations=0)
    assert main(["--db", db, "fork", cli_source, "--candidate", "0", "--dataset",
                 str(rows)]) == 2
    assert "uses {topic}" in capsys.readouterr().err
