"""Intervals over seeds (attnscale.intervals) against scipy.stats and by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import attnscale as at


def test_matches_scipy_t_interval():
    x = np.array([0.3, -0.1, 0.8, 0.45, 0.2])
    mean, half = at.seed_interval(x, level=0.9)
    low, high = stats.t.interval(0.9, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert mean == pytest.approx(x.mean())
    assert (mean - half, mean + half) == pytest.approx((low, high), rel=1e-12)


def test_axis_and_pairing():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    mean, half = at.paired_difference(a.T, b.T, axis=1)
    expected = at.seed_interval(a - b)
    np.testing.assert_allclose(mean, expected[0])
    np.testing.assert_allclose(half, expected[1])


def test_coverage_by_simulation():
    """A 95% interval from 5 normal draws covers the true mean about 95% of the time."""
    rng = np.random.default_rng(1)
    draws = rng.normal(loc=2.0, size=(5, 20000))
    mean, half = at.seed_interval(draws)
    covered = np.mean(np.abs(mean - 2.0) <= half)
    assert abs(covered - 0.95) < 4 * np.sqrt(0.95 * 0.05 / 20000)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: at.seed_interval([1.0]), "at least two seeds"),
        (lambda: at.seed_interval(2.0), "seed axis"),
        (lambda: at.seed_interval([1.0, np.nan]), "values"),
        (lambda: at.seed_interval([1.0, 2.0], level=1.5), "level"),
        (lambda: at.seed_interval([[1.0, 2.0]], axis=3), "axis"),
        (lambda: at.paired_difference([1.0, 2.0], [1.0, 2.0, 3.0]), "same shape"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
