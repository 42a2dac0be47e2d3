"""Finding where an agent folder writes each component, and writing a new value there with every
other byte kept (libcst), on folders shaped as ADK's samples. The oracle for a rewritten value
is Python's own ``ast`` reading the new file, never the code under test."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from studio.projects.agent_source import Found, Refusal, SourceFolder
from studio.projects.source_literals import new_value, rewrite
from tests.projects.adk_haiku_sample import (
    COORDINATOR_PROMPT,
    RESEARCHER_PROMPT,
    write_sample_folder,
)

NEW = 'Write a haiku about the given topic.\nRule: three lines, a "season word" \\ and end."'


def constant(code: str, name: str):
    """The value a module's top-level ``name = <literal>`` holds, read by ``ast``."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"no constant {name}")


def keyword(code: str, agent: str, name: str):
    """The literal value of ``name=`` in the constructor of the agent called ``agent``."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call):
            words = {k.arg: k.value for k in node.keywords}
            if "name" in words and ast.literal_eval(words["name"]) == agent and name in words:
                return ast.literal_eval(words[name])
    raise AssertionError(f"no {name}= in agent {agent}")


def written(found: Found, component: str, text: str) -> tuple[str, str]:
    """(the file before, the file after) writing ``text`` at ``found``."""
    node = new_value(found, component, text)
    return found.module.tree.code, rewrite(found.module, {id(found.node): node})


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    """The lines before and after the first and last differing lines are the same byte for
    byte; the differing block of each."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    tail = next(i for i, (x, y) in enumerate(zip(a[::-1], b[::-1], strict=False)) if x != y)
    assert a[:head] == b[:head] and a[len(a) - tail:] == b[len(b) - tail:]
    return a[head:len(a) - tail], b[head:len(b) - tail]


def test_a_samples_prompt_constant_is_found_by_its_value_and_rewritten_in_place(tmp_path):
    folder = write_sample_folder(tmp_path, "sample_a")
    source = SourceFolder(folder)
    assert source.root_agent_name() == "haiku_coordinator"
    found = source.locate(None, "instruction", COORDINATOR_PROMPT)
    assert isinstance(found, Found), found
    assert found.where == "prompt.py:8 (the constant COORDINATOR_PROMPT)"
    old, new = written(found, "instruction", NEW)
    assert constant(new, "COORDINATOR_PROMPT") == NEW
    before, after = changed_lines(old, new)
    assert before == ['COORDINATOR_PROMPT = """Write a haiku about the given topic."""\n']
    assert after[0].startswith('COORDINATOR_PROMPT = """') and len(after) == 2
    assert "# Kept short on purpose: the studio evolves it." in new


def test_a_sub_agents_instruction_is_found_through_its_own_package(tmp_path):
    folder = write_sample_folder(tmp_path, "sample_b")
    found = SourceFolder(folder).locate("researcher", "instruction", RESEARCHER_PROMPT)
    assert isinstance(found, Found), found
    assert found.where == "sub_agents/researcher/prompt.py:7 (the constant RESEARCHER_PROMPT)"
    _old, new = written(found, "instruction", "State one fact.")
    assert constant(new, "RESEARCHER_PROMPT") == "State one fact."


ROUTER = '''"""A router whose helpers share one prompt."""

from google.adk.agents import LlmAgent

from .prompt import SHARED_PROMPT

helper_a = LlmAgent(name="helper_a", model="gemini-2.5-flash", instruction=SHARED_PROMPT)
helper_b = LlmAgent(name="helper_b", model="gemini-2.5-flash", instruction=SHARED_PROMPT)

root_agent = LlmAgent(
    name="router",
    model="gemini-2.5-flash",
    instruction=(
        "You route each question to a helper. "  # keep it short
        "Answer briefly."
    ),
    sub_agents=[helper_a, helper_b],
)
'''


def write_router(parent: Path, name: str) -> Path:
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(ROUTER)
    (folder / "prompt.py").write_text("SHARED_PROMPT = 'Answer as a helper.'\n")
    return folder


def test_an_implicit_concatenation_stays_one_with_its_parentheses_and_comment(tmp_path):
    source = SourceFolder(write_router(tmp_path, "router_a"))
    found = source.locate(None, "instruction", "You route each question to a helper. "
                                                "Answer briefly.")
    assert isinstance(found, Found), found
    assert found.where == "agent.py:14 (the instruction= argument)"
    text = ("You route each question to the helper that knows its subject best, and you say "
            "which one you chose.\nAnswer briefly, in one sentence.")
    old, new = written(found, "instruction", text)
    assert keyword(new, "router", "instruction") == text
    _before, after = changed_lines(old, new)
    assert "".join(after).count("# keep it short") == 1
    assert all(len(line) <= 100 for line in after)
    assert after[-1].strip() == '"Answer briefly, in one sentence."' or \
        '"Answer briefly, in one sentence."' in "".join(after)
    assert "    instruction=(\n" in new and "\n    ),\n    sub_agents" in new


