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
* **past the training length**: for a head that must find one key among
  :math:`n`, a factor growing like :math:`\log n` on the trained logits
  (Qwen's :math:`\log n/\log L`), after extending RoPE's frequencies
  (:data:`LENGTH_VERDICT`), from the book's retrieval experiment; its
  language model, which uses little long context, gained little from any rule.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..models.training import TUNED_D, TUNED_LENGTHS, TUNED_MARGIN
from ..support import _validate
from ..support.formatting import format_number
from ..theory.cosine import cosine_alpha_star
from ..theory.decoder import gradient_fraction
from ..theory.gaussian import gaussian_alpha_star

__all__ = [
    "CALCULATOR_HOW",
    "CALCULATOR_NTK",
    "CALCULATOR_ROWS",
    "CONFIDENCE",
    "CONTRASTIVE_PRACTICE",
    "LENGTH_TESTED_RATIO",
    "LENGTH_VERDICT",
    "ROPE_FIRST",
    "Answer",
    "answers",
    "calculator_answer",
    "contrastive_ratios",
]

#: What to do first with RoPE past the training length, in plain words: part of
#: ``LENGTH_VERDICT`` and of the calculator's line under its marked row (``CALCULATOR_HOW``).
ROPE_FIRST = (
    "with RoPE, first extend the rotary frequencies (an NTK-aware base: the extension the book tested)"
)

#: What the book's retrieval and language-model experiments (chapters
#: *Retrieval past the training length*, *A needle in the text* and *A
#: language model past its training length*) support about length rules;
#: those chapters check every part of it against the sweeps' results.
LENGTH_VERDICT = (
    "for a head that must find one key among $n$, multiply its trained logits past $L$ by a factor that "
    "grows like $\\log n$, such as Qwen's $\\log n/\\log L$ applied at test; "
    + ROPE_FIRST
    + ", since no scale undoes rotations the model never saw.  In the book's recall models without "
    "positions the factor won back over half of the accuracy lost by $16L$; with RoPE the frequency "
    "extension was the larger repair on recall, and on a needle planted in text up to $8L$; at $16L$ on "
    "the needle, where the extension alone held little, the factor added more and matched a $\\log n$ "
    "factor trained in, though accuracy stayed far below its level at $L$.  The evidence is small "
    "decoders trained at a short length and extended without fine-tuning, with the factor on every "
    "head; the book's language model, which uses little long context, gained little from any rule with "
    "its rotary frequencies unchanged and lost by every rule applied at test without positions, so "
    "measure your own heads' best factor by retrieval accuracy on held-out data (a retrieval head is "
    "one whose weight on the key it must find is largest)"
)


#: The longest test length of the retrieval and needle sweeps, in multiples of the training length
#: (the retrieval chapter checks it against its results file); the calculator says when n/L is past it.
LENGTH_TESTED_RATIO = 16

#: How sure the book is of each answer: high, medium or low (the reasons are in ``answers``).
CONFIDENCE = {"dot": "high", "cosine": "low", "contrastive": "low", "decoder": "medium", "length": "medium"}

#: The rows of the scale calculator (keys of ``attnscale.practice.calculator.RULES``) that state each answer.
#: (A contrastive loss is the calculator's ``contrastive`` switch: its answer is the gradient row.)
CALCULATOR_ROWS = {
    "dot": ("standard",),
    "cosine": ("standard",),
    "contrastive": ("gradient",),
    "decoder": ("standard",),
    "length": ("qwen",),
}


#: How to use the calculator's marked row, by answer (``"length causal"``: past
#: the training length in a decoder), in plain text: a ``str.format`` template
#: whose ``{factor}`` is the row's factor on the head's trained logits and
#: ``{scale}`` its scale on the raw score (the calculator prints it under the
#: row; an answer without an entry needs no words beyond its row).
CALCULATOR_HOW = {
    "length": (
        "for a head that must find one key among n: "
        + ROPE_FIRST
        + ": {ntk}; then multiply the trained logits past L by this row's factor, "
        "{factor:.4g} here, at test, on every head and every query (each sees n keys). The book tested "
        "it in decoders only, where the query at position t took log t/log L; in an encoder it is "
        "untested. Without positions, the factor alone. A YaRN or LongRoPE extension puts its own "
        "factor on the logits already: do not add this one to it; other extensions (position "
        "interpolation, Llama 3's) were not tested. For language-model loss the book's evidence is "
        "neutral to negative (ch. language-model)"
    ),
    "length causal": (
        "for a head that must find one key among n: "
        + ROPE_FIRST
        + ": {ntk}, at every position; then multiply the trained logits of the query at each "
        "position t > L by log t/log L at test, on every head, as the book did, with factor 1 at "
        "positions up to L (this row's {factor:.4g} is the last position's, t = n); without positions, "
        "the factor alone. A YaRN or LongRoPE extension puts its own factor on the logits already: do not "
        "add this one to it; other extensions (position interpolation, Llama 3's) were not tested. For "
        "language-model loss the book's evidence is neutral to negative (ch. language-model)"
    ),
    "cosine": (
        "to train: normalize each head's q and k to unit RMS, keep 1/sqrt(d), i.e. sqrt(d) = {root:.4g} "
        "on the cosine, and learn a gain on q and k, as released models with QK-norm do; a trained "
        "model: factor 1, nothing to change. The gradient criteria below ask for more, untested by "
        "training"
    ),
    "contrastive": (
        "an order of magnitude, not a value: the three published cosine-logit settings the book compared "
        "(two margin losses and SimCSE, ch. cosine-scores) lie between {low_ratio:.2g} and "
        "{high_ratio:.2g} times this row's ({low:.2g} to {high:.2g} here); search the scale (the inverse "
        "temperature) over at least a factor of ten around it, or learn it; the book compared no other "
        "contrastive setting"
    ),
}

#: The RoPE base the book stretched past L (``attnscale.practice.length_rules.ntk_rope_base``), in words: with
#: its number when it prints (head dimension above 2, no overflow), else the formula alone.
CALCULATOR_NTK = {
    "value": "RoPE's base times (n/L)^(d/(d-2)) = {value:.4g} here, with all d = {d:g} dimensions "
    "rotating (if only part of each head rotates, put their number for d; the book tested full rotation)",
    "formula": "RoPE's base times (n/L)^(d/(d-2)), d the rotating dimensions (the book tested full rotation)",
}

#: Published scales on cosine logits that the book compares with the gradient optimum
#: (chapter *Cosine scores*, its table of practice): name, scale used, embedding dimension d,
#: candidates per row n.  AM-Softmax and CosFace: 10,516 CASIA-WebFace identities; SimCSE:
#: unsupervised, BERT-base, a batch of 64 (temperature 0.05).
CONTRASTIVE_PRACTICE = (
    ("AM-Softmax", 30.0, 512, 10516),
    ("CosFace", 64.0, 512, 10516),
    ("SimCSE (unsup.)", 20.0, 768, 64),
)


@functools.lru_cache(maxsize=1)
def contrastive_ratios() -> dict[str, float]:
    """Each published scale of ``CONTRASTIVE_PRACTICE`` over :math:`\\alpha^*(n, d)` at its own setting.

    Examples
    --------
    >>> ratios = contrastive_ratios()
    >>> min(ratios, key=ratios.get), bool(min(ratios.values()) < 1 < max(ratios.values()))
    ('SimCSE (unsup.)', True)
    """
    return {name: used / float(cosine_alpha_star(n, d)) for name, used, d, n in CONTRASTIVE_PRACTICE}


def calculator_answer(scores, causal, n, train_length, contrastive=False) -> str:
    """Which answer applies to a setting of the scale calculator (a key of :func:`answers`).

    A contrastive loss (the calculator's switch) is ``"contrastive"``;
    running past a given training length (``n > train_length``) is ``"length"``;
    otherwise cosine scores are ``"cosine"``, a causal head with dot products
    ``"decoder"``, and any other ``"dot"``.

    Examples
    --------
    >>> calculator_answer("dot", False, 32768, 4096)
    'length'
    >>> calculator_answer("cosine", True, 4096, None)
    'cosine'
    >>> calculator_answer("cosine", False, 64, None, contrastive=True)
    'contrastive'
    """
    if contrastive:
        return "contrastive"
    if train_length is not None and n > train_length:
        return "length"
    if scores == "cosine":
        return "cosine"
    return "decoder" if causal else "dot"


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
        How sure the book is: ``"high"``, ``"medium"`` or ``"low"`` (``CONFIDENCE``).
    reason : str
        Why, in one short clause, MyST Markdown (the detail is in ``derived_in``).
    derived_in : str
        Where the evidence is, MyST Markdown with cross-references.
    chapters : tuple of str
        The chapters (file names under ``book/``) whose take-away states it.
    rows : tuple of str
        The scale calculator's rows that state it (``CALCULATOR_ROWS``).
    sure : str
        The answers table's "how sure" cell: the level in bold, then the reason.
    """

    key: str
    setting: str
    recommendation: str
    reason: str
    derived_in: str
    chapters: tuple[str, ...]

    @property
    def confidence(self) -> str:
        return CONFIDENCE[self.key]

    @property
    def rows(self) -> tuple[str, ...]:
        return CALCULATOR_ROWS[self.key]

    @property
    def sure(self) -> str:
        return f"**{self.confidence}**: {self.reason}"


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

    See Also
    --------
    Answer : the fields of one answer.
    recommend_scale : the scales themselves, for one setting.

    Examples
    --------
    >>> from attnscale import answers
    >>> book = answers(n=512, d=64)
    >>> list(book)
    ['dot', 'cosine', 'contrastive', 'decoder', 'length']
    >>> print(book["dot"].recommendation)
    $1/\\sqrt d$ on $q\\cdot k$ ($\\alpha = 1$)
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
    cos_star = float(cosine_alpha_star(n, d))
    pairs = float(cosine_alpha_star(candidates, d_embed))
    ratios = contrastive_ratios()
    low, high, lowest = min(ratios.values()), max(ratios.values()), min(ratios, key=ratios.get)
    half = context // 2
    alpha_half = float(gaussian_alpha_star(half))
    positions = np.arange(2, context + 1)
    kept = np.maximum(gradient_fraction(alpha_half, positions), 0.0)
    rows = [
        Answer(
            "dot",
            "**dot-product attention**",
            r"$1/\sqrt d$ on $q\cdot k$ ($\alpha = 1$)",
            "the variance argument is exact, and with the learning rate tuned per scale no other scale "
            rf"trained better (within a factor {TUNED_MARGIN} in loss; one head, $d = {TUNED_D}$, "
            rf"$n = {tuned_n}$: one small task)",
            "{ref}`variance <ch-variance>`, {prf:ref}`thm-dot-variance`; "
            "{ref}`Gaussian scores <ch-gaussian-scores>`; {ref}`training <sec-training-tuned>`",
            ("variance", "gaussian-scores", "training"),
        ),
        Answer(
            "cosine",
            "**QK-normalized (cosine) attention**",
            r"normalize each head's $q$ and $k$ to unit RMS and keep $1/\sqrt d$, i.e. "
            rf"$\sqrt d = {_n(np.sqrt(d))}$ on the cosine at $d = {d}$, with learned gains, "
            "as Qwen3 does {cite:p}`yang2025qwen3`",
            "carried over from dot products and from released models, not trained here; the gradient "
            rf"criteria ask for more ($\alpha^*(n, d) = {_n(cos_star)}$ at $n = {n}$)",
            "{ref}`cosine scores <ch-cosine-scores>`, {prf:ref}`thm-cosine-mgf`; {ref}`recipes <ch-recipes>`",
            ("cosine-scores",),
        ),
        Answer(
            "contrastive",
            "**contrastive losses** on cosine similarity",
            rf"a scale of the order of $\alpha^*(n, d)$ with $n$ candidates: about ${_n(pairs, 1)}$ "
            rf"(temperature about ${_n(1 / pairs, 1)}$) at $n = {candidates}$, $d = {d_embed}$; the "
            rf"published scales the book compared lie between ${_n(low, 2)}$ and ${_n(high, 2)}$ times "
            rf"$\alpha^*$ ({lowest} at the low end){_published_here(candidates, d_embed)}",
            "an order-of-magnitude argument, matched in order of magnitude (tens) by three published "
            "cosine-logit scales, two of them margin losses, not in value",
            "{ref}`cosine scores: practice <sec-cosine-practice>`, {prf:ref}`prop-cosine-power-law`",
            ("cosine-scores",),
        ),
        Answer(
            "decoder",
            "**decoders** (position $n$ sees $n$ keys)",
            r"the same scale at every position: $1/\sqrt d$, as for any dot-product attention",
            "rests on the training chapter's tuned-rate test, which is not causal; no decoder was trained "
            "for it, and the gradient criterion cannot pick one fixed scale (at context "
            rf"$L = {context}$ the optimum for $n = L/2$ keeps ${_n(100 * kept.mean(), 2)}\%$ of each "
            "position's best)",
            "{ref}`training <sec-training-tuned>` (the evidence); {ref}`decoders <ch-decoders>`",
            ("decoders",),
        ),
    ]
    rows.append(_length_answer())
    return {row.key: row for row in rows}


def _published_here(candidates, d_embed) -> str:
    """Where a compared setting is the answer's own: ", where <name> uses <scale>" (else "")."""
    for name, used, d, n in CONTRASTIVE_PRACTICE:
        if (n, d) == (candidates, d_embed):
            return f"; at this setting {name} uses ${used:g}$"
    return ""


def _length_answer() -> Answer:
    """The answers table's row for running past the training length (it depends on no setting)."""
    return Answer(
        "length",
        "**running past the training length** $L$",
        LENGTH_VERDICT,
        "resolved over five seeds on two retrieval tasks (recall, a needle in text) in small "
        "decoders, $2L$ to $16L$, without fine-tuning; one model size, no QK-norm or encoder head "
        "under a factor at test, and a language model that barely uses its context gained little "
        "from any rule (and lost without positions)",
        "{ref}`retrieval <ch-retrieval>`; {ref}`needle <ch-needle>`; {ref}`which law <ch-which-law>`; "
        "{ref}`language model <ch-language-model>`; {ref}`encoders <ch-bidirectional>`; "
        "{ref}`recipes <ch-recipes>`",
        ("retrieval", "needle", "language-model", "bidirectional", "recipes"),
    )
