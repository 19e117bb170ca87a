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
* **past the training length**: with RoPE, YaRN (by-part frequency
  interpolation with its own logit factor, the part that made its lead in
  the models tested), with a fine-tune at :math:`4L` when one can; the
  :math:`\log n/\log L` factor on every head only without positions
  (:data:`LENGTH_VERDICT`), from the book's carry sweep: medium confidence
  for the models tested, low carried to a 4k to 32k model with base
  :math:`10^4`, where the RoPE carry is untested.

Every cell of the answers table is at most 25 words (``tests/test_advice.py``).
The table's one base: :math:`\alpha` multiplies the unit-variance score
:math:`q\cdot k/\sqrt d` (for normalized :math:`q, k`, :math:`\sqrt d\cos`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..models.training import TUNED_D
from ..support import _validate
from ..support.formatting import format_number
from ..theory.cosine import cosine_alpha_star
from ..theory.decoder import gradient_fraction
from ..theory.gaussian import gaussian_alpha_star

__all__ = [
    "CALCULATOR_HOW",
    "CALCULATOR_NTK",
    "CALCULATOR_ROWS",
    "CARRIED_CONFIDENCE",
    "CARRY_LAW",
    "CONFIDENCE",
    "CONTRASTIVE_PRACTICE",
    "LENGTH_FINETUNE",
    "LENGTH_TESTED_RATIO",
    "LENGTH_USE",
    "LENGTH_VERDICT",
    "PI_FACTOR",
    "ROPE_FIRST",
    "Answer",
    "answers",
    "calculator_answer",
    "carry_law_clause",
    "contrastive_ratios",
]

#: What to do with RoPE past the training length, in plain words: part of
#: ``LENGTH_VERDICT`` and of the calculator's line under its marked row (``CALCULATOR_HOW``).
ROPE_FIRST = (
    "with RoPE, use YaRN: its by-part interpolation of the rotary frequencies with its own logit "
    "factor, fine-tuned past the training length when you can"
)

#: The fine-tune the carry sweep tested: at ``stretch`` times the training length, on ``token_share``
#: of the training tokens (steps x batch x window over the training's; the evidence appendix's
#: sweep section recomputes both from the results files' settings and fails if they differ), and
#: what it added to YaRN's accuracy at 8L and 16L, rounded to hundredths (``yarn_gain``, low and
#: high: the appendix checks every task, regime and length against it).
LENGTH_FINETUNE = {"stretch": 4, "token_share": 0.04, "yarn_gain": (0.01, 0.02)}

#: The fine-tune's gain in words, from ``LENGTH_FINETUNE``.
_GAIN = f"{LENGTH_FINETUNE['yarn_gain'][0]:.2f}–{LENGTH_FINETUNE['yarn_gain'][1]:.2f}"

#: The fine-tune in words, from ``LENGTH_FINETUNE``.
_FINETUNE = (
    f"a fine-tune at {LENGTH_FINETUNE['stretch']}L on {100 * LENGTH_FINETUNE['token_share']:.0f}% of the "
    "training tokens"
)

#: The answers table's cell for running past the training length (at most 25 words).
LENGTH_USE = (
    f"with RoPE, YaRN (mostly its logit factor led, in small models); a ${LENGTH_FINETUNE['stretch']}L$ "
    f"fine-tune adds {_GAIN} accuracy; without positions, $\\log_L n$ on every head, for recall"
)

#: Position interpolation given YaRN's logit factor against YaRN in the carry sweep (recall and the
#: needle, both regimes): ``behind``, the largest far end of YaRN's paired 95% lead over it (2L to
#: 16L), rounded up to hundredths; ``share``, the least share of YaRN's lead over plain position
#: interpolation that the factor carried at 8L and 16L (one minus that far end over YaRN's mean
#: lead), rounded down to tenths.  Typed because the package does not ship the results files; the
#: evidence appendix (section *The same rules on the needle*) recomputes both and fails if they
#: differ.
PI_FACTOR = {"behind": 0.03, "share": 0.6}

#: The carry sweep's law without positions, as its appendix fits it from ``book/data/carry-law-*.json``
#: (appendix *The oracle factor against L and width*, which recomputes these numbers from the results
#: and fails if they differ): the training lengths tried, and the change per doubling of L of the best
#: factor's rate c in log(n/L) (:math:`\lambda^* = 1 + c\log(n/L)`), with its 95% half-width.
#: Typed because the package does not ship the book's results files; checked where they are read.
#: The fit is on the six (L, width) cell means, the more conservative analysis: treating the 18
#: models as independent gives the same drift with half-width 0.0124 (far end 0.018), the cell means
#: 0.0206 (far end 0.026); the appendix states both.
CARRY_LAW = {"train_lengths": (32, 64, 128), "c_drift": 0.0052, "c_half": 0.0206}


def carry_law_clause(train_lengths, c_drift, c_half) -> str:
    r"""The length verdict's clause on how the best factor's law moves with the training length.

    The carry sweep fits :math:`\lambda^*(n) = 1 + c\log(n/L)` to the oracle factors of
    models without positions trained at several :math:`L`, then the change of :math:`c`
    per doubling of :math:`L`, :math:`\delta \pm h` (95%).  When :math:`|\delta| < h`
    the clause states the non-rejection of one rate, with the far end
    :math:`|\delta| + h` of the interval; otherwise it states the drift.

    Parameters
    ----------
    train_lengths : sequence of int
        The training lengths fitted (at least two, each ``>= 2``).
    c_drift : float
        The change of :math:`c` per doubling of :math:`L`.
    c_half : float
        Its 95% half-width, ``> 0``.

    Returns
    -------
    str
        MyST Markdown, no final full stop.

    Examples
    --------
    >>> carry_law_clause((32, 64, 128), 0.0052, 0.0206)  # doctest: +NORMALIZE_WHITESPACE
    'without positions the sweep did not reject one rate of the best factor in $\\log(n/L)$ for $L$ from
    32 to 128, though a drift of up to 0.026 per doubling of $L$ is not excluded'
    """
    if isinstance(train_lengths, (str, bytes)) or not hasattr(train_lengths, "__len__"):
        raise TypeError(f"train_lengths must be a sequence of ints, got {type(train_lengths).__name__}")
    if len(train_lengths) < 2:
        raise ValueError(f"train_lengths must hold at least two lengths, got {list(train_lengths)}")
    lengths = [_validate.count(value, "train_lengths", 2) for value in train_lengths]
    drift = _validate.real_array(c_drift, "c_drift")
    if drift.ndim != 0:
        raise ValueError(f"c_drift must be a single number, got shape {drift.shape}")
    drift, half = float(drift), _validate.positive_number(c_half, "c_half")
    span = f"for $L$ from {min(lengths)} to {max(lengths)}"
    if abs(drift) < half:
        return (
            f"without positions the sweep did not reject one rate of the best factor in $\\log(n/L)$ "
            f"{span}, though a drift of up to {format_number(abs(drift) + half, 2)} per doubling of $L$ "
            "is not excluded"
        )
    return (
        f"without positions the best factor's rate in $\\log(n/L)$ changed by "
        f"{'+' if drift > 0 else '−'}{format_number(abs(drift), 2)} ± {format_number(half, 2)} "
        f"per doubling of $L$ {span}"
    )


#: What the carry sweep (appendix *Evidence: the calculator and each rule against its release*,
#: which glues its numbers from ``book/data/carry-*.json``) and the recall and needle sweeps support
#: about length rules, at two confidence levels stated apart.
LENGTH_VERDICT = (
    ROPE_FIRST + ".  Here $L$ is the training length and $n$ the number of keys a query sees.  In the book's "
    "small RoPE decoders ($L = 64$), on recall and on a needle in text, YaRN applied at test led "
    "every other test-time rule at $n = 16L$.  Those rules were position interpolation, an "
    "NTK-aware base with or without a $\\log n$ factor, Qwen's dynamic NTK, and YaRN without its "
    "logit factor.  Most of its lead was its logit factor: position interpolation given the same "
    f"factor was never more than {PI_FACTOR['behind']:.2f} behind YaRN (far end of the 95% "
    f"interval) and kept at least {PI_FACTOR['share']:.0%} of YaRN's lead at $8L$ and $16L$.  "
    "Without the factor, YaRN's by-part frequencies were within two points of position "
    "interpolation's in mean.  In the regime whose slowest rotary pair spans as many training "
    "lengths as a 4k, base-$10^4$ model's, they were slightly behind in every cell, resolved in "
    "most.  At $L = 64$ the two frequency rules nearly coincide, while in a 4k, base-$10^4$ model "
    "YaRN leaves most pairs not fully interpolated.  So YaRN is advised there for what its "
    "frequencies keep, not on this sweep's evidence.  "
    + f"A fine-tune at ${LENGTH_FINETUNE['stretch']}L$ on {100 * LENGTH_FINETUNE['token_share']:.0f}% of "
    f"the training tokens added {_GAIN} of accuracy to YaRN at $8L$ and $16L$; no fine-tune at "
    "$16L$ was tried.  A static YaRN, with its stretch fixed, also rescales prompts shorter than "
    "the stretched length.  Fine-tuned and run at a stretch of 4, every rule lost recall at $L$ in "
    "the 4k-like regime; on the needle YaRN's cost there was not resolved.  "
    "The $\\log n/\\log L$ factor on every head comes second, and only for heads without "
    "positions: there it won back over half of the recall lost by $16L$ (it hurt a language model's "
    "loss).  Confidence: medium for the models tested here; low carried to a 4k to 32k model with "
    "base $10^4$.  The sweep built to match that model's rotary spectrum did not learn the task, so "
    "whether YaRN's lead carries with RoPE is untested.  Separately, " + carry_law_clause(**CARRY_LAW)
)


#: The longest test length of the retrieval and needle sweeps, in multiples of the training length
#: (the retrieval chapter checks it against its results file); the calculator says when n/L is past it.
LENGTH_TESTED_RATIO = 16

#: How sure the book is of each answer: high, medium or low (the reasons are in ``answers``).
CONFIDENCE = {"dot": "high", "cosine": "low", "contrastive": "low", "decoder": "medium", "length": "medium"}

#: The length answer's second confidence level, stated apart: carried from the book's small models
#: to a 4k -> 32k model with base 1e4 (the share-matched regime did not train, so the RoPE carry is
#: untested; the non-rejection of one law over L bears only on heads without positions).
CARRIED_CONFIDENCE = "low"

#: The rows of the scale calculator (keys of ``attnscale.practice.calculator.RULES``) that state each answer.
#: (A contrastive loss is the calculator's ``contrastive`` switch: its answer is the gradient row.)
CALCULATOR_ROWS = {
    "dot": ("standard",),
    "cosine": ("standard",),
    "contrastive": ("gradient",),
    "decoder": ("standard",),
    "length": ("yarn",),
}


#: How to use the calculator's marked row, by answer (``"length causal"``: past
#: the training length in a decoder), in plain text: a ``str.format`` template
#: whose ``{factor}`` is the row's factor on the head's trained logits and
#: ``{scale}`` its scale on the raw score (the calculator prints it under the
#: row; an answer without an entry needs no words beyond its row).
CALCULATOR_HOW = {
    "length": (
        "with RoPE, use YaRN: interpolate the rotary frequencies by part for s = n/L and multiply the "
        "logits by this row's factor, {factor:.4g} here, its own (in the book's small models this factor "
        "made most of YaRN's lead). Fine-tune when you can: the book tested " + _FINETUNE + ", which "
        f"added {_GAIN} of accuracy at 8L and 16L. A static stretch also rescales short prompts. "
        "Without positions, multiply the trained logits past L by log n/log L on every head instead. "
        "Tested in small decoders only (ch. recipes, evidence appendix)"
    ),
    "length causal": (
        "with RoPE, use YaRN: interpolate the rotary frequencies by part for s = n/L and multiply the "
        "logits of every position by this row's factor, {factor:.4g} here, its own (dynamic YaRN "
        "rescales the whole cache as n grows). Fine-tune when you can: the book tested "
        + _FINETUNE
        + f", which added {_GAIN} of accuracy at 8L and 16L. Without positions, "
        "multiply the query at each position t > L by log t/log L instead. Tested in small decoders only"
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
    $\\alpha = 1$, i.e. $1/\\sqrt d$ on $q\\cdot k$
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
    cos_star = float(cosine_alpha_star(n, d))
    pairs = float(cosine_alpha_star(candidates, d_embed))
    ratios = contrastive_ratios()
    low, high, lowest = min(ratios.values()), max(ratios.values()), min(ratios, key=ratios.get)
    half = context // 2
    alpha_half = float(gaussian_alpha_star(half))
    positions = np.arange(2, context + 1)
    kept = np.maximum(gradient_fraction(alpha_half, positions), 0.0)
    root = float(np.sqrt(d))
    alpha_pairs = pairs / float(np.sqrt(d_embed))
    rows = [
        Answer(
            "dot",
            "**dot-product attention**",
            r"$\alpha = 1$, i.e. $1/\sqrt d$ on $q\cdot k$",
            "the variance argument is exact; with learning rates tuned per scale no scale tried beat it "
            rf"by the tested margin (one head, $d = {TUNED_D}$)",
            "{ref}`variance <ch-variance>`, {prf:ref}`thm-dot-variance`; "
            "{ref}`Gaussian scores <ch-gaussian-scores>`; {ref}`training <sec-training-tuned>`",
            ("variance", "gaussian-scores", "training"),
        ),
        Answer(
            "cosine",
            "**QK-normalized (cosine) attention**",
            rf"$\alpha = 1$ ($\sqrt d = {_n(root)}$ on the cosine, $d = {d}$) after normalizing $q$, $k$ "
            "to unit RMS, with learned gains {cite:p}`yang2025qwen3`",
            "carried from dot products and released models, not trained here; the gradient criterion "
            rf"asks $\alpha = {_n(cos_star / root)}$ at $n = {n}$",
            "{ref}`cosine scores <ch-cosine-scores>`, {prf:ref}`thm-cosine-mgf`",
            ("cosine-scores",),
        ),
        Answer(
            "contrastive",
            "**contrastive losses** on cosine similarity",
            rf"$\alpha$ of the order of the gradient optimum: about ${_n(alpha_pairs, 1)}$ (temperature "
            rf"about ${_n(1 / pairs, 1)}$ on the cosine) at $n = {candidates}$, $d = {d_embed}$",
            rf"an order of magnitude: three published settings lie at ${_n(low, 2)}$ to ${_n(high, 2)}$ "
            rf"times the optimum ({lowest} lowest)",
            "{ref}`cosine scores: practice <sec-cosine-practice>`, {prf:ref}`prop-cosine-power-law`",
            ("cosine-scores",),
        ),
        Answer(
            "decoder",
            "**decoders** (position $n$ sees $n$ keys)",
            r"$\alpha = 1$ at every position, as for any dot-product attention",
            "the tuned-rate test is not causal; mean-field gradients favour a fixed "
            rf"$\alpha = {_n(alpha_half, 3)}$ at $L = {context}$ "
            rf"(${_n(100 * kept.mean(), 2)}\%$ of each position's optimum, on average)",
            "{ref}`training <sec-training-tuned>`; {ref}`decoders <ch-decoders>`",
            ("decoders",),
        ),
    ]
    rows.append(_length_answer())
    return {row.key: row for row in rows}


def _length_answer() -> Answer:
    """The answers table's row for running past the training length (it depends on no setting)."""
    return Answer(
        "length",
        "**running past the training length** $L$",
        LENGTH_USE,
        rf"small RoPE decoders on recall and a needle, to $16L$; **{CARRIED_CONFIDENCE}** for a 4k, "
        "base-$10^4$ model "
        "at 32k, where the RoPE carry is untested",
        "{ref}`carry sweep <sec-carry-evidence>`; {ref}`retrieval <ch-retrieval>`; "
        "{ref}`practice <sec-apply-factor>`",
        ("retrieval", "needle", "language-model", "bidirectional", "recipes"),
    )
