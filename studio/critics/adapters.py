"""Evaluators and judges as critics of an evolution run (the
:class:`studio.critics.protocol.Critic` seam).

- :class:`EvaluatorCritic` wraps any evaluator. Text evaluators get the sample's ``output`` and
  ``expected``; trajectory evaluators (``uses_trace``) get the executor's ``trace`` as outputs and
  the example's ``expected_trajectory`` (else ``expected``) column as the reference. The example's
  ``context`` and ``requirements`` columns, when present, are passed as keywords (RAG triad,
  agent-as-judge).
- :class:`JudgeCritic` wraps an :class:`AgentAsJudgeEval`: numeric 1-10 becomes
  ``(score - 1) / 9``, binary becomes 1.0 / 0.0.
- :class:`WeightedCritic` combines critics: the weighted mean over the components that returned a
  score. A component that could not evaluate is excluded and listed in ``extra["excluded"]``,
  never averaged as 0; when none could, the score is None.

Each answers a :class:`~studio.model.feedback.Feedback` (:func:`result_feedback` for an
evaluator): the evaluator's comment is its ``text`` (the trial's feedback text), its metadata
(verdicts, rubric path, claims...) its ``extra``. A score of None is
:meth:`Feedback.unscored`, with ``extra["error"]`` saying why. Potato's calling convention
(``evaluate(outputs=..., reference_outputs=..., inputs=...)``) is spoken only here.

Declarative configs for :func:`build_critic` (a project file's critic section; ``type`` and
``description`` keys are ignored)::

    # one evaluator
    {"evaluator": "exact_match", "params": {"case_sensitive": False},
     "name": "exact", "use": "output", "reference_key": "answer"}

    # a weighted combination; items are evaluators or agent_as_judge blocks
    {"name": "combo", "evaluators": [
        {"name": "trajectory_match", "params": {"mode": "unordered"}, "weight": 2},
        {"name": "rubric_dag", "params": {"preset": "answer_quality"}, "label": "quality"},
        {"agent_as_judge": {"criteria": "Be concise"}, "weight": 1}]}

    # ADK's metrics, as `adk eval` scores (studio.critics.adk_metrics): its eval criteria
    # config (test_config.json's content; no custom_metrics here)
    {"adk_metrics": {"criteria": {"tool_trajectory_avg_score": 1.0}},
     "judge_model": "openai/gpt-4o", "score": "pass"}

    # Agno-style criteria judge
    {"agent_as_judge": {"criteria": "...", "scoring_strategy": "numeric", "threshold": 7,
                        "additional_guidelines": ["..."], "model": "local/smollm2"}}

Unknown evaluator names raise :class:`studio.evaluators.UnknownEvaluatorError` (a ConfigError)
naming the name and the known ones; unknown keys raise ConfigError listing the accepted keys.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import studio.critics.alignment  # noqa: F401  (registers the critic_agreement evaluator)
from studio.critics.feedback import checked_feedback
from studio.critics.protocol import Critic, Sample
from studio.evaluators.base import Evaluator, EvaluatorResult
from studio.evaluators.criteria_judge import AgentAsJudgeEval
from studio.evaluators.registry import build_evaluator
from studio.model.errors import ConfigError, FeedbackShapeError
from studio.model.feedback import Feedback
from studio.model.jsontools import to_jsonable
from studio.model.records import CriticSpec

logger = logging.getLogger(__name__)

USES = ("output", "trace")
TRAJECTORY_COLUMNS = ("expected_trajectory", "expected")
_PASSED_THROUGH = ("verdicts", "path", "claims")
"""Component metadata lifted to the top of a weighted result, so the studio can show it."""
_IGNORED_KEYS = {"type", "description"}
_CRITIC_KEYS = {"evaluator", "evaluators", "agent_as_judge", "params", "name", "use",
                "reference_key", "adk_metrics", "judge_model", "score"}
_ITEM_KEYS = {"name", "params", "weight", "use", "reference_key", "label", "agent_as_judge",
              "adk_metrics", "judge_model", "score"}
_JUDGE_KEYS = {"criteria", "scoring_strategy", "threshold", "additional_guidelines", "model",
               "name"}


class EvaluatorCritic:
    """Any evaluator as a critic.

    Args:
        evaluator: the evaluator to ask.
        name: the critic's name (default: the evaluator's key).
        use: ``"output"`` (final text) or ``"trace"`` (the trajectory); by default what the
            evaluator works on (``evaluator.uses_trace``).
        reference_key: the example column holding the reference; by default ``expected`` for
            text, ``expected_trajectory`` then ``expected`` for trajectories.

    Raises:
        ValueError: ``use`` is outside output, trace.
    """

    def __init__(self, evaluator: Evaluator, name: str | None = None, use: str | None = None,
                 reference_key: str | None = None) -> None:
        if use is not None and use not in USES:
            raise ValueError(f"use must be one of {', '.join(USES)}; got {use!r}")
        self.evaluator = evaluator
        self.name = name or evaluator.key
        self.use = use or ("trace" if evaluator.uses_trace else "output")
        self.reference_key = reference_key

    async def assess(self, sample: Sample) -> Feedback:
        """Score one sample; an evaluator failure is :meth:`Feedback.unscored`, saying why."""
        if self.use == "trace" and not _has_trajectory(sample.trace):
            return Feedback.unscored(_missing_trace_reason(sample.trace),
                                     evaluator=self.evaluator.key)
        try:
            result = await self.evaluator.aevaluate(
                outputs=sample.trace if self.use == "trace" else sample.output,
                reference_outputs=self._reference(sample), inputs=sample.input_text,
                **_extra_columns(sample.example))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one bad example is a recorded result, not a crashed run
            logger.exception("evaluator %s failed", self.evaluator.key)
            why = f"evaluator {self.evaluator.key} failed: {type(exc).__name__}: {exc}"
            return Feedback.unscored(why, evaluator=self.evaluator.key)
        return result_feedback(result)

    def _reference(self, sample: Sample) -> Any:
        if self.reference_key is not None:
            return sample.example.get(self.reference_key)
        if self.use == "output":
            return sample.expected
        for column in TRAJECTORY_COLUMNS:
            if sample.example.get(column) is not None:
                return sample.example[column]
        return None


def evaluator_feedback(evaluator: Evaluator, *, outputs: object,
                       reference_outputs: object) -> Feedback:
    """What ``evaluator`` says of ``outputs``, as a critic's feedback, called synchronously
    (re-judging a kept reply outside a run, :mod:`studio.engine.people.labels`)."""
    return result_feedback(evaluator.evaluate(outputs=outputs,
                                              reference_outputs=reference_outputs))


def result_feedback(result: EvaluatorResult) -> Feedback:
    """An evaluator's result as a critic's feedback: the comment is the text, the details
    (with the evaluator's key and raw value) are ``extra``."""
    details = {**to_jsonable(result.metadata), "evaluator": result.key,
               "value": to_jsonable(result.value)}
    if result.score is None:
        details["error"] = result.comment or "could not evaluate"
    return Feedback(score=result.score, text=result.comment, extra=details)


def _has_trajectory(trace: Mapping[str, object]) -> bool:
    return bool(trace) and not ("error" in trace and not trace.get("events")
                                and not trace.get("tool_calls"))


def _missing_trace_reason(trace: Mapping[str, object]) -> str:
    if trace and trace.get("error"):
        return f"no trajectory: the agent run failed ({trace['error']})"
    return "no trajectory was recorded for this sample"


def _extra_columns(example: Mapping[str, object]) -> dict[str, Any]:
    return {key: example[key] for key in ("context", "requirements") if key in example}


class JudgeCritic:
    """An :class:`AgentAsJudgeEval` as a critic (no eval-run logging, no ``on_fail``)."""

    def __init__(self, judge: AgentAsJudgeEval, name: str | None = None) -> None:
        self.judge = judge
        self.name = name or judge.name or "agent_as_judge"

    async def assess(self, sample: Sample) -> Feedback:
        evaluation = await self.judge.judge_case(sample.input_text, sample.output)
        details: dict[str, Any] = {"judge_score": evaluation.score, "passed": evaluation.passed,
                                   "scoring_strategy": self.judge.scoring_strategy}
        if self.judge.scoring_strategy == "numeric":
            details["threshold"] = self.judge.threshold
        if evaluation.error is not None:
            details.update(error=evaluation.error, raw_reply=evaluation.raw_reply)
        return Feedback(score=evaluation.normalized_score,
                        text=evaluation.reason or evaluation.error or "", extra=details)


class WeightedCritic:
    """A weighted mean of critics, evaluators or judges.

    Args:
        components: ``(critic_or_evaluator, weight)`` pairs; weights must be positive.
        name: the combined critic's name.

    Raises:
        ValueError: no components, a weight that is not a positive number, or a component that
            is neither a critic, an evaluator nor an ``AgentAsJudgeEval``.
    """

    def __init__(self, components: Sequence[tuple[Any, float]], name: str = "weighted") -> None:
        if not components:
            raise ValueError("WeightedCritic needs at least one (critic, weight) pair")
        self.name = name
        self.components: list[tuple[str, Critic, float]] = []
        seen: dict[str, int] = {}
        for item, weight in components:
            critic = as_critic(item)
            _check_weight(weight, critic.name)
            seen[critic.name] = seen.get(critic.name, 0) + 1
            label = critic.name if seen[critic.name] == 1 else f"{critic.name}#{seen[critic.name]}"
            self.components.append((label, critic, float(weight)))

    async def assess(self, sample: Sample) -> Feedback:
        answers = await asyncio.gather(*(_safe_assess(c, sample) for _, c, _ in self.components))
        parts = [_Part(label, weight, feedback) for (label, _, weight), feedback
                 in zip(self.components, answers, strict=True)]
        scored = [(p.weight, score) for p in parts if (score := p.score) is not None]
        details = {"excluded": [p.name for p in parts if p.score is None],
                   "components": [p.summary() for p in parts], **_lifted(parts)}
        text = _combined_feedback(parts)
        if not scored:
            return Feedback.unscored("no component could evaluate: " + "; ".join(
                f"{p.name}: {p.feedback.error or 'no score'}" for p in parts), text=text,
                **details)
        total = sum(weight for weight, _ in scored)
        return Feedback(score=sum(weight * score for weight, score in scored) / total, text=text,
                        extra=details)


@dataclass(frozen=True)
class _Part:
    """One component's answer inside a :class:`WeightedCritic`."""

    name: str
    weight: float
    feedback: Feedback

    @property
    def score(self) -> float | None:
        return self.feedback.score

    def summary(self) -> dict[str, Any]:
        """What ``extra["components"]`` keeps of it (the review queue reads name and score)."""
        details = dict(self.feedback.extra)
        if self.feedback.guidance:
            details["guidance"] = self.feedback.guidance
        if self.feedback.dimensions:
            details["dimensions"] = self.feedback.dimensions
        return {"name": self.name, "weight": self.weight, "score": self.score,
                "feedback": self.feedback.text, "metadata": details}


async def _safe_assess(critic: Critic, sample: Sample) -> Feedback:
    """A component's verdict; an exception (e.g. an unparseable reply) or a score outside
    [0, 1] is "could not evaluate", never 0."""
    try:
        feedback = await critic.assess(sample)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return Feedback.unscored(f"{type(exc).__name__}: {exc}")
    if not isinstance(feedback, Feedback):
        return Feedback.unscored(f"could not evaluate: {critic.name!r} answered a "
                                 f"{type(feedback).__name__}, not a Feedback")
    try:
        return checked_feedback(feedback)
    except FeedbackShapeError as exc:
        why = (f"could not evaluate: the score {feedback.score!r} is outside 0.0 to 1.0"
               if exc.field == "score" else f"could not evaluate: {exc}")
        return Feedback(score=None, text=why, extra={**feedback.extra, "error": why})


def _check_weight(weight: object, name: str) -> None:
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not (
            math.isfinite(weight) and weight > 0):
        raise ValueError(f"weight of {name!r} must be a positive number; got {weight!r}")


def _combined_feedback(parts: list[_Part]) -> str:
    lines = []
    for part in parts:
        feedback = part.feedback.text.strip()
        if part.score is None:
            reason = part.feedback.error or feedback or "no score"
            lines.append(f"[{part.name}] could not evaluate (excluded): {reason}")
        else:
            lines.append(f"[{part.name}] score {part.score:.2f} (weight {part.weight:g})"
                         + (f": {feedback}" if feedback else ""))
    return "\n".join(lines)


def _lifted(parts: list[_Part]) -> dict[str, Any]:
    lifted = {}
    for key in _PASSED_THROUGH:
        holders = [p for p in parts if key in p.feedback.extra]
        if len(holders) == 1:
            lifted[key] = holders[0].feedback.extra[key]
    return lifted


def as_critic(item: object) -> Critic:
    """An evaluator, an ``AgentAsJudgeEval`` or a critic, as a critic.

    Raises:
        ValueError: ``item`` is none of these.
    """
    if isinstance(item, Evaluator):
        return EvaluatorCritic(item)
    if isinstance(item, AgentAsJudgeEval):
        return JudgeCritic(item)
    if isinstance(item, Critic):
        return item
    raise ValueError(f"expected a critic, an evaluator or an AgentAsJudgeEval; got "
                     f"{type(item).__name__}")


def metric_calls_per_trial(critic: object) -> int:
    """What one trial costs against a run's ``max_metric_calls``: one critic evaluation, or
    the judge samples its critic asks for when there are more (ADK metrics judged by a model
    ask theirs ``num_samples`` times each: :func:`studio.critics.adk_metrics.judge_samples`).

    ``critic``: a run's :class:`CriticSpec` or a built critic."""
    return max(1, _judge_samples(critic))


def _judge_samples(critic: object) -> int:
    if isinstance(critic, CriticSpec):
        return _config_samples(critic.evaluator or {}) if critic.type == "evaluator" else 0
    if isinstance(critic, WeightedCritic):
        return sum(_judge_samples(part) for _, part, _ in critic.components)
    samples = getattr(critic, "judge_samples", 0)
    return samples if isinstance(samples, int) else 0


def _config_samples(config: Mapping[str, object]) -> int:
    from studio.critics.adk_metrics import judge_samples

    own = judge_samples(config["adk_metrics"]) if isinstance(config.get("adk_metrics"),
                                                             Mapping) else 0
    items = config.get("evaluators")
    parts = [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) \
        else []
    return own + sum(_config_samples(item) for item in parts)


# --------------------------------------------------------------------------- declarative configs


def build_critic(config: Mapping[str, Any]) -> Critic:
    """A critic from a declarative config (shapes in the module docstring).

    Raises:
        UnknownEvaluatorError: an evaluator name is not registered (naming the known ones).
        ConfigError: the config has none or several of evaluator / evaluators /
            agent_as_judge, an unknown key, a bad weight or a bad parameter.
    """
    if not isinstance(config, Mapping):
        raise ConfigError("a critic config must be a mapping", where="critic", value=config)
    _check_keys(config, _CRITIC_KEYS, "critic")
    kinds = [k for k in ("evaluator", "evaluators", "agent_as_judge", "adk_metrics")
             if k in config]
    if len(kinds) != 1:
        raise ConfigError("give exactly one of 'evaluator', 'evaluators', 'agent_as_judge' or "
                          "'adk_metrics'", where="critic", value=dict(config))
    name = config.get("name")
    if kinds[0] == "adk_metrics":
        return declared_adk_metrics(config, name, "critic")
    if kinds[0] == "evaluator":
        return _evaluator_critic(config, name, "critic")
    if kinds[0] == "agent_as_judge":
        return JudgeCritic(_judge(config["agent_as_judge"], "critic.agent_as_judge"), name)
    return _weighted(config["evaluators"], name or "weighted")


def _evaluator_critic(spec: Mapping[str, Any], name: str | None, where: str) -> EvaluatorCritic:
    evaluator = build_evaluator(spec.get("evaluator") or spec.get("name"), spec.get("params"))
    try:
        return EvaluatorCritic(evaluator, name=name, use=spec.get("use"),
                               reference_key=spec.get("reference_key"))
    except ValueError as exc:
        raise ConfigError(str(exc), where=f"{where}.use", value=spec.get("use")) from exc


def _weighted(items: object, name: str) -> WeightedCritic:
    if not isinstance(items, list) or not items:
        raise ConfigError("'evaluators' must be a non-empty list", where="critic.evaluators",
                          value=items)
    components = []
    for index, item in enumerate(items):
        where = f"critic.evaluators[{index}]"
        if not isinstance(item, Mapping):
            raise ConfigError("each entry must be a mapping", where=where, value=item)
        _check_keys(item, _ITEM_KEYS, where)
        weight = item.get("weight", 1)
        try:
            _check_weight(weight, str(item.get("name") or "agent_as_judge"))
        except ValueError as exc:
            raise ConfigError(str(exc), where=f"{where}.weight", value=weight) from exc
        components.append((_item_critic(item, where), weight))
    return WeightedCritic(components, name=name)


def _item_critic(item: Mapping[str, Any], where: str) -> Critic:
    if "adk_metrics" in item:
        return declared_adk_metrics(item, item.get("label"), where)
    if "agent_as_judge" in item:
        return JudgeCritic(_judge(item["agent_as_judge"], f"{where}.agent_as_judge"),
                           item.get("label"))
    if not isinstance(item.get("name"), str):
        raise ConfigError("each entry needs an evaluator 'name' or an 'agent_as_judge' block",
                          where=where, value=dict(item))
    return _evaluator_critic(item, item.get("label"), where)


def declared_adk_metrics(spec: Mapping[str, Any], name: str | None, where: str) -> Critic:
    """An :class:`AdkMetricsCritic` from a declarative config: ``custom_metrics`` are refused
    (they import code; a stored or uploaded config may not)."""
    from studio.critics.adk_metrics import AdkMetricsCritic  # ADK's evaluation: when used

    if not isinstance(spec["adk_metrics"], Mapping):  # a path would read the server's files
        raise ConfigError("adk_metrics must be the eval config itself ({criteria: {...}}); a "
                          "project file may name a test_config.json beside it instead",
                          where=f"{where}.adk_metrics", value=spec["adk_metrics"])
    return AdkMetricsCritic(spec["adk_metrics"], judge_model=spec.get("judge_model"),
                            score=spec.get("score") or "pass", name=name or "adk_metrics",
                            allow_custom_metrics=False, where=f"{where}.adk_metrics")


def _judge(spec: object, where: str) -> AgentAsJudgeEval:
    if not isinstance(spec, Mapping):
        raise ConfigError("agent_as_judge must be a mapping with at least 'criteria'",
                          where=where, value=spec)
    _check_keys(spec, _JUDGE_KEYS, where)
    try:
        return AgentAsJudgeEval(**spec)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(str(exc), where=where, value=dict(spec)) from exc


def _check_keys(spec: Mapping[str, object], allowed: set[str], where: str) -> None:
    unknown = sorted(set(spec) - allowed - _IGNORED_KEYS)
    if unknown:
        raise ConfigError(f"unknown key {', '.join(map(repr, unknown))}; accepted keys: "
                          f"{', '.join(sorted(allowed))}", where=where, value=dict(spec))

