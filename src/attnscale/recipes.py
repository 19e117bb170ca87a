r"""Published scale rules side by side, and a calculator that starts from a measured head.

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

``recommend_scale`` (also ``python -m attnscale scale``) applies them
all to one setting, starting from the head's scale at the training length:
measured (its mean attention entropy, or its scale) or, without a
measurement, the stated default :math:`\alpha_L = 1`.  Its rows are the
table ``RULES``: one entry per rule, each a small function of the setting
that returns a scale or a note, run on its own so that no rule can stop
the others.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from . import _validate
from .cosine import cosine_alpha_star
from .decoder import best_causal_scale
from .exact import expected_entropy
from .gaussian import gaussian_alpha_star

__all__ = [
    "ADAPTIVE_TEMPERATURE_POLY",
    "MAX_KEYS",
    "RULES",
    "Recommendation",
    "ScaleEntry",
    "adaptive_temperature",
    "critical_scale",
    "entropy_matched_scale",
    "head_scale_from_entropy",
    "infoscale_factor",
    "llama4_attention_scale",
    "logn_beyond_training_scale",
    "longrope_attention_factor",
    "qknorm_initial_scale",
    "recommend_scale",
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

    References
    ----------
    Vaswani et al. (2017), "Attention is all you need", eq. (1).
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

    ``yarn_mscale`` gives the factor on the cos/sin tables and names where it was checked.
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


class _OutOfReach(ValueError):
    """No scale the exact expectation covers reaches the entropy asked for."""


def _solve_entropy(target, n, scores="gaussian", d=None):
    """The unit-score scale alpha >= 0 with E[H](alpha, n) = target, for 0 < target < log n."""
    _, to_law, cap = _law(scores, d)
    top = cap / to_law  # the largest scale the exact expectation accepts

    def gap(a):
        return _expected_entropy(a, n, scores, d) - target

    hi = 1.0
    while gap(hi) > 0:
        if hi >= top:
            raise _OutOfReach(
                f"no scale up to {top:.4g} brings the entropy down to {target:.4g} nats "
                "(a head this focused is outside the exact expectation's range)"
            )
        hi = min(2.0 * hi, top)
    return brentq(gap, 0.0, hi, xtol=1e-12, rtol=1e-12)


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
    (``attnscale.entropy_matching_scale``), valid in every regime.

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
    """
    n = _validate.key_count(n)
    length = _scalar(_validate.at_least(train_length, "train_length", 2.0), "train_length")
    a_l = _scalar(alpha_train, "alpha_train")
    if not a_l > 0:
        raise ValueError(f"alpha_train must be > 0, got {a_l:g}")
    target = _expected_entropy(a_l, length, scores, d)
    out = np.empty(n.shape)
    for index, m in np.ndenumerate(n):
        if target >= np.log(m):
            raise ValueError(
                f"no scale keeps the entropy at n = {m:g}: the training entropy {target:.4g} nats "
                f"exceeds log n = {np.log(m):.4g}, the entropy of a uniform row"
            )
        out[index] = _solve_entropy(target, m, scores, d)
    return out[()] if out.ndim == 0 else out


@dataclass(frozen=True)
class ScaleEntry:
    """One criterion's scale.

    Attributes
    ----------
    criterion : str
        The rule, e.g. ``"gradient (Gaussian mean field)"``.
    scale : float
        Factor on the raw scores (:math:`q\\cdot k` or the cosine).
    unit_scale : float
        The same factor on the unit-variance score (1 is the standard scale).
    source : str
        Where the rule comes from.
    """

    criterion: str
    scale: float
    unit_scale: float
    source: str


