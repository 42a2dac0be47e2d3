"""Load what a process's first model call imports before the process takes work.

A run's first call through ADK and LiteLLM imports about a thousand modules (ADK's runner and
flows, LiteLLM's providers, auth libraries): seconds of CPU on a slow machine. Counted inside
that call, they can exceed a short ``call_timeout_seconds`` and fail a trial that a warm
process judges in time; in a ``studio worker`` they are seconds spent holding a run's lease.
A process that takes work (a worker, a worker process of ``processes: N``) pays them up front
with one call of the offline scripted model, which reaches no network and costs nothing.
"""

from __future__ import annotations

import logging

from studio.model.records import AgentSpec
from studio.runtime.agents import build_agent
from studio.runtime.execution import AgentExecutor

logger = logging.getLogger(__name__)


async def warm_up() -> None:
    """One call of the scripted model through ADK's runner and LiteLLM. Only a speed-up: a
    process that cannot warm up still works (the imports then happen in its first call)."""
    try:
        agent = build_agent(AgentSpec(name="warm_up", model="scripted/demo",
                                      instruction="Write."))
        executor = AgentExecutor(max_concurrency=1, timeout_s=60, max_retries=0,
                                 app_name="warm_up")
        await executor.execute(agent, "topic: warm up", state={})
    except Exception:
        logger.warning("warm-up call failed", exc_info=True)
