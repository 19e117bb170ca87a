r"""One figure style for every chapter.

Figures are drawn on an opaque white background, so they stay readable
when the book is switched to its dark theme.  In a notebook they are shown
as vector graphics: every figure carries an SVG (what the HTML book and
Jupyter display, sharp at any zoom), which the PDF build converts to a
vector PDF for LaTeX (``sphinxcontrib.cairosvgconverter``), so no figure is
a low-resolution bitmap.

Text sizes are in points of the figure as drawn.  The book draws its
figures 4.0 to 4.6 in wide, panels stacked one above the other and legends
under the axes.  A phone 390 px wide shows a figure :data:`PHONE_FIGURE_PX`
(342) CSS px wide, the theme's content column, so a glyph of :math:`s`
points in a figure :math:`w` inches wide is shown
:math:`s \cdot 342 / (72 w)` px tall there; a desktop shows the figure at
its natural width, :math:`4/3` px a point.  The smallest glyph is a
sub- or superscript of a tick label (the exponent of :math:`2^6` or
:math:`10^{-2}`): :data:`SCRIPT_SCALE` (0.8) of 10.5 points, which is
8.4 points, 9.1 px on a phone in the widest figure with scripts (4.4 in)
and 11.2 px on a desktop.  Ordinary text is 10.5 to 11 points, 14 to
14.7 px on a desktop.  ``tests/test_reading.py`` checks these sizes in
figures drawn with this style; ``tests/test_browser.py`` measures every
glyph of every figure of the built book at both widths.
"""

from __future__ import annotations

__all__ = ["LINESTYLES", "MARKERS", "PALETTE", "PHONE_FIGURE_PX", "SCRIPT_SCALE", "use_book_style"]

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

#: The width, in CSS px, at which a phone 390 px wide shows a figure: the
#: theme's content column at that viewport (measured in Chromium on the
#: built book: every figure, natural width 384 to 442 px, is shown 342 px wide).
PHONE_FIGURE_PX = 342

#: The size of mathtext's sub- and superscripts relative to their text.
#: Matplotlib draws them at 0.7 (TeX's script size), which put tick exponents
#: at 7.2 px on a phone; at 0.8 they stay at 9 px or more (module docstring).
#: Matplotlib offers no setting for it: :func:`use_book_style` sets the
#: constant its mathtext layout reads (``matplotlib._mathtext.SHRINK_FACTOR``),
#: and ``tests/test_reading.py`` checks that the scripts come out that size.
SCRIPT_SCALE = 0.8

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
    "font.size": 11,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "xtick.labelsize": 10.5,
    "ytick.labelsize": 10.5,
    "legend.fontsize": 10.5,
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

    White background, light grid, text of at least 10.5 points, sub- and
    superscripts at :data:`SCRIPT_SCALE` of their text, and, when
    running inside IPython/Jupyter, inline figures rendered as SVG
    instead of PNG (``matplotlib_inline.backend_inline.set_matplotlib_formats``).
    Outside IPython only the style is applied.  Imports matplotlib lazily, so
    that the numerical package does not depend on it.
    """
    import matplotlib as mpl
    from matplotlib import _mathtext, mathtext

    mpl.rcParams.update(BOOK_STYLE)
    if _mathtext.SHRINK_FACTOR != SCRIPT_SCALE:
        # read by mathtext's layout each time it shrinks a script; the layouts
        # already made at the old size are dropped from matplotlib's cache
        _mathtext.SHRINK_FACTOR = SCRIPT_SCALE
        mathtext.MathTextParser._parse_cached.cache_clear()
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
