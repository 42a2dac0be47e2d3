"""Trial records for reflection (seed 002): ``{feedback, trajectory}``.

A trial is what the reflection agent reads about one agent run: the critic's feedback (score,
text, guidance, dimensions) and the trajectory (input, output, trace).
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["TrialBuilder", "normalize_feedback"]


def normalize_feedback(score: float | None, raw_feedback: str | dict[str, Any] | None) -> dict:
    """Simple (string) or advanced (dict) feedback in one format.

    ``feedback_text`` (or legacy ``feedback``) becomes ``feedback_text`` as a string;
    ``dimension_scores`` becomes ``dimensions`` (dropped when empty); ``actionable_guidance``
    becomes ``guidance``; other fields pass through. ``score`` always wins over a ``score`` key.
    """
    if raw_feedback is None or isinstance(raw_feedback, str):
        return {"score": score, "feedback_text": raw_feedback or ""}
    feedback = dict(raw_feedback)
    text = feedback.pop("feedback_text", None)
    legacy = feedback.pop("feedback", None)
    if text is None:
        text = legacy
    text = "" if text is None else str(text)
    normalized: dict[str, Any] = {"score": score, "feedback_text": text}
    dimensions = feedback.pop("dimension_scores", None)
    if dimensions:
        normalized["dimensions"] = dimensions
    guidance = feedback.pop("actionable_guidance", None)
    if guidance is not None:
        normalized["guidance"] = guidance
    feedback.pop("score", None)
    normalized.update(feedback)
    return normalized


class TrialBuilder:
    """Builds trial records in the GEPA format from scorer results."""

    def __init__(self) -> None:
        self._logger = logger

    def build_feedback(
        self,
        score: float | None,
        metadata: dict[str, Any] | None = None,
        *,
        error: str | None = None,
        log_passthrough: bool = False,
    ) -> dict[str, Any]:
        """The feedback dict: ``score`` always; ``feedback_text``, ``feedback_guidance``,
        ``feedback_dimensions`` and ``error`` only when non-empty, to keep prompts clean."""
        feedback: dict[str, Any] = {"score": score}
        metadata = metadata or {}
        text = metadata.get("feedback")
        if isinstance(text, str) and text.strip():
            feedback["feedback_text"] = text
        guidance = metadata.get("actionable_guidance")
        if isinstance(guidance, str) and guidance.strip():
            feedback["feedback_guidance"] = guidance
        dimensions = metadata.get("dimension_scores")
        if isinstance(dimensions, dict) and dimensions:
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
        metadata: dict[str, Any] | None = None,
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
