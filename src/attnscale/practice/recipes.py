r"""Published scale rules side by side: one small function per rule.

Chapter *Recipes*.  Two kinds of function live here.

*Absolute scales* return the factor :math:`\lambda` that multiplies the raw
query-key product in :math:`\operatorname{softmax}(\lambda\, q\cdot k)`:
``standard_scale``, ``logn_beyond_training_scale``,
``yarn_scale``, ``scalable_softmax_scale``.

*Length factors* return the dimensionless number by which a released model
multiplies its own logits at a given length (1 = unchanged):
``yarn_mscale`` (squared, because it scales both queries and keys),
``longrope_attention_factor`` (squared, likewise),
``llama4_attention_scale`` (queries only), ``infoscale_factor``,
``adaptive_temperature``.  Each docstring names the file or equation of
the release it was checked against.

``head_scale_from_entropy`` and ``entropy_matched_scale`` solve the exact
expected entropy for a scale.  The calculator that applies every rule to
one setting, ``recommend_scale``, is ``attnscale.practice.calculator``.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.optimize import brentq

from ..support import _validate
from ..theory.exact import expected_entropy

__all__ = [
    "ADAPTIVE_TEMPERATURE_POLY",
    "adaptive_temperature",
    "critical_scale",
    "entropy_matched_scale",
    "head_scale_from_entropy",
    "infoscale_factor",
    "llama4_attention_scale",
    "logn_beyond_training_scale",
    "longrope_attention_factor",
    "qknorm_initial_scale",
    "scalable_softmax_scale",
    "standard_scale",
    "yarn_mscale",
    "yarn_scale",
]

#: Coefficients (highest power first) of the degree-4 fit of the inverse
#: temperature against the Shannon entropy in "softmax is not enough"
#: (Veličković et al., 2024), as printed in the paper's JAX listing.
ADAPTIVE_TEMPERATURE_POLY = (-0.037, 0.481, -2.3, 4.917, -1.791)


def standard_scale(d):
    r"""The standard scale :math:`1/\sqrt d` of scaled dot-product attention.

    Parameters
    ----------
    d : float or array_like
        Head dimension, ``>= 1``.

    See Also
    --------
    logn_beyond_training_scale, yarn_scale, scalable_softmax_scale : length rules built on it.

    References
    ----------
    Vaswani et al. (2017), "Attention is all you need", eq. (1).

    Examples
    --------
    >>> from attnscale import standard_scale
    >>> float(standard_scale(64))
    0.125
    >>> standard_scale([16, 64, 256]).tolist()
    [0.25, 0.125, 0.0625]
    """
    return 1.0 / np.sqrt(_validate.at_least(d, "d", 1.0, what=" (the head dimension)"))


def logn_beyond_training_scale(n, d, train_length):
    r"""Qwen's LogN-Scaling: a query that sees :math:`n` keys is multiplied by :math:`\max(1, \log_L n)`.

    .. math:: \lambda = \frac{\max(1, \log_L n)}{\sqrt d}

    Where: on the queries, per query position (``logn_list[i-1] =
    log(i, seq_length) if i > seq_length else 1``), at inference only
    (``if self.use_logn_attn and not self.training``), in every layer
    (Qwen-7B ``modeling_qwen.py``).

    Parameters
    ----------
    n : float or array_like
        Number of keys the query sees (its 1-based position), ``>= 2``.
    d : float or array_like
        Head dimension, ``>= 1``.
    train_length : float or array_like
        Training length :math:`L` (Qwen's ``seq_length``), ``>= 2``.

    See Also
    --------
    entropy_invariant_scale : the same :math:`\log_L n` at every length, below :math:`L` too.
    scalable_softmax_scale : a learned :math:`s \log n`.

    Examples
    --------
    Trained at :math:`L = 4096` and run at 32768 keys, the factor on
    :math:`1/\sqrt d` is :math:`\log 32768/\log 4096 = 1.25`; a query
    within the training length keeps 1:

    >>> import numpy as np
    >>> from attnscale import logn_beyond_training_scale
    >>> scale = logn_beyond_training_scale([2048, 32768], 128, 4096)
    >>> np.round(scale * np.sqrt(128), 4).tolist()
    [1.0, 1.25]
    """
    n = _validate.key_count(n)
    train_length = _validate.at_least(train_length, "train_length", 2.0)
    factor = np.where(n > train_length, np.log(n) / np.log(train_length), 1.0)
    return factor * standard_scale(d)


def yarn_mscale(stretch):
    r"""YaRN's attention factor :math:`0.1 \ln s + 1` (1 for :math:`s \le 1`).

    The factor multiplies RoPE's cosine *and* sine tables, so both queries
    and keys: the logits are multiplied by its square.  Checked against
    ``get_mscale`` / ``_yarn_get_mscale`` in the YaRN repository
    (``scaled_rope/LlamaDynamicYaRNScaledRotaryEmbedding.py``) and the
    ``attention_factor`` default of ``_compute_yarn_parameters`` in Hugging
    Face ``transformers/modeling_rope_utils.py`` (which applies it to the
    cos/sin tables as ``attention_scaling``).  That default is the plain
    rule, and this function is it.  With :math:`m(s; c) = 0.1\,c \ln s + 1`,
    a configuration that sets both ``mscale`` (:math:`c_1`) and
    ``mscale_all_dim`` (:math:`c_2`), as the DeepSeek family does, puts
    :math:`m(s; c_1)/m(s; c_2)` on the cos/sin tables instead, and
    DeepSeek's attention multiplies its softmax scale by
    :math:`m(s; c_2)^2`; the released DeepSeek configurations set
    :math:`c_1 = c_2`, so the tables are left unscaled and the whole factor
    sits in the softmax scale.  When the configuration has
    ``original_max_position_embeddings``, Hugging Face takes
    :math:`s` = ``max_position_embeddings / original_max_position_embeddings``
    rather than the configured ``factor``.

    Parameters
    ----------
    stretch : float or array_like
        The extension factor :math:`s` (``factor`` in a static configuration,
        ``seq_len / original_max_position_embeddings`` in the dynamic one), ``> 0``.

    See Also
    --------
    yarn_scale : its square on :math:`q\cdot k/\sqrt d`, static or dynamic.
    longrope_attention_factor : LongRoPE's factor on the same tables.

    Examples
    --------
    A fourfold extension puts :math:`0.1 \ln 4 + 1` on the cos/sin tables
    and its square on the logits; no extension (:math:`s \le 1`) puts 1:

    >>> import numpy as np
    >>> from attnscale import yarn_mscale
    >>> np.round(yarn_mscale([0.5, 1, 4, 32]), 4).tolist()
    [1.0, 1.0, 1.1386, 1.3466]
    >>> round(float(yarn_mscale(4)) ** 2, 4)
    1.2965
    """
    s = _validate.real_array(stretch, "stretch")
    if s.size == 0 or np.any(s <= 0):
        raise ValueError("stretch must be > 0 (a ratio of lengths)")
    return np.where(s > 1.0, 0.1 * np.log(np.maximum(s, 1.0)) + 1.0, 1.0)


def yarn_scale(n, d, train_length, factor=None):
    r"""YaRN's scale on :math:`q\cdot k`, dynamic (``factor=None``) or static.

    .. math:: \lambda = \frac{\mathrm{mscale}(s)^2}{\sqrt d},\qquad
              \mathrm{mscale}(s) = 0.1 \ln s + 1 \ (s > 1),

    with :math:`s = n/L` in the *dynamic* variant (recomputed when the
    sequence outgrows the cache, so it is 1 up to :math:`n = L`) and
    :math:`s` = the configured ``factor`` in the *static* one, which applies
    the same constant at every length, inside the training range too.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Head dimension, ``>= 1``.
    train_length : float or array_like
        Original training length :math:`L`, ``>= 2``.
    factor : float or array_like, optional
        The configured ``rope_scaling["factor"]`` (static YaRN), ``> 0``.

    See Also
    --------
    yarn_mscale : the factor on the cos/sin tables, and where it was checked.

    Examples
    --------
    Trained at 4096 keys, head dimension 128: the dynamic variant keeps
    :math:`1/\sqrt d` up to :math:`L` and reaches :math:`(0.1 \ln 4 + 1)^2`
    at :math:`4L`; the static one with ``factor=4`` applies that at every
    length:

    >>> import numpy as np
    >>> from attnscale import yarn_scale
    >>> np.round(yarn_scale([4096, 16384], 128, 4096) * np.sqrt(128), 4).tolist()
    [1.0, 1.2965]
    >>> np.round(yarn_scale([1024, 16384], 128, 4096, factor=4) * np.sqrt(128), 4).tolist()
    [1.2965, 1.2965]
    """
    n = _validate.key_count(n)
    train_length = _validate.at_least(train_length, "train_length", 2.0)
    if factor is None:
        stretch = np.maximum(n / train_length, 1.0)
    else:
        stretch = _validate.real_array(factor, "factor") * np.ones_like(n)
        if np.any(stretch <= 0):
            raise ValueError("factor must be > 0")
    stretch = np.maximum(stretch, 1.0)  # get_mscale(s <= 1) = 1
    return (0.1 * np.log(stretch) + 1.0) ** 2 * standard_scale(d)


def longrope_attention_factor(factor, train_length):
    r"""LongRoPE / Phi-3's attention factor :math:`\sqrt{1 + \ln s / \ln L}` (1 for :math:`s \le 1`).

    Multiplies the cos/sin tables (queries and keys), so the logits are
    multiplied by :math:`1 + \ln s/\ln L = \log_L(sL)`, a constant set by the
    *configured* window :math:`sL`, at every length.  Checked against
    ``_compute_longrope_parameters`` in Hugging Face
    ``transformers/modeling_rope_utils.py``, where :math:`s` =
    ``max_position_embeddings / original_max_position_embeddings`` and
    :math:`L` = ``original_max_position_embeddings``.

    Parameters
    ----------
    factor : float or array_like
        The extension :math:`s`, ``> 0``.
    train_length : float or array_like
        :math:`L`, ``>= 2``.

    See Also
    --------
    yarn_mscale : YaRN's factor on the same tables.

    Examples
    --------
    A model trained at 4096 keys, configured for 131072 (:math:`s = 32`):
    :math:`\sqrt{1 + \ln 32/\ln 4096} = \sqrt{17/12}` on the tables, 17/12
    on the logits:

    >>> from attnscale import longrope_attention_factor
    >>> factor = float(longrope_attention_factor(32, 4096))
    >>> round(factor, 4), round(factor**2, 4)
    (1.1902, 1.4167)
    """
    s = _validate.real_array(factor, "factor")
    if s.size == 0 or np.any(s <= 0):
        raise ValueError("factor must be > 0 (a ratio of lengths)")
    length = _validate.at_least(train_length, "train_length", 2.0)
    return np.where(s > 1.0, np.sqrt(1.0 + np.log(np.maximum(s, 1.0)) / np.log(length)), 1.0)


def llama4_attention_scale(n, floor_scale=8192.0, attn_scale=0.1):
    r"""Llama 4's attention temperature tuning: the query multiplier at the position that sees :math:`n` keys.

    .. math:: 1 + a \,\ln\!\bigl(1 + \lfloor n / f \rfloor\bigr),
              \qquad f = \texttt{floor\_scale} = 8192,\ a = \texttt{attn\_scale} = 0.1,

    with :math:`n` = ``cache_position + 1``.  Applied to the queries (so the
    logits change by the same factor) of the NoPE layers only (``if
    self.attn_temperature_tuning and not self.use_rope``; by default every
    fourth layer).  Meta's announcement calls it inference-time temperature
    scaling; the Hugging Face code applies it whenever the configuration
    enables it, with no training switch.  Checked against
    ``Llama4TextAttention.forward`` in Hugging Face
    ``transformers/models/llama4/modeling_llama4.py`` and the defaults in
    ``configuration_llama4.py``.

    Parameters
    ----------
    n : float or array_like
        Keys seen by the query, ``>= 1``.
    floor_scale, attn_scale : float, optional
        The configuration values, ``floor_scale >= 1``, ``attn_scale >= 0``.

    Examples
    --------
    1 below 8192 keys, :math:`1 + 0.1 \ln 2` from 8192, and
    :math:`1 + 0.1 \ln 13` at 100000 (:math:`\lfloor 100000/8192 \rfloor = 12`):

    >>> import numpy as np
    >>> from attnscale import llama4_attention_scale
    >>> np.round(llama4_attention_scale([8191, 8192, 100_000]), 4).tolist()
    [1.0, 1.0693, 1.2565]
    """
    n = _validate.at_least(n, "n", 1.0)
    f = _validate.at_least(floor_scale, "floor_scale", 1.0)
    a = _validate.scale(attn_scale, "attn_scale")
    return 1.0 + a * np.log1p(np.floor(n / f))


def infoscale_factor(n, d, train_length=512):
    r"""InfoScale (Li et al., 2025): the factor on the logits :math:`q\cdot k/\sqrt d` for :math:`n` keys.

    .. math:: \sqrt{\frac{1 - n^{-2/d}}{1 - L^{-2/d}}}
              \;\xrightarrow{\,d \to \infty\,}\; \sqrt{\frac{\ln n}{\ln L}},

    a :math:`\sqrt{\log n}` rule for large :math:`d`.  Checked against the
    ``InfoScale`` branch of ``GatedAttentionUnit.forward`` in the authors'
    code (``HT-NEKO/Information-Entropy-Invariance``,
    ``model/my_gau_alpha_eval/layer.py``), where :math:`n` is the number of
    unmasked keys, :math:`L` the training length 512 and :math:`d` the head
    size.  Training-free, at inference.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Head dimension, ``>= 1``.
    train_length : float or array_like, optional
        :math:`L`, ``>= 2``.

    Examples
    --------
    Four times the default :math:`L = 512` keys, for head dimension 64 and
    in the large-:math:`d` limit :math:`\sqrt{\ln 2048/\ln 512} = \sqrt{11/9}`:

    >>> from attnscale import infoscale_factor
    >>> round(float(infoscale_factor(2048, 64)), 4)
    1.0941
    >>> round(float(infoscale_factor(2048, 1e9)), 4)
    1.1055
    """
    n = _validate.key_count(n)
    d = _validate.at_least(d, "d", 1.0, what=" (the head dimension)")
    length = _validate.at_least(train_length, "train_length", 2.0)
    # 1 - x^{-2/d} = -expm1(-2 ln x / d): no cancellation for large d
    return np.sqrt(np.expm1(-2.0 * np.log(n) / d) / np.expm1(-2.0 * np.log(length) / d))


def scalable_softmax_scale(n, d, s):
    r"""Scalable-Softmax: logits multiplied by :math:`s \log n`.

    .. math:: \lambda = \frac{s \log n}{\sqrt d},\qquad
              \mathrm{SSMax}(z)_i = \frac{n^{s z_i}}{\sum_j n^{s z_j}}

    :math:`s` is learned (one per head), in training and inference; with
    :math:`s = 1/\log L` the rule coincides with the entropy-invariant
    :math:`\log_L n/\sqrt d`.  Nakanishi (2025), eq. (SSMax).

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Head dimension, ``>= 1``.
    s : float or array_like
        The scaling parameter, ``>= 0``.

    See Also
    --------
    entropy_invariant_scale : the rule it coincides with at :math:`s = 1/\log L`.

    Examples
    --------
    With :math:`s = 1/\log 4096`, the factor on :math:`1/\sqrt d` at 32768
    keys is :math:`\log_{4096} 32768 = 1.25`:

    >>> import numpy as np
    >>> from attnscale import scalable_softmax_scale
    >>> scale = scalable_softmax_scale(32768, 64, s=1 / np.log(4096))
    >>> round(float(scale * np.sqrt(64)), 4)
    1.25
    """
    n = _validate.key_count(n)
    s = _validate.scale(s, "s")
    return s * np.log(n) * standard_scale(d)


def qknorm_initial_scale(train_length):
    r"""Initial value of QKNorm's learned scale :math:`g`, :math:`g_0 = \log_2(L^2 - L)`.

    QKNorm multiplies the cosine of :math:`\ell_2`-normalized queries and keys
    by :math:`g`, learned, initialized from :math:`L` = the 97.5th percentile
    of the training sequence lengths: the log of the number of off-diagonal
    entries of :math:`QK^\top`.  Checked against ``ScaleUp`` and its
    initialization ``np.log2(seq_len_threshold**2 - seq_len_threshold)`` in
    ``CyndxAI/QKNorm`` (``QKNorm/layers.py``), Henry et al. (2020).

    Parameters
    ----------
    train_length : float or array_like
        :math:`L`, ``>= 2``, at most ``1e150`` (beyond, :math:`L^2` overflows).

    Examples
    --------
    :math:`\log_2(1024 \cdot 1023)`, just under 20:

    >>> from attnscale import qknorm_initial_scale
    >>> round(float(qknorm_initial_scale(1024)), 4)
    19.9986
    """
    length = _validate.at_least(train_length, "train_length", 2.0)
    if np.any(length > 1e150):
        raise ValueError("train_length must be <= 1e150")
    return np.log2(length) + np.log2(length - 1.0)


def critical_scale(n, rho=0.0):
    r"""The critical scale :math:`\beta_n = \log n/(1-\rho)` of Chen et al. (ICLR 2026).

    In the model of "Critical attention scaling in long-context
    transformers", unit-norm tokens with pairwise inner products
    :math:`\rho` pass through one attention layer with logits
    :math:`\beta_n \langle x_i, x_j\rangle`; with :math:`\beta_n = \gamma \log n`
    the tokens collapse for :math:`\gamma < \gamma_c` and attention reduces
    to the identity for :math:`\gamma > \gamma_c`.  The factor multiplies the
    inner product of normalized tokens (a cosine).  The threshold is the
    one the paper reports (its Theorem 2.1 and the curve
    :math:`\gamma = 1/(1-\rho)` of its phase diagram, approached as the
    dimension grows); the finite-:math:`d` corrections are not reproduced.
    The theorem assumes :math:`0 < \rho < 1`; ``rho=0``
    (:math:`\gamma_c = 1`) is the continuous extension of its formula, not
    a case it states (exactly orthogonal tokens would also need
    :math:`d \ge n`).  The theorem's statement was read in a secondary
    summary of the paper, not in the paper itself.

    Parameters
    ----------
    n : float or array_like
        Number of tokens, ``>= 2``.
    rho : float or array_like, optional
        Pairwise inner product of the tokens, in ``[0, 1)``.

    Examples
    --------
    :math:`\log n` for orthogonal tokens, twice that at :math:`\rho = 1/2`:

    >>> from attnscale import critical_scale
    >>> round(float(critical_scale(1024)), 4)
    6.9315
    >>> round(float(critical_scale(1024, rho=0.5)), 4)
    13.8629
    """
    n = _validate.key_count(n)
    rho = _validate.real_array(rho, "rho")
    if rho.size == 0 or np.any((rho < 0) | (rho >= 1)):
        raise ValueError("rho must be in [0, 1)")
    return np.log(n) / (1.0 - rho)


def adaptive_temperature(entropy):
    r"""The adaptive inverse temperature :math:`\beta(H)` of Veličković et al. (2024).

    .. math:: \beta = \begin{cases} \max\bigl(1, P(H)\bigr) & H > 0.5\\ 1 & H \le 0.5\end{cases}

    with :math:`P` the degree-4 polynomial ``ADAPTIVE_TEMPERATURE_POLY``
    and :math:`H` the Shannon entropy (nats) of the row at the model's own
    logits; the row is then recomputed as :math:`\operatorname{softmax}(\beta z)`.
    At inference, per row, never lowering the scale.  Checked against the
    ``adaptive_temperature_softmax`` listing of the paper (the JAX code
    reproduced in its appendix and in several reimplementations with the
    same coefficients).

    Parameters
    ----------
    entropy : float or array_like
        Shannon entropy in nats, ``>= 0``.

    See Also
    --------
    softmax_entropy : the entropy of a row, which it takes as input.

    Examples
    --------
    1 up to 0.5 nats; above, the polynomial (at 1 nat, the sum of its
    coefficients, 1.27):

    >>> import numpy as np
    >>> from attnscale import adaptive_temperature
    >>> np.round(adaptive_temperature([0.3, 1.0, 2.0, 3.0]), 4).tolist()
    [1.0, 1.27, 2.099, 2.25]
    """
    h = _validate.scale(entropy, "entropy")
    poly = np.polyval(np.asarray(ADAPTIVE_TEMPERATURE_POLY), h)
    return np.where(h > 0.5, np.maximum(poly, 1.0), 1.0)


def _law(scores, d):
    """Keyword arguments of ``attnscale.expected_entropy`` and the factor from alpha to its scale."""
    if scores == "dot" or scores == "gaussian":
        return {"scores": "gaussian"}, 1.0, 1e3
    if scores == "cosine":
        if d is None:
            raise ValueError("d (the head dimension) is required with scores='cosine'")
        d = float(_validate.dimension(d))
        return {"scores": "cosine", "d": d}, float(np.sqrt(d)), 1e4
    raise ValueError(f"scores must be 'gaussian', 'dot' or 'cosine', got {scores!r}")


def _expected_entropy(alpha, n, scores="gaussian", d=None):
    """E[H] for the unit-score scale alpha (for cosines, alpha sqrt(d) on the cosine)."""
    kwargs, to_law, _ = _law(scores, d)
    return float(expected_entropy(float(alpha) * to_law, float(n), **kwargs))


#: Why no scale reaches an entropy (str.format; the calculator and its page print it).
_OUT_OF_REACH = (
    "no scale up to {top:.4g} brings the entropy down to {target:.4g} nats "
    "(a head this focused is outside the exact expectation's range)"
)


class _OutOfReach(ValueError):
    """No scale the exact expectation covers reaches the entropy; ``values`` fill ``_OUT_OF_REACH``."""

    def __init__(self, top, target):
        self.values = {"top": top, "target": target}
        super().__init__(_OUT_OF_REACH.format(**self.values))


def _solve_entropy(target, n, scores="gaussian", d=None, guess=None):
    """The unit-score scale alpha >= 0 with E[H](alpha, n) = target, for 0 < target < log n."""
    return _solve_entropy_gap(np.log(n) - target, n, scores, d, guess)


def _entropy_gap_at(alpha, n, scores="gaussian", d=None):
    """log n - E[H](alpha, n); below alpha = 1e-2, its small-scale expansion (``_small_gap``).

    There the quadrature's E[H], biased by up to about 4e-12 nats (at n near
    4e8), would leave few digits of a gap of order alpha^2.
    """
    if alpha < _EXPANSION_BELOW:
        a2, a4 = _small_gap_terms(n, scores, d)
        return a2 * alpha**2 + a4 * alpha**4
    return float(np.log(n) - _expected_entropy(alpha, n, scores, d))


def _small_gap_terms(n, scores="gaussian", d=None):
    """(c2, c4) with log n - E[H] = c2 alpha^2 + c4 alpha^4 + O(alpha^6), for unit-variance scores.

    The coefficient of alpha^j is (j - 1)/j! times the expected j-th sample
    cumulant of the row's n scores: half the variance at order alpha^2, an
    eighth of the fourth cumulant at order alpha^4 (no odd terms: both laws
    are symmetric).  Over n i.i.d. scores with fourth moment mu4 (3 for the
    normal; 3d/(d + 2) for sqrt(d) times a cosine),
    c2 = (n - 1)/(2n) and c4 = (n - 1)[(n^2 - 6n + 6) mu4 - 3(n^2 - 4n + 6)]/(8 n^3).
    Its relative error is of order alpha^4: at most about 1e-8 at
    alpha = 1e-2 (a referee's check against mpmath at n = 2 and 3), and
    within 1e-7 of the quadrature there for n = 2 to 4e8 (both laws,
    d = 2.5 to 1e4).
    """
    law = _law(scores, d)[0]
    mu4 = 3.0 * law["d"] / (law["d"] + 2.0) if law["scores"] == "cosine" else 3.0
    c2 = (n - 1.0) / (2.0 * n)
    c4 = (n - 1.0) * ((n * n - 6.0 * n + 6.0) * mu4 - 3.0 * (n * n - 4.0 * n + 6.0)) / (8.0 * n**3)
    return c2, c4


def _small_scale(gap, n, scores="gaussian", d=None):
    """The alpha with c2 alpha^2 + c4 alpha^4 = gap (``_small_gap_terms``), the root near sqrt(gap / c2)."""
    c2, c4 = _small_gap_terms(n, scores, d)
    discriminant = c2 * c2 + 4.0 * c4 * gap
    if not discriminant > 0:  # a gap far past the expansion's reach (c4 < 0): no small scale
        return np.inf
    return float(np.sqrt(2.0 * gap / (c2 + np.sqrt(discriminant))))


def _matched_gap(alpha_l, length, n, scores="gaussian", d=None):
    """log n - E[H] at n keys for the entropy of the head alpha_l at L = length: log(n/L) + its gap at L."""
    return float(np.log(n / length)) + _entropy_gap_at(alpha_l, length, scores, d)


def _solve_entropy_gap(gap, n, scores="gaussian", d=None, guess=None):
    """The unit-score scale alpha >= 0 with log n - E[H](alpha, n) = gap, for 0 < gap < log n.

    The unknown is x = log alpha, the function the logit log(H / (log n - H)).
    That logit is close to linear in x at both ends: log n - H ~ alpha^2 at
    small alpha, and H ~ 1/alpha once the row freezes.  From ``guess``
    (default: the small-scale expansion's scale, ``_small_scale``), secant
    steps bracket the root and Brent's method refines it; no scale is
    evaluated twice.  Where the logit is flat (E[H] rounds to log n), the
    steps double.  The root is as accurate as E[H] allows: about 1e-11
    relative at alpha of order one, and up to about 4e-8 just above
    alpha = 1e-2, where E[H]'s bias (up to 4e-12 nats) meets a gap of 5e-5.
    Below alpha = 1e-2 the expansion's scale is the answer.
    """
    _, to_law, cap = _law(scores, d)
    top_alpha = cap / to_law  # the largest scale the exact expectation accepts
    top, log_n = np.log(top_alpha), np.log(n)
    target = log_n - gap
    want = np.log(target) - np.log(gap)
    tiny = np.finfo(float).tiny  # keeps the logit finite where H rounds to 0 or to log n

    def scale(x):  # never above the cap (exp(log(cap)) may round above it)
        return top_alpha if x >= top else min(float(np.exp(x)), top_alpha)

    @functools.cache
    def logit_gap(x):
        h = _expected_entropy(scale(x), n, scores, d)
        return float(np.log(max(h, tiny)) - np.log(max(log_n - h, tiny)) - want)

    small = _small_scale(gap, n, scores, d)
    if small < _EXPANSION_BELOW:
        return small
    if guess is None or not 0 < guess < np.inf:
        guess = float(np.sqrt(2.0 * gap * n / (n - 1.0)))  # the expansion's first term
    x0 = min(float(np.log(max(guess, _EXPANSION_BELOW))), top)
    g0 = logit_gap(x0)
    x1 = min(x0 + (_FIRST_STEP if g0 > 0 else -_FIRST_STEP), top)
    g1 = logit_gap(x1)
    for k in range(1, 64):
        if g1 == 0.0 or np.sign(g1) != np.sign(g0):
            break
        if x1 == top and g1 > 0:
            raise _OutOfReach(top_alpha, target)
        # E[H] falls with alpha: toward larger x while the gap is positive, by
        # the secant's step (at least the first step, at most 2^k), or by 2^k
        # where the secant says nothing (a flat or noisy logit)
        direction = 1.0 if g1 > 0 else -1.0
        secant = direction * (-g1 * (x1 - x0) / (g1 - g0)) if g1 != g0 else np.inf
        step = direction * min(max(secant if secant > 0 else np.inf, _FIRST_STEP), 2.0**k)
        x0, g0 = x1, g1
        x1 = min(max(x1 + step, _SMALLEST), top)
        g1 = logit_gap(x1)
        if x1 == _SMALLEST and g1 < 0:  # below the target even at the floor: no root
            break
    if g1 == 0.0:
        return scale(x1)
    if np.sign(g1) == np.sign(g0):
        raise ValueError(f"no scale brings E[H] at n = {n:g} to {target:.17g} nats (no bracket found)")
    lo, hi = sorted((x0, x1))
    return scale(brentq(logit_gap, lo, hi, xtol=1e-12, rtol=4.0 * np.finfo(float).eps))


#: The entropy solver's first step, and its smallest secant step, in log alpha.
_FIRST_STEP = 0.05
#: Below this scale the entropy's gap and the solver's answer are the small-scale expansion's.
_EXPANSION_BELOW = 1e-2
#: The smallest log alpha the entropy solver steps to.
_SMALLEST = float(np.log(1e-6))


def head_scale_from_entropy(entropy, train_length, scores="gaussian", d=None):
    r"""The scale :math:`\alpha_L` of a head whose mean attention entropy at :math:`L` keys is ``entropy``.

    Solves :math:`\mathbb E[H](\alpha, L) = H_{\text{measured}}` with the
    book's exact expectation for :math:`L` i.i.d. scores
    (``attnscale.expected_entropy``): standard normal scores, or cosines
    of random directions in dimension ``d`` (then :math:`\alpha` is the
    factor on the unit-variance score :math:`\sqrt d\cos`).  The expected
    entropy falls strictly from :math:`\log L` at :math:`\alpha = 0`.

    Parameters
    ----------
    entropy : float
        Mean attention entropy in nats at the training length, in :math:`(0, \log L)`.
    train_length : float
        :math:`L`, ``>= 2``.
    scores : {"gaussian", "cosine"}, optional
        The law of the scores.
    d : float, optional
        Head dimension, required with ``scores="cosine"``.

    Raises
    ------
    ValueError
        If ``entropy`` is not strictly between 0 and :math:`\log L` (no
        head of that law has it).

    See Also
    --------
    entropy_matched_scale : the scale that keeps that entropy at another length.
    expected_entropy : the expectation it inverts.
    recommend_scale : the calculator, which calls it for ``head_entropy``.

    Examples
    --------
    A head with mean entropy 5.5 nats at 4096 keys (a uniform row has
    :math:`\log 4096 \approx 8.32`); the scale found gives that entropy back:

    >>> from attnscale import expected_entropy, head_scale_from_entropy
    >>> alpha = head_scale_from_entropy(5.5, 4096)
    >>> round(alpha, 4)
    2.436
    >>> round(float(expected_entropy(alpha, 4096)), 6)
    5.5
    """
    h = _scalar(entropy, "entropy")
    length = _scalar(_validate.at_least(train_length, "train_length", 2.0), "train_length")
    if not 0.0 < h < np.log(length):
        raise ValueError(
            f"entropy must be between 0 and log(train_length) = {np.log(length):.4g} nats "
            f"(a uniform row over {length:g} keys), got {h:g}"
        )
    return _solve_entropy(h, length, scores, d)


def entropy_matched_scale(n, train_length, alpha_train=1.0, scores="gaussian", d=None):
    r"""The scale at :math:`n` keys that keeps the *exact* expected entropy of the head at :math:`L`.

    Solves :math:`\mathbb E[H](\alpha_n, n) = \mathbb E[H](\alpha_L, L)`
    (``attnscale.expected_entropy``), the exact counterpart of the
    mean-field :math:`\sqrt{\alpha_L^2 + 2\log(n/L)}`
    (``attnscale.entropy_matching_scale``), valid in every regime.  Below
    :math:`\alpha = 10^{-2}` the gap :math:`\log n - \mathbb E[H]` comes from
    its small-scale expansion to order :math:`\alpha^4` (there the
    quadrature would leave few of its digits); at :math:`n = L` the answer
    is :math:`\alpha_L` to about :math:`4\times10^{-8}`.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    train_length : float
        :math:`L`, ``>= 2``.
    alpha_train : float, optional
        The head's scale at :math:`L` on the unit-variance score, ``> 0``.
    scores : {"gaussian", "cosine"}, optional
        The law of the scores (as in ``head_scale_from_entropy``).
    d : float, optional
        Head dimension, required with ``scores="cosine"``.

    Returns
    -------
    numpy.ndarray or float
        :math:`\alpha_n`, positive, on the unit-variance score.

    Raises
    ------
    ValueError
        Where the training entropy is out of reach at ``n`` (it exceeds
        :math:`\log n`, the entropy of a uniform row: short sequences of a
        diffuse head); no scale exists there.

    See Also
    --------
    head_scale_from_entropy : :math:`\alpha_L` from a measured entropy.
    entropy_matching_scale : the mean-field approximation.
    recommend_scale : the calculator, which reports it with the other rules.

    Examples
    --------
    A head at the standard scale (:math:`\alpha_L = 1`) trained at 4096
    keys, run at 32768; the mean field's :math:`\sqrt{1 + 2\ln 8}` is close:

    >>> from attnscale import entropy_matched_scale, entropy_matching_scale
    >>> round(float(entropy_matched_scale(32768, 4096, alpha_train=1.0)), 4)
    2.2793
    >>> round(float(entropy_matching_scale(32768, 1.0, 4096)), 4)
    2.2713
    """
    n = _validate.key_count(n)
    length = _scalar(_validate.at_least(train_length, "train_length", 2.0), "train_length")
    a_l = _scalar(alpha_train, "alpha_train")
    if not a_l > 0:
        raise ValueError(f"alpha_train must be > 0, got {a_l:g}")
    out = np.empty(n.shape)
    for index, m in np.ndenumerate(n):
        gap = _matched_gap(a_l, length, m, scores, d)
        if gap <= 0:
            target = np.log(length) - _entropy_gap_at(a_l, length, scores, d)
            raise ValueError(
                f"no scale keeps the entropy at n = {m:g}: the training entropy {target:.4g} nats "
                f"exceeds log n = {np.log(m):.4g}, the entropy of a uniform row"
            )
        out[index] = _solve_entropy_gap(gap, m, scores, d)
    return out[()] if out.ndim == 0 else out


def _scalar(value, name):
    array = _validate.real_array(value, name)
    if array.ndim != 0:
        raise ValueError(f"{name} must be a single number, got shape {array.shape}")
    return float(array)
