"""Critics: the Critic seam and every adapter to it (ADK critic agents, evaluators, judges),
feedback parsing, and judge-human agreement.

The ADK critic-agent API (``CriticScorer``, ``SimpleCriticOutput``, ``CriticOutput``...) is
re-exported here under the names gepa-adk users know; :class:`AdkMetricsCritic` scores with ADK's
own eval metrics (:mod:`studio.critics.adk_metrics`).
"""

from studio.critics.adk_metrics import (
    AdkMetricsCritic,
    ScoreRule,
    adk_metrics_critic,
    adk_metrics_critic_spec,
)
from studio.critics.agent import *  # noqa: F403
from studio.critics.agent import __all__ as _agent_all

__all__ = [*_agent_all, "AdkMetricsCritic", "ScoreRule", "adk_metrics_critic",
           "adk_metrics_critic_spec"]
