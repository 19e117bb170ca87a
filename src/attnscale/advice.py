r"""What the book recommends: one source of truth for the answers table and the chapters.

The landing page's answers table and every chapter's "what to take away"
glue their recommendation from :func:`answers`, so the two cannot say
different things (``tests/test_advice.py`` checks that each chapter named in
an answer glues it).  Each answer is computed from the package for the
setting given, in MyST Markdown with cross-references into the book.

The recommendations, and the evidence each rests on:

* **dot-product attention**: :math:`1/\sqrt d`.  The variance argument is
  exact, and in the book's training test (one head, SGD and Adam, the
  learning rate tuned per scale) no scale trains better; the gradient
  criteria of Part II describe a random row at initialization.
* **QK-normalized attention**: normalize each head's :math:`q` and
  :math:`k` to unit RMS and keep :math:`1/\sqrt d` (that is,
  :math:`\sqrt d` on the cosine) with learned gains, as released models
  with QK-norm do; the gradient criteria ask for more, untested by training.
* **contrastive losses**: a scale of the order of :math:`\alpha^*(n, d)`,
  which reproduces the order of magnitude of published settings.
* **decoders**: the same scale at every position; the gradient criterion
  cannot pick one.
* **past the training length**: keep the trained scale and measure
  (:data:`LENGTH_VERDICT`), from the book's language-model experiment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validate
from .cosine import cosine_alpha_star
from .decoder import gradient_fraction
from .formatting import format_number
from .gaussian import gaussian_alpha_star
from .recipes import qknorm_initial_scale
from .training import TUNED_D, TUNED_LENGTHS, TUNED_MARGIN

__all__ = ["LENGTH_VERDICT", "Answer", "answers"]

#: What the book's language-model experiment (chapter *A language model
#: past its training length*) supports about length rules; that chapter
#: checks every part of it against the sweep's results.
LENGTH_VERDICT = (
    "keep the scale the model was trained with, and do not expect a scale rule to carry it far past "
    "$L$: in the book's small language model, two of three rules applied only at test gained a few "
    "hundredths of a nat per byte with RoPE, and every rule lost with no positional encoding; trained "
    "in, a $\\log n$ scale helped the model without positions up to about $4L$ and hurt at $16L$.  If "
    "you use a rule, train with it and measure"
)


@dataclass(frozen=True)
class Answer:
    """One row of the answers table.

    Attributes
    ----------
    key : str
        Short name (``"dot"``, ``"cosine"``, ``"contrastive"``, ``"decoder"``, ``"length"``).
    setting : str
        Who the answer is for.
    recommendation : str
        What to use, MyST Markdown.
    confidence : str
        How sure the book is, and why, MyST Markdown.
    derived_in : str
        Where the evidence is, MyST Markdown with cross-references.
    chapters : tuple of str
        The chapters (file names under ``book/``) whose take-away states it.
    """

    key: str
    setting: str
    recommendation: str
    confidence: str
    derived_in: str
    chapters: tuple[str, ...]


def _n(value, digits=3):
    return format_number(float(value), digits)


def answers(n=512, d=64, train_length=512, context=4096, candidates=64, d_embed=768) -> dict[str, Answer]:
    """The book's answers for one setting, keyed by :attr:`Answer.key`, in table order.

    Parameters
    ----------
    n : int
        Keys per query (encoders), ``>= 2``.
    d : int
        Head dimension, ``>= 2``.
    train_length : int
        Training length for QK-norm's initial scale, ``>= 2``.
    context : int
        A decoder's context length, ``>= 4``.
    candidates, d_embed : int
        A contrastive loss's candidates per query and embedding dimension.

    Returns
    -------
    dict of str to Answer
    """
    for name, value, low in (
        ("n", n, 2),
        ("d", d, 2),
        ("train_length", train_length, 2),
        ("context", context, 4),
        ("candidates", candidates, 2),
        ("d_embed", d_embed, 2),
    ):
        _validate.count(value, name, low)
    tuned_n = "$ and $".join(str(k) for k in TUNED_LENGTHS)
    tuned_star = ", ".join(_n(float(gaussian_alpha_star(k))) for k in TUNED_LENGTHS)
    tuned_typical = ", ".join(_n(float(np.sqrt(2 * np.log(k)))) for k in TUNED_LENGTHS)
    cos_star = float(cosine_alpha_star(n, d))
    pairs = float(cosine_alpha_star(candidates, d_embed))
    half = context // 2
    alpha_half = float(gaussian_alpha_star(half))
    positions = np.arange(2, context + 1)
    kept = np.maximum(gradient_fraction(alpha_half, positions), 0.0)
    none_below = int(np.ceil(np.exp(alpha_half**2)))  # alpha^2 > log n: the mean field gives nothing
    rows = [
        Answer(
            "dot",
            "**dot-product attention**",
            r"$1/\sqrt d$ on $q\cdot k$ ($\alpha = 1$)",
            "the variance argument is exact; in the training test (one head, "
            rf"$d = {TUNED_D}$, $n = {tuned_n}$, SGD and Adam, the learning rate tuned per scale) "
            rf"the mean-field $\alpha^*$ (${tuned_star}$) trained as $1/\sqrt d$ did, within a factor "
            rf"{TUNED_MARGIN} in loss, and a typical row's $\sqrt{{2\log n}}$ (${tuned_typical}$) gave no "
            "advantage; these scales maximize a random row's gradient at initialization.  One small "
            "task, so a gain elsewhere is not ruled out",
            "{ref}`variance <ch-variance>`, {prf:ref}`thm-dot-variance`; "
            "{ref}`Gaussian scores <ch-gaussian-scores>`; {ref}`training <ch-training>`",
            ("variance", "gaussian-scores", "training"),
        ),
        Answer(
            "cosine",
            "**QK-normalized (cosine) attention**",
            r"normalize each head's $q$ and $k$ to unit RMS and keep $1/\sqrt d$, i.e. "
            rf"$\sqrt d = {_n(np.sqrt(d))}$ on the cosine at $d = {d}$, with learned gains "
            "(as Qwen3 does, {cite:p}`yang2025qwen3`)",
            "low: the unit-variance argument carried over from dot products, and released practice; "
            "not trained here.  The gradient criteria ask for more: the mean-field "
            rf"$\alpha^*(n, d) = {_n(cos_star)}$ ($n = {n}$), and QKNorm starts its learned scale at "
            rf"$\log_2(L^2 - L) = {_n(qknorm_initial_scale(train_length))}$ ($L = {train_length}$)",
            "{ref}`cosine scores <ch-cosine-scores>`, {prf:ref}`thm-cosine-mgf`; {ref}`recipes <ch-recipes>`",
            ("cosine-scores",),
        ),
        Answer(
            "contrastive",
            "**contrastive losses** on cosine similarity",
            rf"a scale of the order of $\alpha^*(n, d)$ with $n$ candidates: ${_n(pairs)}$ "
            rf"(temperature ${_n(1 / pairs, 2)}$) at $n = {candidates}$, $d = {d_embed}$",
            "low: it reproduces the order of magnitude of published settings, not their values",
            "{ref}`cosine scores <ch-cosine-scores>`, {prf:ref}`prop-cosine-power-law`",
            ("cosine-scores",),
        ),
        Answer(
            "decoder",
            "**decoders** (position $n$ sees $n$ keys)",
            r"the same scale at every position: $1/\sqrt d$, as for any dot-product attention",
            "the gradient criterion cannot pick one fixed scale: at context "
            rf"$L = {context}$ the mean-field optimum for $n = L/2$ keeps on average "
            rf"${_n(100 * kept.mean(), 2)}\%$ of each position's mean-field best, though the mean field "
            rf"fails at early positions (below position ${none_below}$ it predicts a negative gradient); "
            "the exact expected gradient grows with the scale at every position (a numerical finding "
            "on the range computed), and criteria on a random row at initialization are not training "
            "results",
            "{ref}`decoders <ch-decoders>`",
            ("decoders",),
        ),
    ]
    rows.append(
        Answer(
            "length",
            "**running past the training length** $L$",
            LENGTH_VERDICT,
            "low: one small byte-level model, trained briefly at $L = 64$ and tested to $16L$, five seeds "
            "per arm and a second set of five (some gains resolve only over all ten); it uses little of "
            "its context beyond a few bytes, so a model that exploits long context may respond "
            "differently.  The sources report gains on their own models (Su's masked-LM table, "
            "{ref}`sec-sources-report`), which this experiment neither reproduces nor contradicts.  "
            "For why a rule cannot help every head, see {ref}`entropy <ch-entropy-invariance>`",
            "{ref}`language model <ch-language-model>`; {ref}`recipes <ch-recipes>`",
            ("language-model", "recipes"),
        )
    )
    return {row.key: row for row in rows}
