"""Small builders shared by the tests (the scripted demo world lives in studio.llm.demo)."""

from __future__ import annotations

from studio.critics import SimpleCriticOutput
from studio.domain import AgentSpec, CriticSpec, ReflectionSpec, RunSpec

TOPICS = ["autumn leaves", "morning coffee", "city rain", "old bridge", "snow owl"]
BASE_INSTRUCTION = "Write a haiku about the given topic."


def trainset(n: int = 5) -> list[dict]:
    return [{"topic": t} for t in TOPICS[:n]]


def demo_spec(model: str = "scripted/demo", **updates) -> RunSpec:
    spec = RunSpec(
        agent=AgentSpec(name="writer", model=model, instruction=BASE_INSTRUCTION),
        critic=CriticSpec(name="rule_critic", agent=AgentSpec(name="critic", model=model)),
        reflection=ReflectionSpec(model=model),
    )
    return spec.model_copy(update=updates)


def writer(model: str = "scripted/demo", instruction: str = BASE_INSTRUCTION):
    return AgentSpec(name="writer", model=model, instruction=instruction).build()


def critic(model: str = "scripted/demo"):
    return AgentSpec(name="critic", model=model, instruction="Evaluate the haiku.",
                     output_schema=SimpleCriticOutput.model_json_schema()).build()
