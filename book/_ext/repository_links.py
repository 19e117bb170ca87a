"""Repository and launch buttons only for a book published from a real repository.

sphinx-book-theme's repository button and its launch (Binder) menu need the
URL of the public repository the book is built from.  A URL typed into
``_config.yml`` is wrong for every fork and for a book built before it is
published: the buttons then lead to a 404 or a Binder error.  So the URL is
given at build time, by whoever publishes the book::

    ATTNSCALE_REPOSITORY_URL=https://github.com/<owner>/<repo> jupyter-book build . --all -W -n --keep-going

(``ATTNSCALE_REPOSITORY_BRANCH`` names the branch, default ``main``).  With
it, the pages get the repository button and the Binder launch menu
(``launch_buttons`` of ``_config.yml``).  Without it, they get neither, and
each chapter's header offers what works offline instead: a link to the
landing page's instructions for rerunning a chapter (the executed ``.ipynb``
stays in the download menu, ``book/_ext/notebook_downloads.py``).
"""

from __future__ import annotations

import os
import re

from sphinx.errors import ConfigError

URL_VARIABLE = "ATTNSCALE_REPOSITORY_URL"
BRANCH_VARIABLE = "ATTNSCALE_REPOSITORY_BRANCH"

#: https://<host>/<owner>/<repository>, as sphinx-book-theme splits it.
_URL = re.compile(r"^https://[A-Za-z0-9.-]+\.[A-Za-z]{2,}/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/?$")

#: Where the landing page explains how to rerun a chapter (book/intro.md).
RERUN_PAGE, RERUN_ANCHOR = "book/intro", "rerunning-a-chapter"


def repository_url() -> str:
    """The repository URL given at build time, or "" (none given)."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url and not _URL.match(url):
        raise ConfigError(
            f"{URL_VARIABLE} must be a repository URL such as https://github.com/owner/repo, got {url!r}"
        )
    return url.rstrip("/")


def _configure(app, config):
    options = config.html_theme_options
    url = repository_url()
    if url:
        options["repository_url"] = url
        options["repository_branch"] = os.environ.get(BRANCH_VARIABLE, "").strip() or "main"
        options["use_repository_button"] = True
    else:
        options["repository_url"] = ""
        options["use_repository_button"] = False
        options["launch_buttons"] = {}
    app._repository_url = url


def _rerun_button(app, pagename, templatename, context, doctree):
    """No launch menu: a chapter's header links to the rerun instructions instead."""
    if getattr(app, "_repository_url", "") or "header_buttons" not in context:
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}) or pagename == RERUN_PAGE:
        return
    context["header_buttons"].insert(
        0,
        {
            "type": "link",
            "url": f"{context['pathto'](RERUN_PAGE)}#{RERUN_ANCHOR}",
            "tooltip": "Rerun this chapter on your computer",
            "icon": "fas fa-rocket",
            "label": "rerun-chapter-button",
        },
    )


def setup(app):
    # after jupyter-book has put _config.yml's repository and launch buttons
    # into html_theme_options, before sphinx-book-theme reads them
    app.connect("config-inited", _configure, priority=900)
    # after sphinx-book-theme has built the header buttons (priority 501)
    app.connect("html-page-context", _rerun_button, priority=610)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
