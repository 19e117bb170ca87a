r"""The gradient-maximizing scale for Gaussian scores (mean-field).

Chapter *Gaussian scores*.  For scores :math:`s_i \sim \mathcal N(0, 1)`
the moment generating function is :math:`\mathbb E[e^{\alpha s}] = e^{\alpha^2/2}`,
and replacing the two sums in :math:`\sum_i p_i^2` by their expectations
(the mean-field approximation) turns the gradient objective
:math:`\alpha(1 - \sum_i p_i^2)` into

.. math:: f(\alpha, n) = \alpha\,\bigl(1 - e^{\alpha^2}/n\bigr).

Its maximizer has the closed form

.. math:: \alpha^*(n) = \sqrt{W\!\left(\tfrac{\sqrt{e}}{2}\, n\right) - \tfrac12},

with :math:`W` the principal branch of the Lambert W function.
"""

from __future__ import annotations

import numpy as np
from scipy.special import lambertw

from ..support import _validate

__all__ = ["gaussian_alpha_star", "gaussian_log_mgf", "gaussian_objective"]


def gaussian_log_mgf(alpha):
    r"""Log moment generating function of a standard normal score, :math:`\alpha^2/2`.

    Parameters
    ----------
    alpha : float or array_like
        Scale, finite and ``>= 0``.

    Returns
    -------
    numpy.ndarray or float
        :math:`\log \mathbb E[e^{\alpha s}] = \alpha^2 / 2` for :math:`s \sim \mathcal N(0, 1)`.

    See Also
    --------
    cosine_log_mgf : the same for cosine scores.
    gaussian_objective : the objective built from it.

    Examples
    --------
    >>> from attnscale import gaussian_log_mgf
    >>> gaussian_log_mgf([0.0, 1.0, 2.0]).tolist()
    [0.0, 0.5, 2.0]
    """
    alpha = _validate.scale(alpha)
    return 0.5 * alpha * alpha


def gaussian_objective(alpha, n):
    r"""Mean-field gradient objective for standard normal scores, :math:`\alpha(1 - e^{\alpha^2}/n)`.

    Parameters
    ----------
    alpha : float or array_like
        Scale, finite and ``>= 0``.
    n : float or array_like
        Number of keys, ``>= 2``; broadcasts against ``alpha``.

    Returns
    -------
    numpy.ndarray or float
        The objective, computed as :math:`-\alpha\,\mathrm{expm1}(\alpha^2 - \log n)`
        so that it keeps its relative accuracy near its zero at
        :math:`\alpha = \sqrt{\log n}`.  Where the exact value is below
        :math:`-1.8 \times 10^{308}` (about :math:`\alpha^2 > 709 + \log n`) it is
        returned as ``-inf``, the correctly rounded float64 result.

    See Also
    --------
    gaussian_alpha_star : its maximizer.
    expected_gradient : the exact expectation it approximates.
    cosine_objective : the same for cosine scores.

    Notes
    -----
    The objective is positive for :math:`\alpha^2 < \log n` and negative
    beyond, where the mean-field approximation no longer describes
    :math:`\sum_i p_i^2 \le 1`; see the chapter for where it holds.

    Examples
    --------
    >>> from attnscale import gaussian_alpha_star, gaussian_objective
    >>> best = gaussian_alpha_star(64)
    >>> bool(gaussian_objective(best, 64) > gaussian_objective([0.8 * best, 1.2 * best], 64).max())
    True
    """
    alpha = _validate.scale(alpha)
    n = _validate.key_count(n)
    exponent = alpha * alpha - np.log(n)
    with np.errstate(over="ignore"):
        return -alpha * np.expm1(exponent)


def gaussian_alpha_star(n):
    r"""Maximizer of :func:`gaussian_objective` in closed form.

    .. math:: \alpha^*(n) = \sqrt{W\!\left(\tfrac{\sqrt{e}}{2}\,n\right) - \tfrac12}

    It solves the stationarity condition :math:`(1 + 2\alpha^2)\, e^{\alpha^2} = n`.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2`` (real values allowed); vectorized.

    Returns
    -------
    numpy.ndarray or float
        :math:`\alpha^*(n) > 0`; for large :math:`n`,
        :math:`\alpha^{*2} = \log n - \log\log n - \log 2 + o(1)`.

    See Also
    --------
    gaussian_objective : the objective it maximizes.
    cosine_alpha_star : the same for cosine scores.
    typical_row_scales : the maximizers of a typical row, by sampling.

    Examples
    --------
    >>> from attnscale import gaussian_alpha_star
    >>> round(float(gaussian_alpha_star(512)), 6)
    2.008395
    """
    n = _validate.key_count(n)
    w = lambertw(0.5 * np.sqrt(np.e) * n).real
    return np.sqrt(w - 0.5)
