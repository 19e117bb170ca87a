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

import numpy as np

from . import _validate

__all__ = ["sample_cosine_scores", "sample_gaussian_scores", "sampled_objective"]


def _count(value, name, lower=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < lower:
        raise ValueError(f"{name} must be >= {lower}, got {value}")
    return int(value)


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
    """
    samples, n = _count(samples, "samples"), _count(n, "n", 2)
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
    samples, n = _count(samples, "samples"), _count(n, "n", 2)
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
