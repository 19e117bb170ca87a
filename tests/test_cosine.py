"""The cosine alpha* solver (Newton on the analytic derivative) and the large-d correction.

References are mpmath at 60-70 digits, independent of attnscale: the tilted
variance L'' from the Bessel ratio I_{nu+1}/I_nu, the maximizer from
tests/references.py (secant method on the mpmath stationarity condition).
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
import references as ref
import sympy as sp

import attnscale as at
from attnscale.theory.cosine import _condition_and_slope
from attnscale.theory.special import _parts_with_variance


def _tilted_variance(d, alpha):
    """L''(alpha) = 1 - u^2 - (d - 1) u / alpha with u = I_{d/2}(alpha) / I_{d/2-1}(alpha)."""
    with mp.workdps(70):
        nu, a = mp.mpf(d) / 2 - 1, mp.mpf(alpha)
        u = mp.besseli(nu + 1, a, maxterms=10**6) / mp.besseli(nu, a, maxterms=10**6)
        return 1 - u * u - (2 * nu + 1) * u / a


def test_riccati_equation_of_the_mgf():
    """g = 0F1(; d/2; a^2/4) solves g'' + (d - 1) g'/a - g = 0, term by term in the series."""
    a, d = sp.symbols("alpha d", positive=True)
    k = sp.Symbol("k", integer=True, nonnegative=True)
    term = (a**2 / 4) ** k / (sp.rf(d / 2, k) * sp.factorial(k))
    nxt = term.subs(k, k + 1)
    # coefficient of a^(2k) in g'' + (d-1) g'/a is (2k+2)(2k+1+d-1) t_{k+1} / a^2-weight; it equals t_k
    lhs = sp.diff(nxt, a, 2) + (d - 1) * sp.diff(nxt, a) / a
    assert sp.simplify(sp.gammasimp((lhs / term).rewrite(sp.gamma))) == 1
    # and L'' = g''/g - (g'/g)^2 then gives L'' = 1 - L'^2 - (d - 1) L'/a
    g = sp.Function("g")(a)
    L2 = sp.diff(sp.log(g), a, 2)
    ode = {sp.diff(g, a, 2): g - (d - 1) * sp.diff(g, a) / a}
    L1 = sp.diff(sp.log(g), a)
    assert sp.simplify(L2.subs(ode) - (1 - L1**2 - (d - 1) * L1 / a)) == 0


@pytest.mark.parametrize("d", [2, 3, 8, 128, 4096, 65536])
@pytest.mark.parametrize("alpha", [1e-3, 0.5, 17.0, 99.9, 100.1, 250.0, 1e3, 1e4, 1e7, 1e12])
def test_tilted_variance_against_mpmath(d, alpha):
    if d == 65536 and alpha >= 1e7:
        pytest.skip("mpmath's Bessel series is too slow there")
    v = float(_parts_with_variance(d / 2 - 1, alpha)[3])
    # the series region uses the Riccati form (cancellation ~ alpha or d): 1e-10 suffices for Newton
    assert v == pytest.approx(float(_tilted_variance(d, alpha)), rel=1e-10, abs=0)  # v ~ 1/alpha^2 is tiny


def test_series_truncation_leaves_a_negligible_tail():
    """24 + 2 sqrt(x) terms of the 0F1 series: the next terms are below 1e-19 of the sum."""
    k = np.arange(1, 600, dtype=float)
    for b in (1.0, 1.5, 2.0, 10.0, 65.0):
        for x in np.geomspace(1e-3, 2500, 40):
            log_terms = np.cumsum(np.log(x / ((b + k - 1) * k)))
            log_sum = np.log1p(np.exp(log_terms).sum())
            count = int(np.clip(24 + 2 * np.sqrt(x), 24, 124))
            assert np.exp(log_terms[count:] - log_sum).sum() < 1e-19


