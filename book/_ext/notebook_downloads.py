"""Offer each executed chapter as a .ipynb download that reads well in Jupyter.

MyST-NB executes the text notebooks and keeps the executed copies next to
the HTML output (``<outdir>/../jupyter_execute``).  For every notebook page
this extension writes a reader's copy of that notebook into ``_sources``
and tells sphinx-book-theme about it (``ipynb_source``), which adds an
".ipynb" entry to the page's download menu beside the ".md" source.

The reader's copy differs from the executed notebook in what plain Jupyter
cannot do itself:

* glued figures (``glue(name, fig, display=False)``) are not in the
  executed notebook (MyST-NB moves glued outputs to ``<name>.glue.json``);
  each is put back as an output of the code cell that glues it;
* ``{glue:text}`name:fmt``` and the other glue roles in Markdown cells are
  replaced by the glued value's text, formatted as on the web page;
  a ``{glue:md}`` (or ``{glue}``, ``{glue:math}``) block becomes the glued
  Markdown (or text, or display math) itself;
  a ``{glue:figure}`` block becomes its caption, in italics, marked as the
  caption of the figure above;
* an ``{only} latex`` block becomes its text and an ``{only} html`` block
  (the recipes page's calculator form) is left out;
* a numbered table (``{table}`` around a pipe table, or ``{list-table}``,
  as ``attnscale.support.formatting`` writes them into cell outputs and glued
  Markdown) becomes a pipe table with its caption in italics above it;
* other MyST roles become plain text: ``{cite:p}`a,b``` -> "[a, b]",
  ``{ref}`label``` -> "label", ``{eq}`label``` -> "(label)".

The code cells are untouched, so the copy runs top to bottom after
``pip install -r requirements.txt``.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from sphinx.errors import ExtensionError

IMAGE_TYPES = ("image/svg+xml", "image/png", "image/jpeg")

ROLE = re.compile(r"\{(?P<role>[a-zA-Z:_-]+)\}`(?P<body>[^`]*)`")
GLUE_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<kind>glue|glue:any|glue:md|glue:math)\}\s*(?P<key>\S+)\s*\n"
    r"(?P<body>.*?)^(?P=fence)\s*$",
    re.S | re.M,
)
# {only} blocks: the web page's interactive part (html) means nothing in
# Jupyter, while the sentence written for the PDF (latex), which points to the
# web page and the command line, reads right there too.
ONLY_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{only\}\s*(?P<expr>\S+)\s*\n(?P<body>.*?)^(?P=fence)[ \t]*\n?", re.S | re.M
)
GLUE_FIGURE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{glue:figure\}\s*(?P<key>\S+)\s*\n(?P<body>.*?)^(?P=fence)\s*$", re.S | re.M
)


def _show_figures(notebook, values: dict) -> None:
    """Put each glued image back under the code cell that glued it."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = _plain(cell.get("source", ""))
        for key, output in values.items():
            data = output.get("data", {})
            if not any(kind in data for kind in IMAGE_TYPES):
                continue
            if re.search(rf"""glue\(\s*["']{re.escape(key)}["']""", source):
                cell.setdefault("outputs", []).append(
                    {"output_type": "display_data", "data": data, "metadata": {}}
                )


def _plain(text) -> str:
    return "".join(text) if isinstance(text, list) else str(text)


def _glue_text(values: dict, body: str) -> str:
    from myst_nb.core.variables import format_plain_text

    key, _, fmt = body.partition(":")
    key = key.split("::")[-1]  # "docpath::key"
    bundle = values.get(key, {}).get("data")
    if bundle is None or "text/plain" not in bundle:
        return body
    if "text/latex" in bundle and not fmt and "text/plain" not in bundle:
        return _plain(bundle["text/latex"])
    return format_plain_text(_plain(bundle["text/plain"]), fmt)


