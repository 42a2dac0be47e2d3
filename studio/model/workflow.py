"""Multi-agent runs: the shape of a workflow, component keys per agent, and what state each
agent can read.

A single-agent run keys its components by name (``instruction``); a group or workflow run keys
them by agent and name (``writer.instruction``), so a candidate is one flat mapping either way
and everything that stores, diffs or exports components treats the key as an opaque string.

A workflow is a tree of ADK workflow agents: ``sequential`` runs its steps in order, ``loop``
runs them in order ``max_iterations`` times, ``parallel`` runs them concurrently. A step is an
agent's name or a nested workflow. The same tree describes a declared workflow (project files,
the Projects page) and a live ADK object handed to :func:`studio.evolve_workflow`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator

from studio.model.base import ConfigModel
from studio.model.errors import ConfigError

MAX_WORKFLOW_DEPTH = 5
"""How deeply workflows may nest (gepa-adk's ``max_depth`` default)."""
MAX_LOOP_ITERATIONS = 20


class WorkflowKind(StrEnum):
    SEQUENTIAL = "sequential"
    LOOP = "loop"
    PARALLEL = "parallel"


class WorkflowSpec(ConfigModel):
    """A workflow agent: its kind, name and steps (agent names or nested workflows)."""

    type: WorkflowKind = WorkflowKind.SEQUENTIAL
    """How the steps run: one after the other, in a loop, or side by side."""
    name: str = Field(default="workflow", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                      max_length=64)
    """The workflow agent's name (an identifier, at most 64 characters)."""
    steps: list[str | WorkflowSpec] = Field(min_length=1)
    """Its steps, in order: agent names (of ``agents:``) or nested workflows."""
    max_iterations: int = Field(default=2, ge=1, le=MAX_LOOP_ITERATIONS)
    """For ``loop``: how many times the steps run (ADK's ``LoopAgent.max_iterations``)."""

    @field_validator("steps")
    @classmethod
    def _names_are_identifiers(cls, steps: list[str | WorkflowSpec]) -> list[str | WorkflowSpec]:
        for step in steps:
            if isinstance(step, str) and not step.isidentifier():
                raise ValueError(f"step {step!r} is not an agent name")
        return steps

    def agent_names(self) -> list[str]:
        """Every agent named in the tree, in the order they first run."""
        names: list[str] = []
        for step in self.steps:
            for name in ([step] if isinstance(step, str) else step.agent_names()):
                if name not in names:
                    names.append(name)
        return names

    def depth(self) -> int:
        return 1 + max((s.depth() for s in self.steps if isinstance(s, WorkflowSpec)), default=0)

    def workflow_names(self) -> list[str]:
        return [self.name] + [n for s in self.steps if isinstance(s, WorkflowSpec)
                              for n in s.workflow_names()]


WorkflowSpec.model_rebuild()


def sequential(names: list[str], name: str = "pipeline") -> WorkflowSpec:
    """The workflow of a group: its agents one after the other (gepa-adk's ``evolve_group``)."""
    return WorkflowSpec(type=WorkflowKind.SEQUENTIAL, name=name, steps=list(names))


def last_agent(workflow: WorkflowSpec) -> str:
    """The agent whose output a workflow ends with (the default ``primary``): the last step,
    descending into a nested last step."""
    last = workflow.steps[-1]
    return last if isinstance(last, str) else last_agent(last)


def check_workflow(workflow: WorkflowSpec, agent_names: list[str], *,
                   max_depth: int = MAX_WORKFLOW_DEPTH, where: str = "workflow") -> None:
    """Every step names a declared agent once; nesting within ``max_depth``; names unique."""
    if workflow.depth() > max_depth:
        raise ConfigError(f"workflows nest {workflow.depth()} deep; the limit is {max_depth} "
                          "(max_depth)", where=where)
    steps = _all_steps(workflow)
    unknown = [s for s in steps if s not in agent_names]
    if unknown:
        raise ConfigError(f"step {unknown[0]!r} is not one of the agents {agent_names}",
                          where=where, value=unknown[0])
    repeated = sorted({s for s in steps if steps.count(s) > 1})
    if repeated:
        raise ConfigError(f"agent {repeated[0]!r} appears twice in the workflow (an ADK agent "
                          "has one parent: declare a second agent)", where=where,
                          value=repeated[0])
    unused = [n for n in agent_names if n not in steps]
    if unused:
        raise ConfigError(f"agent {unused[0]!r} is declared but not in the workflow",
                          where=where, value=unused[0])
    clash = sorted(set(workflow.workflow_names()) & set(agent_names))
    names = workflow.workflow_names()
    if clash or len(set(names)) != len(names):
        raise ConfigError("workflow names must differ from each other and from agent names "
                          f"({clash[0] if clash else names})", where=where)


def _all_steps(workflow: WorkflowSpec) -> list[str]:
    steps: list[str] = []
    for step in workflow.steps:
        steps.extend([step] if isinstance(step, str) else _all_steps(step))
    return steps


# --------------------------------------------------------------------------- component keys


def qualify(agent: str, component: str) -> str:
    return f"{agent}.{component}"


def split_component(key: str) -> tuple[str | None, str]:
    """``("writer", "instruction")`` for ``writer.instruction``; ``(None, key)`` unqualified."""
    agent, dot, component = key.rpartition(".")
    return (agent, component) if dot else (None, key)


def components_by_agent(keys: list[str] | dict[str, Any]) -> dict[str, list[str]]:
    """Qualified keys grouped by agent, in their order."""
    grouped: dict[str, list[str]] = {}
    for key in keys:
        agent, component = split_component(key)
        grouped.setdefault(agent or "", []).append(component)
    return grouped


# --------------------------------------------------------------------------- state guard


def state_before(workflow: WorkflowSpec, output_keys: dict[str, str | None]
                 ) -> dict[str, set[str]]:
    """For each agent, the state keys earlier agents have written when it starts: the
    ``output_key`` of every agent that finishes before it on every path. Steps of a sequence see
    their predecessors; branches of a parallel agent do not see each other (they run
    concurrently), but what follows the parallel agent sees them all; a loop's first iteration
    is what counts (later iterations see more, but the first must already fill the
    instruction)."""
    seen: dict[str, set[str]] = {}
    _walk(workflow, set(), output_keys, seen)
    return seen


def _walk(node: str | WorkflowSpec, before: set[str], output_keys: dict[str, str | None],
          seen: dict[str, set[str]]) -> set[str]:
    """Record what ``node``'s agents see and return the keys written once it finished."""
    if isinstance(node, str):
        seen[node] = set(before)
        key = output_keys.get(node)
        return before | ({key} if key else set())
    if node.type is WorkflowKind.PARALLEL:
        written = set(before)
        for step in node.steps:
            written |= _walk(step, before, output_keys, seen)
        return written
    current = set(before)
    for step in node.steps:
        current = _walk(step, current, output_keys, seen)
    return current


def role_of(workflow: WorkflowSpec, agent: str) -> str:
    """One line on where ``agent`` sits, for reflection: e.g. ``step 2 of 3 in sequential
    'pipeline' (after outliner; before polisher)``."""
    path = _path_to(workflow, agent)
    if not path:
        return "the agent being evolved"
    parts = []
    for parent, index in path:
        names = [s if isinstance(s, str) else s.name for s in parent.steps]
        where = f"step {index + 1} of {len(names)} in {parent.type.value} {parent.name!r}"
        if parent.type is WorkflowKind.PARALLEL:
            where = f"one of {len(names)} parallel branches of {parent.name!r}"
        elif parent.type is WorkflowKind.LOOP:
            where += f", repeated {parent.max_iterations} times"
        before, after = names[:index], names[index + 1:]
        if parent.type is not WorkflowKind.PARALLEL and (before or after):
            where += " (" + "; ".join(filter(None, [
                f"after {', '.join(before)}" if before else "",
                f"before {', '.join(after)}" if after else ""])) + ")"
        parts.append(where)
    return "; within ".join(parts)


def _path_to(node: WorkflowSpec, agent: str) -> list[tuple[WorkflowSpec, int]]:
    """(workflow, index of the step leading to ``agent``) from the innermost workflow out."""
    for index, step in enumerate(node.steps):
        if step == agent:
            return [(node, index)]
        if isinstance(step, WorkflowSpec):
            inner = _path_to(step, agent)
            if inner:
                return inner + [(node, index)]
    return []