def test_condition_slope_is_the_derivative():
    """dF/dx against a central difference of F (x = log alpha), over regions of both methods."""
    x = np.log(np.array([0.3, 5.0, 40.0, 150.0, 3e3, 1e6]))
    for d in (2.0, 16.0, 128.0, 4096.0):
        nu = np.full(x.shape, d / 2 - 1)
        _, slope = _condition_and_slope(x, nu, np.zeros_like(x))
        h = 1e-5
        up, _ = _condition_and_slope(x + h, nu, np.zeros_like(x))
        down, _ = _condition_and_slope(x - h, nu, np.zeros_like(x))
        np.testing.assert_allclose(slope, (up - down) / (2 * h), rtol=1e-7)


@pytest.mark.parametrize(
    ("n", "d"), [(2, 2), (2, 3), (3, 65536), (40, 16), (20000, 16), (1e9, 2), (1e30, 8), (7.5, 1000.5)]
)
def test_newton_solver_against_mpmath(n, d):
    star = float(at.cosine_alpha_star(n, d))
    assert star == pytest.approx(float(ref.cosine_alpha_star(n, d, start=star)), rel=1e-12)


def test_solver_refuses_a_root_beyond_1e300():
    with pytest.raises(ValueError, match="exceeds 1e300"):
        at.cosine_alpha_star(1e200, 2)


def test_solver_on_a_mixed_grid_matches_pointwise_calls():
    n = np.geomspace(2, 1e15, 23)[:, None]
    d = np.array([2, 3, 5.5, 64, 1000, 65536])
    grid = at.cosine_alpha_star(n, d)
    for i in (0, 7, 22):
        for j in range(d.size):
            assert grid[i, j] == pytest.approx(float(at.cosine_alpha_star(n[i, 0], d[j])), rel=1e-14)


# -- the large-d correction -------------------------------------------------------


def test_large_d_coefficient_from_the_expansion():
    """beta_1 solves the first-order term of the expanded stationarity condition (SymPy)."""
    b0, b1, eps = sp.symbols("beta0 beta1 epsilon", positive=True)
    beta = b0 + eps * b1
    log_r = beta**2 - sp.Rational(7, 2) * beta**4 * eps  # L(2b) - 2L(b), L = b^2/2 - eps b^4/4
    condition = log_r + sp.log(1 + beta * sp.diff(log_r, b1) / eps)
    first = sp.series(condition, eps, 0, 2).removeO().coeff(eps, 1)
    claimed = 7 * b0**3 * (2 * b0**2 + 5) / (4 * (2 * b0**2 + 3))
    assert sp.simplify(first.subs(b1, claimed)) == 0


@pytest.mark.parametrize("n", [40, 512, 20000, 1e6])
def test_large_d_error_falls_like_one_over_d_squared(n):
    d = np.array([1024.0, 4096.0, 16384.0])
    exact = at.cosine_alpha_star(n, d)
    corrected = np.abs(at.cosine_alpha_star_large_d(n, d) / exact - 1)
    plain = np.abs(np.sqrt(d) * at.gaussian_alpha_star(n) / exact - 1)
    slope_corrected = np.polyfit(np.log(d), np.log(corrected), 1)[0]
    slope_plain = np.polyfit(np.log(d), np.log(plain), 1)[0]
    assert slope_plain == pytest.approx(-1.0, abs=0.05)
    assert slope_corrected == pytest.approx(-2.0, abs=0.15)


def test_large_d_validates_its_arguments():
    with pytest.raises(ValueError, match="n"):
        at.cosine_alpha_star_large_d(1.0, 128)
    with pytest.raises(ValueError, match="d"):
        at.cosine_alpha_star_large_d(64, 1.0)


@pytest.mark.parametrize(("n", "d"), [(2, 1e308), (1e308, 1e308), (2, 1e14), (2, 2e15), (1e300, 65536)])
def test_solver_is_finite_and_quiet_at_the_ends_of_the_domain(n, d):
    """No RuntimeWarning (pytest turns them into errors); beyond d = 1e15 the expansion is used."""
    star = float(at.cosine_alpha_star(n, d))
    assert np.isfinite(star) and star > 0
    if d > 1e15:
        assert star == float(at.cosine_alpha_star_large_d(n, d))
    else:
        assert star == pytest.approx(float(at.cosine_alpha_star_large_d(n, d)), rel=1e-9 if d > 1e6 else 0.5)
