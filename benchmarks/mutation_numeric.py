"""A generated mutation pass over softmax, exact, entropy and diagnose, judged by their fast tests.

    nice -n 10 python benchmarks/mutation_numeric.py                 # the four modules
    nice -n 10 python benchmarks/mutation_numeric.py --module exact  # one
    nice -n 10 python benchmarks/mutation_numeric.py --only softmax:12 exact:3
    nice -n 10 python benchmarks/mutation_numeric.py --survivors     # rerun the last record's survivors
    python benchmarks/mutation_numeric.py --table                    # reprint the last record

Unlike ``benchmarks/mutation_domain.py`` (hand-written mutants), this pass
finds its mutants with :mod:`ast`.  Each is one small change at one site of
a function's body (or a module constant):

- an arithmetic operator swapped (``+``/``-``, ``*``/``/``, ``**`` to ``*``);
- a comparison flipped (``<`` to ``<=``, ``<`` to ``>``, ``==`` to ``!=``);
- a constant perturbed: a floor ``0`` to ``1e-3``, ``1`` to ``1 + 1e-4``,
  ``2`` to ``3``, any other float by a relative ``1e-4``;
- a stability wrapper dropped: ``max(a, b)``/``np.maximum`` to ``a``,
  ``abs(x)`` to ``x``, ``log1p(x)`` to ``log(1 + x)``, ``expm1(x)`` to
  ``exp(x) - 1``;
- an off-by-one in a slice bound or an integer index.

Sites inside ``raise`` statements, the ``if`` tests that guard them
(argument validation, held by tests/test_validation.py), docstrings,
``axis=``/``keepdims=`` arguments and annotations are left alone.  Every
site is listed, then at most ``--cap`` per module are drawn with a fixed
seed.  One mutant at a time is written into a scratch copy of ``src/``
(the real source is never edited); the module's doctests and the test files
that exercise it run with ``PYTHONPATH`` on the copy, on one core
(``-n 0``), stopping at the first failure, in stages (fast tests first).

A mutant is *killed* (a test fails; its id is recorded), an *error* (the
module no longer imports, or pytest cannot collect: also a kill), a
*timeout*, or it *survived*.  A survivor listed in ``EQUIVALENT`` is named
as an equivalent mutant with the reason; any other is a gap in the tests.
The table goes to stdout and to ``benchmarks/results/mutation_numeric.json``.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
THEORY = "src/attnscale/theory"
SEED = 20261206

#: Per module: stages of pytest arguments, run in order until one fails (fast stages first).
STAGES = {
    "softmax": [["tests/test_whole_domain.py", "tests/test_softmax.py"]],
    "entropy": [
        ["tests/test_whole_domain.py", "tests/test_entropy_decoder.py", "tests/test_entropy_laplace.py"]
    ],
    "exact": [
        [
            "tests/test_whole_domain.py",
            "tests/test_exact.py",
            "-k",
            "not two_cosine_keys and not monte_carlo",
        ],
        ["tests/test_exact.py", "-k", "two_cosine_keys or monte_carlo"],
    ],
    "diagnose": [["tests/test_diagnose.py"]],
}

#: Per module: a probe run for each survivor, printing a JSON list of the module's values on a grid
#: of the whole domain; the survivor's largest relative change on it is recorded (0.0: no change).
_ROWS = """
rng = np.random.default_rng(7)
rows = [rng.standard_normal(20_000), np.r_[6.0, rng.standard_normal(999)],
        np.r_[3.0, 3.0, rng.standard_normal(98)], np.array([0.3, -0.2]), rng.standard_normal((3, 50))]
"""
PROBES = {
    "softmax": _ROWS
    + """
out = [f(r, a) for r in rows for a in (1e-8, 1e-3, 0.1, 1.0, 8.0, 400.0) for f in
       (at.collision_probability, at.gradient_objective, at.gradient_frobenius, at.renyi2_entropy)]
