"""ADK's eval metrics as a critic: the studio scores a trial as ``adk eval`` and ``adk optimize``
score an eval case, with ADK's own evaluators from its metric registry
(``google.adk.evaluation.metric_evaluator_registry``) and ADK's eval criteria config
(``test_config.json``: ``{"criteria": {metric: threshold or criterion}}``).

A trial becomes one ADK ``Invocation`` pair:

- actual: the example's input as the user content, the agent's reply as the final response,
  and the trial's tool calls, tool results and intermediate texts as ``InvocationEvents``;
- expected: the example's ``expected`` as the final response and its ``expected_trajectory``
  (an eval set's expected tool uses, :mod:`studio.runtime.adk_evalsets`) as tool uses.

Each metric's evaluator gets that pair as ``LocalEvalService`` passes a single-turn case's. The
trial's feedback carries ADK's verdict (:class:`~studio.model.verdicts.Verdict`): each metric's
score, threshold and status as ADK's evaluator gave them, and the case's status by ``adk eval``'s
rule (FAILED when any metric fails). The score, what GEPA optimises, is made from the metrics by
a :class:`~studio.model.verdicts.ScoreRule`: by default ``pass``, as ``adk optimize`` scores a
case (1.0 when every metric passes its threshold, 0.0 when one fails); ``graded`` (what a run of
an agent folder uses) gives each metric its share of its threshold, 1.0 once it passes, averaged,
so the score is 1.0 exactly when the case passes and a failing metric moved toward its threshold
counts; ``mean`` averages the metrics' scores (each scaled to [0, 1] by its value interval). A
metric that could not evaluate (no reference, a judge that failed) is left out, as ADK leaves out
``NOT_EVALUATED``; none left is "could not evaluate". The feedback text names each metric, its
score, threshold and verdict, and its details (the expected and actual tool calls, the rubric
verdicts with their rationales), then the case's verdict: what reflection reads.

Metrics judged by a model (``final_response_match_v2``, the rubric-based ones,
``hallucinations_v1``) use the run's judge model unless the criterion names its own
(``judge_model_options.judge_model``); ADK resolves that name itself (its ``LLMRegistry``), the
studio's ``scripted/...`` and ``local/...`` models included. Refused up front, naming the metric:
conversation metrics (multi-turn, user simulator), ADK's informational efficiency metrics,
Vertex AI metrics without a Google Cloud project or key, unknown names, and ``custom_metrics``
in a declarative config (they import code named by the file; pass ``registry=`` from Python).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.critics.protocol import Sample
from studio.model.errors import ConfigError
from studio.model.feedback import Feedback
from studio.model.jsontools import JsonDict, JsonValue, to_jsonable
from studio.model.limits import MAX_JUDGE_SAMPLES
from studio.model.records import CriticSpec
from studio.model.verdicts import EvalStatus, MetricVerdict, ScoreRule, Verdict

if TYPE_CHECKING:
    from google.adk.evaluation.eval_case import Invocation, InvocationEvents
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.evaluator import EvaluationResult
    from google.adk.evaluation.metric_evaluator_registry import MetricEvaluatorRegistry
    from google.genai.types import Content, FunctionCall

logger = logging.getLogger(__name__)

LLM_JUDGED = ("final_response_match_v2", "rubric_based_final_response_quality_v1",
              "rubric_based_tool_use_quality_v1", "hallucinations_v1")
"""Metrics whose evaluator asks a judge model; the run's judge model fills in their criterion."""
NEEDS_EXPECTED_RESPONSE = ("response_match_score", "final_response_match_v2")
NEEDS_EXPECTED_TRAJECTORY = ("tool_trajectory_avg_score",)
VERTEX_METRICS = ("response_evaluation_score", "safety_v1")
REFUSED = {
    **dict.fromkeys(
        ("multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
         "multi_turn_tool_use_quality_v1", "rubric_based_multi_turn_trajectory_quality_v1",
         "per_turn_user_simulator_quality_v1"),
        "scores a whole conversation, and the studio scores one reply per example"),
    **dict.fromkeys(
        ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
         "invocation_duration_v1"),
        "is one of ADK's informational efficiency metrics, which never pass or fail (ADK "
        "refuses a threshold for them); every trial already shows its model calls and tokens"),
}
"""Metrics a trial cannot be scored by, with why (the message names the metric)."""
EXPECTED_TRAJECTORY_KEY = "expected_trajectory"


