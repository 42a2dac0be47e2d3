"""Real ADK agents from the studio's specs, or from the user's own Python code."""

from __future__ import annotations

import importlib
from typing import Any

from studio.model.errors import ConfigError
from studio.model.records import AgentSpec
from studio.runtime.providers import litellm_model


def build_agent(spec: AgentSpec, *, output_key: str | None = None) -> Any:
    """A real ADK ``LlmAgent`` for ``spec``, reaching its model through LiteLLM."""
    from google.adk.agents import LlmAgent  # ADK is heavy: loaded on first build, not at import

    return LlmAgent(
        name=spec.name,
        model=litellm_model(spec.model),
        instruction=spec.instruction,
        output_schema=spec.output_schema,
        output_key=output_key,
        generate_content_config=spec.generate_content_config.to_adk(),
    )


def load_agent(reference: str) -> Any:
    """Load an existing ADK agent from Python code, as ``"package.module:attribute"``.

    Raises:
        ConfigError: if the module or attribute is missing, or the object is not an ADK agent.
    """
    from google.adk.agents import BaseAgent

    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError("use the form 'package.module:attribute'", where="agent", value=reference)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import module {module_name!r}: {exc}", where="agent",
                          value=reference) from exc
    target: Any = module
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise ConfigError(f"{module_name!r} has no attribute {attribute!r}", where="agent",
                              value=reference)
        target = getattr(target, name)
    if callable(target) and not isinstance(target, BaseAgent):
        target = target()
    if not isinstance(target, BaseAgent):
        raise ConfigError(f"{reference!r} is a {type(target).__name__}, not an ADK agent",
                          where="agent", value=reference)
    return target