out += [at.softmax(rows[-1], 2.0), at.gradient_l1(rows[-1], 2.0), at.softmax(rows[1])]
out += [at.gradient_frobenius(rows[1])]
out += [at.row_best_scale(rows[-1]), at.row_best_scale(rows[-1], "frobenius", method="stationarity")]
""",
    "entropy": _ROWS
    + """
out = [at.softmax_entropy(r, a) for r in rows for a in (1e-8, 1e-3, 0.1, 1.0, 8.0, 400.0)]
out += [at.softmax_entropy(rows[1])]
out += [at.gaussian_meanfield_entropy(np.r_[0.0, 0.5, 2.0], np.r_[2.0, 1e3, 1e9])]
out += [at.entropy_invariant_scale(np.r_[2.0, 512.0, 1e6], np.r_[1.0, 64.0, 128.0])]
out += [at.entropy_invariant_scale(1e4, 1.0), at.entropy_matching_scale(1e4, 1.0)]
out += [at.entropy_matching_scale(np.r_[2.0, 256.0, 512.0, 1e6], np.r_[0.1, 1.0, 1.5, 2.0])]
out += [at.sphere_saddle_point(np.r_[1e-6, 0.1, 1.0, 30.0]), at.laplace_slope(np.r_[1e-6, 0.1, 1.0, 30.0])]
out += [at.sphere_entropy_slope(np.r_[1e-3, 0.5, 4.0], np.r_[2.0, 16.0, 128.0])]
spike, rng = np.r_[0.0, 3.0, 40.0], np.random.default_rng(0)
out += [at.spike_over_bulk_entropy(spike, 0.5, s, 33, rng) for s in (0.0, 1.0)]
""",
    "exact": """
a, n = np.array([1e-3, 1.0, 12.0, 50.0])[:, None], np.array([2, 10, 1e5, 1e9])[None, :]
out = [f(a, n, **kw) for kw in ({}, {"scores": "cosine", "d": 16})
       for f in (at.expected_collision, at.expected_gradient, at.expected_entropy, at.expected_max_weight)]
out += [at.gradient_limit(np.r_[2.0, 10.0, 1e4]), at.gradient_limit(np.r_[2.0, 1e4], scores="cosine", d=16)]
""",
    "diagnose": """
out = [at.iid_critical_scale(np.r_[2.0, 1e3, 1e6])]
out += [at.iid_critical_scale(np.r_[2.0, 1e3], scores="cosine", d=16)]
out += [at.accumulation_scale(np.abs(np.random.default_rng(3).standard_normal((4, 200))))]
out += [at.planted_length_factor(4.0, 0.0, 1.0, np.r_[512.0, 4096.0, 1e5], 512)]
rng = np.random.default_rng(5)
planted = np.c_[np.full(60, 9.0), rng.standard_normal((60, 1023))]
for rows in (rng.standard_normal((60, 1024)), planted):
    d = at.diagnose_law(rows, [4096, 16384], resamples=20)
    out += [np.asarray(v, dtype=float) for v in vars(d).values() if not isinstance(v, str)]
