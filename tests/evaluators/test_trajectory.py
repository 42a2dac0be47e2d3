"""normalize_trajectory: every shape the seed names, the executor's trace, and bad shapes."""

from __future__ import annotations

import pytest

from studio.evaluators import (
    Step,
    ToolCall,
    TrajectoryShapeError,
    extract_tool_calls,
    normalize_trajectory,
    render_trajectory,
)
from studio.evaluators.trajectory import parse_args


def _adk_events():
    from google.adk.events import Event
    from google.genai import types

    def event(author, role, part):
        return Event(author=author, content=types.Content(role=role, parts=[part]))

    return [
        event("user", "user", types.Part(text="find x")),
        event("agent", "model", types.Part(function_call=types.FunctionCall(
            id="c1", name="search", args={"query": "x"}))),
        event("agent", "user", types.Part(function_response=types.FunctionResponse(
            id="c1", name="search", response={"hits": 3}))),
        event("agent", "model", types.Part(text="found 3")),
    ]


def _names_and_args(obj):
    return [(c.name, c.args) for c in extract_tool_calls(obj)]


def test_openai_messages_with_tool_calls_and_tool_results():
    messages = [
        {"role": "user", "content": "weather in NYC?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"location": "NYC"}'}}]},
        {"role": "tool", "tool_call_id": "1", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
    ]
    steps = normalize_trajectory(messages)
    assert [s.role for s in steps] == ["user", "assistant", "tool", "assistant"]
    assert steps[1].tool_calls == (ToolCall("get_weather", {"location": "NYC"}, "1"),)
    assert steps[3].content == "It is sunny."
    assert normalize_trajectory({"messages": messages}) == steps


def test_legacy_function_call_and_function_role():
    messages = [
        {"role": "assistant", "content": "", "function_call": {
            "name": "lookup", "arguments": '{"id": 7}'}},
        {"role": "function", "name": "lookup", "content": "found"},
    ]
    steps = normalize_trajectory(messages)
    assert steps[0].tool_calls[0][:2] == ("lookup", {"id": 7})
    assert steps[1] == Step("tool", "found", (), "lookup")


def test_content_as_a_list_of_parts_is_flattened():
    steps = normalize_trajectory([{"role": "user", "content": [
        {"type": "text", "text": "hello"}, {"type": "text", "text": "world"}]}])
    assert steps[0].content == "hello world"


def test_canonical_turns_with_action_turns():
    conversation = [
        {"speaker": "User", "text": "Find cats"},
        {"speaker": "Agent (Action)", "text": 'search({"query": "cats"})'},
        {"speaker": "Environment", "text": "3 results"},
        {"speaker": "Agent", "text": "Here are cats."},
    ]
    steps = normalize_trajectory(conversation)
    assert [s.role for s in steps] == ["user", "assistant", "tool", "assistant"]
    assert _names_and_args(conversation) == [("search", {"query": "cats"})]
    assert normalize_trajectory({"conversation": conversation}) == steps


def test_keyword_style_arguments_are_parsed():
    # Potato leaves search(query="x") unparsed; here it becomes real arguments.
    turns = [{"speaker": "Agent (Action)", "text": 'search(query="x", k=3, exact=true)'}]
    assert _names_and_args(turns) == [("search", {"query": "x", "k": 3, "exact": True})]
    assert _names_and_args(['book(1, "a")']) == [("book", {"_positional": [1, "a"]})]
    assert parse_args("query='x', filters={'lang': 'en'}") == {
        "query": "x", "filters": {"lang": "en"}}


def test_unparseable_arguments_are_kept_raw():
    assert parse_args("not ( valid") == {"_raw": "not ( valid"}
    assert parse_args("") == {}
    assert parse_args(None) == {}
    assert parse_args(5) == {"_value": 5}


def test_parsed_arguments_are_copies_so_the_cache_stays_clean():
    first = parse_args('{"q": "x"}')
    first["q"] = "changed"
    assert parse_args('{"q": "x"}') == {"q": "x"}


def test_trace_object_with_conversation_attribute():
    class CanonicalTrace:
        conversation = [{"speaker": "Agent (Action)", "text": "submit(id=1)"}]

    assert _names_and_args(CanonicalTrace()) == [("submit", {"id": 1})]


def test_object_with_to_dict_is_read_through_it():
    class Trace:
        def to_dict(self):
            return {"conversation": [{"speaker": "Agent (Action)", "text": "ping"}]}

    assert _names_and_args(Trace()) == [("ping", {})]


def test_studio_executor_trace_from_real_adk_events():
    from studio.runtime.execution import _TraceRecorder

    recorder = _TraceRecorder("find x")
    for event in _adk_events():
        recorder.add(event)
    trace = recorder.trace()
    steps = normalize_trajectory(trace)
    assert [s.role for s in steps] == ["user", "assistant", "tool", "assistant"]
    assert _names_and_args(trace) == [("search", {"query": "x"})]
    assert steps[2] == Step("tool", '{"hits": 3}', (), "search")
    # The same trajectory from its parts: the events list, or only the tool_calls.
    assert normalize_trajectory(trace["events"]) == steps
    assert _names_and_args({"events": [], "tool_calls": trace["tool_calls"]}) == [
        ("search", {"query": "x"})]


def test_raw_adk_events_are_accepted():
    steps = normalize_trajectory(_adk_events())
    assert [s.role for s in steps] == ["user", "assistant", "tool", "assistant"]
    assert steps[1].tool_calls[0][:2] == ("search", {"query": "x"})


def test_plain_tool_call_lists_in_every_spelling():
    calls = [
        {"name": "search", "args": {"q": "a"}},
        {"name": "fetch", "arguments": '{"url": "u"}'},
        {"id": "9", "type": "function", "function": {"name": "email", "arguments": {"to": "b"}}},
        "ping",
        ToolCall("done", {}),
    ]
    assert _names_and_args(calls) == [("search", {"q": "a"}), ("fetch", {"url": "u"}),
                                      ("email", {"to": "b"}), ("ping", {}), ("done", {})]


def test_json_text_of_a_trajectory_is_decoded():
    text = '[{"name": "search", "args": {"q": "a"}}]'
    assert _names_and_args(text) == [("search", {"q": "a"})]


def test_bare_string_is_one_assistant_message_and_none_is_empty():
    assert normalize_trajectory("just an answer") == [Step("assistant", "just an answer")]
    assert normalize_trajectory(None) == []
    assert normalize_trajectory([]) == []
    assert normalize_trajectory("  ") == []


def test_unknown_top_level_shape_names_what_was_received():
    with pytest.raises(TrajectoryShapeError) as info:
        normalize_trajectory({"foo": 1, "bar": 2})
    assert "unknown trajectory shape: a dict with keys ['bar', 'foo']" in str(info.value)
    assert "OpenAI message list" in str(info.value)
    assert info.value.shape == "a dict with keys ['bar', 'foo']"
    with pytest.raises(TrajectoryShapeError, match="a value of type int"):
        normalize_trajectory(42)


def test_unknown_item_names_its_position():
    with pytest.raises(TrajectoryShapeError,
                       match=r"trajectory item 1 is a dict with keys \['x'\]"):
        normalize_trajectory([{"name": "ok"}, {"x": 1}])
    with pytest.raises(TrajectoryShapeError, match="item 0 is the text 'I will search now'"):
        normalize_trajectory(["I will search now"])


def test_failed_run_trace_is_an_unknown_shape():
    with pytest.raises(TrajectoryShapeError, match=r"\['attempts', 'error'\]"):
        normalize_trajectory({"error": "timed out", "attempts": 1})


def test_render_numbers_steps_and_shows_calls():
    text = render_trajectory(normalize_trajectory([
        {"role": "user", "content": "hi"},
        {"name": "search", "args": {"q": "a"}},
    ]))
    assert text == '1. [user] hi\n2. [assistant] calls tool search({"q": "a"})'
    assert render_trajectory([]) == "(empty trajectory)"


@pytest.mark.parametrize("trajectory", [
    [{"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": '{"x": 1}'}}]},
     {"role": "tool", "content": "r"}, {"name": "b", "args": {"y": 2}}],
    {"events": [{"author": "agent", "type": "tool_call", "name": "a", "args": {}},
                {"author": "agent", "type": "text", "text": "t"}]},
    {"events": [], "tool_calls": [{"id": "1", "name": "a", "args": {"q": 1}, "result": 2}]},
    [{"role": "assistant", "function_call": {"name": "f", "arguments": "x=1"}}],
    [{"speaker": "Agent (Action)", "text": "f(x=1)"}, {"name": "g"}],
    ["a(x=1)", {"name": "b"}],
])
def test_fast_tool_call_extraction_agrees_with_full_normalization(trajectory):
    full = [call for step in normalize_trajectory(trajectory) for call in step.tool_calls]
    assert extract_tool_calls(trajectory) == full


def test_malformed_tool_calls_are_shape_errors():
    with pytest.raises(TrajectoryShapeError, match="a tool call is a value of type str"):
        extract_tool_calls([{"role": "assistant", "tool_calls": ["search"]}])
    with pytest.raises(TrajectoryShapeError, match="tool_calls is a value of type str, not a list"):
        normalize_trajectory([{"role": "assistant", "tool_calls": "search"}])
