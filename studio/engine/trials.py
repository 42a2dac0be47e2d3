"""Trial records for reflection: ``{feedback, trajectory}``, in the format gepa-adk documents.

A trial is what the reflection agent reads about one agent run: the critic's feedback (score,
text, guidance, dimensions) and the trajectory (input, output, trace). The feedback is read by
:func:`studio.critics.feedback.parse_feedback` (the one critic-reply parser) and
:class:`studio.model.feedback.Feedback`; this module only lays it out.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from studio.critics.feedback import parse_feedback
from studio.model.feedback import Feedback

logger = logging.getLogger(__name__)

__all__ = ["TrialBuilder", "normalize_feedback"]


def normalize_feedback(score: float | None, raw_feedback: str | dict[str, Any] | None) -> dict:
    """Simple (string) or advanced (dict) feedback in one format.

    The text (``feedback_text``, or legacy ``feedback``) becomes ``feedback_text`` as a string;
    dimension scores become ``dimensions`` (dropped when empty); actionable guidance becomes
    ``guidance``; other fields pass through. ``score`` always wins over a ``score`` key. A badly
    shaped field raises :class:`studio.model.errors.FeedbackShapeError` naming it.
    """
    feedback = parse_feedback(score, raw_feedback)
    normalized: dict[str, Any] = {"score": score, "feedback_text": feedback.text}
    if feedback.dimensions:
        normalized["dimensions"] = feedback.dimensions
    if feedback.guidance:
        normalized["guidance"] = feedback.guidance
    normalized.update(feedback.extra)
    return normalized


class TrialBuilder:
    """Builds trial records in the GEPA format from scorer results."""

    def __init__(self) -> None:
        self._logger = logger

    def build_feedback(
        self,
        score: float | None,
        metadata: Feedback | dict[str, Any] | None = None,
        *,
        error: str | None = None,
        log_passthrough: bool = False,
    ) -> dict[str, Any]:
        """The feedback dict: ``score`` always; ``feedback_text``, ``feedback_guidance``,
        ``feedback_dimensions`` and ``error`` only when non-empty, to keep prompts clean.
        ``metadata`` is a :class:`Feedback` or a critic's metadata in any spelling; a badly
        shaped field is left out rather than shown to reflection."""
        record = metadata if isinstance(metadata, Feedback) else Feedback.model_validate(
            dict(metadata or {}))
        feedback: dict[str, Any] = {"score": score}
        if record.text.strip():
            feedback["feedback_text"] = record.text
        if record.guidance.strip():
            feedback["feedback_guidance"] = record.guidance
        dimensions = {k: v for k, v in record.dimensions.items() if not math.isnan(v)}
        if dimensions:
            feedback["feedback_dimensions"] = dimensions
        if error:
            feedback["error"] = error
        if log_passthrough:
            self._logger.debug("feedback fields passed through: %s", sorted(feedback))
        return feedback

    def build_trial(
        self,
        input_text: str | None,
        output: str,
        score: float | None,
        metadata: Feedback | dict[str, Any] | None = None,
        *,
        error: str | None = None,
        trace: dict[str, Any] | None = None,
        extra_trajectory: dict[str, Any] | None = None,
        log_passthrough: bool = False,
    ) -> dict[str, Any]:
        """A full trial: ``{"feedback": ..., "trajectory": {input?, output, trace?, ...}}``.
        The input is left out when None (pipelines where it is implicit)."""
        trajectory: dict[str, Any] = {}
        if input_text is not None:
            trajectory["input"] = input_text
        trajectory["output"] = output
        if trace:
            trajectory["trace"] = trace
        if extra_trajectory:
            trajectory.update(extra_trajectory)
        feedback = self.build_feedback(score, metadata, error=error,
                                       log_passthrough=log_passthrough)
        return {"feedback": feedback, "trajectory": trajectory}
