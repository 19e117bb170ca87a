"""CITATION.cff follows the Citation File Format 1.2.0 and agrees with the project.

The reference validator (cffconvert 2.0) needs jsonschema < 4, which
jupyter-book's dependencies rule out, so the rules of the CFF 1.2.0 schema
that this file uses are checked here directly.
"""

from __future__ import annotations

import datetime as dt
import re

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


#: A statement's opening fence: ":::{prf:theorem} Title" (any prf type but a proof).
STATEMENT = re.compile(r"^(:{3,})\{prf:(?!proof\})(\w+)\}")


def statements(text: str) -> list[tuple[str, list[str]]]:
    """(label, body lines) of every labelled sphinx-proof statement in a MyST source."""
    lines, found, k = text.splitlines(), [], 0
    while k < len(lines):
        opening = STATEMENT.match(lines[k])
        if opening:
            end = k + 1
            while end < len(lines) and lines[end].strip() != opening.group(1):
                end += 1
            body = lines[k + 1 : end]
            labels = [line.split(":label:", 1)[1].strip() for line in body if line.startswith(":label:")]
            if labels:
                found.append((labels[0], body))
            k = end
        k += 1
    return found


def citation_faults(sources: dict[str, str], how_to_cite: str) -> list[str]:
    """Statements without their own last-line "Cite as" or missing from the how-to-cite page."""
    faults = []
    for name, text in sources.items():
        for label, body in statements(text):
            last = next((line for line in reversed(body) if line.strip()), "")
            own = f"{{prf:ref}}`{label}`, label `{label}`."
            if not (last.startswith("*Cite as:* *The Scale of Attention*, ") and last.endswith(own)):
                faults.append(f"{name}: {label} does not end with its cite-as line")
            if f"{{prf:ref}}`{label}`, `{label}`" not in how_to_cite:
                faults.append(f"{name}: {label} is not listed on the how-to-cite page")
    return faults


def test_every_numbered_statement_is_citable():
    """Every labelled theorem, proposition, corollary or lemma ends with a
    "Cite as" line naming itself, and the how-to-cite page lists it."""
    sources = {path.name: path.read_text() for path in sorted((ROOT / "book").glob("*.md"))}
    found = [label for text in sources.values() for label, _ in statements(text)]
    assert len(found) >= 26 and "thm-entropy-invariance" in found, found
    assert citation_faults(sources, sources["how-to-cite.md"]) == []


def test_citation_check_fails_on_an_unlisted_statement():
    planted = (
        ":::{prf:proposition} Planted\n:label: prop-planted\n\nA claim.\n\n"
        "*Cite as:* *The Scale of Attention*, {prf:ref}`prop-planted`, label `prop-planted`.\n:::\n"
        ":::{prf:proof}\n:label: proof-ignored\nNo cite line needed.\n:::\n"
    )
    assert statements(planted)[0][0] == "prop-planted" and len(statements(planted)) == 1
    listed = "- {prf:ref}`prop-planted`, `prop-planted`: a planted result."
    assert citation_faults({"x.md": planted}, listed) == []
    assert citation_faults({"x.md": planted}, "") == [
        "x.md: prop-planted is not listed on the how-to-cite page"
    ]
    uncited = planted.replace("*Cite as:*", "Cite:")
    assert citation_faults({"x.md": uncited}, listed) == [
        "x.md: prop-planted does not end with its cite-as line"
    ]
