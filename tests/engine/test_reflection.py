"""Reflection agents, one per evolvable component."""

from __future__ import annotations

import asyncio
import json

import pytest

from studio.engine.propose.reflection import (
    DEFAULT_REFLECTION_INSTRUCTION,
    OUTPUT_KEY,
    ReflectionOutcome,
    create_config_reflection_agent,
    create_reflection_agent,
    create_schema_reflection_agent,
    create_text_reflection_agent,
    run_reflection,
    split_proposal,
    validate_output_schema,
)
from studio.model.errors import ConfigError, TemplateError
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers.scripted import recorded_requests


def test_default_instruction_is_the_seed_text():
    assert DEFAULT_REFLECTION_INSTRUCTION.startswith("## Component Text to Improve\n"
                                                     "{component_text}\n\n## Trials\n{trials}")
    assert DEFAULT_REFLECTION_INSTRUCTION.endswith(
        "Return ONLY the improved component text, nothing else.")


def test_factories_use_the_output_key_and_tools():
    text = create_text_reflection_agent("scripted/demo")
    schema = create_schema_reflection_agent("scripted/demo")
    config = create_config_reflection_agent("scripted/demo")
    assert {a.output_key for a in (text, schema, config)} == {OUTPUT_KEY}
    assert validate_output_schema in schema.tools and not text.tools and not config.tools
    assert create_reflection_agent("output_schema", "scripted/demo").name == "schema_reflector"
    with pytest.raises(ConfigError, match="unknown component 'prompt'"):
        create_reflection_agent("prompt", "scripted/demo")


@pytest.mark.parametrize("instruction, missing", [
    ("Improve this: {component_text}", "{trials}"),
    ("Trials: {trials}", "{component_text}"),
    ("Make it better.", "{component_text} and {trials}"),
])
def test_custom_instruction_missing_a_placeholder_is_rejected(instruction, missing):
    with pytest.raises(TemplateError, match=f"must contain {missing}"):
        create_text_reflection_agent("scripted/demo", instruction=instruction)


def test_session_state_carries_component_text_and_trials_json(script):
    script("reflector", lambda request: "Better instruction.")
    trials = [{"feedback": {"score": 0.2, "feedback_text": "too long"},
               "trajectory": {"input": "q", "output": "a"}}]
    agent = create_text_reflection_agent("scripted/reflector")
    result = asyncio.run(run_reflection(agent, "Old instruction.", trials, AgentExecutor()))
    assert result.text == "Better instruction." and result.error is None
    prompt = recorded_requests("reflector")[-1].system
    assert "## Component Text to Improve\nOld instruction." in prompt
    assert json.dumps(trials) in prompt


def test_the_outcome_says_whether_a_text_was_proposed(script):
    """The proposer acts on the outcome, never on the error's words."""
    agent = create_text_reflection_agent(script("Better instruction."))
    proposed = asyncio.run(run_reflection(agent, "Old.", [], AgentExecutor()))
    assert proposed.outcome is ReflectionOutcome.PROPOSED and proposed.error is None

    def broken(request):
        raise RuntimeError("reflector exploded")

    agent = create_text_reflection_agent(script(broken))
    failed = asyncio.run(run_reflection(agent, "Old.", [], AgentExecutor(max_retries=0)))
    assert failed.outcome is ReflectionOutcome.FAILED and failed.text == ""
    assert "exploded" in (failed.error or "")


def test_fenced_proposals_split_reasoning():
    text, reasoning = split_proposal("I made it concise.\n```\nBe brief.\n```\nDone.")
    assert (text, reasoning) == ("Be brief.", "I made it concise.\nDone.")
    assert split_proposal("  Plain text.  ") == ("Plain text.", "")


def test_the_schema_validation_tool():
    assert validate_output_schema('{"type": "object"}') == {"valid": True}
    assert not validate_output_schema("{nope")["valid"]


def test_evaluator_details_reach_the_reflection_not_only_the_text():
    from studio.engine.propose.proposer import reflection_trials
    from studio.model.feedback import Feedback
    from studio.model.records import Split, Trial, TrialPhase

    verdicts = [{"requirement": "cites a source", "met": False, "reason": "no citation"}]
    trial = Trial(run_id="r", candidate_id=1, example_id=1, split=Split.TRAIN, example_index=0,
                  phase=TrialPhase.PARENT, output="an answer", score=0.5,
                  feedback=Feedback(score=0.5, text="1 of 2 requirements met",
                                    extra={"verdicts": verdicts, "rubric_path": ["a", "b"]}))
    [record] = reflection_trials([trial], [])
    details = record["feedback"]["feedback_details"]
    assert details["verdicts"] == verdicts and details["rubric_path"] == ["a", "b"]
    huge = trial.model_copy(update={"feedback": Feedback(score=0.5, extra={"x": "y" * 50_000})})
    [clipped] = reflection_trials([huge], [])
    assert len(json.dumps(clipped["feedback"]["feedback_details"])) < 1500
