"""The Laplace step of entropy invariance (Chapter 7) against mpmath.

sphere_saddle_point and laplace_slope against the saddle point found by
mpmath root-finding on the exponent; sphere_entropy_slope against direct
numerical integration over the sphere's cosine density and against Bessel
functions, both in mpmath.
"""

import mpmath
import numpy as np
import pytest

import attnscale as at


def _sphere_slope_quad(lam, d):
    """-(H - log n)/(lam d) by mpmath quadrature of the cosine density."""
    with mpmath.workdps(30):
        lam, d = mpmath.mpf(lam), mpmath.mpf(d)
        kappa = lam * d

        # weight exp(kappa (t - 1)) keeps the integrands of order one
        def dens(t):
            return (1 - t * t) ** ((d - 3) / 2)

        norm = mpmath.quad(dens, [-1, 0, 1])
        m = mpmath.quad(lambda t: dens(t) * mpmath.exp(kappa * (t - 1)), [-1, 0, 1]) / norm
        m1 = mpmath.quad(lambda t: t * dens(t) * mpmath.exp(kappa * (t - 1)), [-1, 0, 1]) / norm
        log_m = mpmath.log(m) + kappa
        h = log_m - kappa * m1 / m
        return float(-h / kappa)


def _sphere_slope_bessel(lam, d):
    with mpmath.workdps(40):
        kappa = mpmath.mpf(lam) * d
        nu = mpmath.mpf(d) / 2 - 1
        log_m = mpmath.loggamma(nu + 1) + nu * mpmath.log(2 / kappa) + mpmath.log(mpmath.besseli(nu, kappa))
        ratio = mpmath.besseli(nu + 1, kappa) / mpmath.besseli(nu, kappa)
        return float(-(log_m - kappa * ratio) / kappa)


@pytest.mark.parametrize("lam", [1e-6, 0.01, 0.125, 0.5, 1.0, 2.0, 8.0, 100.0])
def test_saddle_point_and_laplace_slope_vs_mpmath(lam):
    with mpmath.workdps(40):
        lam_mp = mpmath.mpf(lam)
        # the exponent's derivative lam - t / (1 - t^2), root in (0, 1)
        t = mpmath.findroot(
            lambda t: lam_mp - t / (1 - t * t), (mpmath.mpf(0), 1 - mpmath.mpf(10) ** -30), solver="anderson"
        )
        slope = -mpmath.log(1 - t * t) / (2 * lam_mp)
    # abs=0: approx's default absolute 1e-12 would swamp a small lambda's tiny t and slope
    assert at.sphere_saddle_point(lam) == pytest.approx(float(t), rel=1e-13, abs=0)
    assert at.laplace_slope(lam) == pytest.approx(float(slope), rel=1e-12, abs=0)


def test_laplace_slope_known_values_and_limits():
    # c(1) = log(golden ratio) / 2, the source's 0.24
    assert at.laplace_slope(1.0) == pytest.approx(np.log((1 + np.sqrt(5)) / 2) / 2, rel=1e-14)
    assert at.laplace_slope(0.0) == 0.0
    # small lam: c ~ lam / 2, the Gaussian law alpha^2 / 2
    assert at.laplace_slope(1e-4) == pytest.approx(0.5e-4, rel=1e-7)
    np.testing.assert_array_equal(at.laplace_slope(np.array([[1.0, 0.0]])).shape, (1, 2))


@pytest.mark.parametrize("lam,d", [(0.125, 64), (1.0, 64), (1.0, 16), (0.05, 128), (3.0, 32), (0.02, 8)])
def test_sphere_entropy_slope_vs_quadrature_and_bessel(lam, d):
    got = float(at.sphere_entropy_slope(lam, d))
    assert got == pytest.approx(_sphere_slope_quad(lam, d), rel=1e-9)
    assert got == pytest.approx(_sphere_slope_bessel(lam, d), rel=1e-10)


def test_sphere_slope_tends_to_laplace_slope():
    lam = np.geomspace(1 / 64, 4, 30)
    err = [np.max(np.abs(at.sphere_entropy_slope(lam, d) / at.laplace_slope(lam) - 1)) for d in (16, 64, 256)]
    # the error of the Laplace step falls like 1/d: each factor 4 in d, about 4 in error
    assert err[0] > err[1] > err[2]
    assert 3 < err[0] / err[1] < 5 and 3 < err[1] / err[2] < 5


def test_sphere_slope_broadcasts():
    out = at.sphere_entropy_slope(np.array([0.1, 1.0])[:, None], np.array([16, 64, 256]))
    assert out.shape == (2, 3)
    assert np.isclose(out[1, 2], at.sphere_entropy_slope(1.0, 256))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: at.sphere_saddle_point(-1.0), "lam"),
        (lambda: at.laplace_slope(np.nan), "lam"),
        (lambda: at.sphere_entropy_slope(0.0, 64), "lam"),
        (lambda: at.sphere_entropy_slope(1.0, 1), "d"),
        (lambda: at.sphere_entropy_slope(100.0, 4096), "lam \\* d"),
    ],
)
def test_validation_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_type_errors_name_the_argument():
    with pytest.raises(TypeError, match="lam"):
        at.laplace_slope("1")
    with pytest.raises(TypeError, match="d"):
        at.sphere_entropy_slope(1.0, "64")
