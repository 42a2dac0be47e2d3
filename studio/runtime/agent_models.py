"""The models of an ADK agent tree loaded from code, and a run's overrides applied to it
(:class:`~studio.model.agent_models.ModelOverrides`): ``studio run my_agent --model
scripted/demo`` runs a folder written for Gemini offline, with no edit to its files.

A *model-bearing* agent is an ``LlmAgent`` anywhere in the tree: the root, its ``sub_agents`` at
any depth, the agent of an ``AgentTool`` in any agent's tools, and the ``LlmAgent`` nodes of an
ADK 2 graph ``Workflow`` (nested workflows' included). A chosen model is built as the studio
builds a declared agent's (:func:`~studio.runtime.providers.adk_or_litellm_model`: ADK's own
class for a Gemini name, LiteLLM's for the rest); a model the code names as a string is left to
ADK to resolve, except the studio's own ``scripted/...`` and ``local/...``, which get the
studio's metered LiteLLM client (ADK resolves them too once they are registered with its
``LLMRegistry``: :mod:`studio.runtime.adk_models`).

The tree the module defines is never changed: Python keeps one imported module per process,
shared by every run of the folder (another model, or none), so a run gets a copy
(:func:`with_models`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from studio.model.agent_models import ModelOverrides
from studio.model.errors import ConfigError
from studio.runtime.graphs import is_graph_workflow, rebuild_graph

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent, LlmAgent
    from google.adk.models import BaseLlm

STUDIO_PROVIDERS = ("scripted/", "local/")
"""Model strings only the studio resolves (LiteLLM custom providers it registers)."""


def model_bearers(root: object) -> list[LlmAgent]:
    """Every ``LlmAgent`` of the tree under ``root``, each once, in the order met (depth first:
    an agent, its tools' agents, its sub-agents; a graph's nodes in its order)."""
    found: dict[int, LlmAgent] = {}
    _walk(root, found)
    return list(found.values())


def _walk(node: Any, found: dict[int, LlmAgent]) -> None:  # Any: an agent or a graph node
    from google.adk.agents import LlmAgent

    if id(node) in found:
        return
    if isinstance(node, LlmAgent):
        found[id(node)] = node
        for tool in node.tools or []:
            agent = tool_agent(tool)
            if agent is not None:
                _walk(agent, found)
    if is_graph_workflow(node):
        for child in node.graph.nodes if node.graph is not None else []:
            _walk(child, found)
    for child in getattr(node, "sub_agents", None) or []:
        _walk(child, found)


def tool_agent(tool: object) -> BaseAgent | None:
    """The agent an ``AgentTool`` runs, else None."""
    from google.adk.tools.agent_tool import AgentTool

    return tool.agent if isinstance(tool, AgentTool) else None


def model_name(agent: object) -> str | None:
    """The model ``agent`` names: its string, or the name a model object carries (``LiteLlm``,
    ``Gemini``); None when it inherits its parent's (an empty string) or names none."""
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def code_models(root: object) -> dict[str, str]:
    """The model each model-bearing agent names in the code, by agent name (an agent that
    inherits its parent's model is left out)."""
    return {agent.name: name for agent in model_bearers(root)
            if (name := model_name(agent)) is not None}


def effective_models(root: object, overrides: ModelOverrides) -> dict[str, str]:
    """The model each model-bearing agent of the tree runs on under ``overrides``, by agent name:
    the chosen one, else the one its code names (an agent inheriting its parent's, with nothing
    chosen, is left out). The one place a run's agent models are decided: checking their keys
    before a run starts reads this.

    Raises:
        ConfigError: ``overrides`` names an agent the tree does not have (the names are listed).
    """
    check_overrides(root, overrides)
    models = {}
    for agent in model_bearers(root):
        model = overrides.for_agent(agent.name) or model_name(agent)
        if model is not None:
            models[agent.name] = model
    return models


def check_overrides(root: object, overrides: ModelOverrides) -> None:
    """Every agent ``overrides.agents`` names is a model-bearing agent of the tree.

    Raises:
        ConfigError: naming the unknown agent and the tree's model-bearing agents.
    """
    names = [agent.name for agent in model_bearers(root)]
    for name in overrides.agents:
        if name not in names:
            raise ConfigError(f"models: {name!r} is not a model-bearing agent of "
                              f"{getattr(root, 'name', 'the agent')!r} (its LlmAgents: "
                              f"{', '.join(names) or 'none'})", where=f"models.{name}",
                              value=name)
    if overrides.every is not None and not names:
        raise ConfigError(f"{getattr(root, 'name', 'the agent')!r} has no LlmAgent, so no model "
                          "to replace", where="model", value=overrides.every)


def with_models(root: object, overrides: ModelOverrides) -> Any:
    """A copy of the tree under ``root`` whose model-bearing agents run on ``overrides``'s models
    (see the module docstring); ``root`` itself is never changed.

    Raises:
        ConfigError: ``overrides`` names an agent the tree does not have.
    """
    check_overrides(root, overrides)
    return _copied(root, overrides, {})


def _copied(node: object, overrides: ModelOverrides, copies: dict[int, Any]) -> Any:
    """``node`` copied with its sub-agents, its tools' agents and (a graph) its nodes; an
    agent met twice (a sub-agent that is also behind an ``AgentTool``) is copied once."""
    from google.adk.agents import BaseAgent, LlmAgent

    if id(node) in copies:
        return copies[id(node)]
    if is_graph_workflow(node):
        new = rebuild_graph(node, lambda agent: _copied(agent, overrides, copies))
        copies[id(node)] = new
        return new
    if not isinstance(node, BaseAgent):
        return node
    update: dict[str, Any] = {}
    if isinstance(node, LlmAgent):
        model = _model_for(node, overrides)
        if model is not None:
            update["model"] = model
        if node.tools:
            update["tools"] = [_tool_copy(tool, overrides, copies) for tool in node.tools]
    new = node.model_copy(update=update)
    copies[id(node)] = new
    if node.sub_agents:
        children = [_copied(child, overrides, copies) for child in node.sub_agents]
        for child in children:
            child.parent_agent = new
        new.sub_agents = children
    new.parent_agent = None
    return new


def _tool_copy(tool: Any, overrides: ModelOverrides, copies: dict[int, Any]) -> Any:
    agent = tool_agent(tool)
    if agent is None:
        return tool
    new = copy.copy(tool)
    new.agent = _copied(agent, overrides, copies)
    return new


def _model_for(agent: LlmAgent, overrides: ModelOverrides) -> BaseLlm | None:
    """The model object ``agent`` gets: the chosen one; the studio's own model named by a
    string in the code; else None (the code's, resolved by ADK)."""
    from studio.runtime.providers import adk_or_litellm_model, litellm_model

    chosen = overrides.for_agent(agent.name)
    if chosen is not None:
        return adk_or_litellm_model(chosen)
    named = agent.model
    if isinstance(named, str) and named.startswith(STUDIO_PROVIDERS):
        return litellm_model(named)
    return None
