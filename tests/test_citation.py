"""CITATION.cff follows the Citation File Format 1.2.0 and agrees with the project.

The reference validator (cffconvert 2.0) needs jsonschema < 4, which
jupyter-book's dependencies rule out, so the rules of the CFF 1.2.0 schema
that this file uses are checked here directly.
"""

from __future__ import annotations

import datetime as dt

import yaml
from bookbuild import ROOT

import attnscale

REQUIRED = {"cff-version", "message", "title", "authors"}
KNOWN = REQUIRED | {
    "abstract",
    "type",
    "version",
    "date-released",
    "license",
    "repository-code",
    "keywords",
    "preferred-citation",
    "url",
    "doi",
    "identifiers",
    "references",
    "commit",
    "contact",
}
REFERENCE_TYPES = {"book", "software", "article", "report", "generic", "misc", "manual"}


def _check_authors(authors, where):
    assert isinstance(authors, list) and authors, f"{where}: authors must be a non-empty list"
    for person in authors:
        assert isinstance(person, dict), where
        assert "name" in person or "family-names" in person, (
            f"{where}: a person needs family-names, an entity a name"
        )


def test_citation_file_is_valid_cff():
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert REQUIRED <= set(data), REQUIRED - set(data)
    assert set(data) <= KNOWN, set(data) - KNOWN
    assert data["cff-version"] == "1.2.0"
    assert data["type"] in {"software", "dataset"}
    _check_authors(data["authors"], "authors")
    assert isinstance(data["date-released"], dt.date)
    # No placeholder: a URL is cited only when the publisher gives the real one at build time.
    assert "repository-code" not in data and "url" not in data["preferred-citation"]
    citation = data["preferred-citation"]
    assert citation["type"] in REFERENCE_TYPES
    assert isinstance(citation["title"], str) and citation["title"]
    _check_authors(citation["authors"], "preferred-citation")


def test_citation_agrees_with_the_project():
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert data["version"] == attnscale.__version__ == data["preferred-citation"]["version"]
    assert data["title"] == config["title"]
    assert config["repository"]["url"] == ""
    readme = (ROOT / "README.md").read_text()
    assert "CITATION.cff" in readme and "@book{" in readme
