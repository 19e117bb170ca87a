"""One figure style for every chapter.

Figures are drawn on an opaque white background, so they stay readable
when the book is switched to its dark theme.  In a notebook they are shown
as vector graphics: every figure carries an SVG (what the HTML book and
Jupyter display, sharp at any zoom), which the PDF build converts to a
vector PDF for LaTeX (``sphinxcontrib.cairosvgconverter``), so no figure is
a low-resolution bitmap.  Text sizes are in points of the figure as drawn,
and the book draws its figures about 4.2 in wide (at most 4.6), panels
stacked one above the other and legends under the axes: a phone 390 px
wide shows a figure about 342 px wide, so the smallest text, 9.5 points,
is shown at 9.5 x 342 / (4.2 x 72), about 10.7 CSS px (and larger on a
desktop, where a figure is shown at its natural width).
``tests/test_browser.py`` measures it on every page at both widths.
"""

from __future__ import annotations

__all__ = ["LINESTYLES", "MARKERS", "PALETTE", "use_book_style"]

#: Formats every inline figure is rendered in.  SVG only: the HTML book and
#: Jupyter show it, and the PDF build (which reuses the HTML build's executed
#: chapters) converts it to PDF at the LaTeX stage (_config.yml).  Rendering a
#: PDF beside it in every chapter cost about as much as the SVG itself.
FIGURE_FORMATS = ("svg",)

#: The colour cycle (C0, C1, ...): Okabe and Ito's palette for readers with
#: any common colour-vision deficiency (Okabe & Ito 2008, "Color Universal
#: Design"), without its yellow, which is too light on white; blue, orange,
#: bluish green, vermillion, reddish purple, sky blue, black.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")

#: Markers to tell lines apart without colour, in the palette's order
#: (a chapter passes ``marker=MARKERS[k]`` where lines carry markers).
MARKERS = ("o", "s", "^", "D", "v", "P", "X")

#: Line styles to tell curves apart without colour where a curve carries no
#: marker along its length, in the palette's order (solid, dashed,
#: dash-dot, dotted, then long dashes).
LINESTYLES = ("-", "--", "-.", ":", (0, (6, 2)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)))

BOOK_STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 200,  # any bitmap that is still made (e.g. savefig to .png) is 2x
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10.5,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10.5,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "legend.fontsize": 9.5,
    "figure.constrained_layout.use": True,
    # (a string: matplotlib parses it, so this module needs no import of it)
    "axes.prop_cycle": f"cycler(color={list(PALETTE)!r})",
    # text as paths: the SVG looks the same without the fonts installed
    "svg.fonttype": "path",
    # the SVG's element ids do not change from one build to the next (the
    # creation date is left out where the figure is saved: use_book_style)
    "svg.hashsalt": "attnscale",
}


def use_book_style() -> None:
    """Apply the book's matplotlib style and show figures as SVG.

    White background, light grid, text of at least 9.5 points, and, when
    running inside IPython/Jupyter, inline figures rendered as SVG
    instead of PNG (``matplotlib_inline.backend_inline.set_matplotlib_formats``).
    Outside IPython only the style is applied.  Imports matplotlib lazily, so
    that the numerical package does not depend on it.
    """
    import matplotlib as mpl

    mpl.rcParams.update(BOOK_STYLE)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the book only
        return
    if get_ipython() is None:
        return
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    # No tight bounding box (the inline backend's default): constrained layout
    # keeps axes, their labels, titles and legends inside the figure (text
    # placed by hand outside the axes would be cut off), and the box adds a
    # pass over every artist's extent (15-20% of a figure's rendering).
    # No creation date in the SVG (matplotlib writes one by default), so a
    # rebuild gives the same file, and the same image name in the book.
    set_matplotlib_formats(*FIGURE_FORMATS, bbox_inches=None, metadata={"Date": None})
