r"""The scale calculator: every rule of chapter *Recipes* applied to one setting.

``recommend_scale`` (also ``python -m attnscale scale``) applies the
published rules of ``attnscale.practice.recipes`` and the book's criteria to one
setting, starting from the head's scale at the training length: measured
(its mean attention entropy, or its scale) or, without a measurement, the
stated default :math:`\alpha_L = 1`.  Its rows are the table ``RULES``: one
entry per rule, each a small function of the setting that returns a scale
or a note, run on its own so that no rule can stop the others.

``book/_static/calculator.js`` mirrors this module on the recipes page.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..theory.cosine import cosine_alpha_star
from ..theory.decoder import best_causal_scale
from ..theory.gaussian import gaussian_alpha_star
from . import advice
from .recipes import (
    _OUT_OF_REACH,
    _entropy_gap_at,
    _law,
    _matched_gap,
    _OutOfReach,
    _scalar,
    _solve_entropy_gap,
    head_scale_from_entropy,
    infoscale_factor,
    llama4_attention_scale,
    longrope_attention_factor,
    qknorm_initial_scale,
    yarn_mscale,
)

__all__ = [
    "ERRORS",
    "FIELDS",
    "MAX_ALPHA",
    "MAX_D",
    "MAX_KEYS",
    "NOTES",
    "RULES",
    "TABLE",
    "Recommendation",
    "ScaleEntry",
    "page_words",
    "read_number",
    "recommend_scale",
]


@dataclass(frozen=True)
class ScaleEntry:
    r"""One criterion's scale.

    Attributes
    ----------
    criterion : str
        The rule, e.g. ``"gradient (Gaussian mean field)"``.
    scale : float
        Factor on the raw scores (:math:`q\cdot k` or the cosine).
    unit_scale : float
        The same factor on the unit-variance score (1 is the standard scale).
    source : str
        Where the rule comes from.
    factor : float or None
        With a training length, for a rule defined relative to the head's
        trained scale (a length rule, and the standard scale, whose factor
        is 1): the factor on the head's *trained* logits, which already
        carry its scale :math:`\alpha_L` (``unit_scale`` is ``factor``
        times :math:`\alpha_L`, measured or the default 1); exactly the
        rule's own factor (Qwen's :math:`\log_L n`).  ``None`` without a
        training length, and for an ``absolute`` row.
    group : str
        What the row is: ``"answer"`` (what ``attnscale.answers`` recommends
        for the setting), ``"published"`` (a published rule), ``"initial"``
        (a published initial value, learned in training afterwards),
        ``"criterion"`` (a criterion of Part II or III) or ``"book"``;
        ``TABLE`` words each.
    key : str
        The rule's key in ``RULES`` (e.g. ``"qwen"``), which does not change
        with the setting as the name does.
    absolute : bool
        Whether the rule sets the scale itself (on the unit-variance score,
        ``unit_scale``) instead of a factor on a trained head's scale: not a
        length rule (the standard scale, the gradient criterion, QK-norm's
        initial value; the standard scale too without a training length).
        Such a row has no ``factor``; the table prints ``TABLE["absolute"]``
        in its place.
    """

    criterion: str
    scale: float
    unit_scale: float
    source: str
    factor: float | None = None
    group: str = ""
    key: str = ""
    absolute: bool = False


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
        One per criterion that applies and gives a number, the recommended
        row(s) first, then the published rules, then the book's criteria.
    notes : tuple of str
        The assumptions made, and every rule that does not apply, in words.
    answer : str
        The key of the answer of ``attnscale.answers`` that applies here
        (``attnscale.practice.advice.calculator_answer``); its rows have ``group == "answer"``.
    measured : bool
        Whether ``alpha_train`` was measured.
    how : str
        How to use the marked row(s), in plain words, from the book's answer
        (``attnscale.practice.advice.CALCULATOR_HOW``; with RoPE past :math:`L`, YaRN's
        frequencies with its own factor); empty when the row says it all.
    contrastive : bool
        Whether the setting is a contrastive loss over ``n`` candidates (its
        answer is the gradient row, an order of magnitude).
    """

    d: float
    n: float
    scores: str
    causal: bool
    train_length: float | None
    alpha_train: float
    entries: tuple[ScaleEntry, ...]
    notes: tuple[str, ...]
    answer: str = "dot"
    measured: bool = False
    how: str = ""
    contrastive: bool = False

    @property
    def factors(self) -> bool:
        """Whether the table prints factors on trained logits: whenever a training length is given."""
        return self.train_length is not None

    @property
    def recommended(self) -> tuple[ScaleEntry, ...]:
        """The rows ``attnscale.answers`` recommends for this setting."""
        return tuple(e for e in self.entries if e.group == "answer")

    def table(self) -> str:
        """The recommendation as a plain-text table, in lines of at most 88 columns.

        With a training length the first number is the factor on the head's
        trained logits (``TABLE["absolute"]`` for a rule that sets the scale
        itself) and the second the scale on the unit-variance score; without
        one, the scale on the raw score and on the unit-variance score.  The rows
        come in groups under a heading each: what the book recommends here
        (with how to use it, ``how``), the published rules, published initial
        values, the book's criteria.  ``cells`` gives every row's printed
        numbers, which the page prints too.
        """
        words = _table_words(self)
        lines = textwrap.wrap(words["title"], 88, subsequent_indent="  ")
        for key in ("first", "second"):
            lines += textwrap.wrap(words[key], 88, initial_indent="  ", subsequent_indent="    ")
        width = max((len(e.criterion) for e in self.entries), default=len("criterion")) + 2
        first, second = words["columns"][1:3]
        lines.append(f"  {words['columns'][0]:<{width}}  {first:>9}  {second:>7}  {words['columns'][3]}")
        group = None
        for e, (number, unit) in zip(self.entries, self.cells(), strict=True):
            if e.group != group:
                if group == "answer" and self.how:
                    lines += textwrap.wrap(self.how, 88, initial_indent="      ", subsequent_indent="      ")
                group = e.group
                lines += textwrap.wrap(
                    words[f"group {group}"], 88, initial_indent="  ", subsequent_indent="    "
                )
            lines.append(f"    {e.criterion:<{width - 2}}  {number:>9}  {unit:>7}  {e.source}")
        for note in self.notes:
            lines += textwrap.wrap(note, 88, initial_indent="  note: ", subsequent_indent="        ")
        return "\n".join(lines)

    def cells(self) -> list[tuple[str, str]]:
        """Each entry's two numbers as the table prints them (the page prints the same strings).

        With a training length, the factor (``_fixed``) or ``TABLE["absolute"]``,
        then the unit scale; without one, the raw scale to four significant
        digits, then the unit scale.
        """
        out = []
        for e in self.entries:
            if not self.factors:
                first = f"{e.scale:.4g}"
            else:
                first = TABLE["absolute"] if e.factor is None else _fixed(e.factor)
            out.append((first, _fixed(e.unit_scale)))
        return out

    def __str__(self) -> str:
        return self.table()


