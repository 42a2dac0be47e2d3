"""The overfitting guard: a held-out test set the loop never sees, scored for the baseline and the
best candidate when a run completes and on demand (library, CLI, Compare page), and a verdict
that says whether the validation gain carries to it. Scripted models through ADK + LiteLLM."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import pytest

from studio.cli import main
from studio.engine import (
    EvolutionConfig,
    build_engine,
    create_run,
    decide,
    load_result,
    override,
)
from studio.engine.hosting.api import score_test_set, start_test_scoring
from studio.engine.hosting.worker import get_manager
from studio.engine.run.events import TrialCommitted
from studio.engine.scoring.guard import (
    Gain,
    GuardStatus,
    gain_shrink,
    guard_verdict,
    paired_gain,
    t_quantile,
)
from studio.engine.scoring.holdout import load_holdout
from studio.model.errors import DatasetError, RunStateError, ScoringError
from studio.model.records import CriticSpec, EventKind, RunStatus, Split, TrialPhase
from studio.projects.export import export_run
from studio.projects.files import check_project_datasets, create_project_run, parse_project
from studio.projects.workspace import check_browser_project
from studio.runtime.providers.scripted import recorded_requests, request_mark
from tests.helpers import demo_spec, trainset, wait_until
from tests.ui.conftest import app, assert_ok, studio_db, texts  # noqa: F401 (fixtures)

VAL = [{"topic": t} for t in ("harbor fog", "desert wind", "paper lantern")]
TEST = [{"topic": t} for t in ("river stone", "winter moon", "garden gate", "temple bell")]
TEST_TOPICS = [row["topic"] for row in TEST]


def run_demo(store, *, listeners=None, **config):
    values = {"max_iterations": 4, "seed": 7} | config
    run = create_run(store, spec=demo_spec(), trainset=trainset(5), valset=VAL, testset=TEST,
                     config=EvolutionConfig(**values))
    return run.id, asyncio.run(build_engine(store, run.id, listeners=listeners).run())


def pairs(store, run_id):
    return Counter((t.candidate_id, t.example_id) for t in store.trials(run_id, with_trace=False))


# --------------------------------------------------------------------------- the loop never sees it


@pytest.mark.slow
def test_the_loop_never_sees_the_test_set_and_a_completed_run_scores_baseline_and_best(store):
    before = request_mark()
    run_id, reason = run_demo(store)
    assert reason == "max_iterations"
    test_ids = {e.id for e in store.examples(run_id, Split.TEST)}
    trials = store.trials(run_id, with_trace=False)
    loop = [t for t in trials if t.phase is not TrialPhase.TEST]
    assert loop and not [t for t in loop if t.example_id in test_ids]
    prompts = [r.prompt_text for r in recorded_requests("demo", since=before)
               if "## Component Text to Improve" in r.prompt_text]
    assert prompts and not [p for p in prompts if any(topic in p for topic in TEST_TOPICS)]

    result = load_result(store, run_id)
    tested = [t for t in trials if t.phase is TrialPhase.TEST]
    assert {t.example_id for t in tested} == test_ids and {t.split for t in tested} == {
        Split.TEST}
    seed = store.candidates(run_id)[0].id
    assert {t.candidate_id for t in tested} == {seed, result.best_candidate_id}
    assert result.metric_calls == len(loop) and store.count_trials(run_id) == len(trials)
    guard = result.test
    assert guard["test"]["baseline"] == 0.0 and guard["test"]["best"] == 1.0
    assert guard["verdict"]["status"] == "carries" and guard["test_gain"]["n"] == 4
    assert [e.kind.value for e in store.events(run_id)][-2:] == ["test_scored", "run_finished"]


def test_budget_and_time_limits_do_not_block_the_test_set(store):
    run_id, reason = run_demo(store, max_metric_calls=20)
    assert reason == "max_metric_calls"
    assert store.count_trials(run_id, loop_only=True) <= 20
    assert len(store.trials(run_id, phase="test")) >= len(TEST)
    assert load_result(store, run_id).metric_calls <= 20


# --------------------------------------------------------------------------- the verdict


def memorizer(script):
    """A world that overfits: the writer answers "yes" only for topics its instruction names,
    and the reflection adds the topics of the trials it reads. Validating on the training set,
    the best instruction knows every training topic and none of the test topics."""
    def reply(request):
        if "## Component Text to Improve" in request.prompt_text:
            component, trials = request.prompt_text.split("## Component Text to Improve", 1)[
                1].split("## Trials", 1)
            topics = sorted(set(re.findall(r"topic: ([a-z][a-z ]*[a-z])", trials)))
            new = [t for t in topics if t not in component]
            return component.strip() + ("\nKnown: " + ", ".join(new) if new else "")
        topic = request.last_user.removeprefix("topic: ").strip()
        return "yes" if topic in request.system else "no"

    return script(reply)


def test_overfitting_is_warned_when_the_validation_gain_does_not_carry(store, script):
    model = memorizer(script)
    spec = demo_spec(model).model_copy(update={"critic": CriticSpec(
        type="evaluator", name="exact", evaluator={"evaluator": "exact_match"})})
    rows = [{"topic": t, "expected": "yes"} for t in ("city rain", "old bridge", "snow owl",
                                                       "morning coffee")]
    tests = [{"topic": t, "expected": "yes"} for t in TEST_TOPICS]
    run = create_run(store, spec=spec, trainset=rows, testset=tests,
                     config=EvolutionConfig(max_iterations=4, minibatch_size=2, seed=1,
                                            parallel_proposals=1))  # each child builds on the last
    asyncio.run(build_engine(store, run.id).run())
    report = load_holdout(store, run.id)
    assert report.val.baseline == 0.0 and report.val.best == 1.0
    assert report.test.best == 0.0 and report.test_gain.low == report.test_gain.high == 0.0
    assert report.verdict.status is GuardStatus.WARN
    assert "includes 0" in report.verdict.message and "does not carry" in report.verdict.message


def test_t_quantiles_and_paired_intervals():
    for df, expected in ((1, 12.7062), (2, 4.3027), (5, 2.5706), (10, 2.2281), (30, 2.0423)):
        assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    gain = paired_gain({1: 0.0, 2: 0.5, 3: None, 4: 0.2}, {1: 0.5, 2: 1.0, 3: 1.0, 4: 0.2})
    assert gain.n == 3 and gain.mean == pytest.approx(1 / 3)  # the None pair is left out
    half = t_quantile(0.975, 2) * gain.sd / 3 ** 0.5
    assert (gain.low, gain.high) == pytest.approx((1 / 3 - half, 1.0))  # clipped to [-1, 1]
    assert 1 / 3 + half > 1
    assert paired_gain({1: 0.1}, {1: 0.4}).low is None


def test_each_verdict_and_its_reason():
    val = Gain(20, 0.30, 0.05, 0.28, 0.32)
    carries = guard_verdict(val, Gain(20, 0.29, 0.05, 0.27, 0.31))
    assert carries.status is GuardStatus.CARRIES
    zero = guard_verdict(val, Gain(20, 0.05, 0.2, -0.04, 0.14))
    assert zero.status is GuardStatus.WARN and "includes 0" in zero.message
    shrank = guard_verdict(val, Gain(20, 0.10, 0.05, 0.08, 0.12))
    assert shrank.status is GuardStatus.WARN and "below the validation gain by 0.200" in \
        shrank.message and "includes 0" not in shrank.message
    assert gain_shrink(val, Gain(20, 0.10, 0.05, 0.08, 0.12)).low > 0
    assert guard_verdict(Gain(3, 0.0, 0.0, 0.0, 0.0), val).status is GuardStatus.NO_GAIN
    assert guard_verdict(val, Gain(1, 0.2, None, None, None)).status is GuardStatus.TOO_FEW
    assert guard_verdict(val, Gain(0, None, None, None, None)).status is GuardStatus.NOT_SCORED
    assert guard_verdict(val, val, has_test_set=False).status is GuardStatus.NO_TEST_SET


# --------------------------------------------------------------------------- on demand, resume


def stopped_review_run(store):
    """A review-mode run a person stopped at its first gate: no test scores yet."""
    run = create_run(store, spec=demo_spec(), trainset=trainset(5), valset=VAL, testset=TEST,
                     config=EvolutionConfig(max_iterations=3, review="review", seed=7))
    handle = get_manager(store).start(build_engine(store, run.id))
    proposal = wait_until(lambda: next(iter(store.proposals(run.id, status="pending")), None))
    decide(proposal.id, "stop", author="ana", store=store)
    assert handle.wait(30) == "user"
    return run.id


@pytest.mark.slow
def test_a_stopped_run_is_scored_on_demand_and_never_twice(store):
    run_id = stopped_review_run(store)
    assert store.trials(run_id, phase="test") == []
    assert load_holdout(store, run_id).verdict.status is GuardStatus.NOT_SCORED
    report = asyncio.run(score_test_set(store, run_id))
    assert report.test.baseline_n == len(TEST) and report.verdict.status is GuardStatus.NO_GAIN
    run = store.get_run(run_id)
    assert run.status is RunStatus.STOPPED and run.stop_reason == "user" and run.worker is None
    before = store.count_trials(run_id)
    asyncio.run(score_test_set(store, run_id))
    assert store.count_trials(run_id) == before and max(pairs(store, run_id).values()) == 1


@pytest.mark.slow
def test_a_correction_that_changes_the_best_asks_for_its_test_scores(store):
    run_id, _ = run_demo(store)
    best = load_result(store, run_id).best_candidate_id
    for trial in store.trials(run_id, candidate_id=best, phase="valset"):
        override(trial.id, score=0.0, author="ana", store=store)
    report = load_holdout(store, run_id)
    assert report.best_index != store.get_candidate(best).index
    assert report.verdict.status is GuardStatus.NOT_SCORED
    report = asyncio.run(score_test_set(store, run_id))
    assert report.test.best_n == len(TEST) and report.verdict.status is GuardStatus.CARRIES
    assert max(pairs(store, run_id).values()) == 1


@pytest.mark.slow
def test_resuming_after_a_kill_during_test_scoring_judges_no_pair_twice(store):
    handles = []

    def cancel_on_first_test_trial(event):
        if isinstance(event, TrialCommitted) and \
                store.get_trial(event.trial_id).phase is TrialPhase.TEST and handles:
            handles.pop().cancel()

    run = create_run(store, spec=demo_spec("scripted/demo@30ms"), trainset=trainset(5),
                     valset=VAL, testset=TEST, config=EvolutionConfig(max_iterations=2, seed=7,
                                                                      max_concurrency=1))
    handle = get_manager(store).start(build_engine(store, run.id,
                                                   listeners=[cancel_on_first_test_trial]))
    handles.append(handle)
    with pytest.raises(BaseException):  # noqa: B017 (cancelled: the process "died")
        handle.wait(60)
    stopped = store.get_run(run.id)
    assert stopped.status is RunStatus.STOPPED and stopped.stop_reason == "shutdown"
    partial = len(store.trials(run.id, phase="test"))
    assert 1 <= partial < 2 * len(TEST)
    assert get_manager(store).resume(run.id).wait(60) == "max_iterations"
    assert max(pairs(store, run.id).values()) == 1
    assert load_result(store, run.id).test["test"]["best_n"] == len(TEST)


def test_refusals_say_why(store):
    run = create_run(store, spec=demo_spec(), trainset=trainset(3),
                     config=EvolutionConfig(max_iterations=0))
    asyncio.run(build_engine(store, run.id).run())
    with pytest.raises(RunStateError, match="has no test set"):
        start_test_scoring(store, run.id)
    with pytest.raises(DatasetError, match=r"testset rows must have the same fields") as bad:
        create_run(store, spec=demo_spec(), trainset=trainset(3), testset=[{"theme": "x"}])
    assert bad.value.where == "testset[0]"


# --------------------------------------------------------------------------- projects, CLI, export

PROJECT = """
name: guarded
agent: {name: writer, model: scripted/demo, instruction: Write a haiku about the given topic.}
critic: {type: agent, name: rule_critic, schema: advanced, model: scripted/demo}
reflection: {model: scripted/demo}
dataset:
  train: [{topic: autumn leaves}, {topic: morning coffee}, {topic: city rain}]
  val: [{topic: harbor fog}, {topic: desert wind}]
  test: {path: test.csv}
