"""The overfitting guard's arithmetic: does the validation gain carry to the held-out test set?

Pure functions over score dicts (no store, no Streamlit), so the Compare page, the CLI, the
export and :class:`studio.engine.hosting.api.EvolutionResult` state the same verdict.

**The rule.** On each split the gain is computed from paired per-example differences
``d_i = best_i - baseline_i`` over the examples where both could be evaluated (a ``None`` score
leaves its example out, never counted as 0): the mean gain ``g``, with a 95% confidence interval
``g ± t(0.975, n-1) · s / sqrt(n)`` from Student's t distribution (``s``: the sample standard
deviation of the differences, ``n`` the number of pairs), clipped to [-1, 1] where differences
of scores in [0, 1] lie. When the validation gain is positive,
the guard **warns** if

1. the test gain's interval includes 0 or lies below it (lower bound ≤ 0): the test set does
   not confirm an improvement; or
2. the test gain is below the validation gain by more than chance allows given both sizes: the
   95% interval of ``g_val - g_test``, ``± t(0.975, ν) · sqrt(s_val²/n_val + s_test²/n_test)``
   (Welch; ``ν`` by Welch-Satterthwaite: the two splits are different examples), lies above 0.

Otherwise the gain **carries**. With fewer than 2 paired test examples there is no interval and
the guard says so instead of judging; with fewer than 2 validation pairs only rule 1 applies.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import StrEnum

CONFIDENCE = 0.95

Scores = dict[int, float | None]
"""Example id -> effective score of one candidate (None: could not evaluate)."""


# --------------------------------------------------------------------------- Student's t


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``0.5 <= p < 1``), by
    bisection on its CDF (no SciPy in the product's dependencies)."""
    if not 0.5 <= p < 1 or not df >= 1:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1 and df >= 1, got p={p}, df={df}")
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12:
            break
    return (low + high) / 2


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t, from the regularized incomplete beta function."""
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta ``I_x(a, b)`` (continued fraction, Lentz's method)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return result


# --------------------------------------------------------------------------- paired gains


@dataclass(frozen=True)
class Gain:
    """Best minus baseline on one split, paired by example."""

    n: int
    """Examples where both were evaluated."""
    mean: float | None
    sd: float | None
    """Sample standard deviation of the differences (None with fewer than 2 pairs)."""
    low: float | None
    """The 95% interval's bounds (None with fewer than 2 pairs)."""
    high: float | None


def paired_gain(baseline: Scores, best: Scores) -> Gain:
    """Mean of ``best - baseline`` over the examples both have a score for, with its t interval."""
    diffs = [other - score for e, score in baseline.items()
             if score is not None and (other := best.get(e)) is not None]
    n = len(diffs)
    if n == 0:
        return Gain(0, None, None, None, None)
    mean = sum(diffs) / n
    if n < 2:
        return Gain(n, mean, None, None, None)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = t_quantile(0.5 + CONFIDENCE / 2, n - 1) * sd / math.sqrt(n)
    return Gain(n, mean, sd, max(-1.0, mean - half), min(1.0, mean + half))


@dataclass(frozen=True)
class Shrink:
    """How far the test gain falls short of the validation gain, with its 95% Welch interval."""

    mean: float
    low: float
    high: float


def gain_shrink(val: Gain, test: Gain) -> Shrink | None:
    """``g_val - g_test`` with its Welch interval; None unless both splits have 2+ pairs."""
    if val.sd is None or test.sd is None or val.mean is None or test.mean is None:
        return None
    a, b = val.sd ** 2 / val.n, test.sd ** 2 / test.n
    mean = val.mean - test.mean
    if a + b == 0:  # no spread on either side: the difference is exact
        return Shrink(mean, mean, mean)
    df = (a + b) ** 2 / (a * a / (val.n - 1) + b * b / (test.n - 1))
    half = t_quantile(0.5 + CONFIDENCE / 2, max(1.0, df)) * math.sqrt(a + b)
    return Shrink(mean, mean - half, mean + half)


class GuardStatus(StrEnum):
    NO_TEST_SET = "no_test_set"
    NOT_SCORED = "not_scored"
    """The baseline and the best candidate share no scored test example yet."""
    NO_GAIN = "no_gain"
    """The best candidate does not beat the baseline on validation: nothing to carry."""
    TOO_FEW = "too_few"
    CARRIES = "carries"
    WARN = "warn"


