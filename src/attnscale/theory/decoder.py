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

from ..support import _validate
from .cosine import _log_ratio_and_slope, cosine_alpha_star, cosine_objective
from .exact import expected_gradient, gradient_limit
from .gaussian import gaussian_alpha_star, gaussian_objective

__all__ = ["best_causal_scale", "exact_gradient_shares", "gradient_fraction"]

#: Positions summed term by term; beyond, the sum over positions is an integral.
EXACT_POSITIONS = 1024
#: The longest sequence :func:`exact_gradient_shares` returns every position of (three arrays of it).
MAX_SHARE_POSITIONS = 10**7
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

    See Also
    --------
    best_causal_scale : the fixed scale that keeps the most of it over positions.

    Examples
    --------
    >>> from attnscale import gaussian_alpha_star, gradient_fraction
    >>> float(gradient_fraction(gaussian_alpha_star(512), 512))
    1.0
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
    left out.  The integral is taken on the nodes of :class:`_Tail`.
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
            self.tail = _Tail(self.length, self._top, self.step)

    def _star(self, n):
        return gaussian_alpha_star(n) if self.d is None else cosine_alpha_star(n, self.d)

    def _objective(self, alpha, n):
        return gaussian_objective(alpha, n) if self.d is None else cosine_objective(alpha, n, self.d)

    def _top(self, n):
        return self._objective(self._star(n), n)

    def _zero(self, alpha):
        """log x_0: where the mean-field objective at alpha changes sign (positive beyond)."""
        if self.d is None:
            return alpha * alpha
        log_ratio, _ = _log_ratio_and_slope(np.asarray(alpha, dtype=float), self.d / 2.0 - 1.0)
        return float(log_ratio)

    def total(self, alpha):
        """The clipped sum over n = 2 .. L of the share kept at the fixed scale alpha."""
        log_zero = self._zero(alpha)
        # positions below the zero keep a negative share, clipped to 0: skip them (with a
        # margin of rounding, so that the clip still decides at the boundary)
        skip = int(np.searchsorted(self.positions, np.exp(min(log_zero, 710.0)) * (1.0 - 1e-9)))
        positions, top_exact = self.positions[skip:], self.top_exact[skip:]
        first = EXACT_POSITIONS + 1.0
        if log_zero > np.log(first):
            first = float(np.ceil(np.exp(log_zero))) if log_zero <= np.log(self.length) else np.inf
        if not self.has_tail or first > self.length:
            rho = self._objective(alpha, positions) / top_exact if positions.size else np.zeros(0)
            return float(np.sum(np.maximum(rho, 0.0)))
        start_x = (first - 0.5) * self.step
        u, w, top, top_start = self.tail.from_position(first, start_x)
        x = np.concatenate([positions, np.exp(u), start_x, self.end])
        rho = self._objective(alpha, x) / np.concatenate([top_exact, top, top_start, self.top_end])
        p, q = positions.size, positions.size + u.size
        exact = float(np.sum(np.maximum(rho[:p], 0.0)))
        tail = float(np.sum(w * rho[p:q]))
        # the first Euler-Maclaurin correction, -(rho'(L + 1/2) - rho'(m - 1/2)) / 24
        slope_start = (rho[q + 1] - rho[q]) / (start_x[1] - start_x[0])
        slope_end = (rho[q + 3] - rho[q + 2]) / (self.end[1] - self.end[0])
        return exact + tail - float(slope_end - slope_start) / 24.0

    def n_equivalent(self, alpha):
        r"""The key count whose own optimum is alpha, from the stationarity condition in closed form.

        Gaussian: :math:`n = (1 + 2\alpha^2)e^{\alpha^2}`; cosine:
        :math:`\log n = \log R + \log(1 + \alpha(\log R)')` (``attnscale.cosine_alpha_star``).
        """
        if self.d is None:
            return float(np.exp(alpha * alpha) * (1.0 + 2.0 * alpha * alpha))
        log_ratio, slope = _log_ratio_and_slope(np.asarray(alpha, dtype=float), self.d / 2.0 - 1.0)
        return float(np.exp(log_ratio + np.log1p(slope)))


