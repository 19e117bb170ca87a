"""Audit of the chapters' checks: each names the wrong claim it rules out.

Every ``{code-cell}`` of every chapter (``book/*.md``) is parsed with
:mod:`ast`, without running it.  For each call of
:func:`attnscale.check_close` / :func:`attnscale.check_true` the audit
records whether it passes ``rules_out=`` (the alternative it rules out) or
``exempt=`` (why none exists, grouped by the reason's text).  A check with
neither fails the audit, as does a bare numerical ``assert`` or a
``numpy.testing`` assertion in a chapter: those say neither what is compared
nor what would be wrong, and should be named checks.  Pure SymPy identities
(``assert sp.simplify(a - b) == 0`` and other asserts on SymPy expressions,
with no conversion to a float anywhere in them) are exempt by nature.

Also refused, because they hide a check from this audit or let it pass
trivially:

* :func:`attnscale.check_true` with ``rules_out=``: its alternative is a
  second, hand-written condition, which can be false by algebra whatever
  the numbers.  :func:`attnscale.check_holds` applies *one* claim to the
  computed value and to each competing value instead;
* a check function under another name (``from attnscale import check_close
  as cc``, ``cc = check_close``);
* ``if ...: raise`` outside a function: a check with no name and no
  alternative.

Run as a script to print the table::

    python tests/test_checks_audit.py
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

CHECKS = {"check_close", "check_true", "check_holds"}
#: Assertion helpers that are numerical comparisons without a named alternative.
NUMPY_ASSERTS = {
    "assert_allclose",
    "assert_array_almost_equal",
    "assert_almost_equal",
    "assert_array_equal",
    "assert_equal",
    "assert_approx_equal",
    "assert_array_less",
    "approx",
}
#: Names whose presence in an ``assert`` makes it a symbolic (SymPy) statement.
SYMPY_ROOTS = {"sp", "sympy", "ss"}
SYMPY_FUNCTIONS = {"simplify", "expand", "factor", "cancel", "together", "nsimplify", "Eq"}
#: Calls that turn a SymPy expression into a float: an assert with one is numerical.
NUMERIC_CONVERSIONS = {"float", "int", "N", "evalf", "lambdify", "round", "abs"}

CELL = re.compile(r"^(`{3,})\{code-cell\}[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)


@dataclass
class Chapter:
    """What the audit found in one chapter."""

    name: str
    checks: int = 0
    with_alternative: int = 0
    exempt: Counter = field(default_factory=Counter)
    symbolic_asserts: int = 0
    problems: list = field(default_factory=list)  # (line in the .md, message)


def code_cells(text):
    """Yield ``(first line number in the .md, source)`` of every code cell."""
    for match in CELL.finditer(text):
        start = text.count("\n", 0, match.start(2)) + 1
        lines = match.group(2).split("\n")
        # cell options: a YAML block between --- lines, or leading ':key: value' lines
        skip = 0
        if lines and lines[0].strip() == "---":
            skip = lines.index("---", 1) + 1 if "---" in lines[1:] else 0
        else:
            while skip < len(lines) and re.match(r"^:[\w-]+:", lines[skip]):
                skip += 1
        body = [("pass" if ln.lstrip().startswith(("%", "!")) else ln) for ln in lines[skip:]]
        yield start + skip, "\n".join(body)


def _callee(node):
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _root(node):
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_symbolic(test):
    """True when an ``assert`` states a SymPy fact (simplify, sp./ss. calls), with no float in it."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and _callee(node) in NUMERIC_CONVERSIONS:
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, float):
            return False
        if isinstance(node, ast.Name | ast.Attribute) and _root(node) in {"np", "numpy", "math"}:
            return False
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            if _callee(node) in SYMPY_FUNCTIONS or _root(node.func) in SYMPY_ROOTS:
                return True
        if isinstance(node, ast.Attribute) and _root(node) in SYMPY_ROOTS:
            return True
        if isinstance(node, ast.Attribute) and node.attr.startswith("is_"):  # SymPy assumptions
            return True
    return False


def _reason(value):
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return " ".join(value.value.split())
    if isinstance(value, ast.JoinedStr):
        return "".join(v.value for v in value.values if isinstance(v, ast.Constant)).strip() + " (f-string)"
    return "(computed reason)"


