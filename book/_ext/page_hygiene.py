"""Small fixes to what the theme and extensions put on every page.

* Inline scripts registered by extensions (sphinx-thebe's configuration,
  sphinx-togglebutton's selector) reach the page twice, once with the file
  name ``None`` and once with ``""``, so Sphinx does not see them as equal;
  a page then declares ``const THEBE_JS_URL`` twice and the browser reports
  a SyntaxError.  Identical inline scripts are kept once.
* docutils writes the bibliography as ``<div role="list">`` whose entries
  have ``role="doc-biblioentry"``, a role that is not a list item, so
  assistive technology sees an empty list (axe-core: "aria-required-children",
  critical).  After the build the entries' role becomes ``listitem``.
* ``nitpick_ignore`` arrives from ``_config.yml`` as YAML lists, but Sphinx
  looks up ``(type, target)`` tuples, so no entry would ever match; the
  entries become tuples.
* ``html_search_scorer`` is documented as relative to the configuration
  directory, but Sphinx 7.4 opens it as given, relative to the directory the
  build runs in (sphinx/search/__init__.py, IndexBuilder); a build started
  elsewhere would not find it.  A relative path becomes the book root's.
"""

from __future__ import annotations

from pathlib import Path


def _dedupe_inline_scripts(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for script in context.get("script_files", []):
        body = getattr(script, "attributes", {}).get("body")
        key = (getattr(script, "filename", None) or "", body)  # None and "" both mean inline
        if body and key in seen:
            continue
        seen.add(key)
        kept.append(script)
    if "script_files" in context:
        context["script_files"][:] = kept


def _bibliography_roles(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if 'role="doc-biblioentry"' in text:
            page.write_text(text.replace('role="doc-biblioentry"', 'role="listitem"'), encoding="utf-8")


def _nitpick_tuples(app, config):
    config.nitpick_ignore = [tuple(entry) for entry in config.nitpick_ignore]


def _search_scorer_path(app, config):
    scorer = config.html_search_scorer
    if scorer and not Path(scorer).is_absolute():
        config.html_search_scorer = str(Path(app.confdir, scorer))


def setup(app):
    app.connect("config-inited", _nitpick_tuples)
    app.connect("config-inited", _search_scorer_path)
    app.connect("build-finished", _bibliography_roles)
    # early: html-page-context stops at the first handler that returns a value
    app.connect("html-page-context", _dedupe_inline_scripts, priority=50)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
