"""A run's best candidate, scored on the validation set, as ADK eval set results
(``studio export RUN --format adk-evalset-result``).

``adk eval`` writes an ``EvalSetResult`` (``google.adk.evaluation.eval_result``) per eval set
to ``<agent folder>/.adk/eval_history/<id>.evalset_result.json``, which ``adk web`` lists and
compares. The studio writes the same model, built and serialised by ADK's own classes, for the
best candidate's validation trials:

- one ``EvalSetResult`` per eval set the examples came from (their ``eval_set_id`` column, kept
  by :mod:`studio.runtime.adk_evalsets`; examples from elsewhere are the run's own set), one
  ``EvalCaseResult`` per example, under its ``eval_id`` (else ``<split>_<index>``);
- a trial judged by ADK's criteria (a run of an agent folder, a critic of ``type:
  adk_metrics``) carries ADK's verdict, written as ADK wrote it: each metric's score, threshold,
  criterion and status as ADK's evaluator gave them, and the case's status by ``adk eval``'s rule
  (PASSED only when every metric passed), so ``adk web`` lists the case as ``adk eval`` would;
- a trial a person corrected, or judged by another critic, has one metric, the critic's, with
  the effective score (the person's correction wins), passing at ``threshold``; a weighted
  critic's parts are each a metric too, unless a person corrected the trial; no score is
  ``NOT_EVALUATED``, never a failure;
- the actual invocation is the trial's input, final reply and tool calls; the expected one is the
  example's input, ``expected`` and ``expected_trajectory``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.engine.policies.pool import pool_scores
from studio.model.errors import ConfigError
from studio.model.jsontools import JsonDict
from studio.model.records import EXPECTED_KEY, CriticSpec, Example, Trial, TrialPhase, stored_id
from studio.model.redaction import redact
from studio.model.verdicts import MetricVerdict
from studio.projects.export import check_target, write_atomically
from studio.runtime.adk_evalsets import EVAL_ID_KEY, EVAL_SET_ID_KEY, TRAJECTORY_KEY
from studio.store.seams import AdkResultsStore

if TYPE_CHECKING:
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_metrics import EvalMetricResult
    from google.adk.evaluation.eval_result import EvalCaseResult, EvalSetResult
    from google.adk.evaluation.evaluator import EvalStatus
    from google.genai import types

RESULT_SUFFIX = ".evalset_result.json"
"""ADK's file name ending for eval set results (``LocalEvalSetResultsManager``)."""
DEFAULT_THRESHOLD = 0.5


def adk_eval_set_results(store: AdkResultsStore, run_id: str, *,
                         threshold: float = DEFAULT_THRESHOLD) -> list[EvalSetResult]:
    """ADK ``EvalSetResult`` objects for the run's best candidate's validation trials.

    Raises:
        ConfigError: the threshold is outside [0, 1], or the best candidate has no validation
            trials yet (the run has not scored its seed).
    """
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError("the pass threshold must be between 0 and 1", where="--threshold",
                          value=threshold)
    run = store.get_run(run_id)
    best = pool_scores(store, run).best_id
    trials = _latest_per_example(store.trials(run_id, candidate_id=best,
                                              phase=TrialPhase.VALSET.value)) \
        if best is not None else {}
    if not trials:
        raise ConfigError(f"run {run_id} has no scored candidate yet: export it once its seed "
                          "is scored on the validation set", where="run", value=run_id)
    examples = {stored_id(e): e for e in store.examples(run_id)}
    judged = CaseJudging(run.spec.critic.name, threshold, adk_metric_definitions(run.spec.critic))
    cases: dict[str, list[EvalCaseResult]] = {}
    for example_id, trial in sorted(trials.items(), key=lambda item: item[1].example_index):
        example = examples[example_id]
        set_id = str(example.data.get(EVAL_SET_ID_KEY) or _safe(run.name or run_id))
        cases.setdefault(set_id, []).append(case_result(trial, example, set_id, judged))
    return [_set_result(set_id, run.name or run_id, results) for set_id, results in cases.items()]