def _fixed(x: float) -> str:
    """A factor or a unit scale as the table prints it: three decimals, or e-notation from 1000."""
    return f"{x:.3f}" if x < 1e3 else f"{x:.1e}"


#: The table's words: its title, the lines that say what its numbers are, its
#: columns and the headings of its groups of rows (``str.format`` templates).
TABLE = {
    "title": "scale for softmax(scale * {raw}), d = {d:g}, n = {n:g}{causal}{length}",
    "title measured": (
        "factor for softmax(factor * trained logits) of a measured head, d = {d:g}, n = {n:g}{causal}{length}"
    ),
    "title factor": "factor for softmax(factor * trained logits), d = {d:g}, n = {n:g}{causal}{length}",
    "causal": ", causal",
    "length": ", L = {L:g}",
    "first measured": (
        "factor: multiplies this head's trained logits, which already carry its alpha_L = {alpha:.4g} "
        "(a formula in a length rule's name is this factor); absolute: a rule that sets the scale itself, "
        "not a length rule, so no factor on a trained head (read its alpha)"
    ),
    "second measured": (
        "alpha: the row as a scale on the unit-variance score {unit}, the factor times alpha_L, to "
        "compare rows and heads, not to apply: the trained logits already carry alpha_L"
    ),
    "first factor": (
        "factor: multiplies a trained head's logits (a formula in a length rule's name is this factor); "
        "no head measured, so alpha_L = 1 where a row needs it (alpha, the sqrt rule, the exact match); "
        "absolute: a rule that sets the scale itself, so no factor on a trained head (read its alpha)"
    ),
    "second factor": (
        "alpha: the row as a scale on the unit-variance score {unit}, the factor times alpha_L = 1, "
        "to compare rows, not to apply to trained logits"
    ),
    "first": "scale: multiplies {raw}",
    "second": "x std: the same scale on the unit-variance score {unit} (1 is the standard scale)",
    "column criterion": "criterion",
    "column factor": "factor",
    "column scale": "scale",
    "column std": "x std",
    "column alpha": "alpha",
    "column source": "source",
    "absolute": "absolute",
    "group answer": "what the book recommends here (its answer '{answer}', {level} confidence{caveat}):",
    "caveat": " where tested; untested here: {items}",
    "caveat cosine": "QK-norm (cosine) heads",
    "caveat encoder": "encoders (every query sees n keys)",
    "caveat far": "n/L past {tested:g}",
    "group published": "published rules, each as its release applies it:",
    "group initial": "published initial values, learned in training afterwards (not a scale to set):",
    "group criterion": "the book's criteria (Parts II and III), not its advice:",
    "group book": "the book's other rows:",
    "raw dot": "q.k",
    "raw cosine": "cos(q, k)",
    "unit dot": "q.k/sqrt(d)",
    "unit cosine": "sqrt(d) cos(q, k)",
}

#: The order of the groups of rows.
GROUPS = ("answer", "published", "initial", "criterion", "book")


