r"""The scale calculator: every rule of chapter *Recipes* applied to one setting.

``recommend_scale`` (also ``python -m attnscale scale``) applies the
published rules of ``attnscale.recipes`` and the book's criteria to one
setting, starting from the head's scale at the training length: measured
(its mean attention entropy, or its scale) or, without a measurement, the
stated default :math:`\alpha_L = 1`.  Its rows are the table ``RULES``: one
entry per rule, each a small function of the setting that returns a scale
or a note, run on its own so that no rule can stop the others.

``book/_static/calculator.js`` mirrors this module on the recipes page.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import _validate
from .cosine import cosine_alpha_star
from .decoder import best_causal_scale
from .gaussian import gaussian_alpha_star
from .recipes import (
    _expected_entropy,
    _law,
    _OUT_OF_REACH,
    _OutOfReach,
    _scalar,
    _solve_entropy,
    head_scale_from_entropy,
    infoscale_factor,
    llama4_attention_scale,
    longrope_attention_factor,
    qknorm_initial_scale,
    yarn_mscale,
)

__all__ = ["MAX_KEYS", "NOTES", "RULES", "Recommendation", "ScaleEntry", "page_words", "recommend_scale"]


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


# --- the words: every name, source and note, once -----------------------------------------------
# Templates for str.format (the page fills them with the same format specs,
# ``book/_static/calculator-format.js``); the build writes them into the
# page's data (``page_words``), so the page prints the words typed here.

#: The notes, by key.
NOTES = {
    "causal": (
        "causal: the best fixed scale is alpha*(n = {n_ref:.4g}), the optimum for that many keys; "
        "it keeps {share:.1%} of each position's best mean-field gradient on average over "
        "positions 2 .. {n:g}"
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
    "base 512": "give train_length (--train-length) to add the length rules",
    "yarn dynamic": (
        "YaRN dynamic row: the YaRN repository's dynamic rotary embedding with finetuned=False "
        "(factor 1 up to L, then mscale(n/L)^2); finetuned=True starts at mscale(s)^2 for its "
        "fine-tuned window sL, as static YaRN does"
    ),
    "yarn static": (
        "static YaRN and LongRoPE apply one constant, set by the configured window, at every length; "
        "the rows above assume the window is n"
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
    "head scale": "head measured: alpha_L = {alpha:.4g} at L = {L:g}",
    "head entropy": (
        "head measured: entropy {entropy:.4g} nats at L = {L:g}, "
        "i.e. alpha_L = {alpha:.4g} for {law} scores (exact expectation)"
    ),
    "no head": (
        "no measured head: assumes alpha_L = 1 (unit-variance scores at the standard "
        "scale); give head_entropy (--head-entropy) or head_scale (--head-scale)"
    ),
    "past L": (
        "the length rules say what keeps a head's entropy, not its loss: in the book's language model "
        "(ch. language-model) no rule applied only at test carried a model far past L; keep the trained "
        "scale, or train with the rule you will use, and measure"
    ),
}


def _say(key, **values) -> str:
    """The note ``key`` with its numbers filled in."""
    return NOTES[key].format(**values)


def _variant(s) -> str:
    """Which words a rule with several uses: ``"dot"``, ``"dot causal"``, ``"cosine"``, ``"cosine causal"``."""
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

    def name(self, setting: _Setting) -> str:
        return _fill(self.criterion, setting)

    def source_of(self, setting: _Setting) -> str:
        return _fill(self.source, setting)


def _with_length(s: _Setting) -> bool:
    return s.train_length is not None


# --- the rules, one small function each ---------------------------------------------------------


def _standard(s):
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


def _entropy_invariant(s):
    return _scale(s.alpha_l * np.log(s.n) / np.log(s.train_length))


def _qwen(s):
    return _scale(s.alpha_l * max(1.0, np.log(s.n) / np.log(s.train_length)))


def _yarn(s):
    factor = float(yarn_mscale(max(s.n / s.train_length, 1.0))) ** 2
    return _scale(s.alpha_l * factor, _say("yarn dynamic"), _say("yarn static"))


def _longrope(s):
    factor = float(longrope_attention_factor(max(s.n / s.train_length, 1.0), s.train_length)) ** 2
    return _scale(s.alpha_l * factor)


def _infoscale(s):
    return _scale(s.alpha_l * float(infoscale_factor(s.n, s.d, s.train_length)))


def _llama4(s):
    return _scale(s.alpha_l * float(llama4_attention_scale(s.n)), _say("llama4"))


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
    target = _expected_entropy(s.alpha_l, s.train_length, s.law, s.d)
    if target >= np.log(s.n):
        return _note(_say("exact none", target=target, log_n=np.log(s.n)))
    try:
        return _scale(_solve_entropy(target, s.n, s.law, s.d))
    except _OutOfReach as error:
        return _note(_say("exact reach", name=name, **error.values))


#: The calculator's rows, in the order they print.  A new rule is one entry
#: (and, for the page, its arithmetic under the same key in ``calculator-rules.js``).
RULES: tuple[_Rule, ...] = (
    _Rule("standard", "standard 1/sqrt(d)", "Vaswani et al. 2017", _standard),
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
            "cosine causal": "Su 2023 (9812)",
        },
        _gradient,
    ),
    _Rule(
        "base 512",
        "entropy-invariant log_512(n)",
        "Su 2021 (8823), base 512",
        _entropy_invariant_512,
        lambda s: s.train_length is None,
    ),
    _Rule("entropy-invariant", "entropy-invariant a_L*log_{L:g}(n)", "Su 2021 (8823)", _entropy_invariant, _with_length),
    _Rule("qwen", "Qwen logn (queries, n > L only)", "Bai et al. 2023", _qwen, _with_length),
    _Rule("yarn", "YaRN dynamic, mscale(n/L)^2", "Peng et al. 2023", _yarn, _with_length),
    _Rule("longrope", "LongRoPE, window n: 1+ln(n/L)/ln L", "Ding et al. 2024", _longrope, _with_length),
    _Rule("infoscale", "InfoScale", "Li et al. 2025", _infoscale, _with_length),
    _Rule("llama4", "Llama 4 (NoPE layers), f(n)", "Meta 2025", _llama4, _with_length),
    _Rule("sqrt", "sqrt rule sqrt(a_L^2 + 2 ln(n/L))", "ch. entropy-invariance", _sqrt_rule, _with_length),
    _Rule(
        "qknorm",
        "QK-norm initial g = log2(L^2 - L)",
        "Henry et al. 2020",
        _qknorm,
        lambda s: s.train_length is not None and s.scores == "cosine",
    ),
    _Rule("exact", _EXACT_NAME, "ch. recipes", _exact_match, _with_length),
)


def page_words() -> dict:
    """Every word of the calculator, for the page (``book/_ext/calculator_table.py`` writes it).

    Returns
    -------
    dict
        ``rules``: the rows in order, each ``{"key", "name", "source"}`` (a
        template, or templates by variant); ``notes``: ``NOTES``.
    """
    rules = [{"key": r.key, "name": r.criterion, "source": r.source} for r in RULES]
    return {"rules": rules, "notes": dict(NOTES)}


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

    The rows are the table ``attnscale.calculator.RULES``: each rule is a small
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
        notes.append(_say("head scale", alpha=alpha_l, L=train_length))
    elif head_entropy is not None:
        alpha_l = _head_from_entropy(head_entropy, train_length, law, d)
        notes.append(_say("head entropy", entropy=head_entropy, L=train_length, alpha=alpha_l, law=law))
    else:
        alpha_l = 1.0
        if train_length is not None:
            notes.append(_say("no head"))

    if train_length is not None and n > train_length:
        notes.append(_say("past L"))
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
