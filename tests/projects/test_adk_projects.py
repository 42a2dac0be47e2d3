"""ADK users' own files in a project: eval sets as datasets, agent folders as the agent."""

from __future__ import annotations

from pathlib import Path

from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
from google.adk.evaluation.eval_set import EvalSet
from google.genai import types

from studio.projects.files import check_project_datasets, parse_project


def write_eval_set(path: Path) -> Path:
    """An eval set as ``adk web`` saves it: two single-turn cases, one with a tool call."""
    def case(eval_id: str, query: str, reply: str, tools: list[types.FunctionCall]) -> EvalCase:
        return EvalCase(eval_id=eval_id, conversation=[Invocation(
            user_content=types.Content(role="user", parts=[types.Part.from_text(text=query)]),
            final_response=types.Content(role="model", parts=[types.Part.from_text(text=reply)]),
            intermediate_data=IntermediateData(tool_uses=tools))])
    eval_set = EvalSet(eval_set_id="haiku", eval_cases=[
        case("leaves", "autumn leaves", "Red leaves fall", []),
        case("rain", "city rain", "Rain on the roofs",
             [types.FunctionCall(name="weather", args={"city": "Oslo"})])])
    path.write_text(eval_set.model_dump_json(indent=2), encoding="utf-8")
    return path


def test_an_eval_set_is_a_projects_train_set(tmp_path):
    write_eval_set(tmp_path / "haiku.evalset.json")
    project = parse_project("""
name: from-adk
agent: {name: writer, model: scripted/demo, instruction: Write a haiku about the topic.}
critic: {type: evaluator, evaluator: {evaluator: trajectory_match, params: {mode: strict}}}
reflection: {model: scripted/demo}
dataset: {train: {path: haiku.evalset.json}}
""", source="p.yaml")
    sets = check_project_datasets(project, tmp_path, source="p.yaml")
    assert sets.train == [
        {"input": "autumn leaves", "expected": "Red leaves fall", "expected_trajectory": []},
        {"input": "city rain", "expected": "Rain on the roofs",
         "expected_trajectory": [{"name": "weather", "args": {"city": "Oslo"}}]}]
