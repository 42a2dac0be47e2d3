"""What a critic said about one output: the :class:`Feedback` record.

Critics reply in several dialects (``feedback`` or ``feedback_text``, ``dimension_scores`` or
``feedback_dimensions``, ``actionable_guidance`` or ``feedback_guidance``). :func:`read_feedback`
is the only place that knows those spellings; everything after it (store, reflection, pages)
reads the record's fields.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, model_validator

from studio.model.errors import FeedbackShapeError

__all__ = ["Feedback", "read_feedback"]

_SPELLINGS: dict[str, tuple[str, ...]] = {
    "text": ("text", "feedback_text", "feedback"),
    "guidance": ("guidance", "actionable_guidance", "feedback_guidance"),
    "dimensions": ("dimensions", "dimension_scores", "feedback_dimensions"),
}
_KNOWN = {"score", "extra"} | {key for keys in _SPELLINGS.values() for key in keys}


class Feedback(BaseModel):
    """A critic's verdict on one output, as the studio keeps, reflects on and shows it."""

    score: float | None = None
    """The critic's score in [0, 1]; None when it could not evaluate."""
    text: str = ""
    """What works and what does not: shown to people and to reflection."""
    guidance: str = ""
    """Concrete improvement steps, when the critic gives them."""
    dimensions: dict[str, float] = Field(default_factory=dict)
    """Per-dimension scores, e.g. ``{"clarity": 0.6}``."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Everything else the critic returned (verdicts, path, claims, error...)."""

    @model_validator(mode="before")
    @classmethod
    def _any_spelling(cls, data: Any) -> Any:
        """Rows stored before this record (any key spelling) load leniently, never crash."""
        if isinstance(data, Mapping):
            return read_feedback(data, strict=False)
        return data


def read_feedback(data: Mapping[str, Any], *, score: Any = None,
                  strict: bool = True) -> dict[str, Any]:
    """The record's fields from a critic's metadata in any known key spelling.

    ``score`` (when given) wins over a ``score`` key. ``strict`` raises
    :class:`FeedbackShapeError` naming the field for a bad shape (a fresh critic reply);
    otherwise a non-numeric dimension reads as NaN and any other bad value is kept in
    ``extra`` under its own key (a stored row must always open).
    """
    fields: dict[str, Any] = {"score": data.get("score") if score is None else score}
    extra = dict(data.get("extra") or {}) if isinstance(data.get("extra"), Mapping) else {}
    for name, spellings in _SPELLINGS.items():
        key, value = _first_present(data, spellings)
        if key is None:
            continue
        try:
            fields[name] = _READERS[name](key, value, strict)
        except FeedbackShapeError:
            if strict:
                raise
            extra[key] = value
    extra.update({str(k): v for k, v in data.items() if k not in _KNOWN})
    fields["extra"] = extra
    return fields


def _first_present(data: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if data.get(key) not in (None, "", {}):
            return key, data[key]
    return None, None


def _text(key: str, value: Any, strict: bool) -> str:
    if isinstance(value, list):
        return "\n".join(str(item) for item in value)
    return value if isinstance(value, str) else str(value)


def _dimensions(key: str, value: Any, strict: bool) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise FeedbackShapeError(key, value, "an object mapping dimension names to numbers")
    return {str(name): _dimension(key, name, score, strict) for name, score in value.items()}


def _dimension(key: str, name: Any, value: Any, strict: bool) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    if strict:
        raise FeedbackShapeError(f"{key}.{name}", value, "a number")
    return math.nan


_READERS = {"text": _text, "guidance": _text, "dimensions": _dimensions}
