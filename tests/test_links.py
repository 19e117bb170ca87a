"""No dead link in the built book: every local link and asset resolves, from disk and over HTTP.

A reader opens the book either from a web server or straight from the disk
(``_build/html/index.html`` under file://).  For both, every local
reference of every page -- links (``<a href>``), images, scripts, style
sheets, icons, ``srcset`` candidates, and the ``url(...)`` inside the local
style sheets (fonts, icons) -- must lead somewhere:

* **file://**: the referenced file exists (a query string is ignored, as
  the browser ignores it there; a folder is not enough, since no server
  turns it into its ``index.html``), and an ``#anchor`` into a page names
  an element id of that page;
* **HTTP**: the same references, requested from a plain static server,
  answer 200.

The PDF is linked only when it exists (``book/_ext/pdf_book.py``), so it is
no exception here.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

pytestmark = pytest.mark.book

#: Attributes that reference another file, by tag.
REFERENCES = {
    "a": ("href",),
    "area": ("href",),
    "link": ("href",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "script": ("src",),
    "iframe": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "object": ("data",),
    "embed": ("src",),
}
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for name in REFERENCES.get(tag, ()):
            value = attrs.get(name)
            if not value:
                continue
            if name == "srcset":
                self.links += [part.strip().split()[0] for part in value.split(",") if part.strip()]
            else:
                self.links.append(value.strip())
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "refresh":
            target = re.search(r"url=(.+)", attrs.get("content") or "", re.I)
            if target:
                self.links.append(target.group(1).strip("'\" "))


def _parse(path: Path) -> _Collector:
    collector = _Collector()
    collector.feed(path.read_text(errors="ignore"))
    return collector


def _is_local(link: str) -> bool:
    parts = urlsplit(link)
    return not (parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")))


def _references(html: Path):
    """Yield (referring file, link) for every local reference of the build's pages and style sheets."""
    pages = [p for p in html.rglob("*.html") if "_static" not in p.parts]
    sheets = set()
    for page in pages:
        for link in _parse(page).links:
            if not _is_local(link):
                continue
            yield page, link
            path = urlsplit(link).path
            if path.endswith(".css"):
                sheets.add((page.parent / unquote(path)).resolve())
    for sheet in sorted(sheets):
        if not sheet.exists():
            continue  # reported as the page's broken link
        for _, link in CSS_URL.findall(sheet.read_text(errors="ignore")):
            if _is_local(link) and not link.startswith("#"):
                yield sheet, link


def _broken_on_disk(html: Path) -> list[str]:
    ids: dict[Path, set] = {}
    broken = []
    for source, link in _references(html):
        parts = urlsplit(link)
        target = (source.parent / unquote(parts.path)).resolve() if parts.path else source
        where = f"{source.relative_to(html)} -> {link}"
        if not target.exists():
            broken.append(where)
        elif target.is_dir():
            broken.append(f"{where} (a folder: under file:// no index.html is served)")
        elif parts.fragment and target.suffix == ".html":
            if target not in ids:
                ids[target] = _parse(target).ids
            if unquote(parts.fragment) not in ids[target]:
                broken.append(f"{where} (no such anchor)")
    return broken


def test_local_links_and_assets_resolve_from_disk(built_book):
    """Under file://: every local link and asset is a file, every anchor an id of its page."""
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"
    broken = _broken_on_disk(html)
    assert broken == [], f"{len(broken)} dead local links:\n" + "\n".join(broken[:30])


def test_local_links_and_assets_resolve_over_http(built_book, served_book):
    """Over HTTP: every local link and asset of every page answers 200."""
    _, html = built_book
    urls: dict[str, str] = {}
    for source, link in _references(html):
        base = f"{served_book}/{source.relative_to(html).as_posix()}"
        url = urljoin(base, link).split("#", 1)[0]
        urls.setdefault(url, f"{source.relative_to(html)} -> {link}")

    def status(url: str) -> int:
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = dict(zip(urls, pool.map(status, urls), strict=True))
    broken = [f"{urls[url]} ({code})" for url, code in codes.items() if code != 200]
    assert len(urls) > 100, f"only {len(urls)} local URLs found: is the build complete?"
    assert broken == [], f"{len(broken)} dead local links over HTTP:\n" + "\n".join(broken[:30])