@dataclass(frozen=True)
class Recommendation:
    """What every criterion recommends for one setting.

    Attributes
    ----------
    d : float
        Head dimension.
    n : float
        Number of keys (for ``causal``, the longest sequence).
    scores : str
        ``"dot"`` or ``"cosine"``.
    causal : bool
        Whether one fixed scale must serve every position ``2 .. n``.
    train_length : float or None
        Training length, for the length-dependent rules.
    alpha_train : float
        The head's scale at the training length on the unit-variance score
        (measured, or the default 1).
    entries : tuple of ScaleEntry
        One per criterion that applies and gives a number.
    notes : tuple of str
        The assumptions made, and every rule that does not apply, in words.
    """

    d: float
    n: float
    scores: str
    causal: bool
    train_length: float | None
    alpha_train: float
    entries: tuple[ScaleEntry, ...]
    notes: tuple[str, ...]

    def table(self) -> str:
        """The recommendation as a plain-text table, in lines of at most 88 columns."""
        unit = "q.k" if self.scores == "dot" else "cos(q, k)"
        title = (
            f"scale for softmax(scale * {unit}), d = {self.d:g}, n = {self.n:g}"
            + (", causal" if self.causal else "")
            + (f", L = {self.train_length:g}" if self.train_length else "")
        )
        width = max((len(e.criterion) for e in self.entries), default=len("criterion"))
        lines = textwrap.wrap(title, 88, subsequent_indent="  ")
        lines.append(f"  {'criterion':<{width}}  {'scale':>9}  {'x std':>7}  source")
        for e in self.entries:
            unit = f"{e.unit_scale:7.3f}" if e.unit_scale < 1e3 else f"{e.unit_scale:7.1e}"
            lines.append(f"  {e.criterion:<{width}}  {e.scale:9.4g}  {unit}  {e.source}")
        for note in self.notes:
            lines += textwrap.wrap(note, 88, initial_indent="  note: ", subsequent_indent="        ")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _scalar(value, name):
    array = _validate.real_array(value, name)
    if array.ndim != 0:
        raise ValueError(f"{name} must be a single number, got shape {array.shape}")
    return float(array)


def _optional_positive(value, name):
    if value is None:
        return None
    number = _scalar(value, name)
    if not number > 0:
        raise ValueError(f"{name} must be > 0, got {number:g}")
    return number


#: The calculator's domain for the number of keys and the training length.
MAX_KEYS = 1e15
#: The exact expectations (``attnscale.expected_entropy``) cover up to this many keys.
_EXACT_MAX_KEYS = 1e9
#: A cosine gradient scale this many times the standard one gets a note.
_LARGE_COSINE_RATIO = 30.0


@dataclass(frozen=True)
class _Setting:
    """One validated setting of the calculator, as every rule sees it."""

    d: float
    n: float
    scores: str  # "dot" or "cosine"
    causal: bool
    train_length: float | None
    alpha_l: float

    @property
    def law(self) -> str:
        return "gaussian" if self.scores == "dot" else "cosine"

    def raw(self, unit_scale: float) -> float:
        """The unit-score factor on the raw score: alpha/sqrt(d) on q.k, alpha sqrt(d) on the cosine."""
        root = np.sqrt(self.d)
        return unit_scale / root if self.scores == "dot" else unit_scale * root


@dataclass(frozen=True)
class _Outcome:
    """What one rule says: a scale on the unit-variance score, or none, and its notes."""

    unit_scale: float | None = None
    notes: tuple[str, ...] = ()


def _scale(unit_scale, *notes) -> _Outcome:
    return _Outcome(float(unit_scale), tuple(notes))


def _note(text) -> _Outcome:
    return _Outcome(None, (text,))


@dataclass(frozen=True)
class _Rule:
    """One row of the calculator: a name, a source, when it applies, and the rule itself.

    ``criterion`` and ``source`` are strings or functions of the setting; ``applies`` says
    whether the rule belongs to the setting at all (a rule that belongs but
    cannot give a number returns a note instead); ``compute`` maps the
    setting to an ``_Outcome``.
    """

    criterion: str | Callable[[_Setting], str]
    source: str | Callable[[_Setting], str]
    compute: Callable[[_Setting], _Outcome]
    applies: Callable[[_Setting], bool] = lambda s: True

    def name(self, setting: _Setting) -> str:
        return self.criterion if isinstance(self.criterion, str) else self.criterion(setting)

    def source_of(self, setting: _Setting) -> str:
        return self.source if isinstance(self.source, str) else self.source(setting)


def _with_length(s: _Setting) -> bool:
    return s.train_length is not None


# --- the rules, one small function each ---------------------------------------------------------


def _standard(s):
    return _scale(1.0)


def _gradient_name(s):
    if s.scores == "dot":
        return "gradient, causal (Gaussian mean field)" if s.causal else "gradient (Gaussian mean field)"
    return "gradient (cosine mean field)" + (", causal" if s.causal else "")


def _gradient_source(s):
    return "book ch. decoders" if s.causal and s.scores == "dot" else "Su 2023 (9812)"


