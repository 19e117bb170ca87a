r"""Monte Carlo of the exact gradient objective, to test the mean-field approximation.

The mean-field objective (:func:`attnscale.gaussian_objective`,
:func:`attnscale.cosine_objective`) replaces the sums in
:math:`\sum_i p_i^2 = \sum_i e^{2\alpha s_i} / (\sum_i e^{\alpha s_i})^2` by
their expectations.  Here the sums are kept: scores are sampled, and
:math:`\alpha(1 - \sum_i p_i^2)` is evaluated on each sample, for many
scales at once, with common random numbers (the same samples for every
:math:`\alpha`), so that curves over :math:`\alpha` are smooth and their
maxima comparable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..support import _validate
from ..support.intervals import seed_interval

__all__ = [
    "TypicalRowScales",
    "conditional_mean_log_scale",
    "conditional_objective",
    "sample_cosine_scores",
    "sample_gaussian_scores",
    "sampled_objective",
    "typical_row_scales",
]


def sample_gaussian_scores(samples, n, rng):
    """Standard normal scores, shape ``(samples, n)``.

    Parameters
    ----------
    samples : int
        Number of independent rows, ``>= 1``.
    n : int
        Keys per row, ``>= 2``.
    rng : numpy.random.Generator
        The source of randomness (seed it for reproducible numbers).

    See Also
    --------
    sample_cosine_scores : the same for cosine scores.
    sampled_objective : the objective averaged over such rows.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import sample_gaussian_scores
    >>> sample_gaussian_scores(3, 5, np.random.default_rng(0)).shape
    (3, 5)
    """
    samples, n = _validate.count(samples, "samples"), _validate.count(n, "n", 2)
    return rng.standard_normal((samples, n))


def sample_cosine_scores(samples, n, d, rng):
    r"""Cosines between a fixed direction and uniform random directions in :math:`\mathbb R^d`.

    By rotation invariance the cosine with a fixed query is the first
    coordinate of a uniform unit vector, :math:`z_1 / \lVert z \rVert` with
    :math:`z \sim \mathcal N(0, I_d)`; it is drawn as
    :math:`z_1 / \sqrt{z_1^2 + \chi^2_{d-1}}`, which costs O(1) per score
    whatever :math:`d` is.

    Parameters
    ----------
    samples : int
        Number of rows, ``>= 1``.
    n : int
        Keys per row, ``>= 2``.
    d : float
        Dimension, ``>= 2``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray
        Shape ``(samples, n)``, values in :math:`[-1, 1]`.
    """
    samples, n = _validate.count(samples, "samples"), _validate.count(n, "n", 2)
    d = float(_validate.dimension(d))
    first = rng.standard_normal((samples, n))
    rest = rng.chisquare(d - 1.0, (samples, n))
    return first / np.sqrt(first * first + rest)


def sampled_objective(scores, alphas):
    r"""The exact objective :math:`\alpha(1 - \sum_i p_i^2)` of every row at every scale.

    Parameters
    ----------
    scores : array_like
        Shape ``(samples, n)``: one row of scores per sample.
    alphas : array_like
        One-dimensional grid of scales, each ``>= 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(len(alphas), samples)``.

    See Also
    --------
    expected_gradient : the exact expectation it estimates.
    sample_gaussian_scores, sample_cosine_scores : scores to pass it.

    Notes
    -----
    Computed from the unnormalized weights :math:`e^{\alpha(s_i - \max s)}`,
    one scale at a time (memory stays at one copy of ``scores``).  The
    absolute error is about :math:`\alpha \cdot 10^{-16}`, which is what
    sample means and medians need; :func:`attnscale.gradient_objective` is the
    slower routine that also keeps the relative accuracy of tiny values.
    """
    scores = _validate.scores(scores, "scores")
    if scores.ndim != 2:
        raise ValueError(f"scores must have shape (samples, n), got {scores.shape}")
    alphas = _validate.scale(alphas, "alphas")
    if alphas.ndim != 1:
        raise ValueError(f"alphas must be one-dimensional, got shape {alphas.shape}")
    gap = scores - scores.max(axis=1, keepdims=True)
    out = np.empty((alphas.size, scores.shape[0]))
    for k, alpha in enumerate(alphas):
        with np.errstate(under="ignore", over="ignore"):
            w = np.exp(alpha * gap)
        total = w.sum(axis=1)
        out[k] = alpha * (1.0 - np.einsum("ij,ij->i", w, w) / (total * total))
    return out


@dataclass(frozen=True)
class TypicalRowScales:
    r"""Scales that maximize the gradient of a *typical* row, with their spread over seeds.

    Every field named after a criterion holds ``(estimate, half_width)``: the
    mean over independent seeds and the half-width of its 95% Student-t
    confidence interval.

    Attributes
    ----------
    median : (float, float)
        Maximizer over :math:`\alpha` of the median over rows of
        :math:`\alpha(1 - \sum_i p_i^2)`.
    mean_log : (float, float)
        Maximizer of the mean over rows of :math:`\log \alpha(1 - \sum_i p_i^2)`.
    per_row : (float, float)
        Median over rows of each row's own maximizer.
    flat : (float, float)
        Ends of the range of :math:`\alpha` over which the pooled median curve
        stays within ``flat_level`` of its peak (a measure of how sharp the
        median criterion is).
    per_seed : dict
        The three criteria for every seed (arrays).
    alphas, median_curve
        The grid and the median curve over all rows pooled.
    """

    median: tuple
    mean_log: tuple
    per_row: tuple
    flat: tuple
    per_seed: dict
    alphas: np.ndarray
    median_curve: np.ndarray


def _refined_argmax(alphas, values):
    """Argmax on a log grid, refined by a parabola through the peak and its neighbours (in log alpha)."""
    x = np.log(alphas)
    k = np.argmax(values, axis=0)
    k = np.clip(k, 1, len(alphas) - 2)
    cols = np.arange(values.shape[1]) if values.ndim == 2 else None
    y0, y1, y2 = (values[k + j, cols] if cols is not None else values[k + j] for j in (-1, 0, 1))
    h = x[1] - x[0]
    denom = y0 - 2 * y1 + y2
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(denom < 0, 0.5 * h * (y0 - y2) / denom, 0.0)
    return np.exp(x[k] + np.clip(shift, -h, h))


def typical_row_scales(
    n, *, scores="gaussian", d=None, rows=400, seeds=5, alphas=None, seed=0, flat_level=0.98
):
    r"""Typical-row maximizers of the gradient :math:`\alpha(1 - \sum_i p_i^2)`, by sampling.

    The *expected* gradient for i.i.d. scores rises towards its
    :math:`\alpha \to \infty` limit (:func:`attnscale.expected_gradient`)
    with no finite maximizer on the range the book computes (a numerical
    finding, proved only for :math:`n = 2`), so it names no best scale; a
    typical row does.  Three criteria are
    estimated on ``seeds`` independent batches of ``rows`` rows each (common
    random numbers across :math:`\alpha` within a batch):

    * ``median``: the maximizer of the median over rows;
    * ``mean_log``: the maximizer of the mean of the logarithm;
    * ``per_row``: the median of the rows' own maximizers.

    Parameters
    ----------
    n : int
        Keys per row, ``>= 2``.
    scores : {"gaussian", "cosine"}
        Standard normal scores, or cosines in dimension ``d``.
    d : float, optional
        Dimension, required with ``scores="cosine"``.
    rows, seeds : int
        Rows per batch (``>= 10``) and independent batches (``>= 2``).
    alphas : array_like, optional
        Increasing, log-spaced grid of scales; by default 64 points from
        :math:`0.3\,\alpha^*` to :math:`30\,\alpha^*` of the mean-field optimum.
    seed : int
        Seed of the first batch; batch ``k`` uses ``seed + k``.
    flat_level : float
        Level, relative to the peak, that defines the ``flat`` range.

    Returns
    -------
    TypicalRowScales

    See Also
    --------
    conditional_mean_log_scale : the ``mean_log`` criterion with less noise.
    gaussian_alpha_star, cosine_alpha_star : the mean-field optimum the default grid is centred on.

    Examples
    --------
    >>> from attnscale import typical_row_scales
    >>> result = typical_row_scales(64, rows=20, seeds=2)
    >>> len(result.per_seed["median"])  # one maximizer per batch
    2
    """
    n = _validate.count(n, "n", 2)
    rows = _validate.count(rows, "rows", 10)
    seeds = _validate.count(seeds, "seeds", 2)
    seed = _validate.count(seed, "seed", 0)
    star, d = _mean_field_optimum(n, scores, d)
    if not 0.0 < flat_level < 1.0:
        raise ValueError(f"flat_level must lie in (0, 1), got {flat_level!r}")
    alphas = _log_grid(alphas, star)
    per_seed = {"median": [], "mean_log": [], "per_row": []}
    pooled = []
    for k in range(seeds):
        rng = np.random.default_rng(seed + k)
        s = (
            sample_gaussian_scores(rows, n, rng)
            if scores == "gaussian"
            else sample_cosine_scores(rows, n, d, rng)
        )
        values = sampled_objective(s, alphas)  # (alphas, rows)
        pooled.append(values)
        for key, value in _typical_maximizers(alphas, values).items():
            per_seed[key].append(value)
    curve = np.median(np.concatenate(pooled, axis=1), axis=1)
    inside = np.flatnonzero(curve >= flat_level * curve.max())
    return TypicalRowScales(
        median=_mean_and_half(per_seed["median"]),
        mean_log=_mean_and_half(per_seed["mean_log"]),
        per_row=_mean_and_half(per_seed["per_row"]),
        flat=(float(alphas[inside[0]]), float(alphas[inside[-1]])),
        per_seed={key: np.asarray(v) for key, v in per_seed.items()},
        alphas=alphas,
        median_curve=curve,
    )


def _mean_field_optimum(n, scores, d):
    """The mean-field optimum for ``n`` keys of the named scores, and the checked ``d`` (or None)."""
    from .cosine import cosine_alpha_star
    from .gaussian import gaussian_alpha_star

    if scores == "gaussian":
        if d is not None:
            raise ValueError("d is only used with scores='cosine'")
        return float(gaussian_alpha_star(n)), None
    if scores == "cosine":
        if d is None:
            raise ValueError("d (the head dimension) is required with scores='cosine'")
        d = float(_validate.dimension(d))
        return float(cosine_alpha_star(n, d)), d
    raise ValueError(f"scores must be 'gaussian' or 'cosine', got {scores!r}")


def _log_grid(alphas, star):
    """The checked grid of :func:`typical_row_scales` (64 points from 0.3 to 30 ``star`` if None)."""
    alphas = (
        np.geomspace(0.3 * star, 30.0 * star, 64) if alphas is None else _validate.scale(alphas, "alphas")
    )
    if alphas.ndim != 1 or alphas.size < 5 or np.any(alphas <= 0):
        raise ValueError("alphas must be a one-dimensional grid of at least 5 positive scales")
    ratio = alphas[1:] / alphas[:-1]
    if not np.allclose(ratio, ratio[0], rtol=1e-9) or ratio[0] <= 1:
        raise ValueError("alphas must be increasing and log-spaced (np.geomspace)")
    return alphas


def _mean_and_half(values):
    """Mean over seeds and the half-width of its 95% Student-t interval, as two floats."""
    mean, half = seed_interval(values)
    return float(mean), float(half)


def _typical_maximizers(alphas, values):
    """One batch's three typical-row maximizers (:func:`typical_row_scales`); ``values`` is (alphas, rows)."""
    floor = alphas[:, None] * 1e-15  # below the objective's absolute rounding error
    return {
        "median": float(_refined_argmax(alphas, np.median(values, axis=1))),
        "mean_log": float(_refined_argmax(alphas, np.mean(np.log(np.maximum(values, floor)), axis=1))),
        "per_row": float(np.median(_refined_argmax(alphas, values))),
    }


