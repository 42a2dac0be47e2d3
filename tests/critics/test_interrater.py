"""Agreement between people: Krippendorff's alpha checked against the `krippendorff` package
(a dev dependency, the reference only), Cohen's kappa for two, undefined cases as None."""

from __future__ import annotations

import random

import krippendorff
import numpy as np
import pytest

from studio.critics.interrater import krippendorff_alpha, people_agreement, two_people_kappa


def reference(units: list[list[float]], coders: int, level: str) -> float:
    """The package's alpha of the same labels, as a coders x units matrix with NaN gaps."""
    data = np.full((coders, len(units)), np.nan)
    for column, values in enumerate(units):
        for row, value in enumerate(values):
            data[row, column] = value
    return krippendorff.alpha(reliability_data=data, level_of_measurement=level)


@pytest.mark.parametrize("seed", range(12))
def test_alpha_matches_the_reference_package(seed):
    rng = random.Random(seed)
    coders = rng.randint(2, 4)
    binary = seed % 3 == 0
    units = [[float(rng.randint(0, 1)) if binary else round(rng.random(), 2)
              for _ in range(rng.randint(1, coders))] for _ in range(rng.randint(3, 15))]
    if not any(len(values) >= 2 for values in units) or len({v for u in units for v in u}) < 2:
        units.append([0.0, 1.0])
    for level in ("interval", "nominal"):
        assert krippendorff_alpha(units, level) == pytest.approx(reference(units, coders, level))


def test_perfect_agreement_is_one_and_undefined_cases_are_none():
    assert krippendorff_alpha([[0.2, 0.2], [0.9, 0.9]]) == pytest.approx(1.0)
    assert krippendorff_alpha([[0.5, 0.5], [0.5, 0.5]]) is None  # no variation at all
    assert krippendorff_alpha([[0.5], [0.7]]) is None  # nothing pairable
    with pytest.raises(ValueError, match="ordinal"):
        krippendorff_alpha([[0.1, 0.2]], "ordinal")


def test_two_people_get_cohen_s_kappa_and_three_do_not():
    scores = {1: {"ana": 0.9, "bo": 0.8}, 2: {"ana": 0.1, "bo": 0.2}, 3: {"ana": 0.9, "bo": 0.3}}
    two = people_agreement(scores, threshold=0.5)
    assert two.reviewers == ["ana", "bo"] and two.units == 3 and two.labels == 6
    assert two.kappa == pytest.approx(two_people_kappa([(0.9, 0.8), (0.1, 0.2), (0.9, 0.3)], 0.5))
    assert two.kappa == pytest.approx(0.4)  # observed 2/3, chance 4/9
    three = people_agreement({**scores, 4: {"cy": 0.5, "ana": 0.5}})
    assert three.kappa is None and three.units == 4


def test_alpha_is_reported_per_critic_dimension():
    dims = {1: {"ana": {"structure": 0.2, "imagery": 1.0}, "bo": {"structure": 0.2}},
            2: {"ana": {"structure": 0.8}, "bo": {"structure": 0.8, "imagery": 0.0}}}
    found = people_agreement({1: {"ana": 0.5, "bo": 0.5}}, dims).per_dimension
    assert found["structure"].alpha == pytest.approx(1.0) and found["structure"].units == 2
    assert found["imagery"].alpha is None and found["imagery"].units == 0