def _flatten_roles(source: str, values: dict) -> str:
    def replace(match):
        role, body = match.group("role"), match.group("body")
        key = body.split("::")[-1].partition(":")[0]  # "key:myst" -> "key"
        markdown = values.get(key, {}).get("data", {}).get("text/markdown")
        if role == "glue:md" and markdown is not None:
            return _plain(markdown).strip()
        if role in ("glue", "glue:", "glue:text", "glue:any", "glue:md"):
            return _glue_text(values, body)
        if role == "glue:math":
            return f"${_glue_text(values, body)}$"
        if role.startswith("cite"):
            return "[" + ", ".join(k.strip() for k in body.split(",")) + "]"
        if role in ("eq", "numref"):
            return f"({body})"
        if role in ("math",):
            return f"${body}$"
        # {ref}`text <label>` -> text; {ref}`label` -> label; {func}`x` -> `x`
        text = re.sub(r"\s*<[^>]*>$", "", body)
        if role in ("func", "mod", "class", "meth", "attr", "data", "py:func", "py:mod"):
            return f"`{text.lstrip('~')}`"
        return text

    def figure(match):
        lines = match.group("body").splitlines()
        caption = " ".join(line.strip() for line in lines if not line.strip().startswith(":"))
        return f"*Figure above ({match.group('key')}): {caption.strip()}*\n"

    def block(match):
        key = match.group("key").split("::")[-1]
        data = values.get(key, {}).get("data", {})
        if match.group("kind") == "glue:md" and "text/markdown" in data:
            return _plain(data["text/markdown"]).rstrip() + "\n"
        if match.group("kind") == "glue:math":
            return f"$$\n{_glue_text(values, key)}\n$$\n"
        return _glue_text(values, key) + "\n"

    source = ONLY_BLOCK.sub(lambda m: m.group("body") if m.group("expr") == "latex" else "", source)
    source = GLUE_FIGURE.sub(figure, source)
    source = GLUE_BLOCK.sub(block, source)
    return ROLE.sub(replace, source)


TABLE_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<kind>table|list-table)\}[ \t]*(?P<caption>[^\n]*)\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:[^\n]*\n)*)(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.S | re.M,
)


def _list_table_rows(body: str) -> list[list[str]]:
    """The rows of a ``{list-table}`` body: ``* - a`` starts a row, ``  - b`` a cell."""
    rows: list[list[str]] = []
    for line in body.splitlines():
        if line.startswith("* -"):
            rows.append([line[3:].strip()])
        elif line.startswith("  -") and rows:
            rows[-1].append(line[3:].strip())
        elif line.strip() and rows:  # a cell's further line (a mean's interval)
            rows[-1][-1] += "<br>" + line.strip()
    return rows


def _plain_tables(text: str) -> str:
    """MyST table directives as what plain Jupyter renders: a caption, then a pipe table."""

    def table(match):
        caption = match.group("caption").strip()
        body = match.group("body").strip("\n")
        if match.group("kind") == "list-table":
            rows = _list_table_rows(body)
            if not rows:
                return match.group(0)
            lines = ["| " + " | ".join(row) + " |" for row in rows]
            lines.insert(1, "|" + " --- |" * len(rows[0]))
            body = "\n".join(lines)
        return (f"*{caption}*\n\n" if caption else "") + body + "\n"

    return TABLE_BLOCK.sub(table, text)


def reader_copy(notebook: dict, values: dict) -> dict:
    """The executed notebook as a reader opens it in plain Jupyter.

    ``values`` are the glued outputs by name (MyST-NB takes them out of the
    executed notebook and keeps them in ``<name>.glue.json`` beside it).
    """
    notebook = copy.deepcopy(notebook)
    _show_figures(notebook, values)
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            cell["source"] = _plain_tables(_flatten_roles(_plain(cell["source"]), values))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/markdown" in data:
                data["text/markdown"] = _plain_tables(_plain(data["text/markdown"]))
    return notebook


def _add_notebook(app, pagename, templatename, context, doctree):
    metadata = app.env.metadata.get(pagename, {})
    if "kernelspec" not in metadata:
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.exists():
        raise ExtensionError(f"notebook_downloads: no executed notebook for {pagename} at {executed}")
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    notebook = json.loads(executed.read_text(encoding="utf-8"))
    glued = executed.with_name(executed.name.removesuffix(".ipynb") + ".glue.json")
    values = json.loads(glued.read_text(encoding="utf-8")) if glued.exists() else {}
    text = json.dumps(reader_copy(notebook, values), indent=1, ensure_ascii=False)
    target.write_text(text + "\n", encoding="utf-8")
    context["ipynb_source"] = f"{pagename}.ipynb"


def setup(app):
    # before sphinx-book-theme builds the header buttons (default priority 500),
    # so that the download menu offers the .ipynb ...
    app.connect("html-page-context", _add_notebook, priority=100)
    # ... and again after its launch buttons, which copy the executed notebook
    # over the reader's copy when launch buttons are configured
    app.connect("html-page-context", _add_notebook, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
