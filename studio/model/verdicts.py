"""A case's verdict as ``adk eval`` gives it: each metric against its own threshold, and the case
passing only when every metric evaluated passes (:func:`case_status`, ADK's
``LocalEvalService._generate_final_eval_status``). A critic that judges by ADK's criteria
(:mod:`studio.critics.adk_metrics`) puts one :class:`Verdict` on each trial's feedback; the Run,
Review and Compare pages show it, and ``studio export --format adk-evalset-result`` writes it
as ADK's statuses.

The verdict is not the number GEPA optimises: that is the critic's score, made from the
metrics by a :class:`ScoreRule` and shown beside the verdict.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class EvalStatus(StrEnum):
    """ADK's ``EvalStatus`` names (``google.adk.evaluation.evaluator``)."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    NOT_EVALUATED = "NOT_EVALUATED"

    @property
    def words(self) -> str:
        return self.value.replace("_", " ").lower()


class ScoreRule(StrEnum):
    """How a trial's metric results become the critic's score, the number GEPA optimises."""

    PASS = "pass"
    """As ``adk optimize``: 1.0 when the case passes every metric it was evaluated on, else 0."""
    GRADED = "graded"
    """Each metric's score as a share of its threshold (1.0 once it passes), averaged: 1.0
    exactly when the case passes, and a failing metric moved toward its threshold counts."""
    MEAN = "mean"
    """The mean of the metrics' scores, each scaled to [0, 1] by its value interval; a
    failing case may score high (its verdict says it failed)."""

    @property
    def words(self) -> str:
        """The rule in a few words, shown beside the score."""
        return {ScoreRule.PASS: "1 when every metric passes, else 0 (as adk optimize)",
                ScoreRule.GRADED: "each metric's share of its threshold, averaged; 1 only "
                                  "when every metric passes",
                ScoreRule.MEAN: "the mean of the metrics' scores"}[self]


class MetricVerdict(BaseModel):
    """One metric's result on one case, as ADK's evaluator gave it."""

    model_config = ConfigDict(extra="ignore")

    name: str
    score: float | None = None
    """ADK's score, on the metric's own scale (its value interval)."""
    threshold: float | None = None
    status: EvalStatus = EvalStatus.NOT_EVALUATED
    details: str = ""
    """What reflection reads: expected vs actual, rubric verdicts, why it was not evaluated."""
    rubric_scores: list[dict[str, Any]] = Field(default_factory=list)

    def text(self) -> str:
        """``response_match_score 0.19 < 0.8 FAILED``."""
        if self.score is None:
            return f"{self.name} not evaluated"
        mark = {EvalStatus.PASSED: ">=", EvalStatus.FAILED: "<"}.get(self.status, "vs")
        bar = f" {mark} {self.threshold:g}" if self.threshold is not None else ""
        return f"{self.name} {self.score:.2f}{bar} {self.status.value}"


class Verdict(BaseModel):
    """A case's verdict by ADK's rule, with each metric's result and how the score was made."""

    model_config = ConfigDict(extra="ignore")

    status: EvalStatus
    metrics: list[MetricVerdict] = Field(default_factory=list)
    score_rule: ScoreRule = ScoreRule.PASS
    """How the critic's score (what GEPA optimises) was made from the metrics."""

    @classmethod
    def of(cls, metrics: list[MetricVerdict], score_rule: ScoreRule) -> Verdict:
        return cls(status=case_status(m.status for m in metrics), metrics=metrics,
                   score_rule=score_rule)

    @property
    def failed(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.status is EvalStatus.FAILED]

    def text(self) -> str:
        """One line: ``FAILED: response_match_score 0.19 < 0.8``; a pass names none."""
        shown = self.failed if self.status is EvalStatus.FAILED else []
        if self.status is EvalStatus.NOT_EVALUATED:
            return "NOT EVALUATED: no metric could evaluate"
        if not shown:
            return f"{self.status.value}: every metric at its threshold"
        return f"{self.status.value}: " + "; ".join(
            f"{m.name} {m.score:.2f} < {m.threshold:g}" if m.score is not None
            and m.threshold is not None else m.text() for m in shown)


def case_status(statuses: Iterable[EvalStatus]) -> EvalStatus:
    """ADK's rule for a case: FAILED when a metric failed, else PASSED when one passed, else
    NOT_EVALUATED (a metric that could not evaluate decides nothing)."""
    status = EvalStatus.NOT_EVALUATED
    for each in statuses:
        if each is EvalStatus.FAILED:
            return EvalStatus.FAILED
        if each is EvalStatus.PASSED:
            status = EvalStatus.PASSED
    return status
