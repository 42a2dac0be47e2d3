"""Agents with Python function tools, end to end: which modules may provide a tool, a real ADK
``LlmAgent`` + ``FunctionTool`` round trip through LiteLLM (scripted model), the trace, trajectory
evaluators scoring it, and an evolution run whose stored trials and reflection show the calls.

The tool used throughout is ``calendar:isleap``: an installed (standard library) plain function
that ADK can describe to a model, so no test module has to pose as an installed package.
"""

from __future__ import annotations

import asyncio
import re
import sys

import pytest
from pydantic import ValidationError

from studio.critics.adapters import EvaluatorCritic
from studio.critics.protocol import Sample
from studio.evaluators import ToolCallAccuracyEvaluator, ToolUseEvaluator
from studio.model.errors import ConfigError
from studio.model.limits import MAX_TOOLS
from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec, RunSpec, TrialPhase
from studio.runtime.agents import build_agent
from studio.runtime.execution import MAX_TRACE_VALUE_CHARS, AgentExecutor
from studio.runtime.providers.scripted import ScriptedReply, ToolCall
from studio.runtime.tools import installed_problem
from tests.engine.conftest import Runner

LEAP_INSTRUCTION = "Say whether the year is a leap year. Check with the isleap tool."
YEARS = [{"year": "2024"}, {"year": "1900"}, {"year": "2000"}]


def year_of(request) -> int:
    return int(re.search(r"\d{4}", request.last_user).group())


def leap_model(request):
    """Calls ``isleap`` when told to and offered it; answers from the tool's result."""
    if "[tool result]" in request.prompt_text:
        leap = '"result": true' in request.prompt_text
        return "leap" if leap else "common"
    if "isleap tool" in request.system and "isleap" in request.tool_names:
        return ScriptedReply(tool_calls=(ToolCall("isleap", {"year": year_of(request)}),))
    return "leap"  # a guess without the tool


def leap_agent(model: str, instruction: str = LEAP_INSTRUCTION):
    return build_agent(AgentSpec(name="calendarist", model=model, instruction=instruction,
                                 tools=["calendar:isleap"]))


# --------------------------------------------------------------------------- resolution rules


@pytest.mark.slow
def test_an_installed_function_becomes_an_adk_function_tool():
    from google.adk.tools import FunctionTool

    agent = build_agent(AgentSpec(name="calendarist", model="scripted/echo",
                                  tools=["calendar:isleap", "calendar:monthrange"]))
    assert [type(t) for t in agent.tools] == [FunctionTool, FunctionTool]
    assert [t.name for t in agent.tools] == ["isleap", "monthrange"]
    assert installed_problem("google.adk.tools") is None  # a namespace package's distribution
    assert installed_problem("yaml") is None


def _planted(folder, name: str) -> str:
    """A module in ``folder`` that leaves a marker file if any of its code ever runs."""
    marker = folder / f"{name}.ran"
    (folder / f"{name}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n\ndef lookup(city: str) -> str:\n    return city\n")
    return str(marker)


