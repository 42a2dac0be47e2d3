"""What the Compare page shows of the overfitting guard: train / validation / test side by side
for the baseline and the best candidate, the gains, and how the verdict is reached. Pure."""

from __future__ import annotations

import math

import pandas as pd

from studio.engine.scoring.guard import Gain, GuardStatus, HoldoutReport

GUARD_RULE = (
    "Gain = best − baseline, paired by example (examples either could not be evaluated on are "
    "left out). 95% interval: mean ± t(0.975, n−1)·s/√n, Student's t over the n paired "
    "differences (s: their standard deviation), clipped to [−1, 1]. The guard warns when the "
    "validation gain is positive and either the test gain's interval includes 0 (or lies below "
    "it), or the test gain falls short of the validation gain by more than chance allows given "
    "both sizes (the Welch 95% interval of the shortfall lies above 0). Train means cover only "
    "the training examples each was scored on (minibatches).")

LEVELS = {GuardStatus.WARN: "warning", GuardStatus.CARRIES: "success",
          GuardStatus.NO_GAIN: "info", GuardStatus.TOO_FEW: "info",
          GuardStatus.NOT_SCORED: "info", GuardStatus.NO_TEST_SET: "info"}
"""How loudly each verdict is shown."""

COLUMNS = ["split", "baseline", "best", "gain", "95% interval", "pairs"]


def guard_frame(report: HoldoutReport) -> pd.DataFrame:
    """One row per split: both means, the paired gain, its interval and the number of pairs."""
    rows = []
    for split, means, gain in (("train", report.train, report.train_gain),
                               ("validation", report.val, report.val_gain),
                               ("test", report.test, report.test_gain)):
        rows.append({"split": split, "baseline": _nan(means.baseline), "best": _nan(means.best),
                     "gain": _nan(gain.mean), "95% interval": interval_text(gain),
                     "pairs": gain.n})
    return pd.DataFrame(rows, columns=COLUMNS)


def interval_text(gain: Gain) -> str:
    if gain.n == 0:
        return "no pairs"
    if gain.low is None or gain.high is None:
        return "needs 2+ pairs"
    return f"[{gain.low:+.3f}, {gain.high:+.3f}]"


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)
