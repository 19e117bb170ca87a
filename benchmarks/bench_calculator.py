"""The scale calculator: its causal row by integration against enumeration, and its answer time.

1. ``attnscale.best_causal_scale``: the route that sums the first 1024
   positions and integrates the rest over log n, against the route it
   replaced (every position 2 .. L enumerated at each step of the same
   bounded search), timed in this run at L where the enumeration still
   fits in memory.  Beyond, the enumeration's cost is its cost per
   position-evaluation measured here times L times the number of
   evaluations its search makes, and its memory about ten float64 arrays
   of L (the first edition's CLI was killed at L = 1e9 and took 4.8 GB at
   1e8); both are printed as estimates, marked "est".
2. ``attnscale.recommend_scale`` in-process for CONTRIBUTING.md's settings and
   the issue's cases, and the slowest of 300 seeded settings drawn over the
   documented domain (target: under one second), with the peak traced
   memory; then the command line's wall time against ``python -c "import
   attnscale"`` (the package import, which the command cannot avoid).

    python benchmarks/bench_calculator.py
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from _harness import best_time, report
from scipy.optimize import minimize_scalar

import attnscale as at


def enumerated_best(max_length, d=None, counter=None):
    """The previous route: the mean over every position, inside a bounded search over n_ref."""
    positions = np.arange(2, max_length + 1, dtype=float)

    def star(m):
        return at.gaussian_alpha_star(m) if d is None else at.cosine_alpha_star(m, d)

    def objective(a, n):
        return at.gaussian_objective(a, n) if d is None else at.cosine_objective(a, n, d)

    top = objective(star(positions), positions)

    def loss(log_n_ref):
        if counter is not None:
            counter.append(1)
        values = objective(float(star(np.exp(log_n_ref))), positions)
        return -float(np.mean(np.maximum(values / top, 0.0)))

    result = minimize_scalar(
        loss, bounds=(np.log(2.0), np.log(float(max_length))), method="bounded", options={"xatol": 1e-10}
    )
    return float(star(np.exp(result.x))), float(np.exp(result.x)), -float(result.fun)


def causal_row():
    cases = [
        (None, "Gaussian scores", (10**4, 10**5, 10**6)),
        (128.0, "cosine scores, d = 128", (10**4, 10**5)),
    ]
    for d, label, measured in cases:
        for length in measured:
            calls = []
            old = enumerated_best(length, d, calls)
            new = at.best_causal_scale(length, d)
            assert abs(new[2] - old[2]) <= 1e-9 * old[2], (length, d, new, old)
            t_old = best_time(lambda m=length, d=d: enumerated_best(m, d), repeat=1, min_seconds=0.0)
            t_new = best_time(lambda m=length, d=d: at.best_causal_scale(m, d), repeat=3, min_seconds=0.1)
            report(
                f"best_causal_scale, {label}, L = {length:.0e}",
                [
                    ("enumeration (previous route)", t_old, f"{len(calls)} evaluations; share {old[2]:.12f}"),
                    (
                        "integral over log n",
                        t_new,
                        f"share {new[2]:.12f}, alpha rel. diff {abs(new[0] - old[0]) / old[0]:.1e}",
                    ),
                ],
            )
        # the enumeration's cost per position and evaluation, at the largest L measured
        per_position = t_old / (length * (len(calls) + 1))
        for big in (10**8, 10**9):
            estimate = per_position * big * (len(calls) + 1)
            t_new = best_time(lambda m=big, d=d: at.best_causal_scale(m, d), repeat=3, min_seconds=0.1)
            report(
                f"best_causal_scale, {label}, L = {big:.0e}",
                [
                    ("enumeration (est)", estimate, f"about {10 * 8 * big / 1e9:.0f} GB of arrays"),
                    ("integral over log n", t_new, "measured"),
                ],
            )


CONTRIBUTING_SETTINGS = [
    dict(d=128, n=4096, train_length=512),
    dict(d=128, n=32768, train_length=4096, head_entropy=5.5),
    dict(d=64, n=8192, scores="cosine", causal=True),
    dict(d=128, n=1e9, causal=True),
    dict(d=128, n=1e8, causal=True),
    dict(d=128, n=1e6, scores="cosine", causal=True),
    dict(d=2, n=100000, scores="cosine", train_length=512),
    dict(d=128, n=4096, train_length=512, head_scale=999),
    dict(d=2, n=1e15, scores="cosine", causal=True, train_length=1e9, head_scale=3.0),
]


def random_settings(rng, count):
    for _ in range(count):
        kwargs = dict(
            d=float(
                rng.choice([2.0, 3.0, 4.0, 64.0, 128.0, math.exp(rng.uniform(math.log(2), math.log(1e5)))])
            ),
            n=math.exp(rng.uniform(math.log(2), math.log(1e15))),
            scores=str(rng.choice(["dot", "cosine"])),
            causal=bool(rng.integers(2)),
        )
        if rng.integers(3):
            kwargs["train_length"] = length = math.exp(rng.uniform(math.log(2), math.log(1e9)))
            kind = rng.integers(3)
            if kind == 1:
                kwargs["head_scale"] = math.exp(rng.uniform(math.log(1e-3), math.log(1e4)))
            elif kind == 2:
                kwargs["head_entropy"] = rng.uniform(0.05, 0.95) * math.log(length)
        yield kwargs


def peak_memory(kwargs):
    tracemalloc.start()
    try:
        at.recommend_scale(**kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def calculator():
    print("recommend_scale, in-process (target: under 1 s each)")
    for kwargs in CONTRIBUTING_SETTINGS:
        seconds = best_time(lambda k=kwargs: at.recommend_scale(**k), repeat=3, min_seconds=0.0)
        text = ", ".join(
            f"{k}={v:g}" if isinstance(v, float | int) else f"{k}={v}" for k, v in kwargs.items()
        )
        print(f"  {seconds * 1e3:8.1f} ms  peak {peak_memory(kwargs) / 1e6:5.1f} MB  {text}")
    times, errors = [], 0
    for kwargs in random_settings(np.random.default_rng(21), 300):
        start = time.perf_counter()
        try:
            at.recommend_scale(**kwargs)
        except ValueError:
            errors += 1  # a measured entropy out of reach: one line naming head_entropy
        times.append((time.perf_counter() - start, kwargs))
    times.sort(key=lambda item: item[0])
    values = np.array([t for t, _ in times])
    print(
        f"  {len(values)} seeded settings over the domain: median {np.median(values) * 1e3:.1f} ms, "
        f"99th percentile {np.quantile(values, 0.99) * 1e3:.0f} ms, slowest {values[-1] * 1e3:.0f} ms "
        f"({errors} refused head_entropy)"
    )
    print(f"  slowest: {times[-1][1]}\n")

    def wall(args):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, capture_output=True)
        return time.perf_counter() - start

    runs = [
        ("python -c 'import attnscale'", ["-c", "import attnscale"]),
        (
            "scale --d 128 --n 4096 --train-length 512",
            ["-m", "attnscale", "scale", "--d", "128", "--n", "4096", "--train-length", "512"],
        ),
        (
            "scale --d 128 --n 1e9 --causal",
            ["-m", "attnscale", "scale", "--d", "128", "--n", "1e9", "--causal"],
        ),
        (
            "scale --d 128 --n 1e6 --cosine --causal",
            ["-m", "attnscale", "scale", "--d", "128", "--n", "1e6", "--cosine", "--causal"],
        ),
    ]
    report(
        "command line, wall time of a fresh process (best of 3; ratios: the import over each)",
        [(label, min(wall(args) for _ in range(3)), "") for label, args in runs],
    )


def main():
    causal_row()
    calculator()


if __name__ == "__main__":
    main()
