"""Exact expectations (attnscale.theory.exact) against Monte Carlo at matched accuracy.

For each (alpha, n) the exact route costs one call of
``attnscale.expected_gradient`` (or entropy).  Monte Carlo reaches a relative
standard error of 1e-4 with R = (sd / mean / 1e-4)^2 rows; sd/mean comes
from a pilot of sampled rows and the cost of one row is timed in this run,
so the baseline is "the rows Monte Carlo needs, at the speed it runs here".
Also: a 200-point alpha curve at n = 1e6 (the target is under one second).

    python benchmarks/bench_exact.py
"""

from __future__ import annotations

import time

import numpy as np
from _harness import best_time

import attnscale as at

TARGET_RSE = 1e-4


def monte_carlo_cost(alpha, n, statistic, rng, pilot_rows=64):
    """Seconds Monte Carlo needs for a relative standard error of 1e-4, and the rows."""
    chunk = max(1, min(pilot_rows, int(4e6 // n)))
    values, spent, rows = [], 0.0, 0
    while rows < pilot_rows:
        start = time.perf_counter()
        s = rng.standard_normal((chunk, int(n)))
        p = at.softmax(s, alpha)
        if statistic == "gradient":
            v = alpha * (1.0 - np.sum(p * p, axis=1))
        else:
            v = -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=1)
        spent += time.perf_counter() - start
        values.append(v)
        rows += chunk
    v = np.concatenate(values)
    needed = max((v.std(ddof=1) / v.mean() / TARGET_RSE) ** 2, 2.0)  # an SE needs two rows
    return spent / rows * needed, needed


def main():
    rng = np.random.default_rng(0)
    for statistic, fn in [("gradient", at.expected_gradient), ("entropy", at.expected_entropy)]:
        print(f"E[{statistic}], standard normal scores: Monte Carlo at 1e-4 relative SE vs one exact call")
        print(f"  {'n':>9} {'alpha':>6} {'MC rows':>12} {'MC time':>12} {'exact':>10} {'ratio':>12}")
        for alpha, n in [(1.0, 512), (3.0, 512), (3.0, 65536), (1.0, 1e6), (4.0, 1e6)]:
            exact = best_time(lambda a=alpha, m=n, f=fn: f(a, m), repeat=3, min_seconds=0.05)
            mc, needed = monte_carlo_cost(alpha, n, statistic, rng)
            print(
                f"  {n:>9g} {alpha:>6g} {needed:>12,.0f} {mc:>10.3g} s {exact * 1e3:>7.1f} ms "
                f"{mc / exact:>11,.0f}x"
            )
        print()

    alphas = np.linspace(0.01, 10.0, 200)
    # the first call also builds the cached quadrature kernels: report it apart
    start = time.perf_counter()
    at.expected_gradient(alphas, 1e6)
    first = time.perf_counter() - start
    curve = best_time(lambda: at.expected_gradient(alphas, 1e6), repeat=3, min_seconds=0.0)
    cosine_alphas = np.linspace(1.0, 300.0, 200)
    cosine_curve = best_time(lambda: at.expected_gradient(cosine_alphas, 1e6, "cosine", 128), repeat=3)
    print(
        f"200-point alpha curve of E[gradient] at n = 1e6: {curve:.2f} s "
        f"(first call {first:.2f} s; target < 1 s)"
    )
    print(f"200-point alpha curve, cosine scores d = 128, n = 1e6: {cosine_curve:.2f} s")


if __name__ == "__main__":
    main()