@dataclass(frozen=True)
class _Metric:
    """One configured metric: ADK's ``EvalMetric`` (its evaluator built once up front, so a
    criterion ADK refuses is refused before the run) and its value interval."""

    name: str
    eval_metric: EvalMetric
    interval: tuple[float, float]


class AdkMetricsCritic:
    """ADK's metrics (an eval criteria config) as a studio critic.

    Args:
        config: ADK's eval config: an ``EvalConfig``, its JSON data (``{"criteria": {...}}``)
            or the path of a ``test_config.json``.
        judge_model: the model LLM-judged metrics ask when their criterion names none (a
            LiteLLM string such as ``scripted/judge`` or ``openai/gpt-4o``, or an ADK name
            such as ``gemini-2.5-flash``).
        score: :class:`ScoreRule` (``pass`` by default, as ``adk optimize``).
        name: the critic's name.
        registry: ADK's metric evaluator registry (default ``DEFAULT_METRIC_EVALUATOR_REGISTRY``);
            pass your own to score with metrics you registered in it, or ``custom_metrics``.
        allow_custom_metrics: whether ``custom_metrics`` in the config may be registered (they
            import the functions the config names: only for a config you wrote).

    Raises:
        ConfigError: the config is not one ADK reads, names no metric, or names a metric the
            studio cannot score a trial by (see the module docstring), naming it.
    """

    def __init__(self, config: object, *, judge_model: str | None = None,
                 score: ScoreRule | str = ScoreRule.PASS, name: str = "adk_metrics",
                 registry: MetricEvaluatorRegistry | None = None, allow_custom_metrics: bool = True,
                 where: str = "critic.adk_metrics") -> None:
        from studio.runtime.adk_models import register_studio_models_with_adk

        register_studio_models_with_adk()
        self.name = name
        self.rule = _score_rule(score, where)
        self.eval_config = eval_config(config, judge_model=judge_model, where=where)
        self.registry = _registry(self.eval_config, registry, allow_custom_metrics, where)
        _check_samples(self.eval_config, where)
        self.metrics = [_metric(m, self.registry, where) for m in eval_metrics(self.eval_config)]
        _check_judges(self.eval_config, where)
        if not self.metrics:
            raise ConfigError("the eval config names no metric: give criteria such as "
                              '{"criteria": {"tool_trajectory_avg_score": 1.0, '
                              '"response_match_score": 0.8}}', where=where)

    @property
    def judge_samples(self) -> int:
        """Judge model calls one trial costs: each LLM-judged metric's ``num_samples``."""
        return judge_samples(self.eval_config)

    async def assess(self, sample: Sample) -> Feedback:
        """Score one trial by every metric (see the module docstring)."""
        actual, expected = trial_invocations(sample)
        results = [await self._evaluate(metric, sample, actual, expected)
                   for metric in self.metrics]
        return combined_feedback(results, self.rule)

    async def _evaluate(self, metric: _Metric, sample: Sample, actual: Invocation,
                        expected: Invocation) -> MetricResult:
        missing = _missing_reference(metric.name, sample)
        if missing:
            return MetricResult.not_evaluated(metric, missing)
        try:  # a fresh evaluator per trial, as LocalEvalService makes one per case: ADK's
            # rubric evaluators keep per-call state, and trials are scored concurrently
            evaluator = self.registry.get_evaluator(metric.eval_metric)
            result = evaluator.evaluate_invocations(
                actual_invocations=[actual], expected_invocations=[expected])
            if inspect.isawaitable(result):
                result = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one metric failing on one trial is a recorded result
            logger.warning("ADK metric %s failed", metric.name, exc_info=True)
            return MetricResult.not_evaluated(metric, f"{type(exc).__name__}: {exc}"[:500])
        return MetricResult.from_adk(metric, result, actual, expected)


