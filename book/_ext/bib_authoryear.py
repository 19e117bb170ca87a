"""Author–year citations that tell one author's works of the same year apart.

sphinxcontrib-bibtex's ``author_year`` reference style prints "Su, 2021"
for both of Su's 2021 essays, and "Wang et al., 2018" for two different
2018 papers whose first authors are both called Wang.  After the
bibliography files are parsed, this extension finds the entries whose
citation text (the authors as the style prints them, and the year) would
coincide, orders each such group by date (month, then title), and appends
a, b, ... to their year: "Su, 2021a", "Su, 2021b".  The suffix is part of
the year everywhere, so the citation and the bibliography agree.

The bibliography page lists the entries as a bullet list sorted by author
and year (``:list: bullet`` in ``book/bibliography.md``), so an author–year
citation links to an author–year entry, not to a number.
"""

from __future__ import annotations

import string
from collections import defaultdict

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


def _citation_authors(entry) -> tuple:
    """The authors as an author–year citation prints them."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    last = tuple(" ".join(p.last_names) for p in persons)
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


def _suffix(app):
    domain = app.env.get_domain("cite")
    add_year_suffixes(domain.bibdata.data.entries)


def setup(app):
    # after sphinxcontrib-bibtex has parsed the .bib files (its own handler, priority 500)
    app.connect("builder-inited", _suffix, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
