"""Intervals over seeds (attnscale.support.intervals) against scipy.stats and by simulation."""

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


@pytest.mark.parametrize(
    "half_a, seeds_a, half_b, seeds_b, level",
    [(0.2, 5, 0.05, 5, 1e-3), (0.35, 5, 0.03, 5, 1e-2), (1.0, 3, 1.0, 20, 0.05), (0.1, 10, 0.0, 5, 1e-4)],
)
def test_welch_tolerance_is_where_welch_test_rejects(half_a, seeds_a, half_b, seeds_b, level):
    """At the tolerance, scipy's Welch test (from the batches' standard deviations) has p = level."""
    tol = at.welch_tolerance(half_a, seeds_a, half_b, seeds_b, level=level)
    sd = [h / stats.t.ppf(0.975, k - 1) * np.sqrt(k) for h, k in ((half_a, seeds_a), (half_b, seeds_b))]
    result = stats.ttest_ind_from_stats(tol, sd[0], seeds_a, 0.0, sd[1], seeds_b, equal_var=False)
    assert result.pvalue == pytest.approx(level, rel=1e-8)


def test_welch_tolerance_with_one_exact_side_is_the_t_interval():
    """A side without error leaves the other's own Student-t interval (at the same level)."""
    assert at.welch_tolerance(0.3, 4, 0.0, 9, level=0.05) == pytest.approx(0.3, rel=1e-12)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(half_a=-0.1), ValueError, "half_a"),
        (dict(half_a=0.0, half_b=0.0), ValueError, "both 0"),
        (dict(seeds_a=1), ValueError, "seeds_a"),
        (dict(seeds_b=2.5), TypeError, "seeds_b"),
        (dict(level=0.0), ValueError, "level"),
        (dict(interval_level=1.0), ValueError, "interval_level"),
        (dict(half_b=np.nan), ValueError, "half_b"),
    ],
)
def test_welch_tolerance_refuses_bad_input(kwargs, error, name):
    arguments = dict(half_a=0.1, seeds_a=5, half_b=0.1, seeds_b=5) | kwargs
    with pytest.raises(error, match=name):
        at.welch_tolerance(**arguments)


# -- crossed (seed x example) intervals ------------------------------------------------


def test_crossed_interval_covers_at_its_level():
    """Simulated tables with both factors random: the 95% interval covers the mean about 95% of the time."""
    rng = np.random.default_rng(7)
    seeds, examples, trials = 5, 40, 2000
    covered = 0
    for _ in range(trials):
        table = (
            rng.normal(0, 0.5, (seeds, 1))
            + rng.normal(0, 1.0, (1, examples))
            + rng.normal(0, 0.7, (seeds, examples))
        )
        mean, half = at.crossed_interval(table)
        covered += abs(mean) <= half
    rate = covered / trials
    # binomial SE at 0.95 over 2000 trials is 0.005; Satterthwaite is approximate: allow 0.02
    assert 0.93 <= rate <= 0.975, rate
    # the seed-only interval, blind to the examples' variance, covers far less often (the wrong claim)
    covered_seed_only = 0
    for _ in range(400):  # examples varying more than seeds, as the language model's text windows do
        table = (
            rng.normal(0, 0.5, (seeds, 1))
            + rng.normal(0, 2.0, (1, examples))
            + rng.normal(0, 0.7, (seeds, examples))
        )
        mean, half = at.seed_interval(table.mean(axis=1))
        covered_seed_only += abs(mean) <= half
    assert covered_seed_only / 400 < 0.85


def test_crossed_interval_against_a_naive_route():
    """With no seed or example effect the variance is the cell variance over S*W (an iid table)."""
    rng = np.random.default_rng(3)
    table = rng.normal(size=(6, 500))
    mean, half = at.crossed_interval(table)
    naive = 1.96 * table.std(ddof=1) / np.sqrt(table.size)
    assert abs(mean - table.mean()) < 1e-12
    assert 0.8 < half / naive < 1.6  # max(M_S, M_W) floor errs wide, never narrow


@pytest.mark.parametrize(
    ("values", "level", "error"),
    [
        ([1.0, 2.0], 0.95, ValueError),
        ([[1.0, 2.0]], 0.95, ValueError),
        ([[1, 2], [3, np.nan]], 0.95, ValueError),
        ([[1, 2], [3, 4]], 1.0, ValueError),
        ("x", 0.95, TypeError),
    ],
)
def test_crossed_interval_bad_input(values, level, error):
    with pytest.raises(error):
        at.crossed_interval(values, level)


