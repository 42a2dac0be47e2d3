"""Evolution Studio: reflective prompt evolution (GEPA) for Google ADK agents, humans in the loop.

Importing any part of the package first sets ``LITELLM_LOCAL_MODEL_COST_MAP`` so that LiteLLM
never fetches its model cost map from the network (these machines reach only package registries).
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from studio.model.redaction import redact_studio_logs  # noqa: E402

redact_studio_logs()  # secrets in model text or errors never reach a log

__version__ = "0.1.0"

# Heavy modules (ADK, LiteLLM) load on first use, so `import studio` stays cheap for the CLI and UI.
_LAZY_EXPORTS = {
    "evolve": "studio.engine.hosting.api",
    "evolve_sync": "studio.engine.hosting.api",
    "evolve_group": "studio.engine.hosting.api",
    "evolve_workflow": "studio.engine.hosting.api",
    "WorkflowSpec": "studio.model.workflow",
    "EvolutionConfig": "studio.model.config",
    "EvolutionResult": "studio.engine.hosting.api",
    "enqueue": "studio.engine.hosting.queue",
    "fork": "studio.engine.hosting.forks",
    "score_test_set": "studio.engine.hosting.api",
    "start_test_scoring": "studio.engine.hosting.api",
    "align_critic": "studio.projects.aligning",
    "align_report": "studio.projects.aligning",
    "aligned_critic": "studio.projects.aligning",
    "rescore_run": "studio.projects.aligning",
    "decide": "studio.engine.people.gates",
    "override": "studio.engine.people.gates",
    "undo_override": "studio.engine.people.gates",
    "AgentSpec": "studio.model.records",
    "Feedback": "studio.model.feedback",
    "SimpleCriticOutput": "studio.critics.agent",
    "CriticOutput": "studio.critics.agent",
    "CriticScorer": "studio.critics.agent",
    "normalize_feedback": "studio.critics.agent",
    "SIMPLE_CRITIC_INSTRUCTION": "studio.critics.agent",
    "ADVANCED_CRITIC_INSTRUCTION": "studio.critics.agent",
    "AgentExecutor": "studio.runtime.execution",
    "AgentExecutorProtocol": "studio.runtime.protocol",
    "ExecutionResult": "studio.runtime.protocol",
    "ExecutionStatus": "studio.runtime.protocol",
    "ScoringError": "studio.model.errors",
    "CriticOutputParseError": "studio.model.errors",
    "MissingScoreFieldError": "studio.model.errors",
    "image_file": "studio.model.media",
    "ConfigError": "studio.model.errors",
    "SchemaBasedScorer": "studio.critics.agent",
    "AdkMetricsCritic": "studio.critics.adk_metrics",
    "adk_metrics_critic": "studio.critics.adk_metrics",
    "AgentAsJudgeEval": "studio.evaluators.criteria_judge",
    "AgentAsJudgeEvaluation": "studio.evaluators.criteria_judge",
    "AgentAsJudgeResult": "studio.evaluators.criteria_judge",
}

__all__ = sorted(_LAZY_EXPORTS)


def __getattr__(name: str):
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'studio' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
