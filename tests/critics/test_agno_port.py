"""Agno's AgentAsJudgeEval, called the way Agno's cookbook calls it (seed 003:
``agent_as_judge_basic.py``): only the import changes.

Every judge is a scripted model behind LiteLLM, run by the real ADK runner.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from google.adk.agents import LlmAgent

from studio import AgentAsJudgeEval, AgentAsJudgeEvaluation, AgentAsJudgeResult
from studio.evaluators import BinaryJudgeResponse, NumericJudgeResponse
from studio.evaluators._judge import DATA_NOTE
from studio.model.errors import ConfigError
from studio.runtime.providers import litellm_model

CRITERIA = "Explanation should be clear, beginner-friendly, and use simple language"


def on_evaluation_failure(evaluation: AgentAsJudgeEvaluation) -> None:
    """The cookbook's callback: it prints the score and the start of the reason."""
    print(f"Evaluation failed - Score: {evaluation.score}/10")
    print(f"Reason: {evaluation.reason[:100]}...")


def test_the_cookbooks_sync_call_prints_a_readable_result(script, capsys):
    model = script({"score": 8, "reason": "The explanation is clear and beginner-friendly."})
    sync_evaluation = AgentAsJudgeEval(
        name="Explanation Quality", model=model, criteria=CRITERIA,
        scoring_strategy="numeric", threshold=7, on_fail=on_evaluation_failure,
        telemetry=False)
    result = sync_evaluation.run(input="Explain what an API is",
                                 output="An API is a menu a program offers to others.",
                                 print_results=True)
    printed = capsys.readouterr().out
    assert isinstance(result, AgentAsJudgeResult) and result.results[0].passed is True
    assert "[ Agent As Judge Evaluation ]" in printed
    assert "Score   8/10" in printed and "Status  PASSED" in printed
    assert "The explanation is clear and beginner-friendly." in printed
    assert "Evaluation failed" not in printed  # on_fail is for cases that did not pass


def test_print_summary_reports_the_pass_rate_as_a_percentage_as_agno_does(script, capsys):
    model = script(lambda request: {"score": 9 if "good" in request.last_user else 3,
                                    "reason": "judged"})
    judge = AgentAsJudgeEval(criteria=CRITERIA, scoring_strategy="numeric", model=model,
                             print_summary=True)
    result = judge.run(cases=[{"input": "q", "output": "good"}, {"input": "q", "output": "bad"},
                              {"input": "q", "output": "good too"},
                              {"input": "q", "output": "bad too"}])
    assert result.pass_rate == 50.0 and result.pass_fraction == 0.5
    printed = capsys.readouterr().out
    assert "Pass Rate              50.0%" in printed
    assert "Average Score          6.00/10" in printed


def test_a_failed_case_prints_failed_and_calls_on_fail(script, capsys):
    model = script({"score": 4, "reason": "Too much jargon: REST, JSON, endpoints."})
    AgentAsJudgeEval(criteria=CRITERIA, scoring_strategy="numeric", threshold=7, model=model,
                     on_fail=on_evaluation_failure).run(input="q", output="a",
                                                        print_results=True)
    printed = capsys.readouterr().out
    assert "Evaluation failed - Score: 4/10" in printed
    assert "Status  FAILED" in printed


def test_printed_model_text_cannot_drive_the_terminal(script, capsys):
    model = script({"passed": True, "reason": "ok\x1b]0;pwned\x07\x1b[2J"})
    AgentAsJudgeEval(criteria=CRITERIA, model=model).run(
        input="q", output="\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
        print_results=True)
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\x07" not in printed
    assert "\\x1b]0;pwned" in printed  # shown, inert


def test_a_case_the_judge_could_not_evaluate_prints_why(script, capsys):
    model = script("I think it is fine.")
    result = AgentAsJudgeEval(criteria=CRITERIA, model=model).run(
        input="q", output="a", print_results=True, print_summary=True)
    printed = capsys.readouterr().out
    assert result.pass_rate is None and result.error_count == 1
    assert "Status  NOT EVALUATED" in printed and "judge reply holds no JSON object" in printed
    assert "Not Evaluated" in printed


