"""Rerunning a chapter as a notebook gives the numbers the book printed.

Each chapter is converted to .ipynb with jupytext and executed with nbclient,
as a reader would rerun it (``tests/rerun_chapters.py``, started in the
background while the book builds; see ``tests/conftest.py``).  Then, against
the session's book build:

* every printed line must equal the build's (its executed notebook), and
* every number glued into the prose, formatted as the prose formats it,
  must appear in the built page.

This is also the determinism test: two independent executions must agree
to the last printed digit.
"""

from __future__ import annotations

import ast
import html as html_lib
import re

import nbformat
import pytest
from bookbuild import notebook_chapters

pytestmark = pytest.mark.book

GLUE_ROLE = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")
GLUE_MIME = "application/papermill.record/text/plain"


def streams(notebook) -> dict[str, str]:
    """Printed text of each code cell of an executed notebook."""
    out = {}
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for index, cell in enumerate(code_cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                key = f"cell {index} {output['name']}"
                out[key] = out.get(key, "") + output["text"]
    return out


def glued(notebook) -> dict[str, object]:
    """Glued values of an executed notebook, as Python values."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record and GLUE_MIME in output.get("data", {}):
                text = output["data"][GLUE_MIME]
                try:
                    values[record["name"]] = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    values[record["name"]] = text
    return values


def one_space(text: str) -> str:
    """Every run of whitespace (no-break spaces included) as one plain space."""
    return re.sub(r"\s+", " ", text)


def page_text(path) -> str:
    text = re.sub(r"<[^>]+>", " ", path.read_text())
    return one_space(html_lib.unescape(text))


@pytest.mark.parametrize("chapter", notebook_chapters(), ids=lambda p: p.stem)
def test_rerun_prints_the_same_numbers(built_book, rerun_notebook, chapter):
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"
    notebook = rerun_notebook(chapter)

    built = nbformat.read(html.parent / "jupyter_execute" / "book" / f"{chapter.stem}.ipynb", as_version=4)
    expected, actual = streams(built), streams(notebook)
    different = {
        key: (expected.get(key), actual.get(key))
        for key in expected.keys() | actual.keys()
        if expected.get(key) != actual.get(key)
    }
    assert different == {}, f"{chapter.name}: a rerun printed something else: {list(different.items())[:2]}"

    values = glued(notebook)
    text = page_text(html / "book" / f"{chapter.stem}.html")
    missing = []
    for key, spec in GLUE_ROLE.findall(chapter.read_text()):
        assert key in values, f"{chapter.name}: the rerun glued no value '{key}'"
        shown = one_space(format(values[key], spec) if spec else str(values[key]))
        if shown not in text:
            missing.append(f"{key} = {shown}")
    assert missing == [], f"{chapter.name}: the built page does not show the rerun's {missing[:5]}"
