r"""Exact finite-:math:`n` expectations of softmax statistics for i.i.d. scores.

Chapter *Gaussian scores*, section *Exact expectations*.  For scores
:math:`s_1, \dots, s_n` drawn independently from one law with density
:math:`f`, the expectations of :math:`\sum_i p_i^2`, of the gradient size
:math:`\alpha(1 - \sum_i p_i^2)`, of the Shannon entropy and of the largest
weight of :math:`p = \operatorname{softmax}(\alpha s)` are one- or
two-dimensional integrals over the law of a *single* score, not
:math:`n`-dimensional ones.

The route (the book's Theorem *exact-expectations*): with :math:`y_i = e^{\alpha
s_i - \tau}` and :math:`t = e^{-\tau}`, the Laplace identities
:math:`1/Z = \int_0^\infty e^{-tZ}\,dt`, :math:`1/Z^2 = \int_0^\infty t\,e^{-tZ}\,dt`
and :math:`Z^{-1}\log Z = -\int_0^\infty (\log t + \gamma)\,e^{-tZ}\,dt`
factorize over the keys.  Every factor is an expectation over one score
against a kernel of :math:`w = \alpha s - \tau`; with :math:`G` a standard
Gumbel variable they are the law of :math:`V = \alpha s + G` (the Gumbel-max
view of softmax):

.. math::

   F_V(\tau) = \mathbb E\,e^{-y}, \quad f_V(\tau) = \mathbb E\,y e^{-y},
   \quad \chi(\tau) = \mathbb E\,y^2 e^{-y},
   \quad \eta(\tau) = \mathbb E\,y(\log y + \gamma) e^{-y},

and

.. math::

   \mathbb E\sum_i p_i^2 = n\!\int\!\chi F_V^{\,n-1}\,d\tau, \qquad
   \mathbb E\,\alpha\Bigl(1 - \sum_i p_i^2\Bigr) = \alpha\, n(n-1)\!\int\! f_V^2 F_V^{\,n-2}\,d\tau,

.. math::

   \mathbb E\,H(p) = -n\!\int\!\eta\, F_V^{\,n-1}\,d\tau, \qquad
   \mathbb E\max_i p_i = n\!\int\!\!\int f(s)\, y e^{-y}\,
   \Phi(\tau, s)^{n-1}\,ds\,d\tau,

with :math:`\Phi(\tau, s) = \mathbb E[e^{-y}\,\mathbf 1\{s' < s\}]`.  As
:math:`\alpha \to \infty` the expected gradient tends to
:math:`n(n-1)\int f^2 F^{n-2}\,ds`, the density at 0 of the gap between the
two largest scores (:func:`gradient_limit`).

Numerics.  The inner expectations use composite Gauss--Legendre panels in a
smooth variable of the law (the score itself for the normal law,
:math:`\arcsin s` for cosine scores), refined per :math:`\tau` by panels
placed on the kernel's own scale in :math:`w`; the outer integral uses
panels placed where the integrand lives, found from a coarse pass.  Powers
:math:`F_V^{n-1}` are formed as :math:`\exp((n-1)\,\mathrm{log1p}(-S_V))`
from the survival function :math:`S_V = \mathbb E[1 - e^{-y}]`, which is
computed directly (no cancellation), so :math:`n` can reach :math:`10^9`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.special import betainc, betaincinv, log_ndtr, ndtri, poch

from ..support import _validate

__all__ = [
    "ScoreLaw",
    "cosine_law",
    "expected_collision",
    "expected_entropy",
    "expected_gradient",
    "expected_max_weight",
    "gaussian_law",
    "gradient_limit",
]

EULER_GAMMA = 0.5772156649015329

# Gauss-Legendre nodes on [-1, 1] for every panel.
_P = 8
_XI, _WXI = np.polynomial.legendre.leggauss(_P)


def _right_cumulative_matrix(xi):
    """R[j, k] = integral from xi_j to 1 of the k-th Lagrange basis polynomial on the nodes xi."""
    p = len(xi)
    vander = np.polynomial.legendre.legvander(xi, p - 1)  # values of P_0..P_{p-1} at the nodes
    coeffs = np.linalg.inv(vander)  # column k: Legendre coefficients of the k-th Lagrange polynomial
    # antiderivative of P_m from x to 1: (P_{m+1} - P_{m-1})(1) - (...)(x) over (2m+1); use legint.
    out = np.empty((p, p))
    for k in range(p):
        anti = np.polynomial.legendre.legint(coeffs[:, k])
        out[:, k] = np.polynomial.legendre.legval(1.0, anti) - np.polynomial.legendre.legval(xi, anti)
    return out


_RCUM = _right_cumulative_matrix(_XI)

#: Where a law with graded ends splits the panel next to each end, as
#: fractions of its panel width from that end (ScoreLaw.graded_ends): a
#: geometric mesh integrates a power z^a for any a >= 0.  Ratio 0.5: the
#: expectations of two cosine keys at d = 2.5 and alpha = 30 come within
#: 1e-8 of mpmath's (ratio 0.3 left 1e-7, equal panels 5e-5); twenty levels
#: leave a last panel of 1e-6 of the width, whose mass is below that.
_END_GRADING = 0.5 ** np.arange(20, 0, -1)

# Breakpoints of the kernels in w = alpha s - tau.  Left of -46 every kernel
# but the survival kernel is below e^-46 of its peak; right of 5 all are
# below exp(-e^5).  Panels are finest where exp(w - e^w) turns.
_W_EDGES = np.array(
    [
        -46,
        -38,
        -31,
        -25,
        -20,
        -16,
        -12.5,
        -9.5,
        -7,
        -5,
        -3.5,
        -2.4,
        -1.5,
        -0.75,
        0,
        0.6,
        1.2,
        1.8,
        2.5,
        3.4,
        5.0,
    ]
)


@dataclass(frozen=True)
class ScoreLaw:
    r"""The law of one attention score, for the exact expectations.

    A law is given through a smooth, increasing change of variable
    :math:`s = \sigma(z)` in which its density has no endpoint singularity
    (the identity on the real line; an angle for cosine scores, in which
    the density is smooth at the ends for integer :math:`d`; see
    ``graded_ends`` for the others).  Softmax
    does not change when every score is shifted by one constant, so
    :math:`s` may be the score minus any fixed reference (cosine scores use
    :math:`s - 1`, which keeps the top of the support resolved in floating
    point when :math:`n` is huge).

    Parameters
    ----------
    name : str
        A label for messages.
    log_density_z : callable
        ``z -> log(f(sigma(z)) * sigma'(z))``, vectorized: the log density of
        :math:`z`, finite inside ``z_range``.
    to_score, to_z : callable
        ``z -> sigma(z)`` (increasing) and its inverse ``s -> z``.
    z_range : (float, float)
        Where the density of :math:`z` is not negligible (below about
        :math:`10^{-45}` of its peak outside).
    panels : int
        Equal Gauss-Legendre panels (8 nodes each) over ``z_range`` that
        resolve the density.
    score_slope : callable, optional
        ``z -> sigma'(z)``; 1 if omitted.
    log_sf : callable, optional
        ``s -> log P(S > s)``; computed by quadrature if omitted.
    isf : callable, optional
        ``p -> s`` with ``P(S > s) = p``; computed by bisection if omitted.
    infinite_gap_density : bool
        True when the density is so large at the top of the support that
        :math:`\int f^2 F^{n-2}` diverges (then :func:`gradient_limit` is
        ``inf``).
    graded_ends : bool
        True when the density of :math:`z` behaves like a non-integer power
        of the distance to an end of ``z_range`` (the cosine law at a
        non-integer :math:`d < 10`): Gauss-Legendre panels of equal width
        converge slowly on such a panel, so the panels next to each end are
        split geometrically toward it (twenty levels, ratio 0.5).
    rough_ends : bool
        True when the density of :math:`s` is not smooth at the ends of the
        support, or its mass there is not negligible for a frozen head, even
        where the density is small (the cosine law below :math:`d = 10`,
        :math:`|s|^{(d-3)/2}` at the top): both ends then count as hard
        (:attr:`hard_ends`), so that the expectations integrate in :math:`z`
        next to them, with the outer integral resolved there, not on panels
        in :math:`s` fixed by the kernel alone.

    Notes
    -----
    Long because it is one frozen dataclass: twelve documented fields, the
    checks that a law integrates to 1, and four short methods (the panels'
    mass above a point, the survival function, its inverse, the hard ends),
    none over 20 lines.

    See Also
    --------
    gaussian_law, cosine_law : the two laws the book uses.

    Examples
    --------
    A reader's own law: uniform scores on [-1, 1].

    >>> import numpy as np
    >>> from attnscale import ScoreLaw, expected_collision
    >>> law = ScoreLaw("uniform", lambda z: np.full(np.shape(z), -np.log(2.0)),
    ...                lambda z: z, lambda s: s, (-1.0, 1.0), panels=8)
    >>> round(float(expected_collision(0.5, 10, scores=law)), 10) > 0.1
    True
    """

    name: str
    log_density_z: Callable
    to_score: Callable
    to_z: Callable
    z_range: tuple
    panels: int = 40
    score_slope: Callable | None = None
    log_sf: Callable | None = None
    isf: Callable | None = None
    infinite_gap_density: bool = False
    graded_ends: bool = False
    rough_ends: bool = False
    _edges: np.ndarray = field(init=False, repr=False, compare=False)
    _panel_width: float = field(init=False, repr=False, compare=False)
    _end_points: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        for attr in ("log_density_z", "to_score", "to_z"):
            if not callable(getattr(self, attr)):
                raise TypeError(f"{attr} must be callable")
        lo, hi = _checked_z_range(self.z_range)
        if isinstance(self.panels, bool) or not isinstance(self.panels, (int, np.integer)) or self.panels < 1:
            raise ValueError(f"panels must be a positive integer, got {self.panels!r}")
        width, ends, edges = _panel_grid(lo, hi, int(self.panels), self.graded_ends)
        object.__setattr__(self, "_panel_width", width)
        object.__setattr__(self, "_end_points", ends)
        object.__setattr__(self, "_edges", edges)
        s_lo, s_hi = (float(self.to_score(v)) for v in (lo, hi))
        if not s_lo < s_hi:
            raise ValueError("to_score must be increasing on z_range")
        # the whole mass, not clipped to 1 (a clipped total hides a density
        # that integrates to more than 1)
        total = self._mass_above(np.array([lo]), clip=False)[0]
        if not abs(total - 1.0) < 1e-9:
            raise ValueError(f"the density of law {self.name!r} integrates to {total!r} over z_range, not 1")

    @functools.cached_property
    def hard_ends(self):
        """Ends of the support where the density of s is not negligible (an edge there), or rough."""
        if self.rough_ends:
            return self.score_range
        span = self._edges[-1] - self._edges[0]
        inside = np.array([self._edges[0] + 1e-6 * span, self._edges[-1] - 1e-6 * span])
        with np.errstate(divide="ignore", under="ignore", invalid="ignore"):
            f = np.exp(self.log_density_z(inside)) / self.slope(inside)
        peak = np.max(np.exp(self.log_density_z(np.linspace(self._edges[0], self._edges[-1], 257)[1:-1])))
        ends = self.score_range
        return tuple(ends[i] for i in (0, 1) if not f[i] < 1e-12 * peak)

    @functools.cached_property
    def score_range(self):
        """The scores at the two ends of ``z_range``."""
        return float(self.to_score(self._edges[0])), float(self.to_score(self._edges[-1]))

    def slope(self, z):
        return np.ones_like(z) if self.score_slope is None else self.score_slope(z)

    def _mass_above(self, z, clip=True):
        """P(Z > z) by Gauss-Legendre on ``panels`` equal pieces of [z, z_hi] (graded: the law's panels)."""
        z = np.asarray(z, dtype=float)
        if self.graded_ends:
            edges = np.maximum(self._edges[None, :], z.reshape(-1, 1))  # panels below z have no width
        else:
            frac = np.arange(int(self.panels) + 1) / int(self.panels)
            edges = z.reshape(-1, 1) + (self._edges[-1] - z.reshape(-1, 1)) * frac
        half = 0.5 * np.diff(edges, axis=1)
        nodes = 0.5 * (edges[:, :-1] + edges[:, 1:])[..., None] + half[..., None] * _XI
        with np.errstate(under="ignore"):
            mass = np.sum(np.exp(self.log_density_z(nodes)) * half[..., None] * _WXI, axis=(1, 2))
        return (np.clip(mass, 0.0, 1.0) if clip else mass).reshape(z.shape)

    def survival(self, s):
        """P(S > s), from ``log_sf`` or by quadrature."""
        s = np.asarray(s, dtype=float)
        s_lo, s_hi = self.score_range
        if self.log_sf is not None:
            with np.errstate(divide="ignore", under="ignore"):
                return np.where(s >= s_hi, 0.0, np.exp(self.log_sf(np.minimum(s, s_hi))))
        return self._mass_above(self.to_z(np.clip(s, s_lo, s_hi)))

    def inverse_survival(self, p):
        """The score s with P(S > s) = p (p in (0, 1)), from ``isf`` or by bisection in z."""
        p = np.asarray(p, dtype=float)
        if self.isf is not None:
            return np.clip(self.isf(p), *self.score_range)
        lo = np.full(p.shape, self._edges[0])
        hi = np.full(p.shape, self._edges[-1])
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            above = self._mass_above(mid) > p
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        return self.to_score(0.5 * (lo + hi))


def _checked_z_range(z_range):
    """``z_range`` of a :class:`ScoreLaw` as two floats ``lo < hi``, both finite."""
    try:
        lo, hi = (float(v) for v in z_range)
    except (TypeError, ValueError):
        raise TypeError(f"z_range must be two real numbers, got {z_range!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"z_range must be a finite interval (lo < hi), got {z_range!r}")
    return lo, hi


def _panel_grid(lo, hi, panels, graded_ends):
    """A :class:`ScoreLaw`'s panels on ``[lo, hi]``: their width, the graded end points, all edges.

    ``panels`` equal panels; with ``graded_ends``, the panel next to each end
    is split geometrically toward it (``_END_GRADING``).
    """
    width = (hi - lo) / panels
    # the geometric grading toward each end (empty without graded_ends)
    inner = width * _END_GRADING if graded_ends else np.empty(0)
    ends = np.concatenate([lo + inner, hi - inner[::-1]])
    return width, ends, np.unique(np.r_[np.linspace(lo, hi, panels + 1), ends])


def gaussian_law() -> ScoreLaw:
    r"""Standard normal scores, :math:`f(s) = e^{-s^2/2}/\sqrt{2\pi}` (the model of Part II).

    See Also
    --------
    cosine_law : the other law the book uses.
    ScoreLaw : the methods of a law.

    Examples
    --------
    The law behind ``scores="gaussian"``, with its survival function and inverse:

    >>> from attnscale import expected_entropy, gaussian_law
    >>> law = gaussian_law()
    >>> law.name, float(law.survival(0.0)), round(float(law.inverse_survival(0.025)), 4)
    ('gaussian', 0.5, 1.96)
    >>> bool(expected_entropy(1.0, 64, scores=law) == expected_entropy(1.0, 64))
    True
    """
    return _GAUSSIAN


def _gaussian_log_density(z):
    return -0.5 * z * z - 0.5 * np.log(2.0 * np.pi)


_GAUSSIAN = ScoreLaw(
    "gaussian",
    _gaussian_log_density,
    lambda z: z,
    lambda s: s,
    (-14.5, 14.5),
    panels=29,
    log_sf=lambda s: log_ndtr(-np.asarray(s)),
    isf=lambda p: -ndtri(p),
)

_COSINE_CACHE: dict = {}


#: Below this d the cosine law's ends need care (ScoreLaw.graded_ends and
#: rough_ends): E[H] of two keys at alpha = 1e4 was 1.5e-4 off at d = 5.2 and
#: 1.4e-7 at d = 7 on panels in s, and is within 6e-10 of mpmath now; at
#: d = 12 it is 2e-10 without them.
_ROUGH_BELOW = 10.0


def cosine_law(d) -> ScoreLaw:
    r"""The cosine of two independent uniform directions in :math:`\mathbb R^d`, shifted by -1.

    The cosine :math:`c` has density :math:`(1 - c^2)^{(d-3)/2} / B(\tfrac12,
    \tfrac{d-1}{2})` on :math:`(-1, 1)`.  The law returned is that of
    :math:`s = c - 1 = -2\sin^2(z/2)` with the angle :math:`z = -\arccos c \in
    (-\pi, 0)`, whose density :math:`|\sin z|^{d-2} / B(\tfrac12, \tfrac{d-1}{2})`
    is smooth up to both ends; the shift changes no softmax statistic and
    keeps scores next to the top of the support distinct in floating point.

    Parameters
    ----------
    d : float
        Dimension, ``>= 2``.

    See Also
    --------
    gaussian_law : the other law the book uses.
    cosine_density : the density of the cosine itself.

    Examples
    --------
    For :math:`d = 3` the cosine is uniform on :math:`[-1, 1]`, so the
    shifted score is uniform on :math:`[-2, 0]`:

    >>> from attnscale import cosine_law
    >>> law = cosine_law(3)
    >>> law.name, [round(float(law.survival(s)), 10) for s in (-1.5, -1.0, -0.5)]
    ('cosine(d=3)', [0.75, 0.5, 0.25])
    """
    d = float(_validate.dimension(d, "d"))
    if d in _COSINE_CACHE:
        return _COSINE_CACHE[d]
    # B(1/2, a) = sqrt(pi) Gamma(a) / Gamma(a + 1/2); scipy's betaln loses
    # digits for large a (5e-10 at d = 7.5e5), the Pochhammer ratio stays
    # within 2e-11 of mpmath up to d = 1e7
    log_norm = 0.5 * np.log(np.pi) - np.log(poch(0.5 * (d - 1.0), 0.5))
    half_width = min(0.5 * np.pi, 14.5 / np.sqrt(max(d - 2.0, 1e-300)))
    a = 0.5 * (d - 1.0)

    def log_density_z(z):
        if d == 2.0:
            return np.zeros(np.shape(z)) - log_norm
        # |sin z| = cos(z + pi/2) = 1 - 2 sin^2((z + pi/2)/2): log1p keeps the
        # digits of log|sin z| near z = -pi/2, where the density of a large d
        # lives (log of the rounded |sin z| moved it by 1e-10 per node at
        # d = 1e6, times d - 2)
        with np.errstate(divide="ignore"):
            return (d - 2.0) * np.log1p(-2.0 * np.sin(0.5 * (z + 0.5 * np.pi)) ** 2) - log_norm

    def log_sf(s):
        # P(c - 1 > s) = P(c > 1 + s) = I_{-s/2}(a, a)
        with np.errstate(divide="ignore"):
            return np.log(betainc(a, a, np.clip(-0.5 * np.asarray(s), 0.0, 1.0)))

    law = ScoreLaw(
        f"cosine(d={d:g})",
        log_density_z,
        lambda z: -2.0 * np.sin(0.5 * z) ** 2,
        lambda s: -2.0 * np.arcsin(np.sqrt(np.clip(-0.5 * np.asarray(s), 0.0, 1.0))),
        (-0.5 * np.pi - half_width, -0.5 * np.pi + half_width),
        panels=48 if half_width == 0.5 * np.pi else 40,
        score_slope=lambda z: np.abs(np.sin(z)),
        log_sf=log_sf,
        isf=lambda p: -2.0 * betaincinv(a, a, p),
        infinite_gap_density=d < 2.0 + 1e-12,
        # |sin z|^(d-2) at both ends: analytic for integer d only; above
        # d = 10 the power is so small there that no grading is needed
        graded_ends=d < _ROUGH_BELOW and d != round(d),
        # the density of s goes like |s|^((d-3)/2) at the top
        rough_ends=d < _ROUGH_BELOW,
    )
    if len(_COSINE_CACHE) < 256:
        _COSINE_CACHE[d] = law
    return law


def _resolve_law(scores, d):
    if isinstance(scores, ScoreLaw):
        if d is not None:
            raise ValueError("d is only used with scores='cosine'; a ScoreLaw carries its own parameters")
        return scores
    if not isinstance(scores, str):
        raise TypeError(f"scores must be 'gaussian', 'cosine' or a ScoreLaw, got {type(scores).__name__}")
    if scores == "gaussian":
        if d is not None:
            raise ValueError("d is only used with scores='cosine'")
        return _GAUSSIAN
    if scores == "cosine":
        if d is None:
            raise ValueError("d (the head dimension) is required with scores='cosine'")
        d_arr = _validate.dimension(d, "d")
        if d_arr.ndim:
            raise ValueError("d must be a single dimension (call once per d)")
        return cosine_law(float(d_arr))
    raise ValueError(f"scores must be 'gaussian', 'cosine' or a ScoreLaw, got {scores!r}")


# ---------------------------------------------------------------------------
# inner expectations over one score, for many tau at once


_WINDOW_CACHE: dict = {}


def _window_edges(law, alpha):
    key = (id(law), law.name, alpha)
    if key not in _WINDOW_CACHE:
        if len(_WINDOW_CACHE) > 4096:
            _WINDOW_CACHE.clear()
        _WINDOW_CACHE[key] = _make_window_edges(law, alpha)
    return _WINDOW_CACHE[key]


def _make_window_edges(law, alpha):
    """Panel edges in w for the kernel window, each local panel cut to the law's panel width.

    Returns None when the law's own panels are finer than the kernel (small
    alpha): then the whole support is integrated on the law's panels.
    """
    h = law._panel_width  # the law's panel width (in z; ds <= dz)
    widths = np.diff(_W_EDGES) / alpha  # local panel widths in s
    if widths[len(widths) // 2] > h:  # the kernel's finest panels are wider than the law's
        return None
    pieces = [
        np.linspace(a, b, int(np.ceil((b - a) / (alpha * h))) + 1)[:-1]
        for a, b in itertools.pairwise(_W_EDGES)
    ]
    return np.concatenate([*pieces, _W_EDGES[-1:]])


def _inner_nodes(law, alpha, tau, extra_s=None):
    """Nodes s (shape (T, K, P)), weights (density x quadrature), w = alpha s - tau, and S beyond.

    For small alpha the law's own panels over its whole range; otherwise
    panels over the kernel's window w in [-46, 5] only, with the mass to the
    right of the window (where 1 - e^{-y} = 1 to double precision) taken
    from the law's survival function.
    """
    s_lo, s_hi = law.score_range
    w_edges = _window_edges(law, alpha)
    if w_edges is None:
        edges = np.broadcast_to(law._edges, (tau.size, law._edges.size))
        beyond = np.zeros(tau.size)
    else:
        s_edges = np.clip((tau[:, None] + w_edges[None, :]) / alpha, s_lo, s_hi)
        edges = law.to_z(s_edges)
        beyond = law.survival(s_edges[:, -1])
    # a law with graded ends: its grading in every row that reaches an end
    # (the law's own edges, used without a window, hold it already)
    extra = [law._end_points] if law.graded_ends and w_edges is not None else []
    if extra_s is not None:
        # fixed extra breakpoints (e.g. where n P(S > s) is of order 1)
        extra.append(law.to_z(extra_s))
    if extra:
        # kept inside each row's range
        extra = np.clip(np.concatenate(extra)[None, :], edges[:, :1], edges[:, -1:])
        edges = np.sort(np.concatenate([edges, extra], axis=1), axis=1)
    half = 0.5 * np.diff(edges, axis=1)  # (T, K)
    mid = 0.5 * (edges[:, :-1] + edges[:, 1:])
    z = mid[..., None] + half[..., None] * _XI  # (T, K, P)
    s = law.to_score(z)
    weight = np.exp(law.log_density_z(z)) * (half[..., None] * _WXI)
    w = alpha * s - tau[:, None, None]
    return s, weight, w, beyond


def _density_of_score(law, s):
    """log f(s) for scores inside the law's range (the density of s, not of z)."""
    z = law.to_z(s)
    log_f = law.log_density_z(z)
    if law.score_slope is not None:  # ds = sigma'(z) dz; the identity map needs no correction
        log_f = log_f - np.log(law.score_slope(z))
    return log_f


@functools.lru_cache(maxsize=1024)
def _fixed_kernels(w_key: bytes, alpha: float, names: tuple):
    """Nodes w and the kernel matrix (nodes x statistics) of the fixed-window rule.

    They depend on alpha and the window's edges only, not on tau or the law:
    cached, since a curve over tau and many laws reuse them.
    """
    w_edges = np.frombuffer(w_key)
    half = 0.5 * np.diff(w_edges)
    w = (0.5 * (w_edges[:-1] + w_edges[1:]))[:, None] + half[:, None] * _XI
    w, quad_w = w.ravel(), (half[:, None] * _WXI).ravel() / alpha  # ds = dw / alpha
    y = np.exp(w)
    psi = y * np.exp(-y)
    kernels = {"S": -np.expm1(-y), "f": psi, "chi": psi * y, "eta": psi * (w + EULER_GAMMA)}
    matrix = np.stack([kernels[k] * quad_w for k in names], axis=1)
    w.flags.writeable = matrix.flags.writeable = False
    return w, matrix


def _inner_fixed_kernel(law, alpha, tau, w_edges, need):
    """The window rule for rows whose window lies inside the support, away from hard ends.

    In the score itself (not z), panels fixed in w = alpha s - tau, so the
    kernels are the same for every tau and every statistic is one matrix
    product of the density at the nodes with the kernel values.
    """
    names = ("S", "f", *(k for k in ("chi", "eta") if k in need))
    w, matrix = _fixed_kernels(w_edges.tobytes(), float(alpha), names)
    with np.errstate(under="ignore"):
        density = np.exp(_density_of_score(law, (tau[:, None] + w[None, :]) * (1.0 / alpha)))  # (T, N)
    values = density @ matrix
    out = {k: values[:, i] for i, k in enumerate(names)}
    out["S"] = out["S"] + law.survival((tau + w_edges[-1]) / alpha)
    return out


def _inner(law, alpha, tau, *, need=("S", "f"), need_tail=False, extra_s=None):
    """Expectations over one score at each tau: S_V, f_V, chi, eta (those in ``need``).

    With ``need_tail`` also, at every node, the tail T(tau, s) = E[e^{-y'} 1{s' > s}]
    and the node's share of f_V, for the largest weight.
    """
    if not need_tail and not law.hard_ends:
        w_edges = _window_edges(law, alpha)
        if w_edges is not None:
            s_lo, s_hi = law.score_range
            if law is _GAUSSIAN:  # the density formula holds beyond the range kept for quadrature
                s_lo, s_hi = -np.inf, np.inf
            inside = ((tau + w_edges[0]) / alpha >= s_lo) & ((tau + w_edges[-1]) / alpha <= s_hi)
            if inside.all():
                return _inner_fixed_kernel(law, alpha, tau, w_edges, need)
            if inside.any():
                fast = _inner_fixed_kernel(law, alpha, tau[inside], w_edges, need)
                slow = _inner_general(law, alpha, tau[~inside], need)
                out = {}
                for key, value in fast.items():
                    merged = np.empty(tau.size)
                    merged[inside], merged[~inside] = value, slow[key]
                    out[key] = merged
                return out
    return _inner_general(law, alpha, tau, need, need_tail, extra_s)


def _inner_general(law, alpha, tau, need, need_tail=False, extra_s=None):
    """The general rule: panels in z, refined by the kernel's window and any extra breakpoints."""
    _s, weight, w, beyond = _inner_nodes(law, alpha, tau, extra_s)
    w = np.minimum(w, 700.0)  # e^w beyond e^700 only multiplies exp(-e^w) = 0
    y = np.exp(w)
    e_neg_y = np.exp(-y)
    psi = weight * (y * e_neg_y)
    out = {"S": np.sum(weight * -np.expm1(-y), axis=(1, 2)) + beyond, "f": np.sum(psi, axis=(1, 2))}
    if "chi" in need:
        out["chi"] = np.sum(psi * y, axis=(1, 2))
    if "eta" in need:
        out["eta"] = np.sum(psi * (w + EULER_GAMMA), axis=(1, 2))
    if need_tail:
        # whole panels to the right plus the part of the node's own panel
        # (spectral integration on the panel's Gauss nodes)
        g = (weight / _WXI) * e_neg_y  # density x half-length x e^{-y}
        within = np.einsum("jk,tik->tij", _RCUM, g)
        panel_total = np.sum(weight * e_neg_y, axis=2)  # (T, K)
        after = np.cumsum(panel_total[:, ::-1], axis=1)[:, ::-1] - panel_total
        out["tail"] = within + after[..., None]
        out["psi_nodes"] = psi
    return out


# ---------------------------------------------------------------------------
# the outer integral over tau


def _tau_range(law, alpha, n):
    """A range of tau outside which every outer integrand is negligible (conservative)."""
    s_lo, _s_hi = law.score_range
    log_n = np.log(n)
    top = float(law.inverse_survival(1e-26 / n))
    upper = alpha * top + log_n + 64.0
    if n > 2:
        delta = -np.expm1(-80.0 / (n - 2.0))
        low_s = float(law.inverse_survival(2.0 * delta)) if delta < 0.5 else s_lo
    else:
        low_s = s_lo
    lower = alpha * low_s - 6.0 - (6.0 if n <= 2 else 0.0)
    return lower, upper


def _outer_nodes(a, b, panels):
    edges = np.linspace(a, b, panels + 1)
    half = 0.5 * np.diff(edges)
    nodes = (0.5 * (edges[:-1] + edges[1:]))[:, None] + half[:, None] * _XI
    return nodes.ravel(), (half[:, None] * _WXI).ravel()


def _log_power(survival, power):
    """(power) * log(1 - survival), exactly -inf where survival == 1."""
    if power == 0:
        return np.zeros(np.shape(survival))
    with np.errstate(divide="ignore"):
        return power * np.log1p(-np.minimum(survival, 1.0))


_COARSE = 49
_EXCEEDANCES = np.array([1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 0.03, 0.1, 0.3, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])


def _adaptive_edges(x, logv, drop=32.0, step=4.0, per_peak=2.0):
    """Outer panel edges where exp(logv) lives, from a coarse sample of it.

    Keeps the range where ``logv`` is within ``drop`` of its peak and cuts it
    into panels over which ``logv`` changes by at most ``step`` (the
    integrand changes by at most a factor e^step in a panel) and which are
    at most 1/``per_peak`` of the peak's width (where ``logv`` is within 2 of
    its maximum), to resolve the peak itself.
    """
    top = np.max(logv)
    keep = np.flatnonzero(logv > top - drop)
    lo, hi = max(keep[0] - 1, 0), min(keep[-1] + 1, x.size - 1)
    x, logv = x[lo : hi + 1], np.maximum(logv[lo : hi + 1], top - drop - 10.0)
    peak = x[logv > top - 2.0]
    peak_width = max(peak[-1] - peak[0], x[1] - x[0])
    measure = np.concatenate(
        [[0.0], np.cumsum(np.abs(np.diff(logv)) / step + np.diff(x) * per_peak / peak_width)]
    )
    count = int(np.ceil(measure[-1]))
    return np.interp(np.linspace(0.0, measure[-1], count + 1), measure, x)


def _nodes_on(edges):
    half = 0.5 * np.diff(edges)
    nodes = (0.5 * (edges[:-1] + edges[1:]))[:, None] + half[:, None] * _XI
    return nodes.ravel(), (half[:, None] * _WXI).ravel()


def _outer(law, alpha, n, what):
    a, b = _tau_range(law, alpha, n)
    # coarse pass: where does the integrand live, and how fast does it change?
    coarse = np.linspace(a, b, _COARSE)
    inner = _inner(law, alpha, coarse, need=("S", "f", "chi"))
    with np.errstate(divide="ignore"):
        logv = np.log(inner["f"]) + _log_power(inner["S"], max(n - 2.0, 0.0))
        if what != "gradient":
            logv = np.maximum(logv, np.log(inner["chi"]) + _log_power(inner["S"], n - 1.0))
    edges = _adaptive_edges(coarse, logv)
    # a support end where the density is not negligible puts structure of
    # width ~1 into tau (the Gumbel kernel's), however large alpha: resolve it
    s_lo, s_hi = law.score_range
    for s_end in law.hard_ends:
        # the Gumbel kernel's own scale next to the end, then geometric steps
        # inward (a density that blows up at the end makes 1/x-like tails)
        inward = np.geomspace(1.0, max(alpha * (s_hi - s_lo), 2.0), 40)
        inward = inward if s_end == s_lo else -inward
        extra = np.concatenate([alpha * s_end - _W_EDGES[::-1], alpha * s_end + inward])
        extra = extra[(extra > edges[0]) & (extra < edges[-1])]
        edges = np.unique(np.concatenate([edges, extra]))
    tau, wt = _nodes_on(edges)
    extra = None
    if what == "max":
        # the largest score sits where n P(S > s) is of order 1: resolve that
        p = _EXCEEDANCES / n
        extra = law.inverse_survival(p[p < 1.0])
    inner = _inner(
        law,
        alpha,
        tau,
        need=(what == "collision" and "chi", what == "entropy" and "eta"),
        need_tail=(what == "max"),
        extra_s=extra,
    )
    S = inner["S"]
    if what == "gradient":
        integrand = inner["f"] ** 2 * np.exp(_log_power(S, n - 2.0))
        return alpha * n * (n - 1.0) * np.sum(wt * integrand)
    if what == "collision":
        return n * np.sum(wt * inner["chi"] * np.exp(_log_power(S, n - 1.0)))
    if what == "entropy":
        return -n * np.sum(wt * inner["eta"] * np.exp(_log_power(S, n - 1.0)))
    # largest weight: the s-integral at each tau, with Phi = 1 - S_V - tail
    beyond = S[:, None, None] + inner["tail"]
    per_node = inner["psi_nodes"] * np.exp(_log_power(beyond, n - 1.0))
    return n * np.sum(wt * np.sum(per_node, axis=(1, 2)))


def _broadcast(alpha, n):
    alpha = _validate.scale(alpha)
    n = _validate.key_count(n)
    if np.any(n > 1e9):
        raise ValueError(f"n must be <= 1e9, got {n[n > 1e9].flat[0]:g}")
    return np.broadcast_arrays(alpha, n)


def _alpha_limit(law):
    return 1e4 if law.name.startswith("cosine") else 1e3


def _evaluate(alpha, n, scores, d, what, at_zero):
    law = _resolve_law(scores, d)
    alpha, n = _broadcast(alpha, n)
    limit = _alpha_limit(law) if not isinstance(scores, ScoreLaw) else 1e3
    if np.any(alpha > limit):
        raise ValueError(
            f"alpha must be <= {limit:g} for {law.name} scores, got {alpha[alpha > limit].flat[0]:g}"
        )
    out = np.empty(alpha.shape)
    for idx in np.ndindex(alpha.shape):
        a, m = float(alpha[idx]), float(n[idx])
        out[idx] = at_zero(m) if a == 0.0 else _outer(law, a, m, what)
    if what in _RANGES:
        # the quadrature's rounding (about 1e-13 relative) can step out of the
        # exact range where the rows are nearly uniform; the truth is inside
        low, high = _RANGES[what](n)
        out = np.clip(out, low, high)
    return out if out.ndim else float(out)


#: The exact range of each expectation at n keys (its docstring's "Returns").
_RANGES = {
    "collision": lambda n: (1.0 / n, 1.0),
    "max": lambda n: (1.0 / n, 1.0),
    "entropy": lambda n: (0.0, np.log(n)),
}


def expected_collision(alpha, n, scores="gaussian", d=None):
    r"""Exact :math:`\mathbb E\sum_i p_i^2` for :math:`p = \operatorname{softmax}(\alpha s)`, i.i.d. scores.

    .. math:: \mathbb E\sum_i p_i^2 = n\int_{-\infty}^{\infty} \chi(\tau)\,F_V(\tau)^{n-1}\,d\tau,
              \qquad \chi(\tau) = \mathbb E\bigl[e^{2(\alpha s - \tau)} e^{-e^{\alpha s - \tau}}\bigr]

    (the book's Theorem *exact-expectations*; see the module notes).

    Parameters
    ----------
    alpha : float or array_like
        Scale, ``0 <= alpha <= 1e3`` (``1e4`` for cosine scores).
    n : float or array_like
        Number of keys, ``2 <= n <= 1e9``; broadcasts against ``alpha``.
    scores : {"gaussian", "cosine"} or ScoreLaw
        The law of one score: standard normal, the cosine of two random
        directions in dimension ``d``, or a reader's :class:`ScoreLaw`.
    d : float, optional
        Dimension, required with ``scores="cosine"`` (``>= 2``).

    Returns
    -------
    numpy.ndarray or float
        :math:`\mathbb E\sum_i p_i^2 \in [1/n, 1]`; exactly ``1/n`` at ``alpha = 0``.
        About 1e-10 relative accuracy (tested against mpmath).

    See Also
    --------
    expected_gradient : the exact objective, :math:`\alpha(1 - \mathbb E\sum_i p_i^2)`.
    collision_probability : the same sum for one row of scores.

    Examples
    --------
    >>> from attnscale import expected_collision
    >>> float(expected_collision(0.0, 8))  # equal weights: 1/n
    0.125
    """
    return _evaluate(alpha, n, scores, d, "collision", lambda m: 1.0 / m)


def expected_gradient(alpha, n, scores="gaussian", d=None):
    r"""Exact expected gradient size :math:`\mathbb E\,\alpha(1 - \sum_i p_i^2)`, i.i.d. scores.

    .. math:: \mathbb E\,\alpha\Bigl(1 - \sum_i p_i^2\Bigr)
              = \alpha\, n(n-1)\int_{-\infty}^{\infty} f_V(\tau)^2\,F_V(\tau)^{n-2}\,d\tau,

    with :math:`V = \alpha s + G`, :math:`G` standard Gumbel.  Computed
    directly, not as :math:`\alpha(1 - \text{collision})`, so it keeps its
    relative accuracy at small :math:`\alpha` and at large :math:`\alpha`.

    Parameters
    ----------
    alpha, n, scores, d
        As in :func:`expected_collision`.

    Returns
    -------
    numpy.ndarray or float
        The expected half L1 norm of the softmax Jacobian (equation
        ``eq-l1-identity`` of the book); 0 at ``alpha = 0``; tends to
        :func:`gradient_limit` as ``alpha`` grows.

    See Also
    --------
    gaussian_objective, cosine_objective : the mean-field approximation it tests.
    gradient_limit : its limit as :math:`\alpha \to \infty`.
    sampled_objective : the same expectation by Monte Carlo.

    Examples
    --------
    >>> from attnscale import expected_gradient, gaussian_objective
    >>> exact, mean_field = float(expected_gradient(1.0, 64)), float(gaussian_objective(1.0, 64))
    >>> round(exact, 4), round(mean_field, 4)
    (0.9612, 0.9575)
    """
    return _evaluate(alpha, n, scores, d, "gradient", lambda m: 0.0)


def expected_entropy(alpha, n, scores="gaussian", d=None):
    r"""Exact expected Shannon entropy (nats) of :math:`\operatorname{softmax}(\alpha s)`, i.i.d. scores.

    .. math:: \mathbb E\,H(p) = -n\int_{-\infty}^{\infty}
              \mathbb E\bigl[y\,(\log y + \gamma)\,e^{-y}\bigr]\,F_V(\tau)^{n-1}\,d\tau,
              \qquad y = e^{\alpha s - \tau},

    from :math:`Z^{-1}\log Z = -\int_0^\infty(\log t + \gamma)e^{-tZ}\,dt`
    (:math:`\gamma` is Euler's constant).

    Parameters
    ----------
    alpha, n, scores, d
        As in :func:`expected_collision`.

    Returns
    -------
    numpy.ndarray or float
        In ``[0, log n]``; exactly ``log n`` at ``alpha = 0``.

    See Also
    --------
    softmax_entropy : the entropy of one row of scores.
    gaussian_meanfield_entropy : the mean-field approximation.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import expected_entropy
    >>> bool(np.isclose(expected_entropy(0.0, 8), np.log(8)))  # equal weights
    True
    """
    return _evaluate(alpha, n, scores, d, "entropy", np.log)


def expected_max_weight(alpha, n, scores="gaussian", d=None):
    r"""Exact :math:`\mathbb E\max_i p_i` for :math:`p = \operatorname{softmax}(\alpha s)`, i.i.d. scores.

    .. math:: \mathbb E\max_i p_i = n\int\!\!\int f(s)\,y e^{-y}\,
              \bigl(1 - S_V(\tau) - T(\tau, s)\bigr)^{n-1}\,ds\,d\tau,

    with :math:`T(\tau, s) = \mathbb E[e^{-y'}\mathbf 1\{s' > s\}]`: the weight
    of the key with the largest score, since the largest weight always
    belongs to the largest score.

    Parameters
    ----------
    alpha, n, scores, d
        As in :func:`expected_collision`.

    Returns
    -------
    numpy.ndarray or float
        In ``[1/n, 1]``; exactly ``1/n`` at ``alpha = 0``.

    See Also
    --------
    expected_collision : the expected sum of squared weights.

    Examples
    --------
    >>> from attnscale import expected_max_weight
    >>> float(expected_max_weight(0.0, 8))
    0.125
    """
    return _evaluate(alpha, n, scores, d, "max", lambda m: 1.0 / m)


def gradient_limit(n, scores="gaussian", d=None):
    r"""The :math:`\alpha \to \infty` limit of :func:`expected_gradient`.

    .. math:: \lim_{\alpha\to\infty}\mathbb E\,\alpha\Bigl(1 - \sum_i p_i^2\Bigr)
              = n(n-1)\int f(s)^2 F(s)^{n-2}\,ds = f_{\Delta}(0),

    the density at 0 of the gap :math:`\Delta` between the two largest of
    :math:`n` scores.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``2 <= n <= 1e9``.
    scores, d
        As in :func:`expected_collision`.

    Returns
    -------
    numpy.ndarray or float
        The limit; for standard normal scores :math:`1/\sqrt\pi` at ``n = 2``.

    See Also
    --------
    expected_gradient : the exact objective at a finite scale.

    Notes
    -----
    For cosine scores below :math:`d = 3` the density is unbounded at both
    ends of the support, and its square, which this integrates, behaves
    like :math:`|s - s_{\rm end}|^{d - 3}`.  Measured at two keys against
    the closed form :math:`2B(\tfrac12, d-2)/B(\tfrac12, \tfrac{d-1}{2})^2`,
    the graded panels resolve it to rounding for :math:`d \ge 2.5`, and less
    well as :math:`d \to 2`, where the limit tends to infinity: the relative
    error is 1.6e-10 at :math:`d = 2.45`, 3e-9 at 2.4, 5e-5 at 2.2 and 4% at
    2.05.  At many keys it is larger near :math:`d = 2.5`: against a 30-digit
    quadrature at :math:`n = 10^9` a referee measured 4.4e-10 at
    :math:`d = 2.5`, 3.2e-9 at 2.45 and 3.1e-8 at 2.4.

    Examples
    --------
    >>> from attnscale import expected_gradient, gradient_limit
    >>> bool(expected_gradient(30.0, 64) < gradient_limit(64))  # it rises towards the limit
    True
    """
    law = _resolve_law(scores, d)
    n = _validate.key_count(n)
    if np.any(n > 1e9):
        raise ValueError(f"n must be <= 1e9, got {n[n > 1e9].flat[0]:g}")
    out = np.empty(n.shape)
    for idx in np.ndindex(n.shape):
        out[idx] = np.inf if law.infinite_gap_density else _gap_density_at_zero(law, float(n[idx]))
    return out if out.ndim else float(out)


def _density(law, s):
    """f(s) from the density of z: f = f_z / sigma'(z)."""
    z = law.to_z(s)
    with np.errstate(divide="ignore", under="ignore"):
        return np.exp(law.log_density_z(z)) / law.slope(z)


def _gap_density_at_zero(law, n):
    r"""n(n-1) \int f^2 F^{n-2} ds, split at the median.

    Upper half in the exceedance p = P(S > s): n(n-1) \int_0^{1/2} f(Q(p)) (1-p)^{n-2} dp,
    on panels in log p (the top of the support is resolved however large n is);
    lower half in z on the law's own panels.
    """
    median = float(law.inverse_survival(0.5))

    def integrand(log_p):  # p f(Q(p)) (1-p)^{n-2}, per unit of log p
        pr = np.exp(log_p)
        with np.errstate(divide="ignore"):
            return np.log(pr * _density(law, law.inverse_survival(pr))) + _log_power(pr, n - 2.0)

    coarse = np.linspace(np.log(1e-40 / n), np.log(0.5), 129)
    log_p, wt = _nodes_on(_adaptive_edges(coarse, integrand(coarse), step=1.0, per_peak=6.0))
    upper = np.sum(wt * np.exp(integrand(log_p)))
    z_median = float(law.to_z(median))
    if law.graded_ends:  # the law's own (graded) panels below the median
        z, wz = _nodes_on(np.r_[law._edges[law._edges < z_median], z_median])
    else:
        z, wz = _outer_nodes(law._edges[0], z_median, int(law.panels))
    s = law.to_score(z)
    with np.errstate(under="ignore"):
        f_z = np.exp(law.log_density_z(z))
    # f(s) = f_z / sigma'(z) at the node itself: through s and back to z the
    # angle next to an end of the support keeps only sqrt(eps) of its digits
    # (2 < d < 3, where f is unbounded there, lost 7e-5 of the limit)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_s = np.where(f_z > 0.0, f_z / law.slope(z), 0.0)
    lower = np.sum(wz * f_z * f_s * np.exp(_log_power(law.survival(s), n - 2.0)))
    return n * (n - 1.0) * (upper + lower)
