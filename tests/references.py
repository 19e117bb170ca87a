"""Independent high-precision references (mpmath, 50 digits) for the tests.

Nothing here shares code with attnscale: the cosine moment generating
function comes from mpmath's hypergeometric series where that converges
quickly, and otherwise from tanh-sinh quadrature of the density itself.
"""

from __future__ import annotations

import functools
import itertools

import mpmath as mp

DPS = 50


def cosine_mgf_parts(d, alpha, dps=DPS):
    """(L, L - alpha, 1 - L') of the cosine score's log MGF, in mpmath."""
    if float(alpha) ** 2 / 4 <= 1e4:
        return _series_parts(d, alpha, dps)
    return _quadrature_parts(d, alpha, dps)


def _series_parts(d, alpha, dps):
    with mp.workdps(dps):
        a = mp.mpf(alpha)
        b = mp.mpf(d) / 2
        x = a * a / 4
        f0 = mp.hyp0f1(b, x)
        f1 = mp.hyp0f1(b + 1, x)
        log_mgf = mp.log(f0)
        return log_mgf, log_mgf - a, 1 - (a / (2 * b)) * f1 / f0


def _quadrature_parts(d, alpha, dps):
    """Integrate e^(a s) (1 - s^2)^((d-3)/2) over (-1, 1), split around its peak.

    The variable is t = 1 - s in (0, 2), with 1 - s^2 = t (2 - t), so that the
    quadrature nodes crowding at s = 1 (where the mass sits for large a) are
    represented exactly.
    """
    with mp.workdps(dps):
        a = mp.mpf(alpha)
        nu = mp.mpf(d) / 2 - 1
        e = nu - mp.mpf(1) / 2  # exponent of (1 - s^2)
        log_norm = -mp.log(mp.beta(mp.mpf(1) / 2, nu + mp.mpf(1) / 2))
        if e > 0:
            peak_s = (-(2 * e) + mp.sqrt((2 * e) ** 2 + 4 * a * a)) / (2 * a)
            peak_t = 1 - peak_s
            width = 1 / mp.sqrt(2 * e * (1 + peak_s**2) / (1 - peak_s**2) ** 2)
            marks = [peak_t + k * width for k in (-60, -20, -6, -2, 0, 2, 6, 20, 60)]
            peak = -a * peak_t + e * mp.log(peak_t * (2 - peak_t))
        else:  # the integrand increases up to s = 1, t = 0
            marks = [k / a for k in (1, 3, 10, 30, 100, 300)]
            peak = mp.mpf(0)
        points = sorted({mp.mpf(0), mp.mpf(2), *[m for m in marks if 0 < m < 2]})

        def weight(t):  # e^(a s) (1 - s^2)^e, divided by e^(a + peak)
            return mp.exp(-a * t + e * mp.log(t * (2 - t)) - peak)

        total = mp.quad(weight, points)
        upper = mp.quad(lambda t: t * weight(t), points)  # E[1 - s] without cancellation
        log_mgf = log_norm + a + peak + mp.log(total)
        return log_mgf, log_norm + peak + mp.log(total), upper / total


def cosine_condition(alpha, n, d):
    """log R + log(1 + a (log R)') - log n, whose root is alpha*(n, d)."""
    with mp.workdps(DPS):
        _, m1, c1 = cosine_mgf_parts(d, alpha)
        _, m2, c2 = cosine_mgf_parts(d, 2 * mp.mpf(alpha))
        return (m2 - 2 * m1) + mp.log1p(2 * mp.mpf(alpha) * (c1 - c2)) - mp.log(n)


def cosine_alpha_star(n, d, start):
    """Root of :func:`cosine_condition` by mpmath's secant method from ``start``."""
    with mp.workdps(DPS):
        return mp.findroot(
            lambda a: cosine_condition(a, n, d),
            (mp.mpf(start), mp.mpf(start) * (1 + 1e-6)),
            tol=mp.mpf(10) ** (-30),
        )


def cosine_objective(alpha, n, d):
    with mp.workdps(DPS):
        _, m1, _ = cosine_mgf_parts(d, alpha)
        _, m2, _ = cosine_mgf_parts(d, 2 * mp.mpf(alpha))
        return mp.mpf(alpha) * (1 - mp.exp(m2 - 2 * m1) / n)


def gaussian_alpha_star(n):
    """Root of d/da [a (1 - e^(a^2)/n)] = 0 by mpmath's root finder (no Lambert W)."""
    with mp.workdps(50):
        n = mp.mpf(n)
        return mp.findroot(lambda a: mp.log1p(2 * a * a) + a * a - mp.log(n), mp.sqrt(mp.log(n)))


# ---------------------------------------------------------------------------
# Exact expectations for n i.i.d. standard normal scores, by nested adaptive
# quadrature (scipy.integrate.quad, relative tolerance 1e-13 inside and 1e-12
# outside) of the Laplace identities, written without attnscale.  Each takes
# minutes, so the values are stored here; `python tests/references.py`
# recomputes and prints them.

