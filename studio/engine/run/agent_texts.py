"""Evolvable components of an ADK agent: read them as text, apply new text to a copy of the
agent (the original is never mutated), and validate a proposal before anyone spends calls on it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from studio.model.errors import ConfigError, ProposalError, ProposalProblem, SchemaError
from studio.model.limits import MAX_COMPONENT_CHARS, too_long
from studio.model.records import (
    COMPONENTS,
    GenerationConfig,
    config_from_yaml,
    config_to_yaml,
    demos_from_text,
    demos_to_text,
    expand_components,
    instruction_placeholders,
    parse_components,
    validate_json_schema,
)
from studio.model.workflow import components_by_agent, qualify, split_component, state_before
from studio.runtime.demos import demos_of, with_demos
from studio.runtime.graphs import (
    graph_agent,
    graph_agents,
    graph_shape,
    is_graph_workflow,
    rebuild_graph,
)
from studio.runtime.workflows import describe_workflow, is_workflow

if TYPE_CHECKING:
    from google.adk.workflow import Workflow
    from google.genai import types


def check_components(names: list[str]) -> list[str]:
    """Raises ConfigError for an unknown or repeated component name (``instruction``, or
    ``writer.instruction`` in a group)."""
    if not names:
        raise ConfigError("choose at least one component to evolve", where="components")
    unknown = [n for n in names if split_component(n)[1] not in COMPONENTS]
    if unknown:
        raise ConfigError(f"unknown component {unknown[0]!r}; choose from {list(COMPONENTS)}",
                          where="components", value=unknown[0])
    if len(set(names)) != len(names):
        raise ConfigError("a component is listed twice", where="components", value=names)
    return list(names)


def extract_components(agent: Any, names: list[str]) -> dict[str, str]:
    """The seed candidate: the agent's (or the workflow's agents') current component texts.

    Raises:
        ConfigError: a component is not text, or is longer than ``MAX_COMPONENT_CHARS``.
    """
    components = {}
    for key in names:
        owner, name = split_component(key)
        target = agent if owner is None else find_llm_agent(agent, owner)
        text = _extract(target, name, where=f"agents.{owner}" if owner else "agent")
        oversize = too_long(text, MAX_COMPONENT_CHARS, f"the agent's {name}")
        if oversize:
            raise ConfigError(oversize, where=f"agents.{owner}.{name}" if owner else
                              f"agent.{name}")
        components[key] = text
    return components


def find_llm_agent(root: Any, name: str) -> Any:
    """The agent called ``name`` in the tree under ``root`` (ADK's own lookup), or the
    ``LlmAgent`` node of that name in a graph ``Workflow``."""
    if is_graph_workflow(root):
        return graph_agent(root, name)
    found = root.find_agent(name)
    if found is None:
        raise ConfigError(f"the workflow has no agent named {name!r}", where="components",
                          value=name)
    return found


def _extract(agent: Any, name: str, *, where: str = "agent") -> str:
    if name == "instruction":
        instruction = getattr(agent, "instruction", "")
        if not isinstance(instruction, str):
            raise ConfigError(f"{agent.name}'s instruction is a function; only a text "
                              "instruction can be evolved", where=f"{where}.instruction")
        return instruction
    if name == "output_schema":
        schema = getattr(agent, "output_schema", None)
        if schema is None:
            return ""  # no schema: free text (a proposal may introduce one)
        if hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        return json.dumps(schema, indent=2)
    if name == "few_shot":
        return demos_to_text(demos_of(agent))
    config = getattr(agent, "generate_content_config", None)
    values = {}
    if config is not None:
        values = {k: getattr(config, k) for k in GenerationConfig.model_fields
                  if getattr(config, k, None) is not None}
    return config_to_yaml(GenerationConfig(**values))


def apply_components(agent: Any, components: dict[str, str]) -> Any:
    """A copy of ``agent`` with the component texts applied; for a workflow, a copy of the whole
    tree (every node copied, so the original tree keeps its parents) with each agent's
    components applied to its copy."""
    by_agent = components_by_agent(components)
    if "" in by_agent:
        return _apply_one(agent, components)
    if is_graph_workflow(agent):  # a new graph, same edges and routes, the nodes swapped
        return rebuild_graph(agent, lambda node: _apply_one(node, {
            name: components[qualify(node.name, name)] for name in by_agent[node.name]})
            if node.name in by_agent else None)
    return _copy_tree(agent, {owner: {name: components[qualify(owner, name)] for name in names}
                              for owner, names in by_agent.items()})


def _copy_tree(node: Any, updates: dict[str, dict[str, str]]) -> Any:
    copy = _apply_one(node, updates[node.name]) if node.name in updates else node.model_copy()
    if node.sub_agents:
        children = [_copy_tree(child, updates) for child in node.sub_agents]
        for child in children:
            child.parent_agent = copy
        copy.sub_agents = children
    copy.parent_agent = None
    return copy


def _apply_one(agent: Any, components: dict[str, str]) -> Any:
    update = parse_components(components)
    if "generate_content_config" in update:
        update["generate_content_config"] = _merged_config(agent,
                                                           update["generate_content_config"])
    if "few_shot" in update:
        update["before_model_callback"] = with_demos(agent, update.pop("few_shot"))
    return agent.model_copy(update=update)


def _merged_config(agent: object, config: GenerationConfig) -> types.GenerateContentConfig:
    from google.genai import types

    current = getattr(agent, "generate_content_config", None) or types.GenerateContentConfig()
    return current.model_copy(update=config.model_dump())


REPEAT_LIMIT = 3


def repeated_sentence(text: str, *, min_chars: int = 20) -> str | None:
    """A sentence that occurs ``REPEAT_LIMIT`` or more times: small models loop like that."""
    sentences = [s.strip().lower() for s in re.split(r"(?<=[.!?])\s+|\n+", text)]
    counts: dict[str, int] = {}
    for sentence in sentences:
        if len(sentence) >= min_chars:
            counts[sentence] = counts.get(sentence, 0) + 1
            if counts[sentence] >= REPEAT_LIMIT:
                return sentence
    return None


UNCHANGED_PREFIX = "the reflection returned the parent's text unchanged"
"""The reason of a proposal refused for repeating its parent's text: the reflection is asked
again (:func:`studio.engine.run.tried.is_repeat` reads it back from the stored reason)."""


def validate_proposal(component: str, text: str, parent_text: str,
                      example_keys: set[str], *, edit: bool = False) -> str:
    """The cleaned proposal text, or ProposalError with a reason the studio shows.
    ``component`` may be qualified (``writer.instruction``); ``example_keys`` are the state keys
    its agent can read (example fields, and what earlier agents wrote). ``edit``: the text is a
    person's edit, and the reasons speak of it, never of the reflection.

    Reasons: a :class:`~studio.model.errors.ProposalProblem`.
    """
    owner, kind = split_component(component)
    text = (text or "").strip()
    if not text:
        raise ProposalError("the edited text is empty" if edit else
                            "the reflection returned empty text", reason=ProposalProblem.EMPTY)
    oversize = too_long(text, MAX_COMPONENT_CHARS, f"the proposed {component}")
    if oversize:
        raise ProposalError(oversize, reason=ProposalProblem.TOO_LONG)
    if text == (parent_text or "").strip():
        raise ProposalError("the edited text is the parent's text unchanged" if edit else
                            UNCHANGED_PREFIX, reason=ProposalProblem.UNCHANGED)
    if kind == "few_shot":
        return _checked_demos_text(component, text, parent_text)
    repeated = repeated_sentence(text)
    if repeated:
        what = "the edited text repeats itself" if edit else "the proposal repeats itself"
        raise ProposalError(f"{what} ({repeated[:60]!r} appears {REPEAT_LIMIT} or more "
                            "times)" + ("" if edit else ": a degenerate model reply"),
                            reason=ProposalProblem.REPETITIVE)
    if kind == "output_schema":
        try:
            validate_json_schema(text)
        except SchemaError as exc:
            raise ProposalError(f"the proposed schema does not compile: {exc}",
                                reason=ProposalProblem.INVALID_SCHEMA) from exc
    elif kind == "generate_content_config":
        try:
            config_from_yaml(text)
        except ConfigError as exc:
            raise ProposalError(f"the proposed config is not valid YAML settings: {exc}",
                                reason=ProposalProblem.INVALID_YAML) from exc
    else:
        unknown = sorted(instruction_placeholders(text) - example_keys)
        if unknown:
            subject = "the proposed instruction" + (f" of {owner}" if owner else "")
            raise ProposalError(f"{subject} uses {{{unknown[0]}}}, "
                                + _why_unfillable(unknown[0], example_keys, owner),
                                reason=ProposalProblem.UNKNOWN_PLACEHOLDER)
    return text


def _checked_demos_text(component: str, text: str, parent_text: str) -> str:
    """A few_shot proposal as canonical JSON (so equal demos hash equal), or ProposalError.
    Demos repeat a form on purpose, so the repetition check does not apply."""
    try:
        demos = demos_from_text(text, where=component)
    except ConfigError as exc:
        raise ProposalError(f"the proposed demonstrations are invalid at {exc.where}: "
                            f"{exc.message}", reason=ProposalProblem.INVALID_DEMOS) from exc
    canonical = demos_to_text(demos)
    try:
        unchanged = canonical == demos_to_text(demos_from_text(parent_text or ""))
    except ConfigError:
        unchanged = False
    if unchanged:
        raise ProposalError("the proposal shows the parent's demonstrations unchanged",
                            reason=ProposalProblem.UNCHANGED)
    return canonical


def check_seed_placeholders(agent: object, example_keys: set[str],
                            label: Callable[[str], str] = str) -> None:
    """The state guard on the seed: every ``{placeholder}`` in an agent's instruction must be an
    example field or the ``output_key`` of an agent that finishes before it starts, because ADK
    raises at run time on the first example otherwise (and every trial would fail). ``label``
    names a workflow's agent in the error (``agents[1] (writer)``); default: its name.

    Raises:
        ConfigError: naming the agent, the placeholder, what it can read and how to fix it.
    """
    if is_graph_workflow(agent):  # nodes pass replies as node input; function nodes may
        return                    # write any state key, so no placeholder can be refused
    if not is_workflow(agent):
        _check_placeholders(agent, example_keys, None, {}, "agent")
        return
    workflow, agents = describe_workflow(agent)
    output_keys = {name: getattr(a, "output_key", None) for name, a in agents.items()}
    readable = state_before(workflow, output_keys)
    for name, member in agents.items():
        _check_placeholders(member, example_keys | readable.get(name, set()), name,
                            output_keys, label(name))


def _check_placeholders(agent: object, readable: set[str], owner: str | None,
                        output_keys: dict[str, str | None], label: str) -> None:
    instruction = getattr(agent, "instruction", "")
    if not isinstance(instruction, str):
        return  # an instruction provider (a function) is filled by its own code
    unknown = sorted(instruction_placeholders(instruction) - readable)
    if not unknown:
        return
    name = unknown[0]
    writers = [a for a, key in output_keys.items() if key == name and a != owner]
    raise ConfigError(f"the instruction uses {{{name}}}, "
                      + _why_unfillable(name, readable, owner) + _seed_fix(name, owner, writers),
                      where=f"{label}.instruction", value=name)


def _seed_fix(name: str, owner: str | None, writers: list[str]) -> str:
    """How to make ``{name}`` fillable, in one clause."""
    if name.startswith("artifact."):
        return ""
    if writers:
        return (f"; {writers[0]} writes {name!r} but has not finished when {owner} starts: "
                f"run {owner} after {writers[0]}")
    earlier = f", give an agent before {owner} output_key: {name}" if owner else ""
    return (f"; add a {name!r} field to the dataset{earlier}, or write {{{name}?}} if it may "
            "be empty")


def _why_unfillable(name: str, readable: set[str], owner: str | None = None) -> str:
    if name.startswith("artifact."):
        return ("an ADK artifact; a studio run stores no artifacts, so ADK would fail to "
                "fill it")
    if owner:
        return (f"which no example field provides and no agent before {owner} writes to state "
                f"(ADK would fail to fill it); {owner} can read: {sorted(readable)}")
    return (f"which no example provides (ADK would fail to fill it); example fields: "
            f"{sorted(readable)}")


def graph_components(workflow: Workflow,
                     components: str | Iterable[str] | Mapping[str, Iterable[str]] | None
                     ) -> list[str]:
    """``components`` of a graph as ``node.component`` keys, each node an ``LlmAgent`` of the
    graph; the graph's own refusals first (:func:`studio.runtime.graphs.graph_agents`)."""
    names = list(graph_agents(workflow, where="workflow"))
    if isinstance(components, str):
        components = [components]
    if isinstance(components, Mapping):
        unknown = [n for n in components if n not in names]
        if unknown:
            raise ConfigError(f"components name node {unknown[0]!r}, which is not an LlmAgent "
                              f"node of graph {workflow.name!r} (its LlmAgent nodes: {names})",
                              where="components", value=unknown[0])
        keys = [f"{node}.{c}" for node, cs in components.items() for c in cs]
    else:
        keys = expand_components(list(components or ["instruction"]), names)
    check_components(keys)
    for key in keys:
        node, part = split_component(key)
        if node not in names:
            raise ConfigError(f"component {key!r} names no LlmAgent node of graph "
                              f"{workflow.name!r} (its LlmAgent nodes: {names})",
                              where="components", value=key)
        if part == "output_schema" and getattr(graph_agents(workflow)[node], "output_schema",
                                               None) is None:
            raise ConfigError(f"cannot evolve {key!r}: node {node!r} has no output_schema",
                              where="components", value=key)
    return keys


def graph_primary(workflow: Workflow, primary: str | None) -> str | None:
    """Whose reply a graph run scores: ``primary`` (an ``LlmAgent`` node), else the only
    terminal ``LlmAgent`` node, else None (the run's last reply)."""
    shape = graph_shape(workflow)
    names = shape.llm_agents()
    if primary is not None:
        if primary not in names:
            raise ConfigError(f"primary {primary!r} is not an LlmAgent node of graph "
                              f"{workflow.name!r} ({names})", where="primary", value=primary)
        return primary
    terminal = [n for n in names if not shape.successors(n)
                and shape.node(n).parent == workflow.name]  # type: ignore[union-attr]
    return terminal[0] if len(terminal) == 1 else None
