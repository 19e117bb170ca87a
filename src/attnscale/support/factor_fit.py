"""The length-factor protocol: the constant factor on a model's logits that minimizes its loss at one length.

A statistical tool, not a rule: :func:`fit_length_factor` takes any callable
that scores held-out windows at a given factor (the book's retrieval models,
or a reader's own model) and returns the factor with a two-way bootstrap
interval (models x windows).  It sits with the interval helpers because it
needs nothing of the mathematics or the models; the retrieval experiment
(:mod:`attnscale.models.retrieval`) and the practitioners' protocol in
Chapter 15 both use it.
"""

from __future__ import annotations

__all__ = ["LengthFactorFit", "fit_length_factor"]

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._validate import count as _count
from ._validate import generator as _generator
from ._validate import positive_number as _positive


@dataclass(frozen=True)
class LengthFactorFit:
    """The result of :func:`fit_length_factor`.

    Attributes
    ----------
    factor : float
        The factor at the minimum of the mean loss over models and windows.
    low, high : float
        Its bootstrap percentile interval at ``level``.
    level : float
    grid : numpy.ndarray
        The factors tried, increasing.
    mean_loss : numpy.ndarray
        The mean loss at each factor of the grid.
    at_edge : bool
        The minimum, or more than a tail's share of the bootstrap minima,
        lies at an end of the grid: widen the grid before trusting the
        interval.
    """

    factor: float
    low: float
    high: float
    level: float
    grid: np.ndarray
    mean_loss: np.ndarray
    at_edge: bool


def _parabola_minimum(x, y):
    """The vertex of the parabola through each row's lowest point and its neighbours.

    ``x`` is ``(G,)`` increasing, ``y`` is ``(R, G)``; rows whose minimum
    is at an end return that end.
    """
    k = np.argmin(y, axis=1)
    inner = np.clip(k, 1, x.size - 2)
    rows = np.arange(y.shape[0])
    x0, x1, x2 = x[inner - 1], x[inner], x[inner + 1]
    y0, y1, y2 = y[rows, inner - 1], y[rows, inner], y[rows, inner + 1]
    numerator = (x1 - x0) ** 2 * (y1 - y2) - (x1 - x2) ** 2 * (y1 - y0)
    denominator = (x1 - x0) * (y1 - y2) - (x1 - x2) * (y1 - y0)
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = x1 - 0.5 * numerator / denominator
    vertex = np.where(np.isfinite(vertex), np.clip(vertex, x0, x2), x1)
    at_end = (k == 0) | (k == x.size - 1)
    return np.where(at_end, x[k], vertex), at_end


def fit_length_factor(
    loss_at: Callable, factors, *, level: float = 0.9, resamples: int = 2000, rng=None
) -> LengthFactorFit:
    r"""The constant factor on a model's logits that minimizes its loss at one length, with an interval.

    A protocol to run on one's own model: pick a length :math:`T`, a set of
    held-out windows of :math:`T` tokens, and a grid of factors; ``loss_at``
    runs the model with every logit multiplied by the factor and returns
    the mean loss of each window.  The estimate is the minimum of the mean
    loss curve, refined by a parabola in :math:`\log` factor through the
    lowest grid point and its neighbours.  The interval resamples the
    windows (and the models, when ``loss_at`` returns a row per model, such
    as seeds of one recipe scored on the same windows) with replacement,
    each way independently, and takes percentiles of the minima.

    Parameters
    ----------
    loss_at : callable
        ``loss_at(factor)`` returns the per-window mean losses: an array
        ``(windows,)``, or ``(models, windows)``, of the same shape for every
        factor.  (An accuracy can be used as minus the accuracy.)
    factors : array_like
        At least three distinct factors :math:`> 0` (sorted here);
        log-spaced is best.
    level : float, optional
        Two-sided level of the interval, in (0, 1).
    resamples : int, optional
        Bootstrap resamples.
    rng : numpy.random.Generator, optional
        Seed it for reproducible intervals (default: seeded with 0).

    Returns
    -------
    LengthFactorFit

    Warns
    -----
    UserWarning
        When ``at_edge``: the grid's end binds.

    Examples
    --------
    A loss whose minimum over windows lies at a factor of 1.5:

    >>> import numpy as np
    >>> noise = np.random.default_rng(1).normal(0, 0.01, 40)
    >>> def loss_at(factor):
    ...     return (np.log(factor) - np.log(1.5)) ** 2 + noise
    >>> fit = fit_length_factor(loss_at, 2.0 ** np.arange(-1, 2.6, 0.5))
    >>> round(fit.factor, 3), fit.low <= 1.5 <= fit.high, fit.at_edge
    (1.5, True, False)
    """
    if not callable(loss_at):
        raise TypeError(f"loss_at must be callable, got {type(loss_at).__name__}")
    grid = np.unique(np.asarray(factors, dtype=float).ravel())
    if grid.size < 3 or not np.all(np.isfinite(grid) & (grid > 0)):
        raise ValueError("factors must hold at least three distinct finite numbers > 0")
    level = _positive(level, "level")
    if not level < 1:
        raise ValueError(f"level must be in (0, 1), got {level:g}")
    resamples = _count(resamples, "resamples", 10)
    rng = np.random.default_rng(0) if rng is None else _generator(rng)
    curves = []
    for f in grid:
        loss = np.asarray(loss_at(float(f)), dtype=float)
        curves.append(loss if loss.ndim == 2 else loss[None, :] if loss.ndim == 1 else None)
        if curves[-1] is None or curves[-1].shape != curves[0].shape or curves[-1].size == 0:
            raise ValueError(
                "loss_at must return a non-empty array (windows,) or (models, windows), "
                f"the same shape for every factor; got shape {loss.shape} at factor {f:g}"
            )
        if not np.all(np.isfinite(curves[-1])):
            raise ValueError(f"loss_at returned a non-finite loss at factor {f:g}")
    losses = np.stack(curves)  # (G, M, W)
    _, models, windows = losses.shape
    x = np.log(grid)
    mean = losses.mean(axis=(1, 2))
    best, best_at_end = _parabola_minimum(x, mean[None, :])
    model_counts = rng.multinomial(models, np.full(models, 1.0 / models), size=resamples)
    window_counts = rng.multinomial(windows, np.full(windows, 1.0 / windows), size=resamples)
    replicated = np.einsum("gmw,rm,rw->rg", losses, model_counts, window_counts) / (models * windows)
    minima, ends = _parabola_minimum(x, replicated)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(minima, [tail, 1.0 - tail])
    at_edge = bool(best_at_end[0] or ends.mean() > tail)
    if at_edge:
        warnings.warn(
            f"the loss is lowest at an end of the grid ({grid[0]:g} to {grid[-1]:g}) for the data or "
            f"{ends.mean():.0%} of the resamples: widen the grid",
            UserWarning,
            stacklevel=2,
        )
    return LengthFactorFit(
        factor=float(np.exp(best[0])),
        low=float(np.exp(low)),
        high=float(np.exp(high)),
        level=level,
        grid=grid,
        mean_loss=mean,
        at_edge=at_edge,
    )
