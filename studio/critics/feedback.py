"""A critic's reply as a :class:`Feedback` record: the one place replies are parsed.

Every critic (an ADK critic agent, an evaluator, a judge, a weighted mix) answers
``(score, metadata)``; :func:`parse_feedback` turns that into the record the store, reflection and
pages read, and :func:`judge_sample` runs a critic on one sample the way a run and "try it" both
need: a failure or a badly shaped reply becomes a "could not evaluate" message, never a crash.
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

__all__ = ["Feedback", "parse_feedback", "judge_sample", "is_valid_score"]


def parse_feedback(score: Any, metadata: Mapping[str, Any] | str | None) -> Feedback:
    """The record for a critic's ``(score, metadata)``; a plain string is the feedback text.

    Raises:
        FeedbackShapeError: ``score`` is not a number, ``metadata`` is not an object, or one of
            its fields has the wrong shape (the message names the field and the value).
    """
    if metadata is None or isinstance(metadata, str):
        metadata = {"feedback": metadata or ""}
    if not isinstance(metadata, Mapping):
        raise FeedbackShapeError("metadata", metadata, "an object")
    fields = read_feedback(metadata, score=_score(score), strict=True)
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


def is_valid_score(score: Any) -> bool:
    """True for a number in [0, 1]. Anything else (7.0, NaN, -1, "high") from a custom critic or
    evaluator means it could not evaluate: it must never enter sums, thresholds or agreement."""
    return (not isinstance(score, bool) and isinstance(score, int | float)
            and not math.isnan(score) and 0.0 <= score <= 1.0)


async def judge_sample(critic: Critic, sample: Sample) -> tuple[Feedback, str | None]:
    """The critic's feedback on ``sample`` and, when it gave no score, why.

    A critic that raises, crashes or replies in a bad shape yields a feedback with score None
    and a message saying the critic could not evaluate (or failed), so one bad example never ends
    a run and a stored trial always opens.
    """
    try:
        score, metadata = await critic.assess(sample)
        feedback = parse_feedback(score, metadata)
    except StudioError as exc:
        return Feedback(), f"the critic could not evaluate: {exc}"
    except Exception as exc:  # a critic bug on one example must not end the run
        return Feedback(), f"the critic failed: {describe_error(exc)}"
    if feedback.score is not None:
        return feedback, None
    return feedback, str(feedback.extra.get("error") or "the critic returned no score")