def _table_words(rec) -> dict:
    """The table's title, its two explaining lines, its columns and group headings, filled in for ``rec``."""
    raw, unit = TABLE[f"raw {rec.scores}"], TABLE[f"unit {rec.scores}"]
    length = TABLE["length"].format(L=rec.train_length) if rec.train_length is not None else ""
    suffix = " measured" if rec.measured else " factor" if rec.factors else ""
    title = TABLE["title" + suffix].format(
        raw=raw, d=rec.d, n=rec.n, causal=TABLE["causal"] if rec.causal else "", length=length
    )
    values = {"raw": raw, "unit": unit, "alpha": rec.alpha_train}
    out = {
        "title": title,
        "first": TABLE["first" + suffix].format(**values),
        "second": TABLE["second" + suffix].format(**values),
        "columns": [
            TABLE["column criterion"],
            TABLE["column factor"] if rec.factors else TABLE["column scale"],
            TABLE["column alpha"] if rec.factors else TABLE["column std"],
            TABLE["column source"],
        ],
    }
    level = advice.CONFIDENCE[rec.answer]
    caveat = _caveat(rec.answer, rec.scores, rec.causal, rec.n, rec.train_length)
    for group in GROUPS:
        out[f"group {group}"] = TABLE[f"group {group}"].format(answer=rec.answer, level=level, caveat=caveat)
    return out


def _caveat(answer, scores, causal, n, train_length) -> str:
    """What the length answer's evidence did not test in this setting, for the group's heading (or "")."""
    if answer != "length":
        return ""
    items = []
    if scores == "cosine":
        items.append(TABLE["caveat cosine"])
    if not causal:
        items.append(TABLE["caveat encoder"])
    if n / train_length > advice.LENGTH_TESTED_RATIO:
        items.append(TABLE["caveat far"].format(tested=advice.LENGTH_TESTED_RATIO))
    return TABLE["caveat"].format(items=", ".join(items)) if items else ""


#: What the measurements mean: the command line's help and the page's notes under its fields.
FIELDS = {
    "head_entropy": (
        "the head's mean attention entropy in nats over L keys, measured at the training length L: "
        "for a causal (decoder) head, the mean over the queries at the last positions of a "
        "training-length sequence, which see about L keys, not the mean over all positions "
        "(earlier positions see fewer keys); it calibrates the sqrt rule and the exact match, not the "
        "marked row's factor"
    ),
    "head_scale": (
        "the head's scale alpha_L at the training length L: the standard deviation of its logits "
        "over the keys of a query at L, averaged over queries (not the 1/sqrt(d) it was trained with, "
        "which is 1 here); it changes the sqrt rule and the exact match, not the marked row's factor"
    ),
}

#: The calculator's input errors (``str.format`` templates); the page prints the same words.
ERRORS = {
    "syntax": "{name} must be a number, got '{text}'",
    "finite": "{name} must be finite, got {value}",
    "low": "{name} must be >= {low:g}{what}, got {value:g}",
    "high": "{name} must be <= {high:g} (the calculator's range), got {value:g}",
    "positive": "{name} must be > 0, got {value:g}",
    "both": "give head_entropy or head_scale, not both",
    "needs L": "a measured head (head_entropy or head_scale) needs train_length",
    "contrastive": (
        "a contrastive loss scores its n candidates at once, by cosine similarity: give cosine scores, "
        "and neither causal nor train_length, with it"
    ),
    "entropy L": (
        "head_entropy needs train_length <= {top:g} (the exact expectation's range); give head_scale instead"
    ),
    "entropy range": (
        "head_entropy must be between 0 and log(train_length) = {log_l:.4g} nats "
        "(a uniform row over {L:g} keys), got {value:g}"
    ),
    "entropy reach": "head_entropy = {value:g} nats: " + _OUT_OF_REACH + "; give head_scale instead",
}

#: What the calculator reads as a number, in the command line and on the page: a decimal, with an
#: optional sign and exponent (no hexadecimal, no underscores, no ``inf`` or ``nan``).
NUMBER_SYNTAX = r"^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$"


def read_number(text: str, name: str) -> float:
    """A number typed by a reader (the command line's arguments), or the calculator's ``ValueError``.

    Examples
    --------
    >>> read_number("4096", "n")
    4096.0
    >>> read_number("0x10", "d")
    Traceback (most recent call last):
    ...
    ValueError: d must be a number, got '0x10'
    """
    if not re.match(NUMBER_SYNTAX, text):
        raise ValueError(ERRORS["syntax"].format(name=name, text=text))
    return float(text)


def _number(value, name, low, high, what="") -> float:
    """One of the calculator's numbers: a finite real scalar in ``[low, high]`` (``low = 0``: above 0)."""
    number = _scalar(value, name)  # TypeError for non-numbers, ERRORS["finite"] for inf and nan
    if low == 0 and not number > 0:
        raise ValueError(ERRORS["positive"].format(name=name, value=number))
    if number < low:
        raise ValueError(ERRORS["low"].format(name=name, low=low, what=what, value=number))
    if number > high:
        raise ValueError(ERRORS["high"].format(name=name, high=high, value=number))
    return number


