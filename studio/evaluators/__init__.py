"""Programmatic evaluators and LLM judges (Potato's evaluators, Agno's agent-as-judge).

One contract: ``evaluator.evaluate(outputs=..., reference_outputs=..., inputs=...)`` returns an
:class:`EvaluatorResult` (``score`` in [0, 1] or None, ``value``, ``comment``, ``metadata``).
Trajectories are normalized automatically (:func:`normalize_trajectory`); a trajectory in an
unknown shape gives ``score=None`` with a comment naming the shape.

Importing this package loads neither ADK, LiteLLM nor any ML stack: LLM-backed evaluators import
them on their first call, and :class:`EmbeddingDistance` imports ``sentence_transformers`` only
when used without an ``embed_fn``.

Three judge names come from the libraries users know, one concept each:

- :class:`AgentAsJudgeEval` (Agno): judges an *output* against free-text *criteria*, 1-10 or
  pass/fail, with a threshold and ``on_fail``; each judged case is an
  :class:`AgentAsJudgeEvaluation`, a whole run an :class:`AgentAsJudgeResult`
  (:mod:`studio.evaluators.criteria_judge`).
- :class:`AgentAsJudgeEvaluator` (Potato): judges a *trajectory* against a checklist of
  *requirements*, one evidence-backed verdict each (:mod:`studio.evaluators.requirements_judge`).
"""

from __future__ import annotations

from studio.evaluators import agentevals_adapter  # Potato's module, under its name
from studio.evaluators.base import EvaluationResult, Evaluator, EvaluatorResult
from studio.evaluators.criteria_judge import (
    AgentAsJudgeEval,
    AgentAsJudgeEvaluation,
    AgentAsJudgeResult,
    BinaryJudgeResponse,
    NumericJudgeResponse,
)
from studio.evaluators.errors import RubricDagError, TrajectoryShapeError, UnknownEvaluatorError
from studio.evaluators.graph_trajectory import GraphTrajectoryLLMJudge, GraphTrajectoryStrictMatch
from studio.evaluators.llm_judge import LLMTrajectoryJudge
from studio.evaluators.rag_triad import (
    AnswerRelevanceEvaluator,
    ContextRelevanceEvaluator,
    GroundednessEvaluator,
    rag_triad,
)
from studio.evaluators.registry import (
    build_evaluator,
    build_evaluators,
    get_supported_evaluators,
    list_evaluators,
    register_evaluator,
    unregister_evaluator,
)
from studio.evaluators.requirements_judge import AgentAsJudgeEvaluator
from studio.evaluators.rubric_dag import (
    RUBRIC_PRESETS,
    RubricDag,
    RubricDagEvaluator,
    make_rubric_dag,
    validate_rubric_dag,
)
from studio.evaluators.text import (
    Contains,
    EditDistance,
    EmbeddingDistance,
    ExactMatch,
    JSONSchemaMatch,
    JSONValid,
    RegexMatch,
)
from studio.evaluators.tool_use import ToolCallAccuracyEvaluator, ToolUseEvaluator
from studio.evaluators.trajectory import (
    Step,
    ToolCall,
    extract_tool_calls,
    normalize_trajectory,
    render_trajectory,
)
from studio.evaluators.trajectory_match import TrajectoryMatchEvaluator

__all__ = [
    "RUBRIC_PRESETS",
    "AgentAsJudgeEval",
    "AgentAsJudgeEvaluation",
    "AgentAsJudgeEvaluator",
    "AgentAsJudgeResult",
    "AnswerRelevanceEvaluator",
    "BinaryJudgeResponse",
    "Contains",
    "ContextRelevanceEvaluator",
    "EditDistance",
    "EmbeddingDistance",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorResult",
    "ExactMatch",
    "GraphTrajectoryLLMJudge",
    "GraphTrajectoryStrictMatch",
    "GroundednessEvaluator",
    "JSONSchemaMatch",
    "JSONValid",
    "LLMTrajectoryJudge",
    "NumericJudgeResponse",
    "RegexMatch",
    "RubricDag",
    "RubricDagError",
    "RubricDagEvaluator",
    "Step",
    "ToolCall",
    "ToolCallAccuracyEvaluator",
    "ToolUseEvaluator",
    "TrajectoryMatchEvaluator",
    "TrajectoryShapeError",
    "UnknownEvaluatorError",
    "agentevals_adapter",
    "build_evaluator",
    "build_evaluators",
    "extract_tool_calls",
    "get_supported_evaluators",
    "list_evaluators",
    "make_rubric_dag",
    "normalize_trajectory",
    "rag_triad",
    "register_evaluator",
    "render_trajectory",
    "unregister_evaluator",
    "validate_rubric_dag",
]
