"""Scores per candidate and example, the per-example Pareto front, and the best candidate.

Pure functions over ``{candidate_id: {example_id: score | None}}``. ``None`` ("could not
evaluate") never counts as 0: it is left out of means and never wins an example.
"""

from __future__ import annotations

import math
from collections import Counter
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
        scored = {c: s for c, row in matrix.items() if (s := row.get(example)) is not None}
        if scored:
            best = max(scored.values())
            winners[example] = {c for c, s in scored.items() if s == best}
    return winners


def pareto_front(matrix: ScoreMatrix, order: list[int] | None = None) -> dict[int, int]:
    """The candidates GEPA samples parents from, each with its weight: the number of examples
    it is best on.

    GEPA's ``remove_dominated_programs``: among the candidates best on some example, the one
    with the lowest mean is dropped if every example it wins is also won by another candidate
    still in the front; repeat until none can be dropped. Of two identical rows one stays (the
    later one, as in GEPA), and of three candidates tied pairwise, two stay.

    ``None`` ("could not evaluate") is GEPA's example left out of a program's sparse validation
    scores: it is not in the mean and never wins the example. Ties go as GEPA's do: candidates
    in ``order`` (the pool's, else by id; GEPA's program indices), examples in the order they
    were first scored (GEPA's front lists them so); the result lists candidates in the order
    they first win an example, the order of GEPA's sampling list. (Past 8 candidates GEPA's own
    tie order follows Python's set layout of its indices, which is not always index order.)
    """
    ranked = order if order is not None else sorted(matrix)
    winners = winners_per_example(matrix)
    examples = dict.fromkeys(e for c in ranked for e, s in matrix[c].items() if s is not None)
    fronts = [[c for c in ranked if c in winners[example]] for example in examples]
    appearance = list(dict.fromkeys(c for front in fronts for c in front))
    kept = set(_drop_dominated(appearance, fronts, matrix))
    wins = Counter(c for front in fronts for c in front)
    return {c: wins[c] for c in appearance if c in kept}


def _lowest_if_none(mean: float | None) -> float:
    """A mean to sort by: a candidate on the front won an example, so it has one; without one
    it would sort first."""
    return -math.inf if mean is None else mean


def _drop_dominated(candidates: list[int], fronts: list[list[int]],
                    matrix: ScoreMatrix) -> list[int]:
    """``candidates`` without those whose every winning example another kept candidate also
    wins, dropped lowest mean first (ties: earliest first), one at a time.

    One pass in that order, counting the kept candidates of each example's front: a candidate
    whose every front keeps another is dropped, and its fronts count one fewer. (Dropping only
    lowers the counts, so a candidate kept once stays kept: the pass drops what GEPA's loop of
    passes, restarting after each drop, does, in O(fronts) per candidate instead of a set of
    the others per candidate per pass.)"""
    # sorted() is stable: ties keep their order
    by_mean = sorted(candidates, key=lambda c: _lowest_if_none(mean_score(matrix[c])))
    kept_in = [len(front) for front in fronts]
    fronts_of: dict[int, list[int]] = {c: [] for c in by_mean}
    for number, front in enumerate(fronts):
        for candidate in front:
            if candidate in fronts_of:
                fronts_of[candidate].append(number)
    kept = []
    for candidate in by_mean:
        if all(kept_in[number] >= 2 for number in fronts_of[candidate]):
            for number in fronts_of[candidate]:
                kept_in[number] -= 1
        else:
            kept.append(candidate)
    return kept


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
