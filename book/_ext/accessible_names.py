"""The name a screen reader speaks is the label the reader sees (WCAG 2.5.3).

WCAG 2.5.3 (Label in Name, level A) asks that a control's accessible name
contain its visible label, so that a speech-input user can say what they
see ("click Show code cell source") and a screen-reader user hears what a
sighted colleague reads out.

* MyST-NB writes every fold toggle (the ``hide-input``, ``hide-output`` and
  ``hide-cell`` tags) as ``<summary aria-label="Toggle hidden content">``
  around its visible label, "Show code cell source" when closed and "Hide
  code cell source" when open.  The aria-label replaces that label: a
  screen reader says "Toggle hidden content" for every fold, and "click Show
  code cell source" finds nothing.  Here the summary is written without the
  aria-label, so its name is its text; MyST-NB's stylesheet shows one of the
  two labels at a time (the other is ``display: none``), so the name follows
  the label as the fold opens and closes.

The theme's search and colour-mode buttons had the same fault; they are
fixed by template overrides in ``book/_templates`` (each says what it
changes).  ``tests/test_browser.py`` checks every page with axe-core's rule
``label-content-name-mismatch``.
"""

from __future__ import annotations

import re

#: An aria-label on a fold's <summary>: it would hide the visible label.
_SUMMARY_LABEL = re.compile(r'(<summary)\s+aria-label="[^"]*"')


def setup(app):
    # MyST-NB must have registered its node before its HTML visitor is replaced
    app.setup_extension("myst_nb")
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput, visit_HideCellInput

    def visit_fold(self, node):
        start = len(self.body)
        visit_HideCellInput(self, node)
        self.body[start:] = [_SUMMARY_LABEL.sub(r"\1", part) for part in self.body[start:]]

    app.add_node(HideCodeCellNode, override=True, html=(visit_fold, depart_HideCellInput))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
