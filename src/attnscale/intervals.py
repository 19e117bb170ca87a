r"""Intervals over seeds: the mean of a few independent runs and its Student-t interval.

Chapters *Training* and *A language model*.  With :math:`k` runs that
differ only in their seed, the mean :math:`\bar x` has the interval

.. math:: \bar x \pm t_{k-1,\,(1+c)/2}\, \frac{s}{\sqrt k},

:math:`s` the sample standard deviation and :math:`c` the confidence
level.  For two arms paired by seed (same initial weights, same batches),
the interval of the difference is that of the per-seed differences.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from . import _validate

__all__ = ["paired_difference", "seed_interval"]


def seed_interval(values, axis=0, level=0.95):
    r"""Mean over seeds and the half-width of its Student-t interval.

    Parameters
    ----------
    values : array_like
        Finite; ``axis`` runs over seeds and has at least two entries.
    axis : int, optional
        The seed axis.
    level : float, optional
        Confidence level in :math:`(0, 1)`.

    Returns
    -------
    mean, half : numpy.ndarray or float
        Shapes of ``values`` without ``axis``; the interval is ``mean ± half``.

    Examples
    --------
    >>> from attnscale import seed_interval
    >>> mean, half = seed_interval([1.0, 2.0, 3.0])
    >>> float(mean), round(float(half), 4)
    (2.0, 2.4841)
    """
    values = _validate.real_array(values, "values")
    if values.ndim == 0:
        raise ValueError("values must have a seed axis")
    try:
        values = np.moveaxis(values, axis, 0)
    except np.exceptions.AxisError:
        raise ValueError(f"axis {axis} is out of range for values with {values.ndim} axes") from None
    seeds = values.shape[0]
    if seeds < 2:
        raise ValueError(f"values needs at least two seeds along axis {axis}, got {seeds}")
    level = float(_validate.real_array(level, "level"))
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level:g}")
    t = stats.t.ppf(0.5 + level / 2, seeds - 1)
    return values.mean(axis=0), t * values.std(axis=0, ddof=1) / np.sqrt(seeds)


def paired_difference(a, b, axis=0, level=0.95):
    """Mean of ``a - b`` over seeds and its interval's half-width (arms paired by seed).

    Parameters
    ----------
    a, b : array_like
        The same shape; ``axis`` runs over seeds, entry ``k`` of both from seed ``k``.
    axis, level
        As in :func:`seed_interval`.

    Returns
    -------
    mean, half : numpy.ndarray or float
    """
    a, b = _validate.real_array(a, "a"), _validate.real_array(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape (paired by seed), got {a.shape} and {b.shape}")
    return seed_interval(a - b, axis=axis, level=level)
