"""The evaluator contract: one method, one result type.

Every evaluator, deterministic or LLM-backed, is called the same way::

    result = evaluator.evaluate(outputs=..., reference_outputs=..., inputs=...)
    result.score     # float in [0, 1] (higher is better), or None: could not evaluate
    result.value     # raw value: bool, label, count, distance
    result.comment   # human-readable explanation (becomes a trial's feedback text)
    result.metadata  # details: verdicts, rubric path, claims, matched calls

Contract: ``evaluate`` does not raise for a problem with one example (a missing output, an
unparseable trajectory or judge reply, a failed model call); it returns ``score=None`` with a
comment saying why, and ``metadata["error_kind"]`` (``trajectory_shape``, ``judge_call``,
``judge_reply``...) where a program may want to tell failures apart. Bad *configuration* raises at
construction (:class:`studio.model.errors.ConfigError` and subclasses, ``ValueError`` for a value
outside an allowed set).

This is Potato's calling convention, kept for its users. The studio itself calls an evaluator
only through :class:`studio.critics.adapters.EvaluatorCritic` (and ``evaluator_feedback``),
which turns the result into the critic seam's :class:`~studio.model.feedback.Feedback`.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, Field


class EvaluatorResult(BaseModel):
    """What an evaluator says about one output."""

    key: str
    """Name of the metric (``exact_match``, ``trajectory_match``...)."""
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    """Normalized score in [0, 1]; None means "could not evaluate", never 0."""
    value: Any = None
    """The raw or categorical value behind the score (bool, label, distance, "2/3")."""
    comment: str = ""
    """Why: shown to people and given to the reflection agent as feedback."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Details worth keeping with a trial: verdicts, rubric path, claims, matched calls."""

    @classmethod
    def not_evaluated(cls, key: str, comment: str, **metadata: object) -> EvaluatorResult:
        """A result for an example the evaluator could not score (``score=None``)."""
        return cls(key=key, score=None, comment=comment, metadata=metadata)

    @classmethod
    def passed(cls, key: str, ok: bool, comment: str = "", **metadata: object) -> EvaluatorResult:
        """A pass/fail result: score 1.0 or 0.0, value the boolean."""
        return cls(key=key, score=1.0 if ok else 0.0, value=ok, comment=comment, metadata=metadata)

    @property
    def evaluated(self) -> bool:
        return self.score is not None

    def to_dict(self) -> dict[str, Any]:
        """``key``, ``score``, ``value``, ``comment``, ``metadata`` as a dict (Potato's)."""
        return self.model_dump()


EvaluationResult = EvaluatorResult
"""Potato's name for the same record (``from potato.evaluators import EvaluationResult``)."""


class CheckKind(StrEnum):
    """What an evaluator checks, so the rules reflection (:mod:`studio.engine.propose.rules`)
    can say what to fix when it fails."""

    EXACT = "exact"
    """The reply equals the reference."""
    ANSWER = "answer"
    """The reply carries the correct answer (contains, close to it)."""
    FORMAT = "format"
    """The reply has a required shape (a pattern)."""
    JSON = "json"
    """The reply is JSON (valid, of a schema)."""
    TOOL = "tool"
    """The agent called the right tools."""
    OTHER = "other"
    """Anything else: the rule names the check."""


Factory = Callable[..., "Evaluator"]
F = TypeVar("F", bound=Callable[..., Any])
REGISTERED: dict[str, tuple[Factory, str]] = {}
"""Every evaluator a project file can name: ``name -> (factory, description)``, filled by
:func:`registered` as the package's modules load (:mod:`studio.evaluators.registry`)."""


def registered(name: str, description: str,
               kind: CheckKind = CheckKind.OTHER) -> Callable[[F], F]:
    """Register the decorated evaluator class (or factory) as ``name``, described for
    :func:`~studio.evaluators.registry.list_evaluators`, checking ``kind`` of thing: the one
    place an evaluator's facts are written, beside its code."""

    def register(factory: F) -> F:
        factory.check_kind = kind  # type: ignore[attr-defined]
        REGISTERED[name] = (factory, description)
        return factory

    return register


def check_kind(factory: object) -> CheckKind:
    """What the evaluator built by ``factory`` checks (:class:`CheckKind`)."""
    return getattr(factory, "check_kind", CheckKind.OTHER)


class Evaluator(abc.ABC):
    """Base class of all evaluators. Instances are callable: ``ev(outputs=...)``.

    Subclasses implement :meth:`evaluate`. LLM-backed evaluators override :meth:`aevaluate`
    too, so the evolution engine (inside an event loop) never blocks on a model call.
    """

    key: str = "evaluator"
    check_kind: ClassVar[CheckKind] = CheckKind.OTHER
    """What it checks; set by :func:`registered`."""
    uses_trace: ClassVar[bool] = False
    """True when ``outputs`` is a trajectory (the executor's trace) rather than the final text;
    :class:`studio.critics.adapters.EvaluatorCritic` uses it to pick what to pass."""

    @abc.abstractmethod
    def evaluate(
        self,
        *,
        outputs: object = None,
        reference_outputs: object = None,
        inputs: object = None,
        **kwargs: object,
    ) -> EvaluatorResult:
        """Score ``outputs`` (against ``reference_outputs`` when the metric needs one)."""

    async def aevaluate(
        self,
        *,
        outputs: object = None,
        reference_outputs: object = None,
        inputs: object = None,
        **kwargs: object,
    ) -> EvaluatorResult:
        """Async :meth:`evaluate`; deterministic evaluators are fast enough to run inline."""
        return self.evaluate(
            outputs=outputs, reference_outputs=reference_outputs, inputs=inputs, **kwargs
        )

    def __call__(self, **kwargs: object) -> EvaluatorResult:
        return self.evaluate(**kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self.key!r})"


_TEXT_KEYS = ("output", "text", "content", "answer", "final_answer")


def as_text(value: object) -> str | None:
    """The text of an output: strings as they are, common containers unwrapped, other JSON dumped.

    Returns None for None, so callers can tell "no output" from "empty output".
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            if isinstance(value.get(key), str):
                return value[key]
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
