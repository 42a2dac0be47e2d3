"""Parent selection policies. Each takes the score matrix and an injected, seeded RNG."""

from __future__ import annotations

import random

from studio.engine.policies.pareto import ScoreMatrix, best_candidate, pareto_front
from studio.model.config import Selection
from studio.model.errors import RunStateError


def select_pareto(matrix: ScoreMatrix, rng: random.Random, *, order: list[int]) -> int:
    """Sample among the Pareto front, weighted by the number of examples each candidate wins.

    Drawn as GEPA draws (``rng.choice`` over each candidate repeated by its weight, in the
    front's order), so one seed picks the same parents here and there.
    """
    front = pareto_front(matrix, order)
    if not front:
        return _best(matrix, order)
    return rng.choice([c for c, weight in front.items() for _ in range(weight)])


def select_greedy(matrix: ScoreMatrix, rng: random.Random, *, order: list[int]) -> int:
    """The current best candidate."""
    return _best(matrix, order)


def select_epsilon_greedy(matrix: ScoreMatrix, rng: random.Random, *, order: list[int],
                          epsilon: float = 0.1) -> int:
    """The best candidate, or with probability ``epsilon`` a uniformly random one."""
    if rng.random() < epsilon:
        return rng.choice(order)
    return _best(matrix, order)


def _best(matrix: ScoreMatrix, order: list[int]) -> int:
    """:func:`best_candidate`, which is None only when there is no candidate at all."""
    best = best_candidate(matrix, order)
    if best is None:
        raise RunStateError("no candidate to select a parent from: the run has no pooled "
                            "candidate (score the seed on the validation set first)")
    return best


def select_parent(policy: Selection | str, matrix: ScoreMatrix, rng: random.Random, *,
                  order: list[int], epsilon: float = 0.1) -> int:
    """Dispatch on ``policy``.

    Raises:
        ValueError: unknown policy (the message lists the allowed ones).
    """
    if not order:
        raise ValueError("no candidate in the pool to select a parent from")
    try:
        policy = Selection(policy)
    except ValueError:
        allowed = ", ".join(s.value for s in Selection)
        raise ValueError(f"candidate_selection {policy!r} is not one of: {allowed}") from None
    if policy is Selection.PARETO:
        return select_pareto(matrix, rng, order=order)
    if policy is Selection.GREEDY:
        return select_greedy(matrix, rng, order=order)
    return select_epsilon_greedy(matrix, rng, order=order, epsilon=epsilon)
