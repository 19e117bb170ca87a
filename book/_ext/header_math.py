r"""Table header cells that hold a formula alone show it as HTML text.

MathJax draws each glyph through CSS, so a header cell that holds only
``$d$`` or ``$n = 512$`` has no text on the page: axe-core reports it as an
empty table header (rule ``empty-table-header``), and a screen reader
moving along a row hears no column name.  In the HTML build, after the
references are resolved, each math node of such a cell is replaced by the
same formula written in HTML: italic letters, upright digits and function
names, Greek letters, ``<sup>`` and ``<sub>`` for scripts, √ for a square
root.  A formula this converter cannot write (a fraction, an unknown
command) keeps its MathJax rendering.  Other builders (LaTeX) are left alone.
"""

from __future__ import annotations

import html
import re

from docutils import nodes
from tex_symbols import GREEK as _GREEK  # book/_ext/tex_symbols.py (italic, as TeX sets them)
from tex_symbols import OPERATORS as _SYMBOLS

_FUNCTIONS = {"log", "ln", "exp", "max", "min"}
_UPRIGHT = {"mathrm", "text", "operatorname"}
_SPACES = {",": "\u2009", ";": " ", ":": " ", " ": " ", "!": ""}
_TOKEN = re.compile(r"\\[A-Za-z]+|\\[,;:! ]|[A-Za-z]|\d+|\s+|.", re.S)


class _Unknown(Exception):
    """A piece of TeX this converter does not write: the formula keeps MathJax."""


def _group(tokens: list[str], k: int) -> tuple[list[str], int]:
    """The argument at ``tokens[k]``: a braced group's tokens, or one token."""
    while k < len(tokens) and tokens[k].isspace():
        k += 1
    if k >= len(tokens):
        raise _Unknown("an argument is missing")
    if tokens[k][1:] in _UPRIGHT or tokens[k] == "\\sqrt":  # a command and its own argument
        body, j = _group(tokens, k + 1)
        return [tokens[k], "{", *body, "}"], j
    if tokens[k] != "{":
        return [tokens[k]], k + 1
    depth, start = 0, k
    for j in range(k, len(tokens)):
        depth += {"{": 1, "}": -1}.get(tokens[j], 0)
        if depth == 0:
            return tokens[start + 1 : j], j + 1
    raise _Unknown("unbalanced braces")


def _html(tokens: list[str]) -> str:
    out, k = [], 0
    while k < len(tokens):
        token = tokens[k]
        k += 1
        if token.isspace():  # TeX ignores spaces; "(n, d)" reads better with them
            out.append(" ")
            continue
        if token in ("^", "_"):
            body, k = _group(tokens, k)
            tag = "sup" if token == "^" else "sub"
            out.append(f"<{tag}>{_html(body)}</{tag}>")
        elif token == "{":
            body, k = _group(tokens, k - 1)
            out.append(_html(body))
        elif token.startswith("\\"):
            name = token[1:]
            if name in _GREEK:
                out.append(f"<i>{_GREEK[name]}</i>")
            elif name in _SYMBOLS:
                out.append(f" {_SYMBOLS[name]} ")
            elif name in _FUNCTIONS:
                out.append(f"{' ' if out else ''}{name} ")
            elif name in _SPACES:
                out.append(_SPACES[name])
            elif name in _UPRIGHT:
                body, k = _group(tokens, k)
                out.append(html.escape("".join(body)))
            elif name == "sqrt":
                body, k = _group(tokens, k)
                inner = _html(body)
                out.append(f"√{inner}" if len(body) == 1 else f"√({inner})")
            else:
                raise _Unknown(token)
        elif token.isalpha():
            out.append(f"<i>{token}</i>")
        elif token == "-":
            out.append("−")
        elif token in "=<>":
            out.append(f" {html.escape(token)} ")
        elif token == "}":
            raise _Unknown("unbalanced braces")
        else:
            out.append(html.escape(token))
    return re.sub(r" {2,}", " ", "".join(out))


def math_html(tex: str) -> str | None:
    """A simple formula as HTML text (``\\alpha^*`` -> ``<i>α</i><sup>*</sup>``), or None."""
    try:
        return _html(_TOKEN.findall(tex)).strip()
    except _Unknown:
        return None


def _only_math(entry: nodes.entry) -> bool:
    """A cell whose text is all inside formulas (some formula, no word beside it)."""
    maths = list(entry.findall(nodes.math))
    outside = [t for t in entry.findall(nodes.Text) if not any(t.parent is m for m in maths)]
    return bool(maths) and not "".join(outside).strip()


def _write_headers(app, doctree, docname):
    if app.builder.format != "html":
        return
    for head in doctree.findall(nodes.thead):
        for entry in head.findall(nodes.entry):
            if not _only_math(entry):
                continue
            for math in list(entry.findall(nodes.math)):
                text = math_html(math.astext())
                if text is not None:
                    written = f'<span class="header-math">{text}</span>'
                    math.replace_self(nodes.raw("", written, format="html"))


def setup(app):
    app.connect("doctree-resolved", _write_headers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