def _gradient(s):
    d = None if s.scores == "dot" else s.d
    notes = []
    if s.causal:
        alpha, n_ref, share = best_causal_scale(round(s.n), d=d)
        notes.append(
            f"causal: the best fixed scale is alpha*(n = {n_ref:.4g}), the optimum for that many keys; "
            f"it keeps {share:.1%} of each position's best mean-field gradient on average over "
            f"positions 2 .. {round(s.n):g}"
        )
    else:
        alpha = float(gaussian_alpha_star(s.n) if d is None else cosine_alpha_star(s.n, d))
    if s.scores == "dot":
        notes.append(
            "gradient: the scale maximizes the source's mean-field objective; the book finds the exact "
            "expected gradient rising toward a limit with no maximum on the range it computes "
            "(a numerical finding, proved only for n = 2)"
        )
        return _scale(alpha, *notes)
    unit = alpha / np.sqrt(s.d)
    if unit >= _LARGE_COSINE_RATIO:
        notes.append(
            f"gradient (cosine): at d = {s.d:g} the mean-field optimum is {unit:.3g} times the standard "
            "scale; at fixed d it grows like n^(2/(d-1)) (ch. cosine-scores), so in so few dimensions it "
            "is far above any scale used in practice; check it on the model before using it"
        )
    return _scale(unit, *notes)


def _entropy_invariant_512(s):
    return _scale(np.log(s.n) / np.log(512.0), "give train_length (--train-length) to add the length rules")


def _entropy_invariant(s):
    return _scale(s.alpha_l * np.log(s.n) / np.log(s.train_length))


def _qwen(s):
    return _scale(s.alpha_l * max(1.0, np.log(s.n) / np.log(s.train_length)))


def _yarn(s):
    factor = float(yarn_mscale(max(s.n / s.train_length, 1.0))) ** 2
    return _scale(
        s.alpha_l * factor,
        "YaRN dynamic row: the YaRN repository's dynamic rotary embedding with finetuned=False "
        "(factor 1 up to L, then mscale(n/L)^2); finetuned=True starts at mscale(s)^2 for its "
        "fine-tuned window sL, as static YaRN does",
        "static YaRN and LongRoPE apply one constant, set by the configured window, at every length; "
        "the rows above assume the window is n",
    )


def _longrope(s):
    factor = float(longrope_attention_factor(max(s.n / s.train_length, 1.0), s.train_length)) ** 2
    return _scale(s.alpha_l * factor)


def _infoscale(s):
    return _scale(s.alpha_l * float(infoscale_factor(s.n, s.d, s.train_length)))


def _llama4(s):
    return _scale(
        s.alpha_l * float(llama4_attention_scale(s.n)),
        "Llama 4 row: alpha_L times f(n) = 1 + 0.1 ln(1 + floor(n/8192)), its multiplier on the "
        "queries of its NoPE layers at n keys; it ignores L and is never below 1",
    )


def _sqrt_rule(s):
    if s.scores != "dot":
        return _note("the sqrt rule is a Gaussian mean-field rule; for cosines only the exact match is given")
    mean_field = s.alpha_l**2 + 2.0 * np.log(s.n / s.train_length)
    if not mean_field > 0:
        return _note(
            "sqrt rule does not apply: the head's mean-field entropy at L exceeds log n, "
            "so no scale at n matches it"
        )
    notes = []
    if s.alpha_l**2 >= 2.0 * np.log(s.train_length):
        notes.append(
            "sqrt rule: alpha_L is at or past freezing (sqrt(2 ln L)); its mean-field "
            "entropy no longer describes the head"
        )
    return _scale(np.sqrt(mean_field), *notes)


def _qknorm(s):
    return _scale(float(qknorm_initial_scale(s.train_length)) / np.sqrt(s.d))


def _exact_match_name(s):
    return f"exact entropy match ({s.law})"


def _exact_match(s):
    name = _exact_match_name(s)
    if max(s.n, s.train_length) > _EXACT_MAX_KEYS:
        return _note(f"{name}: not computed, the exact expectation covers n and L up to {_EXACT_MAX_KEYS:g}")
    _, to_law, cap = _law(s.law, s.d)
    if s.alpha_l * to_law > cap:
        return _note(
            f"{name}: not computed, alpha_L = {s.alpha_l:.4g} is beyond the exact expectation's range "
            f"(up to {cap / to_law:.4g} on the unit score for {s.law} scores)"
        )
    target = _expected_entropy(s.alpha_l, s.train_length, s.law, s.d)
    if target >= np.log(s.n):
        return _note(
            f"exact entropy match does not apply: the head's entropy at L ({target:.3g} nats) "
            f"exceeds log n = {np.log(s.n):.3g}, the entropy of a uniform row over n keys"
        )
    try:
        return _scale(_solve_entropy(target, s.n, s.law, s.d))
    except _OutOfReach as error:
        return _note(f"{name}: not computed, {error}")