# --------------------------------------------------------------------------- the eval config


def load_eval_config_file(path: str | Path, *, where: str = "criteria") -> dict[str, Any]:
    """A ``test_config.json``'s data, read as ADK's ``EvalConfig`` would read it.

    Raises:
        ConfigError: the file is missing, not JSON or not an object.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the eval criteria file {str(path)!r}: "
                          f"{exc.strerror or exc}", where=where, value=str(path)) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the eval criteria file {str(path)!r} is not JSON: {exc}",
                          where=where, value=str(path)) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"the eval criteria file {str(path)!r} must hold a JSON object "
                          '({"criteria": {...}})', where=where, value=str(path))
    return data


def eval_config(config: object, *, judge_model: str | None = None,
                where: str = "critic.adk_metrics") -> EvalConfig:
    """ADK's ``EvalConfig`` for ``config`` (see :class:`AdkMetricsCritic`), its LLM-judged
    criteria given ``judge_model`` where they name no judge.

    Raises:
        ConfigError: ADK's validation message, placed at ``where``.
    """
    from google.adk.evaluation.eval_config import EvalConfig
    from pydantic import ValidationError

    if isinstance(config, EvalConfig):
        config = config.model_dump(mode="json", by_alias=False, exclude_none=True)
    elif isinstance(config, str | Path):
        config = load_eval_config_file(config, where=where)
    if not isinstance(config, Mapping):
        raise ConfigError('an eval config is a mapping such as {"criteria": {...}} or the path '
                          "of a test_config.json", where=where, value=type(config).__name__)
    data = with_judge_model(dict(config), judge_model) if judge_model else dict(config)
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        place = ".".join(str(p) for p in error["loc"])
        raise ConfigError(f"ADK refuses this eval config: {place}: {error['msg']}",
                          where=where, value=place) from exc


def with_judge_model(config: dict[str, Any], judge_model: str) -> dict[str, Any]:
    """``config`` with ``judge_model`` in each LLM-judged criterion that names no judge (a bare
    threshold becomes ``{"threshold": t, "judge_model_options": {...}}``)."""
    criteria = dict(config.get("criteria") or {})
    for name in LLM_JUDGED:
        if name not in criteria:
            continue
        criterion = criteria[name]
        criterion = {"threshold": criterion} if isinstance(criterion, int | float) \
            else dict(criterion)
        options_key = "judgeModelOptions" if "judgeModelOptions" in criterion \
            else "judge_model_options"
        options = dict(criterion.get(options_key) or {})
        if not ({"judge_model", "judgeModel"} & set(options)):
            options["judge_model"] = judge_model
        criteria[name] = {**criterion, options_key: options}
    return {**config, "criteria": criteria}


def eval_metrics(config: EvalConfig) -> list[EvalMetric]:
    """ADK's ``EvalMetric`` per criterion, built by ADK's own mapping; the efficiency metrics ADK
    appends to every eval are left out (informational, see :data:`REFUSED`)."""
    from google.adk.evaluation.eval_config import get_eval_metrics_from_config

    named = set(config.criteria)
    return [m for m in get_eval_metrics_from_config(config) if m.metric_name in named]


def _registry(config: EvalConfig, registry: MetricEvaluatorRegistry | None, allow_custom: bool,
              where: str) -> MetricEvaluatorRegistry:
    from google.adk.evaluation.metric_evaluator_registry import (
        DEFAULT_METRIC_EVALUATOR_REGISTRY,
        register_custom_metrics_from_config,
    )

    registry = registry if registry is not None else DEFAULT_METRIC_EVALUATOR_REGISTRY
    if not config.custom_metrics:
        return registry
    if not allow_custom:
        names = ", ".join(sorted(config.custom_metrics))
        raise ConfigError(f"custom_metrics ({names}) import the Python functions the config "
                          "names, which a declarative config may not do; build "
                          "AdkMetricsCritic(config) in Python for your own metrics",
                          where=f"{where}.custom_metrics", value=names)
    return register_custom_metrics_from_config(config, registry.fork())


def _metric(eval_metric: EvalMetric, registry: MetricEvaluatorRegistry, where: str) -> _Metric:
    name = eval_metric.metric_name
    _refuse_unscorable(name, registry, f"{where}.criteria.{name}")
    try:
        registry.get_evaluator(eval_metric)
    except Exception as exc:  # ADK's criterion checks raise ValueError / pydantic errors
        raise ConfigError(f"ADK refuses the criterion of {name!r}: {exc}"[:600],
                          where=f"{where}.criteria.{name}", value=name) from exc
    return _Metric(name, eval_metric, _interval(name, registry))


def _refuse_unscorable(name: str, registry: MetricEvaluatorRegistry, where: str) -> None:
    known = {info.metric_name for info in registry.get_registered_metrics()}
    if name not in known:
        scorable = sorted(known - set(REFUSED))
        raise ConfigError(f"{name!r} is not a metric in ADK's registry; known: "
                          f"{', '.join(scorable)}", where=where, value=name)
    if name in REFUSED:
        raise ConfigError(f"{name!r} {REFUSED[name]}; leave it out of the criteria the studio "
                          "scores by", where=where, value=name)
    if name in VERTEX_METRICS and not _vertex_configured():
        raise ConfigError(f"{name!r} calls the Vertex AI evaluation service, which needs "
                          "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (or GOOGLE_API_KEY) "
                          "set; set them, or score by final_response_match_v2 or a rubric "
                          "metric, which ask the run's judge model", where=where, value=name)


ADK_DEFAULT_JUDGE_SAMPLES = 5
"""ADK's ``JudgeModelOptions.num_samples`` default: what a criterion that names none asks."""


