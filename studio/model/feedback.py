"""What a critic said about one output: the :class:`Feedback` record.

Every critic answers with this record (:class:`studio.critics.protocol.Critic`), and the store,
reflection and pages read its fields: ``score``, ``text``, ``guidance``, ``dimensions``,
``extra``. This module is also the one place that knows the other spellings of those fields:

- read (:data:`SPELLINGS`, :func:`read_feedback`): a critic agent's JSON reply in gepa-adk's
  schema (``feedback``, ``dimension_scores``, ``actionable_guidance``), a gepa-adk trial dict
  (``feedback_text``, ``feedback_guidance``, ``feedback_dimensions``), and rows stored before
  this record, which kept the critic's raw reply in any of those spellings;
- written (:meth:`Feedback.trial_fields`): the shapes the seeds document, each used only by its
  adapter: the trial format reflection reads (``TrialBuilder``: ``feedback_text``,
  ``feedback_guidance``, ``feedback_dimensions``), ``CriticScorer``'s ``normalize_feedback``
  (``dimension_scores``, ``actionable_guidance``) and ``trial_builder.normalize_feedback``
  (``dimensions``, ``guidance``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from studio.model.errors import FeedbackShapeError
from studio.model.verdicts import Verdict

__all__ = ["CRITIC_SCORER_KEYS", "Feedback", "NORMALIZED_KEYS", "SPELLINGS", "TRIAL_KEYS",
           "read_feedback"]

SPELLINGS: dict[str, tuple[str, ...]] = {
    "text": ("text", "feedback_text", "feedback"),
    "guidance": ("guidance", "actionable_guidance", "feedback_guidance"),
    "dimensions": ("dimensions", "dimension_scores", "feedback_dimensions"),
}
"""Each field's spellings a reply or an old row may use, the record's own first."""
TRIAL_KEYS = {"text": "feedback_text", "guidance": "feedback_guidance",
              "dimensions": "feedback_dimensions"}
"""The trial format reflection reads: gepa-adk's ``TrialBuilder.build_feedback`` (seed 002)."""
CRITIC_SCORER_KEYS = {"text": "feedback_text", "guidance": "actionable_guidance",
                      "dimensions": "dimension_scores"}
"""What gepa-adk's ``CriticScorer`` module's ``normalize_feedback`` returns (seed 000)."""
NORMALIZED_KEYS = {"text": "feedback_text", "guidance": "guidance", "dimensions": "dimensions"}
"""What gepa-adk's ``trial_builder.normalize_feedback`` returns (seed 002).

The three seed-documented shapes are written only here and used only by their adapters
(``studio.engine.propose.trials`` and ``studio.critics.agent``); the product speaks the record."""
_KNOWN = {"score", "extra", "verdict"} | {key for keys in SPELLINGS.values() for key in keys}


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
    """Everything else the critic returned (verdicts, path, claims...); ``error`` says why it
    could not evaluate."""
    verdict: Verdict | None = None
    """A critic judging by ADK's criteria: each metric against its threshold and the case's
    status by ``adk eval``'s rule (:mod:`studio.model.verdicts`); the score is what GEPA
    optimises, made from the metrics by ``verdict.score_rule``."""

    @classmethod
    def unscored(cls, why: str, *, text: str | None = None, **details: object) -> Feedback:
        """"Could not evaluate" (a failed or timed-out critic, no reference, no trajectory):
        score None, never 0. ``why`` is kept as ``extra["error"]`` and is the text people and
        reflection read unless ``text`` says more; ``details`` land in ``extra``."""
        return cls(score=None, text=why if text is None else text,
                   extra={**details, "error": why})

    @property
    def error(self) -> str | None:
        """Why the critic could not evaluate, when it said (``extra["error"]``)."""
        why = self.extra.get("error")
        return None if why in (None, "") else str(why)

    def trial_fields(self, keys: Mapping[str, str] = TRIAL_KEYS) -> dict[str, Any]:
        """The text, guidance and dimensions under ``keys`` (by default the trial format
        reflection reads; a seed adapter passes its own shape), each only when it says
        something (blank text, empty guidance and NaN dimensions are left out), so a
        reflection prompt stays clean. The score is the caller's: reflection reads the
        effective one."""
        fields: dict[str, Any] = {}
        if self.text.strip():
            fields[keys["text"]] = self.text
        if self.guidance.strip():
            fields[keys["guidance"]] = self.guidance
        dimensions = {k: v for k, v in self.dimensions.items() if not math.isnan(v)}
        if dimensions:
            fields[keys["dimensions"]] = dimensions
        return fields

    @model_validator(mode="before")
    @classmethod
    def _any_spelling(cls, data: object) -> Any:
        """A dict in any known spelling (a row stored before this record, a gepa-adk trial
        dict) loads leniently and never crashes: a badly shaped field is kept in ``extra``."""
        if isinstance(data, Mapping):
            return read_feedback(data, strict=False)
        return data


def read_feedback(data: Mapping[str, Any], *, score: object = None,
                  strict: bool = True) -> dict[str, Any]:
    """The record's fields from a critic's metadata in any known key spelling.

    ``score`` (when given) wins over a ``score`` key. ``strict`` raises
    :class:`FeedbackShapeError` naming the field for a bad shape (a fresh critic reply);
    otherwise a non-numeric dimension reads as NaN and any other bad value is kept in
    ``extra`` under its own key (a stored row must always open).
    """
    fields: dict[str, Any] = {"score": data.get("score") if score is None else score}
    extra = dict(data.get("extra") or {}) if isinstance(data.get("extra"), Mapping) else {}
    for name, spellings in SPELLINGS.items():
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
    if data.get("verdict") is not None:
        fields["verdict"] = _verdict(data["verdict"], strict, extra)
    return fields


def _verdict(value: object, strict: bool, extra: dict[str, Any]) -> Verdict | None:
    """A stored verdict that no longer reads is kept in ``extra`` (a row must always open)."""
    try:
        return Verdict.model_validate(value)
    except ValidationError as exc:
        if strict:
            raise FeedbackShapeError("verdict", value, "a verdict") from exc
        extra["verdict"] = value
        return None


def _first_present(data: Mapping[str, object], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if data.get(key) not in (None, "", {}):
            return key, data[key]
    return None, None


def _text(key: str, value: object, strict: bool) -> str:
    if isinstance(value, list):
        return "\n".join(str(item) for item in value)
    return value if isinstance(value, str) else str(value)


def _dimensions(key: str, value: object, strict: bool) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise FeedbackShapeError(key, value, "an object mapping dimension names to numbers")
    return {str(name): _dimension(key, name, score, strict) for name, score in value.items()}


def _dimension(key: str, name: object, value: object, strict: bool) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    if strict:
        raise FeedbackShapeError(f"{key}.{name}", value, "a number")
    return math.nan


_READERS = {"text": _text, "guidance": _text, "dimensions": _dimensions}
