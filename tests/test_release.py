"""One version number, set in one place, and every place that shows it agrees.

The place is ``src/attnscale/_version.py``.  It reaches the package
(``attnscale.__version__``, and ``pyproject.toml`` through setuptools'
dynamic metadata), the book (footer, "How to cite", the PDF's title page: see
tests/test_pdf.py) through ``book/_ext/book_release.py``, and is copied by
hand into ``CITATION.cff``, ``.zenodo.json``, ``CHANGELOG.md`` and the
README's BibTeX: these are checked here.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest
import yaml
from bookbuild import ROOT, load_extension

import attnscale


def _version() -> str:
    text = (ROOT / "src" / "attnscale" / "_version.py").read_text()
    return re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.M)[1]


def _book_release():
    return load_extension("book_release")


VERSION = _version()


def test_version_is_semantic():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


def test_package_reads_the_one_version():
    assert attnscale.__version__ == VERSION
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"], "pyproject.toml types a second version"
    assert "version" in pyproject["project"]["dynamic"]
    attr = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "attnscale._version.__version__"


def test_citation_cff_has_the_version():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(cff["version"]) == VERSION
    assert str(cff["preferred-citation"]["version"]) == VERSION


def test_zenodo_metadata_has_the_version_and_agrees_with_cff():
    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert zenodo["version"] == VERSION
    assert zenodo["title"] == cff["preferred-citation"]["title"]
    authors = [a["name"] for a in cff["preferred-citation"]["authors"]]
    assert [c["name"] for c in zenodo["creators"]] == authors
    assert zenodo["license"] == cff["license"]
    assert zenodo["upload_type"] == "publication" and zenodo["publication_type"] == "book"
    assert zenodo["description"].strip()


def test_changelog_starts_with_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert versions and versions[0] == VERSION, versions
    assert "0.1.0" in versions, "the first edition's entry is missing"


def test_readme_bibtex_is_the_books():
    """The README's BibTeX is the one the "How to cite" page shows (made from CITATION.cff)."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bibtex\n(.*?)```", readme, re.S)
    assert len(blocks) == 1, "the README should have one BibTeX block"
    expected = _book_release().book_bibtex(VERSION, ROOT / "CITATION.cff")
    assert blocks[0].strip() == expected.strip()


def test_no_other_version_is_typed():
    """No page or document names a version of the book other than the current one."""
    pattern = re.compile(r"(?:[Vv]ersion\s*=?\s*\{?|\bv)(\d+\.\d+\.\d+)")
    stray = []
    for path in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "book").glob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for found in pattern.findall(line):
                if found != VERSION:
                    stray.append(f"{path.relative_to(ROOT)}:{number}: {found}")
    assert stray == [], stray


# -- the built book ----------------------------------------------------------------


@pytest.mark.book
def test_every_page_shows_the_version(built_book):
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"
    pages = [p for p in html.rglob("*.html") if "_static" not in p.parts and p.name != "index.html"]
    assert len(pages) >= 10
    without = [str(p.relative_to(html)) for p in pages if f"Version {VERSION}" not in p.read_text()]
    assert without == []


@pytest.mark.book
def test_how_to_cite_page(built_book):
    """BibTeX with the version, and the example theorem's number generated from the theorem."""
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"
    page = (html / "book" / "how-to-cite.html").read_text()
    assert f"version = {{{VERSION}}}" in re.sub(r"<[^>]+>", "", page).replace("&quot;", '"')
    theorem = (html / "book" / "gaussian-scores.html").read_text()
    title = r'<p class="admonition-title"><span class="caption-number">(Theorem [\d.]+) '
    number = re.search(r'id="thm-gaussian-alpha-star">\s*' + title, theorem)
    assert number, "the example theorem is gone from gaussian-scores"
    links = re.findall(r'href="gaussian-scores.html#thm-gaussian-alpha-star"[^>]*>(.*?)</a>', page, re.S)
    texts = {re.sub(r"<[^>]+>|\s+", " ", link).strip() for link in links}
    assert texts == {number[1]}, (texts, number[1])
