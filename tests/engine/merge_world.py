"""A scripted world built so that two branches improve different components, and their merge
is better than either: the seeded scenario of the merge tests (also run in a child process).

The writer names the topic when its instruction says "name the topic", and writes calmly when
its temperature is at most 0.2. The critic wants the topic named on ``alpha`` topics and a calm
line on ``beta`` topics; naming the topic costs a little on ``beta`` topics, so the seed stays
best there and the Pareto front keeps two branches. The reflector adds the rule to the
instruction, and lowers the temperature in the generation config.
"""

from __future__ import annotations

import re
from typing import Any

from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec, RunSpec

WORLD = "merge_world"
MODEL = f"scripted/{WORLD}"
SEED_INSTRUCTION = "Write one line about the topic."
RULE = " Always name the topic."
CALM_CONFIG = "temperature: 0.1\n"
TRAINSET = [{"topic": "alpha one"}, {"topic": "beta one"}, {"topic": "beta two"},
            {"topic": "beta three"}]
COMPONENTS = ["instruction", "generate_content_config"]
SEED = 1
"""A seed under which the second iteration branches from the seed candidate (the tests check
that it does, so a change in how the engine draws says so instead of passing vacuously)."""

_OUTPUT = re.compile(r"<output-[0-9a-f]+>\n?(.*?)\n?</output-[0-9a-f]+>", re.S)


def reply(request: Any) -> str | dict[str, Any]:
    prompt = request.prompt_text
    if "## Component Text to Improve" in prompt:
        if "generation config in YAML" in prompt:
            return CALM_CONFIG
        text = prompt.split("## Component Text to Improve", 1)[1].split("## Trials", 1)[0]
        return text.strip() + RULE
    if request.json_schema:
        return critique(request.last_user)
    named = "name the topic" in request.system.lower()
    calm = request.temperature is not None and request.temperature <= 0.2
    return f"{request.last_user.strip()} | named={'yes' if named else 'no'} | " \
           f"calm={'yes' if calm else 'no'}"


def critique(prompt: str) -> dict[str, Any]:
    found = _OUTPUT.search(prompt)
    output = found.group(1) if found else ""
    named, calm = "named=yes" in output, "calm=yes" in output
    if "alpha" in output:
        score = 1.0 if named else 0.0
    else:
        score = 1.0 if calm else (0.25 if named else 0.5)
    return {"score": score, "feedback": f"named={named}, calm={calm}"}


def spec() -> RunSpec:
    return RunSpec(
        agent=AgentSpec(name="writer", model=MODEL, instruction=SEED_INSTRUCTION),
        critic=CriticSpec(name="rule_critic", agent=AgentSpec(name="critic", model=MODEL)),
        reflection=ReflectionSpec(model=MODEL), components=list(COMPONENTS))


def config(**updates: Any) -> dict[str, Any]:
    """The scenario's run settings: the whole trainset as minibatch, merges on."""
    return {"max_iterations": 3, "minibatch_size": 4, "seed": SEED, "use_merge": True,
            **updates}


# --------------------------------------------------------------------------- two agents

GROUP_WORLD = "merge_group_world"
GROUP_MODEL = f"scripted/{GROUP_WORLD}"
GROUP_COMPONENTS = ["drafter.instruction", "finisher.generate_content_config"]
FINISHER_INSTRUCTION = "Finish this line: {draft}"
_AGENT = re.compile(r'internal name is "([^"]+)"')


def group_reply(request: Any) -> str | dict[str, Any]:
    """The same world as two agents: the drafter names the topic (its instruction), the
    finisher (the primary) writes calmly (its temperature), so each branch improves one agent."""
    prompt = request.prompt_text
    if "## Component Text to Improve" in prompt or request.json_schema:
        return reply(request)
    agent = _AGENT.search(request.system)
    first_user = next((m["content"] for m in request.messages if m["role"] == "user"), "")
    if agent and agent.group(1) == "finisher":
        draft = request.system.split("Finish this line:", 1)[-1].split("\n\nYou are an agent")[0]
        calm = request.temperature is not None and request.temperature <= 0.2
        return f"{draft.strip()} | calm={'yes' if calm else 'no'}"
    named = "name the topic" in request.system.lower()
    return f"{first_user.strip()} | named={'yes' if named else 'no'}"


def group_spec() -> RunSpec:
    return RunSpec(
        agents=[AgentSpec(name="drafter", model=GROUP_MODEL, instruction=SEED_INSTRUCTION,
                          output_key="draft"),
                AgentSpec(name="finisher", model=GROUP_MODEL, instruction=FINISHER_INSTRUCTION)],
        critic=CriticSpec(name="rule_critic", agent=AgentSpec(name="critic", model=GROUP_MODEL)),
        reflection=ReflectionSpec(model=GROUP_MODEL), components=list(GROUP_COMPONENTS))
