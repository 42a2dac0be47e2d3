"""Odd replies from a hosted model, through the whole real path: an OpenAI-compatible server on
127.0.0.1 that LiteLLM calls as ``openai/...`` inside ADK, in a real run on a real store. Each
reply becomes a trial that says what happened and whose fault it was ("could not evaluate", not
a 0 for a reply with nothing in it), and a run that cannot score its baseline says whether the
agent or the critic failed."""

from __future__ import annotations

import asyncio
import json

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.loop.engine import RunFailed
from studio.model.records import AgentSpec, CriticSpec
from tests.helpers import BASE_INSTRUCTION, demo_spec, trainset
from tests.openai_server import CUT, RESET, Raw, completion, local_openai

CHOICES_EMPTY = Raw({**completion("x"), "choices": []})
ERROR = {"error": {"message": "server says no", "type": "server_error"}}
VERDICT = json.dumps({"score": 0.8, "feedback": "good"})


@pytest.fixture
def hosted(monkeypatch):
    """``hosted(agent=..., critic=...)``: a server answering the model ``writer`` with
    ``agent(body)`` and ``judge`` with ``critic(body)``; returns the server."""
    servers = []

    def start(agent=lambda body: "a haiku", critic=lambda body: VERDICT):
        routes = {"writer": agent, "judge": critic}
        context = local_openai(lambda body: routes[body["model"]](body))
        server = context.__enter__()
        servers.append(context)
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
        return server

    yield start
    for context in servers:
        context.__exit__(None, None, None)


def hosted_baseline(store, **config) -> tuple[str, str | None]:
    """A baseline-only run of ``openai/writer`` judged by ``openai/judge``: (run id, error)."""
    spec = demo_spec().model_copy(update={
        "agent": AgentSpec(name="writer", model="openai/writer", instruction=BASE_INSTRUCTION),
        "critic": CriticSpec(name="judge", agent=AgentSpec(name="judge", model="openai/judge"))})
    values = {"max_iterations": 0, "max_retries": 0, "call_timeout_seconds": 30} | config
    run_id = create_run(store, spec=spec, trainset=trainset(2),
                        config=EvolutionConfig(**values)).id
    try:
        asyncio.run(build_engine(store, run_id).run())
    except RunFailed as failed:
        return run_id, str(failed)
    return run_id, None


@pytest.mark.slow
@pytest.mark.parametrize("reply, what", [
    (lambda body: CHOICES_EMPTY, "no choices"),
    (lambda body: None, "content null"),
    (lambda body: "   \n\t ", "whitespace only"),
    (lambda body: "", "empty string"),
])
def test_an_agent_reply_with_no_content_is_could_not_evaluate_and_blames_the_agent(
        store, hosted, reply, what):
    server = hosted(agent=reply)
    run_id, error = hosted_baseline(store)
    trials = store.trials(run_id)
    assert len(trials) == 2 and all(t.score is None for t in trials), what
    assert all("the agent's model returned no content" in t.error for t in trials), what
    assert error.startswith("the agent failed on every baseline example (2)")
    assert "Check the agent's model" in error and "Check the critic's model" not in error
    assert {r["model"] for r in server.requests} == {"writer"}  # the critic was not called
    assert store.get_run(run_id).status.value == "failed"


