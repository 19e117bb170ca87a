"""The whole book as one PDF (XeLaTeX), numbered exactly as the web pages.

The PDF is built once per session from the session's HTML build
(``bookbuild.build_pdf``: jupyter-book's LaTeX route in the same output
folder, which reuses the executed chapters instead of running them again).
Its text is extracted with ``pdftotext`` and compared with the HTML:

* every numbered theorem and proposition of the HTML (number and title), every
  numbered equation (label and number: the LaTeX .aux file records the number
  LaTeX printed at each label) and every numbered figure and chapter appears
  in the PDF with the same number;
* every glued number of a few chosen pages appears in the PDF too;
* no code input reaches the PDF, every character has a glyph, figures are
  vector graphics, and every HTML page links the PDF, which the build has
  copied next to the pages.

Skipped when XeLaTeX, pdftotext or Cairo is missing, unless ATTNSCALE_REQUIRE_PDF=1
(set by .ci/run), which makes their absence a failure.
"""

from __future__ import annotations

import html as html_lib
import os
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import jupytext
import pytest
from bookbuild import ROOT, build_pdf, missing_pdf_tools, notebook_chapters, pdf_name

pytestmark = pytest.mark.book


#: Pages whose every glued number must also be in the PDF.
GLUE_PAGES = ("gaussian-scores", "cosine-scores", "entropy-invariance")

NUMBERED_KINDS = ("Theorem", "Proposition", "Lemma", "Corollary", "Definition")

#: How the chapter headings of the PDF spell their numbers.
NUMBER_WORDS = dict(
    enumerate(
        "ZERO ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE TEN ELEVEN TWELVE THIRTEEN FOURTEEN "
        "FIFTEEN SIXTEEN SEVENTEEN EIGHTEEN NINETEEN TWENTY".split()
    )
)


def _require_tools():
    missing = missing_pdf_tools()
    if missing:
        message = f"PDF tools missing: {', '.join(missing)} (Debian: see CONTRIBUTING.md, 'The PDF')"
        if os.environ.get("ATTNSCALE_REQUIRE_PDF") == "1":
            pytest.fail(message + "; ATTNSCALE_REQUIRE_PDF=1")
        pytest.skip(message)


@pytest.fixture(scope="session")
def built_pdf(built_book, background_pdf):
    """``(result, pdf, html_dir)`` of the PDF build of the session's book.

    The build started in the background when the HTML build finished
    (``tests/conftest.py``), or here if it was not.
    """
    _require_tools()
    html_result, html = built_book
    assert html_result.returncode == 0, "the book build failed; see test_book_builds_clean"
    if "--path-output" not in html_result.args:
        pytest.skip("the PDF is built from the session's own book build, and there is none")
    result, pdf = background_pdf if background_pdf is not None else build_pdf(html_result)
    return result, pdf, html