def _judge_options(criterion: Any) -> dict[str, Any]:
    """A criterion's ``judge_model_options`` as data (a bare threshold has none)."""
    if criterion is None or isinstance(criterion, int | float):
        return {}
    data = criterion if isinstance(criterion, Mapping) else criterion.model_dump()
    options = data.get("judge_model_options", data.get("judgeModelOptions"))
    if options is not None and not isinstance(options, Mapping):
        options = options.model_dump()
    return dict(options or {})


def _samples(criterion: object) -> Any:
    options = _judge_options(criterion)
    return options.get("num_samples", options.get("numSamples", ADK_DEFAULT_JUDGE_SAMPLES))


def judge_samples(config: Any) -> int:
    """Judge model calls one trial costs under an eval config (``EvalConfig`` or its data):
    the ``num_samples`` of each metric judged by a model (ADK's default when it names none).
    Each is a metric call against ``max_metric_calls`` (:func:`metric_calls_per_trial`)."""
    criteria = config.get("criteria") if isinstance(config, Mapping) else config.criteria
    if not isinstance(criteria, Mapping):
        return 0
    counts = [_samples(criteria[name]) for name in LLM_JUDGED if name in criteria]
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool))


def _check_samples(config: EvalConfig, where: str) -> None:
    """Each judge sample is a paid call: at most :data:`MAX_JUDGE_SAMPLES` per metric."""
    for name in LLM_JUDGED:
        count = _samples(config.criteria.get(name))
        if isinstance(count, int) and count > MAX_JUDGE_SAMPLES:
            raise ConfigError(
                f"num_samples {count} asks the judge model {count:,} times per trial, each a "
                f"paid call; the limit is {MAX_JUDGE_SAMPLES} (ADK's default is "
                f"{ADK_DEFAULT_JUDGE_SAMPLES})",
                where=f"{where}.criteria.{name}.judge_model_options.num_samples", value=count)


def _check_judges(config: EvalConfig, where: str) -> None:
    """A judge reached through LiteLLM (``provider/model``) is callable from here: its key is
    set, its script registered (ADK's own names, ``gemini-2.5-flash``, ADK checks itself)."""
    from studio.runtime.providers import check_model

    for name in LLM_JUDGED:
        criterion = config.criteria.get(name)
        options = criterion.model_dump().get("judge_model_options") if criterion is not None \
            and not isinstance(criterion, int | float) else None
        judge = (options or {}).get("judge_model")
        if isinstance(judge, str) and "/" in judge:
            try:
                check_model(judge)
            except ConfigError as exc:
                raise ConfigError(f"the judge model of {name!r}: {exc.message}",
                                  where=f"{where}.criteria.{name}", value=judge) from exc


