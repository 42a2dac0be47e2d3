"""Reference answers in plain Python that tests check the store's SQL against.

The product computes these in SQL (``Store.trial_page``, ``Store.child_means``); the slow,
obvious versions live here, in the tests, so no product code is kept alive only to be an
oracle.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from studio.model.records import Trial, TrialPhase
from studio.views.tables import ERROR_CHOICES, OVERRIDE_CHOICES, TrialFilters


def filter_trials(frame: pd.DataFrame, filters: TrialFilters) -> pd.DataFrame:
    """The rows of a trial frame that pass ``filters``, in their original order."""
    if frame.empty:
        return frame
    mask = pd.Series(True, index=frame.index)
    if filters.iterations is not None:
        low, high = filters.iterations
        mask &= frame["iteration"].between(low, high)
    if filters.candidates:
        mask &= frame["candidate"].isin(filters.candidates)
    if filters.phases:
        mask &= frame["phase"].isin(filters.phases)
    low, high = filters.score_range
    scored = frame["score"].between(low, high)
    unscored = frame["score"].isna()
    mask &= scored | (unscored if filters.include_unscored else False)
    if filters.errors not in ERROR_CHOICES:
        raise ValueError(f"errors filter {filters.errors!r} is not one of {ERROR_CHOICES}")
    if filters.errors == "only errors":
        mask &= frame["error"] != ""
    elif filters.errors == "no errors":
        mask &= frame["error"] == ""
    if filters.overridden not in OVERRIDE_CHOICES:
        raise ValueError(f"overridden filter {filters.overridden!r} is not one of "
                         f"{OVERRIDE_CHOICES}")
    if filters.overridden == "overridden":
        mask &= frame["overridden"]
    elif filters.overridden == "not overridden":
        mask &= ~frame["overridden"]
    return frame[mask]


def minibatch_means(trials: Sequence[Trial]) -> dict[int, dict[str, float]]:
    """Per proposal: the child's mean effective score on its minibatch (``{"child": mean}``)."""
    child: dict[int, list[float]] = {}
    for t in trials:
        if t.phase is TrialPhase.CHILD and t.proposal_id is not None \
                and t.effective_score is not None:
            child.setdefault(t.proposal_id, []).append(t.effective_score)
    return {pid: {"child": sum(scores) / len(scores)} for pid, scores in child.items() if scores}
