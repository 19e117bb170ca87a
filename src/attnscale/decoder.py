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
from .cosine import _log_ratio_and_slope, cosine_alpha_star, cosine_objective
from .gaussian import gaussian_alpha_star, gaussian_objective

__all__ = ["best_causal_scale", "gradient_fraction"]

#: Positions summed term by term; beyond, the sum over positions is an integral.
EXACT_POSITIONS = 1024
#: Width in log n of one quadrature panel, and Gauss-Legendre nodes per panel.
_PANEL_WIDTH = 0.5
_PANEL_NODES = 12


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


class _Shares:
    r"""Sum over positions :math:`n = 2 \dots L` of :math:`\max(\rho(\alpha, n), 0)`, for any :math:`L`.

    Positions up to ``EXACT_POSITIONS`` are summed term by term.  Beyond,
    :math:`\rho(\alpha, x)` is a smooth function of a real :math:`x` whose
    sign changes once, at :math:`x_0(\alpha)` where the mean-field objective
    vanishes (:math:`e^{\alpha^2}` for Gaussian scores).  So the clipped sum
    over the tail is the plain sum over the integers :math:`m \dots L`,
    :math:`m = \max(N_0 + 1, \lceil x_0\rceil)`, and by the midpoint form of
    the Euler-Maclaurin formula

    .. math:: \sum_{n=m}^{L}\rho(n) = \int_{m-1/2}^{L+1/2}\rho(x)\,dx
              - \tfrac1{24}\bigl[\rho'(x)\bigr]_{m-1/2}^{L+1/2} + \dots,

    with :math:`\rho'` from central differences at the two ends; the next
    term, :math:`\tfrac{7}{5760}\rho'''`, is of order :math:`N_0^{-3}` and is
    left out.  The integral is taken in :math:`u = \log x` by Gauss-Legendre
    panels of width ``_PANEL_WIDTH``; only the panel holding :math:`m - 1/2`
    depends on :math:`\alpha`.  The best objective :math:`f(\alpha^*(x), x)`
    is computed once per fixed node.
    """

    def __init__(self, max_length, d):
        self.d = d
        self.length = float(max_length)
        last_exact = min(max_length, EXACT_POSITIONS)
        self.positions = np.arange(2, last_exact + 1, dtype=float)
        self.top_exact = self._top(self.positions)
        self.has_tail = max_length > EXACT_POSITIONS
        self.step = np.array([1.0 - 1e-4, 1.0 + 1e-4])  # relative steps of the central differences
        if self.has_tail:
            self.end = (self.length + 0.5) * self.step
            self.top_end = self._top(self.end)
            lo, hi = np.log(EXACT_POSITIONS + 0.5), np.log(self.length + 0.5)
            panels = max(1, int(np.ceil((hi - lo) / _PANEL_WIDTH)))
            self.edges = np.linspace(lo, hi, panels + 1)
            self.edges[-1] = hi
            self.gl_x, self.gl_w = np.polynomial.legendre.leggauss(_PANEL_NODES)
            self.u, self.w = self._panel_nodes(self.edges[:-1], self.edges[1:])
            self.x = np.exp(self.u)
            self.top_tail = self._top(self.x)

    def _star(self, n):
        return gaussian_alpha_star(n) if self.d is None else cosine_alpha_star(n, self.d)

    def _objective(self, alpha, n):
        return gaussian_objective(alpha, n) if self.d is None else cosine_objective(alpha, n, self.d)

    def _top(self, n):
        return self._objective(self._star(n), n)

    def _panel_nodes(self, a, b):
        """Nodes (in u) and weights (for dx = e^u du) of Gauss-Legendre on the panels [a, b]."""
        half, mid = 0.5 * (b - a), 0.5 * (b + a)
        u = mid[:, None] + half[:, None] * self.gl_x[None, :]
        w = half[:, None] * self.gl_w[None, :] * np.exp(u)
        return u.ravel(), w.ravel()

    def _zero(self, alpha):
        """log x_0: where the mean-field objective at alpha changes sign (positive beyond)."""
        if self.d is None:
            return alpha * alpha
        log_ratio, _ = _log_ratio_and_slope(np.asarray(alpha, dtype=float), self.d / 2.0 - 1.0)
        return float(log_ratio)

    def total(self, alpha):
        """The clipped sum over n = 2 .. L of the share kept at the fixed scale alpha."""
        exact = float(np.sum(np.maximum(self._objective(alpha, self.positions) / self.top_exact, 0.0)))
        if not self.has_tail:
            return exact
        log_zero = self._zero(alpha)
        first = EXACT_POSITIONS + 1.0
        if log_zero > np.log(first):
            if log_zero > np.log(self.length):
                return exact
            first = max(first, float(np.ceil(np.exp(log_zero))))
        if first > self.length:
            return exact
        start = np.log(first - 0.5)
        if first == EXACT_POSITIONS + 1.0:
            u, w, top = self.u, self.w, self.top_tail
        else:
            k = int(np.searchsorted(self.edges, start, side="right")) - 1
            k = min(max(k, 0), len(self.edges) - 2)
            keep = slice((k + 1) * _PANEL_NODES, None)
            u_k, w_k = self._panel_nodes(np.array([start]), np.array([self.edges[k + 1]]))
            x_k = np.exp(u_k)
            u = np.concatenate([u_k, self.u[keep]])
            w = np.concatenate([w_k, self.w[keep]])
            top = np.concatenate([self._top(x_k), self.top_tail[keep]])
        tail = float(np.sum(w * self._objective(alpha, np.exp(u)) / top))
        # the first Euler-Maclaurin correction, -(rho'(L + 1/2) - rho'(m - 1/2)) / 24
        start_x = (first - 0.5) * self.step
        rho_start = self._objective(alpha, start_x) / self._top(start_x)
        rho_end = self._objective(alpha, self.end) / self.top_end
        slopes = np.diff(rho_end) / np.diff(self.end) - np.diff(rho_start) / np.diff(start_x)
        return exact + tail - float(slopes[0]) / 24.0


