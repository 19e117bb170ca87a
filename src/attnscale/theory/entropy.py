r"""Shannon entropy of attention rows, and the length-dependent scales built on it.

Chapter *Entropy invariance*.  For :math:`p = \operatorname{softmax}(\alpha s)`,

.. math:: H(p) = -\sum_i p_i \log p_i = \log Z - \alpha\, \mathbb E_p[s],
          \qquad Z = \sum_i e^{\alpha s_i},

and, replacing sums over many keys by expectations (mean field),
:math:`H \approx \log n + \log M(\alpha) - \alpha\,(\log M)'(\alpha)` with
:math:`M` the moment generating function of a score; for standard normal
scores :math:`H \approx \log n - \alpha^2/2`.
"""

from __future__ import annotations

import numpy as np

from ..support import _validate
from .softmax import _prepare, _reduce_rows

__all__ = [
    "entropy_invariant_scale",
    "entropy_matching_scale",
    "gaussian_meanfield_entropy",
    "laplace_slope",
    "softmax_entropy",
    "sphere_entropy_slope",
    "sphere_saddle_point",
    "spike_over_bulk_entropy",
]


def softmax_entropy(s, alpha=1.0, axis=-1):
    r"""Shannon entropy (natural log) of :math:`\operatorname{softmax}(\alpha s)`.

    Computed as :math:`\log Z' - \alpha\,\mathbb E_p[s - \max s]` with
    :math:`Z' = \sum_i e^{\alpha (s_i - \max s)} \ge 1`: no overflow for any
    finite scores, no :math:`0 \log 0`.

    Parameters
    ----------
    s : array_like
        Scores; finite, not empty.
    alpha : float or array_like, optional
        Scale, ``>= 0``; broadcasts against ``s`` without ``axis``.
    axis : int, optional
        The key axis.

    Returns
    -------
    numpy.ndarray or float
        :math:`H \in [0, \log n]`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import softmax_entropy
    >>> bool(np.isclose(softmax_entropy(np.zeros(8)), np.log(8)))
    True
    """
    s, alpha = _prepare(s, alpha, axis)
    return _reduce_rows(_entropy_kernel, s, alpha)


def _entropy_kernel(s, alpha):
    gap = s - s.max(axis=-1, keepdims=True)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        z = np.where(gap == 0.0, 0.0, alpha * gap)
        w = np.exp(z)
    below = gap < 0
    # Z' - 1, summed from the weights below the maximum (ties at the top count 1 each)
    rest = np.sum(np.where(below, w, 0.0), axis=-1) + (s.shape[-1] - below.sum(axis=-1) - 1)
    # -sum w z, with w z -> 0 where w underflows (z = -inf would give 0 * inf)
    spread = -np.sum(np.where(w > 0, w * z, 0.0), axis=-1)
    # H = log Z' + sum(w |z|) / Z': two non-negative terms, no cancellation
    return np.log1p(rest) + spread / (1.0 + rest)


def gaussian_meanfield_entropy(alpha, n):
    r"""Mean-field entropy of an attention row over :math:`n` standard normal scores.

    .. math:: H(\alpha, n) \approx \log n - \alpha^2 / 2

    Parameters
    ----------
    alpha : float or array_like
        Scale, ``>= 0``.
    n : float or array_like
        Number of keys, ``>= 2``; broadcasts against ``alpha``.

    Returns
    -------
    numpy.ndarray or float
        The approximation.  It is accurate for :math:`\alpha` well below
        :math:`\sqrt{2\log n}`, where it reaches 0; beyond that the row
        "freezes" onto its largest scores, the true entropy stays of order
        one, and this formula (which turns negative) does not apply.

    See Also
    --------
    expected_entropy : the exact expectation it approximates.
    entropy_matching_scale : the scale that keeps it constant across lengths.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import gaussian_meanfield_entropy
    >>> bool(np.isclose(gaussian_meanfield_entropy(1.0, 512), np.log(512) - 0.5))
    True
    """
    alpha = _validate.scale(alpha)
    n = _validate.key_count(n)
    return np.log(n) - 0.5 * alpha * alpha


