"""The workflow builder's logic: several agents as flat editor fields and back.

A workflow project keeps its agents in the editor as ``agent_order`` (a list of stable ids such
as ``a0``) and, per id, ``wf_<id>_name``, ``wf_<id>_model``, ``wf_<id>_instruction``,
``wf_<id>_output_key``, ``wf_<id>_components`` and ``wf_<id>_rest`` (the agent's other fields,
kept as they were). Ids never change when agents are renamed or moved, so the widgets keep their
values, and the primary is stored by id (renaming the primary keeps it primary). The builder
edits flat workflows (sequential, loop, parallel); a nested workflow is kept as written
(``workflow_nested``) and edited in YAML.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from studio.model.workflow import MAX_LOOP_ITERATIONS, WorkflowKind, WorkflowSpec, split_component
from studio.views.workflows import AgentBox

WORKFLOW_KINDS = tuple(kind.value for kind in WorkflowKind)
AGENT_FIELDS = ("name", "model", "instruction", "output_key", "components", "rest")
MAX_AGENTS = 20
"""Agents the builder adds; more can be written in YAML."""


def agent_key(uid: str, name: str) -> str:
    return f"wf_{uid}_{name}"


def workflow_fields(project: Any) -> dict[str, Any]:
    """Editor fields of a project with ``agents:`` (empty for a single-agent project)."""
    if not project.agents:
        return {"agent_mode": "single"}
    spec = project.run_spec()
    workflow = spec.workflow
    nested = workflow.depth() > 1
    by_name = {a.name: a for a in project.agents}
    names = list(by_name) if nested else workflow.agent_names()
    keys = spec.components
    fields: dict[str, Any] = {
        "agent_mode": "workflow", "agent_order": [f"a{i}" for i in range(len(names))],
        "workflow_type": workflow.type.value, "workflow_name": workflow.name,
        "workflow_max_iterations": workflow.max_iterations,
        "workflow_nested": workflow.model_dump(mode="json") if nested else None,
        "primary": f"a{names.index(project.primary)}" if project.primary in names else ""}
    for i, name in enumerate(names):
        agent = by_name[name]
        uid = f"a{i}"
        fields.update({
            agent_key(uid, "name"): agent.name, agent_key(uid, "model"): agent.model,
            agent_key(uid, "instruction"): agent.instruction,
            agent_key(uid, "output_key"): agent.output_key or "",
            agent_key(uid, "components"): [split_component(k)[1] for k in keys
                                           if split_component(k)[0] == name],
            agent_key(uid, "rest"): agent.model_dump(
                mode="json", exclude={"name", "model", "instruction", "output_key", "ref"},
                exclude_defaults=True)})
    return fields


def agents_of(fields: dict[str, Any]) -> list[dict[str, Any]]:
    """The builder's agents in order: ``{"uid", "name", "model", ...}`` each."""
    return [{"uid": uid, **{name: fields.get(agent_key(uid, name)) for name in AGENT_FIELDS}}
            for uid in fields.get("agent_order") or []]


def is_workflow_draft(fields: Mapping[str, object]) -> bool:
    return fields.get("agent_mode") == "workflow"


# --------------------------------------------------------------------------- edits


def to_workflow(fields: dict[str, Any]) -> dict[str, Any]:
    """Updates that turn the single agent into the first step of a sequential workflow."""
    uid = "a0"
    return {"agent_mode": "workflow", "agent_order": [uid], "workflow_type": "sequential",
            "workflow_name": "pipeline", "workflow_max_iterations": 2, "workflow_nested": None,
            "primary": "",
            agent_key(uid, "name"): fields.get("agent_name") or "agent",
            agent_key(uid, "model"): fields.get("agent_model") or "",
            agent_key(uid, "instruction"): fields.get("agent_instruction") or "",
            agent_key(uid, "output_key"): "",
            agent_key(uid, "components"): list(fields.get("components") or ["instruction"]),
            agent_key(uid, "rest"): _single_rest(fields)}