def _vertex_configured() -> bool:
    return bool(os.environ.get("GOOGLE_API_KEY")) or bool(
        os.environ.get("GOOGLE_CLOUD_PROJECT") and os.environ.get("GOOGLE_CLOUD_LOCATION"))


def _interval(name: str, registry: MetricEvaluatorRegistry) -> tuple[float, float]:
    for info in registry.get_registered_metrics():
        if info.metric_name == name and info.metric_value_info is not None:
            interval = info.metric_value_info.interval
            # ADK types the interval Optional; a registered metric without one fails here, as
            # it always has (every metric the studio scores by gives one)
            return (float(interval.min_value),  # type: ignore[union-attr]
                    float(interval.max_value))  # type: ignore[union-attr]
    return 0.0, 1.0


def _score_rule(score: ScoreRule | str, where: str) -> ScoreRule:
    try:
        return ScoreRule(score)
    except ValueError as exc:
        raise ConfigError(f"score must be one of {', '.join(r.value for r in ScoreRule)}; got "
                          f"{score!r}", where=f"{where}.score", value=score) from exc


def _missing_reference(name: str, sample: Sample) -> str | None:
    if name in NEEDS_EXPECTED_RESPONSE and not (sample.expected or "").strip():
        return "the example has no expected response to compare with"
    if name in NEEDS_EXPECTED_TRAJECTORY and not isinstance(
            sample.example.get(EXPECTED_TRAJECTORY_KEY), list):
        return ("the example has no expected_trajectory (an eval set's expected tool uses) to "
                "compare the tool calls with")
    return None


# --------------------------------------------------------------------------- invocations


def trial_invocations(sample: Sample) -> tuple[Invocation, Invocation]:
    """The (actual, expected) ADK ``Invocation``s of one trial (see the module docstring)."""
    from google.adk.evaluation.eval_case import IntermediateData, Invocation

    user = _text_content("user", sample.input_text)
    actual = Invocation(user_content=user, final_response=_text_content("model", sample.output),
                        intermediate_data=_actual_events(sample.trace, sample.output))
    trajectory = sample.example.get(EXPECTED_TRAJECTORY_KEY)
    expected = Invocation(
        user_content=user,
        final_response=_text_content("model", sample.expected) if sample.expected else None,
        intermediate_data=IntermediateData(tool_uses=_function_calls(trajectory))
        if isinstance(trajectory, list) else None)
    return actual, expected


def _text_content(role: str, text: str) -> Content:
    from google.genai import types

    return types.Content(role=role, parts=[types.Part.from_text(text=text)])


def _function_calls(calls: list[JsonValue]) -> list[FunctionCall]:
    from google.genai import types

    return [types.FunctionCall(name=str(call.get("name") or ""), args=_args(call.get("args")))
            for call in calls if isinstance(call, Mapping)]


def _args(args: object) -> dict[str, object]:
    return dict(args) if isinstance(args, Mapping) else {}


def _actual_events(trace: Mapping[str, Any], output: str) -> InvocationEvents:
    """The trial's tool calls, tool results and texts but the final reply, as ADK's
    ``InvocationEvents`` (what ``EvaluationGenerator`` makes of a run's events)."""
    from google.adk.evaluation.eval_case import InvocationEvent, InvocationEvents

    events = [e for e in trace.get("events") or [] if isinstance(e, Mapping)]
    last_text = max((i for i, e in enumerate(events)
                     if e.get("type") == "text" and e.get("text") == output), default=None)
    kept = [InvocationEvent(author=str(e.get("author") or "agent"), content=content)
            for i, e in enumerate(events)
            if i != last_text and (content := _event_content(e)) is not None]
    return InvocationEvents(invocation_events=kept)