#: The calculator's domain for the number of keys and the training length.
MAX_KEYS = 1e15
#: ... for the head dimension (beyond, InfoScale's ratio of expm1 loses its digits).
MAX_D = 1e6
#: ... for a measured scale alpha_L (beyond, alpha_L^2 in the sqrt rule nears overflow).
MAX_ALPHA = 1e6
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
    contrastive: bool = False  # a contrastive loss (no length rule applies)

    @property
    def factors(self) -> bool:
        """Whether rows give a factor on the trained logits (``Recommendation.factors``)."""
        return self.train_length is not None

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
    factor: float | None = None  # a length rule's own factor on the head's scale alpha_L


def _scale(unit_scale, *notes) -> _Outcome:
    return _Outcome(float(unit_scale), tuple(notes))


def _times_head(s, factor, *notes) -> _Outcome:
    """A length rule: ``factor`` on the head's scale alpha_L, kept exactly for the factor column."""
    factor = float(factor)
    return _Outcome(s.alpha_l * factor, tuple(notes), factor)


def _note(text) -> _Outcome:
    return _Outcome(None, (text,))


# --- the words: every name, source and note, once -----------------------------------------------
# Templates for str.format (the page fills them with the same format specs, in
# ``book/_static/calculator.js``); the build writes them into the
# page's data (``page_words``), so the page prints the words typed here.

#: The notes, by key.
NOTES = {
    "causal": (
        "causal: the fixed scale that keeps the most mean-field gradient is alpha*(n = {n_ref:.4g}), the "
        "optimum for that many keys; it keeps {share:.1%} of each position's best on average over "
        "positions 2 .. {n:g} (a criterion at initialization, not the book's advice)"
    ),
    "gradient": (
        "gradient: the scale maximizes the source's mean-field objective; the book finds the exact "
        "expected gradient rising toward a limit with no maximum on the range it computes "
        "(a numerical finding, proved only for n = 2)"
    ),
    "cosine large": (
        "gradient (cosine): at d = {d:g} the mean-field optimum is {ratio:.3g} times the standard "
        "scale; at fixed d it grows like n^(2/(d-1)) (ch. cosine-scores), so in so few dimensions it "
        "is far above any scale used in practice; check it on the model before using it"
    ),
    "base 512": "give the training length L to add the length rules",
    "yarn dynamic": (
        "YaRN dynamic row: the YaRN repository's dynamic rotary embedding with finetuned=False "
        "(factor 1 up to L, then mscale(n/L)^2); finetuned=True starts at mscale(s)^2 for its "
        "fine-tuned window sL, as static YaRN does"
    ),
    "yarn static": (
        "static YaRN and LongRoPE apply one constant, set by the configured window, at every length; "
        "the rows above assume the window is n"
    ),
    "rope": (
        "YaRN and LongRoPE: each factor is designed to go with its method's change of the rotary "
        "frequencies (YaRN's interpolation by parts, LongRoPE's searched rescaling), not alone on a "
        "model whose RoPE is unchanged; in the book's carry sweep YaRN with its own factor led every "
        "other rule applied at test, and dropping its factor lost accuracy (evidence appendix)"
    ),
    "llama4": (
        "Llama 4 row: alpha_L times f(n) = 1 + 0.1 ln(1 + floor(n/8192)), its multiplier on the "
        "queries of its NoPE layers at n keys; it ignores L and is never below 1"
    ),
    "sqrt cosine": "the sqrt rule is a Gaussian mean-field rule; for cosines only the exact match is given",
    "sqrt none": (
        "sqrt rule does not apply: the head's mean-field entropy at L exceeds log n, "
        "so no scale at n matches it"
    ),
    "sqrt frozen": (
        "sqrt rule: alpha_L is at or past freezing (sqrt(2 ln L)); its mean-field "
        "entropy no longer describes the head"
    ),
    "exact range": "{name}: not computed, the exact expectation covers n and L up to {top:g}",
    "exact alpha": (
        "{name}: not computed, alpha_L = {alpha:.4g} is beyond the exact expectation's range "
        "(up to {top:.4g} on the unit score for {law} scores)"
    ),
    "exact none": (
        "exact entropy match does not apply: the head's entropy at L ({target:.3g} nats) "
        "exceeds log n = {log_n:.3g}, the entropy of a uniform row over n keys"
    ),
    "exact reach": "{name}: not computed, " + _OUT_OF_REACH,
    "standard trained": (
        "standard 1/sqrt(d): the scale the head was trained with, which by itself does not change with "
        "length (factor 1 on the trained logits)"
    ),
    "head scale": "head measured: alpha_L = {alpha:.4g} at L = {L:g}",
    "head entropy": (
        "head measured: entropy {entropy:.4g} nats at L = {L:g}, "
        "i.e. alpha_L = {alpha:.4g} for {law} scores (exact expectation)"
    ),
    "head entropy causal": (
        "head measured (causal): the entropy of rows over L keys, the queries at position L; "
        "a mean over all positions is lower and gives too large an alpha_L"
    ),
    "no head": (
        "no measured head: assumes alpha_L = 1 (unit-variance scores at the standard "
        "scale); give the head's measured entropy H_L or scale alpha_L at L to start from it"
    ),
    "causal length": (
        "causal: a decoder's query at position t sees t keys, and Qwen's release multiplies it by "
        "log_L t past L (logn_list), Llama 4's by f(t); the per-position rules' factors here are those "
        "of the query at position n, the last; YaRN's factor is one number for every position (dynamic "
        "YaRN recomputes it from the current length and rescales the whole cache)"
    ),
    "past L": (
        "past L the book's carry sweep (small two-layer decoders trained at a short length, tested to "
        "{tested:g}L) found YaRN with its own logit factor ahead of every other rule applied at test, "
        "position interpolation, an NTK-aware base with or without a log n factor, and Qwen's dynamic "
        "NTK; its frequencies behaved like position interpolation's there, so its lead was its logit "
        "factor; a fine-tune at 4L on 4% of the training tokens added a little; without positions a "
        "log n factor on every head won back over half of the lost recall (ch. retrieval); carried to "
        "a 4k -> 32k model with base 1e4 this is low confidence, the RoPE carry untested (evidence "
        "appendix)"
    ),
    "length cosine": (
        "cosine scores past L: the book's length experiments had dot-product heads only (no QK-norm); "
        "the rows apply the same factors to the cosine logits, untested"
    ),
    "past tested": (
        "n/L = {ratio:.4g} is past the {tested:g}L the book tested: every length rule there is an "
        "extrapolation"
    ),
}