@pytest.fixture(scope="session")
def pdf_text(built_pdf):
    """The PDF's text (pdftotext, reading order)."""
    result, pdf, _ = built_pdf
    assert result.returncode == 0 and pdf.exists(), "the PDF build failed; see test_pdf_builds_clean"
    command = ["pdftotext", "-enc", "UTF-8", str(pdf), "-"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _squash(text: str) -> str:
    """Text without white space, with one kind of minus and of quotes (what pdftotext varies)."""
    text = text.replace("\u2212", "-").replace("\u2019", "'").replace("\u00a0", " ")
    return re.sub(r"\s+", "", text)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


# -- what the HTML numbers ------------------------------------------------------


class _Numbered(HTMLParser):
    """Numbered things of one page: theorem-like titles, equations, figures, glue."""

    def __init__(self):
        super().__init__()
        self.stack: list[tuple[str, dict]] = []
        self.capture: list | None = None
        self.eqno: str | None = None
        self.equations: dict[str, str] = {}
        self.titles: list[str] = []  # "Theorem 4.1 (Closed form ...)" as text
        self.captions: list[str] = []  # "Fig. 4.1 The maximizer ..." as text
        self.glued: list[str] = []
        self.chapter: str | None = None
        self._glue: list | None = None
        self._title: list | None = None
        self._caption: list | None = None
        self._h1: list | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        self.stack.append((tag, attrs))
        if tag == "span" and "eqno" in classes:
            self.eqno = ""
        if tag == "a" and self.eqno is not None and attrs.get("href", "").startswith("#equation-"):
            self.equations[attrs["href"][len("#equation-") :]] = self.eqno.strip()
            self.eqno = None
        if tag == "span" and "pasted-text" in classes:
            self._glue = []
        if tag == "p" and "admonition-title" in classes:
            self._title = []
        if tag == "figcaption":
            self._caption = []
        if tag == "h1" and self.chapter is None:
            self._h1 = []

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()
        if tag == "span" and self._glue is not None:
            self.glued.append("".join(self._glue))
            self._glue = None
        if tag == "p" and self._title is not None:
            self.titles.append(" ".join("".join(self._title).split()))
            self._title = None
        if tag == "figcaption" and self._caption is not None:
            self.captions.append(" ".join("".join(self._caption).split()))
            self._caption = None
        if tag == "h1" and self._h1 is not None:
            self.chapter = " ".join("".join(self._h1).split()).rstrip("#")
            self._h1 = None

    def handle_data(self, data):
        if self.eqno is not None:
            self.eqno += data
        for buffer in (self._glue, self._title, self._caption, self._h1):
            if buffer is not None:
                buffer.append(data)


def _html_pages(html: Path) -> dict[str, _Numbered]:
    pages = {}
    for path in sorted((html / "book").glob("*.html")):
        parser = _Numbered()
        parser.feed(path.read_text())
        pages[path.stem] = parser
    return pages


def _no_math(text: str) -> str:
    """Text before the first inline formula (MathJax source differs from typeset math)."""
    return re.split(r"\\\(|\$", text, maxsplit=1)[0]


# -- the build -------------------------------------------------------------------


def test_pdf_builds_clean(built_pdf):
    result, pdf, _ = built_pdf
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"the PDF build failed:\n{_tail(log, 80)}"
    sphinx_warnings = [line for line in log.splitlines() if "WARNING:" in line or "ERROR:" in line]
    assert sphinx_warnings == []
    assert pdf.exists()
    # the LaTeX build reuses the HTML build's executed chapters
    assert "Executing notebook" not in log and "0 added, 0 changed, 0 removed" in log, (
        "the PDF build read or executed the chapters again"
    )


def test_latex_log_is_clean(built_pdf):
    """Every character has a glyph, every reference and citation resolves."""
    _, pdf, _ = built_pdf
    log = pdf.with_suffix(".log").read_text(errors="replace")
    assert "Missing character" not in log, re.findall(r"Missing character: .*", log)[:5]
    undefined = re.findall(r"(?:Reference|Citation|Hyper reference) `[^']*' on page \S+ undefined", log)
    assert undefined == [], undefined[:5]
    assert "There were undefined references" not in log


def test_title_page_has_title_version_and_date(built_pdf):
    import attnscale

    _, pdf, _ = built_pdf
    first = subprocess.run(
        ["pdftotext", "-f", "1", "-l", "1", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True
    ).stdout
    assert "The Scale of Attention" in first
    assert f"Version {attnscale.__version__}" in first
    assert re.search(r"\b20\d\d\b", first), "no date on the title page"
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    pages = re.search(r"^Pages:\s+(\d+)", info, re.M)
    assert pages and int(pages[1]) > 20, info


# -- same numbers -----------------------------------------------------------------


def test_theorems_have_the_html_numbers(built_pdf, pdf_text):
    """Each "Theorem 4.1 (title)" of the HTML is in the PDF, and the PDF has no other."""
    _, _, html = built_pdf
    text = _squash(pdf_text)
    in_html = []
    for page, parsed in _html_pages(html).items():
        for title in parsed.titles:
            match = re.match(rf"({'|'.join(NUMBERED_KINDS)}) (\d+(?:\.\d+)*) ?(?:\((.*)\))?$", title)
            if match:
                in_html.append((page, match[1], match[2], _no_math(match[3] or "")))
    assert len(in_html) >= 8, f"only {len(in_html)} numbered theorems found in the HTML"
    missing = [
        f"{page}: {kind} {number} ({name})"
        for page, kind, number, name in in_html
        if _squash(f"{kind} {number} ({name}") not in text
    ]
    assert missing == [], missing
    in_pdf = set(re.findall(rf"({'|'.join(NUMBERED_KINDS)})(\d+(?:\.\d+)*)\(", text))
    assert in_pdf == {(kind, number) for _, kind, number, _ in in_html}


def test_equations_have_the_html_numbers(built_pdf, pdf_text):
    """Each labelled equation has the HTML's number in LaTeX's record, and is printed."""
    _, pdf, html = built_pdf
    aux = pdf.with_suffix(".aux").read_text(errors="replace")
    in_html = {}
    for page, parsed in _html_pages(html).items():
        for label, number in parsed.equations.items():
            in_html[f"{page}:{label}"] = number.strip("()")
    assert len(in_html) >= 20, f"only {len(in_html)} numbered equations in the HTML"
    latex_by_page = {
        f"{page}:{label}": number
        for page, label, number in re.findall(
            r"\\newlabel\{equation:book/([^:}]+):([^}]+)\}\{\{([^}]*)\}", aux
        )
    }
    assert latex_by_page, "no equation labels in the LaTeX .aux file"
    different = {
        key: (number, latex_by_page.get(key))
        for key, number in in_html.items()
        if latex_by_page.get(key) != number
    }
    assert different == {}, f"label: (HTML, PDF) {different}"
    assert set(latex_by_page) == set(in_html), set(latex_by_page) ^ set(in_html)
    text = _squash(pdf_text)
    unprinted = sorted({n for n in in_html.values() if f"({n})" not in text})
    assert unprinted == [], f"equation numbers not printed in the PDF: {unprinted}"


def test_figures_and_chapters_have_the_html_numbers(built_pdf, pdf_text):
    _, _, html = built_pdf
    text = _squash(pdf_text)
    missing = []
    figures = 0
    for page, parsed in _html_pages(html).items():
        for caption in parsed.captions:
            match = re.match(r"Fig\. (\d+(?:\.\d+)*) (.*)", caption)
            if match:
                figures += 1
                words = _no_math(match[2]).split()[:6]
                if _squash(f"Fig. {match[1]}: {' '.join(words)}") not in text:
                    missing.append(f"{page}: Fig. {match[1]} {' '.join(words)}")
        match = re.match(r"(\d+)\. (.*)", parsed.chapter or "")
        if match:
            # the chapter's opening page spells its number: "CHAPTER FOUR / GAUSSIAN SCORES ..."
            heading = f"CHAPTER {NUMBER_WORDS[int(match[1])]} {' '.join(match[2].split()[:4]).upper()}"
            if _squash(heading) not in text:
                missing.append(f"{page}: {heading}")
    assert figures >= 5, f"only {figures} numbered figures in the HTML"
    assert missing == [], missing


@pytest.mark.parametrize("page", GLUE_PAGES)
def test_glued_numbers_are_in_the_pdf(built_pdf, pdf_text, page):
    _, _, html = built_pdf
    parsed = _html_pages(html)[page]
    values = [html_lib.unescape(v).strip() for v in parsed.glued]
    assert len(values) >= 5, f"{page}: only {len(values)} glued values"
    text = _squash(pdf_text)
    missing = sorted({v for v in values if _squash(v) not in text})
    assert missing == [], f"{page}: glued in the HTML, not in the PDF: {missing}"


# -- for reading -----------------------------------------------------------------


def _code_lines(chapter: Path) -> set[str]:
    lines = set()
    for cell in jupytext.read(chapter).cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            line = line.strip()
            if len(line) >= 30 and not line.startswith("#"):
                lines.add(line)
    return lines


def test_no_code_input_in_the_pdf(pdf_text):
    text = _squash(pdf_text)
    shown = {}
    total = 0
    for chapter in notebook_chapters():
        lines = _code_lines(chapter)
        total += len(lines)
        found = [line for line in lines if _squash(line) in text]
        if found:
            shown[chapter.stem] = found[:3]
    assert total > 100, f"only {total} code lines to look for"
    assert shown == {}, f"code inputs in the PDF: {shown}"


def test_figures_are_vector_graphics(built_pdf):
    """No bitmap in the PDF: every figure is included as a vector PDF, converted from its SVG."""
    _, pdf, _ = built_pdf
    listing = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True)
    bitmaps = listing.stdout.splitlines()[2:]
    assert bitmaps == [], f"{len(bitmaps)} bitmap images in the PDF, e.g. {bitmaps[:3]}"
    tex = pdf.with_suffix(".tex").read_text()
    graphics = re.findall(r"\\sphinxincludegraphics(?:\[[^]]*\])?\{\{([^}]*)\}(\.\w+)\}", tex)
    assert len(graphics) >= 5 and {suffix for _, suffix in graphics} == {".pdf"}


def test_unicode_reaches_the_pdf(pdf_text):
    """Characters of titles and prose (√, ≈, subscripts, Chinese titles) are text in the PDF."""
    for character in ("√", "≈", "科学空间"):
        assert character in pdf_text, f"{character!r} is not in the PDF's text"


def test_bibliography_is_in_the_pdf(pdf_text):
    assert "Bibliography" in pdf_text or "BIBLIOGRAPHY" in pdf_text
    assert "Vaswani" in pdf_text and "Attention is all you need" in " ".join(pdf_text.split())


# -- linked from every page --------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.pdf_links = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "btn-download-book-pdf-button" in (attrs.get("class") or ""):
            self.pdf_links.append(attrs.get("href"))


def test_every_page_links_the_pdf(built_pdf):
    _, pdf, html = built_pdf
    copied = html / pdf_name()
    assert copied.exists() and copied.read_bytes() == pdf.read_bytes()
    pages = [p for p in html.rglob("*.html") if "_static" not in p.parts and p.name != "index.html"]
    assert len(pages) >= 10
    without = []
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text())
        targets = [(page.parent / urlsplit(link).path).resolve() for link in parser.pdf_links]
        if not targets or any(target != copied.resolve() for target in targets):
            without.append(f"{page.relative_to(html)}: {parser.pdf_links}")
    assert without == [], without[:5]


def test_contributing_explains_the_pdf():
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    section = contributing.split("## The PDF", 1)[1].split("\n## ", 1)[0]
    assert "jupyter-book build . --builder pdflatex" in section
    assert f"_build/latex/{pdf_name()}" in section and "_build/html" in section
    ci = (ROOT / ".ci" / "run").read_text()
    packages = re.search(r"PDF_PACKAGES=\"([^\"]+)\"", ci)
    assert packages, ".ci/run names no PDF_PACKAGES"
    for package in packages[1].split():
        assert package in section, f"CONTRIBUTING.md's PDF section does not name the Debian package {package}"
    assert "ATTNSCALE_REQUIRE_PDF=1" in ci
