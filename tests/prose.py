"""The reading load of the built book: prose words and long sentences per page.

Prose is what a reader reads outside code cells: paragraphs, list items,
definition lists, and the captions of figures and tables.  Code inputs,
printed outputs and the cells of tables are not prose.  An inline formula
counts as one word.  A sentence ends at ".", "!" or "?" followed by a space
and a capital letter or an opening bracket, except after an abbreviation
("et al.", "e.g.", "i.e.", "cf.", "vs.").

Each list item is a block of its own: a nested list is measured item by item,
never joined to the item that holds it.  A long sentence inside a list item
is reported apart (``long_list_sentences``): the reading path allows it there,
in a displayed list, and nowhere else.

Used by ``tests/test_reading.py`` (the limits of the second edition) and by
``benchmarks/prose.py`` (the table before and after an edit).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup

#: Elements whose text is prose; nested ones are counted once (the outermost).
PROSE = ("p", "li", "dt", "dd", "figcaption", "caption")
#: Containers whose text is not prose: code cells (input and output), code blocks, tables' bodies.
NOT_PROSE = ("cell_input", "cell_output", "highlight", "output")
WORD = re.compile(r"[A-Za-z0-9][\w'’.,%-]*")
SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\bal\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bcf\.)(?<!\bvs\.)\s+(?=[A-Z(\[])"
)
LONG_SENTENCE = 40
#: Lists, whose items are measured one by one.
LISTS = ("ul", "ol", "dl")
#: The reading path's limits (issue 38, the second edition).
MAX_READING_WORDS = 25_000
MAX_PAGE_WORDS = 2_500


@dataclass(frozen=True)
class PageProse:
    """The prose of one page: its words, and its sentences over ``LONG_SENTENCE`` words.

    ``long_sentences`` are outside list items, ``long_list_sentences`` inside one.
    """

    page: str
    words: int
    long_sentences: tuple[str, ...]
    long_list_sentences: tuple[str, ...] = ()


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


def _held(tag) -> bool:
    """Whether ``tag`` is part of an enclosing prose element's text (no list in between)."""
    for parent in tag.parents:
        if parent.name in LISTS:
            return False
        if parent.name in PROSE:
            return True
    return False


def _own_text(tag) -> str:
    """``tag``'s text without the lists nested in it (they are blocks of their own)."""
    if tag.find(LISTS) is None:
        return " ".join(tag.get_text(" ").split())
    tag = copy.copy(tag)
    for nested in tag.find_all(LISTS):
        nested.decompose()
    return " ".join(tag.get_text(" ").split())


def prose_items(html: str) -> list[tuple[str, bool]]:
    """(text, inside a list item) for each prose block of a built page's article, in order.

    Formulas are ``x``.  An element inside another prose element is part of
    its text, unless a list lies between them: each item of a nested list is
    a block of its own.
    """
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup
    for math in article.select("span.math, div.math, mjx-container"):
        math.replace_with(" x " if math.name == "span" else " ")
    for hidden in article.select(".visually-hidden, .headerlink, .toggle-details__summary"):
        hidden.decompose()
    blocks = []
    for tag in article.find_all(PROSE):
        if _skipped(tag):
            continue
        if _held(tag):
            continue
        text = _own_text(tag)
        if text:
            blocks.append((text, tag.name == "li" or tag.find_parent("li") is not None))
    return blocks


def prose_blocks(html: str) -> list[str]:
    """The prose texts of a built page's article, in order, formulas as ``x``."""
    return [text for text, _ in prose_items(html)]


def words(text: str) -> int:
    return len(WORD.findall(text))


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text) if s.strip()]


def page_prose(path: Path, page: str | None = None) -> PageProse:
    """Words and long sentences of the built page ``path`` (an HTML file)."""
    items = prose_items(path.read_text(encoding="utf-8"))
    long = {True: [], False: []}
    for text, in_list in items:
        long[in_list] += [s for s in sentences(text) if words(s) > LONG_SENTENCE]
    total = sum(words(text) for text, _ in items)
    return PageProse(page or path.stem, total, tuple(long[False]), tuple(long[True]))


def reading_path(toc_path: Path) -> list[str]:
    """The reading path: the landing page and every page of a part whose caption
    does not start with "Appendices", in the order of ``_toc.yml``."""
    import yaml

    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        if not part["caption"].startswith("Appendices"):
            pages += [entry["file"] for entry in part.get("chapters", [])]
    return pages


def reading_path_faults(html: Path, pages: list[str]) -> list[str]:
    """What breaks the reading path's limits in the built HTML folder ``html``.

    The limits: at most ``MAX_READING_WORDS`` words of prose in all, at most
    ``MAX_PAGE_WORDS`` on a page, and no sentence over ``LONG_SENTENCE`` words
    outside a list item.  An empty list means the limits hold.
    """
    faults, total = [], 0
    for page in pages:
        prose = page_prose(html / f"{page}.html", page)
        total += prose.words
        if prose.words > MAX_PAGE_WORDS:
            faults.append(f"{page}: {prose.words} words of prose (at most {MAX_PAGE_WORDS:,})")
        faults += [f"{page}: a sentence of {words(s)} words: {s}" for s in prose.long_sentences]
    if total > MAX_READING_WORDS:
        faults.append(f"reading path: {total} words of prose (at most {MAX_READING_WORDS:,})")
    return faults
