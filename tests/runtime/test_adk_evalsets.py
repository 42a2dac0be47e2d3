"""ADK eval sets and legacy test files read as dataset rows, with eval sets built from ADK's own
models (the JSON ``adk web`` writes is ``EvalSet.model_dump_json``)."""

from __future__ import annotations

import json

import pytest
from google.adk.evaluation.eval_case import (
    EvalCase,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    SessionInput,
)
from google.adk.evaluation.eval_set import EvalSet
from google.genai import types

from studio.model.errors import DatasetError
from studio.runtime.adk_evalsets import eval_set_rows, is_eval_set_file


def text(role: str, value: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part.from_text(text=value)])


def turn(query: str, reply: str | None = None, tools: list[types.FunctionCall] | None = None
         ) -> Invocation:
    return Invocation(user_content=text("user", query),
                      final_response=text("model", reply) if reply is not None else None,
                      intermediate_data=IntermediateData(tool_uses=tools)
                      if tools is not None else None)


def recorded(*cases: EvalCase) -> str:
    return EvalSet(eval_set_id="weather", eval_cases=list(cases)).model_dump_json(indent=2)


def test_a_single_turn_case_becomes_input_expected_trajectory_and_state():
    call = types.FunctionCall(name="get_weather", args={"city": "Paris"})
    case = EvalCase(eval_id="paris", conversation=[turn("Weather in Paris?", "Sunny.", [call])],
                    session_input=SessionInput(app_name="weather", user_id="u",
                                               state={"units": "metric"}))
    assert eval_set_rows(recorded(case), source="w.evalset.json") == [{
        "units": "metric", "input": "Weather in Paris?", "eval_id": "paris",
        "eval_set_id": "weather", "expected": "Sunny.",
        "expected_trajectory": [{"name": "get_weather", "args": {"city": "Paris"}}]}]


def test_tool_calls_recorded_as_invocation_events_are_the_trajectory_too():
    """``adk web`` records newer cases as events; ADK's ``get_all_tool_calls`` reads both."""
    call = types.Content(role="model", parts=[types.Part.from_function_call(
        name="lookup", args={"q": "x"})])
    invocation = Invocation(user_content=text("user", "find x"),
                            final_response=text("model", "found"),
                            intermediate_data=InvocationEvents(invocation_events=[
                                InvocationEvent(author="agent", content=call)]))
    [row] = eval_set_rows(recorded(EvalCase(eval_id="x", conversation=[invocation])),
                          source="x.evalset.json")
    assert row["expected_trajectory"] == [{"name": "lookup", "args": {"q": "x"}}]


def test_a_case_without_a_reference_or_tools_has_only_its_input():
    rows = eval_set_rows(recorded(EvalCase(eval_id="open", conversation=[turn("Hello")])),
                         source="o.evalset.json")
    assert rows == [{"input": "Hello", "eval_id": "open", "eval_set_id": "weather"}]


def test_a_multi_turn_case_is_refused_naming_it_and_what_to_do():
    case = EvalCase(eval_id="two_step", conversation=[turn("Hi", "Hello"), turn("Bye", "Bye")])
    with pytest.raises(DatasetError) as caught:
        eval_set_rows(recorded(case), source="t.evalset.json", where="dataset.train")
    assert "'two_step'" in caught.value.message and "2 turns" in caught.value.message
    assert "Split the case" in caught.value.message
    assert caught.value.where == "dataset.train[0] (two_step)"


def test_a_state_key_that_is_a_row_field_is_refused():
    case = EvalCase(eval_id="clash", conversation=[turn("Hi", "Hello")],
                    session_input=SessionInput(app_name="a", user_id="u",
                                               state={"input": "x"}))
    with pytest.raises(DatasetError, match="'clash'.*'input'"):
        eval_set_rows(recorded(case), source="c.evalset.json")


def test_a_message_with_an_image_is_refused_not_read_as_its_text_alone():
    content = types.Content(role="user", parts=[
        types.Part.from_text(text="What is this?"),
        types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png")])
    case = EvalCase(eval_id="photo", conversation=[Invocation(user_content=content)])
    with pytest.raises(DatasetError, match="'photo'.*a part that is not text"):
        eval_set_rows(recorded(case), source="p.evalset.json")


def test_a_legacy_test_file_is_one_session_as_adk_runs_it():
    """``AgentEvaluator`` runs a legacy test file's queries as one conversation: one query is a
    single-turn case, several are refused as a multi-turn one."""
    one = [{"query": "Roll a 6 sided die", "reference": "I rolled a 4.",
            "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 6}}]}]
    assert eval_set_rows(json.dumps(one), source="dice.test.json") == [{
        "input": "Roll a 6 sided die", "eval_id": "dice", "eval_set_id": "dice",
        "expected": "I rolled a 4.",
        "expected_trajectory": [{"name": "roll_die", "args": {"sides": 6}}]}]
    with pytest.raises(DatasetError, match="'dice' in dice.test.json has 2 turns"):
        eval_set_rows(json.dumps(one * 2), source="dice.test.json")


def test_legacy_named_cases_keep_their_names_and_initial_state():
    cases = [{"name": "hi", "data": [{"query": "Hi", "reference": "Hello"}],
              "initial_session": {"app_name": "a", "user_id": "u", "state": {"lang": "en"}}}]
    assert eval_set_rows(json.dumps(cases), source="old.test.json") == [
        {"lang": "en", "input": "Hi", "eval_id": "hi", "eval_set_id": "old", "expected": "Hello",
         "expected_trajectory": []}]


def test_a_file_in_neither_format_is_refused_with_adks_reason():
    with pytest.raises(DatasetError, match="neither an ADK eval set.*eval_cases"):
        eval_set_rows(json.dumps({"eval_set_id": "x"}), source="x.evalset.json")
    with pytest.raises(DatasetError, match="not JSON"):
        eval_set_rows("{", source="x.evalset.json")


def test_eval_set_files_are_known_by_adks_suffixes():
    assert is_eval_set_file("a/b.evalset.json") and is_eval_set_file("B.TEST.JSON")
    assert not is_eval_set_file("rows.json") and not is_eval_set_file("rows.jsonl")
