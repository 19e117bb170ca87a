"""One figure style for every chapter.

Figures are drawn on an opaque white background, so they stay readable
when the book is switched to its dark theme, and at a resolution that is
sharp on high-density screens.
"""

from __future__ import annotations

__all__ = ["use_book_style"]

BOOK_STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 160,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "axes.titlesize": 10,
    "legend.fontsize": 9,
    "figure.constrained_layout.use": True,
}


def use_book_style() -> None:
    """Apply the book's matplotlib style (white background, light grid).

    Imports matplotlib lazily, so that the numerical package does not
    depend on it.
    """
    import matplotlib as mpl

    mpl.rcParams.update(BOOK_STYLE)
