"""Trial records for reflection: ``{feedback, trajectory}``, in gepa-adk's trial format.

A trial is what the reflection agent reads about one agent run: the critic's feedback (score,
text, guidance, dimensions) and the trajectory (input, output, trace). The feedback is a
:class:`studio.model.feedback.Feedback`, laid out by :meth:`Feedback.trial_fields` (the one
writer of the trial format's keys); this module only lays out the trial.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TypedDict

from studio.critics.feedback import parse_feedback
from studio.model.feedback import NORMALIZED_KEYS, Feedback

logger = logging.getLogger(__name__)

__all__ = ["TrialBuilder", "TrialRecord", "normalize_feedback"]


class TrialRecord(TypedDict):
    """One trial as reflection reads it (gepa-adk's trial format)."""

    feedback: dict[str, object]
    """``score`` always; ``feedback_text``, ``feedback_guidance``... when not empty."""
    trajectory: dict[str, object]
    """``input`` (when known), ``output``, ``trace`` (when any), and what callers add."""


def normalize_feedback(score: float | None, raw_feedback: str | Mapping[str, object] | None
                       ) -> dict[str, object]:
    """gepa-adk's ``trial_builder.normalize_feedback`` (seed 002), as its users call it: simple
    (string) or advanced (dict) feedback as ``{score, feedback_text, dimensions?, guidance?,
    custom fields}``. ``score`` always wins over a ``score`` key; a badly shaped field raises
    :class:`studio.model.errors.FeedbackShapeError` naming it. The product itself reads the
    :class:`Feedback` record; this shape exists for ported code."""
    feedback = parse_feedback(score, raw_feedback)
    return {"score": score, "feedback_text": feedback.text,
            **feedback.trial_fields(NORMALIZED_KEYS), **feedback.extra}


class TrialBuilder:
    """Builds trial records in the GEPA format from a critic's feedback."""

    def __init__(self) -> None:
        self._logger = logger

    def build_feedback(
        self,
        score: float | None,
        metadata: Feedback | Mapping[str, object] | None = None,
        *,
        error: str | None = None,
        log_passthrough: bool = False,
    ) -> dict[str, object]:
        """The feedback dict: ``score`` always; ``feedback_text``, ``feedback_guidance``,
        ``feedback_dimensions`` and ``error`` only when non-empty, to keep prompts clean.
        ``metadata`` is a :class:`Feedback`, or a critic's metadata in any spelling the record
        reads; a badly shaped field is left out rather than shown to reflection."""
        record = metadata if isinstance(metadata, Feedback) else Feedback.model_validate(
            dict(metadata or {}))
        feedback: dict[str, object] = {"score": score, **record.trial_fields()}
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
        metadata: Feedback | Mapping[str, object] | None = None,
        *,
        error: str | None = None,
        trace: Mapping[str, object] | None = None,
        extra_trajectory: Mapping[str, object] | None = None,
        log_passthrough: bool = False,
    ) -> TrialRecord:
        """A full trial: ``{"feedback": ..., "trajectory": {input?, output, trace?, ...}}``.
        The input is left out when None (pipelines where it is implicit)."""
        trajectory: dict[str, object] = {}
        if input_text is not None:
            trajectory["input"] = input_text
        trajectory["output"] = output
        if trace:
            trajectory["trace"] = trace
        if extra_trajectory:
            trajectory.update(extra_trajectory)
        return TrialRecord(feedback=self.build_feedback(score, metadata, error=error,
                                                        log_passthrough=log_passthrough),
                           trajectory=trajectory)