@dataclass(frozen=True)
class CaseJudging:
    """How a run's cases are written: its critic's name and the pass threshold of its own
    score, and ADK's metric definitions when it judges by ADK's criteria."""

    critic: str
    threshold: float
    definitions: dict[str, JsonDict]
    """ADK's ``EvalMetric`` of each criterion, as ``model_dump`` data (its criterion, judge
    options), by metric name: what ``LocalEvalService`` writes beside each result."""


def adk_metric_definitions(critic: CriticSpec) -> dict[str, JsonDict]:
    """ADK's ``EvalMetric`` data of each criterion of a critic judging by ADK's criteria (none
    for another critic), built by ADK's own mapping."""
    config = (critic.evaluator or {}).get("adk_metrics")
    if critic.type != "evaluator" or not isinstance(config, dict):
        return {}
    from studio.critics.adk_metrics import eval_config, eval_metrics

    return {metric.metric_name: metric.model_dump(exclude={"threshold"})
            for metric in eval_metrics(eval_config(config))}


def _latest_per_example(trials: Iterable[Trial]) -> dict[int, Trial]:
    latest: dict[int, Trial] = {}
    for trial in trials:  # oldest first: a later trial (a resumed run's) replaces an earlier
        latest[trial.example_id] = trial
    return latest


def case_result(trial: Trial, example: Example, eval_set_id: str,
                judged: CaseJudging) -> EvalCaseResult:
    """One example's ``EvalCaseResult``: its metrics, overall and for its one invocation, and
    its status (see the module docstring)."""
    from google.adk.evaluation.eval_metrics import EvalMetricResultPerInvocation
    from google.adk.evaluation.eval_result import EvalCaseResult

    metrics, status = _judgement(trial, judged)
    return EvalCaseResult(
        eval_set_id=eval_set_id,
        eval_id=str(example.data.get(EVAL_ID_KEY) or f"{example.split.value}_{example.index}"),
        final_eval_status=status,
        overall_eval_metric_results=metrics,
        eval_metric_result_per_invocation=[EvalMetricResultPerInvocation(
            actual_invocation=_invocation(trial.input_text, trial.output, _tool_calls(trial)),
            expected_invocation=_invocation(trial.input_text,
                                            _text(example.data.get(EXPECTED_KEY)),
                                            example.data.get(TRAJECTORY_KEY)),
            eval_metric_results=metrics)],
        session_id=f"studio-trial-{trial.id}", user_id="studio")


def _judgement(trial: Trial, judged: CaseJudging
               ) -> tuple[list[EvalMetricResult], EvalStatus]:
    """The case's metric results and its status: ADK's verdict as ADK gave it, else the
    effective score as the critic's metric (it decides the case), then a weighted critic's
    parts, unless a person's correction replaced the critic's score."""
    from google.adk.evaluation.evaluator import EvalStatus

    verdict = trial.feedback.verdict
    if verdict is not None and not trial.overridden:
        return ([_adk_metric(m, judged.definitions.get(m.name, {})) for m in verdict.metrics],
                EvalStatus[verdict.status.value])
    metrics = [_metric(judged.critic, trial.effective_score, judged.threshold)]
    if not trial.overridden:
        for part in trial.feedback.extra.get("components") or []:
            if isinstance(part, dict) and part.get("name"):
                metrics.append(_metric(str(part["name"]), part.get("score"), judged.threshold))
    return metrics, metrics[0].eval_status


def _adk_metric(metric: MetricVerdict, definition: JsonDict) -> EvalMetricResult:
    """One metric's result as ``LocalEvalService`` writes it: its definition, ADK's score,
    threshold and status."""
    from google.adk.evaluation.eval_metrics import EvalMetricResult
    from google.adk.evaluation.evaluator import EvalStatus

    fields = {**definition, "metric_name": metric.name}
    if metric.threshold is not None:
        fields["threshold"] = metric.threshold
    return EvalMetricResult.model_validate({**fields, "score": metric.score,
                                            "eval_status": EvalStatus[metric.status.value]})