def _mean_squares(table):
    """The two-way ANOVA mean squares (seeds, examples, error), written out here."""
    seeds, examples = table.shape
    by_seed, by_example, grand = table.mean(axis=1), table.mean(axis=0), table.mean()
    residual = table - by_seed[:, None] - by_example[None, :] + grand
    return (
        examples * np.sum((by_seed - grand) ** 2) / (seeds - 1),
        seeds * np.sum((by_example - grand) ** 2) / (examples - 1),
        np.sum(residual**2) / ((seeds - 1) * (examples - 1)),
    )


@pytest.mark.parametrize("shape", [(2, 2), (5, 32), (3, 7), (5, 200)])
def test_crossed_components_equal_the_mean_squares_route(shape):
    """Squared differences of cells give the components the mean squares give, to rounding."""
    rng = np.random.default_rng(sum(shape))
    seeds, examples = shape
    table = rng.normal(0, 0.4, (seeds, 1)) + rng.normal(0, 1.0, (1, examples)) + rng.normal(0, 0.6, shape)
    m_seed, m_example, m_error = _mean_squares(table)
    expected = [(m_seed - m_error) / examples, (m_example - m_error) / seeds, m_error]
    np.testing.assert_allclose(at.crossed_components(table), expected, rtol=1e-10, atol=1e-14)
    # the wrong claim: each component as the plain variance of its margin (the error left in)
    plain = [table.mean(axis=1).var(ddof=1), table.mean(axis=0).var(ddof=1), table.var(ddof=1)]
    assert not np.allclose(at.crossed_components(table), plain, rtol=1e-3)


def test_crossed_components_are_unbiased():
    """Averaged over simulated tables, each estimate is near its component (and can go negative)."""
    rng = np.random.default_rng(11)
    truth = np.array([0.25, 1.0, 0.49])
    estimates = np.array(
        [
            at.crossed_components(
                rng.normal(0, 0.5, (4, 1)) + rng.normal(0, 1.0, (1, 12)) + rng.normal(0, 0.7, (4, 12))
            )
            for _ in range(4000)
        ]
    )
    mean, spread = estimates.mean(axis=0), estimates.std(axis=0) / np.sqrt(len(estimates))
    assert np.all(np.abs(mean - truth) < 4 * spread), (mean, spread)
    assert estimates[:, 0].min() < 0  # a chance low of the seed component


def test_crossed_contrast_of_one_table_is_crossed_interval():
    rng = np.random.default_rng(5)
    for shape in [(2, 2), (5, 32), (5, 512)]:
        table = rng.normal(0, 0.3, (shape[0], 1)) + rng.normal(size=shape)
        one = at.crossed_contrast([table], [1.0])
        np.testing.assert_allclose(one, at.crossed_interval(table), rtol=1e-12)
        mean, half = at.crossed_contrast([table], [-2.0])
        expected = (-2 * table.mean(), 2 * at.crossed_interval(table)[1])
        np.testing.assert_allclose((mean, half), expected, rtol=1e-12)


def test_crossed_contrast_covers_a_growth_at_its_level():
    """Two tables sharing correlated seed effects, examples drawn afresh: the 95% interval of the
    difference of their means covers the true difference about 95% of the time.  The wrong claims:
    the seeds alone (examples held fixed), and two independent crossed intervals combined in
    quadrature (the seeds' correlation ignored)."""
    rng = np.random.default_rng(17)
    seeds, trials = 5, 2000
    covered = seed_only = independent = 0
    for _ in range(trials):
        a = rng.normal(0, 0.5, (seeds, 1))
        short = a + rng.normal(0, 1.0, (1, 256)) + rng.normal(0, 0.7, (seeds, 256))
        long = 0.9 * a + rng.normal(0, 0.3, (seeds, 1))
        long = long + rng.normal(0, 1.5, (1, 32)) + rng.normal(0, 0.7, (seeds, 32))
        mean, half = at.crossed_contrast([long, short], [1.0, -1.0])
        covered += abs(mean) <= half
        m, h = at.seed_interval(long.mean(axis=1) - short.mean(axis=1))
        seed_only += abs(m) <= h
        h_long, h_short = at.crossed_interval(long)[1], at.crossed_interval(short)[1]
        independent += abs(mean) <= np.hypot(h_long, h_short)
    assert 0.93 <= covered / trials <= 0.975, covered / trials
    assert seed_only / trials < 0.85
    assert independent / trials > 0.98  # far too wide: the shared seed effect cancels in the difference


@pytest.mark.parametrize(
    ("tables", "weights", "error"),
    [
        ([], [], TypeError),
        (np.zeros((2, 3)), [1.0], TypeError),
        ([np.zeros((2, 3))], [0.0], ValueError),
        ([np.zeros((2, 3))], [1.0, 1.0], ValueError),
        ([np.zeros((2, 3)), np.zeros((3, 3))], [1.0, -1.0], ValueError),
        ([np.zeros((1, 3))], [1.0], ValueError),
        ([[[1.0, np.nan], [1.0, 2.0]]], [1.0], ValueError),
    ],
)
def test_crossed_contrast_bad_input(tables, weights, error):
    with pytest.raises(error):
        at.crossed_contrast(tables, weights)


