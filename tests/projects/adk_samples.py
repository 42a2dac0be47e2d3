"""Agent folders in the shape ADK's published samples take (google/adk-samples): instruction
constants in ``prompt.py``, ``from . import agent`` in ``__init__.py``, function tools in
``tools.py``, sub-agents in ``sub_agents/``, one of them behind an ``AgentTool``, and a Gemini
model name, so a test proves the studio runs them as their authors wrote them."""

from __future__ import annotations

from pathlib import Path

from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
from google.adk.evaluation.eval_set import EvalSet
from google.genai import types

GEMINI = "gemini-2.5-flash"

FILES = {
    "__init__.py": '''"""Fact checker: answers a question about a fact, with its helpers."""

from . import agent
''',
    "prompt.py": '''"""Prompts of the fact checker and its sub-agents."""

CHECKER_PROMPT = """
You are a careful fact checker. Answer the user's question about a fact in one sentence,
using the lookup_fact tool when you are unsure.
"""

RESEARCHER_PROMPT = "You find the sources behind a claim."

SUMMARIZER_PROMPT = "You summarize a source in one sentence."
''',
    "tools.py": '''"""The fact checker's tools."""


def lookup_fact(topic: str) -> dict:
    """Looks a fact up in the checker's notes."""
    return {"topic": topic, "fact": "Water boils at 100 degrees Celsius at sea level."}
''',
    "sub_agents/__init__.py": "",
    "sub_agents/researcher/__init__.py": "from .agent import researcher_agent\n",
    "sub_agents/researcher/agent.py": '''from google.adk.agents import LlmAgent

from ... import prompt

MODEL = "{model}"

researcher_agent = LlmAgent(name="researcher", model=MODEL,
                            instruction=prompt.RESEARCHER_PROMPT,
                            description="Finds the sources behind a claim.")
''',
    "sub_agents/summarizer/__init__.py": "from .agent import summarizer_agent\n",
    "sub_agents/summarizer/agent.py": '''from google.adk import Agent

from ... import prompt

MODEL = "{model}"

summarizer_agent = Agent(model=MODEL, name="summarizer", instruction=prompt.SUMMARIZER_PROMPT)
''',
    "agent.py": '''"""The fact checker: a function tool, a sub-agent and an AgentTool."""

from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool

from . import prompt
from .sub_agents.researcher import researcher_agent
from .sub_agents.summarizer import summarizer_agent
from .tools import lookup_fact

MODEL = "{model}"

fact_checker = LlmAgent(
    name="fact_checker",
    model=MODEL,
    description="Answers questions about facts.",
    instruction=prompt.CHECKER_PROMPT,
    tools=[lookup_fact, AgentTool(agent=summarizer_agent)],
    sub_agents=[researcher_agent],
)

root_agent = fact_checker
''',
}


def write_sample_folder(parent: Path, name: str, *, model: str = GEMINI) -> Path:
    """The fact checker as an agent folder ``parent/name`` whose agents name ``model``, with
    its eval set ``facts.evalset.json``."""
    folder = parent / name
    for relative, text in FILES.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{model}", model), encoding="utf-8")
    write_fact_eval_set(folder / "facts.evalset.json")
    return folder


def write_fact_eval_set(path: Path) -> Path:
    """Two fact questions with their reference answers and no expected tool use, as ``adk
    web`` saves an eval set."""
    def case(eval_id: str, question: str, answer: str) -> EvalCase:
        return EvalCase(eval_id=eval_id, conversation=[Invocation(
            user_content=types.Content(role="user", parts=[types.Part.from_text(text=question)]),
            final_response=types.Content(role="model", parts=[types.Part.from_text(text=answer)]),
            intermediate_data=IntermediateData(tool_uses=[]))])
    eval_set = EvalSet(eval_set_id="facts", eval_cases=[
        case("boiling", "At what temperature does water boil at sea level?",
             "Water boils at 100 degrees Celsius at sea level."),
        case("planets", "How many planets orbit the Sun?",
             "Eight planets orbit the Sun.")])
    path.write_text(eval_set.model_dump_json(indent=2), encoding="utf-8")
    return path
