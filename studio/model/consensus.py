"""What several people's labels of one trial add up to: the one rule the loop reads.

A trial's effective score is, in order:

1. the **adjudicated** value, when an owner settled it (the latest active adjudication);
2. else the **consensus** of the people who labelled it, each person counted once with their
   own latest value: the **majority** when every label is pass/fail (0 or 1; a tie is 0.5 until
   someone adjudicates), else the **mean**;
3. else the judge's score.

One person's label is their latest value of each field (correcting the feedback after the score
keeps the score), so a trial one person labelled reads as it always did. Never "the latest
person wins": two people who disagree are a disagreement the studio shows (and an owner may
settle), not a race.

:func:`studio.model.records.merge_overrides` applies this rule to stored corrections; the
store's SQL (:func:`studio.store.repos.scores.effective_score`) is its mirror for queries over
thousands of trials, and a test holds the two to the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

PASS_FAIL_VALUES = (0.0, 1.0)
TIE = 0.5
"""What a pass/fail vote without a majority counts as until someone adjudicates."""
FEEDBACK_SEPARATOR = "\n"
"""Between different people's feedback texts, in the order they first labelled."""
OUTPUT_SEPARATOR = "\n--- or ---\n"
"""Between different people's corrected outputs."""


def is_pass_fail(scores: Iterable[float]) -> bool:
    """Every label is 0 or 1: a pass/fail vote."""
    return all(score in PASS_FAIL_VALUES for score in scores)


def consensus_score(scores: Sequence[float]) -> float | None:
    """The people's score of a trial from each person's own score (one per person): the
    majority of a pass/fail vote (:data:`TIE` without one), else the mean; None for none."""
    if not scores:
        return None
    if is_pass_fail(scores):
        passes = sum(1 for score in scores if score == 1.0)
        fails = len(scores) - passes
        return 1.0 if passes > fails else 0.0 if fails > passes else TIE
    return sum(scores) / len(scores)  # summed in order, as the store's SQL AVG does


def joined_texts(texts: Iterable[str | None], separator: str = FEEDBACK_SEPARATOR) -> str | None:
    """Different people's texts, each once, in order (None when nobody gave one)."""
    found = list(dict.fromkeys(text for text in texts if text))
    return separator.join(found) if found else None


def mean_dimensions(labels: Iterable[dict[str, float] | None]) -> dict[str, float] | None:
    """Per critic dimension, the consensus of the people who scored it."""
    per_dimension: dict[str, list[float]] = {}
    for label in labels:
        for name, value in (label or {}).items():
            per_dimension.setdefault(name, []).append(value)
    merged = {name: consensus_score(values) for name, values in per_dimension.items()}
    return {name: value for name, value in merged.items() if value is not None} or None