def entropy_invariant_scale(n, d, train_length=512):
    r"""The entropy-invariant scale :math:`\log_{L}(n) / \sqrt d` for training length :math:`L`.

    At :math:`n = L` it equals the usual :math:`1/\sqrt d`; it multiplies the
    raw dot products :math:`q \cdot k`, as in
    :math:`\operatorname{softmax}(\log_{512} n\, QK^\top / \sqrt d)`.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Head dimension, ``>= 1``.
    train_length : float or array_like, optional
        The length :math:`L` at which the scale is :math:`1/\sqrt d`, ``>= 2``.

    Returns
    -------
    numpy.ndarray or float
        The scale; all arguments broadcast together.

    See Also
    --------
    entropy_matching_scale : the mean-field rule for Gaussian scores.

    Examples
    --------
    >>> from attnscale import entropy_invariant_scale
    >>> float(entropy_invariant_scale(512, 64)), float(entropy_invariant_scale(4096, 64))
    (0.125, 0.16666666666666666)
    """
    n = _validate.key_count(n)
    d = _validate.at_least(d, "d", 1.0, what=" (the head dimension)")
    train_length = _validate.at_least(train_length, "train_length", 2.0)
    return np.log(n) / np.log(train_length) / np.sqrt(d)


def entropy_matching_scale(n, alpha_train, train_length=512):
    r"""The scale that keeps the Gaussian mean-field entropy constant across lengths.

    Solving :math:`\log n - \alpha^2/2 = \log L - \alpha_L^2/2` gives

    .. math:: \alpha(n) = \sqrt{\alpha_L^2 + 2 \log(n / L)},

    a :math:`\sqrt{\log n}` rule, in units of the standardized score (multiply
    by :math:`1/\sqrt d` for raw dot products).

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    alpha_train : float or array_like
        Scale at the training length, ``>= 0``.
    train_length : float or array_like, optional
        Training length :math:`L`, ``>= 2``.

    Returns
    -------
    numpy.ndarray or float
        The scale; 0 where :math:`\alpha_L^2 + 2\log(n/L) < 0` (short
        sequences whose entropy cannot reach the training value).

    See Also
    --------
    gaussian_meanfield_entropy : the entropy it holds constant.
    entropy_invariant_scale : the published :math:`\log_L n` rule.

    Examples
    --------
    From :math:`\alpha_L = 1` at :math:`L = 512` to :math:`n = 8L`:

    >>> import numpy as np
    >>> from attnscale import entropy_matching_scale
    >>> bool(np.isclose(entropy_matching_scale(4096, 1.0, 512), np.sqrt(1 + 2 * np.log(8))))
    True
    """
    n = _validate.key_count(n)
    alpha_train = _validate.scale(alpha_train, "alpha_train")
    train_length = _validate.at_least(train_length, "train_length", 2.0)
    return np.sqrt(np.maximum(alpha_train**2 + 2.0 * np.log(n / train_length), 0.0))