def test_printing_goes_to_a_rich_console_when_given(script):
    from io import StringIO

    from rich.console import Console

    model = script({"passed": True, "reason": "[bold]markup stays text[/bold] :smile:"})
    result = AgentAsJudgeEval(criteria=CRITERIA, model=model).run(input="q", output="a")
    sink = StringIO()
    result.print_results(Console(file=sink, width=120))
    assert "[bold]markup stays text[/bold] :smile:" in sink.getvalue()


# --------------------------------------------------------------------------- the judge's model


@dataclass
class OpenAIChat:  # Agno's model objects: an id and a provider
    id: str = "gpt-4o"
    provider: str = "OpenAI"


@dataclass
class Claude:
    id: str = "claude-sonnet-4-5"
    provider: str = "Anthropic"


@dataclass
class LiteLLM:
    id: str = "local/smollm2"
    provider: str = "LiteLLM"


def test_an_agno_model_object_maps_to_a_litellm_string():
    assert AgentAsJudgeEval(criteria=CRITERIA, model=OpenAIChat()).model == "openai/gpt-4o"
    assert AgentAsJudgeEval(criteria=CRITERIA, model=Claude()).model == \
        "anthropic/claude-sonnet-4-5"
    assert AgentAsJudgeEval(criteria=CRITERIA, model=LiteLLM()).model == "local/smollm2"


def test_a_model_object_is_the_model_the_judge_calls(script):
    @dataclass
    class Scripted:  # any object with an id that already names a LiteLLM provider
        id: str

    model = script({"passed": True, "reason": "fine"})
    judge = AgentAsJudgeEval(criteria=CRITERIA, model=Scripted(id=model))
    assert judge.run(input="q", output="a").results[0].passed is True
    assert len(script.requests(model)) == 1


def test_a_model_object_that_cannot_be_mapped_is_refused_naming_what_to_pass():
    @dataclass
    class Mystery:
        id: str = "m-1"
        provider: str = "Acme Cloud"

    with pytest.raises(ConfigError) as info:
        AgentAsJudgeEval(criteria=CRITERIA, model=Mystery())
    assert info.value.where == "model"
    assert "Mystery(id='m-1', provider='Acme Cloud')" in str(info.value)
    assert "pass the LiteLLM string instead" in str(info.value)


# --------------------------------------------------------------------------- the judge agent


def test_an_adk_evaluator_agent_judges_with_its_own_instruction(script):
    model = script({"score": 9, "reason": "clear"})
    own = LlmAgent(name="strict_teacher", model=litellm_model(model),
                   instruction="You grade explanations for ten-year-olds.")
    judge = AgentAsJudgeEval(criteria=CRITERIA, scoring_strategy="numeric",
                             evaluator_agent=own)
    result = judge.run(input="Explain what an API is", output="A menu for programs.")
    assert result.results[0].score == 9 and result.results[0].passed is True
    request = script.requests(model)[-1]
    assert "You grade explanations for ten-year-olds." in request.system
    assert "## Criteria\n" + CRITERIA in request.last_user and DATA_NOTE in request.last_user
    assert request.json_schema["properties"]["score"]["maximum"] == 10
    agent = judge.get_evaluator_agent()
    assert agent.name == "strict_teacher" and agent.output_schema is NumericJudgeResponse
    assert own.output_schema is None  # the caller's agent is not mutated


def test_get_evaluator_agent_builds_the_judge_from_the_criteria(script):
    model = script({"passed": True, "reason": "ok"})
    agent = AgentAsJudgeEval(criteria=CRITERIA, model=model).get_evaluator_agent()
    assert isinstance(agent, LlmAgent) and agent.name == "criteria_judge"
    assert agent.output_schema["properties"]["passed"] == \
        BinaryJudgeResponse.model_json_schema()["properties"]["passed"]


