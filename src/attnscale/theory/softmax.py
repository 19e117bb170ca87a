r"""Softmax with a scale, its Jacobian and the size of its gradient.

Chapter *The softmax Jacobian* of the book derives every formula here.
For scores :math:`s \in \mathbb{R}^n` and a scale :math:`\alpha \ge 0`,

.. math::

   p_i = \frac{e^{\alpha s_i}}{\sum_j e^{\alpha s_j}}, \qquad
   J_{ij} = \alpha\, p_i (\delta_{ij} - p_j) = \partial p_i / \partial s_j, \qquad
   \tfrac12 \Bigl\lVert \frac{\partial p}{\partial s} \Bigr\rVert_1
   = \alpha\Bigl(1 - \sum_i p_i^2\Bigr).

All functions work on the last axis of ``s`` (``softmax`` on any axis) and
broadcast ``alpha`` against the remaining (batch) axes, so that
``alpha=np.linspace(0, 5, 50)[:, None]`` with ``s`` of shape ``(k, n)``
evaluates 50 scales for ``k`` score vectors at once.

Numerics: scores are shifted by their maximum before exponentiation
(:math:`\alpha \ge 0` keeps the maximum where it is), and the complement
:math:`1 - p_i` is formed as the sum of the *other* weights, not by
subtraction, so gradients stay accurate to the last digit even when one
weight is within :math:`10^{-16}` of 1.
"""

from __future__ import annotations

import numpy as np

from ..support import _validate

__all__ = [
    "collision_probability",
    "gradient_frobenius",
    "gradient_l1",
    "gradient_objective",
    "renyi2_entropy",
    "row_best_scale",
    "softmax",
    "softmax_jacobian",
]


def _prepare(s, alpha, axis=-1):
    """Validate, move ``axis`` last and broadcast ``alpha`` to the batch."""
    s = _validate.scores(s)
    alpha = _validate.scale(alpha)
    try:
        s = np.moveaxis(s, axis, -1)
    except np.exceptions.AxisError:
        raise ValueError(f"axis {axis} is out of range for s with {s.ndim} axes") from None
    try:
        batch = np.broadcast_shapes(alpha.shape, s.shape[:-1])
    except ValueError:
        raise ValueError(
            f"alpha of shape {alpha.shape} does not broadcast against the batch shape "
            f"{s.shape[:-1]} of s (s without its key axis)"
        ) from None
    s = np.broadcast_to(s, batch + s.shape[-1:])
    alpha = np.broadcast_to(alpha, batch)[..., None]
    return s, alpha


#: The row reductions below work on at most about this many scores at a
#: time, so that a broadcast of many scales against many long rows (57
#: scales x 4000 rows x 1024 keys is 2.3e8 scores) costs memory for one
#: block of temporaries, not for the whole product.
_BLOCK_SCORES = 1 << 20


