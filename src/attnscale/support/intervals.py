r"""Intervals over seeds: the mean of a few independent runs and its Student-t interval.

Chapters *Training* and *A language model*.  With :math:`k` runs that
differ only in their seed, the mean :math:`\bar x` has the interval

.. math:: \bar x \pm t_{k-1,\,(1+c)/2}\, \frac{s}{\sqrt k},

:math:`s` the sample standard deviation and :math:`c` the confidence
level.  For two arms paired by seed (same initial weights, same batches),
the interval of the difference is that of the per-seed differences.  When
every seed is scored on the same test examples, the examples are a second
random factor, crossed with the seeds (:func:`crossed_interval`; for a
contrast of tables that share seeds but not examples,
:func:`crossed_contrast`; the variance components by a second route,
:func:`crossed_components`).  Two
independent estimates, each given as a mean and its interval over its own
batches, agree when their difference passes Welch's two-sided t test
(:func:`welch_tolerance`).  The median of many sampled values (rows of
attention, say) has a distribution-free interval between two order
statistics (:func:`median_interval`).
"""

from __future__ import annotations

import numpy as np

# the t quantile from scipy.special (what scipy.stats.t.ppf evaluates): scipy.stats
# takes half a second to import, in every chapter that imports attnscale
from scipy.special import stdtrit

from . import _validate

