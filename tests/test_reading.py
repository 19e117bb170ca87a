"""The book as a reader gets it, without a browser: printed lines that fit,
vector figures with alt text, downloads that read in plain Jupyter, an
author–year bibliography, and an answers table with no typed numbers.

The browser-side checks (page width, folded code, axe-core) are in
tests/test_browser.py.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from bookbuild import ROOT, load_extension, toc_files
from prose import prose_items, reading_path, reading_path_faults, sentences, words

pytestmark = pytest.mark.book

MAX_COLUMNS = 88
#: Outputs shown in a richer form than their plain text (which is then not shown).
RICH = ("text/html", "text/markdown", "text/latex", "image/svg+xml", "image/png")
CHAPTERS = [page for page in toc_files() if (ROOT / f"{page}.md").read_text().startswith("---\njupytext:")]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _download(html: Path, page: str) -> dict:
    path = html / "_sources" / f"{page}.ipynb"
    assert path.exists(), f"no .ipynb download for {page}"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: Path(p).name)
def test_printed_lines_fit(built_book, page):
    """Every printed line (stream or plain-text result) is at most 88 columns."""
    _, html = built_book
    long = []
    for k, cell in enumerate(_download(html, page)["cells"]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                text = _text(output.get("text", ""))
            else:
                data = output.get("data", {})
                rich = any(kind in data for kind in RICH)
                text = "" if rich else _text(data.get("text/plain", ""))
            long += [(k, len(line), line[:60]) for line in text.splitlines() if len(line) > MAX_COLUMNS]
    assert long == [], f"{page}: lines over {MAX_COLUMNS} columns (cell, width, start): {long[:8]}"


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: Path(p).name)
def test_download_reads_in_jupyter(built_book, page):
    """The .ipynb download shows its figures and has no raw glue roles."""
    _, html = built_book
    notebook = _download(html, page)
    markdown = "\n".join(_text(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    assert "{glue" not in markdown, re.findall(r"\{glue[^`]*`[^`]*`", markdown)[:5]
    images = sum(
        1
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if any(kind.startswith("image/") for kind in output.get("data", {}))
    )
    glued = html.parent / "jupyter_execute" / f"{page}.glue.json"
    figures = 0
    if glued.exists():
        figures = sum(
            1 for v in json.loads(glued.read_text()).values() if "image/svg+xml" in v.get("data", {})
        )
    assert images >= figures, f"{page}: {figures} glued figures but {images} images in the download"


def test_intro_download_runs(built_book):
    """The landing page's download runs top to bottom in a fresh kernel."""
    import nbclient
    import nbformat

    _, html = built_book
    notebook = nbformat.reads(json.dumps(_download(html, "book/intro")), as_version=4)
    # a kernel on socket files of its own, as the build's (over TCP, kernels
    # starting at once in the test session can draw the same port)
    manager = load_extension("parallel_chapters").IPCKernelManager
    nbclient.NotebookClient(
        notebook, timeout=120, kernel_manager_class=manager, resources={"metadata": {"path": str(ROOT)}}
    ).execute()


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


@pytest.mark.parametrize("page", toc_files(), ids=lambda p: Path(p).name)
def test_figures_are_vector_with_alt_text(built_book, page):
    """Notebook figures are SVG, and every image has a text alternative that is not a path."""
    _, html = built_book
    parser = _Images()
    parser.feed((html / f"{page}.html").read_text(encoding="utf-8"))
    figures = [img for img in parser.images if "_images/" in img.get("src", "")]
    for img in figures:
        assert img["src"].endswith(".svg"), f"{page}: {img['src']} is a bitmap, not SVG"
        alt = img.get("alt", "")
        assert alt and not alt.endswith((".svg", ".png", ".pdf")) and "/" not in alt[:40], (
            f"{page}: {img['src']} has alt text {alt!r}"
        )


#: Figure widths in inches as the chapters and ``attnscale.support.figures`` draw them.
_FIGSIZE = re.compile(r"figsize=\(([\d.]+),")


def _figure_widths() -> list[float]:
    sources = [*sorted((ROOT / "book").glob("*.md")), *sorted((ROOT / "src" / "attnscale").rglob("*.py"))]
    return [float(w) for path in sources for w in _FIGSIZE.findall(path.read_text())]


