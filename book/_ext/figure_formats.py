"""Render each chapter's figures only in the format the builder shows.

``attnscale.use_book_style`` renders every inline figure as SVG and as PDF,
so that a notebook carries both: the HTML pages show the SVG, the LaTeX
(PDF) build includes the PDF.  A build uses one of the two, and rendering
the other cost about a second of a heavy chapter's execution (a figure is
drawn once per format).  When the builder starts, this extension sets
``ATTNSCALE_FIGURE_FORMATS`` (read by ``use_book_style``) to the format it
takes, before any chapter's kernel starts: kernels inherit the build's
environment.  A variable already set is left alone; a reader's own Jupyter
session, which has none, still gets both formats.
"""

from __future__ import annotations

import os

#: The variable ``attnscale.plotting.use_book_style`` reads.
VARIABLE = "ATTNSCALE_FIGURE_FORMATS"

#: The figure format each builder's output takes (MyST-NB's mime priority:
#: SVG before PDF for HTML, PDF for LaTeX, which cannot include SVG).
FORMAT_OF_BUILDER = {"html": "svg", "dirhtml": "svg", "singlehtml": "svg", "latex": "pdf"}


def _set_formats(app):
    chosen = FORMAT_OF_BUILDER.get(app.builder.name)
    if chosen is not None:
        os.environ.setdefault(VARIABLE, chosen)


def setup(app):
    # before MyST-NB executes anything: chapters execute while they are read
    app.connect("builder-inited", _set_formats)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