__all__ = [
    "crossed_components",
    "crossed_contrast",
    "crossed_interval",
    "median_interval",
    "paired_difference",
    "seed_interval",
    "welch_tolerance",
]


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
    t = stdtrit(seeds - 1, 0.5 + level / 2)
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

    See Also
    --------
    seed_interval : the interval of one arm.
    crossed_interval : the interval when seeds and other factors cross.

    Examples
    --------
    Two arms run with the same four seeds:

    >>> import numpy as np
    >>> from attnscale import paired_difference
    >>> mean, half = paired_difference([1.0, 2.0, 3.0, 4.0], [0.5, 1.4, 2.6, 3.5])
    >>> round(float(mean), 6), round(float(half), 4)
    (0.5, 0.1299)
    """
    a, b = _validate.real_array(a, "a"), _validate.real_array(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape (paired by seed), got {a.shape} and {b.shape}")
    return seed_interval(a - b, axis=axis, level=level)


def welch_tolerance(half_a, seeds_a, half_b, seeds_b, level=1e-3, interval_level=0.95):
    r"""The largest difference of two independent means that Welch's t test accepts.

    Each mean is given as :func:`seed_interval` reports it: the half-width
    :math:`h_i` of its ``interval_level`` (:math:`c`) Student-t interval over
    :math:`k_i` independent batches, so its standard error is

    .. math:: s_i = h_i / t_{k_i-1,\,(1+c)/2} .

    The difference of the means has standard error
    :math:`s = \sqrt{s_a^2 + s_b^2}` and, by Welch and Satterthwaite,

    .. math:: \nu = \frac{s^4}{s_a^4/(k_a-1) + s_b^4/(k_b-1)}

    degrees of freedom; the two-sided test at ``level`` accepts

    .. math:: |\bar a - \bar b| \le t_{\nu,\,1-\mathrm{level}/2}\, s .

    With standard errors estimated from a few batches this is far wider
    than a fixed number of standard errors would suggest (five batches:
    8.6 standard errors at level 1e-3, where the normal law says 3.3).

    Parameters
    ----------
    half_a, half_b : float
        Half-widths, ``>= 0``, not both 0.
    seeds_a, seeds_b : int
        Batches behind each mean, ``>= 2``.
    level : float, optional
        The test's two-sided level in (0, 1): how often two estimates of
        the same quantity are declared different.
    interval_level : float, optional
        The level of the intervals the half-widths belong to.

    Returns
    -------
    float

    Examples
    --------
    >>> from attnscale import welch_tolerance
    >>> round(welch_tolerance(0.1, 5, 0.0, 5, level=0.05), 4)
    0.1
    """
    halves = [float(_validate.real_array(h, name)) for h, name in ((half_a, "half_a"), (half_b, "half_b"))]
    for h, name in zip(halves, ("half_a", "half_b"), strict=True):
        if h < 0:
            raise ValueError(f"{name} must be >= 0, got {h:g}")
    if halves[0] == 0 and halves[1] == 0:
        raise ValueError("half_a and half_b are both 0: no error to test against")
    counts = [_validate.count(k, name, 2) for k, name in ((seeds_a, "seeds_a"), (seeds_b, "seeds_b"))]
    for value, name in ((level, "level"), (interval_level, "interval_level")):
        value = float(_validate.real_array(value, name))
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name} must lie in (0, 1), got {value:g}")
    errors = [h / stdtrit(k - 1, 0.5 + interval_level / 2) for h, k in zip(halves, counts, strict=True)]
    total = np.hypot(*errors)
    dof = total**4 / sum(e**4 / (k - 1) for e, k in zip(errors, counts, strict=True))
    return float(stdtrit(dof, 1 - level / 2) * total)


def crossed_interval(values, level=0.95):
    r"""Mean of a seeds-by-examples table and its interval, both factors random (crossed).

    Every seed's model is scored on the same test examples, so a table
    :math:`x_{sw}` (seed :math:`s = 1..S`, example :math:`w = 1..W`) has two
    sources of sampling error: which seeds were trained and which examples
    were drawn.  Under the two-way random-effects model
    :math:`x_{sw} = \mu + a_s + b_w + e_{sw}`, with mean squares
    :math:`M_S`, :math:`M_W` and :math:`M_E` of the two-way analysis of
    variance without replication,

    .. math::

       \operatorname{Var}\bar x = \frac{\sigma_a^2}{S} + \frac{\sigma_b^2}{W}
       + \frac{\sigma_e^2}{SW}, \qquad
       \widehat{\operatorname{Var}}\,\bar x = \frac{M_S + M_W - M_E}{SW},

    since :math:`E M_S = W\sigma_a^2 + \sigma_e^2`,
    :math:`E M_W = S\sigma_b^2 + \sigma_e^2`, :math:`E M_E = \sigma_e^2`.
    The interval is :math:`\bar x \pm t_{\nu}\,\hat s` with
    Satterthwaite's degrees of freedom

    .. math:: \nu = \frac{(M_S + M_W - M_E)^2}{M_S^2/(S-1) + M_W^2/(W-1) + M_E^2/((S-1)(W-1))}.

    Where the estimate :math:`M_S + M_W - M_E` falls below
    :math:`\max(M_S, M_W)` (a chance low, possible when one factor has no
    effect) the larger mean square is used instead, with the degrees of
    freedom still from the formula above (with the truncated estimate in
    its numerator).  That mean square's own degrees of freedom would be
    larger; keeping the formula's makes the interval the wider of the two
    choices (the interval is close to right when one factor's variance is
    zero, the case that triggers it).  The degrees of
    freedom are floored at :math:`\min(S, W) - 1`: when the error mean square
    nearly cancels the others, :math:`\nu` can fall below one and
    :math:`t_\nu` grow without bound (a half-width wider than the data's
    range); the floor is the smaller factor's own degrees of freedom.  For
    two arms paired by seed and scored on the same examples, pass the
    table of their differences.

    Parameters
    ----------
    values : array_like
        Shape ``(S, W)``, finite, ``S >= 2`` seeds and ``W >= 2`` examples.
    level : float, optional
        Confidence level in :math:`(0, 1)`.

    Returns
    -------
    mean, half : float
        The interval is ``mean ± half``.

    See Also
    --------
    seed_interval : the seeds alone (the examples held fixed).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import crossed_interval
    >>> table = np.add.outer([0.0, 0.2, 0.4], [0.0, 1.0, 2.0, 3.0])  # seed effect + example effect
    >>> mean, half = crossed_interval(table)
    >>> round(float(mean), 3), bool(half > seed_interval(table.mean(axis=1))[1])
    (1.7, True)
    """
    values = _validate.real_array(values, "values")
    if values.ndim != 2 or min(values.shape) < 2:
        raise ValueError(f"values must be a (seeds, examples) table with both >= 2, got shape {values.shape}")
    level = float(_validate.real_array(level, "level"))
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level:g}")
    seeds, examples = values.shape
    grand = values.mean()
    by_seed, by_example = values.mean(axis=1), values.mean(axis=0)
    m_seed = examples * np.sum((by_seed - grand) ** 2) / (seeds - 1)
    m_example = seeds * np.sum((by_example - grand) ** 2) / (examples - 1)
    residual = values - by_seed[:, None] - by_example[None, :] + grand
    m_error = np.sum(residual**2) / ((seeds - 1) * (examples - 1))
    combined = max(m_seed + m_example - m_error, m_seed, m_example)
    if combined == 0.0:
        return float(grand), 0.0
    dof = combined**2 / (
        m_seed**2 / (seeds - 1) + m_example**2 / (examples - 1) + m_error**2 / ((seeds - 1) * (examples - 1))
    )
    dof = max(dof, min(seeds, examples) - 1)  # floor: the smaller factor's own degrees of freedom
    half = stdtrit(dof, 0.5 + level / 2) * np.sqrt(combined / (seeds * examples))
    return float(grand), float(half)


def _table(values, name="values"):
    values = _validate.real_array(values, name)
    if values.ndim != 2 or min(values.shape) < 2:
        raise ValueError(f"{name} must be a (seeds, examples) table with both >= 2, got shape {values.shape}")
    return values


def _level(level):
    level = float(_validate.real_array(level, "level"))
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level:g}")
    return level


def crossed_components(values):
    r"""Variance components of a seeds-by-examples table, from squared differences of its cells.

    A second route to the model of :func:`crossed_interval`,
    :math:`x_{sw} = \mu + a_s + b_w + e_{sw}`, that does not form the mean
    squares: half the mean squared difference of two cells is

    .. math::

       A &= \tfrac12\,\overline{(x_{sw} - x_{s'w})^2}_{s \ne s'} = \sigma_a^2 + \sigma_e^2
       \quad\text{(same example)},\\
       B &= \tfrac12\,\overline{(x_{sw} - x_{sw'})^2}_{w \ne w'} = \sigma_b^2 + \sigma_e^2
       \quad\text{(same seed)},\\
       C &= \tfrac12\,\overline{(x_{sw} - x_{s'w'})^2}_{s \ne s',\, w \ne w'}
       = \sigma_a^2 + \sigma_b^2 + \sigma_e^2 ,

    in expectation, so :math:`\hat\sigma_a^2 = C - B`,
    :math:`\hat\sigma_b^2 = C - A`, :math:`\hat\sigma_e^2 = A + B - C`
    (unbiased, the method of symmetric sums of Koch, *Technometrics* 9,
    93--118, 1967, in its squared-difference form).  The averages are taken
    over the pairs of cells as they are, :math:`O(S^2 W^2)` work; in a
    complete table they equal the estimates from the mean squares,
    :math:`\sigma_a^2 = (M_S - M_E)/W`, :math:`\sigma_b^2 = (M_W - M_E)/S`,
    :math:`\sigma_e^2 = M_E`, to rounding, which is what makes them a check
    on :func:`crossed_interval`'s arithmetic.  Estimates may be negative
    (a chance low of a small component).

    Parameters
    ----------
    values : array_like
        Shape ``(S, W)``, finite, ``S >= 2`` seeds and ``W >= 2`` examples;
        ``S**2 * W**2`` should fit in memory a seed pair at a time
        (``W**2`` floats).

    Returns
    -------
    seed, example, error : float
        :math:`\hat\sigma_a^2`, :math:`\hat\sigma_b^2`, :math:`\hat\sigma_e^2`.

    See Also
    --------
    crossed_interval : the interval of the table's mean, from the mean squares.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import crossed_components
    >>> table = np.add.outer([0.0, 1.0], [0.0, 2.0, 4.0])  # seed and example effects, no interaction
    >>> [round(c, 12) for c in crossed_components(table)]
    [0.5, 4.0, 0.0]
    """
    values = _table(values)
    seeds, examples = values.shape
    same_example = same_seed = neither = 0.0
    off = ~np.eye(examples, dtype=bool)
    for s in range(seeds):
        for t in range(seeds):
            half_sq = 0.5 * (values[s][:, None] - values[t][None, :]) ** 2
            if s == t:
                same_seed += half_sq[off].sum()
            else:
                same_example += np.trace(half_sq)
                neither += half_sq[off].sum()
    a = same_example / (seeds * (seeds - 1) * examples)
    b = same_seed / (seeds * examples * (examples - 1))
    c = neither / (seeds * (seeds - 1) * examples * (examples - 1))
    return float(c - b), float(c - a), float(a + b - c)


def crossed_contrast(tables, weights, level=0.95):
    r"""Interval of :math:`\sum_k c_k \bar x_k` over tables that share their seeds but not their examples.

    Table :math:`k` holds :math:`x^{(k)}_{sw}`, seed :math:`s = 1..S` (the
    same seeds in every table, in the same order) and example
    :math:`w = 1..W_k`, drawn afresh for each table (the test windows of two
    evaluation lengths, say).  Each table follows the model of
    :func:`crossed_interval`, the seed effects of different tables may be
    correlated (the same trained models), the example effects are
    independent.  With :math:`g_s = \sum_k c_k \bar x^{(k)}_{s\cdot}`, the
    contrast per seed, and the mean squares :math:`M_{W,k}`,
    :math:`M_{E,k}` of each table,

    .. math::

       \widehat{\operatorname{Var}} = \frac{s_g^2}{S}
       + \sum_k c_k^2\,\frac{M_{W,k} - M_{E,k}}{S W_k},

    unbiased, since :math:`s_g^2` estimates the variance of the seed part
    plus :math:`\sum_k c_k^2 \sigma_{e,k}^2 / W_k` and
    :math:`(M_{W,k} - M_{E,k})/S` estimates :math:`\sigma_{b,k}^2`.  The
    degrees of freedom are Satterthwaite's (*Biometrics Bulletin* 2,
    110--114, 1946), :math:`S - 1` for :math:`s_g^2`, :math:`W_k - 1` and
    :math:`(S-1)(W_k-1)` for the mean squares; an estimate below the
    largest of its positive terms is raised to it, as in
    :func:`crossed_interval`, which is the case of one table with weight 1.

    Parameters
    ----------
    tables : sequence of array_like
        Each of shape ``(S, W_k)``, finite, the same ``S >= 2``, ``W_k >= 2``.
    weights : sequence of float
        One finite weight per table, not all zero.
    level : float, optional
        As in :func:`crossed_interval`.

    Returns
    -------
    mean, half : float
        As in :func:`crossed_interval`.

    See Also
    --------
    crossed_interval : one table.

    Examples
    --------
    A growth from one length to another, per seed, with windows drawn
    afresh at each length:

    >>> import numpy as np
    >>> from attnscale import crossed_contrast, crossed_interval
    >>> rng = np.random.default_rng(0)
    >>> short, long = rng.normal(size=(5, 40)), rng.normal(1.0, 1.0, (5, 8))
    >>> mean, half = crossed_contrast([long, short], [1.0, -1.0])
    >>> round(mean, 3) == round(float(long.mean() - short.mean()), 3)
    True
    >>> np.allclose(crossed_contrast([short], [1.0]), crossed_interval(short))
    True
    """
    if isinstance(tables, np.ndarray) or not isinstance(tables, (list, tuple)) or not tables:
        raise TypeError("tables must be a non-empty list or tuple of (seeds, examples) tables")
    tables = [_table(t, f"tables[{k}]") for k, t in enumerate(tables)]
    weights = _validate.real_array(weights, "weights")
    if weights.shape != (len(tables),):
        raise ValueError(f"weights must give one weight per table ({len(tables)}), got shape {weights.shape}")
    if not np.any(weights):
        raise ValueError("weights are all zero: no contrast")
    seeds = tables[0].shape[0]
    if any(t.shape[0] != seeds for t in tables):
        raise ValueError(f"tables must share their seeds (rows), got {[t.shape[0] for t in tables]}")
    level = _level(level)
    per_seed = sum(c * t.mean(axis=1) for c, t in zip(weights, tables, strict=True))
    # (variance term, its degrees of freedom, its sign in the estimate)
    terms = [(per_seed.var(ddof=1) / seeds, seeds - 1, 1.0)]
    for c, t in zip(weights, tables, strict=True):
        examples = t.shape[1]
        by_seed, by_example, grand = t.mean(axis=1), t.mean(axis=0), t.mean()
        m_example = seeds * np.sum((by_example - grand) ** 2) / (examples - 1)
        residual = t - by_seed[:, None] - by_example[None, :] + grand
        m_error = np.sum(residual**2) / ((seeds - 1) * (examples - 1))
        scale = c**2 / (seeds * examples)
        terms += [
            (scale * m_example, examples - 1, 1.0),
            (scale * m_error, (seeds - 1) * (examples - 1), -1.0),
        ]
    estimate = sum(sign * v for v, _, sign in terms)
    combined = max(estimate, max(v for v, _, sign in terms if sign > 0))
    mean = float(per_seed.mean())
    if combined == 0.0:
        return mean, 0.0
    dof = max(combined**2 / sum(v**2 / k for v, k, _ in terms), min(seeds, *(t.shape[1] for t in tables)) - 1)
    return mean, float(stdtrit(dof, 0.5 + level / 2) * np.sqrt(combined))


def median_interval(values, level=0.95):
    r"""Sample median and a distribution-free interval for the median, from order statistics.

    With :math:`N` independent draws of a continuous variable, the number of
    draws below its median :math:`m` is Binomial(:math:`N`, 1/2), whatever
    the law, so the order statistics :math:`x_{(j)} \le x_{(k)}` with

    .. math::

       j = F^{-1}_{N}\bigl(\tfrac{1-c}{2}\bigr), \qquad
       k = \bar F^{-1}_{N}\bigl(\tfrac{1-c}{2}\bigr) + 1,

    (:math:`F_N` the Binomial(:math:`N`, 1/2) distribution function,
    :math:`\bar F_N` its survival function, both inverted as
    ``scipy.stats.binom.ppf`` and ``isf`` do) cover :math:`m` with
    probability :math:`P(j \le B \le k - 1) \ge c`: the interval of the sign
    test (Hollander, Wolfe and Chicken, *Nonparametric Statistical Methods*,
    3rd ed., 2014, ch. 3).

    Parameters
    ----------
    values : array_like
        One axis of finite values, enough of them for ``level`` (at least
        6 for 95%: fewer cannot give the interval between two order statistics).
    level : float, optional
        Confidence level in :math:`(0, 1)`.

    Returns
    -------
    median, low, high : float
        The sample median and the interval's ends :math:`x_{(j)}`, :math:`x_{(k)}`.

    Raises
    ------
    ValueError
        If ``values`` is empty, not one axis, or too short for ``level``
        (the lower order statistic would not exist).

    See Also
    --------
    seed_interval : the interval of a mean over a few runs.

    Examples
    --------
    >>> from attnscale import median_interval
    >>> median_interval(range(1, 101))
    (50.5, 40.0, 61.0)
    """
    values = _validate.scores(values, "values")
    if values.ndim != 1:
        raise ValueError(f"values must have one axis, got shape {values.shape}")
    level = float(_validate.real_array(level, "level"))
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level:g}")
    from scipy import stats  # here: scipy.stats is slow to import, and only this needs it

    x = np.sort(values)
    lo = int(stats.binom.ppf((1 - level) / 2, x.size, 0.5)) - 1
    hi = int(stats.binom.isf((1 - level) / 2, x.size, 0.5))
    if lo < 0 or hi >= x.size:
        raise ValueError(f"values needs more entries for a {level:g} interval of the median, got {x.size}")
    return float(np.median(x)), float(x[lo]), float(x[hi])
