"""Models by ADK's names: a bare Gemini name is ADK's ``Gemini`` (no LiteLLM, no network call),
its credentials checked by ADK's environment variables; LiteLLM strings keep working."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.google_llm import Gemini
from google.adk.models.lite_llm import LiteLlm

from studio.engine.hosting.build import agent_model_string, check_spec_models
from studio.model.errors import ModelConfigError
from studio.model.records import AgentSpec
from studio.projects.files import parse_project
from studio.runtime.agents import build_agent
from studio.runtime.providers import check_model

GOOGLE_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
                    "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")


@pytest.fixture
def no_google_env(monkeypatch):
    for name in GOOGLE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("name", ["gemini-2.5-flash",
                                  "projects/p/locations/us-central1/publishers/google/models/"
                                  "gemini-2.5-flash"])
def test_a_bare_gemini_name_is_adks_gemini_class(name):
    agent = build_agent(AgentSpec(name="writer", model=name, instruction="Write."))
    assert isinstance(agent.model, Gemini)  # ADK's class, priced and rate-limited by the studio
    assert agent.model.model == name


@pytest.mark.parametrize("name", ["gemini/gemini-2.5-flash", "scripted/demo", "local/smollm2",
                                  "ollama_chat/llama3.2", "gpt-4o-mini"])
def test_litellm_strings_stay_litellm(name):
    agent = build_agent(AgentSpec(name="writer", model=name, instruction="Write."))
    assert isinstance(agent.model, LiteLlm)
    assert agent.model.model == name


def test_a_missing_key_names_adks_variables(no_google_env):
    with pytest.raises(ModelConfigError) as caught:
        check_model("gemini-2.5-flash")
    message = str(caught.value)
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
                 "GOOGLE_CLOUD_PROJECT"):
        assert name in message
    assert "ADK's Gemini" in message


def test_an_ai_studio_key_is_enough(no_google_env):
    no_google_env.setenv("GEMINI_API_KEY", "test-key-not-used")
    check_model("gemini-2.5-flash")


def test_vertex_by_adks_switch_needs_a_project(no_google_env):
    no_google_env.setenv("GOOGLE_GENAI_USE_VERTEXAI", "TRUE")
    with pytest.raises(ModelConfigError, match="on Vertex AI .* needs GOOGLE_CLOUD_PROJECT"):
        check_model("gemini-2.5-flash")
    no_google_env.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    check_model("gemini-2.5-flash")


def test_a_project_naming_gemini_by_adks_name_is_checked_before_the_run(no_google_env):
    project = parse_project("""
name: bare
agent: {model: gemini-2.5-flash, instruction: Answer.}
critic: {type: evaluator, evaluator: {evaluator: exact_match}}
reflection: {model: scripted/demo}
dataset: {train: [{question: hi, expected: hello}]}
""")
    with pytest.raises(ModelConfigError, match="GOOGLE_API_KEY") as caught:
        check_spec_models(project.run_spec())
    assert caught.value.where == "agent.model"


def test_evolve_reads_an_agents_bare_gemini_name_as_adk_does():
    """evolve(agent) rebuilds the agent from its model name: the name is kept for ADK to
    resolve, not rewritten into LiteLLM's gemini/ form."""
    assert agent_model_string(LlmAgent(name="a", model="gemini-2.5-flash")) == "gemini-2.5-flash"
    assert agent_model_string(LlmAgent(name="a", model=LiteLlm(model="scripted/demo"))) == \
        "scripted/demo"


def test_evolve_on_an_agent_named_by_adk_checks_adks_variables_first(no_google_env):
    from studio import EvolutionConfig, evolve_sync
    from studio.evaluators import ExactMatch

    agent = LlmAgent(name="writer", model="gemini-2.5-flash", instruction="Answer.")
    with pytest.raises(ModelConfigError, match="ADK's Gemini, which needs GOOGLE_API_KEY"):
        evolve_sync(agent=agent, trainset=[{"input": "hi", "expected": "hello"}],
                    critic=ExactMatch(), reflection_model="scripted/demo",
                    config=EvolutionConfig(max_iterations=1))
