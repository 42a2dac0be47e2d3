"""Limits that belong to the server (issue 30, items 2 and 3): a project from the browser never
replaces the process's rate limits (another run's), judge samples are capped and counted in
``max_metric_calls`` and in the cost, and a provider's absurd usage report never shows a run at
billions of dollars."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import litellm
import pytest
import yaml

from studio.cli import main
from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.api import load_result
from studio.engine.hosting.worker import get_manager
from studio.model.errors import ConfigError, ProjectFileError
from studio.model.limits import MAX_JUDGE_SAMPLES
from studio.model.records import AgentSpec, CriticSpec, RunStatus, StopReason
from studio.projects.workspace import import_yaml, start_project_run
from studio.runtime.providers.calls import (
    RATE_LIMITS_ENV,
    clear_rate_limits,
    limiter_for,
)
from tests.bad_inputs.conftest import project, write_project
from tests.helpers import demo_spec, trainset
from tests.openai_server import Raw, completion, local_openai

THROTTLE = {"scripted/demo": {"requests": 1, "per_seconds": 86400}}
"""The report's limit: one call a day for the model every run of the process uses."""


@pytest.fixture(autouse=True)
def _fresh_limiters():
    clear_rate_limits()
    yield
    clear_rate_limits()


def test_a_browser_project_may_not_throttle_the_other_runs(store, saved):
    victim = create_run(store, spec=demo_spec(), trainset=trainset(3),
                        config=EvolutionConfig(max_iterations=2, minibatch_size=2))
    handle = get_manager(store).start(build_engine(store, victim.id))
    hostile = yaml.safe_dump(project(name="throttle", run={"max_iterations": 1,
                                                           "rate_limits": THROTTLE}))
    with pytest.raises(ProjectFileError) as refused:
        import_yaml(store, hostile, "throttle.yaml")
    assert refused.value.where == "throttle.yaml: run.rate_limits"
    assert RATE_LIMITS_ENV in str(refused.value)  # where the limits go instead
    legacy = store.save_project("throttle", hostile)  # stored by an older version
    with pytest.raises(ProjectFileError, match="run.rate_limits"):
        start_project_run(store, legacy.id, EvolutionConfig(max_iterations=1))
    clean = import_yaml(store, yaml.safe_dump(project(name="clean")), "clean.yaml")
    with pytest.raises(ProjectFileError, match="run.rate_limits"):  # the Run page's settings
        start_project_run(store, clean.id, EvolutionConfig(max_iterations=1,
                                                           rate_limits=THROTTLE))
    assert limiter_for("scripted/demo") is None
    handle.wait(60)
    assert store.get_run(victim.id).status is RunStatus.COMPLETED
    assert [r.id for r in store.list_runs()] == [victim.id]


def test_the_servers_rate_limits_are_not_replaced_by_a_runs_own(store, monkeypatch):
    monkeypatch.setenv(RATE_LIMITS_ENV, json.dumps({"scripted/demo": 6000}))
    run = create_run(store, spec=demo_spec(), trainset=trainset(2),
                     config=EvolutionConfig(max_iterations=0, rate_limits=THROTTLE))
    engine = build_engine(store, run.id)  # a trusted run (the library) with its own limit
    assert limiter_for("scripted/demo").limit.requests == 6000
    handle = get_manager(store).start(engine)
    handle.wait(30)
    assert store.get_run(run.id).status is RunStatus.COMPLETED


def test_a_runs_own_limit_applies_to_a_model_the_server_does_not_limit(store, monkeypatch):
    monkeypatch.setenv(RATE_LIMITS_ENV, json.dumps({"openai/gpt-4o": 100}))
    run = create_run(store, spec=demo_spec(), trainset=trainset(1),
                     config=EvolutionConfig(max_iterations=0,
                                            rate_limits={"scripted/demo": 600}))
    build_engine(store, run.id)
    assert limiter_for("scripted/demo").limit.requests == 600
    assert limiter_for("openai/gpt-4o").limit.requests == 100


@pytest.mark.parametrize("value, fragment", [
    ("{not json", "is not JSON"), ("[1, 2]", "JSON object"),
    ('{"openai/gpt-4o": 0}', "STUDIO_RATE_LIMITS: openai/gpt-4o")])
def test_a_bad_server_limit_is_named(store, monkeypatch, value, fragment):
    monkeypatch.setenv(RATE_LIMITS_ENV, value)
    run = create_run(store, spec=demo_spec(), trainset=trainset(1),
                     config=EvolutionConfig(max_iterations=0))
    with pytest.raises(ConfigError, match=fragment):
        build_engine(store, run.id)


# --------------------------------------------------------------------------- judge samples


def _adk_critic(samples: int, judge: str = "scripted/demo") -> dict:
    return {"type": "adk_metrics", "model": judge, "adk_metrics": {"criteria": {
        "final_response_match_v2": {"threshold": 0.5,
                                    "judge_model_options": {"num_samples": samples}}}}}


def test_a_million_judge_samples_are_refused_from_the_browser(store, saved):
    hostile = yaml.safe_dump(project(critic=_adk_critic(1_000_000)))
    with pytest.raises(ProjectFileError) as refused:
        import_yaml(store, hostile, "samples.yaml")
    assert refused.value.where == ("samples.yaml: critic.adk_metrics.criteria."
                                   "final_response_match_v2.judge_model_options.num_samples")
    assert f"from 1 to {MAX_JUDGE_SAMPLES}" in str(refused.value) and saved()


def test_a_million_judge_samples_are_refused_from_the_command_line_too(tmp_path, capsys):
    path = write_project(tmp_path, project(critic=_adk_critic(1_000_000),
                                           dataset={"train": [{"topic": "a", "expected": "b"}]}))
    assert main(["validate", str(path)]) != 0
    err = capsys.readouterr().err
    assert "judge_model_options.num_samples" in err and f"the limit is {MAX_JUDGE_SAMPLES}" in err


