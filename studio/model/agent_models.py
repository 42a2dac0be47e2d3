"""The models a run puts in place of those an agent loaded from code names (an ADK agent
folder, ``agent.ref``), and the words that say what it runs on.

``studio run my_agent --model scripted/demo`` (or ``agent: {folder: my_agent, model: ...}`` in a
project file, with ``models: {agent_name: model}`` for one agent of a multi-agent tree) runs the
folder's agents on another model with no edit to its files; the folder's own models are kept in
the run (:attr:`RunSpec.code_models`) so the Run page and the CLI can say "running on
scripted/demo (the folder says gemini-2.5-flash)". Applying the overrides to a live ADK tree is
:mod:`studio.runtime.agent_models`.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from studio.model.base import ConfigModel
from studio.model.limits import MAX_NAME_CHARS

LOCAL_MODEL = "local/smollm2"
"""The embedded default model: SmolLM2-135M-Instruct, offline, in-process (its provider's
record: :data:`studio.runtime.providers.LOCAL`)."""
MAX_MODEL_CHARS = 200
"""A model string longer than this is refused (LiteLLM and ADK names are far shorter)."""


class ModelOverrides(ConfigModel):
    """Models a run puts in place of the ones the agent's code names. Empty: the code's own."""

    every: str | None = Field(default=None, max_length=MAX_MODEL_CHARS)
    """Every model-bearing agent of the tree (sub-agents, agents behind an ``AgentTool``, graph
    nodes) runs on this model (``--model``; ``agent.model`` of a folder or ``ref`` agent)."""
    agents: dict[str, str] = Field(default_factory=dict)
    """Per agent, by name (``models: {searcher: openai/gpt-4o-mini}``); wins over ``every``."""

    @field_validator("every")
    @classmethod
    def _a_model_string(cls, value: str | None) -> str | None:
        return _checked(value, "model") if value is not None else None

    @field_validator("agents")
    @classmethod
    def _model_strings(cls, value: dict[str, str]) -> dict[str, str]:
        return checked_models(value)

    @property
    def is_empty(self) -> bool:
        return self.every is None and not self.agents

    def for_agent(self, name: str) -> str | None:
        """The model agent ``name`` runs on instead of its code's, or None (its code's)."""
        return self.agents.get(name) or self.every


def checked_models(models: dict[str, str]) -> dict[str, str]:
    """A per-agent map of models, each a model string (surrounding spaces dropped).

    Raises:
        ValueError: an agent name or a model that is empty or too long, naming it.
    """
    for name, model in models.items():
        if not name or len(name) > MAX_NAME_CHARS:
            raise ValueError(f"models: agent name {name!r} must be 1 to {MAX_NAME_CHARS} "
                             "characters")
        _checked(model, f"models.{name}")
    return {name: model.strip() for name, model in models.items()}


def _checked(model: str, where: str) -> str:
    if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL_CHARS:
        raise ValueError(f"{where}: a model is a non-empty LiteLLM string or ADK model name of "
                         f"at most {MAX_MODEL_CHARS} characters (e.g. scripted/demo, "
                         f"gemini-2.5-flash, openai/gpt-4o-mini)")
    return model.strip()


def running_note(overrides: ModelOverrides, code_models: dict[str, str], *,
                 owner: str = "the folder") -> str | None:
    """What an agent loaded from code runs on, against what its code says: ``running on
    scripted/demo (the folder says gemini-2.5-flash)``; None when the run keeps the code's
    models (or they were never read)."""
    if overrides.is_empty or not code_models:
        return None
    running = {name: overrides.for_agent(name) or model for name, model in code_models.items()}
    changed = {name for name in code_models if running[name] != code_models[name]}
    if not changed:
        return None
    return f"running on {_models_text(running)} ({owner} says {_models_text(code_models)})"


def _models_text(models: dict[str, str]) -> str:
    """One model when every agent has it, else ``name: model`` for each."""
    distinct = set(models.values())
    if len(distinct) == 1:
        return next(iter(distinct))
    return ", ".join(f"{name}: {model}" for name, model in models.items())
