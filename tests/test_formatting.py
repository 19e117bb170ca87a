"""The prose-number formatter: digits matched to the uncertainty, no e-notation.

Two routes: worked examples stated by hand (the GUM rounding rule applied on
paper), and a property test that parses the text back and checks it against
the input with the rounding error the rule allows.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attnscale as at

NB = "\u00a0"


def plain(text: str) -> str:
    return text.replace(NB, " ")


@pytest.mark.parametrize(
    ("value", "uncertainty", "expected"),
    [
        (1.9137, 0.0032, "1.914 ± 0.003"),  # not "1.91 ± 0.00"
        (1.9137, 0.014, "1.914 ± 0.014"),  # leading digit 1: two digits
        (1.91, 0.004, "1.910 ± 0.004"),  # trailing zero kept: it is significant
        (0.96, 0.05, "0.96 ± 0.05"),
        (7.4e-4, 5e-6, "(7.40 ± 0.05) × 10⁻⁴"),
        (-3.2e-7, 1.1e-8, "(−3.20 ± 0.11) × 10⁻⁷"),
        (1.0e105, 3e103, "(1.00 ± 0.03) × 10¹⁰⁵"),
        (12345.6, 0.3, "12345.6 ± 0.3"),
        (-0.001, 0.02, "0.00 ± 0.02"),  # no "−0.00"
    ],
)
def test_format_uncertain_examples(value, uncertainty, expected):
    assert plain(at.format_uncertain(value, uncertainty)) == expected


@pytest.mark.parametrize(
    ("x", "digits", "expected"),
    [
        (7.4e-4, 2, "7.4 × 10⁻⁴"),
        (1.0e105, 2, "1.0 × 10¹⁰⁵"),
        (2.220446049250313e-16, 2, "2.2 × 10⁻¹⁶"),
        (1234.5, 3, "1230"),
        (-0.5, 3, "−0.500"),
        (99999.9, 3, "1.00 × 10⁵"),  # rounds up past the switch
        (0.00099999, 2, "0.0010"),
        (0, 3, "0.00"),
    ],
)
def test_format_number_examples(x, digits, expected):
    assert plain(at.format_number(x, digits)) == expected


NUMBER = re.compile(r"^\(?(−?\d+(?:\.\d+)?)(?: ± (\d+(?:\.\d+)?))?\)?(?: × 10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))?$")
FROM_SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def parse(text: str):
    match = NUMBER.match(plain(text))
    assert match, f"unexpected shape: {text!r}"
    value, unc, power = match.groups()
    scale = 10.0 ** int(power.translate(FROM_SUPER)) if power else 1.0
    decimals = len(value.split(".")[1]) if "." in value else 0
    ulp = 10.0**-decimals * scale
    return float(value.replace("−", "-")) * scale, (float(unc) * scale if unc else None), ulp


finite = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)


@given(finite, positive)
def test_format_uncertain_round_trip(value, uncertainty):
    if abs(value) > 1e16 * uncertainty:  # more digits than a float holds: refused
        with pytest.raises(ValueError, match="uncertainty"):
            at.format_uncertain(value, uncertainty)
        return
    if abs(value) > 1e12 * uncertainty:  # the boundary depends on rounding
        return
    text = at.format_uncertain(value, uncertainty)
    assert "e" not in text and "-" not in text
    parsed, unc, _ = parse(text)
    assert unc > 0  # never "± 0.00"
    # the decimal place of the rounded uncertainty's last kept digit
    k = 2 if f"{uncertainty:.15e}"[0] == "1" else 1
    place = 10.0 ** (math.floor(math.log10(unc) + 1e-12) - k + 1)
    slack = 1 + 1e-9
    assert abs(unc - uncertainty) <= 0.5 * place * slack
    assert abs(parsed - value) <= 0.5 * place * slack + 1e-15 * abs(value)


@given(finite, st.integers(1, 6))
def test_format_number_round_trip(x, digits):
    text = at.format_number(x, digits)
    assert "e" not in text and "-" not in text
    parsed, unc, ulp = parse(text)
    assert unc is None
    assert math.isclose(parsed, x, rel_tol=0.5 * 10.0 ** (1 - digits) * (1 + 1e-9), abs_tol=1e-300) or abs(
        parsed - x
    ) <= 0.5 * ulp * (1 + 1e-9)


def test_numpy_scalars_are_accepted():
    assert plain(at.format_uncertain(np.float32(1.9137), np.float64(0.0032))) == "1.914 ± 0.003"
    assert plain(at.format_number(np.array(7.4e-4), 2)) == "7.4 × 10⁻⁴"


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: at.format_uncertain(1.0, 0.0), ValueError, "uncertainty"),
        (lambda: at.format_uncertain(1.0, -0.1), ValueError, "uncertainty"),
        (lambda: at.format_uncertain(np.nan, 0.1), ValueError, "value"),
        (lambda: at.format_uncertain(1.0, np.inf), ValueError, "uncertainty"),
        (lambda: at.format_uncertain("1.9", 0.1), TypeError, "value"),
        (lambda: at.format_uncertain(True, 0.1), TypeError, "value"),
        (lambda: at.format_uncertain(1 + 2j, 0.1), TypeError, "value"),
        (lambda: at.format_uncertain([1.0], 0.1), TypeError, "value"),
        (lambda: at.format_uncertain(1.0, 0.1, uncertainty_digits=3), ValueError, "uncertainty_digits"),
        (lambda: at.format_uncertain(1.0, 0.1, uncertainty_digits=1.0), TypeError, "uncertainty_digits"),
        (lambda: at.format_uncertain(1e20, 1e-3), ValueError, "uncertainty"),
        (lambda: at.format_number(np.inf), ValueError, "x"),
        (lambda: at.format_number(None), TypeError, "x"),
        (lambda: at.format_number(1.0, 0), ValueError, "digits"),
        (lambda: at.format_number(1.0, 2.5), TypeError, "digits"),
        (lambda: at.format_number(1.0, low=10.0, high=1.0), ValueError, "low"),
    ],
)
def test_bad_input_is_refused(call, error, name):
    with pytest.raises(error, match=name):
        call()


# -- table cells: mean ± half-width --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((0.8261, 0.0224), {}, "0.826 ± 0.022"),
        ((-0.0031, 0.016), {"signed": True}, "−0.003 ± 0.016"),
        ((0.25, 0.04, 2), {"signed": True}, "+0.25 ± 0.04"),
        ((-0.0004, 0.01), {"signed": True}, "0.000 ± 0.010"),  # no sign on a rounded zero
        ((0.0004, 0.01), {"signed": True}, "0.000 ± 0.010"),
        ((12.5, 0.0, 0), {}, "12 ± 0"),  # Python's round-half-even, as f-strings
        ((np.float32(0.5), np.float64(0.125), 1), {}, "0.5 ± 0.1"),
    ],
)
def test_format_interval_examples(args, kwargs, expected):
    text = at.format_interval(*args, **kwargs)
    assert plain(text) == expected
    assert " " not in text, "the cell must not break: no-break spaces only"


@given(
    st.floats(-1e3, 1e3, allow_nan=False),
    st.floats(0, 1e2, allow_nan=False),
    st.integers(0, 6),
    st.booleans(),
)
def test_format_interval_round_trip(mean, half, digits, signed):
    """The two numbers parse back to the mean and half-width within half a unit of the last decimal."""
    text = at.format_interval(mean, half, digits, signed=signed)
    left, right = text.split(NB + "±" + NB)
    value = float(left.replace("\u2212", "-"))
    assert abs(value - mean) <= 0.5 * 10.0**-digits * (1 + 1e-9) + 1e-12 * abs(mean)
    assert abs(float(right) - half) <= 0.5 * 10.0**-digits * (1 + 1e-9) + 1e-12 * half
    assert ("-" not in text) and (left.startswith("+") == (signed and value > 0))


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: at.format_interval(1.0, -0.1), ValueError, "half"),
        (lambda: at.format_interval(np.nan, 0.1), ValueError, "mean"),
        (lambda: at.format_interval("1", 0.1), TypeError, "mean"),
        (lambda: at.format_interval(1.0, 0.1, 2.0), TypeError, "digits"),
        (lambda: at.format_interval(1.0, 0.1, 16), ValueError, "digits"),
        (lambda: at.format_interval(1.0, 0.1, signed=1), TypeError, "signed"),
    ],
)
def test_format_interval_refuses_bad_input(call, error, name):
    with pytest.raises(error, match=name):
        call()


# -- results tables -----------------------------------------------------------------

from attnscale.support.formatting import results_table, typographic_minus  # noqa: E402


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-0.003", "\u22120.003"),
        ("1.776 (-0.003 ± 0.016)", "1.776 (\u22120.003 ± 0.016)"),
        ("-.5", "\u2212.5"),
        ("Xavier-uniform", "Xavier-uniform"),
        ("600-699", "600-699"),
        ("$x^{-1}$ and -2", "$x^{-1}$ and \u22122"),
        ("d-1", "d-1"),
    ],
)
def test_typographic_minus(text, expected):
    assert typographic_minus(text) == expected


def test_results_table_is_a_captioned_list_table():
    rows = [["O", -1.5], ["A", ("1.2", "-0.1 ± 0.2")]]
    text = results_table(["arm", "$n = 64$"], rows, caption="Loss.", name="tab-x")
    assert text.startswith("````{list-table} Loss.\n:name: tab-x\n:header-rows: 1\n")
    assert "\u22121.5" in text and "-" not in text.split("\n\n", 1)[1].replace("* -", "").replace("  -", "")
    assert "\n    \u22120.1\u00a0±\u00a00.2" in text  # ± bound to its numbers


@pytest.mark.parametrize(
    ("header", "rows", "caption", "name", "match"),
    [
        (["", "x"], [["a", 1]], "c", "tab-a", "header"),
        (["a", "b"], [["a"]], "c", "tab-a", "every row"),
        (["a"], [["a"]], "  ", "tab-a", "caption"),
        (["a"], [["a"]], "c", "tab a", "name"),
        (["a"], [["x\ny"]], "c", "tab-a", "one line"),
    ],
)
def test_results_table_refuses_what_a_reader_cannot_use(header, rows, caption, name, match):
    with pytest.raises(ValueError, match=match):
        results_table(header, rows, caption=caption, name=name)


def test_captioned_table_wraps_a_pipe_table():
    from attnscale.support.formatting import captioned_table

    text = captioned_table("| n | x |\n|---|---:|\n| 2 | -1.5 |", caption="X.", name="tab-x")
    assert text == "```{table} X.\n:name: tab-x\n\n| n | x |\n|---|---:|\n| 2 | \u22121.5 |\n```\n"
    # a cell's ± is bound to its numbers (no wrap mid-number); math is left to MathJax
    table = "| a | b |\n|---|---|\n| 0.8 ± 0.1 | $x \\pm -1$ ± 2 |"
    text = captioned_table(table, caption="X.", name="tab-x")
    assert "| 0.8\u00a0±\u00a00.1 | $x \\pm -1$\u00a0±\u00a02 |" in text
    # and so is every number of an expression, not the words around it
    cells = [
        ("[0.97, 2.75]", "[0.97,\u00a02.75]"),
        ("2.40 (2.22 to 2.59)", "2.40\u00a0(2.22\u00a0to\u00a02.59)"),
        ("c = 1.26, rms 0.095", "c\u00a0=\u00a01.26, rms\u00a00.095"),
        ("5 × 2000", "5\u00a0×\u00a02000"),
        # which-law's coverage cells: one line each, the table scrolls instead
        ("0.87 → 0.91 · 0.93 · 1.00", "0.87\u00a0→\u00a00.91\u00a0·\u00a00.93\u00a0·\u00a01.00"),
        # a bracketed rate in math after the interval may take a line of its own (training)
        ("0.026 ± 0.007 $(2^{2})$", "0.026\u00a0±\u00a00.007 $(2^{2})$"),
        ("64 bytes, no fine-tuning", "64 bytes, no fine-tuning"),
        ("$x = 1$ or 2 3", "$x = 1$ or\u00a02\u00a03"),
    ]
    for cell, kept in cells:
        text = captioned_table(f"| a |\n|---|\n| {cell} |", caption="X.", name="tab-x")
        assert f"| {kept} |" in text, (cell, text)
    with pytest.raises(ValueError, match="header"):
        captioned_table("| | x |\n|---|---|\n| a | 1 |", caption="X.", name="tab-x")
    with pytest.raises(ValueError, match="pipe table"):
        captioned_table("no table", caption="X.", name="tab-x")


def test_tables_read_in_plain_jupyter():
    """The .ipynb download turns both table directives into a caption and a pipe table."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from bookbuild import load_extension

    from attnscale.support.formatting import captioned_table

    plain = load_extension("notebook_downloads")._plain_tables
    listed = results_table(["arm", "loss"], [["O", ("1.2", "-0.1 ± 0.2")]], caption="Loss.", name="tab-x")
    want = "| O | 1.2<br>\u22120.1\u00a0±\u00a00.2 |"
    assert plain(listed) == f"*Loss.*\n\n| arm | loss |\n| --- | --- |\n{want}\n\n"
    piped = captioned_table("| n | x |\n|---|---:|\n| 2 | 1 |", caption="X.", name="tab-y")
    assert plain(piped) == "*X.*\n\n| n | x |\n|---|---:|\n| 2 | 1 |\n\n"


def test_pipe_table_rows_and_refusals():
    from attnscale.support.formatting import captioned_table, pipe_table

    table = pipe_table(["n", "x \\| y"], [[2, "-1.5"], ["4", 0.25]])
    assert table == "| n | x \\| y |\n| --- | --- |\n| 2 | -1.5 |\n| 4 | 0.25 |"
    # what captioned_table expects: a header row, then the alignment row
    assert captioned_table(pipe_table(["n"], [[1]]), caption="X.", name="tab-x").endswith("| 1 |\n```\n")
    for header, rows, match in (
        (["", "x"], [], "header"),
        (["a", "b"], [["a"]], "every row"),
        (["a"], [["x\ny"]], "one line"),
        (["a"], [["x | y"]], "bare"),
    ):
        with pytest.raises(ValueError, match=match):
            pipe_table(header, rows)
