"""Agreement between a judge and the humans who corrected it.

Pure functions over ``(judge_score, human_score)`` pairs: count, mean absolute error, Pearson
correlation, Cohen's kappa at a pass threshold (``score >= threshold`` passes) and the confusion
matrix from the judge's point of view with the human as the truth. :func:`agreement_from_store`
reads the store's overrides and reports per critic, per run and overall.

A pair with None on either side (a judge that could not evaluate, an override that only changed
the feedback) carries no score to compare: it is skipped and counted in ``skipped``. Statistics
that are undefined (Pearson of a constant series, kappa when chance agreement is total, anything
on no pairs) are None, never 0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from studio.store.seams import HasOverridePairs


class ConfusionMatrix(BaseModel):
    """Judge verdicts against human verdicts (the human is the truth)."""

    tp: int = 0
    """Judge pass, human pass."""
    fp: int = 0
    """Judge pass, human fail: the judge was too lenient."""
    fn: int = 0
    """Judge fail, human pass: the judge was too strict."""
    tn: int = 0
    """Judge fail, human fail."""


class Disagreement(BaseModel):
    """A pair where the judge and the human land on different sides of the threshold."""

    index: int
    """Position of the pair in the input."""
    judge_score: float
    human_score: float
    judge_pass: bool
    human_pass: bool
    trial_id: int | None = None
    run_id: str | None = None
    critic: str | None = None
    judge_feedback: str | None = None
    human_feedback: str | None = None


class AgreementReport(BaseModel):
    """How well one set of judge scores agrees with the humans."""

    threshold: float
    count: int
    """Pairs compared (both scores present)."""
    skipped: int = 0
    """Pairs left out because a score was None."""
    unusable: int = 0
    """Pairs whose judge reply had no usable score, counted in ``count`` as the worst error
    (set by callers that compare two judges on the same labels, never by :func:`agreement`)."""
    mae: float | None = None
    """Mean absolute error of the judge against the human."""
    pearson: float | None = None
    """None when undefined: fewer than 2 pairs or a constant series."""
    kappa: float | None = None
    """Cohen's kappa of pass/fail verdicts; None when undefined (no pairs, or chance agreement
    is total, e.g. both sides always pass)."""
    agreement_rate: float | None = None
    """Fraction of pairs with the same pass/fail verdict."""
    confusion: ConfusionMatrix = Field(default_factory=ConfusionMatrix)
    disagreements: list[Disagreement] = Field(default_factory=list)
    """Pass/fail disagreements, largest score gap first."""


class AgreementSummary(BaseModel):
    """Agreement overall, per critic and per run, from the store's overrides."""

    threshold: float
    overall: AgreementReport
    per_critic: dict[str, AgreementReport] = Field(default_factory=dict)
    per_run: dict[str, AgreementReport] = Field(default_factory=dict)


def agreement(pairs: Sequence[tuple[float | None, float | None]],
              threshold: float = 0.5) -> AgreementReport:
    """Agreement statistics of ``(judge_score, human_score)`` pairs.

    Raises:
        ValueError: ``threshold`` is not a finite number, or an item is not a pair of numbers
            (naming its position).
    """
    _check_threshold(threshold)
    return _report([_pair(item, i) for i, item in enumerate(pairs)], threshold, None)


def agreement_from_store(store: HasOverridePairs, run_id: str | None = None,
                         threshold: float = 0.5) -> AgreementSummary:
    """Agreement from the store's active overrides (``store.override_pairs(run_id)``).

    Raises:
        ValueError: ``threshold`` is not a finite number.
    """
    _check_threshold(threshold)
    records = list(store.override_pairs(run_id))
    pairs = [(r.judge_score, r.human_score) for r in records]
    return AgreementSummary(
        threshold=threshold,
        overall=_report(pairs, threshold, records),
        per_critic=_grouped(records, threshold, lambda r: r.critic),
        per_run=_grouped(records, threshold, lambda r: r.run_id),
    )


