r"""Which length law a head needs, read off the gaps at the top of its score rows.

Chapter *Which law*.  The weight on the largest score of a row is

.. math:: p_{\max} = \frac{1}{1 + \sum_{j} e^{-\alpha g_j}}
          = \frac{1}{1 + \alpha\int_0^\infty e^{-\alpha t} N(t)\,dt},

with :math:`g_j \ge 0` the gaps of the other keys below the maximum and
:math:`N(t) = \#\{j : g_j \le t\}` the gap-counting function.  The
*accumulation scale* :math:`A = \sup_{t>0} \log(1 + N(t))/t`
(:func:`~attnscale.accumulation_scale`) bounds it from both sides (the book's
Theorem *gap-bounds*), so the scale at which a row of :math:`n` keys stays
in its critical window grows with :math:`n` as :math:`A` does.  For
i.i.d. scores with survival function :math:`S`, the mean count of keys
within :math:`t` of the top is :math:`n S(b_n - t)` with
:math:`S(b_n) = 1/n`.  When :math:`\log S` is concave the supremum of
:math:`\log(nS(b_n - t))/t` sits at the top (the hazard :math:`nf(b_n)`,
set by the keys nearest the top); when it is convex, at the bottom of the
support (every key counted), which the bulk end
:math:`\log(n/2)/(b_n - \mathrm{median})` stands in for.  For other
tails (Student-t: :math:`\log S` is neither) the supremum can lie inside;
the *target* here is the larger of the two ends, the two-end scale of
:func:`~attnscale.iid_critical_scale`, not the supremum itself:

- Weibull-type tails :math:`S(x) = e^{-x^\beta}` (Gumbel domain): :math:`\beta(\log n)^{1-1/\beta}`
  for :math:`\beta \ge 1` (Gaussian scores: :math:`\sqrt{2\log n}` to
  leading order), and :math:`(\log n)^{1-1/\beta}`, a *falling* scale set
  by the bottom of the support, for :math:`\beta < 1`;
- a density vanishing like :math:`(s_{\max} - s)^\kappa` at the top of a
  bounded support (reverse-Weibull domain): :math:`\propto n^{1/(\kappa+1)}`;
- Pareto tails :math:`S(x) = x^{-\gamma}` (Fréchet domain): :math:`\log n\; n^{-1/\gamma}`,
  a *falling* scale set by the bottom of the support, in order only (the
  row's maximum does not concentrate);
- a planted target :math:`\Delta` above a bulk: :math:`\log n/\Delta`
  (:func:`~attnscale.planted_length_factor`), until the bulk's own maximum reaches the
  target.

:func:`~attnscale.diagnose_law` estimates which of these a head's rows follow, from
the normalized spacings of their upper order statistics, and returns the
ratio :math:`\lambda(n) = \alpha_c(n)/\alpha_c(L)` of the two-end scale
(:math:`\alpha_c = 1/a_n` at the top end, the normalizing constant of the
maximum) from the head's training length :math:`L` to others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..support import _validate
from .exact import ScoreLaw, _resolve_law

__all__ = [
    "LawDiagnosis",
    "accumulation_scale",
    "diagnose_law",
    "iid_critical_scale",
    "planted_length_factor",
]

#: Laws the diagnostic can return, named by their extreme-value domain of
#: attraction (de Haan and Ferreira 2006), with the growth of the critical
#: scale: Weibull-type tails are in the Gumbel domain, bounded tops in the
#: reverse-Weibull domain, Pareto tails in the Frechet domain.
LAW_FORMULAS = {
    "planted": "alpha(n) = alpha_L + log(n/L)/Delta (log n law), until the bulk reaches the target",
    "gumbel": "Weibull-type tail: alpha_c(n) ~ (log n)^(1 - 1/beta) (falling for beta < 1)",
    "reverse-weibull": "bounded top: alpha_c(n) ~ n^(1/(kappa + 1))",
    "frechet": "Pareto tail: alpha_c(n) ~ log(n) n^(-1/gamma), in order only",
}


#: The labels ``LawDiagnosis.law`` carried before the names were the
#: domains, mapped to the domain each meant (for reading older output).
LAW_DOMAINS = {
    "planted": "planted",
    "weibull": "gumbel",
    "bounded": "reverse-weibull",
    "pareto": "frechet",
}


def accumulation_scale(gaps):
    r"""The accumulation scale :math:`A = \sup_{t>0}\log(1 + N(t))/t` of rows of gaps.

    .. math:: A = \max_{k \ge 1} \frac{\log(1 + k)}{g_{(k)}},

    with :math:`g_{(1)} \le g_{(2)} \le \dots` the sorted gaps of the other
    keys below the row's maximum and :math:`N(t) = \#\{j: g_j \le t\}` (the
    supremum sits at a jump of :math:`N`).  By the book's Theorem
    *gap-bounds*, :math:`p_{\max} \ge 1 - A/\alpha` for :math:`\alpha > A`,
    and :math:`p_{\max} \le 1/(1 + (m - 1) m^{-\alpha/A})` for
    :math:`\alpha < A`, with :math:`m = 1 + N(t^*)` at the maximizing gap.

    Parameters
    ----------
    gaps : array_like
        Gaps :math:`g_j \ge 0` of the non-top keys, along the last axis
        (one row per leading index); at least one per row.

    Returns
    -------
    numpy.ndarray or float
        :math:`A \ge 0` per row (``inf`` when two keys tie with the top).

    See Also
    --------
    diagnose_law : reads the growth of :math:`A` with the length off a head's rows.

    Examples
    --------
    Ten keys at gap 1 below the top: :math:`A = \log 11`.

    >>> import numpy as np
    >>> from attnscale import accumulation_scale
    >>> bool(np.isclose(accumulation_scale(np.ones(10)), np.log(11)))
    True
    """
    g = _validate.scores(gaps, "gaps")
    if np.any(g < 0):
        raise ValueError(f"gaps must be >= 0 (distances below the row's maximum), got {g[g < 0].flat[0]:g}")
    g = np.sort(g, axis=-1)
    k = np.arange(1, g.shape[-1] + 1)
    with np.errstate(divide="ignore"):
        ratio = np.where(g > 0, np.log1p(k) / np.where(g > 0, g, 1.0), np.inf)
    out = ratio.max(axis=-1)
    return out if out.ndim else float(out)


def iid_critical_scale(n, scores="gaussian", d=None):
    r"""Critical scale of a row of :math:`n` i.i.d. scores: the accumulation scale of its mean count.

    .. math:: \alpha_c(n) = \max\Bigl(n f(b_n),\ \frac{\log(n/2)}{b_n - m}\Bigr),
              \qquad S(b_n) = \frac1n,\quad S(m) = \frac12,

    the two ends of :math:`\sup_t \log(nS(b_n - t))/t` (the top: the hazard
    rate at the :math:`1/n` quantile; the bulk: half the keys within
    :math:`b_n - m`).  For a log-concave tail (Gaussian, Weibull with
    :math:`\beta \ge 1`, bounded tops) the ratio falls with :math:`t` and
    the top end is the supremum.  For a log-convex one (Weibull with
    :math:`\beta < 1`, Pareto) it rises all the way to the bottom of the
    support, :math:`\log n/(b_n - s_{\min})`, where every key counts; the
    bulk end stands in for it (defined for laws without a bottom; about
    2% below it for Weibull with :math:`\beta = 0.6` at
    :math:`n = 16384`).  For a tail neither log-concave nor log-convex
    (Student-t) the supremum can lie between the ends (t with 10 degrees
    of freedom at :math:`n = 1024`: about 6% above the larger end).  The
    two-end maximum is then a surrogate, and it is what
    :func:`diagnose_law` estimates.  This is the scale of the *mean* count; one row's
    own accumulation scale scatters widely around it.  At
    :math:`\alpha = c\,\alpha_c(n)` with :math:`c > 1` fixed, Gaussian
    rows converge to the Poisson--Dirichlet weights of parameter
    :math:`1/c` (Derrida's random energy model; Bovier, Kurkova and Löwe
    2002), and Weibull-type rows with :math:`\beta > 1` likewise (Ben
    Arous, Bogachev and Molchanov 2005).  For :math:`\beta \le 1`,
    bounded tops and Pareto tails no limit theorem is cited here; the
    book checks those cases numerically.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``2 <= n <= 1e30`` (cosine scores: within 1e-10 of
        the closed-form hazard there).
    scores : {"gaussian", "cosine"} or ScoreLaw
        The law of one score, as in :func:`attnscale.expected_entropy`.
    d : float, optional
        Dimension, with ``scores="cosine"``.

    Returns
    -------
    numpy.ndarray or float
        :math:`\alpha_c(n) > 0`, on the scale of the scores.

    See Also
    --------
    diagnose_law : the same scale, estimated from a head's rows.
    expected_max_weight : the exact top weight at a scale.

    Examples
    --------
    Gaussian scores: :math:`\sqrt{2\log n}` to leading order.

    >>> import numpy as np
    >>> from attnscale import iid_critical_scale
    >>> a = iid_critical_scale(1e9)
    >>> bool(abs(a / np.sqrt(2 * np.log(1e9)) - 1) < 0.05)
    True
    """
    law = _resolve_law(scores, d)
    n = _validate.key_count(n)
    if np.any(n > 1e30):
        raise ValueError(f"n must be <= 1e30, got {n[n > 1e30].flat[0]:g}")
    p = 1.0 / n
    top = np.asarray(law.inverse_survival(p), dtype=float)
    median = float(law.inverse_survival(np.array(0.5)))
    hazard = n * _density(law, top)
    with np.errstate(divide="ignore"):
        bulk = np.log(n / 2.0) / (top - median)
    out = np.maximum(hazard, np.where(top > median, bulk, 0.0))
    return out if out.ndim else float(out)


def _density(law: ScoreLaw, s):
    z = law.to_z(s)
    with np.errstate(divide="ignore", under="ignore"):
        return np.exp(law.log_density_z(z)) / law.slope(z)


def planted_length_factor(top, bulk_mean, bulk_sd, n, train_length):
    r"""Factor :math:`\lambda(n)` that keeps a planted target's weight at its value for length :math:`L`.

    A row is one target logit :math:`T` over :math:`n - 1` bulk logits of
    mean :math:`\mu` and spread :math:`\sigma`; with :math:`\Delta = T - \mu`,
    at scale factor :math:`\lambda` the log-odds of the target are
    :math:`\lambda\Delta - F_n(\lambda)`, with the quenched free energy of a
    Gaussian bulk (Derrida's random energy model)

    .. math:: F_n(\lambda) = \begin{cases}
              \log(n-1) + \lambda^2\sigma^2/2, & \lambda\sigma \le r_n,\\
              \lambda\sigma r_n, & \lambda\sigma > r_n,\end{cases}
              \qquad r_n = \sqrt{2\log(n-1)} .

    The factor solves :math:`\lambda\Delta - F_n(\lambda) = \Delta - F_L(1)`
    (the row is used at factor 1 at :math:`L`), on the branch where the
    target's log-odds rise from :math:`-\log(n-1)` at :math:`\lambda = 0`.  For :math:`\sigma = 0`,
    :math:`\lambda(n) = 1 + \log\frac{n-1}{L-1}/\Delta`: the scale grows by
    :math:`\log(n/L)/\Delta`, the :math:`\log n` law.  It *breaks* (NaN)
    when the bulk's growing maximum :math:`\sigma r_n` reaches the target
    before the target's weight can be restored, and is NaN too for a row
    whose target weighs less at :math:`L` than a uniform row's key at
    :math:`n` (no target to hold).

    Parameters
    ----------
    top, bulk_mean, bulk_sd : array_like
        Per row: the target logit, the mean and the standard deviation of
        the other logits at the training length (finite, ``bulk_sd >= 0``);
        they broadcast together.
    n : float or array_like
        Target lengths, ``2 <= n <= 1e15``; appended as a last axis.
    train_length : float
        The length :math:`L >= 2` at which the rows were measured.

    Returns
    -------
    numpy.ndarray
        :math:`\lambda(n)`, shape ``broadcast(top, bulk_mean, bulk_sd).shape + n.shape``;
        1 at ``n = L``, NaN where the target cannot be held.

    See Also
    --------
    diagnose_law : tests whether rows have a planted target at all.
    spike_over_bulk_entropy : the same row model, sampled.

    Examples
    --------
    A target 8 above a constant bulk, from 64 to 4096 keys:

    >>> import numpy as np
    >>> from attnscale import planted_length_factor
    >>> lam = planted_length_factor(8.0, 0.0, 0.0, 4096, 64)
    >>> bool(np.isclose(lam, 1 + np.log(4095 / 63) / 8))
    True
    """
    top, mu, sd, shape = _validate.spike_and_bulk(top, bulk_mean, bulk_sd, "top")
    n = _validate.key_count(n)
    if np.any(n > 1e15):
        raise ValueError(f"n must be <= 1e15, got {n[n > 1e15].flat[0]:g}")
    L = _validate.key_count(train_length, "train_length")
    if L.ndim:
        raise ValueError("train_length must be a single length")
    L = float(L)
    delta = np.broadcast_to(top - mu, shape)[..., None]
    sig = np.broadcast_to(sd, shape)[..., None]
    if np.any(delta <= 0):
        raise ValueError("top must exceed bulk_mean in every row (a target above its bulk)")
    m = n.reshape((1,) * len(shape) + n.shape)
    delta = delta.reshape(shape + (1,) * n.ndim)
    sig = sig.reshape(shape + (1,) * n.ndim)
    rhs = delta - _free_energy(np.ones_like(delta), sig, L)
    log_odds = lambda lam: lam * delta - _free_energy(lam, sig, m)  # noqa: E731
    # the log-odds rise until lambda = Delta / sigma^2 (unfrozen), or for
    # ever once the target stands above the bulk's maximum
    r_n = np.sqrt(2.0 * np.log(m - 1.0)) if np.all(m > 2) else np.sqrt(2.0 * np.log(np.maximum(m - 1.0, 1.0)))
    above = delta > sig * r_n
    with np.errstate(divide="ignore", invalid="ignore"):
        peak = np.where(above | (sig == 0), np.inf, delta / np.where(sig > 0, sig**2, 1.0))
    hi = np.where(np.isfinite(peak), peak, 1.0)
    # grow the bracket where the log-odds rise for ever
    for _ in range(200):
        short = ~np.isfinite(peak) & (log_odds(hi) < rhs)
        if not np.any(short):
            break
        hi = np.where(short, 2.0 * hi, hi)
    # a target whose weight at L is below a uniform row's at n is no target
    reachable = (log_odds(np.zeros_like(hi)) <= rhs) & (log_odds(hi) >= rhs)
    lo = np.zeros_like(hi)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        below = log_odds(mid) < rhs
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    lam = 0.5 * (lo + hi)
    return np.where(reachable, lam, np.nan)


def _free_energy(lam, sigma, n):
    """log sum over n - 1 Gaussian bulk logits of e^(lam x), minus lam * mean (REM, leading order)."""
    log_count = np.log(np.maximum(n - 1.0, 1.0))
    r = np.sqrt(2.0 * log_count)
    x = lam * sigma
    return np.where(x <= r, log_count + 0.5 * x * x, x * r)


@dataclass(frozen=True)
class LawDiagnosis:
    """What :func:`diagnose_law` read off a head's rows.

    Attributes
    ----------
    law : str
        The extreme-value domain read: ``"gumbel"`` (a Weibull-type tail,
        index ``beta``), ``"reverse-weibull"`` (a bounded top),
        ``"frechet"`` (a Pareto tail) or ``"planted"`` (see ``formula``).
        Before 2026-12-06 these were ``"weibull"``, ``"bounded"``,
        ``"pareto"`` and ``"planted"`` (``LAW_DOMAINS`` maps them).
    formula : str
        How the critical scale grows with the length under that law.
    shape : float
        The tail parameter of the chosen i.i.d. model: :math:`\\beta` for
        ``"gumbel"``, :math:`\\xi` (the generalized-Pareto shape) for
        ``"reverse-weibull"`` (:math:`\\xi < 0`, :math:`\\kappa = -1/\\xi - 1`) and
        ``"frechet"`` (:math:`\\xi > 0`, :math:`\\gamma = 1/\\xi`); for
        ``"planted"``, the i.i.d. model's parameter of the bulk.
    beta : float
        The Weibull-type index :math:`\\beta` (:math:`S(x) \\approx
        e^{-x^\\beta}`) when the i.i.d. tail read (``background``) is in the
        Gumbel domain, else NaN.
    shape_interval : tuple of float
        Its bootstrap interval over rows.
    planted_fraction : float
        Fraction of rows whose top gap exceeds the 95th percentile of the
        top gap of an i.i.d. row with the fitted tail (about 0.05 without a
        planted target).
    operating_point : float
        I.i.d. laws: the median over rows of :math:`c = \\alpha/\\alpha_c(L)`
        at the rows' own scale (below 1: the rows are diffuse at :math:`L`,
        where the critical law is only the leading order; see the chapter).
        Planted: the median weight of the target at :math:`L`.
    train_length : int
        :math:`L`, the number of keys per row.
    lengths : numpy.ndarray
        Target lengths :math:`n`.
    factor : numpy.ndarray
        :math:`\\lambda(n)` at each length (median over rows for planted rows).
    factor_interval : numpy.ndarray
        Shape ``(2, len(lengths))``: the interval of ``factor``, bias-aware:
        ``sampling_interval`` times :math:`e^{\\mp b}`, with :math:`b` the
        ``model_bias`` at each length.
    sampling_interval : numpy.ndarray
        Shape ``(2, len(lengths))``: the bootstrap interval alone (the
        sampling error of the chosen model, no model bias).
    model_bias : numpy.ndarray
        Per length, :math:`b = |\\log\\lambda_{\\text{curved}} - \\log\\lambda|`:
        how far the factor moves when the chosen model's :math:`\\log a` may
        bend (a parabola in place of a line, ``_curved_factor``).  0 for
        planted readings and for tails of fewer than 64 order statistics
        (``_MIN_BENT_TAIL``; the default tail of rows under 256 keys), where
        the bent fit is too noisy to measure a bias; ``inf`` where the bent
        model gives no finite factor.
    level : float
        Coverage of the intervals.
    domain : str
        The same as ``law`` (kept for readers of the field).
    coverage : float
        The interval's coverage measured on ``attnscale.diagnose.coverage_battery`` for
        this domain at the nearest battery size (``BATTERY_COVERAGE``); at
        a size as near to two battery sizes (128 keys: 64 and 256), the
        smaller of their coverages.
    reliable : bool
        ``coverage >= 0.85``, ``level`` is 0.9 (the level measured), and
        the rows pass the data's own checks: the factor read from the top
        ``k`` and the top ``k/4`` order statistics agree within their 95%
        bootstrap interval, that interval is narrow enough to see a ratio
        of :math:`e^{1/3}`, the tail holds more than 8 order statistics,
        and at least 80% of the resamples read the same domain
        (``_stability``); a planted reading passes only over a background
        read in the Gumbel domain (the planted factor's bulk is Gaussian:
        over Student-t3 keys, whose maximum at :math:`16L` passes a target
        the Gaussian model holds, it would mislead).  A head with a planted
        key whose rows are not read as planted is flagged too: no factor
        of the background's law holds the key's weight.  ``coverage`` is
        that of the (domain, size) cell, not of this reading.  The lookup
        alone vouched for Student-t rows at 1024 keys (covering none) and
        for Gaussian rows read as bounded at 64 keys; the checks flag about
        half the Student-t rows at 1024 keys and fewer at 256, and at 64
        keys almost every reading (too few order statistics to check a
        model).
    depth_ratio : float
        Median over resamples of the factor read at depth ``k`` over that
        read at ``k/4``, at the last length (about 1 for a tail in its model).
    domain_agreement : float
        Share of bootstrap resamples whose own better model reads ``domain``.
    checks : bool
        Whether the rows pass the data's own checks (the part of
        ``reliable`` that does not look up the battery).
    reading : str
        ``"unreliable for this reading"`` when not ``reliable`` (followed
        by the reason when a planted key was found but the rows are not
        read as planted), else the measured coverage in words.
    background : str
        The domain of the i.i.d. tail fitted to the keys other than a
        planted key (equal to ``domain`` unless the head is planted).
    planted_key : int or None
        The key column found among the top ``tail`` of improbably many rows
        (binomial tail below 0.001 over the number of keys), set aside
        before the background's tail is read; None if no column is.
    margin : float
        Median over rows of the planted key's margin over the other keys,
        :math:`(T - \\mu)/\\sigma`; without a planted key, that of each
        row's top key over the rest.
    """

    law: str
    formula: str
    shape: float
    shape_interval: tuple
    planted_fraction: float
    operating_point: float
    train_length: int
    lengths: np.ndarray
    factor: np.ndarray
    factor_interval: np.ndarray
    level: float
    domain: str = ""
    beta: float = float("nan")
    coverage: float = float("nan")
    reliable: bool = False
    reading: str = ""
    background: str = ""
    planted_key: int | None = None
    margin: float = float("nan")
    depth_ratio: float = float("nan")
    domain_agreement: float = float("nan")
    sampling_interval: np.ndarray | None = None
    model_bias: np.ndarray | None = None
    checks: bool = False


#: Rows whose top gap exceeds this many fitted tail scales are outliers:
#: P(Exp(1) > log 20) = 0.05 for an i.i.d. row.
_OUTLIER = np.log(20.0)
#: Above this fraction of outlying rows a head is called planted.
_PLANTED_FRACTION = 0.5
#: Above this fraction of zero spacings among the upper order statistics (or
#: of rows with a tied maximum) the scores are refused as tied or quantized:
#: Gaussian rows rounded until half their top-quarter spacings vanish move
#: the factor at 16L by under 1% (tests/test_diagnose.py measures it).
_MAX_TIED = 0.5
#: The default tail is the top quarter of each row, but at most this many
#: order statistics (the battery's largest rows, 16384 keys, use 4096).
_MAX_DEFAULT_TAIL = 4096
#: The diagnostic's extra memory (``_memory_estimate``) may be at most this many bytes.
_MAX_EXTRA_BYTES = 2e9
#: One chunk of bootstrap resamples holds at most this many bytes.
_BOOT_CHUNK_BYTES = 2**27
#: Level of the depth check's interval (``_stability``).
_DEPTH_LEVEL = 0.95
#: Half-width (log factor) above which the depth check has too little power to vouch.
_DEPTH_POWER = 1.0 / 3.0
#: The shallower tail of the depth check has k // 4 order statistics, at least this many.
_MIN_HALF_TAIL = 8
#: The bias-aware interval bends the tail model only on tails of at least
#: this many order statistics: on 16 (64 keys) the bent fit's own scatter
#: more than doubled the battery's median interval width (0.96 to 2.24 of
#: the factor) where the sampling interval already covered 0.85.
_MIN_BENT_TAIL = 64
#: Below this share of resamples reading the same domain, a reading is unstable.
_DOMAIN_AGREEMENT = 0.8


#: Rows are read in chunks of at most this many scores (bounded extra memory).
_CHUNK_SCORES = 2**22
#: A key column is a planted key when its count of top-``k`` places over the
#: rows has a binomial tail below this level divided by the number of keys.
_KEY_LEVEL = 1e-3


@dataclass(frozen=True)
class _Rows:
    """Per-row summaries of a head's rows, from one chunked pass over them."""

    top: np.ndarray  # (rows, m) the m largest values, descending
    where: np.ndarray  # (rows, m) their key columns
    q: np.ndarray  # (3, rows) the 75th, 50th and 25th percentiles
    sd: np.ndarray  # (rows,) the standard deviation
    bulk_mean: np.ndarray  # (rows,) mean of the keys below the top one
    bulk_sd: np.ndarray  # (rows,) their standard deviation (ddof 0)
    top_weight: np.ndarray  # (rows,) the softmax weight of the top key at factor 1


