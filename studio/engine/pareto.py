"""Scores per candidate and example, the per-example Pareto front, and the best candidate.

Pure functions over ``{candidate_id: {example_id: score | None}}``. ``None`` ("could not
evaluate") never counts as 0: it is left out of means and never wins an example.
"""

from __future__ import annotations

from collections.abc import Mapping

ScoreMatrix = Mapping[int, Mapping[int, float | None]]


def mean_score(scores: Mapping[int, float | None]) -> float | None:
    """Mean of the scores that exist; None when nothing could be evaluated."""
    values = [s for s in scores.values() if s is not None]
    return sum(values) / len(values) if values else None


def winners_per_example(matrix: ScoreMatrix) -> dict[int, set[int]]:
    """For each example, the candidates with the highest score on it (ties all win)."""
    examples = {example for row in matrix.values() for example in row}
    winners: dict[int, set[int]] = {}
    for example in examples:
        scored = {c: row[example] for c, row in matrix.items() if row.get(example) is not None}
        if scored:
            best = max(scored.values())
            winners[example] = {c for c, s in scored.items() if s == best}
    return winners


def pareto_front(matrix: ScoreMatrix) -> dict[int, int]:
    """Non-dominated candidates that are best on at least one example, with the number of
    examples each wins (the weight GEPA samples parents by)."""
    wins: dict[int, set[int]] = {}
    for example, candidates in winners_per_example(matrix).items():
        for candidate in candidates:
            wins.setdefault(candidate, set()).add(example)
    front = {
        c: examples for c, examples in wins.items()
        if not any(other != c and examples < other_examples
                   for other, other_examples in wins.items())
    }
    return {c: len(examples) for c, examples in front.items()}


def coverage(scores: Mapping[int, float | None]) -> int:
    """How many examples a candidate was scored on ("could not evaluate" is not scored)."""
    return sum(1 for s in scores.values() if s is not None)


def best_candidate(matrix: ScoreMatrix, order: list[int] | None = None) -> int | None:
    """Highest mean among the candidates scored on the most validation examples; ties go to the
    earlier candidate (``order``, else lowest id).

    Coverage comes first so that a mean over fewer examples never beats a mean over more: a
    child scored 0.9 on 1 of 3 examples does not beat a parent scored 0.6 on all three.
    """
    ranked = order if order is not None else sorted(matrix)
    best, best_key = None, None
    for candidate in ranked:
        row = matrix.get(candidate, {})
        mean = mean_score(row)
        key = (coverage(row), mean)
        if mean is not None and (best_key is None or key > best_key):
            best, best_key = candidate, key
    if best is None and ranked:
        return ranked[0]
    return best