def _reduce_rows(kernel, s, alpha):
    """``kernel(s, alpha)`` over the broadcast batch, a block of rows at a time.

    ``s`` and ``alpha`` come from :func:`_prepare` (``s`` may be a broadcast
    view).  ``kernel`` maps rows of shape ``(k, n)`` and scales ``(k, 1)`` to
    one value per row, shape ``(k,)``.  Each row is computed by the same
    operations as in one call on the whole batch, so the result is the same
    to the last bit; only the peak memory differs.
    """
    batch, n = s.shape[:-1], s.shape[-1]
    rows = int(np.prod(batch, dtype=np.int64))
    if rows * n <= _BLOCK_SCORES or rows <= 1:
        return kernel(s, alpha)
    per_block = max(1, _BLOCK_SCORES // n)
    out = np.empty(rows)
    for start in range(0, rows, per_block):
        index = np.unravel_index(np.arange(start, min(start + per_block, rows)), batch)
        out[start : start + per_block] = kernel(s[index], alpha[index])
    return out.reshape(batch)


def _weights(s, alpha, complements=True):
    """Unnormalized weights ``w = exp(alpha (s - max s))`` and their complements.

    Returns ``(w, total, others)`` with ``total = sum(w)`` and
    ``others[i] = total - w[i]`` computed without cancellation: for the
    position of the maximum (where ``w = 1``) the complement is summed
    directly from the remaining weights.  With ``complements=False``,
    ``others`` is None (the weights alone cost half as much).
    """
    gap = s - s.max(axis=-1, keepdims=True)  # <= 0, exact enough for |s| <= 1e4
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        z = alpha * gap  # may be -inf for a huge alpha: the right limit
    z = np.where(gap == 0.0, 0.0, z)  # alpha * 0 stays 0 even when alpha is huge
    with np.errstate(under="ignore"):
        w = np.exp(z)
    total = w.sum(axis=-1, keepdims=True)
    if not complements:
        return w, total, None
    top = np.argmax(gap, axis=-1)[..., None]
    masked = w.copy()
    np.put_along_axis(masked, top, 0.0, axis=-1)
    rest = masked.sum(axis=-1, keepdims=True)  # sum of all weights but the top one
    others = total - w
    np.put_along_axis(others, top, rest, axis=-1)
    return w, total, others


def softmax(s, alpha=1.0, axis=-1):
    r"""Softmax of scaled scores, :math:`p_i = e^{\alpha s_i} / \sum_j e^{\alpha s_j}`.

    Parameters
    ----------
    s : array_like
        Scores, finite, at least one axis and not empty.
    alpha : float or array_like, optional
        Scale (inverse temperature), finite and ``>= 0``.  Broadcasts against
        the shape of ``s`` without ``axis``.
    axis : int, optional
        The axis over which the weights are normalized (the keys).

    Returns
    -------
    numpy.ndarray
        Weights in :math:`[0, 1]` that sum to 1 along ``axis``; the shape is
        ``s``'s, broadcast against ``alpha``.

    Raises
    ------
    ValueError
        Empty, NaN or infinite ``s``; negative, NaN or infinite ``alpha``;
        shapes that do not broadcast.

    Notes
    -----
    The scores are shifted by their maximum, so any finite scale and any
    scores up to the float64 range give finite weights without overflow.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import softmax
    >>> softmax(np.array([0.0, np.log(3.0)])).round(6)
    array([0.25, 0.75])
    """
    s, alpha = _prepare(s, alpha, axis)
    w, total, _ = _weights(s, alpha, complements=False)
    return np.moveaxis(w / total, -1, axis)


def _probabilities_and_complements(s, alpha):
    w, total, others = _weights(s, alpha)
    return w / total, others / total


def softmax_jacobian(s, alpha=1.0):
    r"""Jacobian of the scaled softmax with respect to the scores.

    Implements the book's theorem on the softmax Jacobian,

    .. math:: J_{ij} = \alpha\, p_i\, (\delta_{ij} - p_j) = \partial p_i / \partial s_j.

    Parameters
    ----------
    s : array_like
        Scores of shape ``(..., n)``; finite and not empty.
    alpha : float or array_like, optional
        Scale, finite and ``>= 0``, broadcasting against ``s.shape[:-1]``.

    Returns
    -------
    numpy.ndarray
        Shape ``(..., n, n)``: ``J[..., i, j]`` is :math:`\partial p_i / \partial s_j`.
        The diagonal is formed as :math:`\alpha p_i (1 - p_i)` with
        :math:`1 - p_i` summed from the other weights, so it stays
        accurate when one weight is close to 1.

    Raises
    ------
    ValueError
        As :func:`softmax`.

    Examples
    --------
    >>> from attnscale import softmax_jacobian
    >>> softmax_jacobian([0.0, 0.0], alpha=2.0)
    array([[ 0.5, -0.5],
           [-0.5,  0.5]])
    """
    s, alpha = _prepare(s, alpha)
    p, complement = _probabilities_and_complements(s, alpha)
    jac = -alpha[..., None] * p[..., :, None] * p[..., None, :]
    diagonal = alpha * p * complement
    n = p.shape[-1]
    jac[..., np.arange(n), np.arange(n)] = diagonal
    return jac


def gradient_l1(s, alpha=1.0):
    r"""Half the entrywise L1 norm of the softmax Jacobian.

    .. math:: \tfrac12 \sum_{i,j} \Bigl|\frac{\partial p_i}{\partial s_j}\Bigr|

    computed from the Jacobian itself (:func:`softmax_jacobian`), entry by
    entry: it costs :math:`O(n^2)` and is the *definition* against which the
    book checks the identity :math:`\alpha(1 - \sum_i p_i^2)`
    (:func:`gradient_objective`, :math:`O(n)`).

    Parameters
    ----------
    s, alpha
        As in :func:`softmax_jacobian`.

    Returns
    -------
    numpy.ndarray or float
        Shape: the broadcast batch shape of ``s`` and ``alpha``.

    Examples
    --------
    >>> from attnscale import gradient_l1
    >>> float(gradient_l1([0.0, 0.0, 0.0, 0.0], alpha=1.0))
    0.75
    """
    jac = softmax_jacobian(s, alpha)
    return 0.5 * np.abs(jac).sum(axis=(-2, -1))


def collision_probability(s, alpha=1.0, axis=-1):
    r"""The collision probability :math:`\sum_i p_i^2` of the scaled softmax.

    It is the chance that two independent draws from the attention row pick
    the same key, and :math:`-\log\sum_i p_i^2` is the Rényi entropy of
    order 2 (:func:`renyi2_entropy`).

    Parameters
    ----------
    s, alpha, axis
        As in :func:`softmax`.

    Returns
    -------
    numpy.ndarray or float
        Values in :math:`[1/n, 1]`, shape of ``s`` without ``axis``
        broadcast against ``alpha``.

    See Also
    --------
    renyi2_entropy : its negative logarithm.
    expected_collision : its expectation over i.i.d. scores.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import collision_probability
    >>> float(collision_probability(np.zeros(8)))  # equal weights: 1/n
    0.125
    """
    s, alpha = _prepare(s, alpha, axis)
    return _reduce_rows(_collision_kernel, s, alpha)


def _collision_kernel(s, alpha):
    w, total, _ = _weights(s, alpha, complements=False)
    return np.sum(w * w, axis=-1) / total[..., 0] ** 2


def gradient_objective(s, alpha=1.0):
    r"""The gradient objective :math:`\alpha (1 - \sum_i p_i^2)` in :math:`O(n)`.

    Equal to :func:`gradient_l1` by the book's L1 identity, but computed from
    the probabilities alone, which makes it cheap for long rows (Monte Carlo
    over many keys).  The factor :math:`1 - \sum_i p_i^2` is formed as
    :math:`\sum_i p_i (1 - p_i)` with complements summed from the other
    weights, so it keeps its relative accuracy when it is tiny.

    Parameters
    ----------
    s, alpha
        As in :func:`softmax_jacobian`.

    Returns
    -------
    numpy.ndarray or float
        Shape: the broadcast batch shape of ``s`` and ``alpha``.

    See Also
    --------
    gradient_l1 : the same quantity, named as a norm of the Jacobian.
    row_best_scale : the scale that maximizes it for one row.
    expected_gradient : its expectation over i.i.d. scores.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import gradient_objective
    >>> float(gradient_objective(np.zeros(8), 1.0))  # alpha (1 - 1/n)
    0.875
    """
    s, alpha = _prepare(s, alpha)
    return _reduce_rows(_objective_kernel, s, alpha)


def _objective_kernel(s, alpha):
    p, complement = _probabilities_and_complements(s, alpha)
    return alpha[..., 0] * np.sum(p * complement, axis=-1)


def gradient_frobenius(s, alpha=1.0):
    r"""Frobenius norm of the softmax Jacobian in :math:`O(n)`.

    Implements the book's Frobenius identity (chapter *The softmax Jacobian*),

    .. math::

       \Bigl\lVert \frac{\partial p}{\partial s} \Bigr\rVert_F
       = \alpha \sqrt{\textstyle\sum_i p_i^2 - 2 \sum_i p_i^3 + \bigl(\sum_i p_i^2\bigr)^2},

    evaluated as
    :math:`\alpha\,\bigl[\sum_i p_i^2\,\bigl((1 - p_i)^2 + \sum_{j \ne i} p_j^2\bigr)\bigr]^{1/2}`,
    a sum of non-negative terms (the diagonal and the off-diagonal entries
    of row :math:`i`).  The complement :math:`1 - p_i` and, for the largest
    weight, :math:`\sum_{j \ne i} p_j^2` are summed from the other weights,
    never formed by subtraction, and the sum is scaled like ``hypot``, so
    the norm keeps its relative accuracy when one weight is within
    :math:`10^{-16}` of 1 and the norm is far below the square root of the
    smallest float.

    Parameters
    ----------
    s, alpha
        As in :func:`softmax_jacobian`.

    Returns
    -------
    numpy.ndarray or float
        Shape: the broadcast batch shape of ``s`` and ``alpha``.

    Raises
    ------
    ValueError
        As :func:`softmax`.

    Examples
    --------
    >>> from attnscale import gradient_frobenius
    >>> float(gradient_frobenius([0.0, 0.0], alpha=2.0))
    1.0
    """
    s, alpha = _prepare(s, alpha)
    return _reduce_rows(_frobenius_kernel, s, alpha)


def _frobenius_kernel(s, alpha):
    p, complement = _probabilities_and_complements(s, alpha)
    top = np.argmax(p, axis=-1)[..., None]
    # r_i = sqrt(sum_{j != i} p_j^2).  For the top weight: the Euclidean norm
    # of the other weights, scaled by their largest so that no square
    # underflows.  For the others the top weight's square dominates the sum,
    # so the subtraction loses at most a factor of two in relative terms.
    others = p.copy()
    np.put_along_axis(others, top, 0.0, axis=-1)
    largest = others.max(axis=-1, keepdims=True)
    safe = np.where(largest > 0.0, largest, 1.0)
    with np.errstate(under="ignore"):
        rest_top = largest * np.sqrt(np.sum((others / safe) ** 2, axis=-1, keepdims=True))
        squares = p * p
        rest = np.sqrt(np.maximum(squares.sum(axis=-1, keepdims=True) - squares, 0.0))
    np.put_along_axis(rest, top, rest_top, axis=-1)
    # ||J||_F / alpha = sqrt(sum_i (p_i (1 - p_i))^2 + (p_i r_i)^2), scaled like hypot
    a_terms, b_terms = p * complement, p * rest
    scale = np.maximum(a_terms.max(axis=-1), b_terms.max(axis=-1))
    safe = np.where(scale > 0.0, scale, 1.0)[..., None]
    with np.errstate(under="ignore"):
        inner = np.sum((a_terms / safe) ** 2 + (b_terms / safe) ** 2, axis=-1)
    return alpha[..., 0] * scale * np.sqrt(inner)


def renyi2_entropy(s, alpha=1.0, axis=-1):
    r"""Rényi entropy of order 2 of the attention row, :math:`-\log \sum_i p_i^2`.

    Natural logarithm; it lies in :math:`[0, \log n]`.  Accurate to the last
    digits at both ends: from :math:`\sum_i p_i^2` when the row is spread,
    and from :math:`-\log(1 - c)` with :math:`c = \sum_i p_i (1 - p_i)`
    (complements summed, not subtracted) when the row is nearly one-hot
    and :math:`H_2` is tiny.

    Parameters
    ----------
    s, alpha, axis
        As in :func:`softmax`.

    Returns
    -------
    numpy.ndarray or float
        Shape of ``s`` without ``axis`` broadcast against ``alpha``.

    See Also
    --------
    collision_probability : the sum it takes the logarithm of.
    softmax_entropy : the Shannon entropy.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import renyi2_entropy
    >>> bool(np.isclose(renyi2_entropy(np.zeros(8)), np.log(8)))
    True
    """
    s, alpha = _prepare(s, alpha, axis)
    return _reduce_rows(_renyi2_kernel, s, alpha)


def _renyi2_kernel(s, alpha):
    p, complement = _probabilities_and_complements(s, alpha)
    collision = np.sum(p * p, axis=-1)
    spread = np.sum(p * complement, axis=-1)  # = 1 - collision, without cancellation
    with np.errstate(divide="ignore"):
        return np.where(collision < 0.5, -np.log(collision), -np.log1p(-np.minimum(spread, 0.5)))


def _row_moments(s, alpha):
    """p = softmax(alpha s) per row (alpha one per row), its power sums S_k and the slopes dS_k/dalpha."""
    with np.errstate(under="ignore"):
        p = np.exp(alpha[:, None] * s)  # s is shifted: its maximum is 0
    p /= p.sum(axis=-1, keepdims=True)
    mean = np.sum(p * s, axis=-1)
    p2 = p * p
    s2, s3 = p2.sum(axis=-1), np.sum(p2 * p, axis=-1)
    ds2 = 2.0 * (np.sum(p2 * s, axis=-1) - s2 * mean)
    ds3 = 3.0 * (np.sum(p2 * p * s, axis=-1) - s3 * mean)
    return s2, s3, ds2, ds3


def _row_value(s, alpha, norm):
    with np.errstate(under="ignore"):
        p = np.exp(alpha[:, None] * s)  # s is shifted: its maximum is 0
    total = p.sum(axis=-1)
    p2 = p * p
    s2 = p2.sum(axis=-1) / total**2
    if norm == "l1":
        return alpha * (1.0 - s2)
    s3 = np.sum(p2 * p, axis=-1) / total**3
    return alpha * np.sqrt(np.maximum(s2 - 2.0 * s3 + s2 * s2, 0.0))


def _row_slope_sign(s, alpha, norm):
    """A quantity with the sign of the derivative of the norm in alpha."""
    s2, s3, ds2, ds3 = _row_moments(s, alpha)
    if norm == "l1":
        return 1.0 - s2 - alpha * ds2
    q = s2 - 2.0 * s3 + s2 * s2  # F^2 = alpha^2 q: d/dalpha has the sign of 2q + alpha q'
    return 2.0 * q + alpha * (ds2 - 2.0 * ds3 + 2.0 * s2 * ds2)


def row_best_scale(s, norm="l1", method="optimizer", grid=None, iterations=40):
    r"""Each row's own best scale: the maximizer over :math:`\alpha` of a norm of its softmax Jacobian.

    Chapter *The softmax Jacobian*.  For a row with a unique largest score
    both norms vanish at :math:`\alpha = 0` and as :math:`\alpha \to \infty`,
    so they have a finite maximizer; this finds the one of largest value on
    ``grid`` and refines it, for all rows at once.

    Parameters
    ----------
    s : array_like
        Scores, shape ``(rows, n)``, finite.
    norm : {"l1", "frobenius"}
        Half the entrywise L1 norm, :math:`\alpha(1 - \sum_i p_i^2)`, or the
        Frobenius norm.
    method : {"optimizer", "stationarity"}
        Refine the grid's best point by golden-section search on the norm
        itself, or by bisection on the sign of its derivative (closed form,
        from :math:`d\sum_i p_i^k/d\alpha = k\sum_i p_i^k (s_i - \bar s)`);
        two independent routes to the same maximizer.
    grid : array_like, optional
        Increasing positive scales that bracket the maximizers; by default
        120 log-spaced points from 0.05 to :math:`10^5`.
    iterations : int
        Refinement steps (each shrinks the bracket by 0.618 or 0.5).

    Returns
    -------
    numpy.ndarray
        Shape ``(rows,)``.  A row whose maximizer lies beyond the grid (its two
        largest scores closer than about :math:`1/\max(\mathrm{grid})`) gets
        a value near the grid's end; with a tied largest score there is no
        maximizer at all (the L1 norm tends to :math:`\alpha(1 - 1/k)` for
        :math:`k` tied keys).

    See Also
    --------
    gradient_l1, gradient_frobenius : the two norms it maximizes.
    typical_row_scales : the same maximizers over sampled rows.

    Examples
    --------
    Two keys a gap :math:`g` apart: the L1 norm is :math:`2\alpha p(1 - p)`,
    maximized at :math:`\alpha = x/g` with :math:`x \tanh(x/2) = 1`,
    :math:`x \approx 1.5434`; the two routes agree:

    >>> import numpy as np
    >>> from attnscale import row_best_scale
    >>> rows = [[0.0, -1.0], [0.0, -2.0]]
    >>> np.round(row_best_scale(rows), 4).tolist()
    [1.5434, 0.7717]
    >>> np.round(row_best_scale(rows, method="stationarity"), 4).tolist()
    [1.5434, 0.7717]
    """
    s = _validate.scores(s, "s")
    if s.ndim != 2:
        raise ValueError(f"s must have shape (rows, n), got {s.shape}")
    if norm not in ("l1", "frobenius"):
        raise ValueError(f"norm must be 'l1' or 'frobenius', got {norm!r}")
    if method not in ("optimizer", "stationarity"):
        raise ValueError(f"method must be 'optimizer' or 'stationarity', got {method!r}")
    grid = np.geomspace(0.05, 1e5, 120) if grid is None else _validate.scale(grid, "grid")
    if grid.ndim != 1 or grid.size < 3 or np.any(grid <= 0) or np.any(np.diff(grid) <= 0):
        raise ValueError("grid must be an increasing one-dimensional array of at least 3 positive scales")
    s = s - s.max(axis=-1, keepdims=True)  # softmax and both norms are shift-invariant
    rows = s.shape[0]
    values = np.stack([_row_value(s, np.full(rows, a), norm) for a in grid])
    k = np.argmax(values, axis=0)
    lo = np.log(grid[np.maximum(k - 1, 0)])
    hi = np.log(grid[np.minimum(k + 1, grid.size - 1)])
    if method == "optimizer":
        ratio = (np.sqrt(5.0) - 1.0) / 2.0
        for _ in range(int(iterations)):
            c, d = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
            left = _row_value(s, np.exp(c), norm) > _row_value(s, np.exp(d), norm)
            lo, hi = np.where(left, lo, c), np.where(left, d, hi)
    else:
        for _ in range(int(iterations)):
            mid = 0.5 * (lo + hi)
            rising = _row_slope_sign(s, np.exp(mid), norm) > 0
            lo, hi = np.where(rising, mid, lo), np.where(rising, hi, mid)
    return np.exp(0.5 * (lo + hi))