def _say(key, **values) -> str:
    """The note ``key`` with its numbers filled in."""
    return NOTES[key].format(**values)


def _variant(s) -> str:
    """Which words a rule with several uses: ``"dot"``, ``"dot causal"``, ``"cosine"`` or ``"cosine causal"``.

    The page computes the same key (``variant`` in ``calculator.js``).
    """
    return s.scores + (" causal" if s.causal else "")


def _fill(words, s) -> str:
    """A name or source: a template, or templates by ``_variant``; fields ``L`` and ``law``."""
    template = words if isinstance(words, str) else words[_variant(s)]
    return template.format(L=s.train_length, law=s.law)


@dataclass(frozen=True)
class _Rule:
    """One row of the calculator: a key, a name, a source, the rule itself, and when it applies.

    ``criterion`` and ``source`` are templates (``_fill``), or dicts of
    templates by ``_variant``; ``applies`` says whether the rule belongs to
    the setting at all (a rule that belongs but cannot give a number returns
    a note instead); ``compute`` maps the setting to an ``_Outcome``.  The
    page finds its arithmetic for the row by ``key``.
    """

    key: str
    criterion: str | dict[str, str]
    source: str | dict[str, str]
    compute: Callable[[_Setting], _Outcome]
    applies: Callable[[_Setting], bool] = lambda s: True
    kind: str = "published"  # its group when it is not the book's answer here (GROUPS)
    absolute: bool = False  # it sets the scale itself, not a factor on the head's alpha_L (ScaleEntry)

    def name(self, setting: _Setting) -> str:
        return _fill(self.criterion, setting)

    def source_of(self, setting: _Setting) -> str:
        return _fill(self.source, setting)


def _with_length(s: _Setting) -> bool:
    return s.train_length is not None


def _past_l(s: _Setting) -> bool:
    return s.train_length is not None and s.n > s.train_length


# --- the rules, one small function each ---------------------------------------------------------


def _standard(s):
    if s.factors:  # on a trained head: the scale it was trained with, factor 1
        return _times_head(s, 1.0, _say("standard trained"))
    return _scale(1.0)


def _gradient(s):
    d = None if s.scores == "dot" else s.d
    notes = []
    if s.causal:
        alpha, n_ref, share = best_causal_scale(round(s.n), d=d)
        notes.append(_say("causal", n_ref=n_ref, share=share, n=round(s.n)))
    else:
        alpha = float(gaussian_alpha_star(s.n) if d is None else cosine_alpha_star(s.n, d))
    if s.scores == "dot":
        notes.append(_say("gradient"))
        return _scale(alpha, *notes)
    unit = alpha / np.sqrt(s.d)
    if unit >= _LARGE_COSINE_RATIO:
        notes.append(_say("cosine large", d=s.d, ratio=unit))
    return _scale(unit, *notes)


def _entropy_invariant_512(s):
    return _scale(np.log(s.n) / np.log(512.0), _say("base 512"))


def _trained(s):
    return _times_head(s, 1.0)


def _entropy_invariant(s):
    return _times_head(s, np.log(s.n) / np.log(s.train_length))


def _qwen(s):
    return _times_head(s, max(1.0, np.log(s.n) / np.log(s.train_length)))


def _yarn(s):
    factor = float(yarn_mscale(max(s.n / s.train_length, 1.0))) ** 2
    return _times_head(s, factor, _say("yarn dynamic"), _say("yarn static"), _say("rope"))


def _longrope(s):
    factor = float(longrope_attention_factor(max(s.n / s.train_length, 1.0), s.train_length)) ** 2
    return _times_head(s, factor, _say("rope"))


def _infoscale(s):
    return _times_head(s, float(infoscale_factor(s.n, s.d, s.train_length)))


def _llama4(s):
    return _times_head(s, float(llama4_attention_scale(s.n)), _say("llama4"))


