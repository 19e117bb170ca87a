r"""A small length-transfer experiment: softmax against relu^2 attention.

Chapter *Softmax or relu²*.  A query must retrieve the value of one relevant
key hidden among distractors.  Scores: the relevant key's is drawn from
:math:`\mathcal N(\mu, 1)`, the distractors' from :math:`\mathcal N(\mu_0, 1)`
(:math:`\mu_0 < 0` models a focused row, most distractors below zero);
values: 1 for the relevant key, :math:`\mathcal N(0, 1)` for distractors.
The attention output :math:`o = \sum_j a_j v_j` should be 1.  Under a
Gaussian observation model the retrieval log-likelihood is, up to constants,
:math:`-\tfrac12 (o - 1)^2`, so fitting by maximum likelihood means
minimizing the mean squared error.

Four attentions, each with one free parameter :math:`\theta > 0` fitted at
the training length and then used unchanged at other lengths:

``softmax``
    :math:`a = \operatorname{softmax}(\theta s)`.
``softmax_logn``
    :math:`a = \operatorname{softmax}(\theta \log_{L}(n)\, s)` (entropy-invariant).
``relu2_n``
    :math:`a_j = \operatorname{relu}(s_j)^2 / (\theta n)`, GAU's normalization by the sample length.
``relu2_fixed``
    :math:`a_j = \operatorname{relu}(s_j)^2 / (\theta L)`, normalization fixed at the training length.
``relu2_row``
    :math:`a_j = \operatorname{relu}(s_j)^2 / \sum_k \operatorname{relu}(s_k)^2`, each row
    normalized by its own sum (the third repair in Su, 2022, kexue.fm/archives/9019).  By positive
    homogeneity :math:`\theta` cancels, so this attention has no free
    parameter; a row whose scores are all :math:`\le 0` gets zero weights
    (output 0) instead of 0/0.

Reference: J. Su, "Attention goes better with softmax" (Scientific Spaces, 2022);
W. Hua et al., "Transformer quality in linear time" (FLASH/GAU, ICML 2022).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from ..support import _validate

__all__ = ["ATTENTIONS", "fit_attention_parameter", "retrieval_error", "retrieval_task"]

ATTENTIONS = ("softmax", "softmax_logn", "relu2_n", "relu2_fixed", "relu2_row")


def retrieval_task(samples, n, rng, signal=4.0, distractor_mean=0.0):
    """Scores and values of ``samples`` retrieval queries over ``n`` keys.

    Parameters
    ----------
    samples, n : int
        Queries (``>= 1``) and keys per query (``>= 2``).
    rng : numpy.random.Generator
        Source of randomness.
    signal : float, optional
        Mean score :math:`\\mu` of the relevant key (key 0), ``>= 0``.
    distractor_mean : float, optional
        Mean score :math:`\\mu_0` of the distractors.

    Returns
    -------
    scores, values : numpy.ndarray
        Both of shape ``(samples, n)``.

    See Also
    --------
    retrieval_error, fit_attention_parameter : what the task is used with.

    Examples
    --------
    Key 0 is the relevant one; its value is 1:

    >>> import numpy as np
    >>> from attnscale import retrieval_task
    >>> scores, values = retrieval_task(3, 8, np.random.default_rng(0))
    >>> scores.shape, values[:, 0].tolist()
    ((3, 8), [1.0, 1.0, 1.0])
    """
    samples, n = _validate.count(samples, "samples"), _validate.count(n, "n", 2)
    signal = float(_validate.scale(signal, "signal"))
    distractor_mean = float(_validate.real_array(distractor_mean, "distractor_mean"))
    scores = rng.standard_normal((samples, n)) + distractor_mean
    scores[:, 0] += signal - distractor_mean
    values = rng.standard_normal((samples, n))
    values[:, 0] = 1.0
    return scores, values


def _error_function(kind, scores, values, train_length):
    """``theta -> mean (o - 1)^2`` for one attention on fixed scores and values.

    What does not depend on :math:`\\theta` is computed once: the scores
    shifted by their row maximum (softmax), or each row's
    :math:`\\sum_j \\operatorname{relu}(s_j)^2 v_j` (relu², whose output is
    linear in :math:`1/\\theta`), so that an optimizer's many evaluations
    cost one exponential each, or nothing.
    """
    kind = _validate.choice(kind, "kind", ATTENTIONS)
    n = scores.shape[-1]
    if kind in ("softmax", "softmax_logn"):
        factor = np.log(n) / np.log(train_length) if kind == "softmax_logn" else 1.0
        gap = scores - scores.max(axis=-1, keepdims=True)  # <= 0: exp never overflows

        def error(theta):
            # one temporary, exponentiated in place, and the weighted sum
            # without a second one: several times faster on large rows
            w = np.multiply(gap, theta * factor)
            np.exp(w, out=w)
            output = np.einsum("ij,ij->i", w, values) / np.sum(w, axis=-1)
            return float(np.mean((output - 1.0) ** 2))

        return error
    relu2 = np.maximum(scores, 0.0) ** 2
    weighted = np.sum(relu2 * values, axis=-1)
    if kind == "relu2_row":
        total = relu2.sum(axis=-1)
        output = weighted / np.where(total > 0.0, total, 1.0)
        fixed = float(np.mean((output - 1.0) ** 2))
        return lambda theta: fixed
    divisor = n if kind == "relu2_n" else train_length
    return lambda theta: float(np.mean((weighted / (theta * divisor) - 1.0) ** 2))


def _task_arrays(scores, values):
    """Scores and values as float arrays of one shape ``(samples, n)``, validated."""
    scores = _validate.scores(scores)
    values = _validate.real_array(values, "values")
    if scores.ndim != 2 or values.shape != scores.shape:
        raise ValueError(
            f"scores and values must both have shape (samples, n), got {scores.shape} and {values.shape}"
        )
    return scores, values


def retrieval_error(kind, theta, scores, values, train_length=512):
    """Mean squared error of the attention output against the target 1.

    Parameters
    ----------
    kind : str
        One of :data:`ATTENTIONS`.
    theta : float
        The attention's free parameter, ``> 0``.
    scores, values : array_like
        Shape ``(samples, n)``, from :func:`retrieval_task`.
    train_length : float, optional
        :math:`L` in the definitions above.

    Returns
    -------
    float
        :math:`\\overline{(o - 1)^2}` over the samples.
    """
    theta = float(_validate.at_least(theta, "theta", np.finfo(float).tiny))
    return _error_function(kind, *_task_arrays(scores, values), train_length)(theta)


def fit_attention_parameter(kind, scores, values, train_length=512):
    """Fit ``theta`` by maximum likelihood (least squares) with a bounded scalar optimizer.

    The search runs over :math:`\\log\\theta \\in [-12, 12]`.  ``relu2_row``
    has no free parameter (:math:`\\theta` cancels); for it the function
    returns 1.0 without searching.

    Parameters
    ----------
    kind, scores, values, train_length
        As in :func:`retrieval_error`.

    Returns
    -------
    float
        The fitted :math:`\\theta`.
    """
    error = _error_function(kind, *_task_arrays(scores, values), train_length)
    if kind == "relu2_row":
        return 1.0
    result = minimize_scalar(
        lambda log_theta: error(np.exp(log_theta)),
        bounds=(-12.0, 12.0),
        method="bounded",
        options={"xatol": 1e-8},
    )
    return float(np.exp(result.x))