def spike_over_bulk_entropy(spike, bulk_mean, bulk_sd, n, rng):
    r"""Entropy of a row made of one spike over a sampled Gaussian bulk of :math:`n - 1` logits.

    A model of a trained retrieval row (chapter *Does the largest gradient
    train fastest?*): the logit of the key the query is after, ``spike``,
    stands above :math:`n - 1` distractor logits drawn i.i.d. from
    :math:`\mathcal N(\mu_b, \sigma_b^2)`, and

    .. math:: H = -\sum_{j=1}^{n} p_j \log p_j, \qquad
              p = \operatorname{softmax}(z_1, \dots, z_n),\quad
              z_1 = \text{spike},\ z_{j>1} = \mu_b + \sigma_b \xi_j .

    Were the spike one more draw of the bulk, this would be Part III's i.i.d.
    row; with :math:`\sigma_b = 0` it is one logit over :math:`n - 1` equal
    ones.  Calibrated row by row on a measured
    head (its target logit, the mean and spread of its other logits), the
    model carries that head to other lengths :math:`n`.

    Parameters
    ----------
    spike, bulk_mean, bulk_sd : array_like
        Finite; ``bulk_sd >= 0``.  They broadcast together to the shape of
        the rows (one value of each per row).
    n : int
        Keys per row, ``>= 2`` (the spike and ``n - 1`` bulk logits).
    rng : numpy.random.Generator
        Source of the bulk draws: the ``n - 1`` draws of each row, rows in
        C order, exactly as one ``rng.standard_normal((*shape, n - 1))``.

    Returns
    -------
    numpy.ndarray or float
        The entropy of each row (nats), in :math:`[0, \log n]`, of the
        broadcast shape.  Rows are drawn a block at a time, so memory stays
        bounded for long rows; the result does not depend on the blocks.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import spike_over_bulk_entropy
    >>> h = spike_over_bulk_entropy(0.0, 0.0, 0.0, 8, np.random.default_rng(0))
    >>> bool(np.isclose(h, np.log(8)))
    True
    """
    spike, bulk_mean, bulk_sd, shape = _validate.spike_and_bulk(spike, bulk_mean, bulk_sd)
    n = _validate.count(n, "n", 2)
    rng = _validate.generator(rng)
    rows = int(np.prod(shape, dtype=np.int64))
    flat = [np.broadcast_to(a, shape).reshape(rows) for a in (spike, bulk_mean, bulk_sd)]
    out = np.empty(rows)
    per_block = max(1, _BULK_BLOCK // n)
    for start in range(0, rows, per_block):
        block = slice(start, min(start + per_block, rows))
        draws = rng.standard_normal((block.stop - block.start, n - 1))
        logits = np.empty((draws.shape[0], n))
        logits[:, 0] = flat[0][block]
        logits[:, 1:] = flat[1][block, None] + flat[2][block, None] * draws
        out[block] = softmax_entropy(logits)
    return out.reshape(shape) if shape else float(out[0])


#: Logits drawn at a time by :func:`spike_over_bulk_entropy`.
_BULK_BLOCK = 1 << 20


def sphere_saddle_point(lam):
    r"""Saddle point of the Laplace approximation for keys uniform on a sphere.

    For :math:`q, k` of norm :math:`\sqrt d`, :math:`q\cdot k = d\,t` with
    :math:`t = \cos\theta`, and the average of :math:`e^{\lambda q\cdot k}`
    over the sphere is, to leading order in :math:`d`, the integral of
    :math:`\exp d\,(\lambda t + \tfrac12\log(1 - t^2))`.  Its exponent is
    largest at

    .. math:: t^* = \frac{\sqrt{1 + 4\lambda^2} - 1}{2\lambda}
              = \frac{2\lambda}{\sqrt{1 + 4\lambda^2} + 1},

    evaluated in the second form (no cancellation as :math:`\lambda \to 0`).

    Parameters
    ----------
    lam : float or array_like
        The scale :math:`\lambda` on raw dot products, ``>= 0``.

    Returns
    -------
    numpy.ndarray or float
        :math:`t^* \in [0, 1)`; :math:`t^*(1) = (\sqrt5 - 1)/2`.

    References
    ----------
    Chapter *Entropy invariance*, Theorem thm-entropy-invariance; the
    Laplace step quoted by Su (2021), "Entropy invariance and the scale of
    attention".

    Examples
    --------
    >>> from attnscale import sphere_saddle_point
    >>> round(float(sphere_saddle_point(1.0)), 10)
    0.6180339887
    """
    lam = _validate.scale(lam, "lam")
    return 2.0 * lam / (np.sqrt(1.0 + 4.0 * lam * lam) + 1.0)


def laplace_slope(lam):
    r"""The Laplace slope :math:`c(\lambda)` of :math:`H \approx \log n - c(\lambda)\,\lambda d`.

    Mean field over keys uniform on the sphere of radius :math:`\sqrt d`,
    to leading order in :math:`d` (Theorem thm-entropy-invariance):

    .. math:: H - \log n \approx \frac d2 \log(1 - t^{*2}), \qquad
              c(\lambda) = -\frac{\log(1 - t^{*2})}{2\lambda},

    with :math:`t^*` from :func:`sphere_saddle_point`; :math:`c(0) = 0`
    (the limit), :math:`c(\lambda) \approx \lambda/2` for small
    :math:`\lambda` and :math:`c(1) = \tfrac12\log\frac{1+\sqrt5}{2}
    \approx 0.2406`, the source's 0.24.

    Parameters
    ----------
    lam : float or array_like
        The scale :math:`\lambda` on raw dot products, ``>= 0``.

    Returns
    -------
    numpy.ndarray or float
        :math:`c(\lambda) \ge 0`, independent of :math:`d`.

    See Also
    --------
    sphere_entropy_slope : the same slope without the Laplace step.

    Examples
    --------
    >>> from attnscale import laplace_slope
    >>> [round(float(c), 4) for c in laplace_slope([1.0, 0.125])]
    [0.2406, 0.0611]
    """
    lam = _validate.scale(lam, "lam")
    t = sphere_saddle_point(lam)
    safe = np.where(lam > 0, lam, 1.0)
    return np.where(lam > 0, -np.log1p(-t * t) / (2.0 * safe), 0.0)


def sphere_entropy_slope(lam, d):
    r"""Mean-field entropy slope for keys uniform on a sphere, without the Laplace step.

    With :math:`\kappa = \lambda d` and :math:`\nu = d/2 - 1`, the sphere
    average is :math:`M(\kappa) = \mathbb E\,e^{\kappa t} =
    {}_0F_1(;\nu+1;\kappa^2/4) = \sum_k w_k`, with
    :math:`w_k = (\kappa/2)^{2k}\,\Gamma(\nu+1)/(k!\,\Gamma(\nu+k+1))`, so the
    mean-field entropy :math:`H - \log n = \log M - \kappa(\log M)'` is

    .. math:: H - \log n = \log\sum_k w_k - \frac{\sum_k 2k\,w_k}{\sum_k w_k},

    summed here in log space (no overflow, no Bessel underflow).  Returns
    :math:`-(H - \log n)/(\lambda d)`, the slope that :func:`laplace_slope`
    approximates; the two agree as :math:`d \to \infty` at fixed
    :math:`\lambda`.

    Parameters
    ----------
    lam : float or array_like
        The scale :math:`\lambda` on raw dot products, ``> 0``, with
        :math:`\lambda d \le 10^5`.
    d : float or array_like
        Head dimension, ``>= 2``; broadcasts against ``lam``.

    Returns
    -------
    numpy.ndarray or float
        The slope (the mean field, i.e. :math:`n \to \infty` before freezing).

    References
    ----------
    Chapter *Entropy invariance*; the density of :math:`t = \cos\theta` is
    proportional to :math:`(1 - t^2)^{(d-3)/2}` on :math:`[-1, 1]`.

    Examples
    --------
    >>> from attnscale import sphere_entropy_slope
    >>> round(float(sphere_entropy_slope(1.0, 4096)), 3)
    0.241
    """
    lam = _validate.at_least(lam, "lam", np.finfo(float).tiny, what=" (a positive scale)")
    d = _validate.dimension(d, "d")
    lam, d = np.broadcast_arrays(lam, d)
    kappa = lam * d
    if np.any(kappa > 1e5):
        raise ValueError(f"lam * d must be <= 1e5, got {kappa.max():g}")
    nu = d / 2.0 - 1.0
    # the terms peak near k* with k*(nu + k*) = kappa^2 / 4; sum well past it
    k_peak = 0.5 * (np.sqrt(nu * nu + kappa * kappa) - nu)
    n_terms = int(np.ceil(np.max(k_peak + 12.0 * np.sqrt(k_peak + 1.0) + 40.0)))
    k = np.arange(n_terms, dtype=float)
    from scipy.special import gammaln, logsumexp

    log_w = (
        2.0 * k * np.log(0.5 * kappa[..., None])
        + gammaln(nu[..., None] + 1.0)
        - gammaln(k + 1.0)
        - gammaln(nu[..., None] + k + 1.0)
    )
    log_m = logsumexp(log_w, axis=-1)
    mean_2k = np.sum(2.0 * k * np.exp(log_w - log_m[..., None]), axis=-1)
    return (mean_2k - log_m) / kappa
