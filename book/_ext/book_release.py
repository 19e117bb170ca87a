"""The release the book is: its version, shown on every page, in the PDF and in its BibTeX.

The version is set in one place, ``src/attnscale/_version.py`` (the package
reads it from there too).  This extension reads that file as text, from the
repository the book is built from (see :func:`project_root`), and

* sets Sphinx's ``version`` and ``release``, which the PDF's title page
  prints ("Version 0.2.0", with the build date);
* adds the MyST substitutions ``{{ version }}`` and ``{{ year }}``;
* adds "Version 0.2.0" to the footer of every HTML page;
* provides the directive ``book-bibtex``: the BibTeX entry for the book,
  made from the version and from ``CITATION.cff``'s ``preferred-citation``
  (title, authors, year, url), so the "How to cite" page cannot disagree with
  either.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

#: Where the version and the citation metadata live, relative to the repository.
VERSION_PATH = Path("src") / "attnscale" / "_version.py"
CITATION_PATH = Path("CITATION.cff")

#: The BibTeX key of the book (README.md and the "How to cite" page use it).
BIBTEX_KEY = "scale_of_attention"


def project_root(confdir) -> Path:
    """The repository the book is built from.

    The book's own folder when it is the repository (a reader's build);
    otherwise (the tests build a copy of ``book/`` and the configuration)
    the repository of the ``attnscale`` that the chapters import.
    """
    candidates = [Path(confdir)]
    spec = importlib.util.find_spec("attnscale")
    if spec is not None and spec.origin:
        candidates.append(Path(spec.origin).resolve().parents[2])
    for root in candidates:
        if (root / VERSION_PATH).exists() and (root / CITATION_PATH).exists():
            return root
    raise ExtensionError(f"book_release: no {VERSION_PATH} and {CITATION_PATH} in {candidates}")


def read_version(path: Path) -> str:
    """The ``__version__ = "X.Y.Z"`` of ``_version.py``."""
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', path.read_text(), re.M)
    if match is None:
        raise ValueError(f'no __version__ = "..." line in {path}')
    return match.group(1)


def book_bibtex(version: str, citation_file: Path) -> str:
    """The BibTeX ``@book`` entry for this version of the book."""
    cff = yaml.safe_load(citation_file.read_text())
    cite = cff["preferred-citation"]
    authors = " and ".join(
        "{" + a["name"] + "}"
        if "name" in a
        else f"{a['family-names']}, {a.get('given-names', '')}".strip(", ")
        for a in cite["authors"]
    )
    fields = [
        ("title", cite["title"]),
        ("author", authors),
        ("year", str(cite["year"])),
        ("version", version),
        ("note", f"Version {version}"),
    ]
    url = cite.get("url") or os.environ.get("ATTNSCALE_REPOSITORY_URL", "").strip().rstrip("/")
    if url:  # only a real URL: given at build time (book/_ext/repository_links.py)
        fields.append(("url", url))
    if cite.get("doi"):
        fields.append(("doi", cite["doi"]))
    width = max(len(name) for name, _ in fields)
    body = ",\n".join(f"  {name.ljust(width)} = {{{value}}}" for name, value in fields)
    return f"@book{{{BIBTEX_KEY},\n{body}\n}}"


class BookBibtex(SphinxDirective):
    """``:::{book-bibtex}`` -- the BibTeX entry of the book, as a code block."""

    has_content = False

    def run(self):
        root = project_root(self.env.app.confdir)
        self.env.note_dependency(str(root / VERSION_PATH))
        self.env.note_dependency(str(root / CITATION_PATH))
        text = book_bibtex(self.config.release, root / CITATION_PATH)
        block = nodes.literal_block(text, text, language="bibtex")
        block["classes"].append("book-bibtex")
        return [block]


def _configure(app, config):
    root = project_root(app.confdir)
    version = read_version(root / VERSION_PATH)
    config.version = version
    config.release = version
    substitutions = dict(config.myst_substitutions or {})
    substitutions.setdefault("version", version)
    substitutions.setdefault(
        "year", str(yaml.safe_load((root / CITATION_PATH).read_text())["preferred-citation"]["year"])
    )
    config.myst_substitutions = substitutions
    options = dict(config.html_theme_options or {})
    footer = options.get("extra_footer", "")
    options["extra_footer"] = f'{footer}<p class="book-version">Version {version}</p>'
    config.html_theme_options = options


def setup(app):
    app.connect("config-inited", _configure)
    app.add_directive("book-bibtex", BookBibtex)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