@pytest.mark.parametrize("reply, message", [
    (lambda body: CHOICES_EMPTY, "critic returned an empty reply"),
    (lambda body: None, "critic returned an empty reply"),
    (lambda body: "not json {", "critic reply is not JSON"),
    (lambda body: '{"score": NaN, "feedback": "x"}', "'score' must be a number, got nan"),
    (lambda body: '{"score": Infinity}', "critic score inf is outside [0, 1]"),
    (lambda body: '{"score": -0.5}', "critic score -0.5 is outside [0, 1]"),
    (lambda body: '{"score": 1.5}', "critic score 1.5 is outside [0, 1]"),
    (lambda body: '{"score": {"value": 0.8}}', "'score' must be a number, got {'value': 0.8}"),
    (lambda body: '{"score": "high"}', "got the text 'high'"),
    (lambda body: "[0.8]", "JSON but not an object (it is a list)"),
])
def test_a_bad_critic_reply_is_could_not_evaluate_and_blames_the_critic(
        store, hosted, reply, message):
    hosted(critic=reply)
    run_id, error = hosted_baseline(store)
    trials = store.trials(run_id)
    assert len(trials) == 2 and all(t.score is None for t in trials)
    assert all(message in t.error for t in trials), trials[0].error
    assert all(t.output == "a haiku" for t in trials)  # the agent's output is kept
    assert error.startswith("the critic could not evaluate any baseline example")
    assert "Check the critic's model" in error


def test_a_critic_score_given_as_text_is_read_as_the_number(store, hosted):
    hosted(critic=lambda body: '{"score": "0.8", "feedback": "fine"}')
    run_id, error = hosted_baseline(store)
    assert error is None
    assert [t.score for t in store.trials(run_id)] == [0.8, 0.8]


@pytest.mark.parametrize("size, kept", [(100_000, True), (500_000, False)])
def test_a_huge_critic_reply_is_clipped_or_refused_naming_its_size(store, hosted, size, kept):
    hosted(critic=lambda body: json.dumps({"score": 0.5, "feedback": "f" * size}))
    run_id, error = hosted_baseline(store)
    trial = store.trials(run_id)[0]
    if kept:  # under the reply cap: scored, its feedback clipped with a marker
        assert error is None
        assert trial.score == 0.5 and trial.feedback_text.endswith("more characters cut]")
    else:
        assert trial.score is None and "the critic's reply is 500,030 characters" in trial.error
        assert "Check the critic's model" in error


@pytest.mark.slow
@pytest.mark.parametrize("status, name, attempts", [
    (500, "InternalServerError", 2),
    (429, "RateLimitError", 2),
    (401, "AuthenticationError", 1),
])
def test_an_http_error_from_the_agent_s_server_names_the_error_and_the_attempts(
        store, hosted, status, name, attempts):
    hosted(agent=lambda body: Raw(ERROR, status, {"retry-after-ms": "1"}))
    run_id, error = hosted_baseline(store, max_retries=1)
    for trial in store.trials(run_id):
        assert trial.score is None and name in trial.error and "server says no" in trial.error
        assert trial.error.startswith("the agent failed (the critic was not called)")
        if attempts > 1:
            assert "on attempt 2 of 2, after 1 retry and" in trial.error
    assert "the agent failed on every baseline example" in error and name in error


@pytest.mark.slow
def test_a_connection_reset_says_reset_with_the_attempts_and_the_real_time(store, hosted):
    hosted(agent=lambda body: RESET)
    run_id, error = hosted_baseline(store, max_retries=1)
    for trial in store.trials(run_id):
        assert "connection to the model's server was reset or refused" in trial.error
        assert "timed out" not in trial.error
        assert "on attempt 2 of 2, after 1 retry and " in trial.error
        assert " s in all; earlier attempts: the connection" in trial.error
    assert "Check the agent's model" in error


@pytest.mark.slow
def test_a_connection_closed_mid_reply_says_so_not_reset_nor_timed_out(store, hosted):
    """The server sends its headers and half the body its Content-Length promised, then
    closes (last round's N5)."""
    hosted(agent=lambda body: CUT)
    run_id, error = hosted_baseline(store, max_retries=1, call_timeout_seconds=20)
    for trial in store.trials(run_id):
        assert ("the model's server closed the connection before its reply was complete "
                "(received ") in trial.error
        assert "timed out" not in trial.error and "reset or refused" not in trial.error
        assert "on attempt 2 of 2, after 1 retry and " in trial.error  # a fault, retried
    assert "Check the agent's model" in error


