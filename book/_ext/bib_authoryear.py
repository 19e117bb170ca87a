"""Author–year citations that tell one author's works of the same year apart.

sphinxcontrib-bibtex's ``author_year`` reference style prints "Su, 2021"
for both of Su's 2021 essays, and "Wang et al., 2018" for two different
2018 papers whose first authors are both called Wang.  After the
bibliography files are parsed, this extension finds the entries whose
citation text (the authors as the style prints them, and the year) would
coincide, orders each such group by date (month, then title), and appends
a, b, ... to their year: "Su, 2021a", "Su, 2021b".  The suffix is part of
the year everywhere, so the citation and the bibliography agree.

The bibliography is labelled the same way: the pybtex style ``authoryear``
registered here is the ``plain`` style with labels "Su 2021a" instead of
numbers, sorted by author, year and title (``bibtex_default_style:
authoryear`` in ``_config.yml``), so an author–year citation links to an
author–year entry, not into a numbered list.  Citations use round
brackets, "Su (2023)" and "(Su, 2021a; Su, 2022)" (reference style
``author_year_round``).
"""

from __future__ import annotations

import functools
import string
from collections import defaultdict
from dataclasses import dataclass, field

import pybtex.plugin
from pybtex.backends.plaintext import Backend as PlainTextBackend
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinxcontrib.bibtex.plugin import register_plugin as register_bibtex_plugin
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

MONTHS = {
    m: k
    for k, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for m in names
}


#: One plain-text backend for every name.  ``Text.render_as("text")`` looks the
#: backend up by name, and pybtex's lookup scans every installed package's
#: entry points each time: with a few hundred names that lookup was the
#: largest cost of the book's build outside the chapters (several seconds).
_PLAIN_TEXT = PlainTextBackend()


def _citation_authors(entry) -> tuple:
    """The authors as an author–year citation prints them."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    # LaTeX accents and braces rendered: "R{\'e}nyi" -> "Rényi", "{NIST}" -> "NIST"
    last = tuple(Text.from_latex(" ".join(p.last_names)).render(_PLAIN_TEXT) for p in persons)
    return last if len(last) <= 2 else (last[0], "et al.")


def _month(entry) -> int:
    value = entry.fields.get("month", "").strip().lower()
    if value.isdigit():
        return int(value)
    return MONTHS.get(value, 0)


def add_year_suffixes(entries) -> dict[str, str]:
    """Append a, b, ... to the year of entries whose citations would coincide.

    Returns the new years by key (for the log and for tests).
    """
    groups = defaultdict(list)
    for key, entry in entries.items():
        year = entry.fields.get("year", "")
        if year and year[-1].isdigit():  # not yet suffixed
            groups[(_citation_authors(entry), year)].append((key, entry))
    changed = {}
    for (_, year), members in groups.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda m: (_month(m[1]), m[1].fields.get("title", "").lower()))
        for letter, (key, entry) in zip(string.ascii_lowercase, members, strict=False):
            entry.fields["year"] = f"{year}{letter}"
            changed[key] = entry.fields["year"]
    return changed


def citation_label(entry) -> str:
    """ "Su 2021a", "Chiang and Cholak 2022", "Vaswani et al. 2017"."""
    authors = _citation_authors(entry)
    if not authors:
        names = "?"
    elif authors[-1] == "et al.":
        names = f"{authors[0]} et al."
    else:
        names = " and ".join(authors)
    return f"{names} {entry.fields.get('year', '')}".strip()


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield citation_label(entry)


class AuthorYearStyle(PlainStyle):
    """pybtex's ``plain`` style with author–year labels, sorted by author and year."""

    default_label_style = AuthorYearLabelStyle
    default_sorting_style = "author_year_title"


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")", sep="; ")


@dataclass
class RoundAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    """Author–year citations in round brackets: "Su (2023)", "(Su, 2021a; Su, 2022)"."""

    bracket_textual: BracketStyle = field(default_factory=_round)
    bracket_parenthetical: BracketStyle = field(default_factory=_round)
    bracket_author: BracketStyle = field(default_factory=_round)
    bracket_label: BracketStyle = field(default_factory=_round)
    bracket_year: BracketStyle = field(default_factory=_round)


register_bibtex_plugin(
    "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYearReferenceStyle
)
register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabelStyle)
register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)


def _suffix(app):
    domain = app.env.get_domain("cite")
    add_year_suffixes(domain.bibdata.data.entries)


def _cache_entry_point_lookups() -> None:
    """Look each pybtex plugin up in the installed distributions once per build, not at every citation.

    pybtex finds a plugin by scanning every installed distribution's entry
    points (``importlib.metadata``), and sphinxcontrib-bibtex asks at each
    citation it resolves: 1.6 s of the build's write phase, in series in
    the main process (py-spy).  The installed distributions do not change
    during a build; plugins registered at run time are still looked at
    first (pybtex's ``_load_entry_point``).
    """
    lookup = pybtex.plugin.entry_points
    if not hasattr(lookup, "cache_info"):
        pybtex.plugin.entry_points = functools.lru_cache(maxsize=None)(lookup)


def setup(app):
    _cache_entry_point_lookups()
    # after sphinxcontrib-bibtex has parsed the .bib files (its own handler, priority 500)
    app.connect("builder-inited", _suffix, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
