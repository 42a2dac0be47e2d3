"""Checking a critic's :class:`Feedback`, and reading gepa-adk's ``(score, metadata)`` reply.

Every critic answers a :class:`Feedback` (:class:`studio.critics.protocol.Critic`).
:func:`judge_sample` runs a critic on one sample the way a run, an align pass and "try it" all
need: the record is checked (:func:`checked_feedback`: a score in [0, 1], numeric dimensions,
bounded sizes) and a failure or a bad answer becomes "could not evaluate", never a crash.
:func:`parse_feedback` reads a gepa-adk critic's ``(score, metadata)`` reply (an ADK critic
agent's JSON, :class:`studio.critics.agent.CriticScorer`) into the record: the only place that
tuple is turned into a :class:`Feedback`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from studio.critics.protocol import Critic, Sample
from studio.model.errors import FeedbackShapeError, StudioError
from studio.model.feedback import Feedback, read_feedback
from studio.model.jsontools import to_jsonable
from studio.model.limits import MAX_DIMENSIONS, MAX_FEEDBACK_CHARS, clip
from studio.runtime.execution import describe_error

__all__ = ["Feedback", "checked_feedback", "is_valid_score", "judge_sample", "parse_feedback",
           "unscored_reason"]


def parse_feedback(score: object, metadata: Mapping[str, object] | str | None) -> Feedback:
    """The record for a gepa-adk critic's ``(score, metadata)``; a plain string is the text.

    Raises:
        FeedbackShapeError: ``score`` is not a number, ``metadata`` is not an object, or one of
            its fields has the wrong shape (the message names the field and the value).
    """
    if metadata is None or isinstance(metadata, str):
        metadata = {"feedback": metadata or ""}
    if not isinstance(metadata, Mapping):
        raise FeedbackShapeError("metadata", metadata, "an object")
    return _checked_fields(read_feedback(metadata, score=_score(score), strict=True))


def checked_feedback(feedback: Feedback) -> Feedback:
    """``feedback`` as the studio keeps it: its details as JSON, its sizes within the caps.

    Raises:
        FeedbackShapeError: the score is outside [0, 1] (or not a number), or a dimension is
            not a number; the message names the field and the value.
    """
    _score(feedback.score)
    for name, value in feedback.dimensions.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise FeedbackShapeError(f"dimensions.{name}", value, "a number")
    return _checked_fields(feedback.model_dump())


def _checked_fields(fields: dict[str, Any]) -> Feedback:
    fields["extra"] = to_jsonable(fields["extra"])
    return Feedback.model_validate(_bounded(fields))


def _bounded(fields: dict[str, Any]) -> dict[str, Any]:
    """A runaway reply (10 MB of feedback) is kept up to the caps, marked where it was cut."""
    for name in ("text", "guidance"):
        if name in fields:
            fields[name] = clip(fields[name], MAX_FEEDBACK_CHARS)
    dimensions = fields.get("dimensions") or {}
    if len(dimensions) > MAX_DIMENSIONS:
        fields["dimensions"] = dict(list(dimensions.items())[:MAX_DIMENSIONS])
        fields["extra"]["dimensions_cut"] = len(dimensions) - MAX_DIMENSIONS
    size = len(json.dumps(fields["extra"], ensure_ascii=False, default=str))
    if size > MAX_FEEDBACK_CHARS:
        kept = {k: clip(str(fields["extra"][k]), MAX_FEEDBACK_CHARS)
                for k in ("error",) if k in fields["extra"]}
        fields["extra"] = {**kept, "cut": f"the critic's other details ({size:,} characters "
                                          f"as JSON) were over the {MAX_FEEDBACK_CHARS:,}-"
                                          "character limit and were left out"}
    return fields


def _score(score: Any) -> float | None:
    if score is not None and not is_valid_score(score):
        raise FeedbackShapeError("score", score, "a number from 0.0 to 1.0")
    return None if score is None else float(score)


def is_valid_score(score: object) -> bool:
    """True for a number in [0, 1]. Anything else (7.0, NaN, -1, "high") from a custom critic or
    evaluator means it could not evaluate: it must never enter sums, thresholds or agreement."""
    return (not isinstance(score, bool) and isinstance(score, int | float)
            and not math.isnan(score) and 0.0 <= score <= 1.0)


async def judge_sample(critic: Critic, sample: Sample) -> tuple[Feedback, str | None]:
    """The critic's feedback on ``sample`` and, when it gave no score, why.

    A critic that raises, crashes or answers a bad record yields a feedback with score None
    and a message saying the critic could not evaluate (or failed), so one bad example never ends
    a run and a stored trial always opens.
    """
    try:
        feedback = checked_feedback(_record(critic, await critic.assess(sample)))
    except StudioError as exc:
        return Feedback(), f"the critic could not evaluate: {exc}"
    except Exception as exc:  # a critic bug on one example must not end the run
        return Feedback(), f"the critic failed: {describe_error(exc)}"
    return feedback, unscored_reason(feedback)


def unscored_reason(feedback: Feedback) -> str | None:
    """None for a scored feedback, else why it has no score (a trial's ``error``)."""
    if feedback.score is not None:
        return None
    return feedback.error or "the critic returned no score"


def _record(critic: Critic, answer: object) -> Feedback:
    if not isinstance(answer, Feedback):
        raise TypeError(f"critic {getattr(critic, 'name', '?')!r} answered a "
                        f"{type(answer).__name__}; Critic.assess must return a "
                        "studio.model.feedback.Feedback (Feedback.unscored(why) when it could "
                        "not evaluate)")
    return answer