NESTED_QUADRATURE = {
    # (alpha, n): {statistic: value}
    (0.7, 10): {
        "collision": 0.1465820231424071,
        "gradient": 0.5973925838003155,
        "entropy": 2.0992703043709917,
    },
    (2.0, 100): {
        "collision": 0.12626214874754563,
        "gradient": 1.7474757025049417,
        "entropy": 2.993729806019779,
    },
    (6.0, 1000): {"gradient": 3.1180240944685114, "entropy": 1.320425203321378},
}


def nested_quadrature(alpha, n, what):
    """E[sum p^2], E[alpha (1 - sum p^2)] or E[H] for n standard normal scores, by nested quad."""
    import numpy as np
    from scipy.integrate import quad

    def phi(s):
        return np.exp(-s * s / 2) / np.sqrt(2 * np.pi)

    def inner(tau, k):
        c = tau / alpha

        def g(s):
            w = alpha * s - tau
            y = np.exp(min(w, 700.0))
            kernel = (np.exp(-y), y * np.exp(-y), y * y * np.exp(-y), y * np.exp(-y) * (w + np.euler_gamma))
            return phi(s) * kernel[k]

        pts = [c - 40 / alpha, c, c + 5 / alpha]
        pieces = zip([-40.0, *pts], [*pts, 40.0], strict=True)
        return sum(quad(g, a, b, epsabs=0, epsrel=1e-13, limit=200)[0] for a, b in pieces if b > a)

    def outer(tau):
        F = inner(tau, 0)
        if what == "collision":
            return n * inner(tau, 2) * F ** (n - 1)
        if what == "gradient":
            return alpha * n * (n - 1) * inner(tau, 1) ** 2 * F ** (n - 2)
        return -n * inner(tau, 3) * F ** (n - 1)

    c = np.log(n) + 0.8 * alpha * np.sqrt(2 * np.log(n))
    pts = [c - 40 - 40 * alpha, c - 10, c, c + 10, c + 60 + 10 * alpha]
    return sum(quad(outer, a, b, epsabs=0, epsrel=1e-12, limit=400)[0] for a, b in itertools.pairwise(pts))


# ---------------------------------------------------------------------------
# Two keys: every statistic is an integral over the score difference u.


def two_key_references(alpha, difference_density, lower, upper, dps=DPS):
    """(E sum p^2, E alpha(1 - sum p^2), E H, E max p) for n = 2 by mpmath, from the score difference u."""
    with mp.workdps(dps):
        a = mp.mpf(alpha)

        def both(fun):  # integrate over u >= 0 and double (each statistic is even in u)
            return 2 * mp.quad(lambda u: difference_density(u) * fun(a * u), [0, min(1 / a, upper), upper])

        def weight(x):  # the larger weight, 1 / (1 + e^-x)
            return 1 / (1 + mp.exp(-x))

        collision = both(lambda x: weight(x) ** 2 + (1 - weight(x)) ** 2)
        spread = both(lambda x: 2 * weight(x) * (1 - weight(x)))
        entropy = both(lambda x: mp.log1p(mp.exp(-x)) + x * (1 - weight(x)))
        largest = both(weight)
        return [float(v) for v in (collision, a * spread, entropy, largest)]


def cosine_difference_density(d):
    """The density of c1 - c2 for two cosines in dimension d, by mpmath (a convolution: no closed form)."""
    half = mp.mpf(d - 3) / 2
    norm = mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)

    def f(c):
        return (1 - c * c) ** half / norm if abs(c) < 1 else mp.mpf(0)

    @functools.cache
    def g(u):
        return mp.quad(lambda c: f(c) * f(c - u), [u - 1, u / 2, 1])

    return g


#: Two cosine keys at non-integer d (and d = 6, whose ends looked soft):
#: ``two_key_references(alpha, cosine_difference_density(d), 0, 2, dps=20)``
#: (20 digits: enough, and four times faster than 50).  A nested quadrature
#: takes 2 to 4 s each on a quiet core (46 s of wall time in the loaded
#: suite), so they are stored; ``python tests/references.py`` recomputes
#: them.  Each comes with the tolerance the package meets (tests/test_exact.py).
TWO_COSINE_KEYS = {
    # (d, alpha): ([E sum p^2, E alpha (1 - sum p^2), E H, E max p], rtol)
    (2.5, 1.0): ([0.5767528577107115, 0.4232471422892884, 0.6116131215967657, 0.6644268696722905], 1e-12),
    (2.5, 30.0): ([0.9673774008382138, 0.9786779748535848, 0.053095073095600236, 0.9771539464411677], 2e-8),
    (3.3, 30.0): ([0.9666804002535836, 0.9995879923924917, 0.054644046211786035, 0.9768568569737428], 1e-9),
    (5.5, 30.0): ([0.9582050946850434, 1.2538471594486955, 0.06862948516140559, 0.9710029793225498], 1e-11),
    (6.0, 1e4): ([0.9998682503014988, 1.3174969850127702, 0.00021671956361859766, 0.999908678067119], 2e-9),
}

if __name__ == "__main__":
    for (d, alpha), (values, _rtol) in TWO_COSINE_KEYS.items():
        fresh = two_key_references(alpha, cosine_difference_density(d), 0, 2, dps=20)
        print(d, alpha, fresh, "stored" if fresh == values else f"stored: {values}")
    for (alpha, n), values in NESTED_QUADRATURE.items():
        for what in values:
            print(alpha, n, what, nested_quadrature(alpha, n, what))
