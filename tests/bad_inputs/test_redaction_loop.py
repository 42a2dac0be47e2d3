"""Redaction hides secrets where people see them and in exports; it never rewrites text the loop
reads (trials, proposals and dataset rows are stored raw). An environment value too short or too
common to be a secret (a phrase, a word, a number) is left alone everywhere; a dataset row is read
by the agent as given, and hidden where it is shown and exported."""

from __future__ import annotations

import asyncio
import json

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec
from studio.model.redaction import redact, secret_values
from studio.projects.export import export_run
from studio.views.markdown import escape_markdown
from studio.views.tables import evidence_frame, example_label, review_frame, trial_frame
from tests.helpers import BASE_INSTRUCTION, demo_spec, trainset

SECRET = "Zq8-kLm2pW7x-Hd4"


def one_iteration(store, script, *, feedback: str, rows=None) -> tuple[str, str, str]:
    """A run of one iteration whose critic says ``feedback``: (run id, agent, reflector)."""
    agent = script(lambda request: "a haiku")
    critic = script(lambda request: json.dumps({"score": 0.5, "feedback": feedback}))
    reflector = script(lambda request: BASE_INSTRUCTION + " Use three lines.")
    spec = demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model=agent, instruction=BASE_INSTRUCTION),
        "critic": CriticSpec(name="critic", agent=AgentSpec(name="critic", model=critic)),
        "reflection": ReflectionSpec(model=reflector)})
    run_id = create_run(store, spec=spec, trainset=rows or trainset(3), config=EvolutionConfig(
        max_iterations=1, minibatch_size=3, skip_perfect_score=False)).id
    asyncio.run(build_engine(store, run_id).run())
    return run_id, agent, reflector


@pytest.mark.parametrize("value", ["three lines", "password", "12345678", "aaaaaaaaaa",
                                   "localhost", "abcabcabc", "short"])
def test_a_value_too_common_to_be_a_secret_is_never_redacted(monkeypatch, value):
    monkeypatch.setenv("ADMIN_PASSWORD", value)
    assert value not in secret_values()
    assert redact(f"write {value} please") == f"write {value} please"


def test_the_reflection_reads_the_critic_s_feedback_as_written(store, script, monkeypatch):
    monkeypatch.setenv("ADMIN_PASSWORD", "three lines")
    run_id, _, reflector = one_iteration(store, script, feedback="Use three lines, not two.")
    prompt = script.requests(reflector)[0].prompt_text
    assert "Use three lines, not two." in prompt and "***" not in prompt
    assert all(t.feedback_text == "Use three lines, not two." for t in store.trials(run_id))


def test_a_real_secret_is_stored_raw_for_the_loop_and_hidden_where_shown_and_exported(
        store, script, monkeypatch, tmp_path):
    monkeypatch.setenv("ADMIN_PASSWORD", SECRET)
    run_id, _, reflector = one_iteration(store, script, feedback=f"the password is {SECRET}")
    assert SECRET in script.requests(reflector)[0].prompt_text  # reflection reads it as written
    trials = store.trials(run_id)
    assert all(t.feedback_text == f"the password is {SECRET}" for t in trials)  # stored raw
    frame = trial_frame(trials, {}).to_csv()
    assert SECRET not in frame and "the password is ***" in frame
    assert escape_markdown(trials[0].feedback_text) == escape_markdown("the password is ***")
    for fmt in ("jsonl", "csv"):
        for path in export_run(store, run_id, fmt, tmp_path / fmt):
            assert SECRET not in path.read_text()


def test_a_secret_in_a_dataset_row_reaches_the_agent_and_is_hidden_where_shown(
        store, script, monkeypatch, tmp_path):
    monkeypatch.setenv("ADMIN_PASSWORD", SECRET)
    rows = [{"topic": f"the door code {SECRET}"}, {"topic": "city rain"}, {"topic": "owls"}]
    run_id, agent, _ = one_iteration(store, script, feedback="fine", rows=rows)
    assert any(SECRET in r.prompt_text for r in script.requests(agent))  # read as given
    example = store.examples(run_id)[0]
    assert example.data["topic"].endswith(SECRET)  # stored as given: the loop reads it
    assert SECRET not in example_label(example) and "***" in example_label(example)
    trials = store.trials(run_id)
    assert any(SECRET in t.input_text for t in trials)  # stored as the agent read it
    shown = review_frame(trials, {}).to_csv() + evidence_frame(trials, trials).to_csv()
    assert SECRET not in shown and "***" in shown
    for fmt in ("jsonl", "csv"):
        for path in export_run(store, run_id, fmt, tmp_path / fmt):
            assert SECRET not in path.read_text()