def _sqrt_rule(s):
    if s.scores != "dot":
        return _note(_say("sqrt cosine"))
    mean_field = s.alpha_l**2 + 2.0 * np.log(s.n / s.train_length)
    if not mean_field > 0:
        return _note(_say("sqrt none"))
    frozen = s.alpha_l**2 >= 2.0 * np.log(s.train_length)
    return _scale(np.sqrt(mean_field), *([_say("sqrt frozen")] if frozen else []))


def _qknorm(s):
    return _scale(float(qknorm_initial_scale(s.train_length)) / np.sqrt(s.d))


#: The exact match's name (``_fill`` fields).
_EXACT_NAME = "exact entropy match ({law})"


def _exact_match(s):
    name = _fill(_EXACT_NAME, s)
    if max(s.n, s.train_length) > _EXACT_MAX_KEYS:
        return _note(_say("exact range", name=name, top=_EXACT_MAX_KEYS))
    _, to_law, cap = _law(s.law, s.d)
    if s.alpha_l * to_law > cap:
        return _note(_say("exact alpha", name=name, alpha=s.alpha_l, top=cap / to_law, law=s.law))
    gap = _matched_gap(s.alpha_l, s.train_length, s.n, s.law, s.d)
    if gap <= 0:
        target = np.log(s.train_length) - _entropy_gap_at(s.alpha_l, s.train_length, s.law, s.d)
        return _note(_say("exact none", target=target, log_n=np.log(s.n)))
    try:
        return _scale(_solve_entropy_gap(gap, s.n, s.law, s.d))
    except _OutOfReach as error:
        return _note(_say("exact reach", name=name, **error.values))


#: The calculator's rows, in the order they print.  A new rule is one entry
#: (and, for the page, its arithmetic under the same key in ``book/_static/calculator.js``).
RULES: tuple[_Rule, ...] = (
    _Rule("trained", "keep the trained scale alpha_L", "ch. language-model", _trained, _past_l, "book"),
    _Rule("standard", "standard 1/sqrt(d)", "Vaswani et al. 2017", _standard, absolute=True),
    _Rule(
        "gradient",
        {
            "dot": "gradient (Gaussian mean field)",
            "dot causal": "gradient, causal (Gaussian mean field)",
            "cosine": "gradient (cosine mean field)",
            "cosine causal": "gradient (cosine mean field), causal",
        },
        {
            "dot": "Su 2023 (9812)",
            "dot causal": "book ch. decoders",
            "cosine": "Su 2023 (9812)",
            "cosine causal": "book ch. decoders",
        },
        _gradient,
        kind="criterion",
        absolute=True,
    ),
    _Rule(
        "base 512",
        "entropy-invariant log_512(n)",
        "Su 2021 (8823), base 512",
        _entropy_invariant_512,
        lambda s: s.train_length is None and not s.contrastive,  # a length rule for attention, not a loss
        absolute=True,
    ),
    _Rule(
        "entropy-invariant",
        "entropy-invariant log_{L:g}(n)",
        "Su 2021 (8823)",
        _entropy_invariant,
        _with_length,
    ),
    _Rule("qwen", "Qwen log_L(n) (queries, n > L only)", "Bai et al. 2023", _qwen, _with_length),
    _Rule("yarn", "YaRN mscale(n/L)^2, with its RoPE", "Peng et al. 2023", _yarn, _with_length),
    _Rule("longrope", "LongRoPE 1+ln(n/L)/ln L, with its RoPE", "Ding et al. 2024", _longrope, _with_length),
    _Rule("infoscale", "InfoScale sqrt((1-n^-2/d)/(1-L^-2/d))", "Li et al. 2025", _infoscale, _with_length),
    _Rule("llama4", "Llama 4 (NoPE layers), f(n)", "Meta 2025", _llama4, _with_length),
    _Rule(
        "sqrt",
        "sqrt rule sqrt(1 + 2 ln(n/L)/a_L^2)",
        "ch. entropy-invariance",
        _sqrt_rule,
        _with_length,
        "criterion",
    ),
    _Rule(
        "qknorm",
        "QK-norm initial g = log2(L^2 - L) on cos",
        "Henry et al. 2020",
        _qknorm,
        lambda s: s.train_length is not None and s.scores == "cosine",
        "initial",
        absolute=True,
    ),
    _Rule("exact", _EXACT_NAME, "ch. recipes", _exact_match, _with_length, "criterion"),
)


