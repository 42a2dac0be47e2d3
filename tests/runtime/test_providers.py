"""The studio's LiteLLM providers and model checks (no network, no real keys)."""

from __future__ import annotations

import asyncio
import json

import litellm
import pytest

from studio.model.errors import ModelConfigError
from studio.runtime.providers import LOCAL_MODEL, check_model, register_providers
from studio.runtime.providers._protocol import schema_from_response_format
from studio.runtime.providers.local import bounded_schema, strict_json
from studio.runtime.providers.scripted import ScriptedReply, ToolCall, recorded_requests


def complete(model: str, **kwargs):
    register_providers()
    return asyncio.run(litellm.acompletion(model=model, **kwargs))


def test_local_model_id_is_exported():
    assert LOCAL_MODEL == "local/smollm2"


def test_scripted_model_answers_through_litellm(script):
    model = script("hello", lambda request: f"hi {request.last_user}")
    response = complete(model, messages=[{"role": "user", "content": "there"}])
    assert response.choices[0].message.content == "hi there"
    assert response.usage.total_tokens > 0


def test_scripted_model_passes_generation_params_and_schema(script):
    model = script("params", lambda request: {"seen": [request.temperature, request.top_p,
                                                       request.max_tokens, request.stop]})
    complete(model, messages=[{"role": "user", "content": "x"}], temperature=0.3, top_p=0.8,
             max_tokens=12, stop=["END"],
             response_format={"type": "json_schema",
                              "json_schema": {"name": "r", "schema": {"type": "object"}}})
    request = recorded_requests("params")[-1]
    assert (request.temperature, request.top_p, request.max_tokens, request.stop) == (
        0.3, 0.8, 12, ["END"])
    assert request.json_schema == {"type": "object"}


def test_scripted_latency_suffix_delays_the_reply(script):
    import time

    script("slow", lambda request: "ok")
    started = time.perf_counter()
    complete("scripted/slow@80ms", messages=[{"role": "user", "content": "x"}])
    assert time.perf_counter() - started >= 0.08


def test_scripted_tool_calls_become_openai_tool_calls(script):
    model = script("tools", lambda r: ScriptedReply(tool_calls=(ToolCall("f", {"a": 1}),)))
    response = complete(model, messages=[{"role": "user", "content": "x"}])
    call = response.choices[0].message.tool_calls[0]
    assert call.function.name == "f" and call.function.arguments == '{"a": 1}'


def test_script_errors_are_not_retryable_connection_errors(script):
    def broken(request):
        raise ValueError("script bug")

    model = script("broken", broken)
    with pytest.raises(litellm.BadRequestError, match="script bug"):
        complete(model, messages=[{"role": "user", "content": "x"}])


def test_demo_world_critic_and_writer():
    from studio.runtime.providers.demo import critique, write

    poem = write("Use three lines. Name the topic. Add a season word. Use a sensory image.",
                 "topic: city rain")
    assert poem.count("\n") == 2 and "city rain" in poem
    verdict = critique(f"## Input\ntopic: city rain\n\n## Output\n<output-ab12>\n{poem}\n"
                       "</output-ab12>", {"score": {}, "feedback": {}})
    assert verdict["score"] == 1.0


@pytest.mark.parametrize("model, message", [
    ("nonsense-model", "unknown model provider"),
    ("foo/bar", "unknown model provider"),
    ("local/llama3", "unknown local model 'llama3'"),
    ("scripted/nope", "unknown scripted model 'scripted/nope'"),
    ("", "non-empty"),
])
def test_check_model_rejects_unknown_models(model, message):
    with pytest.raises(ModelConfigError, match=message):
        check_model(model)


def test_check_model_names_the_missing_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        check_model("openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    check_model("openai/gpt-4o-mini")


def test_check_model_accepts_either_gemini_key(monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        check_model("gemini/gemini-2.5-flash")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-key-000000000000")
    check_model("gemini/gemini-2.5-flash")


def test_check_model_local_and_ollama_need_no_key():
    check_model(LOCAL_MODEL)
    check_model("scripted/demo@10ms")
    check_model("ollama_chat/llama3.2")


def test_response_format_shapes():
    schema = {"type": "object"}
    assert schema_from_response_format(
        {"type": "json_schema", "json_schema": {"schema": schema}}) == (schema, True)
    assert schema_from_response_format({"type": "json_object"}) == (None, True)
    assert schema_from_response_format(None) == (None, False)


def test_bounded_schema_caps_free_strings_only():
    schema = {"type": "object", "properties": {
        "feedback": {"type": "string"}, "kind": {"type": "string", "enum": ["a"]},
        "short": {"type": "string", "maxLength": 5}}}
    bounded = bounded_schema(schema)["properties"]
    assert bounded["feedback"]["maxLength"] > 0
    assert "maxLength" not in bounded["kind"] and bounded["short"]["maxLength"] == 5
    assert "maxLength" not in schema["properties"]["feedback"]  # the input is not mutated


def test_litellm_cost_map_is_local():
    import os

    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_bounded_schema_turns_numeric_ranges_into_enums():
    score = bounded_schema({"type": "number", "minimum": 0, "maximum": 1, "description": "s"})
    assert score["enum"][0] == 0 and score["enum"][-1] == 1 and len(score["enum"]) == 21
    assert score["description"] == "s" and "type" not in score
    assert bounded_schema({"type": "integer", "minimum": 1, "maximum": 10})["enum"] == list(
        range(1, 11))
    assert bounded_schema({"type": "number"}) == {"type": "number"}


def test_a_structured_reply_with_raw_newlines_in_a_string_is_written_as_strict_json():
    """llama.cpp's grammar let a newline into the feedback string of an embedded-model reply
    (a CI run): strict parsers refuse it, so the reply is written again with it escaped."""
    raw = '{ "score" : 1.0, "feedback" : ");\n\nRoses are red.\n" } '
    fixed = strict_json(raw)
    assert json.loads(fixed) == {"score": 1.0, "feedback": ");\n\nRoses are red.\n"}
    assert strict_json('{"score": 0.5}') == '{"score": 0.5}'  # already strict: untouched
    assert strict_json('{"score": 0.5, "feedb') == '{"score": 0.5, "feedb'  # cut: as it is
