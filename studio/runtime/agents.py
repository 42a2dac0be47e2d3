"""Real ADK agents from the studio's specs, or from the user's own Python code."""

from __future__ import annotations

import importlib
from typing import Any

from studio.model.errors import ConfigError
from studio.model.records import AgentSpec
from studio.runtime.demos import FewShotDemos
from studio.runtime.providers import litellm_model
from studio.runtime.tools import resolve_tools


def build_agent(spec: AgentSpec, *, output_key: str | None = None, where: str = "agent") -> Any:
    """A real ADK ``LlmAgent`` for ``spec``, reaching its model through LiteLLM, with its
    function tools (``where`` places a bad tool's error: ``agent`` or ``agents.<name>``) and its
    few-shot demos as prior turns (:class:`FewShotDemos`)."""
    from google.adk.agents import LlmAgent  # ADK is heavy: loaded on first build, not at import

    return LlmAgent(
        name=spec.name,
        model=litellm_model(spec.model),
        instruction=spec.instruction,
        output_schema=spec.output_schema,
        output_key=output_key,
        generate_content_config=spec.generate_content_config.to_adk(),
        tools=resolve_tools(spec.tools, agent=spec.name, where=where),
        before_model_callback=FewShotDemos(spec.few_shot) if spec.few_shot else None,
    )


def load_agent(reference: str) -> Any:
    """Load an existing ADK agent from Python code, as ``"package.module:attribute"``.

    The attribute must *be* an agent instance: nothing is ever called, so a reference can at
    most import a module (only trusted projects may use one: see ``studio.projects.files``).

    Raises:
        ConfigError: if the module or attribute is missing, or the object is not an ADK agent.
    """
    from google.adk.agents import BaseAgent

    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError("use the form 'package.module:attribute'", where="agent.ref",
                          value=reference)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import module {module_name!r}: {exc}", where="agent.ref",
                          value=reference) from exc
    target: Any = module
    for name in attribute.split("."):
        if name.startswith("_") or not hasattr(target, name):
            raise ConfigError(f"{module_name!r} has no attribute {attribute!r} (private names "
                              "starting with _ are not loaded)",
                              where="agent.ref", value=reference)
        target = getattr(target, name)
    from studio.runtime.workflows import refuse_graph_workflow  # it builds agents: imports us

    refuse_graph_workflow(target, where="agent.ref")
    if not isinstance(target, BaseAgent):
        raise ConfigError(f"{reference!r} is a {type(target).__name__}, not an ADK agent "
                          "instance (a reference is never called: point it at the agent object "
                          "itself, e.g. `root_agent = LlmAgent(...)`)", where="agent.ref",
                          value=reference)
    return target
