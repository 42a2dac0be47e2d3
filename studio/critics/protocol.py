"""The critic seam: anything that scores one agent output.

The engine only knows :class:`Critic`. An ADK critic agent
(:class:`studio.critics.agent.CriticScorer`), a programmatic evaluator or an LLM judge
(:mod:`studio.evaluators`), or a weighted combination of them all satisfy it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Sample:
    """One agent output to be judged, with everything a critic may look at."""

    input_text: str
    output: str
    expected: str | None = None
    example: dict[str, Any] = field(default_factory=dict)
    """The dataset row (without transformation); evaluators may read extra columns from it."""
    trace: dict[str, Any] = field(default_factory=dict)
    """The executor's trace: events, tool_calls, state_delta, usage."""
    media: tuple[Any, ...] = ()
    """The example's images and videos (:class:`studio.model.media.Media`), which a critic
    agent sees as the agent did; ``input_text`` holds their labels."""


@runtime_checkable
class Critic(Protocol):
    """Scores one sample.

    Contract:
        Returns ``(score, metadata)``. ``score`` is a float in [0, 1], or None when the critic
        could not evaluate (then ``metadata["error"]`` says why). ``metadata["feedback"]`` is the
        text shown to reflection and to people, ``dimension_scores`` and
        ``actionable_guidance`` are optional; :func:`studio.critics.feedback.parse_feedback`
        reads all of it into a :class:`studio.model.feedback.Feedback` (other keys such as
        ``verdicts``, ``path``, ``claims`` land in its ``extra``). May raise
        :class:`studio.model.errors.CriticOutputParseError` (and subclasses) for a reply that
        cannot be parsed; the engine records that as a trial with score None, never 0.
    """

    name: str

    async def assess(self, sample: Sample) -> tuple[float | None, dict[str, Any]]: ...
