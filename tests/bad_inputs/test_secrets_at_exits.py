"""Secrets are stored raw where the loop reads them and redacted at every exit.

A real, high-entropy secret from the environment that a model echoes in its outputs, its
feedback and its proposal, and that a person writes into a correction, is kept as written in the
store (trials, proposals, overrides): reflection, including that of a resumed run, reads it
unchanged. The terminal (`studio trials`, `studio proposals`, `studio export --out -`), exported
files and the studio's logs show ``***``. (The pages: tests/ui/test_secrets_shown.py.)
"""

from __future__ import annotations

import json
import logging
import secrets

import pytest

from studio import cli
from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.worker import get_manager
from studio.model.records import AgentSpec, CriticSpec, ProposalStatus, ReflectionSpec
from studio.projects.export import export_run
from studio.runtime.providers import demo
from tests.helpers import demo_spec, trainset, wait_until

SECRET = "sk-" + secrets.token_hex(20)
"""A fresh 40-character key per test session, as a real one looks."""


def leaky(request):
    """The demo model, echoing the secret in every output, feedback and proposal."""
    reply = demo.reply(request)
    if demo.REFLECTION_MARKER in request.prompt_text:
        return f"{reply}\nNever print the key {SECRET}."
    if isinstance(reply, dict) and "feedback" in reply:
        return {**reply, "feedback": f"Key {SECRET}. {reply['feedback']}"}
    return f"{reply} key {SECRET}" if isinstance(reply, str) else reply


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("STUDIO_TEST_SECRET", SECRET)


def studio(store, *args: str) -> int:
    return cli.main(["--db", store.url, *args])


def stopped_at_the_gate(store, model: str) -> tuple[str, int]:
    """A review run of two iterations whose first proposal waits at the gate; the person stops
    the run there (`studio decide N stop`): (run id, the pending proposal's id)."""
    spec = demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model=model, instruction=demo_spec().agent.instruction),
        "critic": CriticSpec(name="critic", agent=AgentSpec(name="critic", model=model)),
        "reflection": ReflectionSpec(model=model)})
    run_id = create_run(store, spec=spec, trainset=trainset(3), config=EvolutionConfig(
        max_iterations=2, minibatch_size=3, review="review", skip_perfect_score=False)).id
    handle = get_manager(store).start(build_engine(store, run_id))
    pending = wait_until(lambda: store.proposals(run_id, status=ProposalStatus.PENDING),
                         timeout=60, message="a proposal reaches the gate")[0]
    assert studio(store, "decide", str(pending.id), "stop") == 0
    assert handle.wait(60) == "user"
    return run_id, pending.id


def test_the_store_keeps_secrets_raw_and_a_resumed_reflection_reads_them(
        store, script, secret_env, capsys):
    model = script(leaky)
    run_id, proposal_id = stopped_at_the_gate(store, model)
    trials = store.trials(run_id)
    assert trials and all(SECRET in t.output and SECRET in t.feedback_text for t in trials)
    assert SECRET in store.get_proposal(proposal_id).text
    for trial in trials:  # a person's correction quoting the key, on every trial
        assert studio(store, "override", str(trial.id), "--feedback",
                      f"human: rotate {SECRET} now") == 0
    assert all(o.feedback == f"human: rotate {SECRET} now" for o in store.overrides(run_id))
    assert SECRET not in capsys.readouterr().out

    assert studio(store, "decide", str(proposal_id), "accept") == 0
    asked_before = len(script.requests(model))
    handle = get_manager(store).resume(run_id)  # what `studio resume` calls
    second = wait_until(lambda: [p for p in store.proposals(run_id, status=ProposalStatus.PENDING)
                                 if p.id != proposal_id], timeout=60,
                        message="the resumed run's proposal reaches the gate")[0]
    assert studio(store, "decide", str(second.id), "stop") == 0
    assert handle.wait(60) == "user"
    resumed = [r.prompt_text for r in script.requests(model)[asked_before:]
               if demo.REFLECTION_MARKER in r.prompt_text]
    assert resumed, "the resumed run reflected again"
    assert any(f"human: rotate {SECRET} now" in prompt for prompt in resumed)
    assert not any("***" in prompt for prompt in resumed)


def test_the_terminal_and_exports_show_the_secret_as_stars(store, script, secret_env, capsys,
                                                           tmp_path):
    model = script(leaky)
    run_id, proposal_id = stopped_at_the_gate(store, model)
    capsys.readouterr()
    for args in (("trials", run_id), ("trials", run_id, "--json"), ("proposals", run_id),
                 ("proposals", run_id, "--json"), ("export", run_id, "--out", "-")):
        assert studio(store, *args) == 0, args
        out, err = capsys.readouterr()
        assert SECRET[:12] not in out + err, args  # nor a clipped part of it
        assert "***" in out or args[0] == "proposals", args  # proposals lists show no text
    for fmt in ("jsonl", "csv"):
        written = export_run(store, run_id, fmt, tmp_path / fmt)
        text = "".join(path.read_text() for path in written)
        assert SECRET not in text and "***" in text, fmt


def test_the_studio_s_logs_show_the_secret_as_stars(secret_env, caplog):
    logger = logging.getLogger("studio.engine.loop.engine")
    with caplog.at_level(logging.WARNING, logger="studio"):
        logger.warning("the critic replied %s", json.dumps({"feedback": SECRET}))
        try:
            raise ValueError(f"bad reply {SECRET}")
        except ValueError:
            logger.exception("judging failed")
    assert len(caplog.records) == 2
    assert SECRET not in caplog.text and caplog.text.count("***") >= 2


@pytest.mark.parametrize("text, shown", [
    ("sk-proj-0123456789abcdefghijkl", "sk-***"), ("gsk_abcdefghij0123456789", "gsk-***"),
    ("AIzaSyA1234567890abcdefghijklmno", "AIza-***"),
    ("skip_perfect_score", "skip_perfect_score"), ("sk_learn_pipeline_model_x", None)])
def test_a_key_is_recognised_by_its_shape_and_an_ordinary_word_is_not(text, shown):
    from studio.model.redaction import redact

    assert redact(f"use {text} here") == f"use {shown or text} here"


def test_studio_schema_prints_field_names_unchanged(capsys):
    assert cli.main(["schema"]) == 0
    assert "skip_perfect_score" in capsys.readouterr().out