def _event_content(event: Mapping[str, Any]) -> Content | None:
    from google.genai import types

    kind = event.get("type")
    if kind == "tool_call":
        part = types.Part(function_call=types.FunctionCall(
            id=event.get("id"), name=str(event.get("name") or ""), args=_args(event.get("args"))))
        return types.Content(role="model", parts=[part])
    if kind == "tool_result":
        result = event.get("result")
        response = dict(result) if isinstance(result, Mapping) else {"result": result}
        part = types.Part(function_response=types.FunctionResponse(
            id=event.get("id"), name=str(event.get("name") or ""), response=response))
        return types.Content(role="user", parts=[part])
    if kind == "text" and event.get("text"):
        return _text_content("model", str(event["text"]))
    return None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class MetricResult:
    """One metric's verdict on one trial, as ADK's evaluator gave it, and the metric's value
    interval (to scale its score to [0, 1])."""

    verdict: MetricVerdict
    interval: tuple[float, float]

    @classmethod
    def not_evaluated(cls, metric: _Metric, why: str) -> MetricResult:
        return cls(MetricVerdict(name=metric.name, threshold=metric.eval_metric.threshold,
                                 status=EvalStatus.NOT_EVALUATED, details=why), metric.interval)

    @classmethod
    def from_adk(cls, metric: _Metric, result: EvaluationResult, actual: Invocation,
                 expected: Invocation) -> MetricResult:
        per = result.per_invocation_results[0] if result.per_invocation_results else None
        rubrics = [to_jsonable(r.model_dump(exclude_none=True))
                   for r in (per.rubric_scores if per and per.rubric_scores else
                             result.overall_rubric_scores or [])]
        status = EvalStatus(result.overall_eval_status.name)
        details = (_details(metric, actual, expected, tuple(rubrics))
                   if status is not EvalStatus.NOT_EVALUATED
                   else "ADK's evaluator gave no score (a judge reply without a verdict it "
                   "could read, or nothing to compare)")
        return cls(MetricVerdict(name=metric.name, score=result.overall_score,
                                 threshold=metric.eval_metric.threshold, status=status,
                                 details=details, rubric_scores=rubrics), metric.interval)

    @property
    def name(self) -> str:
        return self.verdict.name

    @property
    def status(self) -> EvalStatus:
        return self.verdict.status

    @property
    def evaluated(self) -> bool:
        return self.status in (EvalStatus.PASSED, EvalStatus.FAILED)

    def scaled(self, value: float | None) -> float | None:
        """``value`` on the metric's scale, scaled to [0, 1] by its interval."""
        if value is None:
            return None
        low, high = self.interval
        return min(1.0, max(0.0, (value - low) / (high - low))) if high > low else None

    @property
    def normalized(self) -> float | None:
        """The score scaled to [0, 1] by the metric's interval."""
        return self.scaled(self.verdict.score)

    @property
    def share(self) -> float:
        """Toward passing (:attr:`ScoreRule.GRADED`): 1.0 once passed, else the scaled score as
        a share of the scaled threshold, kept below 1."""
        if self.status is EvalStatus.PASSED:
            return 1.0
        score, bar = self.normalized, self.scaled(self.verdict.threshold)
        if score is None or not bar:
            return 0.0
        return min(score / bar, 0.999)

    def line(self) -> str:
        v = self.verdict
        shown = "not evaluated" if v.score is None else f"{v.score:.2f}"
        bar = f" (threshold {v.threshold:g})" if v.threshold is not None else ""
        line = f"[{v.name}] {shown}{bar} {v.status.value}"
        return line + (f": {v.details}" if v.details else "")


def _details(metric: _Metric, actual: Invocation, expected: Invocation,
             rubrics: tuple[JsonDict, ...]) -> str:
    from google.adk.evaluation.eval_case import get_all_tool_calls

    if rubrics:
        return "; ".join(f"{r.get('rubric_id')}: {_verdict(r.get('score'))}"
                         + (f" ({r['rationale']})" if r.get("rationale") else "")
                         for r in rubrics)
    if metric.name in NEEDS_EXPECTED_TRAJECTORY:
        return (f"expected tool calls {_calls(get_all_tool_calls(expected.intermediate_data))}, "
                f"got {_calls(get_all_tool_calls(actual.intermediate_data))}")
    if metric.name in NEEDS_EXPECTED_RESPONSE:
        return f"compared with the expected response {_clipped(_text(expected.final_response))}"
    return ""


