"""Potato's ``potato.evaluators.agentevals_adapter``, under its names: graph-trajectory
evaluators for agent graphs (LangGraph's node paths).

Potato wraps the optional ``agentevals`` package here, and ``is_available()`` says whether it
is installed. The studio evaluates graph trajectories itself
(:mod:`studio.evaluators.graph_trajectory`), so nothing is optional: ``is_available()`` is
always True, and code written for Potato (``if agentevals_adapter.is_available(): ...``) runs
its branch. The evaluators keep Potato's keys (``graph_trajectory_strict_match``,
``graph_trajectory_accuracy``) and its result contract (``score`` 1.0 / 0.0 or a judge's score,
``value``, ``comment``); where agentevals raises on a missing side, the result here is not
evaluated (``score=None``) with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from studio.evaluators.base import Evaluator
from studio.evaluators.graph_trajectory import (
    GRAPH_TRAJECTORY_PROMPT,
    GraphTrajectoryLLMJudge,
    GraphTrajectoryStrictMatch,
)
from studio.model.jsontools import JsonValue

if TYPE_CHECKING:
    from studio.runtime.execution import AgentExecutor


def is_available() -> bool:
    """True: the graph-trajectory evaluators need no optional package here (Potato: True
    only once ``agentevals`` is installed)."""
    return True


def graph_trajectory_strict_match() -> Evaluator:
    """agentevals' strict match: the same nodes in the same order, turn for turn."""
    return GraphTrajectoryStrictMatch()


def graph_trajectory_llm_judge(*, model: object = None, prompt: str = GRAPH_TRAJECTORY_PROMPT,
                               continuous: bool = False,
                               feedback_key: str = "graph_trajectory_accuracy",
                               config: Mapping[str, JsonValue] | None = None,
                               endpoint: object = None,
                               executor: AgentExecutor | None = None) -> Evaluator:
    """agentevals' graph-trajectory judge. ``model`` may be spelled as agentevals spells it,
    ``"openai:o3-mini"`` (read as LiteLLM's ``openai/o3-mini``), or as any studio judge's."""
    return GraphTrajectoryLLMJudge(config, prompt, continuous, endpoint, feedback_key,
                                   model=_litellm_spelling(model), executor=executor)


def _litellm_spelling(model: object) -> Any:
    """``provider:model`` (agentevals, LangChain) as LiteLLM's ``provider/model``."""
    if isinstance(model, str) and ":" in model and "/" not in model:
        provider, _, name = model.partition(":")
        return f"{provider}/{name}"
    return model


__all__ = ["graph_trajectory_llm_judge", "graph_trajectory_strict_match", "is_available"]
