""""Try on one example": the agent and the critic run once; nothing is stored."""

from __future__ import annotations

import pytest

from studio.model.errors import ModelConfigError
from studio.projects.files import load_project
from studio.projects.probe import ProbeJob, ProbePhase, probe_sync
from studio.projects.workspace import EXAMPLES_DIR
from studio.runtime.providers.local import local_model
from studio.runtime.watch import CallWatch, GenerationCancelled
from tests.helpers import wait_until


@pytest.fixture
def project():
    return load_project(EXAMPLES_DIR / "haiku_scripted.yaml")[0]


def test_probe_runs_agent_and_critic(project):
    result = probe_sync(project, {"topic": "autumn leaves"})
    assert result.error is None
    assert result.input_text == "topic: autumn leaves"
    assert result.output and result.score is not None and 0.0 <= result.score <= 1.0
    assert "Missing" in result.feedback_text
    assert set(result.feedback.dimensions) == {"lines", "topic", "season", "image"}
    assert result.trace["model_calls"] >= 1


def test_a_failing_agent_is_a_result_not_an_exception(project, script):
    def broken(request):
        raise RuntimeError("model exploded")

    model = script("broken_writer", broken)
    bad = project.model_copy(update={"agent": project.agent.model_copy(update={"model": model})})
    result = probe_sync(bad, {"topic": "x"}, timeout_s=10)
    assert result.score is None and "agent failed" in result.error and "exploded" in result.error


def test_a_critic_that_cannot_score_is_recorded(project, script):
    model = script("chatty_critic", lambda request: "I like it!")
    critic = project.critic.model_copy(update={"model": model})
    result = probe_sync(project.model_copy(update={"critic": critic}), {"topic": "x"})
    assert result.output and result.score is None
    assert "could not evaluate" in result.error


def test_an_unusable_model_raises_before_any_call(project):
    bad = project.model_copy(update={"agent": project.agent.model_copy(
        update={"model": "nope/model"})})
    with pytest.raises(ModelConfigError, match="unknown model provider"):
        probe_sync(bad, {"topic": "x"})


REF_PROJECT = """
name: ref-pipeline
agent: {ref: "tests.engine.ref_pipeline:pipeline"}
primary: writer
components: {writer: [instruction]}
critic: {type: agent, name: rule_critic, schema: advanced, model: scripted/pipeline}
reflection: {model: scripted/pipeline}
dataset:
  train: [{topic: city rain}]
run: {max_iterations: 0}
"""


def test_try_it_on_a_workflow_loaded_by_reference_scores_as_its_run_does(store):
    import asyncio

    from studio.engine import build_engine
    from studio.projects.files import Origin, create_project_run, parse_project
    from studio.runtime.providers.scripted import recorded_requests, request_mark

    project = parse_project(REF_PROJECT)
    before = request_mark()
    result = probe_sync(project, {"topic": "city rain"}, origin=Origin.LOCAL)
    authors = [e["author"] for e in result.trace["events"] if e["type"] == "text"]
    assert authors == ["outliner", "writer", "polisher"] and result.error is None
    writer = [e["text"] for e in result.trace["events"] if e["author"] == "writer"][-1]
    assert result.output == writer  # the primary's reply is judged
    critic_calls = [r for r in recorded_requests("pipeline", since=before) if r.json_schema]
    assert len(critic_calls) == 1  # judged by the primary's model, the critic's default
    run = create_project_run(store, project)
    asyncio.run(build_engine(store, run.id).run())
    trial = store.trials(run.id)[0]
    assert (trial.output, trial.score) == (result.output, result.score)
    assert trial.feedback.text == result.feedback_text


def test_try_it_on_a_referenced_workflow_spec_judges_with_the_primarys_model():
    from studio.model.records import CriticSpec, ReflectionSpec, RunSpec
    from studio.projects.files import Origin
    from studio.runtime.providers.scripted import recorded_requests, request_mark

    spec = RunSpec(agent_ref="tests.engine.ref_pipeline:pipeline", primary="writer",
                   critic=CriticSpec(name="rule_critic"),  # no model: the run's default
                   reflection=ReflectionSpec(model="scripted/pipeline"))
    before = request_mark()
    result = probe_sync(spec, {"topic": "snow owl"}, origin=Origin.LOCAL, timeout_s=30)
    assert result.error is None and result.score is not None
    judged = [r for r in recorded_requests("pipeline", since=before) if r.json_schema]
    assert len(judged) == 1 and "snow owl" in judged[0].prompt_text


def test_a_probe_job_says_its_phase_and_keeps_its_result(project):
    job = ProbeJob(project, {"topic": "autumn leaves"})
    assert job.wait(timeout=60)
    assert job.phase is ProbePhase.DONE and job.error is None
    assert job.result.score is not None and "Missing" in job.result.feedback_text
    assert job.elapsed_s == job.finished_s


def test_cancel_stops_a_slow_probe_and_its_thread(project):
    slow = project.model_copy(update={"agent": project.agent.model_copy(
        update={"model": "scripted/demo@30000ms"})})
    job = ProbeJob(slow, {"topic": "autumn leaves"})
    wait_until(lambda: job.phase is ProbePhase.AGENT, timeout=30)
    job.cancel()
    assert job.wait(timeout=5), "the probe's thread is still running after Cancel"
    assert job.phase is ProbePhase.CANCELLED and job.result is None
    assert job.elapsed_s < 25


def test_a_watch_stops_a_generation_at_its_next_token():
    watch = CallWatch()
    watch.token()
    watch.token()
    watch.cancel()
    with pytest.raises(GenerationCancelled, match="after 2 token"):
        watch.token()
    assert watch.tokens == 2 and watch.cancelled


@pytest.mark.local_model
def test_cancel_stops_the_embedded_model_mid_reply(project):
    """The embedded model generates on its own thread: Cancel must stop it there, counted in
    tokens, and leave the model free for the next call."""
    local = project.model_copy(update={"agent": project.agent.model_copy(
        update={"model": "local/smollm2"}), "critic": project.critic.model_copy(
        update={"model": "local/smollm2"})})
    job = ProbeJob(local, {"topic": "a long story about the sea"})
    wait_until(lambda: job.watch.tokens >= 3, timeout=120)
    at_cancel = job.watch.tokens
    job.cancel()
    assert job.wait(timeout=10)
    assert job.phase is ProbePhase.CANCELLED
    assert local_model().wait_idle(timeout=10)  # no generation left burning the CPU
    assert job.watch.tokens <= at_cancel + 1  # stopped at the next token, not at the reply's end
