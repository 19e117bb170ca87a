"""No broken internal link in the built book: every target page and anchor exists."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bookbuild import pdf_name

pytestmark = pytest.mark.book


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in ("img", "script", "link") and (attrs.get("src") or attrs.get("href")):
            self.links.append(attrs.get("src") or attrs.get("href"))


def _parse(path: Path) -> _Collector:
    collector = _Collector()
    collector.feed(path.read_text(errors="ignore"))
    return collector


def test_internal_links_resolve(built_book):
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"
    # the book's pages; _static holds theme templates, not pages
    pages = {path: _parse(path) for path in html.rglob("*.html") if "_static" not in path.parts}
    broken = []
    for page, collector in pages.items():
        for link in collector.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            if parts.path.endswith(f"/{pdf_name()}") or parts.path == pdf_name():
                continue  # the PDF is made by a second build: tests/test_pdf.py checks these links
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists():
                broken.append(f"{page.relative_to(html)} -> {link}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(html)} -> {link} (no such anchor)")
    assert broken == [], "\n".join(broken[:20])


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
