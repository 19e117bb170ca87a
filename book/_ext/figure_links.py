"""Every figure opens full size on a tap: each image links to its own file.

On a phone the column is about 342 CSS pixels wide, so a figure drawn 6.4 to
10.5 inches wide is shown at a third to a half of its size and its smallest
text falls under 9 pixels.  Sphinx links an image to its full-size file only
when the source scaled it (``html_scaled_image_link``); notebook figures are
never scaled there, so none was a link.  After the references are resolved,
every image of an HTML page that is not already inside a link is wrapped in
one to its file in ``_images/`` (the same file the page shows, so nothing is
added to the build), with the class ``figure-full-size`` for the style sheet.
``tests/test_browser.py`` measures the figures' text at 390 px and accepts
small text only where the figure is such a link.
"""

from __future__ import annotations

import posixpath

from docutils import nodes
from sphinx.util.osutil import relative_uri


def _full_size_links(app, doctree, docname):
    builder = app.builder
    if builder.format != "html":
        return
    images_dir = getattr(builder, "imagedir", "_images")
    for image in list(doctree.findall(nodes.image)):
        if isinstance(image.parent, nodes.reference):
            continue
        uri = image.get("uri", "")
        candidates = image.get("candidates", {})
        if uri not in app.env.images and len(candidates) == 1:
            uri = next(iter(candidates.values()))
        if uri not in app.env.images:
            continue  # an external image: nothing of ours to open
        name = app.env.images[uri][1]
        target = relative_uri(builder.get_target_uri(docname), images_dir)
        reference = nodes.reference(
            "",
            "",
            internal=True,
            refuri=posixpath.join(target, name),
            classes=["figure-full-size"],
            reftitle="Open the figure full size",
        )
        image.replace_self(reference)
        reference.append(image)


def setup(app):
    app.connect("doctree-resolved", _full_size_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