def _single_rest(fields: dict[str, Any]) -> dict[str, Any]:
    """The single agent's other fields (schema, generation settings, tools, demos), carried into its
    step so nothing typed is lost by making it a workflow."""
    rest: dict[str, Any] = {}
    try:
        schema = json.loads(fields.get("agent_schema") or "null")
    except ValueError:
        schema = None
    if isinstance(schema, dict):
        rest["output_schema"] = schema
    config = {key: fields.get(field) for key, field in _CONFIG_FIELDS
              if fields.get(field) is not None}
    if config:
        rest["generate_content_config"] = config
    tools = [line.strip() for line in str(fields.get("agent_tools") or "").splitlines()
             if line.strip()]
    if tools:
        rest["tools"] = tools
    try:
        demos = json.loads(fields.get("agent_few_shot") or "null")
    except ValueError:
        demos = None
    if isinstance(demos, list) and demos:
        rest["few_shot"] = demos
    return rest


_CONFIG_FIELDS = (("temperature", "agent_temperature"), ("top_p", "agent_top_p"),
                  ("max_output_tokens", "agent_max_tokens"))


def _rest_fields(rest: dict[str, Any]) -> dict[str, Any]:
    """:func:`_single_rest` backwards: a step's other fields as the single-agent editor's."""
    schema = rest.get("output_schema")
    config = rest.get("generate_content_config") or {}
    return {"agent_schema": json.dumps(schema, indent=2) if schema else "",
            **{field: config.get(key) for key, field in _CONFIG_FIELDS},
            "agent_tools": "\n".join(rest.get("tools") or []),
            "agent_few_shot": json.dumps(rest["few_shot"], indent=2, ensure_ascii=False)
            if rest.get("few_shot") else ""}


def to_single(fields: dict[str, Any]) -> dict[str, Any]:
    """Updates that turn a one-agent workflow back into a single agent.

    Raises:
        ValueError: the workflow has more than one agent.
    """
    agents = agents_of(fields)
    if len(agents) != 1:
        raise ValueError(f"the workflow has {len(agents)} agents; remove all but one first")
    agent = agents[0]
    return {"agent_mode": "single", "agent_name": agent["name"] or "agent",
            "agent_model": agent["model"] or "", "agent_instruction": agent["instruction"] or "",
            "components": list(agent["components"] or ["instruction"]),
            **_rest_fields(dict(agent["rest"] or {}))}


def add_agent(fields: dict[str, Any]) -> dict[str, Any]:
    """Updates that append a new agent (a fresh id and name, the last agent's model)."""
    order = list(fields.get("agent_order") or [])
    if len(order) >= MAX_AGENTS:
        raise ValueError(f"the builder adds up to {MAX_AGENTS} agents; write more in YAML")
    used = {str(fields.get(agent_key(u, "name")) or "") for u in order}
    uid = next(f"a{i}" for i in range(len(order) + len(fields) + 1)
               if f"a{i}" not in order and agent_key(f"a{i}", "name") not in fields)
    name = next(f"agent_{i}" for i in range(len(order) + 1, len(order) + len(used) + 2)
                if f"agent_{i}" not in used)
    model = fields.get(agent_key(order[-1], "model")) if order else fields.get("agent_model")
    return {"agent_order": order + [uid], agent_key(uid, "name"): name,
            agent_key(uid, "model"): model or "", agent_key(uid, "instruction"): "",
            agent_key(uid, "output_key"): "", agent_key(uid, "components"): ["instruction"],
            agent_key(uid, "rest"): {}}


def move_agent(order: list[str], uid: str, offset: int) -> list[str]:
    """``order`` with ``uid`` moved ``offset`` places (clamped at both ends)."""
    order = list(order)
    if uid not in order:
        return order
    index = order.index(uid)
    target = max(0, min(len(order) - 1, index + offset))
    order.insert(target, order.pop(index))
    return order


def remove_agent(fields: dict[str, Any], uid: str) -> dict[str, Any]:
    """Updates that drop ``uid`` (the primary falls back to the default if it was)."""
    order = [u for u in fields.get("agent_order") or [] if u != uid]
    if not order:
        raise ValueError("a workflow needs at least one agent")
    return {"agent_order": order,
            "primary": "" if fields.get("primary") == uid else fields.get("primary", "")}


# --------------------------------------------------------------------------- checking