def _verdict(score: JsonValue) -> str:
    words: dict[object, str] = {1.0: "yes", 0.0: "no"}
    return words.get(score, "no verdict" if score is None else str(score))


def _calls(calls: list[FunctionCall]) -> str:
    return json.dumps([{"name": c.name, "args": c.args or {}} for c in calls],
                      ensure_ascii=False, default=str)[:400]


def _text(content: Content | None) -> str:
    return "".join(p.text or "" for p in (content.parts or [])) if content is not None else ""


def _clipped(text: str, limit: int = 200) -> str:
    return json.dumps(text if len(text) <= limit else text[:limit] + "...", ensure_ascii=False)


def combined_feedback(results: list[MetricResult], rule: ScoreRule) -> Feedback:
    """The trial's feedback: ADK's verdict (each metric against its threshold, the case by
    ``adk eval``'s rule), one line per metric and the verdict's, and the score by ``rule``;
    every metric not evaluated is "could not evaluate"."""
    verdict = Verdict.of([r.verdict for r in results], rule)
    text = "\n".join([r.line() for r in results] + [f"Case {verdict.text()}"])
    dimensions = {r.name: n for r in results if (n := r.normalized) is not None}
    evaluated = [r for r in results if r.evaluated]
    if not evaluated:
        why = "no ADK metric could evaluate: " + "; ".join(
            f"{r.name}: {r.verdict.details or 'not evaluated'}" for r in results)
        unscored = Feedback.unscored(why, text=text)
        return unscored.model_copy(update={"verdict": verdict})
    return Feedback(score=rule_score(evaluated, rule), text=text, dimensions=dimensions,
                    verdict=verdict)


def rule_score(evaluated: list[MetricResult], rule: ScoreRule) -> float:
    """The critic's score from the metrics that evaluated, by ``rule`` (:class:`ScoreRule`)."""
    if rule is ScoreRule.PASS:
        return 0.0 if any(r.status is EvalStatus.FAILED for r in evaluated) else 1.0
    if rule is ScoreRule.GRADED:
        return sum(r.share for r in evaluated) / len(evaluated)
    scored = [n for r in evaluated if (n := r.normalized) is not None]
    return sum(scored) / len(scored) if scored else 0.0


def adk_metrics_critic_spec(criteria_file: str | Path, *, judge_model: str | None = None,
                            score: ScoreRule | str = ScoreRule.PASS,
                            name: str = "adk_metrics") -> CriticSpec:
    """The stored critic of a run scored by ADK's criteria file (``studio run DIR --evalset X
    --criteria test_config.json``): the file's criteria themselves, so a worker rebuilds the
    critic without the file; checked now as the run will build it (no ``custom_metrics``).

    Raises:
        ConfigError: the file or a metric is refused (see :class:`AdkMetricsCritic`).
    """
    data = load_eval_config_file(criteria_file, where=str(criteria_file))
    AdkMetricsCritic(data, judge_model=judge_model, score=score, allow_custom_metrics=False,
                     where=str(criteria_file))
    evaluator: dict[str, Any] = {"adk_metrics": data, "score": ScoreRule(score).value}
    if judge_model:
        evaluator["judge_model"] = judge_model
    return CriticSpec(type="evaluator", name=name, evaluator=evaluator)


def adk_metrics_critic(criteria_file: str | Path, *, judge_model: str | None = None,
                       score: ScoreRule | str = ScoreRule.PASS) -> AdkMetricsCritic:
    """The critic for ``studio run DIR --evalset X --criteria test_config.json``: ADK's eval
    criteria file read as ``adk eval --config_file_path`` reads it (custom metrics included:
    the file is the command line user's own)."""
    return AdkMetricsCritic(criteria_file, judge_model=judge_model, score=score,
                            where=str(criteria_file))