def test_a_module_in_the_current_directory_is_refused_before_it_runs(tmp_path, monkeypatch):
    marker = _planted(tmp_path, "project_tools")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m studio.cli` puts the cwd first
    spec = AgentSpec(name="writer", model="scripted/echo", tools=["project_tools:lookup"])
    with pytest.raises(ConfigError) as refused:
        build_agent(spec)
    assert refused.value.where == "agent.tools[0]"
    assert "agent 'writer' tool 'project_tools:lookup'" in str(refused.value)
    assert "no installed package provides" in str(refused.value)
    assert "project_tools" not in sys.modules and not (tmp_path / marker).exists()


def test_a_file_shadowing_the_standard_library_is_refused(tmp_path, monkeypatch):
    marker = _planted(tmp_path, "antigravity")  # imported, the real one opens a web browser
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="shadows the standard library module 'antigravity'"):
        build_agent(AgentSpec(name="w", model="scripted/echo", tools=["antigravity:lookup"]))
    assert "antigravity" not in sys.modules and not (tmp_path / marker).exists()


def test_a_folder_shadowing_an_installed_package_is_refused(tmp_path, monkeypatch):
    from studio.runtime import tools

    package = tmp_path / "calendar_kit"
    package.mkdir()
    (package / "__init__.py").write_text("def lookup(city: str) -> str:\n    return city\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(tools, "_distributions", lambda: {"calendar_kit": ["calendar-kit"]})
    with pytest.raises(ConfigError, match=r"'calendar_kit' is installed \(calendar-kit\), but "
                                          r"Python would import it from .*calendar_kit"):
        build_agent(AgentSpec(name="w", model="scripted/echo", tools=["calendar_kit:lookup"]))
    assert "calendar_kit" not in sys.modules


@pytest.mark.parametrize("ref, problem", [
    ("calendar:_validate_month", "private names (starting with _) are not loaded"),
    ("_strptime:parse", "private names (starting with _) are not loaded"),
    ("calendar.isleap", "use the form 'package.module:function'"),
    ("calendar:isleap()", "use the form 'package.module:function'"),
    ("os.path:join:x", "use the form 'package.module:function'"),
])
def test_a_malformed_or_private_ref_is_refused_by_the_spec(ref, problem):
    with pytest.raises(ValidationError) as refused:
        AgentSpec(name="writer", tools=[ref])
    assert problem in str(refused.value) and "agent 'writer'" in str(refused.value)
    assert "tools[0]" in str(refused.value)


def test_the_number_of_tools_is_bounded_and_none_twice():
    with pytest.raises(ValidationError, match=f"the limit is {MAX_TOOLS}"):
        AgentSpec(tools=[f"m{i}:f" for i in range(MAX_TOOLS + 1)])
    with pytest.raises(ValidationError, match=r"tools\[1\].*listed twice"):
        AgentSpec(tools=["calendar:isleap", "calendar:isleap"])


@pytest.mark.parametrize("ref, problem", [
    ("collections:OrderedDict", "is a class, not a function"),
    ("calendar:January", "is a int, not a function"),
    ("builtins:eval", "never tools"),
    ("os:system", "run commands"),
    ("shutil:rmtree", "never tools"),
    ("subprocess:getoutput", "never tools"),
    ("studio.cli:main", "never tools"),
    ("math:hypot", "ADK cannot describe this function to the model"),
    ("calendar:no_such_function", "'calendar' has no attribute 'no_such_function'"),
    ("no_such_package_xyz:f", "no module 'no_such_package_xyz' is installed"),
])
def test_what_is_not_a_usable_function_is_refused_naming_agent_and_tool(ref, problem):
    spec = AgentSpec(name="writer", model="scripted/echo", tools=["calendar:isleap", ref])
    with pytest.raises(ConfigError) as refused:
        build_agent(spec, where="agents.writer")
    assert problem in str(refused.value)
    assert refused.value.where == "agents.writer.tools[1]"
    assert f"agent 'writer' tool {ref!r}" in str(refused.value)


def test_two_tools_with_one_name_are_refused():
    with pytest.raises(ConfigError, match="same name 'escape'"):
        build_agent(AgentSpec(model="scripted/echo",
                              tools=["html:escape", "xml.sax.saxutils:escape"]))


# --------------------------------------------------------------------------- ADK + LiteLLM


def test_a_tool_call_round_trips_through_adk_and_litellm(script):
    model = script(leap_model)
    result = AgentExecutor().execute_sync(leap_agent(model), "year: 1900")
    assert result.ok and result.output == "common"
    first, second = script.requests(model)
    assert first.tool_names == ("isleap",)  # ADK described the tool to the model
    assert "[tool call isleap" in second.prompt_text and "[tool result]" in second.prompt_text
    assert result.trace["tool_calls"] == [{"id": "call_0_isleap", "name": "isleap",
                                           "args": {"year": 1900}, "result": {"result": False}}]
    assert [(e["type"], e.get("name")) for e in result.trace["events"]] == [
        ("tool_call", "isleap"), ("tool_result", "isleap"), ("text", None)]
    assert result.trace["model_calls"] == 2


def test_a_huge_tool_result_is_clipped_in_the_trace(script):
    model = script(lambda r: "done" if "[tool result]" in r.prompt_text else ScriptedReply(
        tool_calls=(ToolCall("dumps", {"obj": "x" * (MAX_TRACE_VALUE_CHARS + 500)}),)))
    agent = build_agent(AgentSpec(name="big", model=model, tools=["json:dumps"]))
    result = AgentExecutor().execute_sync(agent, "go")
    call = result.trace["tool_calls"][0]
    assert isinstance(call["args"], str) and call["args"].endswith("more characters cut]")
    assert len(call["result"]) < MAX_TRACE_VALUE_CHARS + 100


@pytest.mark.parametrize("evaluator, expected_score", [
    (ToolUseEvaluator("isleap", {"year": 2024}), 1.0),
    (ToolUseEvaluator("isleap", {"year": 2023}), 0.0),
    (ToolCallAccuracyEvaluator(), 1.0),
])
def test_trajectory_evaluators_score_the_recorded_calls(script, evaluator, expected_score):
    run = AgentExecutor().execute_sync(leap_agent(script(leap_model)), "year: 2024")
    reference = [{"name": "isleap", "args": {"year": 2024}}]
    feedback = asyncio.run(EvaluatorCritic(evaluator).assess(Sample(
        input_text="year: 2024", output=run.output, trace=run.trace,
        example={"year": "2024", "expected_trajectory": reference})))
    assert feedback.score == expected_score


# --------------------------------------------------------------------------- evolution


def reflection_model(request):
    """Proposes the tool-using instruction; once the agent uses it, asks for one word."""
    if "isleap tool" in request.prompt_text:
        return LEAP_INSTRUCTION + " Answer in one word."
    return LEAP_INSTRUCTION


def test_evolution_with_a_tool_and_a_trajectory_critic(store, script):
    runner = Runner(store)
    agent_model = script(leap_model)
    reflector = script(reflection_model)
    spec = RunSpec(
        agent=AgentSpec(name="calendarist", model=agent_model, instruction="Answer.",
                        tools=["calendar:isleap"]),
        critic=CriticSpec(type="evaluator", name="used_isleap",
                          evaluator={"evaluator": "tool_use",
                                     "params": {"expected_tool": "isleap"}}),
        reflection=ReflectionSpec(model=reflector), input_key="year")
    # the second reflection reads the child's perfect trials: GEPA's skip is off to see it
    run_id, stop = runner.run(spec, YEARS, max_iterations=2, minibatch_size=3,
                              skip_perfect_score=False)
    store = runner.store

    best = max((c for c in store.candidates(run_id) if c.pooled), key=lambda c: c.index)
    assert "isleap tool" in best.components["instruction"]
    seed_trials = [t for t in store.trials(run_id) if t.phase is TrialPhase.VALSET
                   and t.candidate_id == store.candidates(run_id)[0].id]
    assert {t.score for t in seed_trials} == {0.0}  # guessed without the tool
    child = [t for t in store.trials(run_id) if t.candidate_id == best.id]
    assert child and {t.score for t in child} == {1.0}
    assert {t.output for t in child if t.input_text == "1900"} == {"common"}
    calls = [t.trace["tool_calls"] for t in child if t.input_text == "1900"][0]
    assert calls == [{"id": "call_0_isleap", "name": "isleap", "args": {"year": 1900},
                      "result": {"result": False}}]
    second_reflection = script.requests(reflector)[-1].prompt_text
    assert '"name": "isleap"' in second_reflection and '"year": 1900' in second_reflection
    assert stop == "max_iterations"