#: The calculator's rows, in the order they print.  A new rule is one entry.
RULES: tuple[_Rule, ...] = (
    _Rule("standard 1/sqrt(d)", "Vaswani et al. 2017", _standard),
    _Rule(_gradient_name, _gradient_source, _gradient),
    _Rule(
        "entropy-invariant log_512(n)",
        "Su 2021 (8823), base 512",
        _entropy_invariant_512,
        lambda s: s.train_length is None,
    ),
    _Rule(
        lambda s: f"entropy-invariant a_L*log_{s.train_length:g}(n)",
        "Su 2021 (8823)",
        _entropy_invariant,
        _with_length,
    ),
    _Rule("Qwen logn (queries, n > L only)", "Bai et al. 2023", _qwen, _with_length),
    _Rule("YaRN dynamic, mscale(n/L)^2", "Peng et al. 2023", _yarn, _with_length),
    _Rule("LongRoPE, window n: 1+ln(n/L)/ln L", "Ding et al. 2024", _longrope, _with_length),
    _Rule("InfoScale", "Li et al. 2025", _infoscale, _with_length),
    _Rule("Llama 4 (NoPE layers), f(n)", "Meta 2025", _llama4, _with_length),
    _Rule("sqrt rule sqrt(a_L^2 + 2 ln(n/L))", "ch. entropy-invariance", _sqrt_rule, _with_length),
    _Rule(
        "QK-norm initial g = log2(L^2 - L)",
        "Henry et al. 2020",
        _qknorm,
        lambda s: s.train_length is not None and s.scores == "cosine",
    ),
    _Rule(_exact_match_name, "ch. recipes", _exact_match, _with_length),
)


def _run(rule: _Rule, setting: _Setting):
    """One rule's entry (or None) and notes; whatever goes wrong inside it stays a note."""
    try:
        name, source = rule.name(setting), rule.source_of(setting)
    except Exception as error:  # a rule never sinks the table
        return None, (f"a rule could not be named here ({type(error).__name__}: {error})",)
    try:
        outcome = rule.compute(setting)
        if outcome.unit_scale is None:
            return None, outcome.notes
        unit = float(outcome.unit_scale)
        raw = float(setting.raw(unit))
    except Exception as error:  # a rule never sinks the table
        return None, (f"{name}: not computed here ({type(error).__name__}: {error})",)
    if not (np.isfinite(unit) and unit > 0 and np.isfinite(raw) and raw > 0):  # never a degenerate scale
        return None, (*outcome.notes, f"{name}: gives no usable scale here ({unit!r}); left out")
    return ScaleEntry(name, raw, unit, source), outcome.notes


