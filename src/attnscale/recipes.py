r"""Scale recipes side by side, and a calculator that applies them all.

Chapter *Recipes*.  Every recipe returns the factor :math:`\lambda` that
multiplies the raw query-key product in :math:`\operatorname{softmax}(\lambda\, q\cdot k)`
(for dot-product scores) or the cosine in :math:`\operatorname{softmax}(\lambda \cos)`
(for normalized queries and keys).  To compare recipes across head
dimensions, :func:`recommend_scale` also reports each one as the factor
:math:`\alpha` on the unit-variance score :math:`s = q\cdot k/\sqrt d` (or
:math:`\sqrt d \cos`), so that :math:`\alpha = 1` is the standard scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validate
from .cosine import cosine_alpha_star
from .decoder import best_causal_scale
from .entropy import entropy_invariant_scale
from .gaussian import gaussian_alpha_star

__all__ = [
    "Recommendation",
    "ScaleEntry",
    "logn_beyond_training_scale",
    "qknorm_initial_scale",
    "recommend_scale",
    "scalable_softmax_scale",
    "standard_scale",
    "yarn_scale",
]


def standard_scale(d):
    r"""The standard scale :math:`1/\sqrt d` of scaled dot-product attention.

    Parameters
    ----------
    d : float or array_like
        Head dimension, ``>= 1``.
    """
    return 1.0 / np.sqrt(_validate.at_least(d, "d", 1.0, what=" (the head dimension)"))


def logn_beyond_training_scale(n, d, train_length):
    r"""Log-length scaling applied only beyond the training length.

    .. math:: \lambda = \frac{\max(1, \log_L n)}{\sqrt d}

    as in released long-context models that multiply the queries by
    :math:`\log_L n` once the context exceeds the training length :math:`L`
    (e.g. Qwen's "LogN-Scaling").

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Head dimension, ``>= 1``.
    train_length : float or array_like
        Training length :math:`L`, ``>= 2``.
    """
    factor = entropy_invariant_scale(n, d, train_length) * np.sqrt(d)
    return np.maximum(factor, 1.0) * standard_scale(d)


def yarn_scale(n, d, train_length):
    r"""YaRN's attention temperature for a context extended by :math:`s = n/L`.

    YaRN divides the logits by a temperature :math:`t` with
    :math:`\sqrt{1/t} = 0.1 \ln s + 1` (and :math:`t = 1` for :math:`s \le 1`), so

    .. math:: \lambda = \frac{(0.1 \ln \max(s, 1) + 1)^2}{\sqrt d}.

    Parameters
    ----------
    n : float or array_like
        Number of keys, ``>= 2``.
    d : float or array_like
        Head dimension, ``>= 1``.
    train_length : float or array_like
        Original training length :math:`L`, ``>= 2``.
    """
    n = _validate.key_count(n)
    train_length = _validate.at_least(train_length, "train_length", 2.0)
    stretch = np.maximum(n / train_length, 1.0)
    return (0.1 * np.log(stretch) + 1.0) ** 2 * standard_scale(d)


def scalable_softmax_scale(n, d, s):
    r"""Scalable-Softmax: logits multiplied by :math:`s \log n`.

    .. math:: \lambda = \frac{s \log n}{\sqrt d}

    The parameter :math:`s` is learned; with :math:`s = 1/\log L` the rule
    coincides with the entropy-invariant :math:`\log_L n/\sqrt d`.

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
    r"""Initial temperature of QK-normalization, :math:`g_0 = \log_2(L^2 - L)`.

    QKNorm multiplies the cosine of normalized queries and keys by a learned
    :math:`g`, initialized from a typical training length :math:`L` (the
    97.5th percentile in the paper).

    Parameters
    ----------
    train_length : float or array_like
        :math:`L`, ``>= 2``.
    """
    length = _validate.at_least(train_length, "train_length", 2.0)
    return np.log2(length * length - length)


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
    entries : tuple of ScaleEntry
        One per applicable criterion.
    notes : tuple of str
        Caveats that apply to this setting.
    """

    d: float
    n: float
    scores: str
    causal: bool
    train_length: float | None
    entries: tuple[ScaleEntry, ...]
    notes: tuple[str, ...]

    def table(self) -> str:
        """The recommendation as a plain-text table."""
        unit = "q.k" if self.scores == "dot" else "cos(q, k)"
        title = (
            f"scale for softmax(scale * {unit}), d = {self.d:g}, n = {self.n:g}"
            + (", causal" if self.causal else "")
            + (f", training length {self.train_length:g}" if self.train_length else "")
        )
        width = max(len(e.criterion) for e in self.entries)
        lines = [title, f"  {'criterion':<{width}}  {'scale':>10}  {'x standard':>10}  source"]
        for e in self.entries:
            lines.append(f"  {e.criterion:<{width}}  {e.scale:10.4g}  {e.unit_scale:10.3f}  {e.source}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def recommend_scale(d, n, scores="dot", causal=False, train_length=None):
    r"""Every criterion's scale for one setting (the book's scale calculator).

    Parameters
    ----------
    d : int or float
        Head dimension, ``>= 2``.
    n : int or float
        Number of keys, ``>= 2``; for ``causal=True`` the longest sequence.
    scores : {"dot", "cosine"}, optional
        Raw dot products, or cosines of normalized queries and keys.
    causal : bool, optional
        For the gradient criterion, choose one scale for all positions
        :math:`2 \dots n` (:func:`attnscale.best_causal_scale`).
    train_length : int or float, optional
        Training length :math:`L`; enables the length-dependent rules
        (log-n beyond :math:`L`, YaRN, QK-norm initialization).  The
        entropy-invariant rule uses its published :math:`L = 512` when this
        is ``None``.

    Returns
    -------
    Recommendation
        A frozen record; ``print`` it for a table.

    Raises
    ------
    ValueError
        ``d < 2``, ``n < 2``, ``train_length < 2``, an unknown ``scores``, or
        non-finite values.
    TypeError
        Non-numeric arguments, or a non-boolean ``causal``.
    """
    d = float(_validate.dimension(d))
    n = float(_validate.key_count(n))
    if scores not in ("dot", "cosine"):
        raise ValueError(f"scores must be 'dot' or 'cosine', got {scores!r}")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {type(causal).__name__}")
    if train_length is not None:
        train_length = float(_validate.at_least(train_length, "train_length", 2.0))
    root = np.sqrt(d)
    # A dot-product recipe lambda (on q.k) becomes alpha = lambda sqrt(d) on the
    # unit score; for cosines the unit score is sqrt(d) cos, so lambda = alpha sqrt(d).
    to_raw = (lambda a: a / root) if scores == "dot" else (lambda a: a * root)
    entries, notes = [], []

    def add(criterion, unit_scale, source):
        entries.append(ScaleEntry(criterion, float(to_raw(unit_scale)), float(unit_scale), source))

    add("standard 1/sqrt(d)", 1.0, "Vaswani et al. 2017")
    if scores == "dot":
        if causal:
            alpha, n_ref, share = best_causal_scale(round(n))
            add("gradient, causal (Gaussian mean field)", alpha, "book ch. decoders")
            notes.append(
                f"causal: best fixed scale is alpha*(n = {n_ref:.0f}); it keeps {share:.0%} on average"
            )
        else:
            add(
                "gradient (Gaussian mean field)",
                float(gaussian_alpha_star(n)),
                "Su 2023; book ch. gaussian-scores",
            )
        notes.append(
            "the exact gradient prefers larger scales than the mean-field optimum (book, Monte Carlo)"
        )
    else:
        if causal:
            alpha, _, _ = best_causal_scale(round(n), d=d)
        else:
            alpha = float(cosine_alpha_star(n, d))
        add(
            "gradient (cosine mean field)" + (", causal" if causal else ""),
            alpha / root,
            "Su 2023; book ch. cosine-scores",
        )
    length = train_length if train_length is not None else 512.0
    add(
        f"entropy-invariant log_{length:g}(n)",
        float(np.log(n) / np.log(length)),
        "Su 2021; Chiang and Cholak 2022",
    )
    if train_length is not None:
        add(
            f"sqrt rule sqrt(1 + 2 log(n/{length:g}))",
            float(np.sqrt(max(1.0 + 2.0 * np.log(n / length), 0.0))),
            "book ch. entropy-invariance",
        )
        add(
            "log-n beyond training length", float(max(1.0, np.log(n) / np.log(length))), "Qwen (LogN-Scaling)"
        )
        add("YaRN temperature", float((0.1 * np.log(max(n / length, 1.0)) + 1.0) ** 2), "Peng et al. 2023")
        if scores == "cosine":
            add(
                "QK-norm initial g = log2(L^2 - L)",
                float(qknorm_initial_scale(length)) / root,
                "Henry et al. 2020",
            )
    else:
        notes.append("give --train-length to add the length-dependent rules")
    return Recommendation(d, n, scores, bool(causal), train_length, tuple(entries), tuple(notes))
