r"""Training one attention layer on a synthetic retrieval task, in NumPy.

Chapter *Does the largest gradient train fastest?* of the book uses this
module.  The task: a query must find, among :math:`n` keys, the one it was
copied from.  Inputs :math:`x_1, \dots, x_n \in \mathbb R^{m}` are i.i.d.
standard normal, a target :math:`t` is drawn uniformly, and the query input is
:math:`x_q = x_t` (plus optional Gaussian noise).  One attention head with
learned projections :math:`W_Q, W_K \in \mathbb R^{d \times m}` forms

.. math::

   q = W_Q x_q,\quad k_j = W_K x_j,\quad r_j = q \cdot k_j,\quad
   p = \operatorname{softmax}(\lambda\, r),

with a fixed scale :math:`\lambda` (written :math:`c/\sqrt d` with a
*multiplier* :math:`c`).  Entries of :math:`W_Q, W_K` start as
:math:`\mathcal N(0, 1/m)`, so :math:`q` and :math:`k_j` have unit-variance
entries and :math:`r_j` has variance :math:`d` (Part I of the book): the
standardized scores :math:`r_j/\sqrt d` are the unit-variance scores of
Part II, and :math:`c` is the scale :math:`\alpha` of Part II.

Two losses, averaged over a batch of queries:

``"ce"``
    cross-entropy of the weight on the target, :math:`-\log p_t`;
``"readout"``
    the attention output :math:`o = \sum_j p_j x_j` (the inputs serve as
    values) against the target's value,
    :math:`\tfrac{1}{2m}\lVert o - x_t\rVert^2`.

Gradients are written by hand from the book's softmax Jacobian
:math:`\partial p_i/\partial z_j = p_i(\delta_{ij} - p_j)` (for logits
:math:`z = \lambda r`): the vector-Jacobian product of an upstream gradient
:math:`g = \partial L/\partial p` is :math:`p \odot (g - p\cdot g)`.  For the
cross-entropy, :math:`g = -e_t/p_t` and the product simplifies to
:math:`p - e_t`.  Tests compare every gradient with central finite
differences.

Everything is vectorized over *replicas* (independent seeds: own data, own
initialization) and *scales* (within a replica, every scale sees the same
data and starts from the same weights, so that differences between scales
are not noise in the data).  Arrays of models have leading shape
``(replicas, scales)``.

A learned gain :math:`g` on the logits, :math:`z = g\,\lambda\,\mu(n)\, r`
with a fixed length factor :math:`\mu(n)`, covers scalable softmax
(Nakanishi, 2025) (:math:`\mu(n) = \log n / \log L`, learned
:math:`s = g\lambda/\log L`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..support import _validate

__all__ = [
    "TrainingResult",
    "attention_loss_and_gradients",
    "attention_scores",
    "evaluate_attention",
    "init_projections",
    "one_rate_sweep",
    "retrieval_batch",
    "steps_to_target",
    "train_at_best_rate",
    "train_attention",
    "tuned_rate_sweep",
]

OPTIMIZERS = ("sgd", "adam")
#: The training chapter's tuned-rate comparison: head dimension, numbers of
#: keys and seeds (the answers table quotes the scales it tried there).
TUNED_D, TUNED_LENGTHS, TUNED_SEEDS = 16, (64, 256), 5
#: The equivalence margin of that comparison: with tuned rates, c = 1 and
#: alpha* train alike when the 90% interval of their loss ratio lies within
#: a factor TUNED_MARGIN either way (two one-sided tests).
TUNED_MARGIN = 1.5
#: Numbers of evaluation keys, and of attention weights, held at a time.
#: The weights' block only sets speed, not the numbers (the keys drawn do
#: not depend on it): 2**22 ran twice as fast as 2**24, whose arrays leave
#: the cache, and faster than 2**20, which pays Python per block (measured).
_EVAL_KEYS, _EVAL_WEIGHTS = 2**22, 2**22
#: Attention weights, (replicas, batch, models, n), held at a time in a
#: training step: the step's dozen passes over them run from the cache
#: instead of memory.  Every replica's arithmetic is its own, so the numbers
#: do not depend on it (a test checks the bits).
_CACHE_NUMBERS = 2**18
LOSSES = ("ce", "readout")


@dataclass(frozen=True)
class TunedTraining:
    """The outcome of :func:`train_at_best_rate`.

    Attributes
    ----------
    result : TrainingResult
        The runs at the chosen rates, on fresh seeds (the ones to report).
    rates : numpy.ndarray
        Shape ``(scales,)``: the learning rate chosen for each multiplier.
    at_edge : numpy.ndarray
        Shape ``(scales,)``, bool: the choice is the smallest or largest rate
        of the grid, so a better rate may lie beyond it.
    search_loss : numpy.ndarray
        Shape ``(replicas, scales, rates)``: the evaluation loss of the
        search runs.
    """

    result: TrainingResult
    rates: np.ndarray
    at_edge: np.ndarray
    search_loss: np.ndarray


@dataclass(frozen=True)
class TrainingResult:
    """The outcome of :func:`train_attention`.

    Attributes
    ----------
    scales
        Shape ``(scales,)``: the scale :math:`\\lambda` of each model (already
        including :math:`1/\\sqrt d`).
    losses
        Shape ``(replicas, scales, steps)``: the training-batch loss at each step
        (before that step's update).
    w_query, w_key
        Shape ``(replicas, scales, d, m)``: the final projections (``d`` the
        largest head dimension; a smaller head's other rows are zero).
    gain
        Shape ``(replicas, scales)``: the final learned gain (1 if not learned).
    train_length : int
        The number of keys :math:`L` seen in training.
    loss : str
        ``"ce"`` or ``"readout"``.
    length_rule : str
        ``"fixed"`` or ``"logn"`` (the factor :math:`\\mu(n)` used in training).
    """

    scales: np.ndarray
    losses: np.ndarray
    w_query: np.ndarray
    w_key: np.ndarray
    gain: np.ndarray
    train_length: int
    loss: str
    length_rule: str


def retrieval_batch(replicas, batch, n, m, rng, query_noise=0.0):
    r"""A batch of retrieval problems: keys, query inputs and targets.

    Parameters
    ----------
    replicas, batch : int
        Independent replicas (``>= 1``) and queries per replica (``>= 1``).
    n : int
        Keys per query, ``>= 2``.
    m : int
        Input dimension, ``>= 1``.
    rng : numpy.random.Generator
        Source of randomness.
    query_noise : float, optional
        Standard deviation of Gaussian noise added to the query input, ``>= 0``.

    Returns
    -------
    keys : numpy.ndarray
        Shape ``(replicas, batch, n, m)``, i.i.d. standard normal.
    queries : numpy.ndarray
        Shape ``(replicas, batch, m)``: :math:`x_q = x_t + \sigma\xi`.
    targets : numpy.ndarray
        Shape ``(replicas, batch)``, integers in ``[0, n)``.
    """
    replicas, batch = _validate.count(replicas, "replicas"), _validate.count(batch, "batch")
    n, m = _validate.count(n, "n", 2), _validate.count(m, "m")
    rng = _validate.generator(rng)
    query_noise = _validate.nonnegative_number(query_noise, "query_noise")
    keys = rng.standard_normal((replicas, batch, n, m))
    targets = rng.integers(0, n, size=(replicas, batch))
    queries = np.take_along_axis(keys, targets[..., None, None], axis=2)[:, :, 0, :]
    if query_noise > 0:
        queries = queries + query_noise * rng.standard_normal(queries.shape)
    return keys, queries, targets


def init_projections(replicas, d, m, rng):
    r"""Initial projections :math:`W_Q, W_K` with i.i.d. :math:`\mathcal N(0, 1/m)` entries.

    With standard normal inputs, :math:`q = W_Q x` and :math:`k = W_K x` then
    have unit-variance entries and :math:`q\cdot k` has variance :math:`d`
    (the book's chapter on the variance of a dot product).

    Parameters
    ----------
    replicas, d, m : int
        Replicas, head dimension and input dimension, each ``>= 1``.
    rng : numpy.random.Generator

    Returns
    -------
    w_query, w_key : numpy.ndarray
        Each of shape ``(replicas, 1, d, m)`` (one scale axis, to broadcast).
    """
    replicas, d, m = _validate.count(replicas, "replicas"), _validate.count(d, "d"), _validate.count(m, "m")
    rng = _validate.generator(rng)
    shape = (replicas, 1, d, m)
    return rng.standard_normal(shape) / np.sqrt(m), rng.standard_normal(shape) / np.sqrt(m)


def attention_scores(w_query, w_key, keys, queries):
    r"""Raw scores :math:`r_j = (W_Q x_q)\cdot(W_K x_j)`, before any scale.

    Parameters
    ----------
    w_query, w_key : array_like
        Shape ``(replicas, scales, d, m)``.
    keys, queries : array_like
        Shapes ``(replicas, batch, n, m)`` and ``(replicas, batch, m)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(replicas, batch, scales, n)``.
    """
    w_query, w_key, keys, queries = _checked_projections(w_query, w_key, keys, queries)
    _, u = _query_and_key_vector(w_query, w_key, queries)
    return u @ np.swapaxes(keys, -1, -2)


def _checked_projections(w_query, w_key, keys, queries):
    """The projections and a batch as float arrays of matching shapes, or raise.

    ``w_query`` and ``w_key``: one shape ``(replicas, scales, d, m)``; ``keys``
    ``(replicas, batch, n, m)``; ``queries`` ``(replicas, batch, m)``.
    """
    w_query = _validate.real_array(w_query, "w_query")
    w_key = _validate.real_array(w_key, "w_key")
    if w_query.ndim != 4 or w_query.shape != w_key.shape:
        raise ValueError(
            f"w_query and w_key must have the same shape (replicas, scales, d, m), "
            f"got {w_query.shape} and {w_key.shape}"
        )
    replicas, m = w_query.shape[0], w_query.shape[-1]
    keys = _validate.real_array(keys, "keys")
    queries = _validate.real_array(queries, "queries")
    if keys.ndim != 4 or keys.shape[0] != replicas or keys.shape[-1] != m:
        raise ValueError(f"keys must have shape ({replicas}, batch, n, {m}), got {keys.shape}")
    if queries.shape != (*keys.shape[:2], m):
        raise ValueError(f"queries must have shape {(*keys.shape[:2], m)}, got {queries.shape}")
    return w_query, w_key, keys, queries


def _query_and_key_vector(w_query, w_key, queries):
    """:math:`q = W_Q x_q` as ``(R, S, d, B)`` and :math:`u = W_K^\top q` as ``(R, B, S, m)``.

    Batched matrix products (BLAS) rather than ``einsum``, which does not use
    BLAS over batch axes: these small products ran per step of training and
    cost as much as the products over all keys.
    """
    q = w_query @ np.swapaxes(queries, -1, -2)[:, None]  # (R, S, d, B)
    u = np.swapaxes(w_key, -1, -2) @ q  # (R, S, m, B)
    return q, u.transpose(0, 3, 1, 2)


def _forward(w_query, w_key, logit_scale, keys, queries, keep=True):
    """Raw scores r (R, B, S, n), logits z, weights p, and the intermediates.

    With ``keep=False`` the raw scores and the logits are not returned (None)
    and their memory becomes the weights': the same operations, in place.
    """
    q, u = _query_and_key_vector(w_query, w_key, queries)  # r_j = u . x_j
    raw = u @ np.swapaxes(keys, -1, -2)  # (R, B, S, n)
    scale = logit_scale[:, None, :, None]
    z = scale * raw if keep else np.multiply(raw, scale, out=raw)
    z -= z.max(axis=-1, keepdims=True)  # in place: the same operations, fewer large temporaries
    p = np.exp(z) if keep else np.exp(z, out=z)
    p /= p.sum(axis=-1, keepdims=True)
    return (q, raw, z, p) if keep else (q, None, None, p)


def _log_normalizer(p):
    r""":math:`\log Z` of rows whose largest logit was shifted to 0: there :math:`p = 1/Z`.

    The weights already hold :math:`Z`, so no second exponential is needed;
    :math:`p_{\max} \ge 1/n` keeps the logarithm accurate.
    """
    return -np.log(p.max(axis=-1))


def _softmax_vjp(p, upstream, mean=None):
    r"""Vector-Jacobian product of softmax: :math:`J^\top g = p \odot (g - p\cdot g)` (per unit scale).

    Overwrites ``upstream`` (a temporary of the caller) with the result;
    ``mean``, if given, is :math:`p\cdot g` computed by the caller.
    """
    upstream -= np.sum(p * upstream, axis=-1, keepdims=True) if mean is None else mean
    upstream *= p
    return upstream


def attention_loss_and_gradients(
    w_query, w_key, scales, keys, queries, targets, loss="ce", gain=None, length_factor=1.0
):
    r"""Loss of each model on one batch and its gradients, from the softmax Jacobian.

    Implements the forward pass and hand-written backward pass described in
    the module docstring: logits :math:`z = g\,\lambda\,\mu\,r`, with
    :math:`\partial L/\partial z = p \odot (\partial L/\partial p - p\cdot\partial L/\partial p)`
    (the book's softmax-Jacobian theorem), then the chain rule through
    :math:`r_j = (W_K^\top W_Q x_q)\cdot x_j`.

    Parameters
    ----------
    w_query, w_key : array_like
        Shape ``(replicas, scales, d, m)``.
    scales : array_like
        Shape ``(scales,)``, the scale :math:`\lambda \ge 0` of each model.
    keys, queries, targets : numpy.ndarray
        From :func:`retrieval_batch`, with the same number of replicas.
    loss : {"ce", "readout"}
        Which loss (module docstring).
    gain : array_like, optional
        Shape ``(replicas, scales)``; the learned gain :math:`g` (default 1).
    length_factor : float, optional
        :math:`\mu(n) > 0`, a fixed factor on the logits.

    Returns
    -------
    loss : numpy.ndarray
        Shape ``(replicas, scales)``, the mean loss over the batch.
    grads : tuple of numpy.ndarray
        :math:`\partial L/\partial W_Q`, :math:`\partial L/\partial W_K` (shapes
        of the weights) and :math:`\partial L/\partial g` (shape ``(replicas, scales)``).
    """
    w_query, w_key, keys, queries = _checked_projections(w_query, w_key, keys, queries)
    replicas, n_scales = w_query.shape[:2]
    scales = _validate.scale(scales, "scales")
    if scales.shape != (n_scales,):
        raise ValueError(f"scales must have shape ({n_scales},), got {scales.shape}")
    targets = np.asarray(targets)
    if targets.shape != keys.shape[:2] or targets.dtype.kind not in "iu":
        raise ValueError(f"targets must be integers of shape {keys.shape[:2]}")
    if np.any((targets < 0) | (targets >= keys.shape[2])):
        raise ValueError(f"targets must lie in [0, {keys.shape[2]})")
    loss = _validate.choice(loss, "loss", LOSSES)
    gain = np.ones((replicas, n_scales)) if gain is None else _validate.real_array(gain, "gain")
    if gain.shape != (replicas, n_scales):
        raise ValueError(f"gain must have shape ({replicas}, {n_scales}), got {gain.shape}")
    length_factor = _validate.positive_number(length_factor, "length_factor")
    return _loss_and_gradients(w_query, w_key, scales, gain, length_factor, keys, queries, targets, loss)[:2]


def _loss_and_gradients(
    w_query,
    w_key,
    scales,
    gain,
    length_factor,
    keys,
    queries,
    targets,
    loss,
    gradients=True,
    gain_gradient=True,
    need_logits=True,
):
    batch = keys.shape[1]
    logit_scale = gain * scales * length_factor  # (R, S)
    # the raw scores feed the gain's gradient, the logits the cross-entropy
    # and the evaluation's entropy (need_logits); otherwise the weights reuse
    # their memory
    keep = loss == "ce" or (gradients and gain_gradient) or (not gradients and need_logits)
    q, raw, z, p = _forward(w_query, w_key, logit_scale, keys, queries, keep)
    index = np.broadcast_to(targets[:, :, None, None], (*p.shape[:3], 1))
    if loss == "ce":
        log_z = _log_normalizer(p)
        value = np.mean(log_z - np.take_along_axis(z, index, axis=-1)[..., 0], axis=1)
    else:
        m = keys.shape[-1]
        target_value = np.take_along_axis(keys, targets[..., None, None], axis=2)  # (R, B, 1, m)
        output = p @ keys  # (R, B, S, m)
        err = output - target_value
        value = np.mean(0.5 * np.sum(err**2, axis=-1) / m, axis=1)
    if not gradients:  # evaluation: the backward products cost as much as the forward ones
        return value, None, (p, z, index)
    if loss == "ce":
        dz = p.copy()
        np.put_along_axis(dz, index, np.take_along_axis(p, index, axis=-1) - 1.0, axis=-1)
        dz /= batch
    else:
        # dL/dp_j = x_j . g with g = (o - x_t) / (m B) for the batch mean: the
        # factors go on the small error, not on every weight, and p . dL/dp,
        # the sum over keys in the Jacobian's product, is o . g
        g = err / (m * batch)
        dz = g @ np.swapaxes(keys, -1, -2)
        dz = _softmax_vjp(p, dz, np.sum(output * g, axis=-1, keepdims=True))
    if gain_gradient:
        d_gain = np.einsum("rbsn,rbsn->rs", dz, raw) * scales * length_factor
    else:  # a fixed gain: the pass over every weight is not needed
        d_gain = np.zeros(logit_scale.shape)
    dz *= logit_scale[:, None, :, None]  # now dL/draw
    du = dz @ keys  # (R, B, S, m)
    du = du.transpose(0, 2, 1, 3)  # (R, S, B, m)
    d_key = q @ du  # sum over the batch of q du^T
    dq = w_key @ np.swapaxes(du, -1, -2)  # (R, S, d, B)
    d_query = dq @ queries[:, None]
    return value, (d_query, d_key, d_gain), (p, z, index)


def _replica_by_replica(params, scales, keys, queries, targets, loss, gain_gradient):
    """The batch's loss and gradients, a few replicas at a time (see ``_CACHE_NUMBERS``)."""
    replicas, batch, n = keys.shape[:3]
    per_pass = max(1, _CACHE_NUMBERS // (batch * scales.size * n))
    value = np.empty((replicas, scales.size))
    grads = [np.empty_like(params[0]), np.empty_like(params[1]), np.empty((replicas, scales.size))]
    for start in range(0, replicas, per_pass):
        r = slice(start, start + per_pass)
        value[r], parts, _ = _loss_and_gradients(
            params[0][r],
            params[1][r],
            scales,
            params[2][r],
            1.0,
            keys[r],
            queries[r],
            targets[r],
            loss,
            gain_gradient=gain_gradient,
        )
        for k in range(3):
            grads[k][r] = parts[k]
    return value, grads


def _head_dims(d, size):
    """One head dimension per model from ``d`` (an int or one per multiplier)."""
    if isinstance(d, list | tuple | np.ndarray):
        dims = np.asarray(d)
        if dims.shape != (size,) or dims.dtype.kind not in "iu":
            raise ValueError(
                f"d must be an integer or a sequence of integers, one per multiplier ({size}), got {d!r}"
            )
        if np.any(dims < 1):
            raise ValueError(f"d must be >= 1, got {dims[dims < 1][0]}")
        return dims.astype(int)
    return np.full(size, _validate.count(d, "d"))


def train_attention(
    n,
    d,
    multipliers,
    *,
    m=16,
    replicas=4,
    steps=200,
    batch=8,
    optimizer="adam",
    learning_rate=0.01,
    loss="ce",
    seed=0,
    length_rule="fixed",
    learn_gain=False,
    query_noise=0.0,
):
    r"""Train one attention head per (replica, scale) on the retrieval task.

    Each model uses the scale :math:`\lambda = c/\sqrt d` for one multiplier
    :math:`c`; all models of a replica share data and initial weights.
    Updates: plain SGD, :math:`\theta \leftarrow \theta - \eta\,\nabla L`, or
    Adam (Kingma & Ba, 2015) with :math:`\beta = (0.9, 0.999)` and
    :math:`\epsilon = 10^{-8}`.

    Parameters
    ----------
    n : int
        Keys per query in training (the training length :math:`L`), ``>= 2``.
    d : int or sequence of int
        Head dimension, ``>= 1``: one for every model, or one per multiplier,
        so that heads of several dimensions train on the same data in one
        call.  A head of dimension :math:`d` is then held as one of the
        largest dimension whose other rows of :math:`W_Q` and :math:`W_K` are
        zero: their gradients are zero, SGD and Adam leave them at zero, and
        the head computes what it would alone (its scale is
        :math:`c/\sqrt d` with its own :math:`d`; its initial rows are the
        first :math:`d` rows of the largest head's draw).
    multipliers : array_like
        One-dimensional, finite, ``> 0``: the multipliers :math:`c`.
    m : int, optional
        Input dimension, ``>= 1``.
    replicas : int, optional
        Independent seeds, ``>= 1``.
    steps, batch : int, optional
        Optimizer steps and queries per step, ``>= 1``.
    optimizer : {"adam", "sgd"} or sequence of them, optional
        One optimizer for every model, or one per multiplier (so that runs
        that differ only in the optimizer share their data in one call).
    learning_rate : float or array_like, optional
        ``> 0``: one step size for every model, or one per multiplier (a
        one-dimensional array of the length of ``multipliers``), so that a
        grid of scales and step sizes trains on the same data in one call.
    loss : {"ce", "readout"}
    seed : int, optional
        Seeds the generator (``numpy.random.default_rng(seed)``); the same seed
        gives bitwise the same result.
    length_rule : {"fixed", "logn"}
        :math:`\mu(n) = 1` or :math:`\log n/\log L` (equal to 1 in training;
        kept with the result for evaluation at other lengths).
    learn_gain : bool or sequence of bool, optional
        Learn the gain :math:`g` (scalable softmax when ``length_rule="logn"``),
        for every model or one flag per multiplier (so that a head with a
        learned gain and one without share their data in one call).
    query_noise : float, optional
        See :func:`retrieval_batch`.

    Returns
    -------
    TrainingResult

    See Also
    --------
    evaluate_attention : the trained models at any number of keys.
    train_at_best_rate : the same with a tuned learning rate per multiplier.

    Examples
    --------
    >>> from attnscale import train_attention
    >>> result = train_attention(16, 8, [0.5, 1.0, 2.0], replicas=2, steps=3)
    >>> result.losses.shape  # (replicas, scales, steps)
    (2, 3, 3)
    """
    n, m = _validate.count(n, "n", 2), _validate.count(m, "m")
    replicas, steps, batch = (
        _validate.count(replicas, "replicas"),
        _validate.count(steps, "steps"),
        _validate.count(batch, "batch"),
    )
    multipliers = _checked_multipliers(multipliers)
    dims = _head_dims(d, multipliers.size)
    uses_sgd = _uses_sgd(optimizer, multipliers.size)
    learning_rate = _per_model_rates(learning_rate, multipliers.shape)
    loss = _validate.choice(loss, "loss", LOSSES)
    length_rule = _validate.choice(length_rule, "length_rule", ("fixed", "logn"))
    learns = _per_model_flags(learn_gain, multipliers.size)
    query_noise = _validate.nonnegative_number(query_noise, "query_noise")
    seed = _validate.seed(seed)

    # The models run with the SGD ones first, so that each optimizer updates
    # one contiguous block (views, and Adam's arithmetic only on its own
    # models); the result is put back in the caller's order at the end.  Every
    # model's arithmetic is its own, but a BLAS product may round a row by
    # its position in the block: a model moved by the reordering can differ
    # in the last bits (1e-15 after 40 steps, a referee measured; the
    # training chapter's numbers and figures did not change).
    order = np.argsort(~uses_sgd, kind="stable")
    multipliers, dims, learning_rate = multipliers[order], dims[order], learning_rate[order]
    rng = np.random.default_rng(seed)
    scales = multipliers / np.sqrt(dims)
    params = _initial_params(replicas, dims, m, rng)
    batches = (retrieval_batch(replicas, batch, n, m, rng, query_noise) for _ in range(steps))
    losses = _optimize(params, scales, learning_rate, learns[order], int(uses_sgd.sum()), batches, loss)
    caller = np.argsort(order)  # back to the caller's order of the models
    return TrainingResult(
        scales=scales[caller],
        losses=np.ascontiguousarray(losses[:, caller]),
        w_query=np.ascontiguousarray(params[0][:, caller]),
        w_key=np.ascontiguousarray(params[1][:, caller]),
        gain=np.ascontiguousarray(params[2][:, caller]),
        train_length=n,
        loss=loss,
        length_rule=length_rule,
    )


def _checked_multipliers(multipliers):
    """The multipliers :math:`c` of :func:`train_attention`: one-dimensional, non-empty, ``> 0``."""
    multipliers = _validate.real_array(multipliers, "multipliers")
    if multipliers.ndim != 1 or multipliers.size == 0:
        raise ValueError(
            f"multipliers must be a non-empty one-dimensional array, got shape {multipliers.shape}"
        )
    if np.any(multipliers <= 0):
        raise ValueError(f"multipliers must be > 0, got {multipliers[multipliers <= 0][0]:g}")
    return multipliers


def _uses_sgd(optimizer, size):
    """One optimizer name or one per model -> a bool array, True where the model uses SGD."""
    if isinstance(optimizer, str):
        optimizer = [optimizer] * size
    if not isinstance(optimizer, list | tuple):
        raise TypeError(
            f"optimizer must be one of {OPTIMIZERS} or a sequence of them, got {type(optimizer).__name__}"
        )
    if len(optimizer) != size:
        raise ValueError(
            f"optimizer must be one of {OPTIMIZERS} or a sequence of them, one per multiplier "
            f"({size}), got {optimizer!r}"
        )
    return np.array([_validate.choice(name, "optimizer", OPTIMIZERS) == "sgd" for name in optimizer])


def _per_model_rates(learning_rate, shape):
    """One learning rate or one per model (``shape`` that of the multipliers), each ``> 0``."""
    learning_rate = _validate.real_array(learning_rate, "learning_rate")
    if learning_rate.ndim == 0:
        learning_rate = np.full(shape, float(learning_rate))
    if learning_rate.shape != shape:
        raise ValueError(
            f"learning_rate must be a single number or have the shape of multipliers "
            f"{shape}, got shape {learning_rate.shape}"
        )
    if np.any(~(learning_rate > 0)):
        raise ValueError(f"learning_rate must be > 0, got {learning_rate[~(learning_rate > 0)][0]:g}")
    return learning_rate


def _per_model_flags(learn_gain, size):
    """One ``learn_gain`` flag or one per model -> a bool array."""
    if isinstance(learn_gain, (bool, np.bool_)):
        learn_gain = [bool(learn_gain)] * size
    if not isinstance(learn_gain, list | tuple) or len(learn_gain) != size:
        raise TypeError(
            f"learn_gain must be a bool or a sequence of them, one per multiplier ({size}), "
            f"got {learn_gain!r}"
        )
    if not all(isinstance(flag, (bool, np.bool_)) for flag in learn_gain):
        raise TypeError(f"learn_gain must hold bools, got {learn_gain!r}")
    return np.array(learn_gain, dtype=bool)


def _initial_params(replicas, dims, m, rng):
    """``[w_query, w_key, gain]`` of every model, drawn once for the largest head.

    The projections have shape ``(replicas, models, max(dims), m)``; the rows
    a smaller head does not have are zero.  The gains start at 1.
    """
    n_models = dims.size
    w_query, w_key = init_projections(replicas, int(dims.max()), m, rng)
    w_query, w_key = np.repeat(w_query, n_models, axis=1), np.repeat(w_key, n_models, axis=1)
    if np.any(dims < dims.max()):  # the rows a smaller head does not have are zero
        rows = (np.arange(dims.max()) < dims[:, None])[None, :, :, None]
        w_query, w_key = w_query * rows, w_key * rows
    return [w_query, w_key, np.ones((replicas, n_models))]


def _optimize(params, scales, learning_rate, learns, n_sgd, batches, loss):
    """Train ``params`` in place, one step per batch; return the losses, ``(replicas, models, steps)``.

    The first ``n_sgd`` models take SGD steps, the others Adam steps
    (:func:`_adam_update`); a model's gain moves only where ``learns``.
    """
    n_models = scales.size
    sgd, adam = slice(0, n_sgd), slice(n_sgd, None)
    first = [np.zeros_like(x[:, adam]) for x in params]  # Adam's moments, its models only
    second = [np.zeros_like(x[:, adam]) for x in params]
    losses = []
    for step, (keys, queries, targets) in enumerate(batches):
        value, grads = _replica_by_replica(params, scales, keys, queries, targets, loss, learns.any())
        losses.append(value)
        grads[2] = np.where(learns, grads[2], 0.0)
        for k in range(3):
            per_model = (1, n_models) + (1,) * (grads[k].ndim - 2)
            step_size = learning_rate.reshape(per_model)
            if n_sgd:
                params[k][:, sgd] -= step_size[:, sgd] * grads[k][:, sgd]
            if n_sgd < n_models:
                _adam_update(
                    params[k][:, adam], grads[k][:, adam], first[k], second[k], step_size[:, adam], step
                )
    return np.stack(losses, axis=-1)


_BETA1, _BETA2, _EPSILON = 0.9, 0.999, 1e-8


def _adam_update(param, grad, first, second, step_size, step):
    """One Adam step (Kingma & Ba, 2015) at ``step`` (from 0), in place on ``param``, ``first``, ``second``.

    ``grad`` is overwritten (its square is formed in place, to spare a
    temporary).
    """
    first *= _BETA1
    first += (1 - _BETA1) * grad
    second *= _BETA2
    grad *= grad
    grad *= 1 - _BETA2
    second += grad
    m_hat = first / (1 - _BETA1 ** (step + 1))
    denominator = second / (1 - _BETA2 ** (step + 1))
    np.sqrt(denominator, out=denominator)
    denominator += _EPSILON
    m_hat *= step_size
    m_hat /= denominator
    param -= m_hat


MEASURES = ("loss", "accuracy", "entropy", "target_weight")


def evaluate_attention(result, n, multiplier=1.0, *, queries=256, seed=0, query_noise=0.0, measures=MEASURES):
    r"""Loss, retrieval accuracy and attention entropy of trained models at length ``n``.

    The logits are :math:`z = g\,\lambda\,\mu(n)\,\nu\,r` with the result's
    learned gain :math:`g`, scale :math:`\lambda`, its length rule
    :math:`\mu(n)` and an extra evaluation-time ``multiplier`` :math:`\nu`
    (an array broadcasting against ``(replicas, scales)``, e.g. a length rule
    applied only at evaluation).

    Parameters
    ----------
    result : TrainingResult
    n : int
        Keys per query, ``>= 2``.
    multiplier : float or array_like, optional
        :math:`\nu > 0`.
    queries : int, optional
        Evaluation queries per replica, ``>= 1``.
    seed : int, optional
        Seeds the evaluation data.
    measures : sequence of str, optional
        Which of the measures below to compute (all by default); the data
        drawn do not depend on it, so a measure is the same whether computed
        alone or with the others.

    Returns
    -------
    dict of numpy.ndarray
        Each of shape ``(replicas, scales)``: ``"loss"`` (the training loss),
        ``"accuracy"`` (the fraction of queries whose target holds more than
        half of the weight), ``"entropy"`` (mean Shannon entropy of the
        attention row, nats) and ``"target_weight"`` (mean :math:`p_t`).

    See Also
    --------
    train_attention : the models it evaluates.

    Examples
    --------
    >>> from attnscale import evaluate_attention, train_attention
    >>> result = train_attention(16, 8, [1.0], replicas=2, steps=3)
    >>> sorted(evaluate_attention(result, 64, queries=8))
    ['accuracy', 'entropy', 'loss', 'target_weight']
    """
    if not isinstance(result, TrainingResult):
        raise TypeError(f"result must be a TrainingResult, got {type(result).__name__}")
    n, queries = _validate.count(n, "n", 2), _validate.count(queries, "queries")
    multiplier = _validate.at_least(multiplier, "multiplier", np.finfo(float).tiny)
    query_noise = _validate.nonnegative_number(query_noise, "query_noise")
    seed = _validate.seed(seed)
    if isinstance(measures, str) or not all(isinstance(name, str) for name in measures):
        raise TypeError(f"measures must be a sequence of names from {MEASURES}, got {measures!r}")
    if not measures or any(name not in MEASURES for name in measures):
        raise ValueError(f"measures must be a non-empty sequence of names from {MEASURES}, got {measures!r}")
    replicas, n_scales = result.gain.shape
    multiplier = np.broadcast_to(multiplier, (replicas, n_scales))
    mu = np.log(n) / np.log(result.train_length) if result.length_rule == "logn" else 1.0
    rng = np.random.default_rng(seed)
    m = result.w_query.shape[-1]
    # Chunks of queries bound the memory of the keys (2**22 numbers); blocks
    # of models within a chunk bound that of the weights (2**24).  The keys
    # drawn depend on neither the number of models nor their blocks, so models
    # evaluated side by side see the same keys as each one alone.
    chunk = max(1, min(queries, _EVAL_KEYS // (n * m * replicas)))
    block = max(1, _EVAL_WEIGHTS // (n * chunk * replicas))
    gain = result.gain * multiplier
    totals = {key: np.zeros((replicas, n_scales)) for key in MEASURES if key in measures}
    done = 0
    while done < queries:
        size = min(chunk, queries - done)
        keys, q_in, targets = retrieval_batch(replicas, size, n, m, rng, query_noise)
        for start in range(0, n_scales, block):
            models = slice(start, start + block)
            value, _, (p, z, index) = _loss_and_gradients(
                result.w_query[:, models],
                result.w_key[:, models],
                result.scales[models],
                gain[:, models],
                mu,
                keys,
                q_in,
                targets,
                result.loss,
                gradients=False,
                need_logits="entropy" in measures,
            )
            if "loss" in totals:
                totals["loss"][:, models] += value * size
            if "entropy" in totals:
                entropy = _log_normalizer(p) - np.sum(p * z, axis=-1)
                totals["entropy"][:, models] += np.sum(entropy, axis=1)
            if "accuracy" in totals or "target_weight" in totals:
                p_t = np.take_along_axis(p, index, axis=-1)[..., 0]  # (R, B, S)
                if "accuracy" in totals:
                    totals["accuracy"][:, models] += np.sum(p_t > 0.5, axis=1)
                if "target_weight" in totals:
                    totals["target_weight"][:, models] += np.sum(p_t, axis=1)
        done += size
    return {key: np.asarray(value) / queries for key, value in totals.items()}


def train_at_best_rate(n, d, multipliers, rates, *, search_seed=0, seed=1, queries=256, **training):
    r"""Train each multiplier at its best learning rate of a grid, then again on fresh seeds.

    The search trains every pair (multiplier, rate) in one call of
    :func:`train_attention` (same data and initial weights within a seed),
    evaluates each on ``queries`` fresh queries at length ``n`` and keeps,
    for each multiplier, the rate with the lowest loss averaged over the
    seeds.  The best of several rates, picked on the same seeds, looks better
    than it is; so each multiplier is trained again at its chosen rate with
    the generator seeded by ``seed``, and that run is the one to report.

    Parameters
    ----------
    n, d, multipliers
        As for :func:`train_attention`.
    rates : array_like or sequence of array_like
        Finite, ``> 0``: one grid of learning rates for every multiplier
        (one-dimensional), or one grid per multiplier (a sequence of
        one-dimensional grids, which may differ in length), e.g. when the
        multipliers are trained with different optimizers.
    search_seed, seed : int, optional
        Seeds of the search runs and of the reported runs (distinct seeds
        give independent runs).
    queries : int, optional
        Evaluation queries per seed in the search, ``>= 1``.
    **training
        Passed to :func:`train_attention` (``replicas``, ``steps``,
        ``batch``, ``optimizer``, ``loss``, ...); not ``learning_rate``.
        An ``optimizer`` or ``learn_gain`` given per multiplier applies to
        every rate of that multiplier's grid.

    Returns
    -------
    TunedTraining
        With ``search_loss`` of shape ``(replicas, scales, longest grid)``,
        NaN past the end of a shorter grid.
    """
    if "learning_rate" in training:
        raise TypeError("train_at_best_rate searches the learning rate; give rates, not learning_rate")
    multipliers = _validate.real_array(multipliers, "multipliers")
    if multipliers.ndim != 1:  # train_attention names the problem; keep the grid well formed first
        raise ValueError(f"multipliers must be one-dimensional, got shape {multipliers.shape}")
    grids = _rate_grids(rates, multipliers.size)
    queries = _validate.count(queries, "queries")
    sizes = np.array([grid.size for grid in grids])
    owner = np.repeat(np.arange(multipliers.size), sizes)  # the multiplier of each search model
    search_training = dict(training)
    for key in ("optimizer", "learn_gain"):  # one per multiplier -> one per search model
        value = training.get(key)
        if isinstance(value, list | tuple) and len(value) == multipliers.size:
            search_training[key] = [value[k] for k in owner]
    search_d = [d[k] for k in owner] if isinstance(d, list | tuple | np.ndarray) else d
    search = train_attention(
        n,
        search_d,
        multipliers[owner],
        learning_rate=np.concatenate(grids),
        seed=search_seed,
        **search_training,
    )
    flat = evaluate_attention(search, n, queries=queries, measures=("loss",))["loss"]
    loss = np.full((flat.shape[0], multipliers.size, sizes.max()), np.nan)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for k, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        loss[:, k, :size] = flat[:, start : start + size]
    pick = np.array([np.argmin(loss[:, k, :size].mean(axis=0)) for k, size in enumerate(sizes)])
    chosen = np.array([grid[i] for grid, i in zip(grids, pick, strict=True)])
    fresh = train_attention(n, d, multipliers, learning_rate=chosen, seed=seed, **training)
    return TunedTraining(
        result=fresh,
        rates=chosen,
        at_edge=(pick == 0) | (pick == sizes - 1),
        search_loss=loss,
    )


def _rate_grids(rates, count):
    """One validated grid of learning rates for each of ``count`` multipliers."""
    if isinstance(rates, list | tuple) and rates and all(np.ndim(grid) == 1 for grid in rates):
        if len(rates) != count:
            raise ValueError(f"rates must hold one grid per multiplier ({count}), got {len(rates)}")
        grids = [_validate.real_array(grid, "rates") for grid in rates]
    else:
        grids = [_validate.real_array(rates, "rates")] * count
    for grid in grids:
        if grid.ndim != 1 or grid.size == 0:
            raise ValueError(f"rates must be a non-empty one-dimensional array, got shape {grid.shape}")
        if np.any(grid <= 0):
            raise ValueError(f"rates must be > 0, got {grid[grid <= 0][0]:g}")
    return grids


def steps_to_target(losses, target, window=10):
    """Steps until the training loss, averaged over ``window`` steps, first falls below ``target``.

    Parameters
    ----------
    losses : numpy.ndarray
        Shape ``(..., steps)``: a training curve per model.
    target : float
        The loss to reach.
    window : int, optional
        The moving average's length, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``: the first step whose window's mean is below
        ``target`` (counted to the window's end), ``inf`` where none is.
    """
    window = _validate.count(window, "window")
    kernel = np.ones(window) / window
    smooth = np.apply_along_axis(np.convolve, -1, losses, kernel, mode="valid")
    hit = smooth < target
    first = np.argmax(hit, axis=-1) + window
    return np.where(hit.any(axis=-1), first, np.inf)


def one_rate_sweep(lengths, extra_multipliers, grid, dims, learning_rates, *, seeds, steps, target):
    """The training chapter's sweep: every scale at one learning rate per optimizer.

    At each number of keys ``lengths[k]`` every (head dimension, optimizer,
    multiplier) is trained in one call of :func:`attnscale.train_attention` (seed
    ``100 + k``: the same batches and initial weights for all), with the
    read-out loss, then evaluated on 256 fresh queries.

    Parameters
    ----------
    lengths : sequence of int
        The numbers of keys.
    extra_multipliers : dict
        ``{n: sequence of float}``: the markers added to ``grid`` at ``n``.
    grid : array_like
        The multipliers tried at every length.
    dims : sequence of int
        Head dimensions.
    learning_rates : dict
        ``{optimizer: rate}``.
    seeds, steps : int
        Replicas and training steps.
    target : float
        The loss whose first crossing :func:`steps_to_target` counts.

    Returns
    -------
    dict
        ``{(optimizer, d, n): {"mult", "final", "steps"}}``: the sorted
        multipliers, the final losses ``(seeds, scales)`` and the steps to
        the target ``(seeds, scales)``.
    """
    runs = [(d, opt) for d in dims for opt in learning_rates]
    sweep = {}
    for k, n in enumerate(lengths):
        mult = np.sort(np.concatenate([grid, extra_multipliers[int(n)]]))
        res = train_attention(
            int(n),
            [d for d, _ in runs for _ in mult],
            np.tile(mult, len(runs)),
            replicas=seeds,
            steps=steps,
            batch=8,
            optimizer=[opt for _, opt in runs for _ in mult],
            learning_rate=[learning_rates[opt] for _, opt in runs for _ in mult],
            loss="readout",
            seed=100 + k,
        )
        final = evaluate_attention(res, int(n), 1.0, queries=256, measures=("loss",))["loss"]
        for j, (d, opt) in enumerate(runs):
            models = slice(j * mult.size, (j + 1) * mult.size)
            sweep[(opt, d, int(n))] = {
                "mult": mult,
                "final": final[:, models],
                "steps": steps_to_target(res.losses[:, models], target),
            }
    return sweep


def tuned_rate_sweep(multipliers, rates, *, lengths=TUNED_LENGTHS, d=TUNED_D, seeds=TUNED_SEEDS, steps=100):
    """The training chapter's tuned comparison: each scale at its best learning rate.

    At each number of keys ``lengths[k]``, every optimizer's multipliers go
    through :func:`attnscale.train_at_best_rate` side by side (search on seeds
    ``300 + k``, the reported runs on seeds ``350 + k``), read-out loss,
    evaluated on 256 fresh queries.

    Parameters
    ----------
    multipliers : dict
        ``{n: sequence of float}``: the multipliers tried at ``n``.
    rates : dict
        ``{optimizer: grid of learning rates}``.
    lengths, d, seeds, steps : optional
        Numbers of keys, head dimension, replicas and training steps.

    Returns
    -------
    dict
        ``{(optimizer, n): {"mult", "rate", "at_edge", "final"}}``, by
        optimizer then length.
    """
    tuned = {}
    for k, n in enumerate(lengths):
        mult = np.sort(multipliers[n])
        best = train_at_best_rate(
            n,
            d,
            np.tile(mult, len(rates)),
            [grid for grid in rates.values() for _ in mult],
            replicas=seeds,
            steps=steps,
            batch=8,
            optimizer=[opt for opt in rates for _ in mult],
            loss="readout",
            search_seed=300 + k,
            seed=350 + k,
        )
        final = evaluate_attention(best.result, n, queries=256, seed=1, measures=("loss",))
        for j, opt in enumerate(rates):
            models = slice(j * mult.size, (j + 1) * mult.size)
            tuned[(opt, n)] = {
                "mult": mult,
                "rate": best.rates[models],
                "at_edge": best.at_edge[models],
                "final": final["loss"][:, models],
            }
    return {(opt, n): tuned[(opt, n)] for opt in rates for n in lengths}
