"""The critic seam: anything that scores one agent output.

The engine only knows :class:`Critic`. An ADK critic agent
(:class:`studio.critics.agent.CriticScorer`), a programmatic evaluator or an LLM judge
(:mod:`studio.evaluators`), or a weighted combination of them all satisfy it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from studio.model.feedback import Feedback
from studio.model.media import Media


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
    media: tuple[Media, ...] = ()
    """The example's images and videos (:class:`studio.model.media.Media`), which a critic
    agent sees as the agent did; ``input_text`` holds their labels."""


@runtime_checkable
class Critic(Protocol):
    """Scores one sample.

    Contract:
        Returns a :class:`~studio.model.feedback.Feedback`: ``score`` in [0, 1], ``text`` shown
        to reflection and to people, optional ``guidance`` and ``dimensions``, any other details
        (verdicts, rubric path, claims) in ``extra``. A critic that could not evaluate one
        sample (a failed or timed-out model, no reference) returns
        :meth:`Feedback.unscored(why) <studio.model.feedback.Feedback.unscored>`: score None,
        never 0. It may raise a :class:`studio.model.errors.StudioError` (e.g.
        :class:`~studio.model.errors.CriticOutputParseError`) for a reply it cannot read;
        :func:`studio.critics.feedback.judge_sample` records that, a score outside [0, 1] and
        any other exception as "could not evaluate" too, so one sample never ends a run.
    """

    name: str

    async def assess(self, sample: Sample) -> Feedback: ...
