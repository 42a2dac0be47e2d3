"""The models a live ADK agent tree will call, and whether this machine can call them, checked
before a run is stored (``docs/guides/adk.md``: "a missing variable is reported before the run
starts").

Two steps, so a caller can change the models in between (a ``--model`` override applied to every
agent of a folder) and check what will actually run:

- :func:`agent_tree_models` lists each ``LlmAgent`` of the tree (its sub-agents, the agents
  behind an ``AgentTool``, the ``LlmAgent`` nodes of a graph ``Workflow``, nested workflows)
  with the model string ADK will call for it: its own, else its nearest ``LlmAgent``
  ancestor's, else ADK's default (``LlmAgent.canonical_model``'s rule);
- :func:`check_agent_models` checks each distinct model string with the one rule every model
  of the studio is checked by (:func:`studio.runtime.providers.check_model`: the variable a
  LiteLLM provider needs, ``GOOGLE_API_KEY``/``GEMINI_API_KEY`` or Vertex AI's settings for an
  ADK name such as ``gemini-2.5-flash``), naming the agents that use it.

A model object that carries its own credentials (``LiteLlm(model=..., api_key=...)`` or an
``api_base``, ``Gemini(client=...)`` or ``client_kwargs`` with a key, project or credentials)
and a model class the rule does not know (another ``BaseLlm`` subclass) are left out: nothing
in the environment decides whether they can run, and a check would refuse agents that work.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from studio.model.errors import ModelConfigError
from studio.runtime.graphs import is_graph_workflow
from studio.runtime.providers import check_model
from studio.runtime.providers.adk_names import is_adk_model_name

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent

_OWN_LITELLM_SETTINGS = ("api_key", "api_base", "base_url")
_OWN_GEMINI_SETTINGS = ("api_key", "credentials", "vertexai", "project")


@dataclass(frozen=True)
class AgentModel:
    """One agent of a tree and the model string it calls."""

    agent: str
    """Where the agent is in the tree: ``writer``, ``writer > helper`` (a sub-agent),
    ``writer > tool searcher`` (an agent behind an ``AgentTool``)."""
    model: str
    """The model string, as :func:`~studio.runtime.providers.check_model` reads it: a LiteLLM
    string (``openai/gpt-4o-mini``, ``scripted/demo``) or an ADK name (``gemini-2.5-flash``)."""


def agent_tree_models(root: object) -> list[AgentModel]:
    """Every ``LlmAgent`` under ``root`` (``root`` included) with the model it calls, in tree
    order; each agent once, even when it is reached twice."""
    found: list[AgentModel] = []
    _walk(root, getattr(root, "name", "agent"), set(), found)
    return found


def check_agent_models(models: Iterable[AgentModel], *, where: str = "agent") -> None:
    """Fail when a model cannot be called from this machine, before anything is stored.

    Raises:
        ModelConfigError: the first model that cannot be called; the message says what it
            needs (the variable to set) and names every agent that uses it, ``where`` the
            first of them (``agent > writer > helper.model``).
    """
    users: dict[str, list[str]] = {}
    for item in models:
        users.setdefault(item.model, []).append(item.agent)
    for model, agents in users.items():
        try:
            check_model(model)
        except ModelConfigError as exc:
            raise ModelConfigError(f"{exc.message} (the model of {_named(agents)})",
                                   where=f"{where} > {agents[0]}.model", value=model) from exc


def _named(agents: list[str]) -> str:
    shown = ", ".join(repr(a) for a in agents[:5])
    more = f" and {len(agents) - 5} more" if len(agents) > 5 else ""
    return f"agent{'s' if len(agents) > 1 else ''} {shown}{more}"


def _walk(node: Any, path: str, seen: set[int], found: list[AgentModel]) -> None:
    from google.adk.agents import LlmAgent

    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, LlmAgent):
        model = _model_string(node)
        if model is not None:
            found.append(AgentModel(path, model))
        for tool in node.tools or []:
            agent = _tool_agent(tool)
            if agent is not None:
                _walk(agent, f"{path} > tool {agent.name}", seen, found)
    for child in getattr(node, "sub_agents", None) or []:
        _walk(child, f"{path} > {child.name}", seen, found)
    wrapped = getattr(node, "_node", None)  # an LlmAgent run as a graph's parallel worker
    if wrapped is not None:
        _walk(wrapped, path, seen, found)
    if is_graph_workflow(node) and node.graph is not None:
        for graph_node in node.graph.nodes:
            _walk(graph_node, f"{path} > {graph_node.name}", seen, found)


def _tool_agent(tool: object) -> BaseAgent | None:
    """The agent an ``AgentTool`` runs (None for any other tool)."""
    from google.adk.tools.agent_tool import AgentTool

    return tool.agent if isinstance(tool, AgentTool) else None


def _declared_model(agent: Any) -> Any:
    """The model ADK gives ``agent``: its own, else its nearest ``LlmAgent`` ancestor's, else
    ADK's default (``LlmAgent.canonical_model``'s rule, without building the model)."""
    from google.adk.agents import LlmAgent

    current = agent
    while current is not None:
        if isinstance(current, LlmAgent) and current.model:
            return current.model
        current = current.parent_agent
    return type(agent)._default_model


def _model_string(agent: object) -> str | None:
    """The model string to check for ``agent``, or None when the environment does not decide
    whether it runs (see the module docstring)."""
    from google.adk.models.google_llm import Gemini
    from google.adk.models.lite_llm import LiteLlm

    model = _declared_model(agent)
    if isinstance(model, str):
        return model or None
    if isinstance(model, LiteLlm):
        settings = getattr(model, "_additional_args", None) or {}
        own = any(settings.get(name) for name in _OWN_LITELLM_SETTINGS)
        return None if own or is_adk_model_name(model.model) else model.model
    if isinstance(model, Gemini):
        settings = model.client_kwargs or {}
        own = model.client is not None or any(settings.get(n) for n in _OWN_GEMINI_SETTINGS)
        return None if own or not is_adk_model_name(model.model) else model.model
    return None
