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

Also the frequency extensions of rotary positions that practitioners use
instead of (or beside) a factor on the logits: the NTK-aware base
(:func:`ntk_rope_base`), position interpolation
(:func:`interpolation_frequency_factors`), YaRN's by-part interpolation and
its logit factor (:func:`yarn_frequency_factors`; its logit factor is
:func:`attnscale.yarn_mscale` squared)
and Qwen's dynamic NTK stretch (:func:`qwen_ntk_alpha`); and the rotary
regime of a model, the share of its frequency pairs that complete a period
within the training length (:func:`rotary_pairs_within`,
:func:`matched_rope_base`) or the span of its slowest pair
(:func:`longest_wavelength_rope_base`), which lets a small model be trained in the
regime of a large one.  :func:`~attnscale.support.factor_fit.fit_length_factor` finds a model's best
constant factor at a length from its per-window losses, with an interval.
"""

from __future__ import annotations

import math

import numpy as np

from ..support._validate import count as _count
from ..support._validate import positive_number as _positive
from .calculator import recommend_scale

__all__ = [
    "RULE_NAMES",
    "interpolation_frequency_factors",
    "longest_wavelength_rope_base",
    "matched_rope_base",
    "ntk_rope_base",
    "qwen_ntk_alpha",
    "rotary_pairs_within",
    "rotary_wavelengths",
    "rule_factors",
    "yarn_frequency_factors",
]

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


def _rotary_checks(base, head_dim):
    if isinstance(base, bool) or not (isinstance(base, (int, float)) and base > 1 and math.isfinite(base)):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    head_dim = _count(head_dim, "head_dim", 4)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    return float(base), head_dim


def rotary_wavelengths(base: float, head_dim: int) -> np.ndarray:
    r"""The wavelength, in tokens, of each rotary frequency pair.

    .. math:: \lambda_i = 2\pi\,\theta^{2i/d_h}, \qquad i = 0, \dots, d_h/2 - 1,

    the period of pair :math:`i`, which turns by :math:`\omega_i =
    \theta^{-2i/d_h}` radians per token (Su et al., 2021, RoFormer).

    Examples
    --------
    >>> np.round(rotary_wavelengths(10000.0, 8), 1).tolist()
    [6.3, 62.8, 628.3, 6283.2]
    """
    base, head_dim = _rotary_checks(base, head_dim)
    return 2.0 * math.pi * base ** (2.0 * np.arange(head_dim // 2) / head_dim)


def rotary_pairs_within(base: float, head_dim: int, length: int) -> int:
    r"""How many rotary frequency pairs complete a period within ``length`` tokens.

    The count of :math:`i` with :math:`\lambda_i \le T` (:func:`rotary_wavelengths`).
    A pair with a longer wavelength never turns through a whole period in
    training, so a longer window shows it angles it has not seen; the share
    of such pairs is the rotary regime of a model.

    Parameters
    ----------
    base : float
        RoPE's base :math:`\theta > 1`.
    head_dim : int
        :math:`d_h`, even, at least 4.
    length : int
        :math:`T`, tokens.

    Examples
    --------
    A model trained at 4,096 tokens with base :math:`10^4` and :math:`d_h =
    128`, and the book's retrieval models (64 tokens, :math:`d_h = 32`):

    >>> rotary_pairs_within(10000.0, 128, 4096), rotary_pairs_within(10000.0, 32, 64)
    (46, 5)
    """
    length = _count(length, "length")
    return int(np.count_nonzero(rotary_wavelengths(base, head_dim) <= length))


def matched_rope_base(length: int, reference_base: float = 10000.0, reference_length: int = 4096) -> float:
    r"""The RoPE base that puts a model trained at ``length`` in the rotary regime of a larger one.

    The log-wavelengths of the pairs are evenly spaced from :math:`\log 2\pi`
    to about :math:`\log 2\pi\theta`, so the share of pairs whose period fits
    in :math:`L` tokens is

    .. math:: x(\theta, L) = \frac{\log(L/2\pi)}{\log\theta}

    (up to one pair, whatever :math:`d_h`).  The base with the reference
    model's share is :math:`\theta' = (L/2\pi)^{1/x_\text{ref}}`, with
    :math:`x_\text{ref} = x(\theta_\text{ref}, L_\text{ref})`.  It matches
    the share of pairs that see new angles past :math:`L`, not the longest
    wavelength: that one is far shorter in tokens than a large model's
    (:func:`longest_wavelength_rope_base` matches it instead).  At
    :math:`L = 64` this base leaves no pair slow enough to match content
    across the window, and the book's recall models did not learn under it.

    Parameters
    ----------
    length : int
        The small model's training length :math:`L`, more than :math:`2\pi`.
    reference_base : float, optional
        The reference model's base (Llama 2 and many 4k models: :math:`10^4`;
        Llama 3: :math:`5\cdot 10^5`).
    reference_length : int, optional
        Its training length, more than :math:`2\pi`.

    Examples
    --------
    The book's models at :math:`L = 64` in a 4k, base-:math:`10^4` model's
    regime: 12 of 16 pairs complete a period within :math:`L`, against 46
    of 64 in the large model (plain base :math:`10^4`: 5 of 16).

    >>> theta = matched_rope_base(64)
    >>> round(theta, 2), rotary_pairs_within(theta, 32, 64)
    (27.09, 12)
    """
    length, reference_length = _count(length, "length", 7), _count(reference_length, "reference_length", 7)
    reference_base, _ = _rotary_checks(reference_base, 4)
    share = math.log(reference_length / (2 * math.pi)) / math.log(reference_base)
    if not 0 < share < 1:
        raise ValueError(
            f"the reference (base {reference_base:g}, length {reference_length}) must have some but "
            f"not all of its pairs within its length; its share is {share:.3g}"
        )
    return float((length / (2 * math.pi)) ** (1.0 / share))


def longest_wavelength_rope_base(
    length: int,
    head_dim: int,
    reference_base: float = 10000.0,
    reference_length: int = 4096,
    reference_head_dim: int = 128,
) -> float:
    r"""The RoPE base whose slowest pair spans as many training lengths as a larger model's does.

    The slowest pair's wavelength is :math:`\lambda_\text{max} = 2\pi\,
    \theta^{(d_h-2)/d_h}` (:func:`rotary_wavelengths`); the base with
    :math:`\lambda_\text{max}/L` equal to the reference model's is

    .. math:: \theta' = \Big(\frac{L}{2\pi}\,\frac{\lambda_\text{max,ref}}{L_\text{ref}}\Big)^{d_h/(d_h-2)}.

    A pair that turns less than once within :math:`L` can carry content
    between distant tokens with little rotation; this base keeps such a
    pair as slow, relative to :math:`L`, as in the reference.  It cannot
    also keep the share of pairs within :math:`L` (:func:`matched_rope_base`):
    with one base and a short :math:`L` the two ask for different bases.

    Parameters
    ----------
    length : int
        The small model's training length :math:`L`.
    head_dim : int
        Its :math:`d_h`, even, at least 4.
    reference_base, reference_length, reference_head_dim : optional
        The reference model (default: 4,096 tokens, base :math:`10^4`,
        :math:`d_h = 128`, whose slowest pair spans 13.3 training lengths).

    Examples
    --------
    >>> theta = longest_wavelength_rope_base(64, 32)
    >>> round(theta, 1), rotary_pairs_within(theta, 32, 64)
    (187.7, 8)
    """
    length = _count(length, "length")
    _, head_dim = _rotary_checks(2.0, head_dim)
    reference_length = _count(reference_length, "reference_length")
    longest = rotary_wavelengths(reference_base, reference_head_dim)[-1] / reference_length
    theta = (length / (2 * math.pi) * longest) ** (head_dim / (head_dim - 2))
    if not theta > 1:
        raise ValueError(f"length {length} is too short for a base above 1 in this regime")
    return float(theta)


def _stretch(stretch) -> float:
    stretch = _positive(stretch, "stretch")
    if stretch < 1:
        raise ValueError(f"stretch must be >= 1 (the window over the training length), got {stretch:g}")
    return stretch


def interpolation_frequency_factors(head_dim: int, stretch: float) -> np.ndarray:
    r"""Position interpolation: every rotary frequency divided by the stretch :math:`s = T/L`.

    .. math:: \omega_i' = \omega_i / s

    so that :math:`T = sL` tokens span the angles that :math:`L` spanned in
    training (Chen et al., 2023).  Returns the factor on each of the
    :math:`d_h/2` frequencies.

    Examples
    --------
    >>> interpolation_frequency_factors(8, 4.0).tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    head_dim = _count(head_dim, "head_dim", 4)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    return np.full(head_dim // 2, 1.0 / _stretch(stretch))


def yarn_frequency_factors(
    base: float,
    head_dim: int,
    train_length: int,
    stretch: float,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
) -> np.ndarray:
    r"""YaRN's by-part interpolation: the factor on each rotary frequency.

    A pair that turns :math:`r_i = L/\lambda_i` times within the training
    length keeps its frequency when it turns often (:math:`r_i >
    \beta_\text{fast}`), is interpolated by :math:`1/s` when it turns
    less than :math:`\beta_\text{slow}` times, and is blended linearly in
    the pair index between the two (Peng et al., 2023, YaRN, section 3.2;
    its release finds the index bounds
    :math:`i(r) = d_h \log(L/2\pi r) / (2\log\theta)`, rounded outwards):

    .. math:: \omega_i' = \omega_i\Big(\frac{1 - \gamma_i}{s} + \gamma_i\Big),
       \qquad \gamma_i = 1 - \operatorname{clip}\Big(
       \frac{i - i_\text{lo}}{i_\text{hi} - i_\text{lo}}, 0, 1\Big),

    with :math:`i_\text{lo} = \lfloor i(\beta_\text{fast})\rfloor` and
    :math:`i_\text{hi} = \lceil i(\beta_\text{slow})\rceil`, clipped as the
    release clips them (:math:`i_\text{lo} \ge 0`, :math:`i_\text{hi} \le d_h - 1`).
    The published :math:`\beta` (32 and 1) were chosen for :math:`L` of
    thousands of tokens; at :math:`L = 64` no pair turns 32 times, so every
    pair but the fastest (the ramp's low end is clipped at 0) is
    interpolated at least a little.

    Examples
    --------
    >>> np.round(yarn_frequency_factors(10000.0, 16, 4096, 8.0), 3).tolist()
    [1.0, 1.0, 1.0, 0.781, 0.562, 0.344, 0.125, 0.125]
    """
    base, head_dim = _rotary_checks(base, head_dim)
    train_length, stretch = _count(train_length, "train_length"), _stretch(stretch)
    beta_fast, beta_slow = _positive(beta_fast, "beta_fast"), _positive(beta_slow, "beta_slow")
    if beta_slow >= beta_fast:
        raise ValueError(f"beta_slow ({beta_slow:g}) must be below beta_fast ({beta_fast:g})")
    half = head_dim // 2

    def index(rotations):
        return head_dim * math.log(train_length / (2 * math.pi * rotations)) / (2 * math.log(base))

    # the release's bounds: the low one at least 0, the high one at most d_h - 1 (not d_h/2 - 1, so a
    # ramp can run past the last pair and leave it partly extrapolated)
    low = max(math.floor(index(beta_fast)), 0)
    high = min(math.ceil(index(beta_slow)), head_dim - 1)
    if low == high:
        high += 0.001  # as the release: a step instead of a ramp
    ramp = np.clip((np.arange(half) - low) / (high - low), 0.0, 1.0)
    kept = 1.0 - ramp
    return (1.0 - kept) / stretch + kept


def qwen_ntk_alpha(length: int, train_length: int) -> int:
    r"""Qwen's dynamic NTK stretch of the base for a window of ``length`` tokens.

    .. math:: \alpha = \max\big(2^{\lceil \log_2(T/L) + 1\rceil} - 1,\ 1\big),

    and the base becomes :math:`\theta\,\alpha^{d_h/(d_h-2)}` (Qwen's
    released modeling code, Bai et al., 2023).  It is a power of two less
    one, so it overshoots the NTK-aware stretch :math:`T/L`: 15 at
    :math:`T = 8L`.

    Examples
    --------
    >>> [qwen_ntk_alpha(t, 64) for t in (64, 65, 128, 256, 512, 1024)]
    [1, 3, 3, 7, 15, 31]
    """
    length, train_length = _count(length, "length"), _count(train_length, "train_length")
    return max(2 ** math.ceil(math.log2(length / train_length) + 1) - 1, 1)


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
    >>> from attnscale.practice.length_rules import rule_factors
    >>> rules, calculator = rule_factors(64, [[3.0]], [[1.0]], 64, 256, grid_points=4)
    >>> qwen, sqrt_rule = rules["qwen_logn"](256), rules["sqrt_rule"](256)
    >>> qwen.shape, calculator["grid"].tolist()
    ((1, 1, 256), [65.0, 103.0, 162.0, 256.0])
    >>> [np.round(f[0, 0, [63, 255]].astype(float), 4).tolist() for f in (qwen, sqrt_rule)]
    [[1.0, 1.3333], [1.0, 1.9423]]
    """
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
