r"""The gradient-maximizing scale for cosine scores (query-key normalization).

Chapter *Cosine scores*.  When queries and keys are unit vectors, a score
is the cosine :math:`s` of the angle between two independent uniform
directions in :math:`\mathbb R^d`, with density

.. math:: p_d(s) = \frac{(1 - s^2)^{(d-3)/2}}{B\!\left(\tfrac12, \tfrac{d-1}{2}\right)}, \qquad -1 < s < 1,

and moment generating function
:math:`g_d(\alpha) = {}_0F_1(;\tfrac d2;\tfrac{\alpha^2}{4})` (see
:mod:`attnscale.theory.special`).  The mean-field gradient objective is

.. math:: f(\alpha, n, d) = \alpha\left(1 - \frac{g_d(2\alpha)}{n\, g_d(\alpha)^2}\right),

and :math:`\alpha^*(n, d)` is its maximizer.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln

from ..support import _validate
from .gaussian import gaussian_alpha_star
from .special import _log_ratio, _mean_gap, _parts, _parts_with_variance

__all__ = [
    "cosine_alpha_star",
    "cosine_alpha_star_large_d",
    "cosine_density",
    "cosine_log_mgf",
    "cosine_objective",
]


def cosine_density(s, d):
    r"""Density of the cosine between two independent uniform directions in :math:`\mathbb R^d`.

    .. math:: p_d(s) = (1 - s^2)^{(d-3)/2} \big/ B\!\left(\tfrac12, \tfrac{d-1}{2}\right)

    Parameters
    ----------
    s : float or array_like
        Cosine values in :math:`[-1, 1]`.
    d : float or array_like
        Dimension, ``>= 2``; broadcasts against ``s``.

    Returns
    -------
    numpy.ndarray or float
        The density; at :math:`s = \pm 1` its limit: ``inf`` for :math:`d < 3`,
        :math:`1/2` for :math:`d = 3` and 0 for :math:`d > 3`.  Computed in log
        space, so it does not overflow for :math:`d` up to :math:`10^6`.

    See Also
    --------
    cosine_law : the same law, for the exact expectations.
    sample_cosine_scores : samples from it.

    Examples
    --------
    >>> from attnscale import cosine_density
    >>> round(float(cosine_density(1.0, 3)), 12)  # uniform on [-1, 1] for d = 3
    0.5
    """
    s = _validate.real_array(s, "s")
    if np.any(np.abs(s) > 1):
        raise ValueError(f"s must lie in [-1, 1], got {s[np.abs(s) > 1].flat[0]:g}")
    d = _validate.dimension(d)
    exponent = 0.5 * (d - 3.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_kernel = np.where(exponent == 0, 0.0, exponent * np.log1p(-s * s))
        return np.exp(log_kernel - betaln(0.5, 0.5 * (d - 1.0)))


def cosine_log_mgf(alpha, d):
    r"""Log moment generating function of a cosine score, :math:`\log g_d(\alpha)`.

    .. math::

       \log g_d(\alpha) = \log \mathbb E\,e^{\alpha s}
       = \log {}_0F_1\!\left(;\tfrac d2;\tfrac{\alpha^2}{4}\right)
       = \log\bigl[\Gamma(\tfrac d2)\,(\tfrac 2\alpha)^{d/2-1} I_{d/2-1}(\alpha)\bigr]

    Parameters
    ----------
    alpha : float or array_like
        Scale, finite and ``>= 0``.
    d : float or array_like
        Dimension, finite and ``>= 2``; broadcasts against ``alpha``.

    Returns
    -------
    numpy.ndarray or float
        Finite for all finite inputs; about :math:`\alpha^2/(2d)` for
        :math:`\alpha \ll \sqrt d` (returned with full relative accuracy) and
        :math:`\alpha - \frac{d-1}{2}\log\alpha + O(1)` for :math:`\alpha \gg d`.
        Accurate to about 1e-13 relative (see :mod:`attnscale.theory.special`).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import cosine_log_mgf
    >>> bool(np.isclose(cosine_log_mgf(2.0, 3), np.log(np.sinh(2.0) / 2.0)))  # uniform on [-1, 1]
    True
    """
    alpha = _validate.scale(alpha)
    d = _validate.dimension(d)
    log_mgf, _, _ = _parts(d / 2.0 - 1.0, alpha)
    return log_mgf


def _log_ratio_and_slope(alpha, nu):
    """log R = L(2a) - 2 L(a) and a d(log R)/da = 2a (L'(2a) - L'(a)), without cancellation."""
    l1, m1, c1, _, mean1 = _parts_with_variance(nu, alpha)
    l2, m2, c2, _, mean2 = _parts_with_variance(nu, 2.0 * alpha)
    return _log_ratio(alpha, l1, m1, l2, m2), 2.0 * alpha * _mean_gap(c1, mean1, c2, mean2)


def cosine_objective(alpha, n, d):
    r"""Mean-field gradient objective for cosine scores, :math:`\alpha(1 - g_d(2\alpha)/(n g_d(\alpha)^2))`.

    Parameters
    ----------
    alpha : float or array_like
        Scale, finite and ``>= 0``.
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Dimension, ``>= 2``.  The three arguments broadcast together.

    Returns
    -------
    numpy.ndarray or float
        The objective, computed as :math:`-\alpha\,\mathrm{expm1}(\log R - \log n)`
        with :math:`\log R = \log g_d(2\alpha) - 2\log g_d(\alpha)` formed from
        :math:`\log g_d - \alpha` (:func:`attnscale.theory.special.cosine_log_mgf_parts`),
        so that it is accurate also for :math:`\alpha \gg d`, where both
        logarithms are close to :math:`\alpha` and :math:`2\alpha`.  Far
        beyond the maximizer the exact value can be below :math:`-1.8 \times 10^{308}`;
        it is then returned as ``-inf``, the correctly rounded float64 result.

    See Also
    --------
    cosine_alpha_star : its maximizer.
    gaussian_objective : the same for standard normal scores.

    Examples
    --------
    >>> from attnscale import cosine_objective
    >>> round(float(cosine_objective(1.0, 64, 64)), 4)
    0.9841
    """
    alpha = _validate.scale(alpha)
    n = _validate.key_count(n)
    d = _validate.dimension(d)
    alpha, n, d = np.broadcast_arrays(alpha, n, d)
    log_ratio, _ = _log_ratio_and_slope(alpha, d / 2.0 - 1.0)
    with np.errstate(over="ignore"):
        return -alpha * np.expm1(log_ratio - np.log(n))


def _condition_and_slope(log_alpha, nu, log_n):
    r"""The stationarity condition :math:`F` and its derivative in :math:`x = \log\alpha`.

    .. math::

       F &= \log R + \log(1 + S) - \log n, \qquad S = \alpha(\log R)' = 2\alpha(c_1 - c_2),\\
       \frac{dF}{dx} &= \alpha\Bigl[2(c_1 - c_2) + \frac{S'}{1 + S}\Bigr], \qquad
       S' = 2(c_1 - c_2) - 2\alpha\,(v_1 - 2 v_2),

    with :math:`c_1 = 1 - L'(\alpha)`, :math:`c_2 = 1 - L'(2\alpha)` and
    :math:`v_1 = L''(\alpha)`, :math:`v_2 = L''(2\alpha)` in closed form
    (:func:`attnscale.theory.special._parts_with_variance`).
    """
    alpha = np.exp(log_alpha)
    l1, m1, c1, v1, mean1 = _parts_with_variance(nu, alpha)
    l2, m2, c2, v2, mean2 = _parts_with_variance(nu, 2.0 * alpha)
    gap = _mean_gap(c1, mean1, c2, mean2)
    slope = 2.0 * alpha * gap
    value = _log_ratio(alpha, l1, m1, l2, m2) + np.log1p(slope) - log_n
    dslope = 2.0 * gap - 2.0 * alpha * (v1 - 2.0 * v2)
    return value, alpha * (2.0 * gap + dslope / (1.0 + slope))


_LOG_ALPHA_MAX = np.log(1e300)


def cosine_alpha_star(n, d):
    r"""Maximizer :math:`\alpha^*(n, d)` of :func:`cosine_objective`.

    Solves the stationarity condition
    :math:`\frac{d}{d\alpha}\bigl[\alpha R(\alpha)\bigr] = n`, i.e.

    .. math:: F(\alpha) = \log R(\alpha) + \log\bigl(1 + \alpha\,(\log R)'(\alpha)\bigr) - \log n = 0,
              \qquad R = g_d(2\alpha) / g_d(\alpha)^2,

    whose left side increases with :math:`\alpha`, by safeguarded Newton
    steps in :math:`x = \log\alpha`.  The derivative :math:`dF/dx` is
    analytic: it needs :math:`L''`, the variance of the tilted score, which
    the Riccati equation of the Bessel function gives in closed form,
    :math:`L'' = 1 - L'^2 - (d - 1)L'/\alpha` (DLMF 10.29.1, see
    :mod:`attnscale.theory.special`).  The iteration starts from the Gaussian
    limit :math:`\sqrt d\,\alpha^*_{\mathrm{gauss}}(n)` and keeps a bracket
    of the root: a step that leaves the bracket is replaced by bisection.
    Converges in about four to six steps, each two evaluations of the
    moment generating function; accurate to about 1e-13 relative.  For
    :math:`d > 10^{15}` it returns :func:`cosine_alpha_star_large_d`, whose
    error :math:`O(d^{-2})` is then below rounding.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Dimension, ``>= 2``; broadcasts against ``n`` like a ufunc.

    Returns
    -------
    numpy.ndarray or float
        :math:`\alpha^*`, shape ``np.broadcast(n, d).shape``.  For large
        :math:`d` at fixed :math:`n`, :math:`\alpha^*/\sqrt d` tends to the
        Gaussian :math:`\alpha^*(n)` (:func:`cosine_alpha_star_large_d` adds
        the first correction); for fixed :math:`d` it grows without bound as
        :math:`n^{2/(d-1)}` when :math:`n \to \infty`.

    Raises
    ------
    ValueError
        If :math:`\alpha^*` exceeds :math:`10^{300}` (huge :math:`n` at small :math:`d`).

    See Also
    --------
    cosine_objective : the objective it maximizes.
    cosine_alpha_star_large_d : its expansion for large :math:`d`.
    gaussian_alpha_star : the same for standard normal scores.

    Examples
    --------
    >>> from attnscale import cosine_alpha_star
    >>> round(float(cosine_alpha_star(64, 64)), 4)
    13.4244
    """
    n = _validate.key_count(n)
    d = _validate.dimension(d)
    n, d = np.broadcast_arrays(n, d)
    shape = n.shape
    log_n = np.log(n).ravel()
    nu = (d / 2.0 - 1.0).ravel()
    # Beyond d = 1e15 the large-d expansion is exact to rounding (its error is O(1/d^2)).
    huge = nu > 0.5e15
    expansion = cosine_alpha_star_large_d(np.exp(log_n), np.where(huge, 2.0 * nu + 2.0, 2.0))
    x = np.where(huge, 0.0, np.log(np.sqrt(2.0 * nu + 2.0) * gaussian_alpha_star(np.exp(log_n))))
    lo = np.full(x.shape, -np.inf)  # F(lo) < 0 once finite
    hi = np.full(x.shape, np.inf)  # F(hi) >= 0 once finite
    active = np.flatnonzero(~huge)
    for _ in range(100):
        if active.size == 0:
            break
        xa, nua, lna = x[active], nu[active], log_n[active]
        value, slope = _condition_and_slope(xa, nua, lna)
        below = value < 0
        lo[active] = np.where(below, np.maximum(lo[active], xa), lo[active])
        hi[active] = np.where(below, hi[active], np.minimum(hi[active], xa))
        too_big = below & (xa >= _LOG_ALPHA_MAX)
        if np.any(too_big):
            k = active[too_big][0]
            raise ValueError(
                f"alpha*(n, d) exceeds 1e300 for n = {n.ravel()[k]:g}, d = {d.ravel()[k]:g} "
                "(for fixed d it grows like n^(2/(d-1)))"
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            step = -value / slope
        # at most a factor e^8 per step; the largest scale tried is 1e300
        step = np.clip(np.where(np.isfinite(step) & (slope > 0), step, np.where(below, 8.0, -8.0)), -8.0, 8.0)
        proposal = np.minimum(xa + step, _LOG_ALPHA_MAX)
        la, ha = lo[active], hi[active]
        outside = (proposal < la) | (proposal > ha)
        bounded = np.isfinite(la) & np.isfinite(ha)
        proposal = np.where(outside & bounded, 0.5 * (la + ha), proposal)
        width = np.abs(proposal - xa)
        x[active] = proposal
        # A Newton step of size h leaves an error of order h^2: stop after a
        # step below 1e-9 (or when the bracket is narrower than rounding).
        done = (value == 0) | ((width < 1e-9) & ~outside) | (bounded & (ha - la < 4e-16 * np.abs(ha)))
        active = active[~done]
    else:
        raise ArithmeticError("cosine_alpha_star: Newton iteration did not converge")  # pragma: no cover
    return np.where(huge, expansion, np.exp(x)).reshape(shape)


def cosine_alpha_star_large_d(n, d):
    r"""Large-:math:`d` approximation of :math:`\alpha^*(n, d)` with its first correction.

    At fixed :math:`\beta = \alpha/\sqrt d`,
    :math:`\log g_d(\beta\sqrt d) = \beta^2/2 - \beta^4/(4d) + O(d^{-2})`, so the
    stationarity condition becomes

    .. math::

       \beta^2 - \frac{7\beta^4}{2d} + \log\Bigl(1 + 2\beta^2 - \frac{14\beta^4}{d}\Bigr)
       = \log n + O(d^{-2})

    and

    .. math::

       \frac{\alpha^*(n, d)}{\sqrt d} = \beta_0 + \frac{\beta_1}{d} + O(d^{-2}),
       \qquad \beta_1 = \frac{7\beta_0^3\,(2\beta_0^2 + 5)}{4\,(2\beta_0^2 + 3)},

    with :math:`\beta_0 = \alpha^*_{\mathrm{gauss}}(n)` (:func:`attnscale.gaussian_alpha_star`).
    Derived in the chapter *Cosine scores* (section on large :math:`d`).

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Dimension, ``>= 2``; broadcasts against ``n``.

    Returns
    -------
    numpy.ndarray or float
        :math:`\sqrt d\,(\beta_0 + \beta_1/d)`.  Its relative error falls like
        :math:`1/d^2`, about 1e-3 at :math:`d = 128` for :math:`n \le 20000`,
        against :math:`1/d` for the uncorrected :math:`\sqrt d\,\beta_0`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import cosine_alpha_star, cosine_alpha_star_large_d
    >>> bool(np.isclose(cosine_alpha_star_large_d(512, 4096), cosine_alpha_star(512, 4096), rtol=1e-5))
    True
    """
    n = _validate.key_count(n)
    d = _validate.dimension(d)
    beta0 = gaussian_alpha_star(n)
    b2 = beta0 * beta0
    beta1 = 7.0 * b2 * beta0 * (2.0 * b2 + 5.0) / (4.0 * (2.0 * b2 + 3.0))
    return np.sqrt(d) * (beta0 + beta1 / d)