def test_agents_sharing_one_constant_are_named(tmp_path):
    source = SourceFolder(write_router(tmp_path, "router_b"))
    found = source.locate("helper_a", "instruction", "Answer as a helper.")
    assert isinstance(found, Found), found
    assert found.where == "prompt.py:1 (the constant SHARED_PROMPT)"
    assert [call.name for call in source.sharing(found, "instruction")] == ["helper_a",
                                                                            "helper_b"]
    _old, new = written(found, "instruction", "It's a helper's answer.")
    assert new == 'SHARED_PROMPT = "It\'s a helper\'s answer."\n' or \
        constant(new, "SHARED_PROMPT") == "It's a helper's answer."


COMPUTED = '''import textwrap
from pathlib import Path

from google.adk.agents import LlmAgent

NAME = "haiku"
BASE = "Write a haiku."
BASE += " Briefly."

a = LlmAgent(name="f_string", instruction=f"Write a {NAME}.")
b = LlmAgent(name="plus", instruction="Write a " + NAME)
c = LlmAgent(name="call", instruction=textwrap.dedent("""
    Write a haiku."""))
d = LlmAgent(name="file", instruction=Path("prompt.txt").read_text())
e = LlmAgent(name="augmented", instruction=BASE)
f = LlmAgent(name="missing", model="gemini-2.5-flash")
root_agent = LlmAgent(name="root", sub_agents=[a, b, c, d, e, f])
'''


@pytest.mark.parametrize(("agent", "message"), [
    ("f_string", "the instruction of agent 'f_string' is computed at run time at agent.py:10: "
                 "an f-string; only a literal can be rewritten"),
    ("plus", "at agent.py:11: a concatenation (+)"),
    ("call", "at agent.py:12: a function call (textwrap.dedent(...))"),
    ("file", "at agent.py:14: a file read (Path.read_text(...))"),
    ("augmented", "at agent.py:15: BASE is built up with += in agent.py"),
    ("missing", "agent 'missing' (agent.py:16) has no instruction= argument to rewrite"),
])
def test_a_text_computed_at_run_time_is_refused_naming_the_place(tmp_path, agent, message):
    folder = tmp_path / "computed"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(COMPUTED)
    refusal = SourceFolder(folder).locate(agent, "instruction", "Write a haiku.")
    assert isinstance(refusal, Refusal)
    assert message in refusal.reason


def test_a_file_changed_since_the_run_started_is_refused_naming_what_was_expected(tmp_path):
    folder = write_sample_folder(tmp_path, "sample_c", coordinator="Write a limerick.")
    refusal = SourceFolder(folder).locate(None, "instruction", COORDINATOR_PROMPT)
    assert isinstance(refusal, Refusal)
    assert refusal.reason.startswith(
        "prompt.py:8 (the constant COORDINATOR_PROMPT) no longer holds the instruction run "
        "started from: expected 'Write a haiku about the given topic.', found 'Write a "
        "limerick.'. The file changed since the run started")


CONFIGURED = '''from google.adk.agents import LlmAgent
from google.genai import types
from pydantic import BaseModel


class Reply(BaseModel):
    text: str


root_agent = LlmAgent(
    name="writer",
    model="gemini-2.5-flash",
    instruction="Write.",
    output_schema={"type": "object", "properties": {"haiku": {"type": "string"}}},
    generate_content_config=types.GenerateContentConfig(
        temperature=0.7,  # warm
        safety_settings=[],
    ),
    sub_agents=[LlmAgent(name="typed", output_schema=Reply)],
)
'''


def test_a_literal_schema_and_config_are_rewritten_and_a_class_is_refused(tmp_path):
    folder = tmp_path / "configured"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(CONFIGURED)
    source = SourceFolder(folder)
    schema = {"type": "object", "properties": {"haiku": {"type": "string"}}}
    found = source.locate(None, "output_schema", json.dumps(schema))
    assert isinstance(found, Found), found
    richer = schema | {"description": "A haiku and nothing else.", "required": ["haiku"]}
    _old, new = written(found, "output_schema", json.dumps(richer))
    assert keyword(new, "writer", "output_schema") == richer

    config = source.locate(None, "generate_content_config", "temperature: 0.7\n")
    assert isinstance(config, Found), config
    old, new = written(config, "generate_content_config",
                       "temperature: 0.2\nmax_output_tokens: 256\n")
    _before, after = changed_lines(old, new)
    assert "".join(after) == textwrap.indent(
        "temperature=0.2,  # warm\nsafety_settings=[],\nmax_output_tokens=256,\n", " " * 8)

    refusal = source.locate("typed", "output_schema", "{}")
    assert isinstance(refusal, Refusal)
    assert refusal.reason == ("the output_schema of agent 'typed' at agent.py:19 is the class "
                              "Reply (defined at agent.py:6), not a literal: only a literal can "
                              "be rewritten")