def test_the_link_checker_finds_a_dead_link(tmp_path):
    """The checker itself: a missing page, a missing anchor, a missing image, a folder, a CSS font."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "ok.html").write_text('<p id="here">x</p>')
    (tmp_path / "style.css").write_text("@font-face { src: url('fonts/gone.woff2'); }")
    (tmp_path / "page.html").write_text(
        '<link rel="stylesheet" href="style.css?v=1"><a href="ok.html#here">fine</a>'
        '<a href="ok.html#nowhere">anchor</a><a href="gone.html">page</a>'
        '<img src="gone.svg"><a href="sub/">folder</a><a href="https://example.org/x">external</a>'
    )
    broken = _broken_on_disk(tmp_path)
    assert broken == [
        "page.html -> ok.html#nowhere (no such anchor)",
        "page.html -> gone.html",
        "page.html -> gone.svg",
        "page.html -> sub/ (a folder: under file:// no index.html is served)",
        "style.css -> fonts/gone.woff2",
    ], broken


def test_every_numbered_equation_has_a_permalink(built_book):
    _, html = built_book
    total = 0
    for page in (html / "book").glob("*.html"):
        text = page.read_text()
        numbers = re.findall(r'<span class="eqno">', text)
        links = re.findall(r'<span class="eqno">\([0-9.]+\)<a class="headerlink" href="#equation-', text)
        assert len(numbers) == len(links), (
            f"{page.name}: {len(numbers)} equation numbers, {len(links)} permalinks"
        )
        total += len(numbers)
    assert total >= 20, f"only {total} numbered equations in the book"


# -- buttons that lead nowhere ---------------------------------------------------------


class _Config:
    def __init__(self):
        self.html_theme_options = {
            "repository_url": "https://github.com/placeholder/placeholder",
            "use_repository_button": True,
            "launch_buttons": {"binderhub_url": "https://mybinder.org"},
        }


class _App:
    pass


@pytest.mark.parametrize(
    ("url", "shown"),
    [(None, False), ("", False), ("https://github.com/owner/the-book", True)],
)
def test_repository_buttons_only_with_a_real_url(monkeypatch, url, shown):
    """No URL at build time: no repository button, no launch menu (a 404 and a Binder error)."""
    from bookbuild import load_extension

    links = load_extension("repository_links")
    if url is None:
        monkeypatch.delenv(links.URL_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(links.URL_VARIABLE, url)
    app, config = _App(), _Config()
    links._configure(app, config)
    options = config.html_theme_options
    assert options["use_repository_button"] is shown
    assert bool(options["launch_buttons"]) is shown
    assert options["repository_url"] == (url if shown else "")


def test_repository_url_must_be_a_repository(monkeypatch):
    from bookbuild import load_extension
    from sphinx.errors import ConfigError

    links = load_extension("repository_links")
    monkeypatch.setenv(links.URL_VARIABLE, "github.com/owner")
    with pytest.raises(ConfigError, match=links.URL_VARIABLE):
        links._configure(_App(), _Config())


def test_pdf_publishing_links_every_page_once(tmp_path):
    """pdf_book.py's publish step: the PDF beside the HTML, one entry per page, twice is once."""
    from bookbuild import load_extension

    pdf_book = load_extension("pdf_book")
    (tmp_path / "latex").mkdir()
    (tmp_path / "latex" / "book.pdf").write_bytes(b"%PDF-1.5\n")
    html = tmp_path / "html"
    (html / "book").mkdir(parents=True)
    menu = (
        '<div class="dropdown dropdown-download-buttons"><button>d</button>\n'
        '<ul class="dropdown-menu">\n</ul></div>'
    )
    (html / "book" / "chapter.html").write_text(f'<div class="article-header-buttons">{menu}</div>')
    (html / "search.html").write_text('<div class="article-header-buttons"></div>')
    assert len(pdf_book.publish(tmp_path, "book.pdf")) == 2
    assert pdf_book.publish(tmp_path, "book.pdf") == []
    assert (html / "book.pdf").read_bytes() == b"%PDF-1.5\n"
    chapter = (html / "book" / "chapter.html").read_text()
    assert chapter.count('href="../book.pdf"') == 1 and "dropdown-item" in chapter
    assert (html / "search.html").read_text().count('href="book.pdf"') == 1
    assert _broken_on_disk(html) == []


class _SpokenText(HTMLParser):
    """Each link's text and each image's alt text, as a screen reader meets them."""

    def __init__(self):
        super().__init__()
        self.links, self.alts, self._depth, self._text = [], [], 0, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.alts.append(attrs.get("alt") or "")
        if tag == "a":
            self._depth += 1
            self._text.append("")
        # MathJax has not run: a formula in a link is still its TeX source (\(...\))

    def handle_endtag(self, tag):
        if tag == "a" and self._depth:
            self._depth -= 1
            self.links.append(self._text.pop().strip())

    def handle_data(self, data):
        if self._depth:
            self._text[-1] += data