def _grouped(records: list[Any], threshold: float, key: Any) -> dict[str, AgreementReport]:
    groups: dict[str, list[Any]] = {}
    for record in records:
        groups.setdefault(str(key(record)), []).append(record)
    return {name: _report([(r.judge_score, r.human_score) for r in group], threshold, group)
            for name, group in sorted(groups.items())}


def _report(pairs: list[tuple[float | None, float | None]], threshold: float,
            records: list[Any] | None) -> AgreementReport:
    kept = [(i, j, h) for i, (j, h) in enumerate(pairs) if j is not None and h is not None]
    judge = [j for _, j, _ in kept]
    human = [h for _, _, h in kept]
    confusion = _confusion(judge, human, threshold)
    return AgreementReport(
        threshold=threshold, count=len(kept), skipped=len(pairs) - len(kept),
        mae=statistics.fmean(abs(j - h) for j, h in zip(judge, human, strict=True))
        if kept else None,
        pearson=pearson(judge, human),
        kappa=cohen_kappa(confusion),
        agreement_rate=(confusion.tp + confusion.tn) / len(kept) if kept else None,
        confusion=confusion,
        disagreements=_disagreements(kept, threshold, records),
    )


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r; None for fewer than two points or a constant series."""
    if len(xs) < 2 or min(xs) == max(xs) or min(ys) == max(ys):
        return None  # checked exactly: a rounded mean would make a constant series "vary"
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    dx = [x - mean_x for x in xs]
    dy = [y - mean_y for y in ys]
    spread = math.sqrt(sum(d * d for d in dx) * sum(d * d for d in dy))
    if spread == 0:
        return None
    r = sum(a * b for a, b in zip(dx, dy, strict=True)) / spread
    return max(-1.0, min(1.0, r))  # rounding can step just outside [-1, 1]


def cohen_kappa(confusion: ConfusionMatrix) -> float | None:
    """Cohen's kappa of a 2x2 table; None when there are no pairs or chance agreement is 1."""
    n = confusion.tp + confusion.fp + confusion.fn + confusion.tn
    if n == 0:
        return None
    observed = (confusion.tp + confusion.tn) / n
    judge_pass = (confusion.tp + confusion.fp) / n
    human_pass = (confusion.tp + confusion.fn) / n
    expected = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1 - expected)


def _confusion(judge: list[float], human: list[float], threshold: float) -> ConfusionMatrix:
    matrix = ConfusionMatrix()
    for j, h in zip(judge, human, strict=True):
        cell = {(True, True): "tp", (True, False): "fp", (False, True): "fn",
                (False, False): "tn"}[(j >= threshold, h >= threshold)]
        setattr(matrix, cell, getattr(matrix, cell) + 1)
    return matrix


def _disagreements(kept: Iterable[tuple[int, float, float]], threshold: float,
                   records: list[Any] | None) -> list[Disagreement]:
    found = []
    for index, judge, human in kept:
        if (judge >= threshold) == (human >= threshold):
            continue
        context = _context(records[index]) if records is not None else {}
        found.append(Disagreement(index=index, judge_score=judge, human_score=human,
                                  judge_pass=judge >= threshold, human_pass=human >= threshold,
                                  **context))
    return sorted(found, key=lambda d: abs(d.judge_score - d.human_score), reverse=True)


def _context(record: Any) -> dict[str, Any]:
    return {"trial_id": record.trial_id, "run_id": record.run_id, "critic": record.critic,
            "judge_feedback": record.judge_feedback, "human_feedback": record.human_feedback}


def _pair(item: object, index: int) -> tuple[float | None, float | None]:
    if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 2:
        raise ValueError(f"pair {index} must be (judge_score, human_score); got {item!r}")
    return _score(item[0], index), _score(item[1], index)


def _score(value: object, index: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"pair {index} holds {value!r}; scores must be finite numbers or None")
    return float(value)


def _check_threshold(threshold: object) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not (
            math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number; got {threshold!r}")