@dataclass(frozen=True)
class Verdict:
    status: GuardStatus
    message: str


def guard_verdict(val: Gain, test: Gain, *, has_test_set: bool = True) -> Verdict:
    """Whether the validation gain carries to the test set (the rule in the module docstring)."""
    if not has_test_set:
        return Verdict(GuardStatus.NO_TEST_SET, "this run has no test set: add dataset.test "
                       "(or testset=) to see whether the validation gain holds on unseen data")
    if test.n == 0:
        return Verdict(GuardStatus.NOT_SCORED, "the baseline and the best candidate are not "
                       "both scored on the test set yet: score them with studio test RUN or "
                       "on the Compare page")
    if val.mean is None or val.mean <= 0:
        return Verdict(GuardStatus.NO_GAIN, "the best candidate does not beat the baseline on "
                       "validation, so there is no gain to carry over")
    if test.low is None or test.high is None or test.mean is None:
        return Verdict(GuardStatus.TOO_FEW, f"only {test.n} paired test example: an interval "
                       "needs at least 2; add test examples")
    reasons = []
    if test.low <= 0:
        reasons.append(f"the test gain's 95% interval [{test.low:+.3f}, {test.high:+.3f}] "
                       "includes 0 or lies below it")
    shrink = gain_shrink(val, test)
    if shrink is not None and shrink.low > 0:
        reasons.append(f"the test gain {test.mean:+.3f} is below the validation gain by "
                       f"{shrink.mean:.3f}, 95% interval [{shrink.low:.3f}, {shrink.high:.3f}] "
                       "above 0")
    if reasons:
        return Verdict(GuardStatus.WARN, f"the validation gain {val.mean:+.3f} does not carry "
                       f"to the test set: {'; and '.join(reasons)} (possible overfitting)")
    return Verdict(GuardStatus.CARRIES, f"the validation gain {val.mean:+.3f} carries to the "
                   f"test set: test gain {test.mean:+.3f}, 95% interval [{test.low:+.3f}, "
                   f"{test.high:+.3f}] above 0, and no shortfall beyond chance")


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class SplitMeans:
    """The baseline's and the best candidate's mean effective score on one split."""

    baseline: float | None
    best: float | None
    baseline_n: int
    """Examples the mean is over (could-not-evaluate left out)."""
    best_n: int


def split_means(baseline: Scores, best: Scores) -> SplitMeans:
    def mean(scores: Scores) -> tuple[float | None, int]:
        values = [s for s in scores.values() if s is not None]
        return (sum(values) / len(values) if values else None), len(values)

    (base_mean, base_n), (best_mean, best_n) = mean(baseline), mean(best)
    return SplitMeans(base_mean, best_mean, base_n, best_n)


@dataclass(frozen=True)
class HoldoutReport:
    """Train / validation / test means of the baseline (#0) and the best candidate, the paired
    gains and the guard's verdict."""

    baseline_index: int | None
    best_index: int | None
    test_size: int
    train: SplitMeans
    val: SplitMeans
    test: SplitMeans
    train_gain: Gain
    """Over the training examples both were scored on (minibatches): shown, never judged."""
    val_gain: Gain
    test_gain: Gain
    verdict: Verdict

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["verdict"] = {"status": self.verdict.status.value, "message": self.verdict.message}
        return data


def holdout_report(*, baseline_index: int | None, best_index: int | None, test_size: int,
                   train: tuple[Scores, Scores], val: tuple[Scores, Scores],
                   test: tuple[Scores, Scores]) -> HoldoutReport:
    """The report from ``(baseline scores, best scores)`` per split."""
    val_gain, test_gain = paired_gain(*val), paired_gain(*test)
    return HoldoutReport(
        baseline_index=baseline_index, best_index=best_index, test_size=test_size,
        train=split_means(*train), val=split_means(*val), test=split_means(*test),
        train_gain=paired_gain(*train), val_gain=val_gain, test_gain=test_gain,
        verdict=guard_verdict(val_gain, test_gain, has_test_set=test_size > 0))