def _style_sample(width: float) -> str:
    """An SVG drawn in the book style, ``width`` inches wide, with every kind of small glyph.

    Tick labels with exponents on base-2 and base-10 log axes (``2^6``,
    ``10^{-2}``), an axis label with a subscript, a title, a legend entry
    with a superscript and a text placed in the axes.
    """
    import io

    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    from attnscale.support import plotting

    plotting.use_book_style()
    fig, ax = plt.subplots(figsize=(width, 3.6))
    ax.plot([2**4, 2**12], [1e-3, 1e1], label=r"$\alpha^*(n)$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(r"length $n$, $\log_L n$")
    ax.set_ylabel("loss")
    ax.set_title("a panel")
    ax.text(2**5, 1e-2, "guessing")
    fig.legend(loc="outside lower center")
    out = io.StringIO()
    fig.savefig(out, format="svg")
    plt.close(fig)
    return out.getvalue()


def test_figure_style_is_legible():
    """Every glyph of a figure, scripts included, is >= 9 CSS px on a phone; text <= 16 px on a desktop.

    A phone 390 px wide shows a figure ``PHONE_FIGURE_PX`` (342) px wide; a
    desktop shows it at its natural width, 4/3 px a point.  A figure drawn
    at the widest width in the book, in the book style, must show its
    smallest glyph (a tick label's exponent, matplotlib's 0.7 of the tick
    size unless the style says otherwise) at >= 9 px on the phone: the
    style of 2026-12-05 (scripts 0.7 of 9.5 pt, figures up to 4.6 in) gave
    7.2 px there.  Its largest ordinary text stays <= 16 px on a desktop.
    The built book is measured page by page in tests/test_browser.py.
    Figures are vector in both routes: the chapters render SVG; the PDF
    build converts it (tests/test_pdf.py checks that no bitmap reaches the PDF).
    """
    from bookbuild import svg_glyph_size

    from attnscale.support import plotting

    widths = _figure_widths()
    assert len(widths) > 20, widths
    widest = max(widths)
    smallest, viewbox = svg_glyph_size(_style_sample(widest))
    assert viewbox == pytest.approx(72 * widest)
    phone = smallest * plotting.PHONE_FIGURE_PX / viewbox
    assert phone >= 9, f"smallest glyph {phone:.2f} px on a phone in a figure {widest} in wide"
    sizes = [v for k, v in plotting.BOOK_STYLE.items() if k.endswith(("size", "fontsize"))]
    assert max(sizes) * 4 / 3 <= 16, f"text of {max(sizes)} pt is {max(sizes) * 4 / 3:.1f} px on a desktop"
    # a figure no wider than the phone's column is shown at its natural width there
    assert 72 * widest * 4 / 3 >= plotting.PHONE_FIGURE_PX
    assert plotting.FIGURE_FORMATS == ("svg",)
    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert "sphinxcontrib.cairosvgconverter" in sphinx["extra_extensions"]
    assert ["latex", "image/svg+xml", 15] in sphinx["config"]["nb_mime_priority_overrides"]


def test_answers_table_has_no_typed_numbers():
    """Every cell of the landing page's answers table is glued from attnscale.answers, none typed."""
    source = (ROOT / "book" / "intro.md").read_text()
    table = source[source.index("(answers)=") :]
    table = table[: table.index("\n:::\n")]
    rows = [line for line in table.splitlines() if line.startswith("| {glue")]
    assert len(rows) == 5, "five settings expected in the answers table"
    for row in rows:
        bare = re.sub(r"\{glue:md\}`answer_[a-z]+_[a-z]+:myst`", "", row)
        assert set(bare) <= set("| "), f"a cell of the answers table that is not glued: {bare}"


def test_bibliography_is_author_year():
    """Author–year labels, unique; named authors; a link for every source that has one."""
    from pybtex.database import parse_file

    entries = parse_file(ROOT / "book" / "references.bib").entries
    no_link = {"scaledigest": "an unsigned web note whose address is unknown"}
    for key, entry in entries.items():
        persons = entry.persons.get("author", []) + entry.persons.get("editor", [])
        assert persons, f"{key} has no author"
        assert all("anonymous" not in str(p).lower() for p in persons), f"{key} is anonymous"
        month = entry.fields.get("month", "")
        assert not month.strip().isdigit(), f"{key}: month {month!r} prints as a number; use jan..dec"
        if key not in no_link:
            assert "url" in entry.fields or "doi" in entry.fields, f"{key} has neither url nor doi"


def test_bibliography_labels_are_unique(built_book):
    _, html = built_book
    page = (html / "book" / "bibliography.html").read_text(encoding="utf-8")
    bracket = r'<span class="fn-bracket">\[</span>(.*?)<span class="fn-bracket">'
    found = re.findall(r'<span class="label">' + bracket, page)
    labels = [re.sub(r"<[^>]+>", "", label) for label in found]
    assert labels, "no labelled entries in the bibliography"
    assert len(labels) == len(set(labels)), sorted(label for label in labels if labels.count(label) > 1)
    assert not any(label.isdigit() for label in labels), "numbered labels in an author-year bibliography"
    assert "Su 2021a" in labels and "Su 2021b" in labels
    assert not any("{" in label or "\\" in label for label in labels), "raw LaTeX in a label"


def test_printed_tables_are_tables(built_book):
    """A Markdown table printed by a cell renders as a table, not as rows of pipes."""
    _, html = built_book
    # a Markdown table's separator row left as text ("---" may come out as an em dash)
    raw = re.compile(r"\|\s*(?:-{3,}|\u2014|&#8212;)\s*\|")
    pages = sorted((html / "book").glob("*.html"))
    assert pages
    for page in pages:
        text = re.sub(r"<pre[^>]*>.*?</pre>", "", page.read_text(), flags=re.S)  # code may hold them
        text = re.sub(r"<[^>]+>", " ", text)
        assert not raw.search(text), f"{page.name}: a Markdown table shows as raw text"


def test_reading_path_prose_limits(built_book):
    """The reading path (landing page and Parts I-IV) holds the second edition's limits.

    At most 25,000 words of prose, at most 2,500 on a page, and no sentence
    over 40 words outside a displayed list item (``tests/prose.py`` counts).
    """
    _, html = built_book
    pages = reading_path(ROOT / "_toc.yml")
    assert "book/intro" in pages and "book/recipes" in pages and "book/api" not in pages
    faults = reading_path_faults(html, pages)
    assert faults == [], "\n".join(faults)


def _page(body: str) -> str:
    return f"<html><body><nav><p>{'menu ' * 50}.</p></nav><article>{body}</article></body></html>"


def _sentence(n: int) -> str:
    return "The " + " ".join(["word"] * (n - 2)) + " ends."


def test_prose_counter_on_a_snippet():
    """List items are measured one by one (a nested list is not joined to its
    item); code cells, tables and formulas are not prose; "et al." ends no sentence."""
    html = _page(
        "<p>Su et al. (2023) state it: $x$ <span class='math'>\\(a+b\\)</span> holds.</p>"
        f"<ul><li>{_sentence(30)}<ul><li>{_sentence(30)}</li><li>two words</li></ul></li></ul>"
        f"<div class='cell_input'><p>{_sentence(60)}</p></div>"
        f"<table><tr><td>{_sentence(60)}</td></tr></table>"
    )
    items = prose_items(html)
    assert [text.split()[:2] for text, _ in items] == [
        ["Su", "et"],
        ["The", "word"],
        ["The", "word"],
        ["two", "words"],
    ]
    assert [in_list for _, in_list in items] == [False, True, True, True]
    assert sentences(items[0][0]) == [items[0][0]], "'et al.' split a sentence"
    assert words(items[0][0]) == 9  # the formula is one word
    assert all(words(s) <= 40 for text, _ in items for s in sentences(text))


def test_prose_limits_catch_a_planted_long_sentence(tmp_path):
    """A 41-word sentence in a paragraph of the reading path fails the limits;
    the same in a list item, or 40 words, or in an appendix, does not."""
    (tmp_path / "_toc.yml").write_text(
        "root: book/intro\nparts:\n"
        "  - caption: 'Part I: x'\n    chapters:\n      - file: book/a\n"
        "  - caption: 'Appendices: y'\n    chapters:\n      - file: book/b\n"
    )
    pages = reading_path(tmp_path / "_toc.yml")
    assert pages == ["book/intro", "book/a"]
    (tmp_path / "book").mkdir()

    def faults(intro: str, a: str) -> list[str]:
        (tmp_path / "book" / "intro.html").write_text(_page(intro))
        (tmp_path / "book" / "a.html").write_text(_page(a))
        (tmp_path / "book" / "b.html").write_text(_page(f"<p>{_sentence(80)}</p>"))
        return reading_path_faults(tmp_path, pages)

    assert faults("<p>Short.</p>", f"<p>{_sentence(40)} {_sentence(40)}</p>") == []
    assert faults("<p>Short.</p>", f"<ul><li>{_sentence(41)}</li></ul>") == []
    planted = faults("<p>Short.</p>", f"<p>{_sentence(20)} {_sentence(41)}</p>")
    assert len(planted) == 1 and planted[0].startswith("book/a: a sentence of 41 words"), planted
    long_page = faults(f"<p>{_sentence(30)}</p>" * 84, "<p>Short.</p>")
    assert long_page == ["book/intro: 2520 words of prose (at most 2,500)"], long_page