def best_causal_scale(max_length, d=None):
    r"""The fixed scale that keeps the largest average share over positions :math:`n = 2 \dots L`.

    Criterion: maximize :math:`\frac{1}{L-1}\sum_{n=2}^{L} \max(\rho(\alpha, n), 0)`,
    every position weighted equally (each token's loss counts once), and a
    negative mean-field share counted as zero gradient.

    The first ``EXACT_POSITIONS`` (1024) positions are summed term by term;
    the rest of the sum is an integral over :math:`\log n` on a few hundred
    Gauss-Legendre nodes at most (:class:`_Shares` gives the derivation),
    so the cost and memory do not grow with :math:`L`: about a millisecond
    per evaluation of the average for any :math:`L` up to :math:`10^{300}`.
    Against term-by-term enumeration the average share agrees to about
    1e-10 relative (``tests/test_decoder_quadrature.py`` measures it).

    Parameters
    ----------
    max_length : int
        The longest sequence :math:`L`, ``>= 2``.
    d : float, optional
        Dimension for cosine scores, ``>= 2``; ``None`` for standard normal scores.

    Returns
    -------
    alpha : float
        The best fixed scale.
    n_equivalent : float
        The key count whose own optimum it is, :math:`\alpha = \alpha^*(n_{\mathrm{eq}})`.
    mean_share : float
        The average share it keeps.

    Raises
    ------
    TypeError
        If ``max_length`` is not an integer.
    ValueError
        If ``max_length < 2``, ``d`` is not a single number ``>= 2``, or (cosine
        scores) the optimum :math:`\alpha^*(L, d)` exceeds :math:`10^{300}`.
    """
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise TypeError(f"max_length must be an integer, got {type(max_length).__name__}")
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2, got {max_length}")
    if not np.isfinite(float(max_length)):
        raise ValueError(f"max_length must be finite as a float (<= 1e308), got {max_length:.3e}")
    if d is not None:
        d_array = _validate.dimension(d)
        if d_array.ndim != 0:
            raise ValueError(f"d must be a single number, got shape {d_array.shape}")
        d = float(d_array)
    max_length = int(max_length)
    shares = _Shares(max_length, d)

    def star(m):
        return gaussian_alpha_star(m) if d is None else cosine_alpha_star(m, d)

    def loss(log_n_ref):
        return -shares.total(float(star(np.exp(log_n_ref)))) / (max_length - 1)

    result = minimize_scalar(
        loss, bounds=(np.log(2.0), np.log(float(max_length))), method="bounded", options={"xatol": 1e-10}
    )
    n_equivalent = float(np.exp(result.x))
    return float(star(n_equivalent)), n_equivalent, -float(result.fun)
