"""What the book recommends is said once (attnscale.answers) and glued everywhere it is said."""

from __future__ import annotations

import re

import pytest
from bookbuild import ROOT

import attnscale as at

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
    """The chapter's take-away glues the answer's recommendation from the same function."""
    text = (ROOT / "book" / f"{chapter}.md").read_text()
    role = f"{{glue:md}}`advice_{key}:myst`"
    assert role in _take_away(chapter), f"{chapter}: no advice_{key} in its take-away"
    glued = re.search(rf'glue\(\s*"advice_{key}",\s*Markdown\((\w+)\["{key}"\]\.recommendation\)', text)
    assert glued, f'{chapter}: advice_{key} is not glued as Markdown(<answers>["{key}"].recommendation)'
    source = re.search(rf"{glued.group(1)} = at\.answers\(", text)
    assert source, f"{chapter}: the answers do not come from at.answers"


def test_answers_are_computed_not_typed():
    """Different settings give different numbers: the text is computed."""
    a, b = at.answers(n=512), at.answers(n=4096)
    assert a["cosine"].confidence != b["cosine"].confidence
    assert a["dot"].recommendation == b["dot"].recommendation  # the advice itself does not depend on n
    assert at.answers(context=2048)["decoder"].confidence != at.answers(context=4096)["decoder"].confidence


@pytest.mark.parametrize(
    ("bad", "error"), [({"n": 1}, ValueError), ({"d": 1.5}, TypeError), ({"context": True}, TypeError)]
)
def test_answers_refuse_bad_settings(bad, error):
    with pytest.raises(error, match=next(iter(bad))):
        at.answers(**bad)
