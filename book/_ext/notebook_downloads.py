"""Offer each executed chapter as a .ipynb download.

MyST-NB executes the text notebooks and keeps the executed copies next to
the HTML output (``<outdir>/../jupyter_execute``).  For every notebook page
this extension copies that executed notebook into ``_sources`` and tells
sphinx-book-theme about it (``ipynb_source``), which adds an ".ipynb" entry
to the page's download menu beside the ".md" source.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError


def _add_notebook(app, pagename, templatename, context, doctree):
    metadata = app.env.metadata.get(pagename, {})
    if "kernelspec" not in metadata:
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.exists():
        raise ExtensionError(f"notebook_downloads: no executed notebook for {pagename} at {executed}")
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def setup(app):
    # before sphinx-book-theme builds the header buttons (default priority 500)
    app.connect("html-page-context", _add_notebook, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