""",
}


def probe(copy: Path, module: str) -> list[float] | str:
    """The module's probe values in the scratch copy, or the error's last line."""
    code = (
        "import json, numpy as np, attnscale as at\n"
        + PROBES[module]
        + "\nvalues = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in out])"
        + "\nprint(json.dumps(values.tolist()))"
    )
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "OPENBLAS_NUM_THREADS": "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=copy, env=env, capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    if done.returncode:
        return (done.stderr.strip().splitlines() or ["exit"])[-1]
    return json.loads(done.stdout.replace("NaN", "null").replace("Infinity", "1e999"))


def relative_change(new, old) -> float | str:
    """The largest relative change of the probe values (NaN = NaN, inf = inf count as equal)."""
    if isinstance(new, str) or isinstance(old, str):
        return new if isinstance(new, str) else f"baseline: {old}"
    if len(new) != len(old):
        return "shape changed"
    a = np.array([np.nan if v is None else v for v in new], dtype=float)
    b = np.array([np.nan if v is None else v for v in old], dtype=float)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if same.all():
        return 0.0
    with np.errstate(all="ignore"):
        return float(np.max(np.where(same, 0.0, np.abs(a - b) / np.maximum(np.abs(b), 1e-300))))


#: Survivors that are equivalent mutants, by site id (module:line:col:kind), with the reason.
_GRID = "equivalent within the quadrature's error (only where the nodes sit moves): "
EQUIVALENT: dict[str, str] = {
    "softmax:535:7:cmp:NotEq": (
        "swaps row_best_scale's two routes (golden section on the norm, bisection on its slope's sign); "
        "at 40 iterations they agree to < 1e-7 relative (test_row_best_scale_two_routes_and_an_optimizer)"
    ),
    "softmax:83:20:const": "rows <= 1 vs rows <= 1.0001: rows is an integer",
    "softmax:373:44:const": (
        "the stand-in divisor when no weight but the top is left (largest = 0): "
        "rest_top = 0 * sqrt(0) either way"
    ),
    "softmax:81:7:op:Div": (
        "rows / n instead of rows * n decides only whether a batch is cut into blocks; a block's rows "
        "go through the same operations, so only the peak memory changes"
    ),
    "entropy:260:19:const": (
        "_BULK_BLOCK 2^21 instead of 2^20: spike_over_bulk_entropy draws the same numbers whatever the "
        "block (test_spike_over_bulk_draws_like_one_array_whatever_the_blocks); only memory changes"
    ),
    "exact:453:7:cmp:LtE": "the cosine-law cache holds 257 laws, not 256: only memory changes",
    "exact:489:11:cmp:Lt": (
        "the window-edge cache is emptied before each new entry instead of past 4096 entries: "
        "each window is recomputed by the same function, so only time changes"
    ),
    "exact:446:29:cmp:LtE": (
        "infinite_gap_density for d <= 2 + 1e-12 instead of d < 2 + 1e-12: differs at that one double only, "
        "itself a tolerance band around d = 2"
    ),
    "exact:729:23:cmp:GtE": (
        "an extra edge equal to the first edge is kept (>= instead of >), and np.unique drops it at once"
    ),
    "exact:679:31:const": _GRID
    + "an exceedance level of the max-weight grid, 1e-6 -> 1.0001e-6; the probe moves by 3e-16",
    "exact:679:49:const": _GRID
    + "an exceedance level of the max-weight grid, 1e-2 -> 1.0001e-2; the probe moves by 3e-16",
    "exact:679:97:const": _GRID
    + "an exceedance level of the max-weight grid, 32 -> 32.0032; the probe moves by 4e-16",
    "exact:701:33:const": _GRID
    + "the adaptive edges start 1e-3 of a panel in from the range's end; the probe moves by 2e-11",
    "exact:652:37:const": _GRID
    + "the outer range's top at P(S > s) = 1.0001e-26 / n; the probe moves by 7e-15",
    "exact:700:33:index": _GRID
    + "one adaptive panel fewer, ceil of the last but one measure; the probe moves by 7e-11",
    "exact:716:72:const": _GRID
    + "(n = 2 only: the coarse pass's S^0 read as S^0.001, edges placed by it): 2e-13",
    "exact:440:78:const": (
        "the cosine law's to_z clips -s/2 at 1.0001 instead of 1: that differs only for s < -2, outside "
        "the support; every caller passes clipped scores or quantiles (probe change 0)"
    ),
    "exact:132:8:const": (
        "the kernels' last breakpoint at w = 5.0005, not 5: every kernel is below exp(-e^5) = 1e-65 "
        "there; the probe moves by 5e-15"
    ),
    "diagnose:483:16:const": (
        "rows read in chunks of 3^22 scores instead of 2^22: every reading is the same whatever the chunks "
        "(test_chunks_do_not_change_the_reading_and_memory_stays_bounded); only memory changes"
    ),
    "diagnose:1266:11:const": (
        "int(max(1.001, x)) equals int(max(1, x)) for every x: the bootstrap's smallest chunk is "
        "1 resample either way"
    ),
    "diagnose:1407:78:const": (
        "the battery's cosine d = 6 law drawn on [-1, 2] instead of [-1, 1]: an affine change of the scores, "
        "under which the diagnostic's factor and interval and the law's two-end ratio are unchanged "
        "(checked: equal to the last digit on 16 x 64 rows)"
    ),
    "diagnose:297:17:cmp:Lt": (
        "a target whose log-odds at weight 0 equal the right-hand side exactly counts as unreachable: "
        "one boundary double"
    ),
}

#: Survivors that are real but left without a test, with the reason (shown in the table).
LEFT_OPEN: dict[str, str] = {
    "diagnose:1354:56:drop": (
        "the planted margin's first plotting position for a power-model slope below -2 (unclamped): "
        "no test reads so steep a fit"
    ),
    "diagnose:285:35:const": (
        "the frozen threshold sqrt(2 log(m - 1)) of planted_length_factor moved by about 1e-4 / (m log m) "
        "relative: only a target within that of it changes branch; not tested"
    ),
    "diagnose:1228:10:op:Div": (
        "one term of the up-front memory estimate (the top-k arrays): the estimate is tested as a bound on "
        "inputs where other terms dominate"
    ),
    "diagnose:1339:69:const": (
        "the depth check's width threshold (2/3 instead of 2 x 1/3 in log factor): read by the tests only "
        "through the battery's coverage counts"
    ),
}

_SWAP = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.Pow: ast.Mult, ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv,
}  # fmt: skip
_FLIP = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
_REVERSE = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
_WRAPPERS = {"max", "maximum", "fmax", "abs", "absolute", "fabs", "log1p", "expm1", "min", "minimum"}
_SKIP_KEYWORDS = {"axis", "keepdims", "ndmin", "dtype", "stacklevel", "strict"}


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_number(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    )


def _perturbed(value):
    """The constant mutants' new values: a floor, 1 + 1e-4, 2 -> 3, a relative 1e-4."""
    if value == 0:
        return 1e-3
    if value == 1:
        return 1.0001
    if value == 2:
        return 3
    if isinstance(value, int):
        return value + 1
    return value * (1 + 1e-4)


