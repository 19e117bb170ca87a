"""alpha*(n, d) and alpha*(n): the package against the route a reader writes first.

Straightforward route (baseline), per point: the cosine MGF by
``scipy.integrate.quad`` of e^(a s) (1 - s^2)^((d-3)/2), normalized by its
value at a = 0 (as in the source's Mathematica code), and the objective
maximized by ``scipy.optimize.minimize_scalar``.  Package route:
``attnscale.cosine_alpha_star`` (safeguarded Newton steps on the analytic
derivative of the stationarity condition) on the whole grid at once.  Both
are timed in this run; the baseline on a random subset of the grid (it takes
several ms a point), reported per point.  Two grids: the whole one (d from 2
to 65536) and small d alone (16 to 128, where quadrature is cheapest).
Accuracy: both routes against an mpmath reference (40 digits, from tests/references.py) on a sample of points.

The same for Gaussian scores: ``gaussian_alpha_star`` (Lambert W) against
per-point ``minimize_scalar``.

    python benchmarks/bench_alpha_star.py            # baseline on 200 points
    python benchmarks/bench_alpha_star.py --full     # baseline on all 4000
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _harness import best_time
from scipy.integrate import quad
from scipy.optimize import minimize_scalar

import attnscale as at

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import references

N_GRID = 40.0 * np.arange(1, 501)  # the source's grid
D_GRID = np.array([2, 8, 32, 128, 512, 2048, 8192, 65536], dtype=float)
D_SMALL = np.array([16, 32, 64, 128], dtype=float)


def naive_cosine_alpha_star(n, d):
    """A reader's first version: quadrature for the MGF, a scalar optimizer on top."""
    exponent = (d - 3) / 2

    def h(a):
        return quad(lambda s: np.exp(a * s) * (1 - s * s) ** exponent, -1, 1, limit=200)[0]

    h0 = h(0.0)

    def negative_objective(a):
        g1, g2 = h(a) / h0, h(2 * a) / h0
        return -a * (1 - g2 / (n * g1 * g1))

    return minimize_scalar(
        negative_objective, bounds=(0.0, 10 * np.sqrt(d) + 50), method="bounded", options={"xatol": 1e-10}
    ).x


def naive_gaussian_alpha_star(n):
    return minimize_scalar(
        lambda a: -a * (1 - np.exp(a * a) / n), bounds=(0.0, 10.0), method="bounded", options={"xatol": 1e-12}
    ).x


def relative_error(values, exact):
    values, exact = np.asarray(values, float), np.asarray(exact, float)
    with np.errstate(invalid="ignore"):
        err = np.abs(values - exact) / np.abs(exact)
    return np.where(np.isfinite(err), err, np.inf)


def cosine_speed_and_accuracy(title, d_grid, subset, full, rng):
    """Time both routes on N_GRID x d_grid and compare both with mpmath on a sample."""
    nn, dd = np.meshgrid(N_GRID, d_grid, indexing="ij")
    points = np.column_stack([nn.ravel(), dd.ravel()])
    chosen = points if full else points[rng.choice(len(points), subset, replace=False)]
    fast = best_time(lambda: at.cosine_alpha_star(N_GRID[:, None], d_grid[None, :]), repeat=3)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the baseline overflows and warns for large d
        baseline = np.array([naive_cosine_alpha_star(n, d) for n, d in chosen])
    slow_per_point = (time.perf_counter() - start) / len(chosen)
    fast_per_point = fast / points.shape[0]
    print(f"cosine_alpha_star, {title}: {len(N_GRID)} n x {len(d_grid)} d = {points.shape[0]} points")
    print(f"  baseline (quad + minimize_scalar), {len(chosen)} points: {slow_per_point * 1e3:9.3f} ms/point")
    print(
        f"  attnscale.cosine_alpha_star, whole grid:      {fast_per_point * 1e3:9.4f} ms/point"
        f"   ({fast:.3f} s in all)"
    )
    print(f"  speed-up ({title}): {slow_per_point / fast_per_point:,.0f}x")

    sample = chosen[rng.choice(len(chosen), 16, replace=False)]
    package = at.cosine_alpha_star(sample[:, 0], sample[:, 1])
    exact = np.array(
        [
            float(references.cosine_alpha_star(n, d, start=p))
            for (n, d), p in zip(sample, package, strict=True)
        ]
    )
    index = {tuple(p): i for i, p in enumerate(chosen)}
    naive = np.array([baseline[index[tuple(p)]] for p in sample])
    err_fast, err_naive = relative_error(package, exact), relative_error(naive, exact)
    print(
        f"  max relative error vs mpmath on {len(sample)} points: package {err_fast.max():.1e}, "
        f"baseline {err_naive.max():.1e}"
    )
    bad = sample[err_naive > 1e-6]
    if len(bad):
        print(
            f"  baseline off by more than 1e-6 at d = {sorted({int(d) for d in bad[:, 1]})} "
            "(overflow or underflow in the integrand)"
        )
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="run the baseline on all 4000 points")
    parser.add_argument("--subset", type=int, default=200, help="baseline points when not --full")
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    for title, d_grid, subset in (
        ("whole grid", D_GRID, args.subset),
        ("small d (16-128)", D_SMALL, args.subset // 2),
    ):
        cosine_speed_and_accuracy(title, d_grid, subset, args.full, rng)

    # --- Gaussian ---------------------------------------------------------------
    fast_g = best_time(lambda: at.gaussian_alpha_star(N_GRID))
    start = time.perf_counter()
    naive_g = np.array([naive_gaussian_alpha_star(n) for n in N_GRID])
    slow_g = time.perf_counter() - start
    exact_g = np.array([float(references.gaussian_alpha_star(n)) for n in N_GRID[::25]])
    print(f"gaussian_alpha_star over {len(N_GRID)} values of n")
    print(f"  baseline (minimize_scalar per n): {slow_g * 1e3:9.3f} ms")
    print(f"  attnscale.gaussian_alpha_star:    {fast_g * 1e3:9.3f} ms")
    print(f"  speed-up: {slow_g / fast_g:,.0f}x")
    print(
        f"  max relative error vs mpmath on {len(exact_g)} points: package "
        f"{relative_error(at.gaussian_alpha_star(N_GRID[::25]), exact_g).max():.1e}, "
        f"baseline {relative_error(naive_g[::25], exact_g).max():.1e}"
    )


if __name__ == "__main__":
    main()
