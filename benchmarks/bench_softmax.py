"""Gradient size of softmax rows: three routes, timed in one run.

Baseline: a reader's first version, a Python loop over rows that builds
each Jacobian with NumPy.  Then the package's batched Jacobian route
(attnscale.gradient_l1, O(n^2) per row) and its O(n) identity route
(attnscale.gradient_objective).  All three must agree to 1e-12.

    python benchmarks/bench_softmax.py
"""

from __future__ import annotations

from functools import partial

import numpy as np
from _harness import best_time, report

import attnscale as at


def loop_baseline(scores, alpha):
    out = np.empty(len(scores))
    for k, s in enumerate(scores):
        e = np.exp(alpha * (s - s.max()))
        p = e / e.sum()
        jac = alpha * (np.diag(p) - np.outer(p, p))
        out[k] = 0.5 * np.abs(jac).sum()
    return out


def main():
    rng = np.random.default_rng(0)
    for rows, n in [(2000, 16), (200, 256)]:
        scores = rng.normal(size=(rows, n))
        alpha = 2.0
        reference = loop_baseline(scores, alpha)
        for route in (at.gradient_l1, at.gradient_objective):
            np.testing.assert_allclose(route(scores, alpha), reference, rtol=1e-12)
        report(
            f"half L1 norm of the softmax Jacobian, {rows} rows of n = {n}",
            [
                ("Python loop over rows (baseline)", best_time(partial(loop_baseline, scores, alpha)), ""),
                (
                    "gradient_l1 (batched Jacobian)",
                    best_time(partial(at.gradient_l1, scores, alpha)),
                    "O(n^2) memory: the definition, not the fast path",
                ),
                (
                    "gradient_objective (O(n) identity)",
                    best_time(partial(at.gradient_objective, scores, alpha)),
                    "",
                ),
            ],
        )


if __name__ == "__main__":
    main()