def page_words() -> dict:
    """Every word of the calculator, for the page (``book/_ext/calculator_table.py`` writes it).

    Returns
    -------
    dict
        ``rules``: the rows in order, each ``{"key", "name", "source"}`` (a
        template, or templates by variant), its group (``kind``) and whether
        it is ``absolute``; ``notes``: ``NOTES``; ``table``, ``groups``,
        ``errors``, ``syntax``, ``fields``: ``TABLE``, ``GROUPS``, ``ERRORS``,
        ``NUMBER_SYNTAX``, ``FIELDS``; ``answers``: which rows state which of
        the book's answers, how sure it is and how to use them
        (``attnscale.practice.advice``).
    """
    rules = [
        {"key": r.key, "name": r.criterion, "source": r.source, "kind": r.kind, "absolute": r.absolute}
        for r in RULES
    ]
    return {
        "rules": rules,
        "notes": dict(NOTES),
        "table": dict(TABLE),
        "groups": list(GROUPS),
        "errors": dict(ERRORS),
        "syntax": NUMBER_SYNTAX,
        "fields": dict(FIELDS),
        "answers": {
            "rows": advice.CALCULATOR_ROWS,
            "confidence": advice.CONFIDENCE,
            "how": advice.CALCULATOR_HOW,
            "ntk": advice.CALCULATOR_NTK,
            "contrastive": [
                min(advice.contrastive_ratios().values()),
                max(advice.contrastive_ratios().values()),
            ],
            "tested": advice.LENGTH_TESTED_RATIO,
        },
    }


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
    factor = None
    # with a training length: a length rule's own factor, exactly (the standard scale's 1), or its
    # scale over alpha_L; none for a rule that sets the scale itself
    if setting.factors:
        if outcome.factor is not None:
            factor = outcome.factor
        elif not rule.absolute:
            factor = unit / setting.alpha_l
    absolute = rule.absolute and factor is None
    return ScaleEntry(name, raw, unit, source, factor, key=rule.key, absolute=absolute), outcome.notes