def _metric(name: str, score: float | None, threshold: float) -> EvalMetricResult:
    from google.adk.evaluation.eval_metrics import EvalMetricResult
    from google.adk.evaluation.evaluator import EvalStatus

    status = EvalStatus.NOT_EVALUATED if score is None else \
        EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
    return EvalMetricResult(metric_name=name, threshold=threshold, score=score,
                            eval_status=status)


def _invocation(user_text: str, reply: str | None, tool_calls: list[dict[str, Any]] | None
                ) -> Invocation:
    # tool calls as the trace or the eval set stored them: any JSON, read key by key
    # (ADK's FunctionCall validates ``args``)
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.genai import types

    def content(role: str, text: str) -> types.Content:
        return types.Content(role=role, parts=[types.Part.from_text(text=redact(text))])

    calls = [types.FunctionCall(name=str(c.get("name", "")), args=dict(c.get("args") or {}))
             for c in tool_calls or [] if isinstance(c, dict)]
    return Invocation(user_content=content("user", user_text),
                      final_response=content("model", reply) if reply is not None else None,
                      intermediate_data=IntermediateData(tool_uses=calls)
                      if tool_calls is not None else None)


def _tool_calls(trial: Trial) -> list[dict[str, Any]]:
    return [e for e in (trial.trace or {}).get("events", []) if e.get("type") == "tool_call"]


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _set_result(eval_set_id: str, app_name: str, cases: list[EvalCaseResult]
                ) -> EvalSetResult:
    """ADK's ``EvalSetResult``, its id made as ``adk eval`` makes it (app, set, time)."""
    from google.adk.evaluation.eval_result import EvalSetResult

    now = time.time()
    result_id = _safe(f"{app_name}_{eval_set_id}_{now}")
    return EvalSetResult(eval_set_result_id=result_id, eval_set_result_name=result_id,
                         eval_set_id=eval_set_id, eval_case_results=cases,
                         creation_timestamp=now)


def _safe(name: str) -> str:
    """A file-name-safe id (ADK's ``_sanitize_eval_set_result_name`` replaces ``/`` too)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:200]


def write_adk_results(store: AdkResultsStore, run_id: str, out: str | Path | None = None, *,
                      threshold: float = DEFAULT_THRESHOLD) -> list[Path]:
    """Write the run's eval set results as ADK writes them (``model_dump_json``); returns the
    files. ``out`` may be a folder (``my_agent/.adk/eval_history``, where ``adk web`` lists
    them: each file named by its result id; created when missing, see
    :func:`is_folder_target`), a ``*.evalset_result.json`` file (one eval set), or a stem
    (``run_<id>`` by default) followed by each eval set's id."""
    results = adk_eval_set_results(store, run_id, threshold=threshold)
    paths = [_result_path(out, run_id, result, single=len(results) == 1) for result in results]
    for path in paths:
        check_target(path)
    for path, result in zip(paths, results, strict=True):
        write_atomically(path, [redact(result.model_dump_json(indent=2)) + "\n"])
    return paths


HISTORY_FOLDER = "eval_history"
"""The folder ``adk web`` lists results from (``<agent>/.adk/eval_history``)."""


def is_folder_target(out: str | Path) -> bool:
    """Whether ``--out`` names a folder: one that exists, a path ending in ``/``, or ADK's
    ``eval_history`` folder (created when the agent folder was never opened in ``adk web``)."""
    text = str(out)
    return Path(text).is_dir() or text.endswith(("/", os.sep)) or \
        Path(text).name == HISTORY_FOLDER


def _result_path(out: str | Path | None, run_id: str, result: EvalSetResult, *,
                 single: bool) -> Path:
    if out is not None and is_folder_target(out):
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{result.eval_set_result_id}{RESULT_SUFFIX}"
    if out is not None and str(out).endswith(RESULT_SUFFIX) and single:
        return Path(out)
    stem = str(out).removesuffix(RESULT_SUFFIX) if out is not None else f"run_{run_id}"
    return Path(f"{stem}_{_safe(result.eval_set_id)}{RESULT_SUFFIX}")
