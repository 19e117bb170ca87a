"""Numbers for prose: digits that match the uncertainty, and no e-notation.

The book glues every number into its text.  Python's own formats are made
for programs: ``f"{x:.2f} ± {se:.2f}"`` prints ``1.91 ± 0.00`` when the
standard error is 0.003, and ``f"{x:.1e}"`` prints ``7.4e-04``.  The two
functions here write what a reader expects instead:

* :func:`format_uncertain` rounds the uncertainty to one significant digit
  (two when its leading digit is 1, since rounding 0.014 to 0.01 would
  understate it by a third) and the value to the same decimal place, the
  convention of the *Guide to the Expression of Uncertainty in Measurement*
  (JCGM 100:2008, section 7.2.6): ``1.914 ± 0.003``, ``(7.40 ± 0.05) × 10⁻⁴``;
* :func:`format_number` rounds to a number of significant digits and writes
  very large or very small numbers as ``m × 10ⁿ`` with a superscript exponent:
  ``7.4 × 10⁻⁴``, ``1.0 × 10¹⁰⁵``;
* :func:`format_interval` writes a mean and the half-width of its interval
  to a fixed number of decimals, ``0.826 ± 0.022``: the one "mean ± half"
  of the book's tables, whose columns keep the same decimals in every row.

All three return plain Unicode text (a true minus sign ``−``, and no-break
spaces around ``±`` and ``×`` so that a number never splits over two lines),
ready for ``glue(name, text)`` and ``{glue:text}`name``` in a chapter.

Tables of results are written by :func:`results_table` (a MyST
``{list-table}``) or, for a Markdown pipe table a chapter already builds,
:func:`captioned_table` (a ``{table}`` around it): each gets a caption and
a label (so the book numbers it and a ``{numref}`` can point at it), a
header cell in every column, true minus signs in the numbers, and ``±``
bound to its numbers by no-break spaces (a cell never wraps mid-number).
"""

from __future__ import annotations

import itertools
import math
import numbers
import re

__all__ = [
    "captioned_table",
    "format_interval",
    "format_number",
    "format_uncertain",
    "pipe_table",
    "results_table",
    "typographic_minus",
]

