"""The cosine entropy table of the recipes page's calculator (about four minutes on two CPU cores).

    python experiments/calculator_cosine.py            # the committed file, book/data/calculator-cosine.json
    python experiments/calculator_cosine.py --quick --out /tmp/cc.json   # a coarse grid, seconds

The calculator on the recipes page solves the exact entropy match, and turns
a measured head entropy into the head's scale, from tables of the exact
expected entropy ``attnscale.expected_entropy``.  For Gaussian scores that
is a function of the scale and n, tabulated at build time
(``book/_ext/calculator_table.py``, five seconds of one core).  For cosine
scores it depends on d too: about 43000 exact expectations of several
milliseconds each, minutes of work, past the build's budget.  So this script
computes the values once and writes them with their provenance; the build
reads them, recomputes a few nodes with the package and fails if any
differs (a stale file), then fits the spline the page interpolates.  Never
edit the file by hand: rerun this.

The grid (``cosine_grid`` in the build's extension, which also defines the
scales and the value, so that the build and this script agree): :math:`x = \\log\\log n` for
:math:`2 \\le n \\le 10^9`; :math:`w = 1/\\sqrt{d-1}` for
:math:`2 \\le d \\le 10^6`, denser near :math:`d = 2`, where the law of a
cosine is furthest from a Gaussian; and, at each :math:`(n, d)`, the scale
:math:`\\alpha` on the unit-variance score :math:`\\sqrt d\\cos` from
1.5e-4 times :math:`\\sqrt{2\\log n}` to the exact expectation's cap
:math:`10^4/\\sqrt d`, uniform in :math:`\\log\\alpha` (the coordinate
:math:`t \\in [0, 1]`).  The value is :math:`\\operatorname{logit}(\\mathbb
E[H]/\\log n)`, as for Gaussian scores.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

# the table's definition (grid, scales, value) lives with the build that reads it
from calculator_table import (  # noqa: E402
    COSINE_ENTROPY_FILE,
    cosine_grid,
    cosine_keys_and_dims,
    cosine_logit_entropy,
    cosine_scales,
)

DIGITS = 10  # significant digits kept: far below the spline's error


def _row(task):
    n, d, count = task
    values = cosine_logit_entropy(cosine_scales(n, d, count), n, d)
    return [float(f"{v:.{DIGITS}g}") for v in values]


def provenance(argv):
    watched = ("src", "experiments", "book/_ext/calculator_table.py")

    def git(*args):
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    return {
        "command": " ".join(["python", *argv]),
        "git_commit": git("rev-parse", "HEAD"),
        # the code that computes the values: the package, this script, and the table's definition
        "git_dirty": bool(git("status", "--porcelain", "--", *watched)),
        "python": platform.python_version(),
        "packages": {name: metadata.version(name) for name in ("numpy", "scipy", "mpmath")},
        "attnscale": metadata.version("attnscale"),
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=COSINE_ENTROPY_FILE)
    parser.add_argument("--quick", action="store_true", help="a coarse grid: a smoke test")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv[1:])
    nodes = cosine_grid(args.quick)
    keys, dims = cosine_keys_and_dims(nodes["x"], nodes["w"])
    tasks = [(float(n), float(d), nodes["t"]) for n in keys for d in dims]
    info = provenance(argv)
    begin = time.monotonic()
    rows = []
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for row in pool.imap(_row, tasks, chunksize=4):
            rows.append(row)
            done = len(rows)
            elapsed = time.monotonic() - begin
            eta = elapsed / done * (len(tasks) - done)
            bar = "#" * (30 * done // len(tasks))
            line = f"\r[{bar:30}] {done}/{len(tasks)} rows, {elapsed:5.0f} s, eta {eta:4.0f} s"
            print(line, end="", file=sys.stderr)
    print(file=sys.stderr)
    info["wall_seconds"] = round(time.monotonic() - begin, 1)
    values = np.array(rows).reshape(len(keys), len(dims), nodes["t"])
    out = {
        "provenance": info,
        "what": "logit(E[H] / log n), cosine scores, attnscale.expected_entropy",
        "grid": {
            **nodes,
            "n": "exp(exp(x)), the ends exactly 2 and 1e9",
            "d": "1 + 1/w^2",
            "alpha": "exp(log(1.5e-4 sqrt(2 log n)) + t (log(1e4 / sqrt(d)) - log(1.5e-4 sqrt(2 log n))))",
        },
        "values": values.tolist(),  # [x][w][t]
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_suffix(".partial")
    partial.write_text(json.dumps(out, separators=(",", ":")))
    partial.rename(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) in {info['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main()
