"""Timing and reporting shared by the benchmarks.

A benchmark times a fast route and a baseline *in the same run* and prints
their ratio, so the result does not depend on how fast this machine is
today.  Run a benchmark as a script: ``python benchmarks/bench_softmax.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(fn: Callable[[], object], *, repeat: int = 5, min_seconds: float = 0.2) -> float:
    """The best wall time of ``fn()`` over ``repeat`` rounds, in seconds.

    Each round calls ``fn`` as many times as fit in ``min_seconds`` (at
    least once) and reports the mean, which irons out timer resolution.
    """
    best = float("inf")
    for _ in range(repeat):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = min(best, elapsed / calls)
    return best


def report(title: str, rows: list[tuple[str, float, str]]) -> None:
    """Print ``(label, seconds, note)`` rows with each row's speed-up over the first."""
    print(title)
    baseline = rows[0][1]
    width = max(len(label) for label, _, _ in rows)
    for label, seconds, note in rows:
        print(f"  {label:<{width}}  {seconds * 1e3:10.3f} ms   {baseline / seconds:8.1f}x  {note}")
    print()
