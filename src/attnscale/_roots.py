"""A vectorized bracketing root finder (Illinois variant of regula falsi).

SciPy's scalar solvers take one bracket at a time; the package needs the
roots of thousands of increasing functions at once (one per (n, d) pair),
so this solves them together, each with its own bracket, in NumPy.
"""

from __future__ import annotations

import numpy as np


def increasing_root(func, lo, hi, *, rtol=1e-15, max_iter=200):
    """Solve ``func(x) = 0`` elementwise for ``x`` in ``[lo, hi]``.

    ``func`` maps an array of ``x`` (same shape as ``lo``) to values; it must
    satisfy ``func(lo) < 0 <= func(hi)`` elementwise (checked).  The Illinois
    modification keeps the superlinear convergence of the secant method
    while never leaving the bracket.

    Returns the roots, accurate to ``rtol`` relative to ``x`` (the bracket
    width) or to the exact zero of ``func``.
    """
    lo = np.array(lo, dtype=float)
    hi = np.array(hi, dtype=float)
    f_lo, f_hi = func(lo), func(hi)
    if not (np.all(f_lo < 0) and np.all(f_hi >= 0)):
        raise ArithmeticError("increasing_root: the brackets do not straddle a root")
    x = hi.copy()
    side = np.zeros(lo.shape, dtype=int)  # last step moved: -1 the upper end, +1 the lower
    for _ in range(max_iter):
        active = (hi - lo) > rtol * np.maximum(np.abs(hi), np.abs(lo))
        if not np.any(active):
            break
        x = np.where(active, (lo * f_hi - hi * f_lo) / (f_hi - f_lo), x)
        x = np.clip(x, lo, hi)
        f_x = func(x)
        up = active & (f_x >= 0)  # root is in [lo, x]
        down = active & (f_x < 0)  # root is in [x, hi]
        # Illinois: halve the value kept at the end that stays twice in a row.
        f_lo = np.where(up & (side == -1), f_lo / 2, f_lo)
        f_hi = np.where(down & (side == 1), f_hi / 2, f_hi)
        hi, f_hi = np.where(up, x, hi), np.where(up, f_x, f_hi)
        lo, f_lo = np.where(down, x, lo), np.where(down, f_x, f_lo)
        side = np.where(up, -1, np.where(down, 1, side))
        done = active & (f_x == 0)
        lo, hi = np.where(done, x, lo), np.where(done, x, hi)
    return 0.5 * (lo + hi)