def _graded_unit_nodes(smallest=1e-12, ratio=3.0, order=6):
    """Gauss-Legendre nodes and weights on (0, 1), on panels graded geometrically towards both ends."""
    xi, wxi = np.polynomial.legendre.leggauss(order)
    edges = [0.5]
    while edges[-1] > smallest:
        edges.append(edges[-1] / ratio)
    edges = np.array(edges[::-1])  # smallest ... 0.5
    lo, hi = edges[:-1], edges[1:]
    nodes = (0.5 * (lo + hi))[:, None] + (0.5 * (hi - lo))[:, None] * xi
    weights = (0.5 * (hi - lo))[:, None] * wxi
    nodes, weights = nodes.ravel(), weights.ravel()
    # [0, smallest] as one midpoint node; the upper half mirrored (graded towards 1)
    nodes = np.concatenate([[0.5 * edges[0]], nodes, 1.0 - nodes[::-1], [1.0 - 0.5 * edges[0]]])
    weights = np.concatenate([[edges[0]], weights, weights[::-1], [edges[0]]])
    return nodes, weights


def conditional_objective(alphas, n, rows, rng, *, scores="gaussian", d=None, log=False):
    r"""Per-row expectations of :math:`\alpha(1 - \sum_i p_i^2)` with the largest score integrated out.

    Conditional Monte Carlo for rows of :math:`n` independent scores: the
    second-largest score :math:`x_2` and the :math:`n - 2` scores below it
    are sampled exactly (order statistics), and the expectation over the
    largest score :math:`x_1 > x_2`, whose conditional law is the score's law
    cut below at :math:`x_2`, is computed by quadrature.  The mean over rows
    is an unbiased estimate of :math:`\mathbb E\,\alpha(1 - \sum_i p_i^2)`
    (or, with ``log=True``, of :math:`\mathbb E\log\alpha(1 - \sum_i p_i^2)`);
    its spread over rows no longer contains the rare near-ties of the two
    leading scores that make plain sampling heavy-tailed at large
    :math:`\alpha`.  It shares no code with :func:`attnscale.expected_gradient`
    (no Laplace identity, no Gumbel variables): it is a second route to the
    same expectation.

    Parameters
    ----------
    alphas : array_like
        One-dimensional grid of positive scales.
    n : int
        Keys per row, ``>= 2``.
    rows : int
        Sampled rows, ``>= 1``.
    rng : numpy.random.Generator
        The source of randomness.
    scores, d
        As in :func:`typical_row_scales`.
    log : bool
        Integrate :math:`\log\alpha(1 - \sum_i p_i^2)` instead (for the
        geometric-mean criterion of a typical row).

    Returns
    -------
    numpy.ndarray
        Shape ``(len(alphas), rows)``: for each row, the expectation over its
        largest score given the others.

    Notes
    -----
    With :math:`u_2 = P(S > x_2)`, the exceedance of the second-largest of
    :math:`n` scores follows :math:`\mathrm{Beta}(2, n - 1)`; given
    :math:`x_2`, the largest score is :math:`Q(u_2(1 - t))` with :math:`t`
    uniform on :math:`(0, 1)` (:math:`Q` the inverse survival function), and
    the others are independent draws from the law below :math:`x_2` (drawn by
    rejection).  The integral over :math:`t` uses Gauss--Legendre panels
    graded towards both ends.  With :math:`E = e^{-\alpha(x_1 - x_2)}`,
    :math:`a = \sum_{j \ge 2} e^{\alpha(x_j - x_2)}` and
    :math:`b = \sum_{j \ge 2} e^{2\alpha(x_j - x_2)}`,
    :math:`1 - \sum_i p_i^2 = (2Ea + E^2(a^2 - b)) / (1 + Ea)^2`, free of
    cancellation (:math:`a^2 \ge b`).
    """
    from .exact import _resolve_law

    alphas = _validate.scale(alphas, "alphas")
    if alphas.ndim != 1 or np.any(alphas <= 0):
        raise ValueError("alphas must be a one-dimensional array of positive scales")
    n, rows = _validate.count(n, "n", 2), _validate.count(rows, "rows")
    law = _resolve_law(scores, d)
    if scores == "gaussian":

        def draw(shape):
            return rng.standard_normal(shape)

    else:
        dim = float(_validate.dimension(d))

        def draw(shape):  # the law of exact.cosine_law: the cosine minus 1
            return sample_cosine_scores(shape[0], max(shape[1], 2), dim, rng)[:, : shape[1]] - 1.0

    u2 = rng.beta(2.0, n - 1.0, rows)
    x2 = law.inverse_survival(u2)
    rest = draw((rows, n - 2)) if n > 2 else np.empty((rows, 0))
    bad = np.nonzero(rest >= x2[:, None])
    while bad[0].size:  # rejection: the others lie below x2 (about two per row are redrawn)
        rest[bad] = draw((1, bad[0].size)).ravel()
        bad = tuple(i[rest[bad] >= x2[bad[0]]] for i in bad)
    t, wt = _graded_unit_nodes()
    x1 = law.inverse_survival(u2[:, None] * (1.0 - t))  # (rows, nodes)
    gap = np.maximum(x1 - x2[:, None], 0.0)
    below = rest - x2[:, None]  # <= 0
    out = np.empty((alphas.size, rows))
    for k, alpha in enumerate(alphas):
        with np.errstate(under="ignore"):
            e = np.exp(alpha * below)
            big_e = np.exp(-alpha * gap)
        a = 1.0 + e.sum(axis=1, keepdims=True)
        b = 1.0 + np.einsum("ij,ij->i", e, e)[:, None]
        if log:
            with np.errstate(divide="ignore"):
                value = (
                    np.log(alpha)
                    - alpha * gap
                    + np.log(2.0 * a + big_e * (a * a - b))
                    - 2.0 * np.log1p(big_e * a)
                )
        else:
            value = alpha * (2.0 * big_e * a + big_e * big_e * (a * a - b)) / (1.0 + big_e * a) ** 2
        out[k] = value @ wt
    return out