class _Tail:
    r"""Gauss-Legendre nodes of the tail integral of :class:`_Shares`, in :math:`u = \log x`.

    Panels of width ``_PANEL_WIDTH`` (``_PANEL_NODES`` nodes each) cover
    :math:`[\log(N_0 + 1/2), \log(L + 1/2)]`; only the panel holding
    :math:`m - 1/2` depends on :math:`\alpha`.  The best objective ``top``
    (:math:`f(\alpha^*(x), x)`) is computed once per fixed node, and at the
    two points ``(N_0 + 1/2) * step`` of the central difference at the start.
    """

    def __init__(self, length, top, step):
        self.top = top
        lo, hi = np.log(EXACT_POSITIONS + 0.5), np.log(length + 0.5)
        panels = max(1, int(np.ceil((hi - lo) / _PANEL_WIDTH)))
        self.edges = np.linspace(lo, hi, panels + 1)
        self.edges[-1] = hi
        self.gl_x, self.gl_w = np.polynomial.legendre.leggauss(_PANEL_NODES)
        self.u, self.w = self._panel_nodes(self.edges[:-1], self.edges[1:])
        self.top_tail = top(np.exp(self.u))
        self.top_start = top((EXACT_POSITIONS + 0.5) * step)

    def _panel_nodes(self, a, b):
        """Nodes (in u) and weights (for dx = e^u du) of Gauss-Legendre on the panels [a, b]."""
        half, mid = 0.5 * (b - a), 0.5 * (b + a)
        u = mid[:, None] + half[:, None] * self.gl_x[None, :]
        w = half[:, None] * self.gl_w[None, :] * np.exp(u)
        return u.ravel(), w.ravel()

    def from_position(self, first, start_x):
        r"""Nodes, weights and best objectives of the integral from :math:`\log(m - 1/2)`, ``m = first``.

        Returns ``u, w, top, top_start``: the nodes, their weights, the best
        objective at each node and at the two points ``start_x`` of the
        central difference at :math:`m - 1/2`.  For ``first = N_0 + 1`` these
        are the fixed panels; otherwise the panel holding
        :math:`\log(m - 1/2)` starts there and the panels below it drop out.
        """
        if first == EXACT_POSITIONS + 1.0:
            return self.u, self.w, self.top_tail, self.top_start
        start = np.log(first - 0.5)
        k = int(np.searchsorted(self.edges, start, side="right")) - 1
        k = min(max(k, 0), len(self.edges) - 2)
        keep = slice((k + 1) * _PANEL_NODES, None)
        u_k, w_k = self._panel_nodes(np.array([start]), np.array([self.edges[k + 1]]))
        fresh = self.top(np.concatenate([np.exp(u_k), start_x]))
        u = np.concatenate([u_k, self.u[keep]])
        w = np.concatenate([w_k, self.w[keep]])
        top = np.concatenate([fresh[:-2], self.top_tail[keep]])
        return u, w, top, fresh[-2:]


def best_causal_scale(max_length, d=None):
    r"""The fixed scale that keeps the largest average share over positions :math:`n = 2 \dots L`.

    Criterion: maximize :math:`\frac{1}{L-1}\sum_{n=2}^{L} \max(\rho(\alpha, n), 0)`,
    every position weighted equally (each token's loss counts once), and a
    negative mean-field share counted as zero gradient.

    The first ``EXACT_POSITIONS`` (1024) positions are summed term by term;
    the rest of the sum is an integral over :math:`\log n` on Gauss-Legendre
    nodes (24 per factor :math:`e` of :math:`L`; ``_Shares`` gives the
    derivation), so time and memory hardly grow with :math:`L`.  Against
    term-by-term enumeration the average share agrees to about 1e-14
    relative at any fixed scale (``tests/test_decoder_quadrature.py``).  The
    search runs over :math:`\log\alpha` between :math:`\alpha^*(2)` and
    :math:`\alpha^*(L)` (bounded Brent); :math:`n_{\mathrm{eq}}` then follows
    from the stationarity condition in closed form.  The maximum is flat, and
    kinked where a position's share crosses zero, so the best scale is
    determined to about 1e-9 relative at :math:`L` of a few thousand but
    only to about 1e-4 at some larger :math:`L`, where nearby scales keep the
    same average to 1e-10.

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

    See Also
    --------
    gradient_fraction : the share kept at one position.

    Examples
    --------
    >>> from attnscale import best_causal_scale
    >>> alpha, n_equivalent, mean_share = best_causal_scale(2048)
    >>> round(alpha, 3), round(mean_share, 3)
    (1.996, 0.925)
    """
    max_length = _validate.count(max_length, "max_length", 2)
    if max_length > 10**308:
        raise ValueError(
            f"max_length must be finite as a float (<= 1e308), got about 1e{len(str(max_length)) - 1}"
        )
    if d is not None:
        d_array = _validate.dimension(d)
        if d_array.ndim != 0:
            raise ValueError(f"d must be a single number, got shape {d_array.shape}")
        d = float(d_array)
    max_length = int(max_length)
    shares = _Shares(max_length, d)
    star = (lambda m: gaussian_alpha_star(m)) if d is None else (lambda m: cosine_alpha_star(m, d))
    # search over log alpha between the optima for 2 and for L keys (as the old search over n_ref
    # did): alpha*(n) is increasing, and n_ref follows from alpha in closed form
    lo, hi = np.log(float(star(2.0))), np.log(float(star(float(max_length))))
    if hi - lo < 1e-12:
        alpha = float(np.exp(lo))
        return alpha, 2.0, shares.total(alpha) / (max_length - 1)
    result = minimize_scalar(
        lambda x: -shares.total(float(np.exp(x))) / (max_length - 1),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-11},
    )
    alpha = float(np.exp(result.x))
    n_equivalent = min(max(shares.n_equivalent(alpha), 2.0), float(max_length))
    return alpha, n_equivalent, -float(result.fun)