RAW_TEX = re.compile(r"\\[A-Za-z]{2,}|\$")
#: What is left of TeX in plain text when a script or a font command is not
#: spoken: x_i, n_ref, log_L, 10^3, mathbb (a name such as
#: attnscale.sphere_entropy_slope is not a subscript).
LEFT_TEX = re.compile(r"(?<![\w.])[A-Za-z]{1,3}_[A-Za-z0-9]{1,3}\b|[\w)]\^|\bmath(?:bb|rm|bf|cal|it)\b")
#: Math MathJax typesets (\( ... \) in the HTML): not raw, it renders.
TYPESET = re.compile(r"\\\(.*?\\\)", re.S)


def test_link_and_alt_texts_are_free_of_raw_tex(built_book):
    """No link reads "The answers. \\alpha multiplies ...", no alt text TeX (scripts too) or cut off."""
    _, html = built_book
    found = []
    for page in sorted(html.rglob("*.html")):
        if page.name in ("genindex.html", "search.html") or "_static" in page.parts:
            continue
        spoken = _SpokenText()
        spoken.feed(page.read_text(errors="ignore"))
        name = page.relative_to(html)
        found += [f"{name}: link {t[:60]!r}" for t in spoken.links if RAW_TEX.search(TYPESET.sub("", t))]
        found += [
            f"{name}: alt {alt[:60]!r}"
            for alt in spoken.alts
            if RAW_TEX.search(alt) or LEFT_TEX.search(alt) or alt.endswith("…")
        ]
    assert found == [], "\n".join(found[:20])


@pytest.mark.parametrize(
    ("tex", "spoken"),
    [
        (r"\mathbb E\,\alpha(1 - \sum_i p_i^2)", "E α(1 - Σᵢ pᵢ²)"),
        (r"n_{\mathrm{ref}}", "n ref"),
        (r"\log_L n", "log base L of n"),
        (r"a_t", "aₜ"),
        (r"e^{-c\sqrt d}", "e to the power (-c√d)"),
        (r"n = 10^3", "n = 10³"),
        (r"\alpha^*(n, d)", "α*(n, d)"),
        (r"\frac{1}{\sqrt d}", "1/√d"),
        (r"\sqrt{\log n}", "√(log n)"),
    ],
)
def test_figure_alt_speaks_scripts(tex, spoken):
    """The alt text's math: scripts in Unicode forms or words, never _ or ^ (book/_ext/figure_alt.py)."""
    from bookbuild import load_extension

    result = load_extension("figure_alt").speakable(tex)
    assert result == spoken
    assert not (RAW_TEX.search(result) or LEFT_TEX.search(result))
    # what the old speakable() left: caught by the test of the built book
    assert LEFT_TEX.search("Z_i against n") and LEFT_TEX.search("n = 10^3") and LEFT_TEX.search("mathbb E")
    assert not LEFT_TEX.search("attnscale.sphere_entropy_slope() and log n")


def test_header_math_writes_formula_headers_as_text():
    """A header cell that is a formula alone becomes HTML text; one with words, and the body, keep MathJax."""
    from types import SimpleNamespace

    from bookbuild import load_extension
    from docutils import nodes
    from docutils.core import publish_doctree

    ext = load_extension("header_math")
    source = """
.. list-table::
   :header-rows: 1

   * - :math:`d`
     - :math:`\\alpha^*(n, d)`
     - :math:`n_\\mathrm{ref}`
     - :math:`\\frac{1}{2}`
     - words :math:`L`
   * - :math:`1`
     - 2
     - 3
     - 4
     - 5
"""
    for fmt, written in (("html", 3), ("latex", 0)):
        doctree = publish_doctree(source)
        ext._write_headers(SimpleNamespace(builder=SimpleNamespace(format=fmt)), doctree, "probe")
        head = next(iter(doctree.findall(nodes.thead)))
        raw = [n.astext() for n in head.findall(nodes.raw)]
        assert len(raw) == written, raw
        # a fraction keeps MathJax (the converter does not write it); so do the cells with words
        assert len(list(head.findall(nodes.math))) == 5 - written
        assert len(list(next(iter(doctree.findall(nodes.tbody))).findall(nodes.math))) == 1
    assert raw == [] and ext.math_html(r"\alpha^*(n, d)") == "<i>α</i><sup>*</sup>(<i>n</i>, <i>d</i>)"
    assert ext.math_html(r"n_\mathrm{ref}") == "<i>n</i><sub>ref</sub>"
    assert ext.math_html(r"\sqrt{2\log n}") == "√(2 log <i>n</i>)"
    assert ext.math_html(r"n = 10^{6}") == "<i>n</i> = 10<sup>6</sup>"
    assert ext.math_html(r"\frac{1}{2}") is None and ext.math_html(r"\unknown x") is None