def check_agents(fields: dict[str, Any], model_problem: Any) -> dict[str, str]:
    """Errors by field: names are identifiers and unique, models callable, some component
    chosen, the loop count in range."""
    errors: dict[str, str] = {}
    agents = agents_of(fields)
    if not agents:
        return {"agent_order": "add at least one agent"}
    seen: set[str] = set()
    for agent in agents:
        uid, name = agent["uid"], str(agent["name"] or "").strip()
        if not name.isidentifier():
            errors[agent_key(uid, "name")] = (
                f"agent name {name!r} must be an identifier (letters, digits and _, not "
                "starting with a digit), as ADK requires")
        elif name in seen:
            errors[agent_key(uid, "name")] = f"two agents are named {name!r}; rename one"
        seen.add(name)
        problem = model_problem(str(agent["model"] or ""))
        if problem:
            errors[agent_key(uid, "model")] = problem
        key = str(agent["output_key"] or "").strip()
        if key and not key.isidentifier():
            errors[agent_key(uid, "output_key")] = (
                f"state key {key!r} must be an identifier so later instructions can use "
                f"{{{key}}}")
    if not any(a["components"] for a in agents):
        errors["agent_order"] = "choose at least one component to evolve (on any agent)"
    iterations = fields.get("workflow_max_iterations") or 0
    if fields.get("workflow_type") == "loop" and not 1 <= int(iterations) <= MAX_LOOP_ITERATIONS:
        errors["workflow_max_iterations"] = (f"a loop runs 1 to {MAX_LOOP_ITERATIONS} times")
    return errors


def project_data(fields: dict[str, Any]) -> dict[str, Any]:
    """The ``agents:``, ``workflow:``, ``primary:`` and ``components:`` of the project."""
    agents = agents_of(fields)
    names = [str(a["name"] or "").strip() for a in agents]
    section = [{**dict(a["rest"] or {}), "name": name, "model": a["model"],
                "instruction": a["instruction"] or "",
                "output_key": str(a["output_key"] or "").strip() or None}
               for a, name in zip(agents, names, strict=True)]
    workflow = fields.get("workflow_nested") or {
        "type": fields.get("workflow_type") or "sequential",
        "name": str(fields.get("workflow_name") or "").strip() or "pipeline", "steps": names,
        "max_iterations": int(fields.get("workflow_max_iterations") or 2)}
    primary = {a["uid"]: name for a, name in zip(agents, names, strict=True)}.get(
        fields.get("primary") or "")
    components = {name: list(a["components"]) for a, name in zip(agents, names, strict=True)
                  if a["components"]}
    return {"agents": section, "workflow": workflow, "primary": primary,
            "components": components}


def field_for(loc: tuple[str, ...], fields: dict[str, Any]) -> str | None:
    """The builder field a validation error's location points at, if any."""
    order = fields.get("agent_order") or []
    if loc[:1] == ("agents",) and len(loc) >= 2 and loc[1].isdigit() and int(loc[1]) < len(order):
        part = loc[2] if len(loc) > 2 else "name"
        return agent_key(order[int(loc[1])], part if part in AGENT_FIELDS else "name")
    if loc[:1] == ("workflow",):
        return "workflow_name" if "name" in loc else "agent_order"
    if not loc or loc[:1] in (("primary",), ("components",), ("agents",)):
        return "agent_order"
    return None


# --------------------------------------------------------------------------- the picture


def draft_picture(fields: dict[str, Any]) -> tuple[WorkflowSpec, list[AgentBox], str | None]:
    """The workflow as the builder shows it now (names as typed, nothing validated), for
    :func:`studio.views.workflows.workflow_dot`."""
    agents = agents_of(fields)
    names = [str(a["name"] or "").strip() or "(unnamed)" for a in agents]
    boxes = [AgentBox(name, str(a["model"] or ""), str(a["output_key"] or "").strip() or None,
                      tuple(a["components"] or ()))
             for a, name in zip(agents, names, strict=True)]
    nested = fields.get("workflow_nested")
    if nested:
        workflow = WorkflowSpec.model_validate(nested)
    else:
        kind = fields.get("workflow_type") or "sequential"
        workflow = WorkflowSpec.model_construct(
            type=WorkflowKind(kind if kind in WORKFLOW_KINDS else "sequential"),
            name=str(fields.get("workflow_name") or "pipeline"), steps=names,
            max_iterations=int(fields.get("workflow_max_iterations") or 2))
    primary = {a["uid"]: name for a, name in zip(agents, names, strict=True)}.get(
        fields.get("primary") or "")
    return workflow, boxes, primary