def _guards_raise(node: ast.If) -> bool:
    return any(isinstance(stmt, ast.Raise) for stmt in node.body)


def _skipped(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: raises, their guards, docstrings, annotations, axis= keywords."""
    skip: set[int] = set()

    def drop(node):
        skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.Raise | ast.Assert):
            drop(node)
        elif isinstance(node, ast.If) and _guards_raise(node):
            drop(node.test)
        elif isinstance(node, ast.keyword) and node.arg in _SKIP_KEYWORDS:
            drop(node)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            drop(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.returns is not None:
                drop(node.returns)
            for decorator in node.decorator_list:
                drop(decorator)
        elif isinstance(node, ast.AnnAssign):
            drop(node.annotation)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            drop(node)
        elif isinstance(node, ast.Call) and _name(node.func) in {"warn", "ValueError", "TypeError"}:
            drop(node)
    return skip


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _functions(tree: ast.Module) -> dict[int, str]:
    """The enclosing top-level function or class of each node, by node id."""
    owner: dict[int, str] = {}
    for top in tree.body:
        label = getattr(top, "name", "<module>")
        for node in ast.walk(top):
            owner[id(node)] = label
    return owner


def sites(tree: ast.Module) -> list[tuple[ast.AST, str, str]]:
    """Every (node, kind, description) this pass may mutate, in source order."""
    skip, parent, found = _skipped(tree), _parents(tree), []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _SWAP:
            new = _SWAP[type(node.op)]
            found.append((node, f"op:{new.__name__}", f"{type(node.op).__name__} -> {new.__name__}"))
        elif isinstance(node, ast.AugAssign) and type(node.op) in _SWAP:
            new = _SWAP[type(node.op)]
            found.append((node, f"op:{new.__name__}", f"{type(node.op).__name__}= -> {new.__name__}="))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            for table_ in (_FLIP, _REVERSE):
                if op in table_:
                    new = table_[op].__name__
                    found.append((node, f"cmp:{new}", f"{op.__name__} -> {new}"))
        elif _is_number(node):
            up = parent.get(id(node))
            if isinstance(up, ast.Slice):
                found.append((node, "slice", f"slice bound {node.value} -> {node.value + 1}"))
            elif isinstance(up, ast.Subscript) and isinstance(node.value, int):
                found.append((node, "index", f"index {node.value} -> {node.value + 1}"))
            elif isinstance(up, ast.UnaryOp) and isinstance(parent.get(id(up)), ast.Subscript):
                found.append((node, "index", f"index -{node.value} -> -{node.value + 1}"))
            else:
                found.append((node, "const", f"constant {node.value!r} -> {_perturbed(node.value)!r}"))
        elif isinstance(node, ast.Call) and _name(node.func) in _WRAPPERS and node.args:
            name = _name(node.func)
            if name in {"max", "maximum", "fmax", "min", "minimum"} and len(node.args) != 2:
                continue  # a reduction over an array, not a floor
            what = {"log1p": "log1p(x) -> log(1 + x)", "expm1": "expm1(x) -> exp(x) - 1"}
            found.append((node, "drop", what.get(name, f"{name}(x, ...) -> x")))
        elif isinstance(node, ast.Slice):
            if node.lower is None and node.upper is not None:
                found.append((node, "slice-lower", "slice [:b] -> [1:b]"))
    return found


class _Apply(ast.NodeTransformer):
    def __init__(self, target: int, kind: str):
        self.target, self.kind = target, kind

    def visit(self, node):
        if id(node) != self.target:
            return self.generic_visit(node)
        kind = self.kind
        if kind.startswith("op:"):
            node.op = getattr(ast, kind[3:])()
        elif kind.startswith("cmp:"):
            node.ops = [getattr(ast, kind[4:])()]
        elif kind == "const":
            node.value = _perturbed(node.value)
        elif kind in {"slice", "index"}:
            node.value = node.value + 1
        elif kind == "slice-lower":
            node.lower = ast.Constant(1)
        elif kind == "drop":
            name = _name(node.func)
            x = node.args[0]
            if name == "log1p":
                node.func = _rename(node.func, "log")
                node.args = [ast.BinOp(ast.Constant(1.0), ast.Add(), x)]
            elif name == "expm1":
                node.func = _rename(node.func, "exp")
                return ast.BinOp(node, ast.Sub(), ast.Constant(1.0))
            else:
                return x
        return node


def _rename(func: ast.expr, name: str) -> ast.expr:
    if isinstance(func, ast.Attribute):
        return ast.Attribute(func.value, name, func.ctx)
    return ast.Name(name, func.ctx)


def mutants(module: str, cap: int) -> list[dict]:
    """The sampled mutants of one module: id, line, function, description, and the new source."""
    text = (ROOT / THEORY / f"{module}.py").read_text()
    tree = ast.parse(text)
    owner = _functions(tree)
    listed = sites(tree)
    rng = random.Random(f"{SEED}:{module}")
    picked = sorted(rng.sample(range(len(listed)), min(cap, len(listed))))
    out = []
    for k in picked:
        node, kind, what = listed[k]
        fresh = ast.parse(text)
        index = [id(n) for n, _, _ in sites(fresh)][k]
        new = ast.fix_missing_locations(_Apply(index, kind).visit(fresh))
        site = f"{module}:{node.lineno}:{node.col_offset}:{kind}"
        out.append({
            "id": site, "module": module, "line": node.lineno, "function": owner.get(id(node), "?"),
            "what": what, "code": ast.get_source_segment(text, node) or "", "source": ast.unparse(new),
        })  # fmt: skip
    return out, len(listed)


def run_stages(copy: Path, module: str, timeout: float) -> tuple[str, str | None]:
    """('survived', None), ('killed', test id), ('error', reason) or ('timeout', None)."""
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # fmt: skip
    doctests = [str(copy / THEORY / f"{module}.py")]
    for k, stage in enumerate(STAGES[module]):
        args = [*(doctests if k == 0 else []), *stage]
        command = [
            sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
            "-p", "no:randomly", "--doctest-modules", "-o", "addopts=", "-W", "error", *args,
        ]  # fmt: skip
        try:
            done = subprocess.run(
                command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return "timeout", None
        if done.returncode == 0:
            continue
        failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M)
        if done.returncode == 1 and failed:
            return "killed", failed[0]
        errors = re.findall(r"^ERROR (\S+)", done.stdout, flags=re.M)
        return "error", (errors[0] if errors else f"pytest exit {done.returncode}")
    return "survived", None


def _scratch(where: Path) -> Path:
    shutil.copytree(ROOT / "src", where / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", where / "tests", ignore=shutil.ignore_patterns("__pycache__", "vendor"))
    shutil.copy2(ROOT / "pyproject.toml", where / "pyproject.toml")
    # the stored results some tests compare with (the diagnostic's battery), read only
    (where / "book").mkdir()
    (where / "book" / "data").symlink_to(ROOT / "book" / "data")
    return where


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _verdict(row: dict) -> str:
    if row["status"] != "survived":
        return row["status"]
    return "equivalent" if row["id"] in EQUIVALENT else "SURVIVED (gap)"


def table(rows: list[dict], totals: dict[str, int]) -> str:
    lines = []
    for row in rows:
        note = row["killer"] or EQUIVALENT.get(row["id"]) or LEFT_OPEN.get(row["id"], "")
        change = row.get("probe_max_rel_change")
        if row["status"] == "survived" and change is not None:
            note = (f"probe {change:.1e}; " if isinstance(change, float) else f"probe: {change}; ") + note
        lines.append(
            f"{row['id']:32s} {row['function'][:24]:24s} {row['what'][:34]:34s} "
            f"{_verdict(row):15s} {row['seconds']:5.1f}s  {note}"
        )
    lines.append("")
    lines.append(f"{'module':10s} {'sites':>5s} {'mutants':>7s} {'killed':>6s} {'error':>5s} "
                 f"{'equiv':>5s} {'real':>4s} {'t/o':>3s}")  # fmt: skip
    for module in totals:
        mine = [r for r in rows if r["module"] == module]
        count = {v: sum(_verdict(r) == v for r in mine) for v in
                 ("killed", "error", "equivalent", "SURVIVED (gap)", "timeout")}  # fmt: skip
        lines.append(
            f"{module:10s} {totals[module]:5d} {len(mine):7d} {count['killed']:6d} {count['error']:5d} "
            f"{count['equivalent']:5d} {count['SURVIVED (gap)']:4d} {count['timeout']:3d}"
        )
    return "\n".join(lines)


def merge(out: Path, rerun: dict) -> dict:
    """The record at ``out`` with the rerun's rows in place of its own (say, after new tests)."""
    earlier = json.loads(out.read_text())
    fresh = {r["id"]: r for r in rerun["mutants"]}
    merged = [fresh.pop(r["id"], r) for r in earlier["mutants"]] + list(fresh.values())
    for row in merged:
        row["verdict"] = _verdict(row)
        row["equivalent_because"] = EQUIVALENT.get(row["id"])
    reruns = [*earlier.get("reruns", []), {key: rerun[key] for key in ("command", "commit", "date")}]
    print("\nmerged into the last full record:\n")
    print(table(merged, earlier["sites"]))
    return {**earlier, "mutants": merged, "reruns": reruns}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", nargs="+", default=list(STAGES), choices=list(STAGES))
    parser.add_argument("--cap", type=int, default=40, help="mutants drawn per module (fixed seed)")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per mutant")
    parser.add_argument("--only", nargs="+", default=None, help="module:k, k 1-based in the sample")
    parser.add_argument("--list", action="store_true", help="list the sampled mutants and stop")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/mutation_numeric.json"))
    parser.add_argument("--survivors", action="store_true", help="rerun the last record's survivors")
    parser.add_argument("--probe-only", action="store_true", help="with --only: the probe's change, no tests")
    parser.add_argument("--table", action="store_true", help="reprint the last record, verdicts updated")
    parser.add_argument("--merge", default=None, help="merge a rerun's record (from --only --out) into --out")
    args = parser.parse_args(argv)
    if args.merge:
        record = merge(Path(args.out), json.loads(Path(args.merge).read_text()))
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
        return 0
    if args.table:
        record = json.loads(Path(args.out).read_text())
        for row in record["mutants"]:
            row["verdict"] = _verdict(row)
            row["equivalent_because"] = EQUIVALENT.get(row["id"])
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
        print(table(record["mutants"], record["sites"]))
        return 0
    if args.survivors:
        last = json.loads(Path(args.out).read_text())["mutants"]
        args.only = [f"{r['module']}:{r['number']}" for r in last if r["status"] == "survived"]
    modules = sorted({o.split(":")[0] for o in args.only}) if args.only else args.module
    started, rows, totals = time.perf_counter(), [], {}
    with tempfile.TemporaryDirectory(prefix="mutation-numeric-") as scratch:
        copy = _scratch(Path(scratch))
        for module in modules:
            drawn, totals[module] = mutants(module, args.cap)
            chosen = list(enumerate(drawn, start=1))
            if args.only:
                keep = {int(o.split(":")[1]) for o in args.only if o.split(":")[0] == module}
                chosen = [(k, m) for k, m in chosen if k in keep]
            if args.list:
                for k, m in chosen:
                    where = f"{module}:{k:<3d} {m['id']:32s} {m['function']:24s}"
                    print(f"{where} {m['what']:34s} {m['code'][:60]!r}")
                continue
            path = copy / THEORY / f"{module}.py"
            original = path.read_text()
            if args.probe_only:
                baseline = probe(copy, module)
                for k, m in chosen:
                    path.write_text(m["source"])
                    try:
                        change = relative_change(probe(copy, module), baseline)
                        print(f"{module}:{k} {m['id']} {m['what']}: probe {change}", flush=True)
                    finally:
                        path.write_text(original)
                continue
            path.write_text(ast.unparse(ast.parse(original)))  # the unparsed, unmutated module must pass
            status, killer = run_stages(copy, module, args.timeout)
            assert status == "survived", f"{module}'s tests fail on the unmutated module: {status} {killer}"
            baseline = probe(copy, module)
            for k, m in chosen:
                path.write_text(m["source"])
                start = time.perf_counter()
                change = None
                try:
                    status, killer = run_stages(copy, module, args.timeout)
                    if status == "survived":
                        change = relative_change(probe(copy, module), baseline)
                finally:
                    path.write_text(original)
                row = {key: m[key] for key in ("id", "module", "line", "function", "what", "code")}
                row.update(number=k, status=status, killer=killer, seconds=time.perf_counter() - start)
                row["probe_max_rel_change"] = change
                rows.append(row)
                print(f"{module}:{k} {row['id']} {row['what']} -> {_verdict(row)} {killer or ''}", flush=True)
    if args.list or args.probe_only:
        return 0
    elapsed = time.perf_counter() - started
    print()
    print(table(rows, totals))
    print(f"\nwall time {elapsed:.0f} s")
    for row in rows:
        row["verdict"] = _verdict(row)
        row["equivalent_because"] = EQUIVALENT.get(row["id"])
    record = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain")),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seed": SEED, "cap": args.cap, "sites": totals, "wall_seconds": round(elapsed, 1),
        "mutants": rows,
    }  # fmt: skip
    out = Path(args.out)
    if args.only and out.exists():
        record = merge(out, record)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    rows = record["mutants"]
    gaps = sum(r["verdict"] == "SURVIVED (gap)" for r in rows)
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
