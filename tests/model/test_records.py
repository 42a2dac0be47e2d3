"""Agent specs, dataset examples and their validation."""

from __future__ import annotations

import pytest

from studio.model.errors import ConfigError, DatasetError, SchemaError
from studio.model.records import (
    AgentSpec,
    config_from_yaml,
    example_input_text,
    example_state,
    instruction_placeholders,
    validate_examples,
    validate_json_schema,
)
from studio.runtime.agents import build_agent


def test_agent_spec_builds_a_real_adk_agent():
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm

    spec = AgentSpec(name="writer", model="scripted/demo", instruction="Write.",
                     output_schema={"type": "object", "properties": {"a": {"type": "string"}}},
                     generate_content_config={"temperature": 0.2, "top_p": 0.9,
                                              "max_output_tokens": 64})
    agent = build_agent(spec)
    assert isinstance(agent, LlmAgent) and isinstance(agent.model, LiteLlm)
    assert agent.model.model == "scripted/demo"
    assert agent.generate_content_config.temperature == 0.2
    assert agent.generate_content_config.max_output_tokens == 64
    assert agent.output_schema["properties"]["a"]["type"] == "string"


def test_malformed_output_schema_names_the_path():
    with pytest.raises(ValueError, match="invalid JSON Schema at properties/a/type"):
        AgentSpec(output_schema={"type": "object", "properties": {"a": {"type": "strng"}}})
    with pytest.raises(SchemaError, match="not valid JSON"):
        validate_json_schema("{not json")
    with pytest.raises(SchemaError, match="describe an object"):
        validate_json_schema({"type": "string"})


def test_config_yaml_errors_say_what_is_wrong():
    with pytest.raises(ConfigError, match="YAML does not parse"):
        config_from_yaml("temperature: [")
    with pytest.raises(ConfigError, match="temperature"):
        config_from_yaml("temperature: 9")
    with pytest.raises(ConfigError, match="mapping"):
        config_from_yaml("- a")


def test_example_to_input_text():
    assert example_input_text({"topic": "autumn leaves"}) == "topic: autumn leaves"
    assert example_input_text({"input": "2+2?", "expected": "4"}) == "2+2?"
    assert example_input_text({"q": "hi", "n": 3, "expected": "x"}) == "q: hi\nn: 3"
    assert example_input_text({"question": "why?", "id": 1}, "question") == "why?"
    assert example_state({"topic": "a", "expected": "b"}) == {"topic": "a"}


@pytest.mark.parametrize("rows, message", [
    ([], "trainset is empty"),
    ("not a list", "must be a list"),
    ([{"topic": "a"}, "row"], r"trainset\[1\]: each example must be a mapping"),
    ([{}], r"trainset\[0\]: example has no input fields"),
    ([{"expected": "x"}], "no input fields"),
])
def test_bad_dataset_rows(rows, message):
    with pytest.raises(DatasetError, match=message):
        validate_examples(rows)


def test_instruction_placeholders_ignore_optional_and_json():
    text = 'Write about {topic}. Optional {mood?}. JSON like {"a": 1}.'
    assert instruction_placeholders(text) == {"topic"}
