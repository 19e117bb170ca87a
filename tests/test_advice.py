"""What the book recommends is said once (attnscale.answers) and glued everywhere it is said."""

from __future__ import annotations

import re

import pytest
from bookbuild import ROOT

import attnscale as at
from attnscale.practice.advice import calculator_answer

ANSWERS = at.answers()


def _take_away(chapter: str) -> str:
    text = (ROOT / "book" / f"{chapter}.md").read_text()
    start = text.index("## What to take away")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_the_answers_table_shows_every_answer():
    intro = (ROOT / "book" / "intro.md").read_text()
    for key in ANSWERS:
        for field in ("setting", "use", "sure", "where"):
            cell = f"{{glue:md}}`answer_{key}_{field}:myst`"
            assert cell in intro, f"the answers table lacks {key}/{field}"
    assert "at.answers(" in intro


@pytest.mark.parametrize(
    "key, chapter", [(key, chapter) for key, answer in ANSWERS.items() for chapter in answer.chapters]
)
def test_chapters_state_the_same_answer(key, chapter):
    """The take-away glues the answer's recommendation from the same function.

    Or it links the answers table and glues no advice at all (issue 38).
    """
    text = (ROOT / "book" / f"{chapter}.md").read_text()
    role = f"{{glue:md}}`advice_{key}:myst`"
    take_away = _take_away(chapter)
    if role not in take_away:
        linked = "<answers>`" in take_away or "{ref}`answers`" in take_away
        assert linked, f"{chapter}: no advice_{key} in its take-away nor answers link"
        if f'"advice_{key}"' not in text:
            return  # the take-away defers to the answers table and glues no advice of its own (issue 38)
    # a glued answer is displayed in the page's prose, not only glued (issue 39: a glue never shown
    # let a chapter type its own advice)
    assert role in text, f"{chapter}: advice_{key} is glued but never displayed"
    # wherever the chapter glues this answer, it comes from at.answers
    glued = re.search(rf'glue\(\s*"advice_{key}",\s*Markdown\((\w+)\["{key}"\]\.recommendation\)', text)
    assert glued, f'{chapter}: advice_{key} is not glued as Markdown(<answers>["{key}"].recommendation)'
    source = re.search(rf"{glued.group(1)} = at\.answers\(", text)
    assert source, f"{chapter}: the answers do not come from at.answers"


def test_answers_are_computed_not_typed():
    """Different settings give different numbers: the text is computed."""
    a, b = at.answers(n=512), at.answers(n=4096)
    assert a["cosine"].reason != b["cosine"].reason
    assert a["dot"].recommendation == b["dot"].recommendation  # the advice itself does not depend on n
    assert at.answers(context=2048)["decoder"].reason != at.answers(context=4096)["decoder"].reason


@pytest.mark.parametrize(
    ("bad", "error"), [({"n": 1}, ValueError), ({"d": 1.5}, TypeError), ({"context": True}, TypeError)]
)
def test_answers_refuse_bad_settings(bad, error):
    with pytest.raises(error, match=next(iter(bad))):
        at.answers(**bad)


def test_every_answer_has_a_level_and_a_short_reason():
    """The front door's "how sure" cells: high, medium or low, then one reason (the detail is linked)."""
    for answer in ANSWERS.values():
        assert answer.confidence in ("high", "medium", "low")
        assert answer.sure.startswith(f"**{answer.confidence}**: ")
        assert not answer.reason.startswith(("high", "medium", "low"))
        if answer.key != "length":  # the lead rewrites the length row from a new experiment
            assert len(answer.reason) < 300, (answer.key, len(answer.reason))


def test_the_decoder_answer_cites_the_test_it_rests_on():
    assert "sec-training-tuned" in ANSWERS["decoder"].derived_in
    assert ANSWERS["decoder"].confidence == "medium"


def test_the_contrastive_answer_is_an_order_of_magnitude():
    """One significant figure, not three, from an order-of-magnitude argument; and the result it rests on."""
    use = ANSWERS["contrastive"].recommendation
    assert re.search(r"about \$\d0?\$", use) and "0.023" not in use and "43.2" not in use
    assert "sec-cosine-practice" in ANSWERS["contrastive"].derived_in