def verdict(request) -> str:
    """ADK's final_response_match_v2 judge format, or the agent's reply."""
    if "is_the_agent_response_valid" in request.prompt_text:
        return json.dumps({"reasoning": "r", "is_the_agent_response_valid": "valid"})
    return "the expected answer"


def test_judge_samples_count_in_max_metric_calls(store, script):
    judge, writer = script(verdict), script(verdict)
    spec = demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model=writer, instruction="Answer {topic}."),
        "critic": CriticSpec(type="evaluator", evaluator={
            "adk_metrics": _adk_critic(3)["adk_metrics"], "judge_model": judge})})
    rows = [{"topic": t, "expected": "the expected answer"} for t in ("a", "b")]
    # the baseline (2 trials x 3 samples) and one iteration (at most 6 trials x 3) need 24
    run = create_run(store, spec=spec, trainset=rows,
                     config=EvolutionConfig(max_iterations=3, minibatch_size=2,
                                            max_metric_calls=20))
    asyncio.run(build_engine(store, run.id).run())
    stored = store.get_run(run.id)
    assert stored.stop_reason is StopReason.MAX_METRIC_CALLS
    assert store.count_trials(run.id) == 2  # the baseline alone: an iteration would overspend
    assert len(script.requests(judge)) == 2 * 3  # three real samples a trial
    assert load_result(store, run.id).metric_calls == 6


def test_a_budget_below_the_baselines_samples_is_refused_before_the_run(tmp_path, capsys):
    path = write_project(tmp_path, project(
        critic=_adk_critic(5), run={"max_iterations": 1, "max_metric_calls": 4},
        dataset={"train": [{"topic": t, "expected": "x"} for t in "ab"]}))
    assert main(["validate", str(path)]) != 0
    assert "at least 10" in capsys.readouterr().err  # 2 rows x 5 samples


# --------------------------------------------------------------------------- cost


PRICED = "openai/gpt-4o-mini"
"""A model with a price in LiteLLM's local cost map."""


@pytest.fixture
def hosted(monkeypatch):
    contexts = []

    def start(reply):
        context = local_openai(reply)
        server = context.__enter__()
        contexts.append(context)
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
        return server

    yield start
    for context in contexts:
        context.__exit__(None, None, None)


def _one_trial(store, spec) -> list:
    run = create_run(store, spec=spec, trainset=[{"topic": "a", "expected": "the answer"}],
                     config=EvolutionConfig(max_iterations=0, max_retries=0))
    asyncio.run(build_engine(store, run.id).run())
    return store.trials(run.id)


@pytest.mark.slow
def test_each_judge_sample_is_priced_in_the_trials_cost(store, hosted, script):
    server = hosted(lambda body: json.dumps(
        {"reasoning": "r", "is_the_agent_response_valid": "valid"}))
    spec = demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model=script("the answer"), instruction="{topic}"),
        "critic": CriticSpec(type="evaluator", evaluator={
            "adk_metrics": _adk_critic(3)["adk_metrics"], "judge_model": PRICED})})
    [trial] = _one_trial(store, spec)
    price = sum(litellm.cost_per_token(model=PRICED, prompt_tokens=1, completion_tokens=1))
    assert len(server.requests) == 3 and trial.score == 1.0
    assert trial.cost_usd == pytest.approx(3 * price)  # the writer is scripted: free


def test_a_provider_reporting_a_quadrillion_tokens_is_not_priced_and_kept_raw(store, hosted):
    absurd = {"prompt_tokens": 10**15, "completion_tokens": 10**15, "total_tokens": 2 * 10**15}
    hosted(lambda body: Raw({**completion("a haiku"), "usage": absurd}))
    spec = demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model=PRICED, instruction="{topic}")})
    [trial] = _one_trial(store, spec)
    assert trial.cost_usd == 0.0 and store.run_costs([trial.run_id])[trial.run_id] == 0.0
    assert trial.tokens < 10**6  # the scripted critic's, not the report
    [unpriced] = trial.trace["unpriced_calls"]
    assert unpriced["usage"]["prompt_tokens"] == 10**15 and unpriced["reported_cost_usd"] > 1e6
    assert trial.trace["usage"]["implausible"][0]["prompt_tokens"] == 10**15


@pytest.fixture
def gemini_api(monkeypatch):
    """A Google AI Studio stand-in on 127.0.0.1 (the server's own GOOGLE_GEMINI_BASE_URL),
    answering ADK's judge as Gemini does, with the usage Google reports."""
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            requests.append(self.path)
            verdict_text = json.dumps({"reasoning": "r", "is_the_agent_response_valid": "valid"})
            body = json.dumps({
                "candidates": [{"content": {"role": "model", "parts": [{"text": verdict_text}]},
                                "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 1000,
                                  "totalTokenCount": 2000}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test-key-not-secret-0123456789")
    yield requests
    server.shutdown()


def test_each_sample_of_adks_gemini_judge_is_priced(store, gemini_api, script):
    spec = demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model=script("the answer"), instruction="{topic}"),
        "critic": CriticSpec(type="evaluator", evaluator={
            "adk_metrics": _adk_critic(2)["adk_metrics"], "judge_model": "gemini-2.5-flash"})})
    [trial] = _one_trial(store, spec)
    price = sum(litellm.cost_per_token(model="gemini/gemini-2.5-flash", prompt_tokens=1000,
                                       completion_tokens=1000))
    assert len(gemini_api) == 2 and trial.score == 1.0
    assert trial.cost_usd == pytest.approx(2 * price)
