"""Agreement between people who labelled the same trials: Krippendorff's alpha (any number of
people, missing labels allowed) and, for two people, Cohen's kappa of their pass/fail verdicts.

Pure functions over *units* (one trial each): the values the people gave it. A unit with fewer
than two values pairs with nothing and is left out, as Krippendorff defines it. Alpha is
``1 - D_o / D_e`` (observed over expected disagreement) with the interval metric
``(a - b)**2`` for scores (for 0/1 labels it equals the nominal metric), computed from sums
and sums of squares (linear in the number of labels, never over all pairs). Undefined
statistics (no pairable unit, no variation at all) are None, never 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, Field

from studio.critics.agreement import ConfusionMatrix, cohen_kappa

LEVELS = ("interval", "nominal")


def krippendorff_alpha(units: Iterable[Sequence[float]], level: str = "interval"
                       ) -> float | None:
    """Krippendorff's alpha of ``units`` (each the values the people gave one item).

    Raises:
        ValueError: ``level`` is not interval or nominal."""
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is not one of {', '.join(LEVELS)}")
    pairable = [list(values) for values in units if len(values) >= 2]
    n = sum(len(values) for values in pairable)
    if n < 2:
        return None
    disagree = _interval_pairs if level == "interval" else _nominal_pairs
    observed = sum(disagree(values) / (len(values) - 1) for values in pairable) / n
    expected = disagree([v for values in pairable for v in values]) / (n * (n - 1))
    if expected <= 0:
        return None
    return 1.0 - observed / expected


def _interval_pairs(values: Sequence[float]) -> float:
    """Sum of ``(a - b)**2`` over the ordered pairs of distinct positions."""
    total, squares = sum(values), sum(v * v for v in values)
    return max(0.0, 2 * len(values) * squares - 2 * total * total)


def _nominal_pairs(values: Sequence[float]) -> float:
    """Number of ordered pairs of distinct positions holding different values."""
    counts = Counter(values)
    return float(len(values) ** 2 - sum(c * c for c in counts.values()))


def two_people_kappa(pairs: Iterable[tuple[float, float]], threshold: float) -> float | None:
    """Cohen's kappa of two people's pass/fail verdicts (``score >= threshold``) on the trials
    both labelled; None when undefined."""
    matrix = ConfusionMatrix()
    for a, b in pairs:
        cell = {(True, True): "tp", (True, False): "fp", (False, True): "fn",
                (False, False): "tn"}[(a >= threshold, b >= threshold)]
        setattr(matrix, cell, getattr(matrix, cell) + 1)
    return cohen_kappa(matrix)


class DimensionAgreement(BaseModel):
    alpha: float | None
    units: int
    """Trials at least two people scored on this dimension."""


class PeopleAgreement(BaseModel):
    """How far the people who labelled the same trials agree with each other."""

    reviewers: list[str] = Field(default_factory=list)
    labels: int = 0
    """Labels with a score."""
    units: int = 0
    """Trials with scores from at least two people (what alpha is computed on)."""
    alpha: float | None = None
    """Krippendorff's alpha (interval metric) of the people's scores."""
    kappa: float | None = None
    """Cohen's kappa of the two people's pass/fail verdicts (None unless exactly two)."""
    threshold: float = 0.5
    per_dimension: dict[str, DimensionAgreement] = Field(default_factory=dict)
    """Alpha of the people's own scores per critic dimension."""


def people_agreement(scores: Mapping[object, Mapping[str, float]],
                     dimensions: Mapping[object, Mapping[str, Mapping[str, float]]] | None = None,
                     threshold: float = 0.5) -> PeopleAgreement:
    """Agreement of ``scores`` (unit -> person -> score) and ``dimensions`` (unit -> person ->
    dimension -> score)."""
    reviewers = sorted({person for labels in scores.values() for person in labels})
    kappa = None
    if len(reviewers) == 2:
        a, b = reviewers
        kappa = two_people_kappa([(labels[a], labels[b]) for labels in scores.values()
                                  if a in labels and b in labels], threshold)
    return PeopleAgreement(
        reviewers=reviewers, labels=sum(len(labels) for labels in scores.values()),
        units=sum(1 for labels in scores.values() if len(labels) >= 2),
        alpha=krippendorff_alpha(list(labels.values()) for labels in scores.values()),
        kappa=kappa, threshold=threshold, per_dimension=_per_dimension(dimensions or {}))


def _per_dimension(dimensions: Mapping[object, Mapping[str, Mapping[str, float]]]
                   ) -> dict[str, DimensionAgreement]:
    units: dict[str, list[list[float]]] = {}
    for people in dimensions.values():
        per_name: dict[str, list[float]] = {}
        for scored in people.values():
            for name, value in scored.items():
                per_name.setdefault(name, []).append(value)
        for name, values in per_name.items():
            units.setdefault(name, []).append(values)
    return {name: DimensionAgreement(alpha=krippendorff_alpha(found),
                                     units=sum(1 for v in found if len(v) >= 2))
            for name, found in sorted(units.items())}