def recommend_scale(
    d, n, scores="dot", causal=False, train_length=None, head_entropy=None, head_scale=None, contrastive=False
):
    r"""Every criterion's scale for one setting (the book's scale calculator).

    The length rules multiply the head's scale at the training length,
    :math:`\alpha_L`: measured (``head_scale``, or ``head_entropy`` converted
    by ``head_scale_from_entropy``), or, without a measurement, the
    default :math:`\alpha_L = 1` (unit-variance scores at the standard
    scale), which the notes state.

    With a training length each row also gives the factor to put on the
    head's *trained* logits, which already carry :math:`\alpha_L` (a length
    rule's factor exactly, e.g. Qwen's :math:`\log_L n`; the standard
    scale's 1; any other row's scale divided by :math:`\alpha_L`; none for
    a rule that sets the scale itself).  The row or rows that
    :func:`attnscale.answers` recommends for the setting
    (``attnscale.practice.advice.calculator_answer``) come first, marked
    ``group="answer"``; then the published rules; then the book's criteria.

    The rows are the table ``attnscale.practice.calculator.RULES``: each rule is a small
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
        Head dimension, ``2 <= d <= 1e6``.
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
        score, ``0 < head_scale <= 1e6``.  Needs ``train_length``; not with ``head_entropy``.
    contrastive : bool, optional
        A contrastive loss over ``n`` candidates by cosine similarity (its
        answer, an order of magnitude, is the gradient row); needs
        ``scores="cosine"``, not with ``causal`` or ``train_length``.

    Returns
    -------
    Recommendation
        A frozen record; ``print`` it for a table.

    Raises
    ------
    ValueError
        ``d`` outside ``[2, 1e6]``, ``n`` or ``train_length`` outside ``[2, 1e15]``, an unknown
        ``scores``, non-finite values, a measurement without ``train_length``,
        both measurements at once, a measured entropy that no head of the
        score law has at scales the exact expectation covers, or
        ``contrastive`` with ``causal``, ``train_length`` or dot-product scores.
    TypeError
        Non-numeric arguments, or a non-boolean ``causal`` or ``contrastive``.

    See Also
    --------
    attnscale.answers : what the book recommends, the one source of the marked rows.
    attnscale.head_scale_from_entropy : alpha_L from a measured entropy.

    Examples
    --------
    A head trained at 4096 keys with mean entropy 5.5 nats, run at 32768:
    Qwen's factor on its trained logits is :math:`\log_{4096} 32768 = 1.25`.

    >>> rec = recommend_scale(128, 32768, train_length=4096, head_entropy=5.5)
    >>> rec.answer, [e.criterion for e in rec.recommended]
    ('length', ['YaRN mscale(n/L)^2, with its RoPE'])
    >>> qwen = next(e for e in rec.entries if e.key == "qwen")
    >>> round(qwen.factor, 4)
    1.25

    A model trained at the standard scale keeps it: factor 1 on its trained logits.

    >>> next(e for e in rec.entries if e.key == "standard").factor
    1.0
    """
    d = _number(d, "d", 2.0, MAX_D, " (the head dimension)")
    n = _number(n, "n", 2.0, MAX_KEYS, " (at least two keys)")
    if not isinstance(scores, str) or scores not in ("dot", "cosine"):
        raise ValueError(f"scores must be 'dot' or 'cosine', got {scores!r}")
    for name, flag in (("causal", causal), ("contrastive", contrastive)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {type(flag).__name__}")
    if train_length is not None:
        train_length = _number(train_length, "train_length", 2.0, MAX_KEYS)
    if head_scale is not None:
        head_scale = _number(head_scale, "head_scale", 0.0, MAX_ALPHA)
    if head_entropy is not None:
        head_entropy = _scalar(head_entropy, "head_entropy")
    if head_entropy is not None and head_scale is not None:
        raise ValueError(ERRORS["both"])
    if (head_entropy is not None or head_scale is not None) and train_length is None:
        raise ValueError(ERRORS["needs L"])
    if contrastive and (causal or train_length is not None or scores != "cosine"):
        raise ValueError(ERRORS["contrastive"])

    law = "gaussian" if scores == "dot" else "cosine"
    notes = []
    if head_scale is not None:
        alpha_l = head_scale
        notes.append(_say("head scale", alpha=alpha_l, L=train_length))
    elif head_entropy is not None:
        alpha_l = _head_from_entropy(head_entropy, train_length, law, d)
        notes.append(_say("head entropy", entropy=head_entropy, L=train_length, alpha=alpha_l, law=law))
        if causal:
            notes.append(_say("head entropy causal"))
    else:
        alpha_l = 1.0
        if train_length is not None:
            notes.append(_say("no head"))

    if train_length is not None and n > train_length:
        tested = advice.LENGTH_TESTED_RATIO
        notes.append(_say("past L", tested=tested))
        if n / train_length > tested:
            notes.append(_say("past tested", ratio=n / train_length, tested=tested))
        if scores == "cosine":
            notes.append(_say("length cosine"))
        if causal:
            notes.append(_say("causal length"))
    measured = head_scale is not None or head_entropy is not None
    setting = _Setting(d, n, scores, bool(causal), train_length, alpha_l, bool(contrastive))
    answer = advice.calculator_answer(scores, bool(causal), n, train_length, bool(contrastive))
    entries = []
    for rule in RULES:
        if not rule.applies(setting):
            continue
        entry, rule_notes = _run(rule, setting)
        if entry is not None:
            group = "answer" if rule.key in advice.CALCULATOR_ROWS[answer] else rule.kind
            entries.append(dataclasses.replace(entry, group=group))
        notes.extend(note for note in rule_notes if note not in notes)
    entries.sort(key=lambda e: GROUPS.index(e.group))  # stable: the order of RULES within a group
    how = _how(answer, causal, entries, alpha_l, d, _ntk_words(d, n, train_length))
    return Recommendation(
        d,
        n,
        scores,
        bool(causal),
        train_length,
        alpha_l,
        tuple(entries),
        tuple(notes),
        answer,
        measured,
        how,
        bool(contrastive),
    )


def _ntk_words(d, n, train_length) -> str:
    """RoPE's base stretched for n keys, in words (``advice.CALCULATOR_NTK``), or "" without L.

    The factor on the base is :math:`(n/L)^{d/(d-2)}`
    (:func:`attnscale.practice.length_rules.ntk_rope_base`); its number is printed
    for ``d > 2`` where ``exp`` of its logarithm does not overflow (the page
    decides the same way).
    """
    if train_length is None:
        return ""
    words = advice.CALCULATOR_NTK
    if d > 2:
        log_value = d / (d - 2) * np.log(max(n / train_length, 1.0))
        if log_value < 700:
            return words["value"].format(value=float(np.exp(log_value)), d=d)
    return words["formula"]


def _how(answer, causal, entries, alpha_l, d, ntk="") -> str:
    """How to use the marked row, from the book's answer, with the row's numbers filled in (or "").

    The template is ``advice.CALCULATOR_HOW[answer + " causal"]`` for a
    causal setting where there is one, else ``[answer]``; its fields are the
    row's ``factor`` on the trained logits, its ``scale`` on the raw score,
    ``ntk``, the stretched RoPE base in words (:func:`_ntk_words`), ``root``
    (:math:`\\sqrt d`) and, for a contrastive loss, the search range
    ``low`` to ``high``: the row's scale times the smallest and largest
    ratio of ``advice.contrastive_ratios`` (``low_ratio``, ``high_ratio``).
    """
    how = advice.CALCULATOR_HOW
    template = how.get(f"{answer} causal") if causal else None
    template = template or how.get(answer)
    marked = [e for e in entries if e.group == "answer"]
    if template is None or not marked:
        return ""
    factor = marked[0].factor if marked[0].factor is not None else marked[0].unit_scale / alpha_l
    ratios = advice.contrastive_ratios().values()
    low_ratio, high_ratio = min(ratios), max(ratios)
    scale = marked[0].scale
    return template.format(
        factor=factor,
        scale=scale,
        ntk=ntk,
        root=float(np.sqrt(d)),
        low=scale * low_ratio,
        high=scale * high_ratio,
        low_ratio=low_ratio,
        high_ratio=high_ratio,
    )


def _head_from_entropy(head_entropy, train_length, law, d):
    """alpha_L of a measured entropy, with the calculator's errors naming head_entropy."""
    if train_length > _EXACT_MAX_KEYS:
        raise ValueError(ERRORS["entropy L"].format(top=_EXACT_MAX_KEYS))
    if not 0.0 < head_entropy < np.log(train_length):
        raise ValueError(
            ERRORS["entropy range"].format(log_l=np.log(train_length), L=train_length, value=head_entropy)
        )
    try:
        return head_scale_from_entropy(head_entropy, train_length, law, d)
    except _OutOfReach as error:
        raise ValueError(ERRORS["entropy reach"].format(value=head_entropy, **error.values)) from None
