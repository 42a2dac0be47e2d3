"""Agent folders in the shape ADK's published samples use (github.com/google/adk-samples): the
instructions as constants in ``prompt.py``, ``from . import agent`` in ``__init__.py``, and an
``agent.py`` whose ``root_agent`` has a function tool, an agent behind an ``AgentTool`` and a
sub-agent, on a Gemini model name. Written fresh for the tests (nothing copied from a sample),
with the ways a person's folder goes wrong as small edits of it (:data:`BROKEN`)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.projects.test_adk_projects import write_eval_set

INIT = '''"""Haiku helper: writes a haiku, checks its facts, polishes the wording."""

from . import agent
'''

PROMPT = '''"""Instructions for the haiku helper's agents."""

WRITER_PROMPT = """You write a haiku about the topic the user gives.
Ask the fact checker when the topic names a real place."""

FACTS_PROMPT = """You check whether a statement about a place is true. Reply true or false."""

STYLE_PROMPT = """You polish a haiku's wording without changing its meaning."""
'''

AGENT = '''"""Haiku helper: the root agent and its helpers."""

from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool

from . import prompt

MODEL = {model!r}


def get_weather(city: str) -> dict:
    """Returns today's weather report for a city."""
    return {{"status": "success", "report": f"It is sunny in {{city}}."}}


fact_checker = LlmAgent(
    name="fact_checker",
    model={fact_model},
    description="Checks a statement about a place.",
    instruction=prompt.FACTS_PROMPT,
)

stylist = LlmAgent(
    name="stylist",
    model={style_model},
    description="Polishes the wording of a haiku.",
    instruction=prompt.STYLE_PROMPT,
)

root_agent = LlmAgent(
    name="haiku_writer",
    model={root_model},
    description="Writes haiku.",
    instruction=prompt.WRITER_PROMPT,
    tools=[get_weather, AgentTool(agent=fact_checker)],
    sub_agents=[stylist],
)
'''

LITELLM_IMPORT = "from google.adk.models.lite_llm import LiteLlm\n"


def write_sample_agent(parent: Path, name: str, *, model: str = "gemini-2.5-flash",
                       root_model: str = "MODEL", fact_model: str = "MODEL",
                       style_model: str = "MODEL") -> Path:
    """The sample-shaped folder ``parent/name`` with its eval set ``haiku.evalset.json``. The
    ``*_model`` arguments are Python expressions for each agent's ``model=`` (``MODEL`` is the
    folder's constant, ``model``; ``'LiteLlm(model="scripted/demo")'`` works too)."""
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(INIT, encoding="utf-8")
    (folder / "prompt.py").write_text(PROMPT, encoding="utf-8")
    code = AGENT.format(model=model, root_model=root_model, fact_model=fact_model,
                        style_model=style_model)
    if "LiteLlm(" in code:
        code = code.replace("from . import prompt\n", "from . import prompt\n" + LITELLM_IMPORT)
    (folder / "agent.py").write_text(code, encoding="utf-8")
    write_eval_set(folder / "haiku.evalset.json")
    return folder


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of ``path`` containing ``text``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


GRAPH_TAIL = '''

from google.adk.workflow import Workflow

{graph}
'''

BROKEN: dict[str, tuple[str, str, str]] = {
    # kind: (text appended to agent.py, the line it fails at, what the error says)
    "syntax error": ("\nbroken = LlmAgent(name='oops'\n", "broken = LlmAgent(",
                     "SyntaxError: '(' was never closed"),
    "client built at import without a key": (
        "\nfrom google import genai\n\nclient = genai.Client()\n", "client = genai.Client()",
        "ValueError: No API key was provided"),
    "sys.exit(3)": ("\nimport sys\n\nsys.exit(3)\n", "sys.exit(3)",
                    "it called sys.exit(3) while being imported"),
    "workflow with a cycle": (GRAPH_TAIL.format(graph=(
        "root_agent = Workflow(name='loop', edges=[('START', fact_checker), "
        "(fact_checker, stylist), (stylist, fact_checker)])")), "root_agent = Workflow(",
        "Unconditional cycle detected: "),  # which node it starts from varies by run
    "workflow with a self-loop": (GRAPH_TAIL.format(graph=(
        "root_agent = Workflow(name='again', edges=[('START', stylist), (stylist, stylist)])")),
        "root_agent = Workflow(", "Unconditional cycle detected: stylist -> stylist"),
    "workflow with an unknown node": (GRAPH_TAIL.format(graph=(
        "root_agent = Workflow(name='lost', edges=[('START', stylist), (stylist, 'nowhere')])")),
        "root_agent = Workflow(", "Workflow is invalid: edges.1"),
    "workflow with duplicate names": (GRAPH_TAIL.format(graph=(
        "root_agent = Workflow(name='twins', edges=[('START', stylist), "
        "(stylist, stylist.model_copy(update={'parent_agent': None}))])")),
        "root_agent = Workflow(", "Duplicate node names found: ['stylist']"),
}
"""Ways an agent folder fails while it is imported, each with the line and the cause the
one-line error must name."""


def break_sample(folder: Path, kind: str) -> tuple[int, str]:
    """Make the sample folder fail to import as :data:`BROKEN` ``kind`` says; returns the line
    its agent.py fails at and the cause the error must name."""
    tail, failing, cause = BROKEN[kind]
    path = folder / "agent.py"
    path.write_text(path.read_text(encoding="utf-8") + tail, encoding="utf-8")
    return line_of(path, failing), cause


def forget_modules(name: str) -> None:
    """Drop an imported sample package (a test that imports it again sees its new files)."""
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]