run: {max_iterations: 3, seed: 7}
"""


def test_a_project_file_takes_a_test_set_and_the_cli_scores_and_exports_it(tmp_path, capsys):
    project = tmp_path / "guarded.yaml"
    project.write_text(PROJECT)
    (tmp_path / "test.csv").write_text("topic\n" + "\n".join(TEST_TOPICS) + "\n")
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["validate", str(project)]) == 0
    assert "3 training rows, 2 validation rows, 4 test rows" in capsys.readouterr().out
    assert main(["--db", db, "run", str(project), "--review", "review", "--max-iterations",
                 "0"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["--db", db, "test", run_id]) == 0  # completed runs were scored: reused
    out = capsys.readouterr().out
    assert re.search(r"test\s+0\.\d{3}\s+0\.\d{3}\s+\(n=4/4\)", out)
    assert "NO_GAIN: the best candidate does not beat the baseline" in out
    assert main(["--db", db, "trials", run_id, "--phase", "test", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 4

    assert main(["--db", db, "export", run_id, "--out", str(tmp_path / "run.jsonl")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    guard = next(line for line in lines if line["type"] == "test_guard")
    assert guard["verdict"]["status"] == "no_gain" and guard["test_size"] == 4
    assert sum(line.get("phase") == "test" for line in lines) == 4
    assert next(line for line in lines if line["type"] == "candidate")["test_mean"] is not None
    assert main(["--db", db, "test", "nope"]) == 2
    assert "run 'nope' does not exist" in capsys.readouterr().err


def test_project_test_sets_follow_the_dataset_rules(tmp_path, store):
    project = parse_project(PROJECT.replace("{path: test.csv}", "[{topic: river stone}]"))
    sets = check_project_datasets(project, tmp_path, source="p.yaml")
    assert sets.test == [{"topic": "river stone"}]
    run = create_project_run(store, project, tmp_path)
    assert [e.data for e in store.examples(run.id, Split.TEST)] == [{"topic": "river stone"}]
    with pytest.raises(DatasetError, match="cannot read files on the server"):
        check_browser_project(parse_project(PROJECT), "upload.yaml")
    bad = parse_project(PROJECT.replace("{path: test.csv}", "[{theme: river stone}]"))
    with pytest.raises(DatasetError, match="testset rows must have the same fields"):
        check_project_datasets(bad, tmp_path, source="p.yaml")


def test_export_csv_has_the_test_means(store, tmp_path):
    run_id, _ = run_demo(store, max_iterations=2)
    candidates, trials, *_provenance = export_run(store, run_id, "csv", tmp_path / "run")
    text = candidates.read_text()
    assert text.splitlines()[0].split(",")[5] == "test_mean"
    assert ",test," in trials.read_text()


# --------------------------------------------------------------------------- the Compare page


@pytest.mark.slow
def test_compare_shows_the_guard_and_scores_a_stopped_run_on_demand(app, studio_db):  # noqa: F811
    run_id = stopped_review_run(studio_db)
    at = app("compare", run_id=run_id)
    assert "Train / validation / test" in texts(at.subheader)
    assert any("not both scored on the test set" in s for s in texts(at.info))
    assert any("Welch" in s for s in texts(at.caption))
    button = next(b for b in at.button if b.label == "Score on the test set")
    button.click().run()
    assert_ok(at)
    wait_until(lambda: len(studio_db.trials(run_id, phase="test")) == len(TEST)
               and studio_db.get_run(run_id).worker is None, timeout=60)
    at.run()
    assert_ok(at)
    table = next(d.value for d in at.dataframe if "split" in d.value.columns)
    assert list(table["split"]) == ["train", "validation", "test"]
    assert table.loc[2, "pairs"] == len(TEST)
    assert any("does not beat the baseline on validation" in s for s in texts(at.info))


def test_compare_says_when_a_run_has_no_test_set(app, studio_db):  # noqa: F811
    run = create_run(studio_db, spec=demo_spec(), trainset=trainset(3),
                     config=EvolutionConfig(max_iterations=0))
    asyncio.run(build_engine(studio_db, run.id).run())
    at = app("compare", run_id=run.id)
    assert any("no test set" in s for s in texts(at.caption))
    assert not [b for b in at.button if b.label.startswith("Score")]


@pytest.mark.slow
def test_the_guard_and_a_fork_on_each_database(database_url):
    from studio.engine import fork
    from studio.store import open_store

    store = open_store(database_url, cached=False)
    try:
        run_id, _ = run_demo(store, max_iterations=2)
        assert load_holdout(store, run_id).test.best_n == len(TEST)
        child = fork(store, run_id, 1, config={"max_iterations": 0})
        asyncio.run(build_engine(store, child.id).run())
        assert store.candidates(child.id)[0].components == store.candidates(run_id)[1].components
        assert load_result(store, child.id).test["test"]["baseline_n"] == len(TEST)
        assert store.count_trials(child.id, loop_only=True) == len(VAL)
    finally:
        store.close()


# ----------------------------------------------------------------- test scoring fails or stops


def critic_failing_on_test_topics(script, failing):
    """The demo world, but the critic replies in no JSON for test topics while ``failing``."""
    from studio.runtime.providers.demo import reply as demo

    def reply(request):
        if request.json_schema and failing and any(t in request.prompt_text for t in TEST_TOPICS):
            return "I refuse to give JSON"
        return demo(request)

    return script(reply)


@pytest.mark.slow
def test_a_failing_test_set_leaves_the_evolution_completed_and_studio_test_retries(
        store, script):
    failing = [True]
    model = critic_failing_on_test_topics(script, failing)
    run = create_run(store, spec=demo_spec(model), trainset=trainset(5), valset=VAL,
                     testset=TEST, config=EvolutionConfig(max_iterations=2, seed=7))
    assert asyncio.run(build_engine(store, run.id).run()) == "max_iterations"
    settled = store.get_run(run.id)
    assert settled.status is RunStatus.COMPLETED and settled.stop_reason == "max_iterations"
    assert settled.error is None
    unscored = store.latest_event(run.id, EventKind.TEST_UNSCORED)
    assert unscored.payload["reason"] == "error" and "not JSON" in unscored.payload["message"]
    assert "studio test" in unscored.payload["message"]
    assert store.trials(run.id, phase="test") == []  # nothing unevaluable kept: retry judges them
    assert load_holdout(store, run.id).verdict.status is GuardStatus.NOT_SCORED

    with pytest.raises(ScoringError, match="8 of 8 test pairs got no score"):
        asyncio.run(score_test_set(store, run.id))
    failing.clear()
    report = asyncio.run(score_test_set(store, run.id))
    assert report.test.baseline_n == report.test.best_n == len(TEST)
    assert max(pairs(store, run.id).values()) == 1
    assert store.get_run(run.id).status is RunStatus.COMPLETED


@pytest.mark.slow
def test_a_stop_during_test_scoring_is_prompt_and_leaves_the_run_settled(store):
    stopped = []

    def stop_on_first_test_trial(event):
        if isinstance(event, TrialCommitted) and not stopped and \
                store.get_trial(event.trial_id).phase is TrialPhase.TEST:
            stopped.append(event.trial_id)
            get_manager(store).stop(run.id)  # what the Stop button and `studio stop` do

    run = create_run(store, spec=demo_spec("scripted/demo@100ms"), trainset=trainset(5),
                     valset=VAL, testset=TEST, config=EvolutionConfig(max_iterations=2, seed=7,
                                                                      max_concurrency=1))
    handle = get_manager(store).start(build_engine(store, run.id,
                                                   listeners=[stop_on_first_test_trial]))
    assert handle.wait(60) == "max_iterations"
    settled = store.get_run(run.id)
    assert settled.status is RunStatus.COMPLETED and settled.stop_reason == "max_iterations"
    assert settled.control is None and settled.worker is None
    assert len(store.trials(run.id, phase="test")) == 1  # the chain in flight was cancelled
    unscored = store.latest_event(run.id, EventKind.TEST_UNSCORED)
    assert unscored.payload["reason"] == "user" and "studio test" in unscored.payload["message"]
    report = asyncio.run(score_test_set(store, run.id))
    assert report.test.baseline_n == report.test.best_n == len(TEST)
    assert max(pairs(store, run.id).values()) == 1


@pytest.mark.slow
def test_compare_and_run_pages_say_the_test_set_failed_until_it_is_scored(
        app, studio_db, script):  # noqa: F811
    failing = [True]
    run = create_run(studio_db, spec=demo_spec(critic_failing_on_test_topics(script, failing)),
                     trainset=trainset(3), valset=VAL, testset=TEST,
                     config=EvolutionConfig(max_iterations=0))
    asyncio.run(build_engine(studio_db, run.id).run())
    for page in ("compare", "run"):
        at = app(page, run_id=run.id)
        assert any("got no score" in s and "studio test" in s for s in texts(at.warning)), page
    failing.clear()
    asyncio.run(score_test_set(studio_db, run.id))
    at = app("compare", run_id=run.id)
    assert not [s for s in texts(at.warning) if "got no score" in s]


@pytest.mark.slow
def test_the_run_page_counts_the_loops_metric_calls_not_the_test_trials(
        app, studio_db):  # noqa: F811
    run_id, _ = run_demo(studio_db, max_iterations=2, max_metric_calls=20)
    loop = studio_db.count_trials(run_id, loop_only=True)
    tested = len(studio_db.trials(run_id, phase="test"))
    assert tested and loop <= 20
    at = app("run", run_id=run_id)
    assert_ok(at)
    text = next(p.proto.text for p in at.get("progress"))
    assert f"metric calls {loop} of 20" in text
    assert f"{tested} test-set trials (outside the budget)" in text
