"""Trial records for reflection: ``{feedback, trajectory}``, in gepa-adk's trial format.

A trial is what the reflection agent reads about one agent run: the critic's feedback (score,
text, guidance, dimensions) and the trajectory (input, output, trace). The feedback is a
:class:`studio.model.feedback.Feedback`, laid out by :meth:`Feedback.trial_fields` (the one
writer of the trial format's keys); this module only lays out the trial.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from studio.model.feedback import Feedback

__all__ = ["TrialBuilder"]


class TrialBuilder:
    """Builds trial records in the GEPA format from a critic's feedback."""

    def build_feedback(
        self,
        score: float | None,
        metadata: Feedback | Mapping[str, Any] | None = None,
        *,
        error: str | None = None,
    ) -> dict[str, Any]:
        """The feedback dict: ``score`` always; ``feedback_text``, ``actionable_guidance``,
        ``dimension_scores`` and ``error`` only when non-empty, to keep prompts clean.
        ``metadata`` is a :class:`Feedback`, or a critic's metadata in any spelling the record
        reads; a badly shaped field is left out rather than shown to reflection."""
        record = metadata if isinstance(metadata, Feedback) else Feedback.model_validate(
            dict(metadata or {}))
        feedback: dict[str, Any] = {"score": score, **record.trial_fields()}
        if error:
            feedback["error"] = error
        return feedback

    def build_trial(
        self,
        input_text: str | None,
        output: str,
        score: float | None,
        metadata: Feedback | Mapping[str, Any] | None = None,
        *,
        error: str | None = None,
        trace: dict[str, Any] | None = None,
        extra_trajectory: dict[str, Any] | None = None,
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
        return {"feedback": self.build_feedback(score, metadata, error=error),
                "trajectory": trajectory}
