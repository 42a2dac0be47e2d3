"""The embedded SmolLM2 model, for real (offline, in-process llama.cpp)."""

from __future__ import annotations

import asyncio
import json

import litellm
import pytest

from studio.critics.agent import SimpleCriticOutput
from studio.model.records import AgentSpec
from studio.runtime.agents import build_agent
from studio.runtime.providers import LOCAL_MODEL, register_providers

pytestmark = pytest.mark.local_model


def complete(**kwargs):
    register_providers()
    return asyncio.run(litellm.acompletion(model=LOCAL_MODEL, **kwargs))


def test_plain_reply_reports_usage_and_honours_max_tokens():
    response = complete(messages=[{"role": "user", "content": "Name three colours."}],
                        temperature=0.0, max_tokens=8)
    assert response.choices[0].message.content.strip()
    assert 0 < response.usage.completion_tokens <= 8
    assert response.usage.prompt_tokens > 0


def test_stop_sequence_is_honoured():
    response = complete(messages=[{"role": "user", "content": "Count: 1, 2, 3, 4, 5, 6"}],
                        temperature=0.0, max_tokens=40, stop=[","])
    assert "," not in response.choices[0].message.content


def test_json_schema_reply_always_parses_and_respects_bounds():
    schema = SimpleCriticOutput.model_json_schema()
    response = complete(
        messages=[{"role": "system", "content": "Rate the poem from 0 to 1."},
                  {"role": "user", "content": "Roses are red."}],
        temperature=0.7, top_p=0.9,
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}})
    verdict = SimpleCriticOutput.model_validate(json.loads(response.choices[0].message.content))
    assert 0.0 <= verdict.score <= 1.0


def test_async_calls_do_not_block_the_event_loop():
    register_providers()

    async def run():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        await litellm.acompletion(model=LOCAL_MODEL, max_tokens=24,
                                  messages=[{"role": "user", "content": "Say hello."}])
        task.cancel()
        return ticks

    assert asyncio.run(run()) > 3


def test_writer_and_simple_critic_on_the_embedded_model():
    from studio.critics.agent import CriticScorer
    from studio.runtime.execution import AgentExecutor

    executor = AgentExecutor(timeout_s=300)
    writer = build_agent(AgentSpec(name="writer", model=LOCAL_MODEL,
                       instruction="Write a haiku about the given topic.",
                       generate_content_config={"max_output_tokens": 16}))
    critic = build_agent(AgentSpec(name="critic", model=LOCAL_MODEL,
                       instruction="Evaluate this haiku. Score 0.0-1.0 and explain.",
                       output_schema=SimpleCriticOutput.model_json_schema()))
    poem = executor.execute_sync(writer, "topic: autumn leaves")
    assert poem.ok and poem.output.strip() and poem.trace["usage"]["total_tokens"] > 0
    score, metadata = CriticScorer(critic, executor).score("topic: autumn leaves", poem.output)
    assert 0.0 <= score <= 1.0
    assert isinstance(metadata["feedback"], str) and metadata["feedback"].strip()


def test_two_demonstrations_turn_the_embedded_models_sentence_into_the_answer():
    """Why ``few_shot`` exists (docs/guides/reflection.md): under ADK's system prompt
    SmolLM2 answers with a sentence whatever the instruction says; two demonstrations given as
    earlier turns of the conversation (through the real ADK + LiteLLM path) make it answer the
    way they do. Greedy decoding, so the replies do not depend on a seed."""
    from studio.runtime.execution import AgentExecutor

    executor = AgentExecutor(timeout_s=300)
    settings = {"temperature": 0.0, "max_output_tokens": 24}
    demos = [{"input": "What is the capital of Germany?", "output": "Berlin"},
             {"input": "What is the capital of Italy?", "output": "Rome"}]
    plain = build_agent(AgentSpec(name="answerer", model=LOCAL_MODEL,
                                  instruction="Answer the question.",
                                  generate_content_config=settings))
    shown = build_agent(AgentSpec(name="answerer", model=LOCAL_MODEL,
                                  instruction="Answer the question.",
                                  generate_content_config=settings, few_shot=demos))
    question = "What is the capital of France?"
    sentence = executor.execute_sync(plain, question)
    answer = executor.execute_sync(shown, question)
    assert sentence.ok and answer.ok
    assert len(sentence.output.split()) > 3  # "The capital of France is Paris."
    assert "paris" in answer.output.lower() and len(answer.output.split()) <= 2, answer.output