def audit_chapter(path):
    """Audit one chapter's code cells; see the module docstring."""
    chapter = Chapter(path.stem)
    for first_line, source in code_cells(path.read_text(encoding="utf-8")):
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            chapter.problems.append(
                (first_line + (error.lineno or 1) - 1, f"cell does not parse: {error.msg}")
            )
            continue
        for node in ast.walk(tree):
            line = first_line + getattr(node, "lineno", 1) - 1
            if isinstance(node, ast.Call) and _callee(node) in CHECKS:
                chapter.checks += 1
                keywords = {k.arg: k.value for k in node.keywords}
                if None in keywords:
                    chapter.problems.append((line, f"{_callee(node)} with **kwargs: cannot audit"))
                elif "rules_out" in keywords and _callee(node) == "check_true":
                    chapter.problems.append(
                        (
                            line,
                            "check_true with rules_out: state the claim once, "
                            "check_holds(claim, value, rules_out={name: competing value})",
                        )
                    )
                elif "rules_out" in keywords:
                    chapter.with_alternative += 1
                elif "exempt" in keywords:
                    chapter.exempt[_reason(keywords["exempt"])] += 1
                else:
                    name = keywords.get("check")
                    label = f" ({name.value!r})" if isinstance(name, ast.Constant) else ""
                    chapter.problems.append(
                        (line, f"{_callee(node)}{label} names no wrong claim: add rules_out= or exempt=")
                    )
            elif isinstance(node, ast.Call) and _callee(node) in NUMPY_ASSERTS:
                chapter.problems.append(
                    (line, f"bare {_callee(node)}: make it a check_close with rules_out= (or exempt=)")
                )
            elif isinstance(node, ast.ImportFrom) and any(
                a.name in CHECKS and a.asname not in (None, a.name) for a in node.names
            ):
                chapter.problems.append((line, "a check imported under another name hides it from the audit"))
            elif (
                isinstance(node, ast.Assign | ast.AnnAssign)
                and isinstance(node.value, ast.Name | ast.Attribute)
                and (getattr(node.value, "id", None) or getattr(node.value, "attr", None)) in CHECKS
            ):
                chapter.problems.append((line, "a check bound to another name hides it from the audit"))
            elif isinstance(node, ast.Assert):
                if _is_symbolic(node.test):
                    chapter.symbolic_asserts += 1
                else:
                    chapter.problems.append(
                        (
                            line,
                            "bare numerical assert: make it a check_true/check_close naming the wrong claim",
                        )
                    )
        for statement in _outside_functions(tree.body):
            if isinstance(statement, ast.If) and any(
                isinstance(n, ast.Raise) for b in statement.body + statement.orelse for n in ast.walk(b)
            ):
                line = first_line + statement.lineno - 1
                message = "'if ...: raise' is a check without a name: use a named check"
                chapter.problems.append((line, message))
    chapter.problems.sort()
    return chapter


def _outside_functions(statements):
    """Every statement, at any depth, that is not inside a function or class body."""
    for statement in statements:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield statement
        for name in ("body", "orelse", "finalbody", "handlers"):
            yield from _outside_functions(getattr(statement, name, []) or [])


def chapters():
    return sorted(p for p in BOOK.glob("*.md") if "{code-cell}" in p.read_text(encoding="utf-8"))


def audit():
    return [audit_chapter(path) for path in chapters()]


def table(results):
    """The audit as printable text: one row per chapter, then exemptions by reason."""
    head = f"{'chapter':20s} {'checks':>6s} {'rules_out':>9s} {'exempt':>6s} {'neither':>7s} {'sympy':>5s}"
    rows = [head, "-" * len(head)]
    total = Counter()
    for c in results:
        neither = sum(1 for _, m in c.problems if "names no wrong claim" in m)
        ex = sum(c.exempt.values())
        rows.append(
            f"{c.name:20s} {c.checks:6d} {c.with_alternative:9d} {ex:6d} {neither:7d} {c.symbolic_asserts:5d}"
        )
        total.update(checks=c.checks, alt=c.with_alternative, ex=ex, neither=neither, sym=c.symbolic_asserts)
    rows.append("-" * len(head))
    rows.append(
        f"{'total':20s} {total['checks']:6d} {total['alt']:9d} {total['ex']:6d} "
        f"{total['neither']:7d} {total['sym']:5d}"
    )
    reasons = Counter()
    for c in results:
        reasons.update(c.exempt)
    if reasons:
        rows.append("\nexempt, by reason:")
        rows += [f"  {n:3d}  {reason}" for reason, n in reasons.most_common()]
    return "\n".join(rows)


# --- the audit's own parser, on small examples ------------------------------------


def test_parser_counts_rules_out_exempt_and_flags_the_rest(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```{code-cell} ipython3\n:tags: [remove-cell]\n"
        "check_close(1, 1, check='a', rules_out={'two': 2})\n"
        "at.check_true(True, check='b', exempt='a theorem')\n"
        "check_close(1, 1, check='c')\n"
        "assert sp.simplify(x - x) == 0\n"
        "assert abs(y - 1) < 1e-3\n"
        "np.testing.assert_allclose(y, 1)\n"
        "%matplotlib inline\n"
        "```\n",
        encoding="utf-8",
    )
    c = audit_chapter(page)
    assert (c.checks, c.with_alternative, dict(c.exempt), c.symbolic_asserts) == (3, 1, {"a theorem": 1}, 1)
    assert [line for line, _ in c.problems] == [7, 9, 10]  # lines in the .md file


def test_parser_refuses_hand_written_alternatives_aliases_and_hidden_raises(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```{code-cell} ipython3\n"
        "check_true(x > 0, check='a', rules_out={'b': False})\n"
        "check_holds(lambda v: v > 0, x, check='c', rules_out={'neg': -1})\n"
        "from attnscale import check_close as cc\n"
        "ok = check_close\n"
        "if x < 0:\n"
        "    raise RuntimeError('x')\n"
        "def f(kind):\n"
        "    if kind:\n"
        "        raise ValueError(kind)\n"
        "assert float(sp.N(x)) < 0.1\n"
        "```\n",
        encoding="utf-8",
    )
    c = audit_chapter(page)
    assert (c.checks, c.with_alternative, c.symbolic_asserts) == (2, 1, 0)
    assert [line for line, _ in c.problems] == [4, 6, 7, 8, 13]


def test_every_chapter_check_names_a_wrong_claim_or_why_none_exists():
    results = audit()
    print("\n" + table(results))
    problems = [f"book/{c.name}.md:{line}: {message}" for c in results for line, message in c.problems]
    if problems:
        pytest.fail(
            f"{len(problems)} check(s) cannot say what they rule out "
            f"(see CONTRIBUTING.md, 'What a check must be'):\n" + "\n".join(problems),
            pytrace=False,
        )


if __name__ == "__main__":
    print(table(audit()))