MINUS = "\u2212"
NBSP = "\u00a0"
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _real(value, name: str) -> float:
    """A finite real scalar, refusing bools, strings, complex and arrays."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        # NumPy scalars of integer or float dtype are numbers.Real; 0-d arrays are not
        dtype = getattr(value, "dtype", None)
        if getattr(value, "ndim", None) == 0 and dtype is not None and dtype.kind in "iuf":
            return _real(value.item(), name)
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _digits(value, name: str, low: int = 1, high: int = 17) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not low <= int(value) <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value}")
    return int(value)


def _exponent(x: float, digits: int) -> int:
    """Decimal exponent of ``x`` after rounding it to ``digits`` significant digits."""
    if x == 0:
        return 0
    return int(f"{x:.{digits - 1}e}".split("e")[1])


def _sign(text: str) -> str:
    """A true minus sign; no sign on a value that rounds to zero."""
    if text.startswith("-"):
        if not any(c in "123456789" for c in text):
            return text[1:]
        return MINUS + text[1:]
    return text


def _power(exponent: int) -> str:
    return f"{NBSP}×{NBSP}10" + str(exponent).translate(_SUPERSCRIPT)


def format_number(x, digits: int = 3, *, low: float = 1e-3, high: float = 1e5) -> str:
    """Write a number for prose, with ``× 10ⁿ`` instead of e-notation.

    Parameters
    ----------
    x : float
        A finite real number.
    digits : int, optional
        Significant digits, 1 to 17 (default 3).
    low, high : float, optional
        Numbers with ``low <= |x| < high`` (after rounding) are written as
        plain decimals; the others as ``m × 10ⁿ`` with ``1 <= |m| < 10``.

    Returns
    -------
    str
        E.g. ``format_number(7.4e-4, 2) == "7.4 × 10⁻⁴"``,
        ``format_number(1234.5, 3) == "1230"``, ``format_number(-0.5) ==
        "−0.500"`` (no-break spaces around ``×``, a true minus sign).

    Raises
    ------
    TypeError
        If ``x`` is not a real number or ``digits`` not an integer.
    ValueError
        If ``x`` is not finite, ``digits`` is outside 1..17 or
        ``0 < low < high`` fails.

    See Also
    --------
    format_uncertain : a value and its uncertainty.

    References
    ----------
    JCGM 100:2008, *Evaluation of measurement data: Guide to the expression
    of uncertainty in measurement*, section 7.2.

    Examples
    --------
    The text has no-break spaces (``\\xa0`` in its repr) around ``×`` and a
    true minus sign:

    >>> from attnscale import format_number
    >>> format_number(7.4e-4, 2)
    '7.4\\xa0×\\xa010⁻⁴'
    >>> format_number(1234.5), format_number(-0.5)
    ('1230', '−0.500')
    """
    x = _real(x, "x")
    digits = _digits(digits, "digits")
    low, high = _real(low, "low"), _real(high, "high")
    if not 0 < low < high:
        raise ValueError(f"low and high must satisfy 0 < low < high, got low={low}, high={high}")
    exponent = _exponent(x, digits)
    rounded = float(f"{x:.{digits - 1}e}")
    if x == 0 or low <= abs(rounded) < high:
        decimals = max(digits - 1 - exponent, 0)
        places = digits - 1 - exponent  # negative: round to tens, hundreds, ...
        return _sign(f"{round(x, places):.{decimals}f}")
    mantissa = f"{x:.{digits - 1}e}".split("e")[0]
    return _sign(mantissa) + _power(exponent)


def format_uncertain(
    value,
    uncertainty,
    *,
    uncertainty_digits: int | None = None,
    low: float = 1e-3,
    high: float = 1e5,
) -> str:
    """Write ``value ± uncertainty`` with the digits the uncertainty allows.

    The uncertainty (a standard error, or the half-width of an interval) is
    rounded to one significant digit, or two when its leading digit is 1;
    the value is rounded to the same decimal place.  When the value lies
    outside ``low <= |value| < high`` both are written against a common
    power of ten: ``(7.40 ± 0.05) × 10⁻⁴``.

    Parameters
    ----------
    value : float
        The estimate; finite.
    uncertainty : float
        Its uncertainty; finite and ``> 0`` (an exact number has no
        uncertainty: write it with :func:`format_number`).
    uncertainty_digits : int, optional
        Significant digits of the uncertainty, 1 or 2, overriding the rule
        above.
    low, high : float, optional
        The range of ``|value|`` written without a power of ten.

    Returns
    -------
    str
        E.g. ``format_uncertain(1.9137, 0.0032) == "1.914 ± 0.003"``,
        ``format_uncertain(1.9137, 0.014) == "1.914 ± 0.014"``,
        ``format_uncertain(7.4e-4, 5e-6) == "(7.40 ± 0.05) × 10⁻⁴"``.

    Raises
    ------
    TypeError
        If an argument is not a real number (``uncertainty_digits``: not an
        integer).
    ValueError
        If ``value`` or ``uncertainty`` is not finite, ``uncertainty <= 0``
        or so small against ``value`` that more than 15 significant digits
        would be needed, or ``uncertainty_digits`` is not 1 or 2.

    References
    ----------
    JCGM 100:2008, *Evaluation of measurement data: Guide to the expression
    of uncertainty in measurement*, section 7.2.6 (an uncertainty has at
    most two significant digits; the estimate is rounded to match).

    Examples
    --------
    The uncertainty keeps one significant digit (two when the first is 1)
    and the value is rounded to the same place; ``\\xa0`` is a no-break space:

    >>> from attnscale import format_uncertain
    >>> format_uncertain(1.9137, 0.0032)
    '1.914\\xa0±\\xa00.003'
    >>> format_uncertain(1.9137, 0.014)
    '1.914\\xa0±\\xa00.014'
    >>> format_uncertain(7.4e-4, 5e-6)
    '(7.40\\xa0±\\xa00.05)\\xa0×\\xa010⁻⁴'
    """
    value = _real(value, "value")
    uncertainty = _real(uncertainty, "uncertainty")
    if uncertainty <= 0:
        raise ValueError(f"uncertainty must be > 0, got {uncertainty}")
    low, high = _real(low, "low"), _real(high, "high")
    if not 0 < low < high:
        raise ValueError(f"low and high must satisfy 0 < low < high, got low={low}, high={high}")
    if uncertainty_digits is None:
        k = 2 if f"{uncertainty:.15e}"[0] == "1" else 1
    else:
        k = _digits(uncertainty_digits, "uncertainty_digits", 1, 2)
    u_exponent = _exponent(uncertainty, k)
    place = u_exponent - (k - 1)  # the decimal place both are rounded to
    if value != 0 and _exponent(value, 1) - place > 14:
        raise ValueError(
            f"uncertainty must be above the value's floating-point resolution: "
            f"{uncertainty:g} against {value:g} asks for more than 15 significant digits"
        )
    # exponent of the value at that precision (the uncertainty's if it rounds to zero)
    v_rounded = round(value, -place)
    v_exponent = _exponent(v_rounded, 1) if v_rounded != 0 else u_exponent
    magnitude = abs(v_rounded) if v_rounded != 0 else abs(float(f"{uncertainty:.{k - 1}e}"))
    shared = 0 if low <= magnitude < high else max(v_exponent, u_exponent)
    decimals = max(shared - place, 0)
    u_rounded = round(uncertainty, -place)
    v_text = _sign(f"{v_rounded / 10.0**shared:.{decimals}f}")
    u_text = f"{u_rounded / 10.0**shared:.{decimals}f}"
    text = f"{v_text}{NBSP}±{NBSP}{u_text}"
    return text if shared == 0 else f"({text}){_power(shared)}"


def format_interval(mean, half, digits: int = 3, *, signed: bool = False) -> str:
    """Write ``mean ± half`` with ``digits`` decimals, unbreakable, for a table cell.

    The cell of a results table: a mean and the half-width of its interval
    (or a standard error), both to the same fixed number of decimals, so a
    column reads alike in every row (:func:`format_uncertain` instead picks
    the digits from the uncertainty, for prose).  No-break spaces bind the
    ``±`` to both numbers, so a narrow column never wraps the cell
    mid-number (a table too wide for a phone scrolls inside its own box),
    and a negative mean gets a true minus sign.

    Parameters
    ----------
    mean : float
        The estimate; finite.
    half : float
        The half-width of its interval; finite and ``>= 0``.
    digits : int, optional
        Decimals of both numbers, 0 to 15 (default 3).
    signed : bool, optional
        Write a ``+`` before a positive mean (a difference, say).

    Returns
    -------
    str
        E.g. ``format_interval(0.8261, 0.0224) == "0.826 ± 0.022"``,
        ``format_interval(-0.0031, 0.016, signed=True) == "−0.003 ± 0.016"``,
        ``format_interval(0.25, 0.04, 2, signed=True) == "+0.25 ± 0.04"``
        (no-break spaces around ``±``).  A mean that rounds to zero has no
        sign: ``"0.000 ± 0.010"``.

    Raises
    ------
    TypeError
        If ``mean`` or ``half`` is not a real number, ``digits`` not an
        integer or ``signed`` not a bool.
    ValueError
        If ``mean`` or ``half`` is not finite, ``half < 0`` or ``digits``
        is outside 0..15.

    See Also
    --------
    format_uncertain : the digits chosen by the uncertainty, for prose.

    Notes
    -----
    ``attnscale.support.formatting.captioned_table`` and ``results_table`` bind a
    cell's ``±`` the same way, whatever wrote it.

    Examples
    --------
    ``digits`` decimals for both numbers, whatever the half-width (``\\xa0``
    is a no-break space):

    >>> from attnscale import format_interval
    >>> format_interval(0.8261, 0.0224)
    '0.826\\xa0±\\xa00.022'
    >>> format_interval(0.25, 0.04, 2, signed=True)
    '+0.25\\xa0±\\xa00.04'
    """
    mean = _real(mean, "mean")
    half = _real(half, "half")
    if half < 0:
        raise ValueError(f"half must be >= 0, got {half}")
    digits = _digits(digits, "digits", 0, 15)
    if not isinstance(signed, bool):
        raise TypeError(f"signed must be a bool, got {type(signed).__name__}")
    m_text = _sign(f"{mean:.{digits}f}")
    if signed and m_text[0] != MINUS and any(c in "123456789" for c in m_text):
        m_text = "+" + m_text
    return f"{m_text}{NBSP}±{NBSP}{half:.{digits}f}"


# -- tables ---------------------------------------------------------------------

#: A hyphen-minus that is a sign: at the start of the text or after a space,
#: an opening bracket or a sign, and before a digit or a decimal point.
_HYPHEN_SIGN = re.compile(r"(?:(?<=^)|(?<=[\s(\[±=/]))-(?=\.?\d)")
_MATH = re.compile(r"(\$[^$]*\$)")
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def typographic_minus(text) -> str:
    """Replace every hyphen-minus used as a sign by a true minus sign (U+2212).

    Only a hyphen that starts a number (``-0.003``, ``(-0.1``, ``± -2``) is
    replaced; hyphenated words (``Xavier-uniform``), ranges written with a
    hyphen between two numbers (``600-699``) and anything inside ``$...$``
    (MathJax sets its own minus) are left alone.

    Examples
    --------
    >>> typographic_minus("1.776 (-0.003 ± 0.016)")
    '1.776 (−0.003 ± 0.016)'
    >>> typographic_minus("steps 600-699, $x^{-1}$")
    'steps 600-699, $x^{-1}$'
    """
    if not isinstance(text, str):
        text = str(text)
    parts = _MATH.split(text)
    return "".join(part if k % 2 else _HYPHEN_SIGN.sub(MINUS, part) for k, part in enumerate(parts))


#: A "±" between spaces: bound to its numbers with no-break spaces in a cell.
_PLUS_MINUS = re.compile(r"[ \u00a0]*±[ \u00a0]*")


#: The ends of the words between which a cell's line must not break: a
#: number (or its closing bracket or comma) before the next number or
#: bracket ("[0.97, 2.75]", "1.776 −0.003", "2.40 (2.22"); the words
#: around "=", "to", "×", "/", "→" and "·" ("c = 1.26", "2.22 to 2.59",
#: "5 × 2000", "0.87 → 0.91 · 1.00");
#: and a word of at most three letters naming the number after it
#: ("rms 0.095").
_ENDS_A_NUMBER = re.compile(r"[\d)\]%∞,]$")
_STARTS_A_NUMBER = re.compile(r"^[\d\[(−+∞]")
_JOINERS = frozenset({"=", "to", "×", "/", "→", "·"})
_SHORT_NAME = re.compile(r"^[A-Za-z]{1,3}$")


def _keep_numbers_together(text: str) -> str:
    """``text`` (no math in it) with a no-break space wherever a break would split a number."""
    words = text.split(" ")
    out = [words[0]]
    for left, right in itertools.pairwise(words):
        together = (
            (_ENDS_A_NUMBER.search(left) and _STARTS_A_NUMBER.match(right))
            or left in _JOINERS
            or right in _JOINERS
            or (_SHORT_NAME.match(left) and re.match(r"[\d−∞]", right))
        )
        out.append((NBSP if together else " ") + right)
    return "".join(out)


def _bind(text: str) -> str:
    """A table cell's text with true minus signs and its numbers kept on one line.

    ``±`` is bound to its numbers, and every space inside a numeric
    expression is a no-break space (:func:`_keep_numbers_together`); math is
    left as it is.
    """
    parts = _MATH.split(typographic_minus(text))
    return "".join(
        part if k % 2 else _keep_numbers_together(_PLUS_MINUS.sub(f"{NBSP}±{NBSP}", part))
        for k, part in enumerate(parts)
    )


def _cell(value) -> str:
    text = _bind(value).strip()
    if "\n" in text:
        raise ValueError(f"a table cell must be one line, got {text!r}")
    return text


def results_table(header, rows, *, caption: str, name: str) -> str:
    """A numbered, captioned table of results, as MyST Markdown.

    Returns a ``{list-table}`` directive to display with
    ``IPython.display.Markdown`` (or glue), which MyST-NB parses as MyST
    (``nb_render_markdown_format: myst``): Sphinx numbers it ("Table 10.1"),
    shows the caption above it, and ``{numref}`name``` refers to it.

    Parameters
    ----------
    header : sequence of str
        One heading per column; none may be empty (an empty header cell
        tells a screen reader nothing about its column).
    rows : sequence of sequences
        The body; each row has ``len(header)`` cells.  A cell is text (or a
        number, written with ``str``); hyphen-minus signs become true minus
        signs (:func:`typographic_minus`) and a ``±`` is bound to its
        numbers by no-break spaces.  A cell given as a tuple is
        written as its items on separate lines (a mean above its interval,
        say), each kept on one line.
    caption : str
        The table's caption (MyST Markdown, one paragraph).
    name : str
        Its label, e.g. ``"tab-lm-rope"``.

    Returns
    -------
    str
        The directive's text.

    Raises
    ------
    ValueError
        If a header cell or the caption is empty, a row has the wrong
        number of cells, a cell spans lines, or ``name`` is not a valid
        label.

    See Also
    --------
    typographic_minus, format_uncertain

    Examples
    --------
    >>> print(results_table(["arm", "loss"], [["O", -1.5]], caption="Loss.", name="tab-x"))
    ````{list-table} Loss.
    :name: tab-x
    :header-rows: 1
    :class: results-table
    <BLANKLINE>
    * - arm
      - loss
    * - O
      - −1.5
    ````
    <BLANKLINE>
    """
    header = [_cell(h) for h in header]
    if not header or any(not h for h in header):
        raise ValueError(f"header must name every column, got {header!r}")
    caption = " ".join(str(caption).split())
    if not caption:
        raise ValueError("caption must not be empty")
    if not isinstance(name, str) or not _LABEL.match(name):
        raise ValueError(f"name must be a label such as 'tab-results', got {name!r}")
    lines = ["````{list-table} " + caption, f":name: {name}", ":header-rows: 1", ":class: results-table", ""]
    for row in [header, *rows]:
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"every row must have {len(header)} cells, got {len(row)}: {row!r}")
        for k, value in enumerate(row):
            items = value if isinstance(value, tuple) else (value,)
            texts = [_cell(v) for v in items]
            lead = "* - " if k == 0 else "  - "
            lines.append((lead + texts[0]).rstrip())
            for extra in texts[1:]:
                lines += ["", "    " + extra]
    lines.append("````")
    return "\n".join(lines) + "\n"


def pipe_table(header, rows) -> str:
    """A Markdown pipe table from a header and rows of cells, for :func:`captioned_table`.

    Each row is written ``| a | b | c |``; the alignment row is ``| --- |``
    for every column.  Cells are written as given (``str`` of a number):
    format the numbers first (:func:`format_uncertain`, f-strings), and
    :func:`captioned_table` replaces the hyphen-minus signs.

    Parameters
    ----------
    header : sequence of str
        One heading per column; none may be empty.
    rows : sequence of sequences
        Each of ``len(header)`` cells, none spanning lines or holding a bare ``|``.

    Returns
    -------
    str
        The table, lines joined by newlines (no final newline).

    Raises
    ------
    ValueError
        If a header cell is empty, a row has the wrong number of cells, or
        a cell spans lines or holds a ``|`` that is not escaped (``\\|``).

    See Also
    --------
    captioned_table, results_table

    Examples
    --------
    >>> print(pipe_table(["n", "x"], [[2, "-1.5"], [4, "0.25"]]))
    | n | x |
    | --- | --- |
    | 2 | -1.5 |
    | 4 | 0.25 |
    """
    header = [str(h) for h in header]
    if not header or any(not h.strip() for h in header):
        raise ValueError(f"header must name every column, got {header!r}")
    lines = []
    for row in [header, ["---"] * len(header), *rows]:
        cells = [str(cell) for cell in row]
        if len(cells) != len(header):
            raise ValueError(f"every row must have {len(header)} cells, got {len(cells)}: {cells!r}")
        for cell in cells:
            if "\n" in cell or re.search(r"(?<!\\)\|", cell):
                raise ValueError(f"a table cell must be one line without a bare '|', got {cell!r}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def captioned_table(table: str, *, caption: str, name: str) -> str:
    """A Markdown pipe table, numbered and captioned, as MyST Markdown.

    Wraps ``table`` in a ``{table}`` directive with ``caption`` and the label
    ``name``, after replacing the hyphen-minus signs of its cells by true
    minus signs (:func:`typographic_minus`) and binding each ``±`` of a cell
    to its numbers with no-break spaces (so it never wraps mid-number).

    Parameters
    ----------
    table : str
        A pipe table: a header row, the alignment row (``| --- | ---: |``)
        and the body.
    caption : str
        The table's caption (MyST Markdown, one paragraph).
    name : str
        Its label, e.g. ``"tab-results"``.

    Returns
    -------
    str
        The directive's text, for ``IPython.display.Markdown`` or glue.

    Raises
    ------
    ValueError
        If ``table`` has no header and alignment rows, a header cell is
        empty, the caption is empty or ``name`` is not a valid label.

    See Also
    --------
    results_table, typographic_minus

    Examples
    --------
    >>> print(captioned_table("| n | x |\\n|---|---:|\\n| 2 | -1.5 |", caption="X.", name="tab-x"))
    ```{table} X.
    :name: tab-x
    <BLANKLINE>
    | n | x |
    |---|---:|
    | 2 | −1.5 |
    ```
    <BLANKLINE>
    """
    lines = [line.strip() for line in str(table).strip().splitlines()]
    if len(lines) < 2 or not re.fullmatch(r"\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?", lines[1]):
        raise ValueError("table must be a pipe table: a header row, then an alignment row")
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    if any(not cell for cell in header):
        raise ValueError(f"table's header must name every column, got {header!r}")
    caption = " ".join(str(caption).split())
    if not caption:
        raise ValueError("caption must not be empty")
    if not isinstance(name, str) or not _LABEL.match(name):
        raise ValueError(f"name must be a label such as 'tab-results', got {name!r}")
    body = [lines[0], lines[1], *(_bind(line) for line in lines[2:])]
    return "\n".join(["```{table} " + caption, f":name: {name}", "", *body, "```"]) + "\n"
