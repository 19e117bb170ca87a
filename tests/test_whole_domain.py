"""Every row function over its whole domain, against mpmath at 40 digits.

The rows a head meets: diffuse (ten to twenty thousand keys, weights within
a fraction of a percent of 1/n), peaked (one weight within 1e-12 of 1),
underflowing (most weights below the smallest double), and tied at the top.
Each quantity is computed a second time from its definition in mpmath, and
the two routes must agree to 1e-9 relative: a fault of 1e-4 (or the 0.1%
that a misplaced floor in the Frobenius norm's square root makes on a
diffuse row) is far outside it.
"""

from __future__ import annotations

import functools

import mpmath
import numpy as np
import pytest

from attnscale import (
    collision_probability,
    gradient_frobenius,
    gradient_l1,
    gradient_objective,
    renyi2_entropy,
    softmax,
    softmax_entropy,
)

RTOL = 1e-9


def _rows():
    rng = np.random.default_rng(20261205)
    gaussian = rng.standard_normal(20_000)
    peaked = np.concatenate([[6.0], rng.standard_normal(999)])
    tied = np.concatenate([[3.0, 3.0], rng.standard_normal(998)])
    return {
        "diffuse 2e4 keys, alpha 1e-3": (gaussian, 1e-3),
        "diffuse 2e4 keys, alpha 0.1": (gaussian, 0.1),
        "diffuse 1e4 keys, alpha 1": (gaussian[:10_000], 1.0),
        "peaked, top within 1e-12 of 1": (peaked, 8.0),
        "underflowing weights, alpha 400": (peaked, 400.0),
        "tied top, alpha 50": (tied, 50.0),
        "two keys, alpha 1e-8": (np.array([0.3, -0.2]), 1e-8),
    }


ROWS = _rows()


def _exact(s, alpha):
    """The row's quantities from their definitions, at 40 significant digits."""
    with mpmath.workdps(40):
        alpha = mpmath.mpf(float(alpha))
        top = max(float(x) for x in s)
        z = [alpha * (mpmath.mpf(float(x)) - top) for x in s]
        total = mpmath.fsum(mpmath.exp(v) for v in z)
        log_total = mpmath.log(total)
        p = [mpmath.exp(v - log_total) for v in z]
        s2 = mpmath.fsum(q**2 for q in p)
        s4 = mpmath.fsum(q**4 for q in p)
        diagonal = mpmath.fsum((q * (1 - q)) ** 2 for q in p)
        return {
            "p": np.array([float(q) for q in p]),
            "collision": float(s2),
            "l1": float(alpha * mpmath.fsum(q * (1 - q) for q in p)),
            # ||J||_F^2 / alpha^2 = sum_i p_i^2 (1 - p_i)^2 + sum_i p_i^2 sum_{j != i} p_j^2
            "frobenius": float(alpha * mpmath.sqrt(diagonal + s2**2 - s4)),
            "renyi2": float(-mpmath.log(s2)),
            "entropy": float(-mpmath.fsum(q * (v - log_total) for q, v in zip(p, z, strict=True))),
        }


@functools.cache
def exact_row(name: str) -> dict:
    """``_exact`` of the row ``name``, once per process: computed when a test asks (40 digits over
    2e4 keys take seconds), not when the file is collected on every worker."""
    return _exact(*ROWS[name])


@pytest.mark.parametrize("name", list(ROWS))
def test_weights(name):
    s, alpha = ROWS[name]
    want = exact_row(name)["p"]
    got = softmax(s, alpha)
    # relative on every weight a double can hold; underflowed ones are 0 in both routes
    held = want > 1e-300
    assert np.allclose(got[held], want[held], rtol=RTOL, atol=0)
    assert np.all(got[~held] == 0.0)


@pytest.mark.parametrize("name", list(ROWS))
@pytest.mark.parametrize(
    ("quantity", "function"),
    [
        ("collision", collision_probability),
        ("l1", gradient_l1),
        ("l1", gradient_objective),
        ("frobenius", gradient_frobenius),
        ("renyi2", renyi2_entropy),
        ("entropy", softmax_entropy),
    ],
)
def test_row_quantity(name, quantity, function):
    s, alpha = ROWS[name]
    if function is gradient_l1 and s.size > 2_000:
        s = s[:2_000]  # gradient_l1 forms the n x n Jacobian: a shorter row of the same law
        want = _exact(s, alpha)[quantity]
    else:
        want = exact_row(name)[quantity]
    got = float(function(s, alpha))
    assert got == pytest.approx(want, rel=RTOL, abs=0), (name, quantity, got, want)


