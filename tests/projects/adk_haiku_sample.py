"""Agent folders shaped as ADK's published samples lay them out (google/adk-samples): a
licence header, ``from . import agent`` in ``__init__.py``, the instruction a constant in
``prompt.py`` read as ``prompt.X_PROMPT``, a function tool in ``tools.py``, a sub-agent in
``sub_agents/<name>/`` with its own ``prompt.py``, and a Gemini model name. Until the run takes
a model override, the model is a scripted LiteLLM model written where the sample names Gemini
(``MODEL``), so the folder runs offline."""

from __future__ import annotations

from pathlib import Path

HEADER = """# Copyright 2026 Example LLC
#
# Licensed under the Apache License, Version 2.0 (the "License").
"""

COORDINATOR_PROMPT = "Write a haiku about the given topic."
RESEARCHER_PROMPT = "Find one fact about the topic and state it in a sentence."

AGENT_PY = HEADER + '''
"""Haiku coordinator: writes a haiku, asks its researcher for facts."""

from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm

from . import prompt
from .sub_agents.researcher import researcher_agent
from .tools import count_syllables

# The sample says MODEL = "gemini-2.5-flash"; a scripted model keeps the tests offline.
MODEL = {model}


haiku_coordinator = LlmAgent(
    name="haiku_coordinator",
    model=MODEL,
    description=(
        "writes a haiku about a topic, "
        "with facts from its researcher"
    ),
    instruction=prompt.COORDINATOR_PROMPT,
    output_key="haiku",
    tools=[count_syllables],
    sub_agents=[researcher_agent],
)

root_agent = haiku_coordinator
'''

PROMPT_PY = HEADER + '''
"""Prompt for the haiku coordinator."""

# Kept short on purpose: the studio evolves it.
COORDINATOR_PROMPT = """{text}"""
'''

TOOLS_PY = HEADER + '''
"""Tools of the coordinator."""


def count_syllables(line: str) -> dict:
    """Counts the syllables of a line, roughly (vowel groups)."""
    groups, previous = 0, False
    for char in line.lower():
        vowel = char in "aeiouy"
        groups += vowel and not previous
        previous = vowel
    return {"syllables": groups}
'''

RESEARCHER_AGENT_PY = HEADER + '''
"""Researcher: one fact about the topic."""

from google.adk import Agent
from google.adk.models.lite_llm import LiteLlm

from . import prompt

MODEL = {model}


researcher_agent = Agent(
    model=MODEL,
    name="researcher",
    instruction=prompt.RESEARCHER_PROMPT,
    output_key="fact",
)
'''

RESEARCHER_PROMPT_PY = HEADER + '''
"""Prompt for the researcher."""

RESEARCHER_PROMPT = """{text}"""
'''


def write_sample_folder(parent: Path, name: str, *, model: str = 'LiteLlm(model="scripted/demo")',
                        coordinator: str = COORDINATOR_PROMPT,
                        researcher: str = RESEARCHER_PROMPT) -> Path:
    """The sample-shaped folder ``parent/name`` (its name must be unique per test process:
    Python caches an imported package)."""
    folder = parent / name
    (folder / "sub_agents" / "researcher").mkdir(parents=True)
    files = {
        "__init__.py": HEADER + "\nfrom . import agent\n",
        "agent.py": AGENT_PY.format(model=model),
        "prompt.py": PROMPT_PY.format(text=coordinator),
        "tools.py": TOOLS_PY,
        "sub_agents/__init__.py": "",
        "sub_agents/researcher/__init__.py": HEADER + "\nfrom .agent import researcher_agent\n",
        "sub_agents/researcher/agent.py": RESEARCHER_AGENT_PY.format(model=model),
        "sub_agents/researcher/prompt.py": RESEARCHER_PROMPT_PY.format(text=researcher),
    }
    for relative, text in files.items():
        (folder / relative).write_text(text, encoding="utf-8")
    return folder
