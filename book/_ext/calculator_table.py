"""The table the recipes page's calculator reads: its words, and two curves for its figures and guesses.

``book/_static/calculator.js`` computes every row of
``attnscale.recommend_scale`` itself, as the package does, so that it prints
the package's table digit for digit: the closed forms; the gradient scale
for cosine scores (``attnscale.cosine_alpha_star``, its safeguarded Newton
steps ported); the causal gradient scale for either law
(``attnscale.best_causal_scale``, its sum and quadrature over positions and
its bounded search ported); and the exact expected entropy for either law
(``attnscale.expected_entropy``, the quadrature of the exact-expectations
theorem on the package's panels), from which it solves the exact entropy
match and a measured entropy's alpha_L.  An earlier page interpolated the
causal Gaussian row and the Gaussian entropy from tables the build
computed, and printed, for example, 2.502 where the CLI printed 2.501
(issue 31); those tables are gone.

What the table still holds (computed with the package at build time):

* the exact expected entropy of Gaussian scores as two bicubic splines
  (:func:`entropy_spline`), within about 3e-4 of the package's: only the
  first guess of the page's entropy solvers, which then solve on the
  quadrature;
* the exact expected gradient of Gaussian scores against the scale, for the
  page's second figure (:func:`gradient_spline`); for cosines the page's
  quadrature draws it.

The table is computed by a child process while the chapters execute
(:class:`_Background`).  The extension writes the table as ``_static/calculator-table.js`` into
the HTML output (never into the source tree), which assigns the table to
``window.ATTNSCALE_CALCULATOR_TABLE``.  A script, not a JSON file fetched by
the page: it loads from ``file://`` too, and it is one more same-origin
file, so the page makes no request that leaves it.  Only the page that holds
the calculator loads it.

The table also carries the calculator's words, ``attnscale.practice.calculator.page_words``
(every row's name and source, and every note, as templates the page fills), so
the page prints what the package prints without typing it again.

``tests/test_calculator_page.py`` checks the page against the package at
random settings, digit for digit, with the table this file prints when run
as a script (as the build runs it; ``tests/conftest.py`` starts it once per
test session), and ``benchmarks/calculator_grid.py`` on the tests' whole grids.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sphinx.errors import ExtensionError

#: The element id the raw HTML block of book/recipes.md gives the calculator.
FORM_ID = "attnscale-calculator"
FILE_NAME = "calculator-table.js"
#: Seconds the build waits for the table after the chapters (it takes a few).
CHILD_TIMEOUT = 300


#: Exact expectations are computed up to this many keys (attnscale.theory.exact).
GRADIENT_N_MAX = 1e9
#: The curve's scales, as multiples of sqrt(2 log n): from a tenth of the
#: typical-row scale to well past where the gradient has reached its limit.
GRADIENT_SPAN = (0.02, 20.0)


def gradient_spline() -> dict:
    r"""The exact expected gradient :math:`\mathbb E[\alpha(1-\sum p^2)]` of Gaussian scores, as splines.

    A bicubic spline of :math:`\log(G/G_\infty)` in :math:`x = \log\log n`
    and :math:`v = \log(\alpha/\sqrt{2\log n})`, with :math:`G` from
    ``attnscale.expected_gradient`` and its limit :math:`G_\infty` from
    ``attnscale.gradient_limit`` (a cubic spline of :math:`\log G_\infty` in
    :math:`x`).  In :math:`\log\log n` the nodes are dense at few keys,
    where the curve changes fastest (in :math:`\log n` the error was 1e-2 at
    n = 3); the package takes real n, so the nodes need not be integers.  On
    28 by 40 nodes the spline misses the package by at most 1.8e-4 relative
    (400 random points when this was written; the test checks 1e-3).  About
    two seconds of one core.
    """
    import numpy as np
    from scipy.interpolate import RectBivariateSpline, make_interp_spline

    from attnscale import expected_gradient, gradient_limit

    x = np.linspace(np.log(np.log(2.0)), np.log(np.log(GRADIENT_N_MAX)), 28)
    v = np.linspace(*np.log(GRADIENT_SPAN), 40)
    keys = np.exp(np.exp(x))
    keys[[0, -1]] = 2.0, GRADIENT_N_MAX  # exactly, not through exp(exp(log(log)))
    limit = np.array([gradient_limit(m) for m in keys])
    alpha = np.exp(v)[None, :] * np.sqrt(2 * np.log(keys))[:, None]
    values = np.log(expected_gradient(alpha, keys[:, None]) / limit[:, None])
    tx, ty, coefficients = RectBivariateSpline(x, v, values, kx=3, ky=3, s=0).tck
    curve = make_interp_spline(x, np.log(limit), k=3)
    return {
        "nMax": GRADIENT_N_MAX,
        "span": list(GRADIENT_SPAN),
        "tx": [float(f"{t:.12g}") for t in tx],
        "ty": [float(f"{t:.12g}") for t in ty],
        "c": [float(f"{c:.8g}") for c in coefficients],
        "limitT": [float(f"{t:.12g}") for t in curve.t],
        "limitC": [float(f"{c:.10g}") for c in curve.c],
    }


#: The entropy table's smallest scale, as a multiple of sqrt(2 log n):
#: below it the page uses log n - E[H] = alpha^2 (n - 1) / (2n), whose
#: relative error there is of order alpha^2, under 1e-6.
ENTROPY_LOW = 1.5e-4
#: The entropy table's largest scale on the unit score: the exact
#: expectation's cap for Gaussian scores (``attnscale.practice.recipes._law``).
ENTROPY_CAP = 1e3


def _logit_entropy(alpha, n):
    """logit(E[H]/log n): finite and smooth from a uniform row to a frozen one."""
    import numpy as np

    from attnscale import expected_entropy

    h = expected_entropy(alpha, n)
    return np.log(h / (np.log(n) - h))


def entropy_spline() -> dict:
    r"""The exact expected entropy of Gaussian scores, as two bicubic splines.

    The value is :math:`z = \operatorname{logit}(\mathbb E[H]/\log n)`, with
    :math:`\mathbb E[H]` from ``attnscale.expected_entropy``: near the
    uniform row it keeps the digits of :math:`\log n - \mathbb E[H]`, and
    near a frozen one those of :math:`\mathbb E[H]`.  Both splines are in
    :math:`x = \log\log n`.  Up to twice the freezing scale
    :math:`c = \sqrt{2\log n}` the second variable is :math:`\log(\alpha/c)`,
    from ``ENTROPY_LOW``; beyond it, where the curve no longer scales with
    :math:`c`, it is :math:`\log\alpha`, up to ``ENTROPY_CAP``.  On 32 by
    (48 + 24) nodes the scale solved from the spline misses the package's
    by at most 3.3e-4 relative, E[H] by 4.8e-4 and log n - E[H] by 6.3e-4
    (a referee's scan of 9126 points, the worst near 0.66 sqrt(2 log n) at
    n = 1e9; the test checks 1e-3).  About five seconds of one core.
    """
    import numpy as np
    from scipy.interpolate import RectBivariateSpline

    x = np.linspace(np.log(np.log(2.0)), np.log(np.log(GRADIENT_N_MAX)), 32)
    keys = np.exp(np.exp(x))
    keys[[0, -1]] = 2.0, GRADIENT_N_MAX
    freezing = np.sqrt(2 * np.log(keys))
    low = np.linspace(np.log(ENTROPY_LOW), np.log(2.0), 48)
    high = np.linspace(np.log(2.0 * freezing[0]), np.log(ENTROPY_CAP), 24)
    parts = {}
    for name, v, alpha in (
        ("low", low, np.exp(low)[None, :] * freezing[:, None]),
        ("high", high, np.broadcast_to(np.exp(high)[None, :], (x.size, high.size))),
    ):
        tx, ty, coefficients = RectBivariateSpline(x, v, _logit_entropy(alpha, keys[:, None]), s=0).tck
        parts[name] = {
            "tx": [float(f"{t:.12g}") for t in tx],
            "ty": [float(f"{t:.12g}") for t in ty],
            "c": [float(f"{c:.10g}") for c in coefficients],
        }
    return {"nMax": GRADIENT_N_MAX, "lowest": ENTROPY_LOW, "cap": ENTROPY_CAP, **parts}


def build_table() -> dict:
    """The splines (Gaussian entropy and gradient) and the words."""
    from attnscale.practice.calculator import page_words

    return {"gradient": gradient_spline(), "entropy": entropy_spline(), "words": page_words()}


def script_text(table: dict) -> str:
    return (
        "// Written by book/_ext/calculator_table.py at build time; do not edit.\n"
        f"window.ATTNSCALE_CALCULATOR_TABLE = {json.dumps(table, separators=(',', ':'))};\n"
    )


class _Background:
    """The table, computed by a child process while Sphinx reads the chapters.

    It takes a few seconds of one core; computed at ``build-finished`` it
    was the last step of every build, on the build's critical path.  A
    separate interpreter (this file run as a script), not a thread: the
    work holds the GIL, and a fork would copy Sphinx's state.
    """

    process: subprocess.Popen | None = None


def _has_calculator(app) -> bool:
    """Whether a document in the build's table of contents holds the calculator's form.

    A book without it (the tests' probe books, built a dozen times) does not
    pay for the table.  Without an external table of contents, assume it does.
    """
    site_map = getattr(app.config, "external_site_map", None)
    if site_map is None:
        return True
    for docname in site_map:
        for suffix in (".md", ".ipynb", ".rst"):
            path = Path(app.srcdir) / f"{docname}{suffix}"
            if path.is_file() and FORM_ID in path.read_text(encoding="utf-8"):
                return True
    return False


def _start(app) -> None:
    if app.builder.format != "html" or _Background.process is not None or not _has_calculator(app):
        return
    _Background.process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _write(app, exception) -> None:
    # after Sphinx has copied book/_static, into the output's _static; an
    # HTML build only (the PDF has no calculator)
    process, _Background.process = _Background.process, None
    if process is None:
        return
    if exception is not None:
        process.kill()
        process.communicate()
        return
    try:
        script, errors = process.communicate(timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise ExtensionError(f"calculator_table: computing the table took over {CHILD_TIMEOUT} s") from None
    if process.returncode != 0:
        raise ExtensionError(f"calculator_table: computing the table failed:\n{errors}")
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    (static / FILE_NAME).write_text(script, encoding="utf-8")


def _add_script(app, pagename, templatename, context, doctree) -> None:
    # only the page that holds the calculator downloads its table
    if FORM_ID in context.get("body", ""):
        app.add_js_file(FILE_NAME)


def setup(app):
    app.connect("builder-inited", _start)
    app.connect("html-page-context", _add_script)
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # the build's child process (see _Background)
    sys.stdout.write(script_text(build_table()))