def test_a_reply_whose_content_is_a_list_of_parts_is_one_clean_line(store, hosted):
    """LiteLLM refuses the reply with its own traceback pasted into the message."""
    hosted(agent=lambda body: Raw(completion([{"type": "text", "text": "a haiku"}])))
    run_id, error = hosted_baseline(store)
    for trial in store.trials(run_id):
        assert "Traceback" not in trial.error and "File " not in trial.error
        assert ("Invalid response object (content: Input should be a valid string, got a "
                "list)") in trial.error
    assert "Traceback" not in error


def test_an_agent_timing_out_everywhere_is_blamed_on_the_agent(store, hosted):
    import time

    def slow(body):
        time.sleep(0.6)
        return "late"

    hosted(agent=slow)
    run_id, error = hosted_baseline(store, call_timeout_seconds=0.2)
    assert all("timed out after 0.2s" in t.error for t in store.trials(run_id))
    assert error.startswith("the agent failed on every baseline example (2)")
    assert "critic's model" not in error


def test_an_agent_with_only_a_tool_call_and_no_text_is_could_not_evaluate(store, hosted):
    call = {"id": "call_1", "type": "function",
            "function": {"name": "lookup", "arguments": "{}"}}
    def tool_call_then_nothing(body):
        answered = any(m.get("role") == "tool" for m in body["messages"])
        return None if answered else Raw(completion(None, tool_calls=[call]))

    hosted(agent=tool_call_then_nothing)
    run_id, error = hosted_baseline(store)
    for trial in store.trials(run_id):
        assert trial.score is None and "the critic was not called" in trial.error
        assert "only 1 tool call(s) and no text" in trial.error
    assert "the agent failed on every baseline example" in error


def test_studio_run_with_a_silent_agent_prints_the_message_not_a_traceback(
        tmp_path, hosted, capsys):
    from studio.cli import main
    from tests.bad_inputs.conftest import project, write_project

    hosted(agent=lambda body: CHOICES_EMPTY)
    path = write_project(tmp_path, project(
        agent={"model": "openai/writer"},
        critic={"type": "agent", "schema": "advanced", "model": "openai/judge"},
        run={"max_iterations": 0, "max_retries": 0}))
    code = main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(path)])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "the agent failed on every baseline example" in err
    assert "returned no content" in err and "critic's model" not in err


@pytest.mark.slow
def test_a_tool_call_with_arguments_that_are_not_json_is_said_and_retried(store, hosted):
    """ADK discards the call and marks the reply MALFORMED_FUNCTION_CALL: the model's slip,
    retried like a 5xx, and said as what it is (not "returned no content")."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "lookup", "arguments": '{"city": "Oslo"'}}
    server = hosted(agent=lambda body: Raw(completion(None, tool_calls=[call])))
    run_id, error = hosted_baseline(store, max_retries=1)
    for trial in store.trials(run_id):
        assert trial.score is None and "returned no content" not in trial.error
        assert ("the agent failed (the critic was not called): writer's model called a tool "
                "with arguments that are not a JSON object, so ADK discarded the call "
                "(MALFORMED_FUNCTION_CALL (Arguments for the following function calls were "
                "not a valid JSON object: lookup)) (on attempt 2 of 2") in trial.error
    assert len([r for r in server.requests if r["model"] == "writer"]) == 4  # 2 rows x 2
    assert "the agent failed on every baseline example" in error


@pytest.mark.slow
def test_a_tool_call_that_is_malformed_once_is_scored_on_the_retry(store, hosted):
    call = {"id": "call_1", "type": "function",
            "function": {"name": "lookup", "arguments": "{not json"}}
    seen: set[str] = set()

    def malformed_then_text(body):  # each example's first attempt is malformed
        request = json.dumps(body["messages"])
        first = request not in seen
        seen.add(request)
        return Raw(completion(None, tool_calls=[call])) if first else "a haiku"

    hosted(agent=malformed_then_text)
    run_id, error = hosted_baseline(store, max_retries=1)
    assert error is None
    assert [t.score for t in store.trials(run_id)] == [0.8, 0.8]