def test_an_agno_agent_as_evaluator_is_refused_naming_what_to_pass():
    class Agent:  # agno.agent.Agent cannot run on ADK
        model = OpenAIChat()

    with pytest.raises(ConfigError) as info:
        AgentAsJudgeEval(criteria=CRITERIA, evaluator_agent=Agent())
    message = str(info.value)
    assert info.value.where == "evaluator_agent"
    assert "must be an ADK agent" in message and "pass model=..." in message


def test_telemetry_is_accepted_and_nothing_is_sent(script):
    model = script({"passed": True, "reason": "ok"})
    for telemetry in (True, False):
        judge = AgentAsJudgeEval(criteria=CRITERIA, model=model, telemetry=telemetry)
        assert judge.telemetry is telemetry
        assert judge.run(input="q", output="a").pass_rate == 100.0


def test_a_result_built_from_cases_computes_its_statistics_as_agnos_does():
    cases = [AgentAsJudgeEvaluation(input="q", output=o, criteria=CRITERIA, score=s,
                                    reason="r", passed=s >= 7) for o, s in (("a", 9), ("b", 5))]
    result = AgentAsJudgeResult(run_id="run-1", results=cases)
    assert (result.avg_score, result.min_score, result.max_score) == (7.0, 5.0, 9.0)
    assert result.pass_rate == 50.0 and result.passed_count == 1
    result.results.append(AgentAsJudgeEvaluation(input="q", output="c", criteria=CRITERIA,
                                                 score=10, reason="r", passed=True))
    result.compute_stats()
    assert result.max_score == 10.0 and result.pass_rate == pytest.approx(200 / 3)


def test_evaluator_agent_can_be_assigned_after_construction_as_in_agno(script):
    built = script({"passed": False, "reason": "built judge"})
    own_model = script({"passed": True, "reason": "own judge"})
    judge = AgentAsJudgeEval(criteria=CRITERIA, model=built)
    judge.evaluator_agent = judge.get_evaluator_agent()  # Agno's tests do this: a no-op
    assert judge.evaluator_agent is None
    judge.evaluator_agent = LlmAgent(name="own", model=litellm_model(own_model),
                                     instruction="Judge kindly.")
    assert judge.run(input="q", output="a").results[0].reason == "own judge"
    assert script.requests(built) == [] and len(script.requests(own_model)) == 1


def test_the_cookbooks_database_section_runs_as_written(script, tmp_path, capsys):
    """``agent_as_judge_basic.py`` and ``agent_as_judge_batch.py`` end by reading the logged
    runs back from the db they passed: ``db.get_eval_runs()``, the latest's ``run_id`` and
    ``name``. Here ``db`` is a studio store, and the lines run unchanged."""
    from studio.store import open_store

    db = open_store(f"sqlite:///{tmp_path}/evals.db", cached=False)
    model = script({"score": 8, "reason": "Clear."})
    evaluation = AgentAsJudgeEval(name="Explanation Quality", model=model, criteria=CRITERIA,
                                  scoring_strategy="numeric", threshold=7, db=db)
    first = evaluation.run(input="Explain what an API is", output="A menu of calls.")
    result = evaluation.run(input="Explain what an API is", output="A contract.")

    print("Database Results:")
    eval_runs = db.get_eval_runs()
    print(f"Total evaluations stored: {len(eval_runs)}")
    if eval_runs:
        latest = eval_runs[-1]
        print(f"Eval ID: {latest.run_id}")
        print(f"Name: {latest.name}")
        print(f"Cases evaluated: {len(result.results)}")

    printed = capsys.readouterr().out
    assert "Total evaluations stored: 2" in printed
    assert f"Eval ID: {result.run_id}\nName: Explanation Quality\nCases evaluated: 1" in printed
    assert [run.run_id for run in eval_runs] == [first.run_id, result.run_id]
    assert [run.run_id for run in evaluation.eval_runs()] == [result.run_id, first.run_id]
