"""Give every figure image a text alternative taken from its caption.

Notebook figures reach the page as image nodes without ``alt`` (MyST-NB
writes the image file and points at it), so Sphinx's HTML writer falls
back to the file path, which a screen reader then reads aloud.  After the
references are resolved, each image inside a figure gets the figure's
caption's first sentence as its ``alt``, its math spoken as text (α, √d,
log n; never raw TeX), so that a screen reader meets a short description
before the full caption, which follows;
an image output outside any figure gets a short generic description (and
an info line in the build log), so that no image has a path for alt text.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.util import logging
from tex_symbols import GREEK, OPERATORS  # book/_ext/tex_symbols.py

logger = logging.getLogger(__name__)

#: Alt text longer than this (a first sentence that long) is cut at a word
#: boundary; the full caption is the next element a screen reader reads.
MAX_ALT = 300

_SYMBOLS = {
    **GREEK,
    **OPERATORS,
    "Delta": "Δ",
    "infty": "∞",
    "to": "→",
    "ll": "≪",
    "gg": "≫",
    "neq": "≠",
    "ne": "≠",
    "sim": "~",
    "propto": "∝",
    "ldots": "…",
    "dots": "…",
    "cdots": "…",
    "star": "*",
    "prime": "′",
    "sum": "Σ",
    "in": "∈",
}


def _grouped(text: str) -> str:
    """A term as it reads after √ or around /: bare when one symbol, else in parentheses."""
    return text if len(text.strip()) <= 2 or (text.startswith("\\") and " " not in text) else f"({text})"


#: Unicode's superscript and subscript forms: a script made only of these is
#: written with them (10³, pᵢ², aₜ); any other is spelled out in words.
_SUPERSCRIPT = dict(zip("0123456789+-−=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁿⁱ", strict=True))
_SUBSCRIPT = dict(zip("0123456789+-−=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ", strict=True))
#: A script: ``_`` or ``^``, then a braced group (innermost braces) or one character or command.
_SCRIPT = re.compile(r"(\\?[A-Za-z]+|[^\s_^{}])?\s*([_^])\s*(\{[^{}]*\}|\\[A-Za-z]+|[^\s{}\\])")


def _script(match: re.Match) -> str:
    """One sub- or superscript as plain text: Unicode forms where they exist, else spelled out."""
    base, kind, body = match.group(1) or "", match.group(2), match.group(3).strip("{}").strip()
    forms = _SUPERSCRIPT if kind == "^" else _SUBSCRIPT
    if body and all(ch in forms for ch in body):
        return base + "".join(forms[ch] for ch in body)
    if kind == "^":
        return f"{base} to the power {_grouped(body)}" if body != "*" else base + "*"
    if base in ("log", "\\log"):
        return f"log base {body} of"
    return f"{base} {body}"


def speakable(tex: str) -> str:
    """TeX math as plain text a screen reader can say: ``\\sqrt{\\log n}`` -> ``√(log n)``.

    Sub- and superscripts become Unicode script forms where every character
    has one (``10^3`` -> 10³, ``p_i^2`` -> pᵢ²), else words
    (``e^{-c}`` -> e to the power (-c), ``\\log_L n`` -> log base L of n,
    ``n_{\\mathrm{ref}}`` -> n ref); ``\\mathbb E`` -> E.
    """
    text = tex
    text = re.sub(
        r"\\(?:mathbb|mathrm|mathbf|mathit|mathcal|boldsymbol|operatorname|text)\s*([A-Za-z0-9])", r"\1", text
    )
    text = re.sub(r"\\sqrt\s*(\w)", r"√\1", text)
    for _ in range(3):  # nested arguments, innermost first
        text = re.sub(r"\\sqrt\{([^{}]*)\}", lambda m: "√" + _grouped(m.group(1)), text)
        text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: f"{_grouped(m[1])}/{_grouped(m[2])}", text)
        text = re.sub(
            r"\\(?:mathbb|mathrm|text|operatorname|mathbf|mathit|mathcal|boldsymbol)\{([^{}]*)\}", r"\1", text
        )
    text = re.sub(r"\\sqrt\s*(\w)", r"√\1", text)
    text = re.sub(r"\\(left|right|big|Big|bigg|Bigg)\b", "", text)
    text = re.sub(r"\\[,;:! ]", " ", text)
    for _ in range(3):  # a script's script, innermost first
        text = _SCRIPT.sub(_script, text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _SYMBOLS.get(m.group(1), m.group(1)), text)
    text = text.replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()


def _text(node) -> str:
    if isinstance(node, nodes.math):
        return speakable(node.astext())
    if isinstance(node, nodes.Text):
        return str(node)
    return "".join(_text(child) for child in node.children)


def _caption_text(figure: nodes.figure) -> str:
    for child in figure.findall(nodes.caption):
        text = re.sub(r"\s+", " ", _text(child)).strip()
        first = re.split(r"(?<=[.!?])\s+(?=[A-Z(])", text, maxsplit=1)[0]
        if len(first) > MAX_ALT:  # a long first sentence: its clause before a colon or semicolon
            first = re.split(r"[:;]\s", first, maxsplit=1)[0].rstrip(".") + "."
        if len(first) > MAX_ALT:  # still long: cut (tests/test_links.py asks for a shorter caption)
            first = first[:MAX_ALT].rsplit(" ", 1)[0] + " …"
        return first
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
