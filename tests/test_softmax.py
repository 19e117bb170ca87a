"""attnscale.theory.softmax against mpmath at high precision, and its invariants."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnscale as at

RTOL = 1e-12  # relative tolerance against the mpmath reference
ATOL = 1e-300  # results below the float64 range are allowed to underflow to 0


def mp_softmax_reference(s, alpha):
    """p, the Jacobian, half its L1 norm and sum p^2 from the definitions, in mpmath.

    The working precision is raised until 1 - max(p) is resolved, so that
    the reference itself suffers no cancellation.
    """
    s = [mpmath.mpf(float(x)) for x in s]
    a = mpmath.mpf(float(alpha))
    spread = float(a * (max(s) - min(s)))
    with mpmath.workdps(40 + int(min(spread, 1000.0) / 2.3)):
        e = [mpmath.exp(a * x) for x in s]
        z = mpmath.fsum(e)
        p = [x / z for x in e]
        n = len(p)
        jac = [[a * (p[i] * (1 if i == j else 0) - p[i] * p[j]) for j in range(n)] for i in range(n)]
        half_l1 = mpmath.fsum(abs(x) for row in jac for x in row) / 2
        collision = mpmath.fsum(x * x for x in p)
        return (
            np.array([float(x) for x in p]),
            np.array([[float(x) for x in row] for row in jac]),
            float(half_l1),
            float(collision),
            float(-mpmath.log(collision)),
        )


CASES = [
    ([0.0, 0.0], 1.0),
    ([1.0, 2.0, 3.0], 0.0),
    ([1.0, 2.0, 3.0], 0.7),
    ([0.3, -1.2, 2.5, 2.4999], 40.0),
    ([1e4, -1e4, 0.0, 9999.5], 3.0),
    ([-1e4, -1e4 + 1e-3, -1e4 + 2e-3], 1e4),
    (list(np.linspace(-5, 5, 17)), 1e-8),
    ([7.0], 2.0),
    ([2.0, 2.0, 2.0, -3.0], 1e3),
]


@pytest.mark.parametrize(("s", "alpha"), CASES)
def test_against_mpmath(s, alpha):
    p_ref, jac_ref, l1_ref, coll_ref, h2_ref = mp_softmax_reference(s, alpha)
    np.testing.assert_allclose(at.softmax(s, alpha), p_ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(at.softmax_jacobian(s, alpha), jac_ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(at.gradient_l1(s, alpha), l1_ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(at.gradient_objective(s, alpha), l1_ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(at.collision_probability(s, alpha), coll_ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(at.renyi2_entropy(s, alpha), h2_ref, rtol=RTOL, atol=ATOL)


def test_random_against_mpmath():
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(2, 9))
        s = rng.normal(size=n) * 10 ** rng.uniform(-2, 3)
        alpha = 10 ** rng.uniform(-3, 2)
        _, jac_ref, l1_ref, _, h2_ref = mp_softmax_reference(s, alpha)
        np.testing.assert_allclose(at.softmax_jacobian(s, alpha), jac_ref, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(at.gradient_objective(s, alpha), l1_ref, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(at.renyi2_entropy(s, alpha), h2_ref, rtol=RTOL, atol=ATOL)


def test_axis_and_broadcasting():
    rng = np.random.default_rng(1)
    s = rng.normal(size=(3, 5, 4))
    alpha = np.array([0.5, 1.0, 2.0, 4.0])
    # keys on axis 1: alpha broadcasts against the remaining axes (3, 4)
    p = at.softmax(s, alpha, axis=1)
    assert p.shape == (3, 5, 4)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-14)
    for k in range(4):
        np.testing.assert_allclose(p[:, :, k], at.softmax(s[:, :, k], alpha[k]), rtol=1e-14)
    grid = np.linspace(0, 3, 7)[:, None, None]
    assert at.gradient_l1(s, grid).shape == (7, 3, 5)
    assert at.softmax_jacobian(s, 2.0).shape == (3, 5, 4, 4)


def test_doubling_scale_equals_doubling_scores():
    s = np.array([0.1, -0.4, 1.3])
    np.testing.assert_allclose(at.softmax(s, 2.0), at.softmax(2 * s, 1.0), rtol=1e-15)


def test_known_values():
    # uniform row: Jacobian alpha (I/n - 1/n^2), half L1 = alpha (1 - 1/n)
    for n in (2, 5, 64):
        np.testing.assert_allclose(at.gradient_l1(np.zeros(n), 3.0), 3.0 * (1 - 1 / n), rtol=1e-14)
        np.testing.assert_allclose(at.renyi2_entropy(np.zeros(n), 3.0), np.log(n), rtol=1e-14)


scores = st.integers(1, 12).flatmap(
    lambda n: arrays(np.float64, n, elements=st.floats(-1e4, 1e4, allow_nan=False))
)
scales = st.floats(0.0, 1e4, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(scores, scales)
def test_invariants(s, alpha):
    n = len(s)
    p = at.softmax(s, alpha)
    jac = at.softmax_jacobian(s, alpha)
    l1 = at.gradient_l1(s, alpha)
    objective = at.gradient_objective(s, alpha)
    h2 = at.renyi2_entropy(s, alpha)
    assert np.all(np.isfinite(jac)) and np.isfinite(l1) and np.isfinite(h2)
    assert np.all((p >= 0) & (p <= 1))
    assert abs(p.sum() - 1) <= 4 * n * np.finfo(float).eps
    assert np.all(np.abs(jac.sum(axis=-1)) <= 4 * n * np.finfo(float).eps * max(alpha, 1.0))
    assert np.all(np.diag(jac) >= 0)
    np.testing.assert_allclose(l1, objective, rtol=1e-12, atol=ATOL)
    assert 0.0 <= objective <= alpha * (1 - 1 / n) * (1 + 1e-12)
    assert -1e-15 <= h2 <= np.log(n) * (1 + 1e-12) + 1e-15


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: at.softmax([]), ValueError, "s must not be empty"),
        (lambda: at.softmax(np.empty((3, 0))), ValueError, "s must not be empty"),
        (lambda: at.softmax(1.0), ValueError, "at least one axis"),
        (lambda: at.softmax([1.0, np.nan]), ValueError, "s must be finite"),
        (lambda: at.softmax([1.0, np.inf]), ValueError, "s must be finite"),
        (lambda: at.softmax([1.0, 2.0], alpha=-1.0), ValueError, "alpha must be >= 0"),
        (lambda: at.softmax([1.0, 2.0], alpha=np.nan), ValueError, "alpha must be finite"),
        (lambda: at.softmax([1.0, 2.0], alpha="big"), TypeError, "alpha must be a real number"),
        (lambda: at.softmax(["a", "b"]), TypeError, "s must be a real number"),
        (lambda: at.softmax(np.ones((2, 2)), alpha=[1.0, 2.0, 3.0]), ValueError, "does not broadcast"),
        (lambda: at.softmax([1.0, 2.0], axis=3), ValueError, "out of range"),
        (lambda: at.softmax_jacobian([1.0 + 1j]), TypeError, "s must be a real number"),
        (lambda: at.gradient_l1([[1.0, 2.0], [3.0, np.nan]]), ValueError, "s must be finite"),
        (lambda: at.gradient_objective([1.0], alpha=-0.5), ValueError, "alpha must be >= 0"),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


def mp_frobenius(s, alpha):
    """||J||_F from the entries of the Jacobian, summed in mpmath."""
    s = [mpmath.mpf(float(x)) for x in s]
    a = mpmath.mpf(float(alpha))
    spread = float(a * (max(s) - min(s)))
    with mpmath.workdps(40 + int(min(spread, 1000.0) / 2.3)):
        e = [mpmath.exp(a * x) for x in s]
        z = mpmath.fsum(e)
        p = [x / z for x in e]
        n = len(p)
        total = mpmath.fsum(
            (a * (p[i] * (1 if i == j else 0) - p[i] * p[j])) ** 2 for i in range(n) for j in range(n)
        )
        return float(mpmath.sqrt(total))


@pytest.mark.parametrize(
    ("s", "alpha"),
    [
        *CASES,
        ([0.0, -1.0], 700.0),  # ||J||_F ~ 1e-301: its square is below the float range
        ([0.0, -1.0, -1.5, -30.0], 650.0),
        ([0.0, 1e-9, -3.0], 1e6),
    ],
)
def test_frobenius_against_mpmath(s, alpha):
    assert float(at.gradient_frobenius(s, alpha)) == pytest.approx(
        mp_frobenius(s, alpha), rel=1e-12, abs=1e-300
    )


def test_frobenius_random_against_mpmath():
    rng = np.random.default_rng(11)
    for _ in range(30):
        n = int(rng.integers(2, 9))
        s = rng.normal(size=n) * 10 ** rng.uniform(-2, 3)
        alpha = 10 ** rng.uniform(-3, 2)
        assert float(at.gradient_frobenius(s, alpha)) == pytest.approx(
            mp_frobenius(s, alpha), rel=1e-12, abs=1e-300
        )


def test_frobenius_matches_the_matrix_norm_and_known_values():
    rng = np.random.default_rng(3)
    s = rng.normal(size=(4, 6, 9))
    alpha = rng.uniform(0, 5, size=(4, 6))
    np.testing.assert_allclose(
        at.gradient_frobenius(s, alpha),
        np.linalg.norm(at.softmax_jacobian(s, alpha), axis=(-2, -1)),
        rtol=1e-13,
    )
    # uniform row: ||J||_F = alpha sqrt(n - 1) / n
    for n in (1, 2, 7, 100):
        np.testing.assert_allclose(
            at.gradient_frobenius(np.zeros(n), 3.0), 3.0 * np.sqrt(n - 1) / n, rtol=1e-14
        )
    assert at.gradient_frobenius(np.zeros((2, 3)), np.linspace(0, 1, 5)[:, None]).shape == (5, 2)


@settings(max_examples=200, deadline=None)
@given(scores, scales)
def test_frobenius_bounds(s, alpha):
    # ||J||_F <= ||J||_1 (entrywise), i.e. <= 2 alpha (1 - sum p^2), and >= 0
    fro = float(at.gradient_frobenius(s, alpha))
    assert np.isfinite(fro) and fro >= 0
    assert fro <= 2 * float(at.gradient_objective(s, alpha)) * (1 + 1e-12) + 1e-300


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: at.gradient_frobenius([]), ValueError, "s must not be empty"),
        (lambda: at.gradient_frobenius([1.0, np.nan]), ValueError, "s must be finite"),
        (lambda: at.gradient_frobenius([1.0, 2.0], alpha=-1.0), ValueError, "alpha must be >= 0"),
        (lambda: at.gradient_frobenius([1.0, 2.0], alpha="x"), TypeError, "alpha must be a real number"),
    ],
)
def test_frobenius_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_row_best_scale_two_routes_and_an_optimizer():
    from scipy.optimize import minimize_scalar

    rows = np.random.default_rng(5).standard_normal((40, 33)) * 1.7
    for norm, f in (("l1", at.gradient_objective), ("frobenius", at.gradient_frobenius)):
        golden = at.row_best_scale(rows, norm)
        root = at.row_best_scale(rows, norm, method="stationarity")
        np.testing.assert_allclose(golden, root, rtol=1e-6)
        bounded = [
            minimize_scalar(
                lambda a, r=r, f=f: -f(r, a),
                bounds=(0.8 * g, 1.25 * g),
                method="bounded",
                options={"xatol": 1e-12 * g},
            ).x
            for r, g in zip(rows, golden, strict=True)
        ]
        np.testing.assert_allclose(golden, bounded, rtol=1e-6)


def test_row_best_scale_two_keys_closed_form():
    # two keys at gap g: best scale u*/g with u tanh(u/2) = 1; both norms agree
    from scipy.optimize import brentq

    u_star = brentq(lambda u: u * np.tanh(u / 2) - 1, 0.5, 3.0, xtol=1e-14)
    gaps = np.array([0.01, 0.3, 1.0, 2.5])
    rows = np.column_stack([gaps, np.zeros_like(gaps)])
    np.testing.assert_allclose(at.row_best_scale(rows), u_star / gaps, rtol=1e-7)
    np.testing.assert_allclose(at.row_best_scale(rows, "frobenius"), u_star / gaps, rtol=1e-7)


def test_row_best_scale_tied_top_runs_to_the_grid_end():
    grid = np.geomspace(0.1, 1e3, 50)
    best = at.row_best_scale(np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 2.0]]), grid=grid)
    assert np.all(best > 0.9 * grid[-1])  # no finite maximizer: alpha (1 - 1/k) grows
    with pytest.raises(ValueError, match="norm"):
        at.row_best_scale(np.ones((2, 3)), norm="l2")


@pytest.mark.parametrize(
    "function",
    [at.softmax, at.softmax_jacobian, at.gradient_l1, at.collision_probability,
     at.gradient_objective, at.gradient_frobenius, at.renyi2_entropy, at.softmax_entropy],
)  # fmt: skip
def test_default_scale_is_one(function):
    # Each row function's default alpha is exactly 1: bit-equal to passing 1.0, and to the scale-free
    # closed form on two keys, p = (e / (e + 1), 1 / (e + 1)).  A default of 1 + 1e-4 moves each value
    # by about 1e-4 relative on this row, far outside rtol 1e-12.
    s = np.array([1.0, 0.0])
    assert np.array_equal(function(s), function(s, 1.0))
    if function is at.collision_probability:
        p = np.e / (np.e + 1.0)
        assert float(function(s)) == pytest.approx(p**2 + (1 - p) ** 2, rel=1e-12)