def _summaries(scores, m):
    """One pass over the rows in chunks of about ``_CHUNK_SCORES`` scores.

    The extra memory is a few chunks (a float64 copy, its partition), not a
    copy of the input: 10^8 float32 scores in 8 rows need about 0.2 GB
    beyond the input (``_MAX_EXTRA_BYTES`` bounds the estimate).  Non-finite scores are refused here.
    """
    rows, L = scores.shape
    step = max(1, _CHUNK_SCORES // L)
    top, where = np.empty((rows, m)), np.empty((rows, m), dtype=np.int64)
    q, sd = np.empty((3, rows)), np.empty(rows)
    bulk_mean, bulk_sd, top_weight = np.empty(rows), np.empty(rows), np.empty(rows)
    for s in range(0, rows, step):
        c = np.array(scores[s : s + step], dtype=np.float64)
        finite = np.isfinite(c)
        if not finite.all():
            bad = c[~finite].flat[0]
            hint = " (a masked score? pass only the keys a query can see)" if np.isneginf(bad) else ""
            raise ValueError(f"scores must be finite, got {bad}{hint}")
        del finite
        part = np.argpartition(c, L - m, axis=-1)[:, L - m :]
        vals = np.take_along_axis(c, part, axis=-1)
        order = np.argsort(-vals, axis=-1, kind="stable")
        top[s : s + step] = np.take_along_axis(vals, order, axis=-1)
        where[s : s + step] = np.take_along_axis(part, order, axis=-1)
        del part
        q[:, s : s + step] = np.percentile(c, [75, 50, 25], axis=-1)
        first = top[s : s + step, 0]
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            sd[s : s + step] = c.std(axis=-1)
            mean = (c.sum(axis=-1) - first) / (L - 1)
            c -= mean[:, None]
            centred = np.einsum("ij,ij->i", c, c) - (first - mean) ** 2
        if not (np.isfinite(centred).all() and np.isfinite(sd[s : s + step]).all()):
            raise ValueError(
                "scores are too large for float64 sums of squares (up to "
                f"{np.abs(first).max():.3g}): divide them by a constant first"
            )
        bulk_mean[s : s + step] = mean
        bulk_sd[s : s + step] = np.sqrt(np.maximum(centred, 0.0) / (L - 1))
        c -= (first - mean)[:, None]  # now x - max
        np.exp(c, out=c)
        top_weight[s : s + step] = 1.0 / c.sum(axis=-1)
        del c
    return _Rows(top, where, q, sd, bulk_mean, bulk_sd, top_weight)


def _planted_key(where, k, keys):
    """The key column in the top ``k`` of improbably many rows, or None.

    Under exchangeable keys each column is among a row's ``k`` largest with
    probability ``k / keys``, independently over rows; a column whose count
    has a binomial tail below ``_KEY_LEVEL / keys`` (a Bonferroni bound over
    the columns) is a planted key, such as a sink every query attends to.
    """
    rows = where.shape[0]
    counts = np.bincount(where[:, :k].ravel(), minlength=keys)
    j = int(np.argmax(counts))
    from scipy import stats  # here: scipy.stats is slow to import, and only this and the interval need it

    tail = stats.binom.sf(counts[j] - 1, rows, k / keys)
    return j if tail < _KEY_LEVEL / keys else None


def _without_key(summary, key, k):
    """Each row's ``k + 1`` largest values with the key column ``key`` left out."""
    if key is None:
        return summary.top[:, : k + 1]
    keep = summary.where != key
    # each row drops at most one entry: stable-sort the kept ones first
    order = np.argsort(~keep, axis=-1, kind="stable")
    return np.take_along_axis(summary.top, order, axis=-1)[:, : k + 1]


def _row_scale(summary):
    """Each row's interquartile range (its standard deviation where that is 0); a constant row is refused."""
    q75, _, q25 = summary.q
    scale = q75 - q25
    bad = ~(scale > 0)
    if np.any(bad):
        scale = np.where(bad, summary.sd, scale)
    if np.any(~(scale > 0)):
        raise ValueError(f"scores: row {int(np.argmax(~(scale > 0)))} is constant; every row needs a spread")
    return scale


def _key_margin(x, key, summary):
    """Median over rows of the planted key's margin (T - mean)/sd over the other keys (else the top's).

    The other keys' mean is exact; their spread is the bulk's when the key
    tops the row, else the whole row's (off by O(1/L)).
    """
    L = x.shape[1]
    if key is None:
        value, on_top = summary.top[:, 0], np.ones(x.shape[0], dtype=bool)
    else:
        value, on_top = np.asarray(x[:, key], dtype=float), summary.where[:, 0] == key
    rest_mean = np.where(
        on_top, summary.bulk_mean, (summary.bulk_mean * (L - 1) + summary.top[:, 0] - value) / (L - 1)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.median((value - rest_mean) / np.where(on_top, summary.bulk_sd, summary.sd)))


def _spacings(x, k, summary, scale):
    """Normalized spacings i (X_(i) - X_(i+1)) / scale per row, i = 1..k, of the (k + 1) largest ``x``."""
    _refuse_ties(x, k)
    i = np.arange(1, k + 1)
    spacing = i * (x[:, :k] - x[:, 1 : k + 1]) / scale[:, None]
    # how far the k-th largest stands above the median, in the same units
    depth = (x[:, k - 1] - summary.q[1]) / scale
    return spacing, depth


def _refuse_ties(x, k):
    """Raise on rows whose upper order statistics tie too often to read a tail from (ties, quantization)."""
    zero = x[:, :k] == x[:, 1 : k + 1]  # (rows, k): X_(i) == X_(i+1)
    every = np.all(zero, axis=0)
    if np.any(every):
        i = int(np.argmax(every)) + 1
        raise ValueError(
            f"scores: the values ranked {i} and {i + 1} from the top are equal in every row (tied or "
            "quantized scores): the spacings of the upper order statistics must not all vanish"
        )
    top = float(zero[:, 0].mean())
    if top > _MAX_TIED:
        raise ValueError(
            f"scores: {top:.0%} of the rows have a tied maximum (at most {_MAX_TIED:.0%} accepted): "
            "the rows have no single top key"
        )
    frac = float(zero.mean())
    if frac > _MAX_TIED:
        raise ValueError(
            f"scores: {frac:.0%} of the spacings among each row's {k + 1} largest values are zero (at "
            f"most {_MAX_TIED:.0%} accepted): tied or quantized scores; pass unrounded scores "
            "(float32 or wider) or a smaller tail"
        )


def _positions(L, k, xi=None):
    """u_i = log(1/p_i) at ranks i = 2..k, p_i = (i - c)/L.

    The mean normalized spacing of a generalized-Pareto tail of shape xi is
    a((i - c)/L) with c = (1 + xi)/2 up to O(i^-2) (the ratio
    Gamma(i - xi)/Gamma(i)); Weibull-type tails (xi = 0) take c = 1/2.
    """
    i = np.arange(2, k + 1)
    c = 0.5 if xi is None else (1.0 + np.clip(np.asarray(xi, dtype=float), -2.0, 1.5))[..., None] / 2
    return np.log(L / (i - c))


def _regress(y, x, w):
    """Weighted least squares of y on (1, x) along the last axis: (c0, slope, rss), vectorized."""
    sw = w.sum(axis=-1, keepdims=True)
    xm = (w * x).sum(axis=-1, keepdims=True) / sw
    ym = (w * y).sum(axis=-1, keepdims=True) / sw
    dx, dy = x - xm, y - ym
    slope = (w * dx * dy).sum(axis=-1) / (w * dx * dx).sum(axis=-1)
    c0 = ym[..., 0] - slope * xm[..., 0]
    rss = (w * (dy - slope[..., None] * dx) ** 2).sum(axis=-1)
    return c0, slope, rss


def _tail_fits(mean_spacing, L, k):
    """Both tail models fitted to the log mean spacings of ranks 2..k: model -> (c0, slope, rss).

    Leading axes of ``mean_spacing`` (bootstrap resamples) are fitted at
    once; a rank whose mean spacing is zero (possible in a resample of tied
    rows) is left out of that fit.
    """
    y = mean_spacing[..., 1:]
    w = (y > 0).astype(float)
    y = np.log(np.where(y > 0, y, 1.0))
    u = _positions(L, k)
    fits = {"weibull": _regress(y, np.log(u), w)}
    power = _regress(y, u, w)
    for _ in range(3):  # the offset c = (1 + xi)/2 depends on the shape: iterate
        power = _regress(y, _positions(L, k, power[1]), w)
    fits["power"] = power
    return fits


def _climb(c0, slope, model, u0, u1):
    """Q(e^-u1) - Q(e^-u0) = integral of a(e^-v) dv from u0 to u1 under the model (vectorized)."""
    scale = np.exp(c0)
    power = slope + 1.0 if model == "weibull" else slope
    flat = np.abs(power) < 1e-12
    safe = np.where(flat, 1.0, power)
    if model == "weibull":
        return scale * np.where(flat, np.log(u1 / u0), (u1**safe - u0**safe) / safe)
    return scale * np.where(flat, u1 - u0, np.expm1(safe * (u1 - u0)) * np.exp(safe * u0) / safe)


def _scale_function(c0, slope, model, u):
    """The fitted a(p) at u = log(1/p)."""
    return np.exp(c0 + slope * (np.log(u) if model == "weibull" else u))


def _critical(c0, slope, model, n, u_k, depth):
    """The two-end critical scale at n keys from the fitted tail (normalized units)."""
    u = np.log(n)
    height = depth + _climb(c0, slope, model, u_k, u)  # Q(1/n) - median
    with np.errstate(over="ignore"):
        return np.maximum(
            1.0 / _scale_function(c0, slope, model, u), np.log(n / 2.0) / np.maximum(height, 1e-300)
        )


def _factor(fit, model, depth, L, k, lengths):
    """lambda(n) = alpha_c(n) / alpha_c(L) of one fitted model; fit and depth may carry a leading axis."""
    c0, slope = (np.asarray(v, dtype=float)[..., None] for v in fit[:2])
    dep = np.asarray(depth, dtype=float)[..., None]
    u_k = np.log(L / (k - 0.5))
    return _critical(c0, slope, model, lengths, u_k, dep) / _critical(c0, slope, model, float(L), u_k, dep)


def _curved_factor(mean_spacing, model, xi, depth, L, k, lengths):
    r"""The factor :math:`\lambda(n)` under a curved version of the chosen tail model (a model-bias probe).

    The chosen two-parameter model fits :math:`\log a` as a line in
    :math:`t = \log\log(1/p)` (Weibull-type) or :math:`t = \log(1/p)`
    (power); this refits it as a parabola in the same :math:`t`, the next
    term of a slowly converging tail such as the Gaussian's (whose
    :math:`\log a` bends in :math:`\log\log(1/p)`), and integrates the
    fitted :math:`a` numerically for the bulk end.  The distance
    :math:`|\log\lambda_{\text{curved}} - \log\lambda|` measures how far the
    factor moves when the model may bend.

    Parameters: ``mean_spacing`` (k,) the rows' mean normalized spacings;
    ``model`` "weibull" or "power"; ``xi`` the power model's shape (its
    plotting positions); ``depth`` the mean height of the k-th largest above
    the median; ``lengths`` (m,).  Returns the factor, shape (m,).
    """
    y = mean_spacing[1:]
    w = (y > 0).astype(float)
    y = np.log(np.where(y > 0, y, 1.0))
    u = _positions(L, k, None if model == "weibull" else xi)
    t = np.log(u) if model == "weibull" else u
    coef = np.polyfit(t, y, 2, w=np.sqrt(w))
    to_t = np.log if model == "weibull" else (lambda v: v)
    log_a = lambda v: np.polyval(coef, to_t(v))  # noqa: E731
    u_k = np.log(L / (k - 0.5))

    def critical(n):
        n = np.atleast_1d(np.asarray(n, dtype=float))
        top = np.log(n)
        # Q(1/n) - median: the depth plus the climb of a from u_k to log n
        grid = u_k + (top[:, None] - u_k) * np.linspace(0.0, 1.0, 401)[None, :]
        with np.errstate(over="ignore"):
            climb = np.trapezoid(np.exp(log_a(grid)), grid, axis=-1)
            return np.maximum(np.exp(-log_a(top)), np.log(n / 2.0) / np.maximum(depth + climb, 1e-300))

    return critical(lengths) / critical(float(L))[0]


def _law_name(model, slope):
    """The domain a fitted model reads, and its shape (beta for the Weibull-type model, else xi)."""
    if model == "weibull":
        return "gumbel", 1.0 / (1.0 + slope) if slope > -1.0 else np.inf
    return ("reverse-weibull" if slope < 0 else "frechet"), slope


def diagnose_law(scores, lengths, *, tail=None, level=0.9, resamples=200, seed=0):
    r"""Estimate which length law a head follows, and the factor :math:`\lambda(n)`, from its score rows.

    Long because it reads in one pass and must say why it trusts a reading:
    the planted-key screen, two tail models, the bootstrap and the rows' own
    reliability checks share the pass's summaries.

    The rows are the logits (score times scale) of one head at its training
    length :math:`L`, one query per row.  Each row is centred on its median
    and divided by its interquartile range, and its upper order statistics
    :math:`X_{(1)} \ge X_{(2)} \ge \dots` give the normalized spacings
    :math:`D_i = i\,(X_{(i)} - X_{(i+1)})`, which estimate the tail's
    scale function :math:`a(p) = S(x)/f(x)` (Rényi's representation of
    order statistics: :math:`D_i \approx a(p_i)\,E_i`, :math:`E_i` standard
    exponential, at the plotting position :math:`p_i = (i - c)/L`, with
    :math:`c = 1/2` for Weibull-type tails and :math:`c = (1 + \xi)/2` for
    a generalized-Pareto tail of shape :math:`\xi`, whose mean spacing is
    exactly proportional to :math:`\Gamma(i - \xi)/\Gamma(i) \approx (i -
    c)^{-\xi}`).  Averaged over rows, :math:`\log a` is fitted on
    :math:`i = 2, \dots, k` by two two-parameter models,

    - Weibull-type: :math:`\log a = c_0 + \theta\log\log(1/p)`, i.e.
      :math:`S(x) \approx e^{-x^\beta}` with :math:`\beta = 1/(1 + \theta)`;
    - power (generalized Pareto): :math:`\log a = c_0 + \xi\log(1/p)`, a
      bounded top with :math:`\kappa = -1/\xi - 1` if :math:`\xi < 0`, a
      Pareto tail with :math:`\gamma = 1/\xi` if :math:`\xi > 0`;

    and the better fit (smaller residual) is kept, the power model being
    read as Weibull-type when its shape is not told apart from 0 (the
    exponential tail, where the two meet).  The critical scale at
    :math:`n` keys is then that of :func:`iid_critical_scale` with the
    fitted tail, and :math:`\lambda(n) = \alpha_c(n)/\alpha_c(L)`.

    Planted-margin test: under an i.i.d. tail the top gap :math:`X_{(1)} -
    X_{(2)}` is about :math:`a(p_1)` times a standard exponential, so it
    exceeds :math:`a(p_1)\log 20` in 5% of rows.  If more than half of the
    rows do, the head is called planted, and :math:`\lambda(n)` is the median
    over rows of :func:`planted_length_factor` with each row's own target,
    bulk mean and bulk spread (a Gaussian bulk, leading order).

    Planted key: a key column that sits among the top :math:`k` of a row
    in improbably many rows (binomial tail, probability :math:`k/L` per row
    under exchangeable keys, below :math:`0.001/L`) is a key every query
    finds, such as a sink at a fixed position.  It is reported
    (``planted_key``, with its median margin over the other keys) and set
    aside, and the background's tail is read from the other :math:`L - 1`
    keys, so one such key does not flip the background's domain.  A
    target at a different position in each row is not found this way; the
    planted-margin test reads it.

    Intervals: the rows (independent queries) are resampled; each resample
    refits both models and keeps its better one, so the factor's interval
    carries the uncertainty of the choice (the shape's is that of the
    chosen model).  The quantiles are those of the expanded percentile
    interval (:math:`R` rows: the normal quantile replaced by
    :math:`\sqrt{R/(R-1)}\,t_{R-1}`), which corrects the percentile
    bootstrap's narrowness over few rows.  Measured on rows drawn from
    exact Weibull (:math:`\beta` = 0.7, 1, 2), uniform and Pareto
    (:math:`\gamma = 2`) laws, the 90% factor interval holds the law's own
    :math:`\lambda(16L)` in 0.90--0.94 of 200 draws of 64 rows of 1024 keys
    each (the former interval, a percentile bootstrap at :math:`p = i/L`
    refitting the chosen model only, in 0.68--0.95 of 60 draws: 0.68 on
    Pareto rows, whose spacings' means it misplaced), in 0.88--0.97 of 60
    draws of 128 rows of 256 keys (``tests/test_diagnose.py`` holds it),
    and in 0.79--0.90 of 200 draws of 16 rows of 64 keys, where the law
    itself is misread in up to a third of the draws (the chapter *Which
    law* measures it again).  That is the *sampling* interval
    (``sampling_interval``).  The returned ``factor_interval`` is
    bias-aware: on tails of at least 64 order statistics it is widened by
    :math:`e^{\pm b}`, with :math:`b` (``model_bias``) the distance
    between the factor and that of the chosen model bent into a parabola
    (``_curved_factor``).  On the battery's first eleven laws this raised the
    coverage from 0.59 to 0.89 at 64 rows of 1024 keys and from 0.49 to
    0.84 at 16384 keys, the median width from 2.8% to 12.5% and from 0.5%
    to 4.1% of the factor (Gaussian rows: 0.20 to 0.87 and 0.00 to 0.77).
    The factor's change between depths :math:`k` and :math:`k/4`
    (``depth_ratio``), tried as the widening instead, left Gaussian rows
    at 16384 keys uncovered.

    Ties: the spacings must not vanish.  Scores are refused (ValueError)
    when the :math:`i`-th and :math:`(i+1)`-th largest values are equal in
    every row, when more than half of the rows have a tied maximum, or when
    more than half of the spacings among each row's :math:`k + 1` largest
    values are zero (integer scores over a small range, scores rounded to
    a few digits).  Fewer ties are accepted: Gaussian rows rounded until
    almost half of those spacings vanish give a factor within 1% of the
    unrounded rows'.  Repeated keys (the same token
    twice, without positions) are ties of another kind: the row is then a
    discrete law, whose top weight at a longer length is shared by the
    copies of its top key, which no tail model describes.

    Bias: the factor extrapolates the fitted tail from :math:`p \ge 1/L`
    to :math:`p = 1/n`, and is unbiased only where the top :math:`k` of
    each row already follow the model.  On 64 rows of 1024 keys whose
    density at the top is an exact power :math:`(s_{\max} - s)^\kappa`,
    the factor at :math:`16L` is unbiased to within 1% for :math:`\kappa`
    from 0 to 6.5 (one draw scatters by 1.5--2%).  Cosine rows at finite
    :math:`d`, whose density :math:`\propto (1 - s^2)^\kappa` is a power
    only at the very top, are read too high by a bias that grows with
    :math:`\kappa = (d - 3)/2` (about 10% at :math:`d = 4`, 27% at
    :math:`d = 6`, 35% at :math:`d = 8`), with a :math:`\kappa` read too
    low.  From :math:`d = 16` on, at 1024 keys and more, they are read in
    the Gumbel domain (locally Gaussian at these lengths), the factor off
    by about 20% at :math:`d = 16` and under 2% from :math:`d = 128`
    (``experiments/diagnose_battery.py``; the evidence page of *Which law*
    reads it).  These readings are flagged unreliable.  Gaussian rows, in
    the Gumbel domain but not exactly Weibull-type at these :math:`p`,
    give a factor about 1.6% high at 1024 and at 16384 keys while the
    sampling interval narrows below that; the bias-aware interval holds
    the law's ratio in most draws, and the battery's Gumbel cells at 1024
    and 16384 keys (under 0.85, with the locally Gaussian cosine rows)
    keep them flagged there.

    Parameters
    ----------
    scores : array_like, shape (rows, keys)
        Finite logits of one head at its training length: at least 8 rows
        and 16 keys; no row constant.  Leave masked keys out (a row of a
        causal head holds only the keys its query sees) rather than
        passing ``-inf``.  Any real dtype; float32 is read in place.
    lengths : float or array_like
        Target lengths :math:`n` (``2 <= n <= 1e15``).  Lengths below
        the training length are accepted: the factor is then the ratio
        for a shorter context, read inside the fitted range of :math:`p`
        down to :math:`n = L/k`, and extrapolated below that.
    tail : int, optional
        Upper order statistics used, :math:`k` (``4 <= k < keys``); default
        ``max(4, min(keys // 4, 4096))`` (the top quarter of each row, at
        most 4096 order statistics).  ``resamples * (k + rows)`` doubles
        must fit in 2 GB, else ValueError.
    level : float
        Coverage of the bootstrap intervals, in (0, 1).
    resamples : int
        Bootstrap resamples of the rows (``>= 20``).
    seed : int
        Seed of the bootstrap, a non-negative integer (numpy integers
        accepted).

    Returns
    -------
    LawDiagnosis

    Notes
    -----
    Assumptions: the rows of a head share one law up to location and scale
    (a query moves and stretches its row, not its shape); the keys of a row
    are exchangeable apart from at most one target; the law at :math:`n > L`
    is the law at :math:`L` with more draws (no new kind of key, no
    positional effect beyond :math:`L`); the tail model extrapolates from
    :math:`p \ge 1/L` to :math:`p = 1/n`.  With :math:`L = 64` keys the
    tail spans under two decades of :math:`p` and the interval is wide; the
    chapter measures how wide.  The factor estimates the ratio
    :math:`\alpha_c(n)/\alpha_c(L)` of the two-end critical scale (the
    chapter's eq-two-end-scale, :math:`\alpha_c = 1/a_n` at the top end),
    not the factor that holds the top weight at :math:`2\alpha_c` (a
    different target, not estimated here).  The intervals reach their
    nominal coverage only on rows exactly in the tail models; ``reliable``
    and ``reading`` say where the battery measured less than 0.85 or the
    rows fail the data's own checks (see ``LawDiagnosis.reliable``).  The
    rows are taken as independent queries: rows that share keys and
    correlated queries make the bootstrap too narrow and can show a
    planted key where none is.

    Cost: one pass over the rows in chunks of about :math:`2^{22}` scores,
    keeping each row's :math:`k + 2` largest values, so the extra memory
    does not grow with the input (no float64 copy of it).  Measured on one
    loaded core: :math:`10^8` float32 Gaussian scores in 8 rows take about
    3 s and 0.2 GB beyond the input; 64 rows of 16384 keys 0.2 s.

    See Also
    --------
    iid_critical_scale : the same scale for a known law.
    planted_length_factor : the planted rows' factor.
    accumulation_scale : the scale of one row, from its gaps.

    Examples
    --------
    Gaussian rows need a :math:`\sqrt{\log n}`-type law:

    >>> import numpy as np
    >>> from attnscale import diagnose_law
    >>> rows = np.random.default_rng(1).normal(size=(64, 2048))
    >>> out = diagnose_law(rows, [8192, 32768], resamples=50)
    >>> out.law, out.domain
    ('gumbel', 'gumbel')
    >>> bool(1.5 < out.shape < 3.0)
    True
    """
    x, n, k = _diagnose_arguments(scores, lengths, tail, level, resamples, seed)
    rows, L = x.shape
    summary = _summaries(x, min(k + 2, L))
    scale = _row_scale(summary)
    _refuse_ties(summary.top[:, : k + 1], k)  # ties among the full rows' tops
    # a key column in the top k of improbably many rows (a sink, a fixed
    # target) is set aside, and the background's tail is read without it
    key = _planted_key(summary.where, k, L)
    L_bg = L if key is None else L - 1
    k_bg = min(k, L_bg - 1)
    background = _without_key(summary, key, k_bg)
    spacing, depth = _spacings(background, k_bg, summary, scale)
    # the shallower tail of the stability check: the top quarter of the tail
    k_half = min(max(_MIN_HALF_TAIL, k_bg // 4), k_bg)
    depth_half = (background[:, k_half - 1] - summary.q[1]) / scale
    fits = _tail_fits(spacing.mean(axis=0), L_bg, k_bg)
    model = min(fits, key=lambda m: fits[m][2])
    tails = _expanded_tails(level, rows)
    slope = float(fits[model][1])
    top_gap = (summary.top[:, 0] - summary.top[:, 1]) / scale
    planted_fraction, operating = _planted_margin(top_gap, scale, fits[model][0], slope, model, L_bg)
    planted = planted_fraction > _PLANTED_FRACTION
    per_row = None
    if planted:
        per_row = planted_length_factor(summary.top[:, 0], summary.bulk_mean, summary.bulk_sd, n, L)
    boot = _bootstrap(
        spacing, np.stack([depth, depth_half], axis=1), L_bg, (k_bg, k_half), resamples, seed, per_row
    )
    boot_fits, boot_half = boot["fits"][0], boot["fits"][1]
    boot_depth, boot_depth_half = boot["depth"][:, 0], boot["depth"][:, 1]
    # a power tail whose shape is not told apart from 0 is the exponential
    # tail, where both models meet (xi = 0, beta = 1): read it as Weibull-type
    lo_p, hi_p = np.quantile(boot_fits["power"][1], tails)
    if model == "power" and lo_p <= 0.0 <= hi_p:
        model = "weibull"
    slope = float(fits[model][1])
    factor = _factor(fits[model], model, float(depth.mean()), L_bg, k_bg, n)
    # each resample chooses its own model, as the point estimate did: the
    # interval carries the uncertainty of the choice
    boot_factor = _chosen_factor(boot_fits, boot_depth, L_bg, k_bg, n)
    boot_shape = np.array([_law_name(model, v)[1] for v in boot_fits[model][1]])
    name, shape = _law_name(model, slope)
    # the data's own checks: the factor read at depth k and at k/4, and the
    # domain each resample reads, against the point reading
    stable = _stability(
        boot_factor, _chosen_factor(boot_half, boot_depth_half, L_bg, k_half, n), boot_fits, name
    )
    margin = _key_margin(x, key, summary)
    # too few order statistics to compare two depths: nothing vouches for the model
    deep_enough = k_half < k_bg
    model_bias = np.zeros(n.shape)
    if k_bg >= _MIN_BENT_TAIL and not planted:
        # how far the factor moves when the tail model may bend (the
        # Gaussian's slow convergence, a tail not yet in its model)
        curved = _curved_factor(
            spacing.mean(axis=0),
            model,
            slope if model == "power" else None,
            float(depth.mean()),
            L_bg,
            k_bg,
            n,
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            model_bias = np.abs(np.log(curved) - np.log(factor))
        model_bias = np.where(np.isfinite(model_bias), model_bias, np.inf)
    if planted:
        factor = _nan_median(per_row)
        boot_factor = boot["planted"]
        operating = float(np.median(summary.top_weight))
        stable = dict(stable, depth_agrees=True, domain_agreement=1.0)
    with np.errstate(invalid="ignore"):  # infinite factors or shapes: inf - inf inside the interpolation
        unbounded = np.where(np.isnan(boot_factor), np.inf, boot_factor)
        interval = np.quantile(unbounded, tails, axis=0, method="nearest")
        shape_lo, shape_hi = np.quantile(boot_shape, tails, method="nearest")
    # the bias-aware interval: the sampling interval widened by the model-bias term on the log scale
    sampling = interval
    interval = np.stack(
        [
            np.where(np.isinf(model_bias), 0.0, sampling[0] * np.exp(-np.minimum(model_bias, 700.0))),
            np.where(np.isinf(model_bias), np.inf, sampling[1] * np.exp(np.minimum(model_bias, 700.0))),
        ]
    )
    domain = "planted" if planted else name
    background_domain = name
    coverage = _battery_coverage(domain, L)
    checks = bool(deep_enough and stable["depth_agrees"] and stable["domain_agreement"] >= _DOMAIN_AGREEMENT)
    if planted:
        # the planted factor models the bulk as Gaussian: a heavier bulk
        # (a Frechet background) or a bounded one is not in that model
        checks = bool(deep_enough and background_domain == "gumbel")
    # a key found but not read as planted: the factor is the background's,
    # and no factor of it holds the key's weight
    unread_key = key is not None and not planted
    if unread_key:
        checks = False
    reliable = bool(coverage >= RELIABLE_COVERAGE and abs(level - 0.9) < 1e-6 and checks)
    if reliable:
        reading = f"measured coverage {coverage:.2f} on the battery"
    elif unread_key:
        reading = (
            f"unreliable for this reading: key {key} stands out but the rows are not read as "
            "planted (the factor is the background's, and none holds that key's weight)"
        )
    else:
        reading = "unreliable for this reading"
    return LawDiagnosis(
        law=domain,
        formula=LAW_FORMULAS[domain],
        shape=float(shape),
        beta=float(shape) if name == "gumbel" else float("nan"),
        shape_interval=(float(shape_lo), float(shape_hi)),
        planted_fraction=planted_fraction,
        operating_point=operating,
        train_length=int(L),
        lengths=n,
        factor=np.asarray(factor, dtype=float),
        factor_interval=interval,
        sampling_interval=sampling,
        level=float(level),
        domain=domain,
        coverage=coverage,
        background=background_domain,
        planted_key=key,
        margin=margin,
        reliable=reliable,
        reading=reading,
        depth_ratio=float(stable["depth_ratio"]),
        domain_agreement=float(stable["domain_agreement"]),
        model_bias=model_bias,
        checks=checks,
    )


#: Measured coverage of the 90% factor interval on ``coverage_battery``
#: (30 draws of each of its twelve laws per size, seed 0, resamples 100), by
#: the domain the diagnostic read and the battery size nearest the head's
#: keys (between two, the more pessimistic: ``_battery_coverage``).
#: Regenerated by ``experiments/diagnose_battery.py``, which stores
#: the draws in book/data/which-law-battery.json; tests/test_diagnose.py
#: holds this table to that file and re-measures it on fresh draws.
BATTERY_COVERAGE = {
    ("gumbel", 64): 0.84,
    ("gumbel", 256): 0.98,
    ("gumbel", 1024): 0.81,
    ("gumbel", 16384): 0.71,
    ("reverse-weibull", 64): 0.83,
    ("reverse-weibull", 256): 0.99,
    ("reverse-weibull", 1024): 0.98,
    ("reverse-weibull", 16384): 1.00,
    ("frechet", 64): 0.79,
    ("frechet", 256): 0.98,
    ("frechet", 1024): 1.00,
    ("frechet", 16384): 0.98,
    ("planted", 64): 0.83,
    ("planted", 256): 0.93,
    ("planted", 1024): 0.87,
    ("planted", 16384): 0.90,
}
#: Below this measured coverage a reading is flagged unreliable.
RELIABLE_COVERAGE = 0.85


def _battery_coverage(domain, keys):
    """The stored coverage of ``domain`` at the battery size nearest ``keys`` on a log scale.

    A size as near to two battery sizes (within a relative 1e-9 of the log
    distance, e.g. 128 keys between 64 and 256) takes the more pessimistic
    neighbour: the smaller of their two coverages.  NaN for a domain the
    table lacks.
    """
    sizes = np.array([k for _, k in BATTERY_SIZES], dtype=float)
    dist = np.abs(np.log(sizes) - np.log(float(keys)))
    tied = sizes[dist <= dist.min() * (1.0 + 1e-9) + 1e-12]
    got = [BATTERY_COVERAGE.get((domain, int(k)), float("nan")) for k in tied]
    return float("nan") if np.any(np.isnan(got)) else float(min(got))


def reliability_table(records):
    """Coverage by (domain read, keys) from ``coverage_battery`` records."""
    out = {}
    for key in sorted({(r["read"], r["keys"]) for r in records}):
        hits = [r["covered"] for r in records if (r["read"], r["keys"]) == key]
        out[key] = float(np.mean(hits))
    return out


def _bulk_moments(x, target):
    """Each row's top value and the mean and standard deviation (ddof 0) of the other keys.

    Two passes over the rows, without sorting them: the mean from the row sum,
    the variance from the centred squares less the top key's share.
    """
    L = x.shape[-1]
    mean = (x.sum(axis=-1) - target) / (L - 1)
    centred = np.square(x - mean[:, None]).sum(axis=-1) - (target - mean) ** 2
    return target, mean, np.sqrt(np.maximum(centred, 0.0) / (L - 1))


def _diagnose_arguments(scores, lengths, tail, level, resamples, seed=0):
    """The checked arguments of :func:`diagnose_law`: the rows, the target lengths (1-D) and k."""
    # no float64 copy of the whole input: _summaries converts and checks it
    # (finite values) a chunk of rows at a time
    if isinstance(scores, (str, bytes)):
        raise TypeError(f"scores must be an array of real numbers, got {type(scores).__name__}")
    if isinstance(scores, np.ma.MaskedArray):
        raise TypeError(
            "scores must not be a masked array (its mask would be ignored): pass each row's unmasked "
            "keys as a plain array (rows of equal length)"
        )
    try:
        x = np.asarray(scores)
    except Exception as exc:  # ragged sequences and the like
        raise TypeError(f"scores must be a rectangular array of real numbers: {exc}") from None
    if x.dtype.kind not in "iuf":
        raise TypeError(f"scores must be an array of real numbers, got dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"scores must be a 2-D array (rows, keys), got {x.ndim} dimension(s)")
    rows, L = x.shape
    if rows < 8:
        raise ValueError(f"scores must have at least 8 rows (queries), got {rows}")
    if L < 16:
        raise ValueError(f"scores must have at least 16 keys per row, got {L}")
    n = _validate.key_count(lengths, "lengths")
    if np.any(n > 1e15):
        raise ValueError(f"lengths must be <= 1e15, got {n[n > 1e15].flat[0]:g}")
    if n.ndim > 1:
        raise ValueError(f"lengths must be a number or a 1-D sequence of lengths, got {n.ndim} dimensions")
    n = np.atleast_1d(n)
    if tail is None:
        k = max(4, min(L // 4, _MAX_DEFAULT_TAIL))
    else:
        if isinstance(tail, bool) or not isinstance(tail, (int, np.integer)):
            raise TypeError(f"tail must be an integer in [4, keys), got {type(tail).__name__}")
        if not 4 <= tail < L:
            raise ValueError(f"tail must be an integer in [4, keys), got {tail!r}")
        k = int(tail)
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 20:
        raise ValueError(f"resamples must be an integer >= 20, got {resamples!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float, np.integer, np.floating)):
        raise TypeError(f"level must be a real number in (0, 1), got {type(level).__name__}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a non-negative integer, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    # bounded cost: every large array counted up front
    need = _memory_estimate(rows, L, k, resamples, n.size)
    if need > _MAX_EXTRA_BYTES:
        raise ValueError(
            f"scores, tail and resamples: the diagnostic would need about {need / 1e9:.1f} GB beyond the "
            f"input (at most {_MAX_EXTRA_BYTES / 1e9:.0f} GB); pass fewer rows, a smaller tail or "
            "fewer resamples"
        )
    return x, n, k


def _memory_estimate(rows, L, k, resamples, nlen):
    """Bytes the diagnostic holds beyond its input, an upper estimate (tests/test_diagnose.py checks it).

    The sum of: one chunk of the pass over the scores (a float64 copy, its
    partition indices, the percentile's copy: 48 bytes a score); the
    per-row arrays (the ``k + 2`` largest values and their columns, the
    background's copy, the spacings: 64 bytes per row and order statistic,
    and 128 per row); the planted rows' per-row factors and their
    root-finding temporaries (160 bytes per row and length, counted
    always); one chunk of bootstrap resamples (``_boot_bytes_per_resample``,
    at most ``_BOOT_CHUNK_BYTES``); and the per-resample fits and factors
    (``8 * (20 + 30 * lengths)`` bytes each).
    """
    chunk = min(rows, max(1, _CHUNK_SCORES // L)) * L
    per_resample = _boot_bytes_per_resample(rows, k, nlen)
    step = max(1, min(resamples, int(_BOOT_CHUNK_BYTES // per_resample)))
    return float(
        48.0 * chunk
        + 64.0 * rows * (k + 2)
        + 128.0 * rows
        + 160.0 * rows * nlen
        + step * per_resample
        + 8.0 * resamples * (20 + 30 * nlen)
    )


def _boot_bytes_per_resample(rows, k, nlen):
    """Bytes one bootstrap resample holds while its chunk is computed.

    The row picks, their offsets and counts (four arrays of ``rows``), the
    mean spacings and both tail fits' temporaries (about 16 arrays of
    ``k``), and for planted rows the picked per-row factors with the NaN
    median's copies (four arrays of ``rows * nlen``).
    """
    return 8.0 * (4 * rows + 16 * k + 4 * rows * nlen)


def _bootstrap(spacing, depths, L, ks, resamples, seed, per_row=None):
    """The bootstrap over rows (independent queries), a chunk of resamples at a time.

    Each resample draws ``rows`` rows with replacement; its mean spacings
    are refitted by both tail models at every depth in ``ks`` (a prefix of
    the ranks), with its mean of each column of ``depths``, and, given
    ``per_row`` (rows, lengths), the NaN median of the rows it drew.  A chunk
    holds at most ``_BOOT_CHUNK_BYTES`` (``_boot_bytes_per_resample``), so
    the extra memory does not grow with the number of resamples; a single
    chunk draws the same picks as one call would.

    Returns
    -------
    dict
        ``fits``: per depth, model -> (c0, slope, rss), each of shape
        (resamples,); ``depth``: (resamples, depths.shape[1]); ``planted``:
        (resamples, lengths) or None.
    """
    rows, k = spacing.shape
    nlen = 0 if per_row is None else per_row.shape[1]
    step = int(max(1, min(resamples, _BOOT_CHUNK_BYTES // _boot_bytes_per_resample(rows, k, nlen))))
    rng = np.random.default_rng(seed)
    fits = [{"weibull": [], "power": []} for _ in ks]
    dep, planted = [], []
    for s in range(0, resamples, step):
        r = min(step, resamples - s)
        picks = rng.integers(0, rows, (r, rows))
        flat = (picks + rows * np.arange(r)[:, None]).ravel()
        counts = np.bincount(flat, minlength=r * rows).reshape(r, rows).astype(float)
        del flat
        mean = counts @ spacing / rows
        dep.append(counts @ depths / rows)
        del counts
        for j, kk in enumerate(ks):
            for m, fit in _tail_fits(mean[:, :kk], L, kk).items():
                fits[j][m].append(np.stack(fit))
        del mean
        if per_row is not None:
            planted.append(_nan_median(np.moveaxis(per_row[picks], 1, 0)))
        del picks
    fits = [{m: tuple(np.concatenate(v, axis=1)) for m, v in f.items()} for f in fits]
    return dict(
        fits=fits,
        depth=np.concatenate(dep),
        planted=np.concatenate(planted) if per_row is not None else None,
    )


def _chosen_factor(boot_fits, boot_depth, L, k, n):
    """Each resample's factor under its own better tail model (the smaller residual)."""
    return np.where(
        (boot_fits["weibull"][2] <= boot_fits["power"][2])[:, None],
        _factor(boot_fits["weibull"], "weibull", boot_depth, L, k, n),
        _factor(boot_fits["power"], "power", boot_depth, L, k, n),
    )


def _resample_domains(boot_fits):
    """The domain each resample reads: Gumbel if its Weibull-type fit is better, else by the sign of xi."""
    weibull = boot_fits["weibull"][2] <= boot_fits["power"][2]
    xi = boot_fits["power"][1]
    return np.where(weibull, "gumbel", np.where(xi < 0, "reverse-weibull", "frechet"))


def _stability(boot_factor, boot_factor_half, boot_fits, domain):
    r"""The data's checks on a reading: depth stability and domain agreement.

    - Depth: per resample, :math:`\log\lambda_k(n) - \log\lambda_{k/4}(n)`,
      the factor read from the top :math:`k` and from the top :math:`k/4`
      order statistics of the same resampled rows.  A tail in its model
      gives the same factor at both depths; a tail that reaches its model
      only deeper than :math:`k/4` (Student-t rows read at the top quarter)
      does not.  The depths agree when the central ``_DEPTH_LEVEL`` interval
      of the difference holds 0 at every length and is at most
      ``2 * _DEPTH_POWER`` wide (narrow enough to see a ratio of
      :math:`e^{1/3}`; at 64 keys it rarely is).
    - Domain: the share of resamples whose own better model and sign of
      :math:`\xi` give the domain read (``_resample_domains``).

    Returns ``dict(depth_agrees, depth_ratio, domain_agreement)``, with
    ``depth_ratio`` the median over resamples of
    :math:`\lambda_k/\lambda_{k/4}` at the last length.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.log(boot_factor) - np.log(boot_factor_half)
    diff = np.where(np.isfinite(diff), diff, np.nan)
    tail = (1.0 - _DEPTH_LEVEL) / 2
    if np.all(np.isnan(diff)):
        agrees, ratio = False, float("nan")
    else:
        lo, hi = np.nanquantile(diff, [tail, 1.0 - tail], axis=0)
        # the check vouches only where it could see a difference of e^(1/3)
        agrees = bool(np.all((lo <= 0.0) & (0.0 <= hi) & (hi - lo <= 2.0 * _DEPTH_POWER)))
        ratio = float(np.exp(np.nanmedian(diff[:, -1])))
    agreement = float(np.mean(_resample_domains(boot_fits) == domain))
    return dict(depth_agrees=agrees, depth_ratio=ratio, domain_agreement=agreement)


def _planted_margin(top_gap, scale, c0, slope, model, L):
    """The planted-margin test's fraction of rows, and the rows' operating point under the i.i.d. fit.

    The top spacing D_1 is about a(p_1) E_1, at the first plotting position
    p_1 = (1 - c)/L (c < 1: a mean spacing exists); the fraction is that of
    rows whose D_1 exceeds a(p_1) log 20.  The operating point is the median
    of c = alpha / alpha_c(L) at alpha = 1, with alpha_c(L) = 1 / (a(1/L) *
    scale) in logit units.
    """
    c_first = 0.5 if model == "weibull" else (1.0 + min(max(slope, -2.0), 0.9)) / 2
    a_first = _scale_function(c0, slope, model, np.log(L / (1.0 - c_first)))
    planted_fraction = float(np.mean(top_gap > _OUTLIER * a_first))
    operating = float(np.median(_scale_function(c0, slope, model, np.log(L)) * scale))
    return planted_fraction, operating


def _expanded_tails(level, rows):
    r"""Quantiles of the expanded percentile interval over ``rows`` resampled rows.

    The percentile bootstrap of a mean over few rows is too narrow by the
    factor :math:`t_{R-1}\sqrt{R/(R-1)}/z` (the divisor R of the bootstrap
    variance and the normal quantile in place of Student's); the expanded
    interval takes its quantiles at the level whose normal quantile is
    :math:`\sqrt{R/(R-1)}\,t_{R-1,(1+\text{level})/2}` (Hesterberg 2015).
    """
    from scipy import stats  # here: as above

    z = np.sqrt(rows / (rows - 1.0)) * stats.t.ppf(0.5 + level / 2, rows - 1)
    upper = float(stats.norm.cdf(z))
    return [1.0 - upper, upper]


def _nan_median(per_row):
    """Median over rows (axis 0), a broken row (NaN) counting as an infinite factor."""
    with np.errstate(invalid="ignore"):
        return np.quantile(np.where(np.isnan(per_row), np.inf, per_row), 0.5, axis=0, method="nearest")


def _battery_laws():
    """The coverage battery: every law the chapter names, as (name, sampler, alpha_c(n), domain).

    The i.i.d. laws' ``alpha_c`` is the two-end scale of :func:`iid_critical_scale`
    written with SciPy's quantile and density (an independent route); the
    planted rows' is :func:`planted_length_factor` at the population values.
    """
    from scipy import stats as st

    def two_end(dist):
        def alpha_c(n):
            top = dist.isf(1.0 / n)
            return np.maximum(n * dist.pdf(top), np.log(n / 2.0) / (top - dist.median()))

        return alpha_c

    iid = {
        "Gaussian": (st.norm(), "gumbel"),
        "Weibull-type, beta = 4": (st.weibull_min(4.0), "gumbel"),
        "exponential (beta = 1)": (st.expon(), "gumbel"),
        "Weibull-type, beta = 0.7": (st.weibull_min(0.7), "gumbel"),
        "uniform (kappa = 0)": (st.uniform(), "reverse-weibull"),
        "cosine, d = 4 (kappa = 0.5)": (st.beta(1.5, 1.5, loc=-1.0, scale=2.0), "reverse-weibull"),
        "cosine, d = 6 (kappa = 1.5)": (st.beta(2.5, 2.5, loc=-1.0, scale=2.0), "reverse-weibull"),
        "cosine, d = 32 (kappa = 14.5)": (st.beta(15.5, 15.5, loc=-1.0, scale=2.0), "reverse-weibull"),
        "cosine, d = 128 (kappa = 62.5)": (st.beta(63.5, 63.5, loc=-1.0, scale=2.0), "reverse-weibull"),
        "Pareto, gamma = 2": (st.pareto(2.0), "frechet"),
        "Student-t, 2 dof (gamma = 2)": (st.t(2.0), "frechet"),
    }
    out = [
        (name, (lambda r, s, dist=dist: dist.rvs(size=s, random_state=r)), two_end(dist), domain)
        for name, (dist, domain) in iid.items()
    ]

    def planted(r, s):
        x = r.normal(size=s)
        x[:, 0] = 7.0
        return x

    out.append(("planted, Delta = 7 over N(0, 1)", planted, None, "planted"))
    return out


#: The battery's sizes (rows, keys): the smallest and largest a head gives
#: the diagnostic, and two between (256 keys: a common head length, once
#: read off the 64-key cell).
BATTERY_SIZES = ((16, 64), (32, 256), (64, 1024), (64, 16384))


def coverage_battery(draws=30, sizes=BATTERY_SIZES, level=0.9, resamples=100, seed=0, ratio=16.0):
    """Coverage of :func:`diagnose_law`'s factor interval, measured by simulation.

    For every law of ``_battery_laws`` and every size, ``draws`` heads
    are drawn and diagnosed; a draw covers when its interval holds the
    law's own two-end ratio :math:`\\alpha_c(rL)/\\alpha_c(L)` (planted rows:
    the planted factor), with :math:`r` = ``ratio``.

    Returns
    -------
    list of dict
        One record per draw: ``law``, ``rows``, ``keys``, ``domain`` (the
        law's), ``read`` (the domain read), ``covered``, ``factor``, its
        interval ``low`` and ``high``, ``truth``, ``shape`` (read),
        ``reliable`` (as the diagnostic said: the stored coverage and the
        data's own checks), ``checks`` (the data's checks alone),
        ``planted_key``, ``model_bias`` and ``depth_ratio`` (the two
        candidate model-bias terms), the sampling interval alone
        (``low_sampling``, ``high_sampling``) and whether it covered
        (``covered_sampling``).
    """
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be a positive integer, got {draws!r}")
    rng = np.random.default_rng(seed)
    records = []
    for name, draw, alpha_c, domain in _battery_laws():
        for rows, keys in sizes:
            n = ratio * keys
            if alpha_c is None:
                truth = float(planted_length_factor(7.0, 0.0, 1.0, n, keys))
            else:
                truth = float(alpha_c(n) / alpha_c(float(keys)))
            for j in range(draws):
                x = draw(rng, (rows, keys))
                out = diagnose_law(x, [n], level=level, resamples=resamples, seed=j)
                lo, hi = out.factor_interval[:, 0]
                lo_s, hi_s = out.sampling_interval[:, 0]
                records.append(
                    dict(
                        law=name,
                        rows=rows,
                        keys=keys,
                        domain=domain,
                        read=out.domain,
                        covered=bool(lo <= truth <= hi),
                        factor=float(out.factor[0]),
                        low=float(lo),
                        high=float(hi),
                        truth=truth,
                        shape=float(out.shape),
                        reliable=out.reliable,
                        checks=out.checks,
                        planted_key=out.planted_key,
                        model_bias=float(out.model_bias[0]),
                        depth_ratio=float(out.depth_ratio),
                        low_sampling=float(lo_s),
                        high_sampling=float(hi_s),
                        covered_sampling=bool(lo_s <= truth <= hi_s),
                    )
                )
    return records