def conditional_mean_log_scale(n, *, scores="gaussian", d=None, rows=200, seeds=5, alphas=None, seed=0):
    r"""The geometric-mean criterion of a typical row, by conditional Monte Carlo.

    A second route to ``typical_row_scales(...).mean_log``: the maximizer
    over :math:`\alpha` of :math:`\mathbb E\log\alpha(1 - \sum_i p_i^2)`,
    estimated on ``seeds`` independent batches with
    :func:`conditional_objective` (``log=True``), whose largest score is
    integrated out, so the estimate is far less noisy than the sample mean of
    the logarithm over plain rows.

    Parameters
    ----------
    n : int
        Keys per row, ``>= 2``.
    scores, d
        As in :func:`typical_row_scales`.
    rows, seeds : int
        Rows per batch (``>= 10``) and batches (``>= 2``).
    alphas : array_like, optional
        Increasing log-spaced grid that brackets the maximizer; by default 16
        points from :math:`1.2\,\alpha^*` to :math:`2.6\,\alpha^*` of the
        mean-field optimum.
    seed : int
        Batch ``k`` uses ``numpy.random.default_rng([seed, k])``.

    Returns
    -------
    estimate, half_width : float
        Mean over batches and the half-width of its 95% Student-t interval.
    per_seed : numpy.ndarray
        The maximizer in every batch.

    Raises
    ------
    ValueError
        If a batch's maximizer falls at an end of ``alphas`` (widen the grid).
    """
    from scipy import stats

    from .cosine import cosine_alpha_star
    from .gaussian import gaussian_alpha_star

    n = _validate.count(n, "n", 2)
    rows, seeds, seed = (
        _validate.count(rows, "rows", 10),
        _validate.count(seeds, "seeds", 2),
        _validate.count(seed, "seed", 0),
    )
    if scores not in ("gaussian", "cosine"):
        raise ValueError(f"scores must be 'gaussian' or 'cosine', got {scores!r}")
    star = float(gaussian_alpha_star(n) if scores == "gaussian" else cosine_alpha_star(n, d))
    alphas = np.geomspace(1.2 * star, 2.6 * star, 16) if alphas is None else _validate.scale(alphas, "alphas")
    ratio = alphas[1:] / alphas[:-1]
    if alphas.ndim != 1 or alphas.size < 5 or not np.allclose(ratio, ratio[0], rtol=1e-9) or ratio[0] <= 1:
        raise ValueError("alphas must be an increasing log-spaced grid (np.geomspace) of at least 5 scales")
    best = []
    for k in range(seeds):
        curve = conditional_objective(
            alphas, n, rows, np.random.default_rng([seed, k]), scores=scores, d=d, log=True
        ).mean(axis=1)
        top = int(np.argmax(curve))
        if top in (0, alphas.size - 1):
            raise ValueError(
                f"the maximizer of batch {k} lies at the end of alphas ({alphas[top]:g}): widen the grid"
            )
        best.append(float(_refined_argmax(alphas, curve)))
    best = np.asarray(best)
    half = float(stats.t.ppf(0.975, seeds - 1) * best.std(ddof=1) / np.sqrt(seeds))
    return float(best.mean()), half, best
