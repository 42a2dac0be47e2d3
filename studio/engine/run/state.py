"""What the loop carries from one step to the next: the checkpointed state and an iteration's
plan (both plain dataclasses, so a checkpoint is their fields as stored)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoopState:
    """What a checkpoint holds between commits: enough to continue exactly where we were."""

    iteration: int = 0
    """Last completed iteration (0 = baseline done)."""
    rng: list[Any] = field(default_factory=list)
    sampler: dict[str, Any] = field(default_factory=dict)
    best_score: float | None = None
    stale_iterations: int = 0
    idle_iterations: int = 0
    """Reflection iterations in a row that made no new candidate
    (:mod:`studio.engine.policies.ideas`)."""
    active_seconds: float = 0.0
    held_seconds: float = 0.0
    """Of ``active_seconds``, the time paused or waiting at a gate (not toward the timeout)."""
    plan: dict[str, Any] | None = None
    """The in-progress iteration: parent, minibatch and component (drawn once, then replayed)."""
    round: list[dict[str, Any]] | None = None
    """Parallel proposals: the plans drawn and not yet settled in order, by iteration (drawn
    once, then replayed; :mod:`studio.engine.loop.window`)."""
    phase_seconds: dict[str, list[float]] = field(default_factory=dict)
    """Per phase (:class:`studio.engine.run.events.Phase`), the seconds per item its latest runs
    took on this machine: what the next one's estimate learns from."""

    def settled(self, iteration: int, best: float | None) -> None:
        """``iteration`` is done and the pool's best is now ``best``: an iteration that does
        not raise it counts toward ``patience``."""
        previous = self.best_score
        improved = best is not None and (previous is None or best > previous + 1e-12)
        self.stale_iterations = 0 if improved else self.stale_iterations + 1
        self.best_score = best if best is not None else previous
        self.iteration = iteration


@dataclass
class Plan:
    iteration: int
    parent_id: int
    minibatch: list[int]
    """A merge's validation subsample."""
    component: str
    """Empty for a merge."""
    merge: dict[str, Any] | None = None
    """A merge iteration's :class:`MergeDetail` (drawn once, like the rest of the plan)."""