# -- the exact expectations over i.i.d. Gaussian scores, in the same regimes ------------------------

#: E[sum p^2], E[alpha (1 - sum p^2)] and E[H] by nested quadrature (tests/references.py's
#: ``nested_quadrature``, an independent route: scipy.quad over the density of the row's sum).
#: It fails on near-uniform rows (alpha = 0.05 at 2e4 keys: 20% off, with quad's warnings), where
#: the mean-field limit below serves instead; at alpha = 12 it cannot form E[sum p^2].
NESTED = {
    (0.3, 10_000): {"collision": 0.00010941620390289278, "gradient": 0.29996717513913357,
                    "entropy": 9.165345510755511},
    (1.0, 100_000): {"collision": 2.718074676021116e-05, "gradient": 0.9999728192624207,
                     "entropy": 11.012944054617911},
    (12.0, 1000): {"gradient": 3.2175489897217013, "entropy": 0.5391876112403915},
}  # fmt: skip


@pytest.mark.parametrize(("alpha", "n", "what"), [(a, n, w) for (a, n), v in NESTED.items() for w in v])
def test_expectations_against_nested_quadrature(alpha, n, what):
    from attnscale import expected_collision, expected_entropy, expected_gradient

    function = {"collision": expected_collision, "gradient": expected_gradient, "entropy": expected_entropy}
    assert float(function[what](alpha, n)) == pytest.approx(NESTED[(alpha, n)][what], rel=RTOL)


def test_near_uniform_expectations_approach_the_mean_field():
    # For n keys and a small scale the row's sum concentrates: E[sum p^2] = e^{alpha^2}/n and
    # E[H] = log n - alpha^2/2, each up to a relative O((e^{alpha^2} - 1)/n), 1.3e-7 here.
    from attnscale import expected_collision, expected_entropy

    alpha, n = 0.05, 20_000
    assert float(expected_collision(alpha, n)) == pytest.approx(np.exp(alpha**2) / n, rel=1e-6)
    assert float(expected_entropy(alpha, n)) == pytest.approx(np.log(n) - alpha**2 / 2, rel=1e-6)


@pytest.mark.parametrize("n", [2, 4096, 1e9])
@pytest.mark.parametrize(("scores", "d"), [("gaussian", None), ("cosine", 2.5), ("cosine", 128.0)])
def test_near_uniform_expectations_stay_in_their_ranges(scores, d, n):
    # At alpha of 1e-9 to 1e-6 a row is uniform to within 1e-12.  The quadrature's rounding
    # (about 1e-13 relative) used to put E[H] above log n (n = 4096), and E[sum p^2] and
    # E[max p] below 1/n: outside the ranges their docstrings promise.  The second route is the
    # small-scale expansion (unit variance, no skew): log n - E[H] = alpha^2 (n - 1) / (2n) and
    # E[sum p^2] - 1/n = alpha^2 (n - 1) / n^2.  Near alpha = 0 the quadrature's E[H] is biased by
    # 1e-13 to 4e-12 nats (the most near n = 4e8; at the n here, up to 4e-13), so the routes are
    # held to 1e-12 relative: this checks the values and the ranges, not the alpha^2 term.
    from attnscale import expected_collision, expected_entropy, expected_max_weight

    alpha = np.array([1e-9, 1e-7, 1e-6])
    entropy = expected_entropy(alpha, n, scores, d)
    collision = expected_collision(alpha, n, scores, d)
    largest = expected_max_weight(alpha, n, scores, d)
    assert np.all(entropy <= np.log(n)) and np.all(collision >= 1 / n) and np.all(largest >= 1 / n)
    expansion_h = np.log(n) - alpha**2 * (n - 1) / (2 * n)
    expansion_c = 1 / n + alpha**2 * (n - 1) / n**2
    np.testing.assert_allclose(entropy, expansion_h, rtol=1e-12)
    np.testing.assert_allclose(collision, expansion_c, rtol=1e-12)