@pytest.mark.parametrize(
    ("values", "error"), [([1.0, 2.0], ValueError), ([[1.0, 2.0]], ValueError), ("x", TypeError)]
)
def test_crossed_components_bad_input(values, error):
    with pytest.raises(error):
        at.crossed_components(values)


# -- the median's interval from order statistics ---------------------------------------


@pytest.mark.parametrize("size", [6, 7, 20, 201, 2001])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_median_interval_covers_with_the_binomial_probability(size, level):
    """Its ends are the order statistics of equal binomial tails, counted exactly with integers.

    Each end leaves at most (1 - level)/2 of the binomial probability outside
    it, so the coverage is at least ``level``; moving either end one rank
    inward leaves more (rules out an interval that is needlessly wide).
    """
    x = np.arange(float(size))  # x_(j) = j - 1: the ends give the order statistics' ranks
    median, low, high = at.median_interval(x[::-1], level=level)
    j, k = int(low) + 1, int(high) + 1
    assert median == np.median(x)

    counts = [1]  # C(size, b) for b = 0..size, exact integers
    for b in range(size):
        counts.append(counts[-1] * (size - b) // (b + 1))

    def probability(ranks):  # P(B in ranks), B ~ Binomial(size, 1/2), exactly
        return sum(counts[b] for b in ranks) / 2**size

    tail = (1 - level) / 2
    below, above = probability(range(j)), probability(range(k, size + 1))  # B < j, B >= k
    assert below <= tail and above <= tail
    assert 1 - below - above >= level
    assert probability(range(j + 1)) > tail and probability(range(k - 1, size + 1)) > tail


def test_median_interval_by_simulation():
    """Over 1000 samples of 200 exponential draws, the 95% interval covers the median 95% of the time."""
    rng = np.random.default_rng(3)
    draws = rng.exponential(size=(1000, 200))
    covered = [low <= np.log(2) <= high for _, low, high in map(at.median_interval, draws)]
    exact = 0.95  # at least; for 200 draws the binomial gives 0.9599
    assert np.mean(covered) >= exact - 4 * np.sqrt(exact * (1 - exact) / len(covered))


def test_median_interval_refuses_bad_input():
    with pytest.raises(ValueError, match="values needs more entries"):
        at.median_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    with pytest.raises(ValueError, match="values must have one axis"):
        at.median_interval(np.ones((10, 10)))
    with pytest.raises(ValueError, match="level"):
        at.median_interval(np.arange(10.0), level=1.0)
    with pytest.raises(TypeError, match="values"):
        at.median_interval("abc")


def test_crossed_half_width_never_exceeds_the_data_range():
    """Issue 39: Satterthwaite's df can fall below 1 when the error mean square nearly cancels the
    others (t then grows without bound); floored at min(S, W) - 1, the half-width stays inside the
    range of the data (3-5 seeds, 8-16 windows, as in the sweeps), in tables drawn to provoke it."""
    rng = np.random.default_rng(39)
    worst = 0.0
    for _ in range(3000):
        # the sweeps' shapes: 3 to 5 seeds, 8 or more windows (two seeds: t_1 = 12.7, and three examples
        # with a large example effect give a legitimately wide interval: no such bound there)
        seeds, examples = rng.integers(3, 6), rng.integers(8, 17)
        table = rng.normal(size=(seeds, examples)) * rng.exponential(size=(seeds, 1))
        table += rng.normal(size=(1, examples)) * rng.exponential()
        if rng.random() < 0.5:  # mostly zeros with rare ones, like a recall table near 0
            table = (rng.random((seeds, examples)) < 0.05).astype(float)
        spread = np.ptp(table)
        for _, half in (at.crossed_interval(table), at.crossed_contrast([table], [1.0])):
            worst = max(worst, half / spread if spread else half)
    assert worst <= 1.0, worst
    # the referee's table (carry sweep, longest base, unchanged, tuned, 16L): Satterthwaite's df was
    # 0.41 and the printed interval 0.02 +- 0.53, eleven times the data's range; floored, +- 0.004
    table = np.array(
        [
            [0.019531, 0.019531, 0.023438, 0.011719, 0.027344, 0.023438, 0.050781, 0.019531],
            [0.019531, 0.019531, 0.023438, 0.039062, 0.023438, 0.019531, 0.0039062, 0.023438],
            [0.023438, 0.023438, 0.023438, 0.03125, 0.015625, 0.03125, 0.023438, 0.023438],
        ]
    )
    for _, half in (at.crossed_interval(table), at.crossed_contrast([table], [1.0])):
        assert half <= np.ptp(table), half