def recommend_scale(d, n, scores="dot", causal=False, train_length=None, head_entropy=None, head_scale=None):
    r"""Every criterion's scale for one setting (the book's scale calculator).

    The length rules multiply the head's scale at the training length,
    :math:`\alpha_L`: measured (``head_scale``, or ``head_entropy`` converted
    by ``head_scale_from_entropy``), or, without a measurement, the
    default :math:`\alpha_L = 1` (unit-variance scores at the standard
    scale), which the notes state.

    The rows are the table ``attnscale.recipes.RULES``: each rule is a small
    function of the setting that returns a scale or a note, run on its own,
    so a rule that cannot give a number here (outside its range, or failing
    for any reason) adds a note and the others still print.  No entry is
    ever 0, negative or non-finite.  Every input in the domain below answers
    in well under a second with bounded memory (the causal gradient row
    integrates over positions, :func:`attnscale.best_causal_scale`);
    ``benchmarks/bench_calculator.py`` times it and ``tests/test_calculator_fuzz.py``
    fuzzes the whole domain.

    Parameters
    ----------
    d : int or float
        Head dimension, ``>= 2``.
    n : int or float
        Number of keys, ``2 <= n <= 1e15``; for ``causal=True`` the longest sequence.
    scores : {"dot", "cosine"}, optional
        Raw dot products, or cosines of normalized queries and keys.
    causal : bool, optional
        For the gradient criterion, choose one scale for all positions
        :math:`2 \dots n` (:func:`attnscale.best_causal_scale`).
    train_length : int or float, optional
        Training length :math:`L`, ``2 <= L <= 1e15``; enables the length
        rules.  The entropy-invariant rule uses its published :math:`L = 512`
        when this is ``None``.  The exact entropy match needs :math:`n, L \le 10^9`
        (the range of the exact expectation) and says so beyond.
    head_entropy : float, optional
        The head's measured mean attention entropy (nats) at :math:`L`,
        strictly between 0 and :math:`\log L`, with :math:`L \le 10^9`.  Needs ``train_length``.
    head_scale : float, optional
        The head's measured scale :math:`\alpha_L` on the unit-variance
        score, ``> 0``.  Needs ``train_length``; not with ``head_entropy``.

    Returns
    -------
    Recommendation
        A frozen record; ``print`` it for a table.

    Raises
    ------
    ValueError
        ``d < 2``, ``n`` or ``train_length`` outside ``[2, 1e15]``, an unknown
        ``scores``, non-finite values, a measurement without ``train_length``,
        both measurements at once, or a measured entropy that no head of the
        score law has at scales the exact expectation covers.
    TypeError
        Non-numeric arguments, or a non-boolean ``causal``.
    """
    d = _scalar(_validate.dimension(d), "d")
    n = _scalar(_validate.key_count(n), "n")
    if n > MAX_KEYS:
        raise ValueError(f"n must be <= {MAX_KEYS:g} (the calculator's range), got {n:g}")
    if not isinstance(scores, str) or scores not in ("dot", "cosine"):
        raise ValueError(f"scores must be 'dot' or 'cosine', got {scores!r}")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {type(causal).__name__}")
    if train_length is not None:
        train_length = _scalar(_validate.at_least(train_length, "train_length", 2.0), "train_length")
        if train_length > MAX_KEYS:
            raise ValueError(
                f"train_length must be <= {MAX_KEYS:g} (the calculator's range), got {train_length:g}"
            )
    head_scale = _optional_positive(head_scale, "head_scale")
    if head_entropy is not None:
        head_entropy = _scalar(head_entropy, "head_entropy")
    if head_entropy is not None and head_scale is not None:
        raise ValueError("give head_entropy or head_scale, not both")
    if (head_entropy is not None or head_scale is not None) and train_length is None:
        raise ValueError("a measured head (head_entropy or head_scale) needs train_length")

    law = "gaussian" if scores == "dot" else "cosine"
    notes = []
    if head_scale is not None:
        alpha_l = head_scale
        notes.append(f"head measured: alpha_L = {alpha_l:.4g} at L = {train_length:g}")
    elif head_entropy is not None:
        alpha_l = _head_from_entropy(head_entropy, train_length, law, d)
        notes.append(
            f"head measured: entropy {head_entropy:.4g} nats at L = {train_length:g}, "
            f"i.e. alpha_L = {alpha_l:.4g} for {law} scores (exact expectation)"
        )
    else:
        alpha_l = 1.0
        if train_length is not None:
            notes.append(
                "no measured head: assumes alpha_L = 1 (unit-variance scores at the standard "
                "scale); give head_entropy (--head-entropy) or head_scale (--head-scale)"
            )

    if train_length is not None and n > train_length:
        notes.append(
            "the length rules say what keeps a head's entropy, not its loss: in the book's language model "
            "(ch. language-model) no rule applied only at test carried a model far past L; keep the trained "
            "scale, or train with the rule you will use, and measure"
        )
    setting = _Setting(d, n, scores, bool(causal), train_length, alpha_l)
    entries = []
    for rule in RULES:
        if not rule.applies(setting):
            continue
        entry, rule_notes = _run(rule, setting)
        if entry is not None:
            entries.append(entry)
        notes.extend(note for note in rule_notes if note not in notes)
    return Recommendation(d, n, scores, bool(causal), train_length, alpha_l, tuple(entries), tuple(notes))


def _head_from_entropy(head_entropy, train_length, law, d):
    """alpha_L of a measured entropy, with the calculator's errors naming head_entropy."""
    if train_length > _EXACT_MAX_KEYS:
        raise ValueError(
            f"head_entropy needs train_length <= {_EXACT_MAX_KEYS:g} (the exact expectation's range); "
            "give head_scale instead"
        )
    try:
        return head_scale_from_entropy(head_entropy, train_length, law, d)
    except _OutOfReach as error:
        raise ValueError(f"head_entropy = {head_entropy:g} nats: {error}; give head_scale instead") from None
