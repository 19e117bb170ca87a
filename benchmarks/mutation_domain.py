"""A mutation pass over the numerical core (softmax, entropy, exact, diagnose), judged by its unit tests.

    python benchmarks/mutation_domain.py            # every mutant (a few minutes)
    python benchmarks/mutation_domain.py --only 1 4 # some, by number

Each mutant changes one line of a module: a floor, a threshold, a
subtraction where a sum of complements stood, a dropped scaling, a grid
constant.  In a scratch copy of ``src/`` it runs the tests that hold that
module (its own tests, ``tests/test_whole_domain.py`` and its doctests) and
reports which test killed the mutant first, or that it survived.  A
mutant listed as *equivalent* changes no result a double can show; it is
run all the same, and its survival is expected.

``benchmarks/mutation.py`` is the wider pass (every module, judged by the
whole unit suite and every chapter); this one is the quick, targeted pass
over the functions a reader's numbers rest on most.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The tests that judge each module's mutants (besides its doctests and test_whole_domain.py).
TESTS = {
    "softmax.py": ["tests/test_softmax.py"],
    "entropy.py": ["tests/test_entropy_decoder.py"],
    "exact.py": ["tests/test_exact.py"],
    "diagnose.py": ["tests/test_diagnose.py"],
}

# (module file, text replaced, replacement, what the fault is, expected: "killed" or "equivalent")
MUTANTS = [
    (
        "softmax.py",
        "squares.sum(axis=-1, keepdims=True) - squares, 0.0))",
        "squares.sum(axis=-1, keepdims=True) - squares, 1e-3))",
        "Frobenius: floor of the off-top square root raised from 0 to 1e-3",
        "killed",
    ),
    (
        "softmax.py",
        "rest_top = largest * np.sqrt(np.sum((others / safe) ** 2, axis=-1, keepdims=True))",
        "rest_top = np.sqrt(np.sum(others**2, axis=-1, keepdims=True))",
        "Frobenius: the top row's rest summed without scaling (squares underflow)",
        "killed",
    ),
    (
        "softmax.py",
        "np.put_along_axis(others, top, rest, axis=-1)",
        "pass",
        "complements: the top weight's 1 - p by subtraction, not summed",
        "killed",
    ),
    (
        "softmax.py",
        "return alpha[..., 0] * np.sum(p * complement, axis=-1)",
        "return alpha[..., 0] * (1.0 - np.sum(p * p, axis=-1))",
        "objective: 1 - sum p^2 by subtraction",
        "killed",
    ),
    (
        "softmax.py",
        "np.where(collision < 0.5, -np.log(collision), -np.log1p(-np.minimum(spread, 0.5)))",
        "np.where(collision < 0.4, -np.log(collision), -np.log1p(-np.minimum(spread, 0.6)))",
        "Renyi-2: the switch between its two accurate forms moved (both are accurate there)",
        "equivalent",
    ),
    (
        "softmax.py",
        "_BLOCK_SCORES = 1 << 20",
        "_BLOCK_SCORES = 1 << 12",
        "row blocks of 4096 scores instead of 2^20 (only memory changes)",
        "equivalent",
    ),
    (
        "softmax.py",
        "gap = s - s.max(axis=-1, keepdims=True)  # <= 0",
        "gap = s - s.mean(axis=-1, keepdims=True)  # <= 0",
        "weights shifted by the mean instead of the maximum (overflow)",
        "killed",
    ),
    (
        "entropy.py",
        "rest = np.sum(np.where(below, w, 0.0), axis=-1) + (s.shape[-1] - below.sum(axis=-1) - 1)",
        "rest = np.sum(np.where(below, w, 0.0), axis=-1)",
        "entropy: tied top weights not counted",
        "killed",
    ),
    (
        "entropy.py",
        "return np.log1p(rest) + spread / (1.0 + rest)",
        "return np.log(1.0 + rest) + spread / (1.0 + rest)",
        "entropy: log(1 + x) instead of log1p(x) (a peaked row's tiny entropy)",
        "killed",
    ),
    (
        "entropy.py",
        "return np.log1p(rest) + spread / (1.0 + rest)",
        "return np.log1p(rest) + 1.0001 * spread / (1.0 + rest)",
        "entropy: a 1e-4 relative fault in its second term",
        "killed",
    ),
    (
        "exact.py",
        "_COARSE = 49",
        "_COARSE = 25",
        "expectations: a first pass of 25 points, not 49 (results move by 4e-11 at most)",
        "equivalent",
    ),
    (
        "exact.py",
        "_COARSE = 49",
        "_COARSE = 9",
        "expectations: a first pass of 9 points (results move by up to 3.5e-5)",
        "killed",
    ),
    (
        "exact.py",
        "def _adaptive_edges(x, logv, drop=32.0, step=4.0, per_peak=2.0):",
        "def _adaptive_edges(x, logv, drop=12.0, step=4.0, per_peak=2.0):",
        "expectations: the outer range cut where the integrand is e^-12 of its peak",
        "killed",
    ),
    (
        "exact.py",
        "return alpha * n * (n - 1.0) * np.sum(wt * integrand)",
        "return 1.0001 * alpha * n * (n - 1.0) * np.sum(wt * integrand)",
        "expected gradient: a 1e-4 relative fault",
        "killed",
    ),
    (
        "exact.py",
        'return -n * np.sum(wt * inner["eta"] * np.exp(_log_power(S, n - 1.0)))',
        'return -n * np.sum(wt * inner["eta"] * np.exp(_log_power(S, n - 1.0001)))',
        "expected entropy: n - 1 off by 1e-4 in the survival's power",
        "killed",
    ),
]


def _module(copy: Path, name: str) -> Path:
    (found,) = [p for p in (copy / "src").rglob(name) if "__pycache__" not in p.parts]
    return found


def run_tests(copy: Path, module: Path, tests: list[str]) -> str | None:
    """The first failing test's id, or None when all pass."""
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
            "--doctest-modules", "-o", "addopts=", "-W", "error", str(module), *tests,
        ],
        cwd=copy, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode == 0:
        return None
    failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M) or re.findall(
        r"^ERROR (\S+)", done.stdout, re.M
    )
    return failed[0] if failed else f"exit {done.returncode}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", type=int, nargs="+", default=None, help="mutant numbers (1-based)")
    args = parser.parse_args(argv)
    selected = list(enumerate(MUTANTS, start=1))
    if args.only:
        selected = [selected[k - 1] for k in args.only]
    rows, surprises = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch)
        shutil.copytree(ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(
            ROOT / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__", "vendor")
        )
        shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
        for name in sorted({m[0] for _, m in selected}):
            tests = [*TESTS[name], "tests/test_whole_domain.py"]
            assert run_tests(copy, _module(copy, name), tests) is None, f"{name}'s tests fail unmutated"
        for number, (name, old, new, what, expected) in selected:
            path = _module(copy, name)
            original = path.read_text()
            if original.count(old) != 1:
                rows.append((number, name, what, expected, "STALE (text not found once)", 0.0))
                continue
            path.write_text(original.replace(old, new))
            start = time.perf_counter()
            try:
                killer = run_tests(copy, path, [*TESTS[name], "tests/test_whole_domain.py"])
            finally:
                path.write_text(original)
            verdict = f"killed by {killer}" if killer else "survived"
            surprises += (killer is None) != (expected == "equivalent")
            rows.append((number, name, what, expected, verdict, time.perf_counter() - start))
    for number, name, what, expected, verdict, seconds in rows:
        print(f"{number:2d}. {name:12s} {what}\n    expected {expected}; {verdict} ({seconds:.0f} s)")
    print(f"\n{surprises} mutant(s) did other than expected")
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