def exact_gradient_shares(alpha, max_length, nodes=24):
    r"""Share :math:`\kappa(\alpha, n) = g(\alpha, n) / g_\infty(n)` of the exact gradient's limit, n = 2..L.

    :math:`g(\alpha, n) = \mathbb E\,\alpha(1 - \sum_i p_i^2)` is the exact
    expected gradient of :math:`n` i.i.d. standard normal scores
    (:func:`attnscale.expected_gradient`) and :math:`g_\infty(n)` its limit as
    :math:`\alpha \to \infty` (:func:`attnscale.gradient_limit`).  It is
    computed exactly at ``nodes`` positions spaced geometrically from 2 to
    :math:`L` and interpolated linearly in :math:`\log n` in between.

    The interpolation's worst relative error, at the midpoints between
    nodes, is 4e-4 at :math:`\alpha = 1` and :math:`L = 4096` (the
    *Decoders* chapter's setting, which it checks off the nodes), and less
    at larger scales.  It grows at small scales and long sequences, to 8e-3
    at :math:`\alpha = 0.01` and :math:`L = 10^6`, at the first positions
    (:math:`n = 3` to 6).  Twice the ``nodes`` about halve it or better
    (``tests/test_decoder_quadrature.py``).  Memory grows with :math:`L`
    (three arrays of :math:`L` floats).

    Parameters
    ----------
    alpha : float
        The fixed scale, :math:`0 \le \alpha \le 1000`.
    max_length : int
        The longest sequence :math:`L`, :math:`2 \le L \le 10^7`.
    nodes : int, optional
        How many positions are computed exactly, ``>= 2`` (fewer where
        rounding to whole positions makes two coincide).

    Returns
    -------
    shares : numpy.ndarray
        :math:`\kappa(\alpha, n)` for :math:`n = 2, \dots, L`, in
        :math:`[0, 1)` (0 at :math:`\alpha = 0`).
    node_positions : numpy.ndarray
        The positions computed exactly.
    node_shares : numpy.ndarray
        :math:`\kappa` at them.

    Raises
    ------
    ValueError
        If ``alpha`` is negative or above 1000, ``max_length`` is below 2 or
        above :math:`10^7`, or ``nodes`` is below 2.
    TypeError
        If an argument is not a number (``max_length`` and ``nodes`` not an integer).

    Examples
    --------
    At :math:`\alpha = 1` a row of two keys keeps about 0.64 of the
    limit, and the share falls with the length:

    >>> import numpy as np
    >>> from attnscale import exact_gradient_shares
    >>> shares, _, _ = exact_gradient_shares(1.0, 4096)
    >>> round(float(shares[0]), 3), bool(np.all(np.diff(shares) < 0))
    (0.644, True)
    """
    alpha = _validate.nonnegative_number(alpha, "alpha")
    max_length = _validate.count(max_length, "max_length", 2)
    if max_length > MAX_SHARE_POSITIONS:
        raise ValueError(
            f"max_length must be <= {MAX_SHARE_POSITIONS:.0e} (the shares are an array over "
            f"every position), got {max_length}"
        )
    nodes = _validate.count(nodes, "nodes", 2)
    node_positions = np.unique(np.round(np.geomspace(2, max_length, nodes)))
    node_shares = expected_gradient(alpha, node_positions) / gradient_limit(node_positions)
    positions = np.arange(2, max_length + 1)
    shares = np.interp(np.log(positions), np.log(node_positions), node_shares)
    return shares, node_positions, node_shares
