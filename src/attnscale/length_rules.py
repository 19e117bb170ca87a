r"""Length rules applied to a trained model at evaluation: one factor per layer, head and position.

Chapters *A language model* and *Retrieval past the training length*.  A
model trained at length :math:`L` with the standard scale is run on
windows of :math:`T > L` tokens; a rule multiplies the logits of every
query that sees :math:`n > L` keys by a factor :math:`\lambda_h(n)`
(queries that see at most :math:`L` keys keep factor 1):

``qwen_logn``
    :math:`\log n/\log L` (Qwen's logn attention, Bai et al., 2023).
``sqrt_rule``
    :math:`\sqrt{a_h^2 + 2\log(n/L)}/a_h`, with :math:`a_h` the head's
    measured spread of :math:`q\cdot k/\sqrt{d_h}` at :math:`L` (the book's
    :math:`\sqrt{\log n}` rule, chapter *Entropy invariance*).
``calculator``
    the exact entropy match of :func:`attnscale.recommend_scale`, fed the
    head's measured entropy at :math:`L`, divided by the head's trained
    scale :math:`\alpha_L` (a factor on the trained logits), interpolated
    in :math:`\log n` between ``grid_points`` lengths.

Also the frequency extension of rotary positions that the retrieval
chapter holds fixed across arms (:func:`ntk_rope_base`).
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import count as _count

__all__ = ["RULE_NAMES", "ntk_rope_base", "rule_factors"]

#: The rules :func:`rule_factors` returns, in the order the chapters show them.
RULE_NAMES = ("qwen_logn", "sqrt_rule", "calculator")


def ntk_rope_base(base: float, head_dim: int, train_length: int, length: int) -> float:
    r"""RoPE's base stretched for a window of ``length`` tokens ("NTK-aware" scaling).

    .. math:: \theta' = \theta\, s^{d_h/(d_h - 2)}, \qquad s = \max(1, T/L),

    so that the slowest rotary frequency turns by the same angle over
    :math:`T` tokens as it did over :math:`L` and the fastest is unchanged
    (bloc97, 2023; Peng et al., 2023, YaRN, section 3.1).

    Parameters
    ----------
    base : float
        The trained base :math:`\theta > 1`.
    head_dim : int
        :math:`d_h`, even, at least 4.
    train_length, length : int
        :math:`L` and the evaluation window :math:`T`.

    Examples
    --------
    >>> round(ntk_rope_base(10000.0, 32, 64, 256), 1)
    43873.0
    """
    if not (isinstance(base, (int, float)) and base > 1):
        raise ValueError(f"base must be a number > 1, got {base!r}")
    head_dim = _count(head_dim, "head_dim", 4)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    train_length, length = _count(train_length, "train_length"), _count(length, "length")
    stretch = max(1.0, length / train_length)
    return float(base) * stretch ** (head_dim / (head_dim - 2))


def rule_factors(head_dim, entropy_l, spread_l, train_length, max_length, grid_points=24):
    """The evaluation-time rules of a trained model, each a function of the window length.

    Parameters
    ----------
    head_dim : int
        :math:`d_h`.
    entropy_l, spread_l : numpy.ndarray
        ``(n_layers, n_heads)``: each head's mean attention entropy (nats)
        and its spread of :math:`q\\cdot k/\\sqrt{d_h}` over the keys, for
        queries that see :math:`L` keys.
    train_length, max_length : int
        :math:`L` and the longest window the rules will be asked for.
    grid_points : int, optional
        Lengths in :math:`(L, \\text{max\\_length}]` at which the calculator
        is asked (log-spaced; the factor is interpolated in :math:`\\log n`).

    Returns
    -------
    rules : dict
        ``name -> f(T)``, where ``f(T)`` is a float32 array
        ``(n_layers, n_heads, T)`` of factors for a window of ``T`` tokens.
    calculator : dict
        ``grid``, ``factors`` ``(n_layers, n_heads, len(grid))`` and
        ``notes`` (heads or lengths the calculator could not serve; those
        keep factor 1).

    Examples
    --------
    One head (entropy 3 nats, spread 1) trained at :math:`L = 64`, run on
    256 tokens: at the last position Qwen's :math:`\\log 256/\\log 64 = 4/3`
    and the square-root rule's :math:`\\sqrt{1 + 2\\log 4}`; positions up to
    :math:`L` keep 1:

    >>> import numpy as np
    >>> from attnscale.length_rules import rule_factors
    >>> rules, calculator = rule_factors(64, [[3.0]], [[1.0]], 64, 256, grid_points=4)
    >>> qwen, sqrt_rule = rules["qwen_logn"](256), rules["sqrt_rule"](256)
    >>> qwen.shape, calculator["grid"].tolist()
    ((1, 1, 256), [65.0, 103.0, 162.0, 256.0])
    >>> [np.round(f[0, 0, [63, 255]].astype(float), 4).tolist() for f in (qwen, sqrt_rule)]
    [[1.0, 1.3333], [1.0, 1.9423]]
    """
    from . import recommend_scale  # the public calculator (imported late: it imports this package)

    entropy_l, spread_l = np.asarray(entropy_l, dtype=float), np.asarray(spread_l, dtype=float)
    layers, heads = entropy_l.shape
    grid = np.unique(np.round(np.geomspace(train_length + 1, max_length, grid_points)))
    calculator = np.ones((layers, heads, grid.size))
    notes = []
    for layer in range(layers):
        for head in range(heads):
            try:
                recs = [
                    recommend_scale(
                        head_dim,
                        float(n),
                        train_length=train_length,
                        head_entropy=float(entropy_l[layer, head]),
                    )
                    for n in grid
                ]
            except ValueError as error:  # a head outside the calculator's domain keeps the standard scale
                notes.append(f"layer {layer} head {head}: {error}")
                continue
            for k, rec in enumerate(recs):
                match = [e for e in rec.entries if e.criterion.startswith("exact entropy match")]
                if match:
                    calculator[layer, head, k] = match[0].unit_scale / rec.alpha_train
                else:
                    notes.append(f"layer {layer} head {head}, n = {grid[k]:g}: no exact entropy match")

    def beyond(values_of_n, length):
        n = np.arange(1, length + 1, dtype=float)
        return np.where(n > train_length, values_of_n(n), 1.0).astype(np.float32)

    def qwen(length):
        f = beyond(lambda n: np.log(n) / math.log(train_length), length)
        return np.broadcast_to(f, (layers, heads, length))

    def sqrt_rule(length):
        a = spread_l[..., None]
        return beyond(
            lambda n: np.sqrt(a**2 + 2 * np.log(np.maximum(n, train_length) / train_length)) / a, length
        )

    def calculator_rule(length):
        log_grid = np.log(grid)

        def interpolate(n):
            return np.stack(
                [
                    [np.interp(np.log(n), log_grid, calculator[i, j]) for j in range(heads)]
                    for i in range(layers)
                ]
            )

        return beyond(interpolate, length)

    rules = {"qwen_logn": qwen, "sqrt_rule": sqrt_rule, "calculator": calculator_rule}
    return rules, {"grid": grid, "factors": calculator, "notes": notes}
