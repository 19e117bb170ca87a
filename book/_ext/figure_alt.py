"""Give every figure image a text alternative taken from its caption.

Notebook figures reach the page as image nodes without ``alt`` (MyST-NB
writes the image file and points at it), so Sphinx's HTML writer falls
back to the file path, which a screen reader then reads aloud.  After the
references are resolved, each image inside a figure gets the figure's
caption as its ``alt`` (the whole caption's text, math in its TeX source);
an image output outside any figure gets a short generic description (and
an info line in the build log), so that no image has a path for alt text.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Alt text longer than this is cut at a word boundary (screen readers read
#: the caption anyway: it is the next element).
MAX_ALT = 300


def _caption_text(figure: nodes.figure) -> str:
    for child in figure.findall(nodes.caption):
        text = re.sub(r"\s+", " ", child.astext()).strip()
        if len(text) > MAX_ALT:
            text = text[:MAX_ALT].rsplit(" ", 1)[0] + " …"
        return text
    return ""


def _is_path_like(alt: str, uri: str) -> bool:
    return not alt or alt == uri or alt.endswith((".png", ".svg", ".jpg", ".jpeg", ".pdf"))


def _set_alt(app, doctree, docname):
    for figure in doctree.findall(nodes.figure):
        caption = _caption_text(figure)
        if not caption:
            continue
        for image in figure.findall(nodes.image):
            if _is_path_like(image.get("alt", ""), image.get("uri", "")):
                image["alt"] = caption
    for image in doctree.findall(nodes.image):
        if _is_path_like(image.get("alt", ""), image.get("uri", "")):
            image["alt"] = "Figure drawn by the code cell above (see the surrounding text)"
            logger.info("figure_alt: %s has an image outside a captioned figure", docname)


def setup(app):
    app.connect("doctree-resolved", _set_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
