"""Every function and class of the package is short enough to hold in one's head, or says why not.

A definition's length is its lines, decorators included, less the lines of
its docstrings (its own and those of what it defines).  Over
:data:`LONGEST` lines it must give the reason in its docstring, in a line
that starts with "Long because" (a dataclass of documented fields, say).
Run as a script, it prints the longest definitions::

    python tests/test_function_length.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "attnscale"
#: The longest a definition may be without a reason.
LONGEST = 80
REASON = "Long because"


def _docstring_lines(node: ast.AST) -> set[int]:
    """The line numbers of every docstring inside ``node`` (its own included)."""
    lines: set[int] = set()
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner.body:
            first = inner.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def definition_lengths(path: Path) -> list[tuple[int, str, bool]]:
    """``(length, qualified name, gives a reason)`` of every function and class in ``path``, nested too."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                length = node.end_lineno - start + 1 - len(_docstring_lines(node))
                doc = ast.get_docstring(node) or ""
                reason = any(line.strip().startswith(REASON) for line in doc.splitlines())
                out.append((length, f"{path.stem}.{prefix}{node.name}", reason))
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return out


def all_lengths() -> list[tuple[int, str, bool]]:
    return sorted(
        (row for path in sorted(PACKAGE.rglob("*.py")) for row in definition_lengths(path)), reverse=True
    )


def test_long_definitions_say_why():
    unexplained = [
        f"{name}: {length} lines" for length, name, reason in all_lengths() if length > LONGEST and not reason
    ]
    assert not unexplained, (
        f"over {LONGEST} lines (docstrings left out) without a line starting {REASON!r} in the docstring: "
        + "; ".join(unexplained)
    )


def test_the_measure_leaves_docstrings_out(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    source = f'def f():\n    """One.\n\n    Two.\n    """\n{body}\n'
    (tmp_path / "m.py").write_text(source)
    assert definition_lengths(tmp_path / "m.py") == [(LONGEST + 1, "m.f", False)]


if __name__ == "__main__":
    for length, name, reason in all_lengths()[: int(sys.argv[1]) if len(sys.argv) > 1 else 20]:
        print(f"{length:5d}  {name}{'  (says why)' if reason else ''}")
