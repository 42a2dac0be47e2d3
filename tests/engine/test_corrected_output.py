"""A corrected output (what the answer should have been) is kept with the correction, read by
the next reflection beside the person's score, and exported."""

from __future__ import annotations

import json

import pytest

from studio.engine import override
from studio.engine.propose.proposer import reflection_trials
from studio.model.errors import ConfigError
from studio.model.records import TrialPhase
from studio.projects.export import export_run
from studio.runtime.providers.scripted import recorded_requests
from tests.helpers import demo_spec, trainset, wait_until

CORRECTED = "Harbor fog at dawn:\nthe cranes fade, one by one."


@pytest.mark.slow
def test_a_corrected_output_made_while_the_minibatch_scores_reaches_the_reflection(runner,
                                                                                   store):
    spec = demo_spec("scripted/demo@200ms").model_copy(deep=True)
    spec.reflection.model = "scripted/demo"
    run_id, handle = runner.start(spec, trainset(3), valset=[{"topic": "harbor fog"}],
                                  max_iterations=1, max_concurrency=1, minibatch_size=3)
    first = wait_until(lambda: store.trials(run_id, phase=TrialPhase.PARENT),
                       message="the first trial of the minibatch is stored")[0]
    override(first.id, score=0.1, corrected_output=CORRECTED, author="ana", store=store)
    handle.wait(30)
    prompts = [r.prompt_text for r in recorded_requests("demo")
               if "## Component Text to Improve" in r.prompt_text and first.output in r.prompt_text]
    assert prompts and json.dumps(CORRECTED)[1:-1] in prompts[-1]
    assert '"corrected_output"' in prompts[-1] and '"score": 0.1' in prompts[-1]


def test_a_corrected_output_alone_is_a_correction_and_is_exported(runner, store, tmp_path):
    run_id, _ = runner.run(demo_spec(), trainset(2), max_iterations=1)
    trial = store.trials(run_id)[0]
    record = override(trial.id, corrected_output=f"  {CORRECTED}\n", author="bo", store=store)
    assert record.corrected_output == CORRECTED and record.score is None
    stored = store.get_trial(trial.id)
    assert stored.effective_score == trial.score  # the judge's score still applies
    assert reflection_trials([stored], [])[0]["feedback"]["corrected_output"] == CORRECTED
    later = override(trial.id, score=0.3, author="bo", store=store)  # kept by a later score
    assert store.get_trial(trial.id).override.corrected_output == CORRECTED and later.id
    [path] = export_run(store, run_id, "jsonl", tmp_path / "out.jsonl")
    rows = [row for row in map(json.loads, path.read_text().splitlines())
            if row["type"] == "trial"]
    row = next(r for r in rows if r["trial_id"] == trial.id)
    assert row["corrected_output"] == CORRECTED and row["effective_score"] == 0.3
    assert all(r["corrected_output"] is None for r in rows if r["trial_id"] != trial.id)


def test_an_empty_corrected_output_alone_is_refused(runner, store):
    run_id, _ = runner.run(demo_spec(), trainset(2), max_iterations=1)
    trial = store.trials(run_id)[0]
    try:
        override(trial.id, corrected_output="  ", store=store)
    except ConfigError as exc:
        assert "corrected output" in str(exc) and exc.where == "override"
    else:
        raise AssertionError("an empty correction was stored")



def test_studio_override_takes_a_corrected_output(runner, store, capsys):
    from studio.cli import main

    run_id, _ = runner.run(demo_spec(), trainset(2), max_iterations=1)
    trial = store.trials(run_id)[0]
    assert main(["--db", store.url, "override", str(trial.id),
                 "--corrected-output", CORRECTED, "--author", "cy"]) == 0
    assert f"trial {trial.id}" in capsys.readouterr().out
    [record] = store.overrides(run_id)
    assert record.corrected_output == CORRECTED and record.author == "cy"
