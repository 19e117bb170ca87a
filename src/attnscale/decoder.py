r"""One fixed scale for every position of a causal (decoder) attention.

Chapter *Decoders*.  Position :math:`t` of a causal attention attends to
:math:`n = t` keys, so no single scale maximizes the gradient objective at
every position.  The share of the best achievable (mean-field) objective
that a scale :math:`\alpha` keeps at :math:`n` keys is

.. math:: \rho(\alpha, n) = \frac{f(\alpha, n)}{f(\alpha^*(n), n)},

with :math:`f` the Gaussian objective, or the cosine one when a dimension
:math:`d` is given.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from . import _validate
from .cosine import cosine_alpha_star, cosine_objective
from .gaussian import gaussian_alpha_star, gaussian_objective

__all__ = ["best_causal_scale", "gradient_fraction"]


def gradient_fraction(alpha, n, d=None):
    r"""Share :math:`f(\alpha, n) / f(\alpha^*(n), n)` of the best mean-field objective.

    Parameters
    ----------
    alpha : float or array_like
        Scale, ``>= 0``.
    n : float or array_like
        Number of keys, ``>= 2``; broadcasts against ``alpha``.
    d : float or array_like, optional
        Dimension for cosine scores; ``None`` (default) for standard normal scores.

    Returns
    -------
    numpy.ndarray or float
        At most 1, equal to 1 at :math:`\alpha = \alpha^*(n)`.  It is negative
        where the mean-field objective is (:math:`\alpha^2 > \log n` for
        Gaussian scores), which the exact objective never is: there the
        approximation has failed, see the chapter.
    """
    alpha = _validate.scale(alpha)
    n = _validate.key_count(n)
    if d is None:
        return gaussian_objective(alpha, n) / gaussian_objective(gaussian_alpha_star(n), n)
    d = _validate.dimension(d)
    return cosine_objective(alpha, n, d) / cosine_objective(cosine_alpha_star(n, d), n, d)


def best_causal_scale(max_length, d=None):
    r"""The fixed scale that keeps the largest average share over positions :math:`n = 2 \dots L`.

    Criterion: maximize :math:`\frac{1}{L-1}\sum_{n=2}^{L} \max(\rho(\alpha, n), 0)`,
    every position weighted equally (each token's loss counts once), and a
    negative mean-field share counted as zero gradient.

    Parameters
    ----------
    max_length : int
        The longest sequence :math:`L`, ``>= 2``.
    d : float, optional
        Dimension for cosine scores; ``None`` for standard normal scores.

    Returns
    -------
    alpha : float
        The best fixed scale.
    n_equivalent : float
        The key count whose own optimum it is, :math:`\alpha = \alpha^*(n_{\mathrm{eq}})`.
    mean_share : float
        The average share it keeps.
    """
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise TypeError(f"max_length must be an integer, got {type(max_length).__name__}")
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2, got {max_length}")
    positions = np.arange(2, max_length + 1, dtype=float)

    def star(m):
        return gaussian_alpha_star(m) if d is None else cosine_alpha_star(m, d)

    best = star(positions)
    if d is None:
        top = gaussian_objective(best, positions)
    else:
        top = cosine_objective(best, positions, d)

    def loss(log_n_ref):
        a = float(star(np.exp(log_n_ref)))
        values = gaussian_objective(a, positions) if d is None else cosine_objective(a, positions, d)
        return -float(np.mean(np.maximum(values / top, 0.0)))

    result = minimize_scalar(
        loss, bounds=(np.log(2.0), np.log(float(max_length))), method="bounded", options={"xatol": 1e-10}
    )
    n_equivalent = float(np.exp(result.x))
    return float(star(n_equivalent)), n_equivalent, -float(result.fun)
