r"""The gradient-maximizing scale for cosine scores (query-key normalization).

Chapter *Cosine scores*.  When queries and keys are unit vectors, a score
is the cosine :math:`s` of the angle between two independent uniform
directions in :math:`\mathbb R^d`, with density

.. math:: p_d(s) = \frac{(1 - s^2)^{(d-3)/2}}{B\!\left(\tfrac12, \tfrac{d-1}{2}\right)}, \qquad -1 < s < 1,

and moment generating function
:math:`g_d(\alpha) = {}_0F_1(;\tfrac d2;\tfrac{\alpha^2}{4})` (see
:mod:`attnscale.special`).  The mean-field gradient objective is

.. math:: f(\alpha, n, d) = \alpha\left(1 - \frac{g_d(2\alpha)}{n\, g_d(\alpha)^2}\right),

and :math:`\alpha^*(n, d)` is its maximizer.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln

from . import _validate
from ._roots import increasing_root
from .special import _parts

__all__ = ["cosine_alpha_star", "cosine_density", "cosine_log_mgf", "cosine_objective"]


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
        Accurate to about 1e-13 relative (see :mod:`attnscale.special`).

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
    """log R = L(2a) - 2 L(a) and a d(log R)/da = 2a (c(a) - c(2a)), without cancellation."""
    _, m1, c1 = _parts(nu, alpha)
    _, m2, c2 = _parts(nu, 2.0 * alpha)
    return m2 - 2.0 * m1, 2.0 * alpha * (c1 - c2)


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
        :math:`\log g_d - \alpha` (:func:`attnscale.special.cosine_log_mgf_parts`),
        so that it is accurate also for :math:`\alpha \gg d`, where both
        logarithms are close to :math:`\alpha` and :math:`2\alpha`.  Far
        beyond the maximizer the exact value can be below :math:`-1.8 \times 10^{308}`;
        it is then returned as ``-inf``, the correctly rounded float64 result.
    """
    alpha = _validate.scale(alpha)
    n = _validate.key_count(n)
    d = _validate.dimension(d)
    alpha, n, d = np.broadcast_arrays(alpha, n, d)
    log_ratio, _ = _log_ratio_and_slope(alpha, d / 2.0 - 1.0)
    with np.errstate(over="ignore"):
        return -alpha * np.expm1(log_ratio - np.log(n))


def cosine_alpha_star(n, d):
    r"""Maximizer :math:`\alpha^*(n, d)` of :func:`cosine_objective`.

    Solves the stationarity condition
    :math:`\frac{d}{d\alpha}\bigl[\alpha R(\alpha)\bigr] = n`, i.e.

    .. math:: \log R(\alpha) + \log\bigl(1 + \alpha\,(\log R)'(\alpha)\bigr) = \log n,
              \qquad R = g_d(2\alpha) / g_d(\alpha)^2,

    whose left side increases with :math:`\alpha`, by a vectorized bracketing
    root finder on :math:`\log\alpha` (Illinois), to about 1e-13 relative.

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
        Gaussian :math:`\alpha^*(n)`; for fixed :math:`d` it grows without
        bound as :math:`n^{2/(d-1)}` when :math:`n \to \infty`.
    """
    n = _validate.key_count(n)
    d = _validate.dimension(d)
    n, d = np.broadcast_arrays(n, d)
    shape = n.shape
    log_n = np.log(n).ravel()
    nu = (d / 2.0 - 1.0).ravel()

    def condition(log_alpha):
        log_ratio, slope = _log_ratio_and_slope(np.exp(log_alpha), nu)
        return log_ratio + np.log1p(slope) - log_n

    # At alpha -> 0 the condition tends to -log n < 0.  The root is at least
    # ~0.5 (n = 2); expand the upper end by factors of 4 until it is positive.
    lo = np.full(log_n.shape, np.log(0.05))
    hi = np.zeros(log_n.shape)
    positive = condition(hi) >= 0
    while not positive.all():
        if hi.max() > np.log(1e300):
            bad = ~positive
            raise ValueError(
                f"alpha*(n, d) exceeds 1e300 for n = {n.ravel()[bad][0]:g}, d = {d.ravel()[bad][0]:g} "
                "(for fixed d it grows like n^(2/(d-1)))"
            )
        lo = np.where(positive, lo, hi)
        hi = np.where(positive, hi, hi + np.log(4.0))
        positive = condition(hi) >= 0
    root = increasing_root(condition, lo, hi, rtol=1e-15)
    return np.exp(root).reshape(shape)
