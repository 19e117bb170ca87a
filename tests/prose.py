"""The reading load of the built book: prose words and long sentences per page.

Prose is what a reader reads outside code cells: paragraphs, list items,
definition lists, and the captions of figures and tables.  Code inputs,
printed outputs and the cells of tables are not prose.  An inline formula
counts as one word.  A sentence ends at ".", "!" or "?" followed by a space
and a capital letter or an opening bracket.

Used by ``tests/test_reading.py`` (the limits of the second edition) and by
``benchmarks/prose.py`` (the table before and after an edit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup

#: Elements whose text is prose; nested ones are counted once (the outermost).
PROSE = ("p", "li", "dt", "dd", "figcaption", "caption")
#: Containers whose text is not prose: code cells (input and output), code blocks, tables' bodies.
NOT_PROSE = ("cell_input", "cell_output", "highlight", "output")
WORD = re.compile(r"[A-Za-z0-9][\w'’.,%-]*")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
LONG_SENTENCE = 40


@dataclass(frozen=True)
class PageProse:
    """The prose of one page: its words, and its sentences over ``LONG_SENTENCE`` words."""

    page: str
    words: int
    long_sentences: tuple[str, ...]


def _skipped(tag) -> bool:
    for parent in [tag, *tag.parents]:
        if parent.name in ("pre", "script", "style", "table", "nav", "header", "footer"):
            if parent.name == "table" and tag.name == "caption":
                continue
            return True
        classes = parent.get("class") or []
        if (
            any(c in NOT_PROSE for c in classes)
            or "bd-sidebar-primary" in classes
            or "prev-next-area" in classes
        ):
            return True
    return False


def prose_blocks(html: str) -> list[str]:
    """The prose texts of a built page's article, in order, formulas as ``x``."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup
    for math in article.select("span.math, div.math, mjx-container"):
        math.replace_with(" x " if math.name == "span" else " ")
    for hidden in article.select(".visually-hidden, .headerlink, .toggle-details__summary"):
        hidden.decompose()
    blocks = []
    for tag in article.find_all(PROSE):
        if _skipped(tag) or any(p.name in PROSE for p in tag.parents):
            continue
        text = " ".join(tag.get_text(" ").split())
        if text:
            blocks.append(text)
    return blocks


def words(text: str) -> int:
    return len(WORD.findall(text))


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text) if s.strip()]


def page_prose(path: Path, page: str | None = None) -> PageProse:
    """Words and long sentences of the built page ``path`` (an HTML file)."""
    blocks = prose_blocks(path.read_text(encoding="utf-8"))
    long = tuple(s for b in blocks for s in sentences(b) if words(s) > LONG_SENTENCE)
    return PageProse(page or path.stem, sum(words(b) for b in blocks), long)