def test_the_calculator_rows_are_answers():
    """Each setting of the calculator maps to one answer, whose rows it marks."""
    assert calculator_answer("dot", False, 32768, 4096) == "length"
    assert calculator_answer("dot", True, 4096, None) == "decoder"
    assert calculator_answer("cosine", False, 4096, 4096) == "cosine"
    assert calculator_answer("dot", False, 100, None) == "dot"
    for answer in ANSWERS.values():
        assert answer.rows


def test_readme_opens_with_the_answers_and_their_levels():
    """README's first lines say what the book recommends, at the confidence attnscale.answers gives."""
    readme = (ROOT / "README.md").read_text().split("## Quick start")[0]
    labels = {
        "dot": "dot-product attention",
        "cosine": "QK-normalized attention",
        "decoder": "decoders",
        "contrastive": "contrastive losses",
        "length": "past the training length",
    }
    from attnscale.practice import advice

    low, high = advice.LENGTH_FINETUNE["yarn_gain"]  # the verdict's numbers, as the README gives them
    assert f"added {low:.2f}–{high:.2f} of accuracy" in readme
    assert f"never more than {advice.PI_FACTOR['behind']:.2f} behind" in readme
    for key, label in labels.items():
        start = readme.index(f"- **{label}:**")
        end = readme.find("\n- ", start + 1)
        assert f"({ANSWERS[key].confidence}" in readme[start : end if end > 0 else None], key


def test_the_carry_law_clause_states_a_non_rejection_as_one():
    """Issue 39: the length verdict's clause on the law over L is computed from the fit it is given."""
    from attnscale.practice import advice

    clause = advice.carry_law_clause(**advice.CARRY_LAW)
    assert clause in advice.LENGTH_VERDICT
    assert "did not reject" in clause and "from 32 to 128" in clause
    far = advice.CARRY_LAW["c_drift"] + advice.CARRY_LAW["c_half"]
    assert f"up to {far:.2g}" in clause  # the interval's far end, not a typed number
    drifting = advice.carry_law_clause((32, 64), -0.05, 0.01)
    assert "did not reject" not in drifting and "−0.050 ± 0.010" in drifting
    for bad, error, name in (
        (dict(train_lengths="32", c_drift=0.0, c_half=0.01), TypeError, "train_lengths"),
        (dict(train_lengths=(32,), c_drift=0.0, c_half=0.01), ValueError, "train_lengths"),
        (dict(train_lengths=(32, 1.5), c_drift=0.0, c_half=0.01), TypeError, "train_lengths"),
        (dict(train_lengths=(32, 64), c_drift=float("nan"), c_half=0.01), ValueError, "c_drift"),
        (dict(train_lengths=(32, 64), c_drift=0.0, c_half=0.0), ValueError, "c_half"),
    ):
        with pytest.raises(error, match=name):
            advice.carry_law_clause(**bad)


def _words(text: str) -> int:
    """Words of a cell as the reader sees them: a formula or a cross-reference is one word."""
    text = re.sub(r"\$[^$]*\$", "F", text)
    text = re.sub(r"\{\w+(?::\w+)?\}`[^`]*`", "R", text)
    return len(text.split())


def test_answers_table_cells_fit_on_one_screen():
    """Issue 39: every use and how-sure cell of the answers table is at most 25 words."""
    assert _words("with $\\log_L n$ on {ref}`the table <answers>`") == 4
    for answer in ANSWERS.values():
        for cell in (answer.recommendation, answer.sure):
            assert _words(cell) <= 25, (answer.key, _words(cell), cell)


def test_the_length_row_says_what_was_tested():
    """Issue 39: the row credits YaRN's logit factor, names the reference base, says the RoPE carry
    is untested, and states the fine-tune the sweep ran; the calculator's note agrees."""
    from attnscale.practice import advice
    from attnscale.practice.calculator import NOTES

    row, verdict = ANSWERS["length"], advice.LENGTH_VERDICT
    assert "logit factor" in row.recommendation and "$4L$" in row.recommendation
    assert "base-$10^4$" in row.sure and "untested" in row.sure
    assert "briefly" not in verdict and "target length" not in verdict
    assert "lead was its logit factor" in verdict and "untested" in verdict
    assert "the one piece of evidence for the carry" not in verdict  # a NoPE result, not the RoPE carry
    share = f"{100 * advice.LENGTH_FINETUNE['token_share']:.0f}% of the training tokens"
    assert share in verdict and share in advice.CALCULATOR_HOW["length"] and share in NOTES["past L"]
    assert "base 1e4" in NOTES["past L"] and "untested" in NOTES["past L"]
