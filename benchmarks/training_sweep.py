"""The training chapter's scale sweep at larger sizes (not run by the book build).

The chapter *Does the largest gradient train fastest?* trains at
n = 64, 256, 1024 with five seeds.  This script runs the same experiment at
n = 64, 512, 4096, with both losses (read-out and cross-entropy), both
optimizers, d = 16 and 64, more seeds and a longer budget, and prints one
table: the loss on fresh queries after the budget, mean and 95% t-interval
over seeds, at c = 1, alpha*(n), sqrt(2 log n) and the best grid multiplier.

    python benchmarks/training_sweep.py                  # about 10-30 minutes on 2 cores
    python benchmarks/training_sweep.py --quick          # n = 64, 512 only, 3 seeds
    python benchmarks/training_sweep.py --tune           # the learning rate tuned per scale

With ``--tune`` it repeats the chapter's "Is it the learning rate?" protocol
(``attnscale.train_at_best_rate``: every scale at a grid of rates, the best
rate per scale chosen on one seed set, the reported runs on fresh seeds) at
the larger sizes, read-out loss, and prints the loss at c = 1 over that at
alpha*(n), and at c = 8 over c = 1, with 95% intervals of the paired
per-seed log ratios.

The chapter quotes none of these numbers as computed in the build.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: threads only cost

import argparse
import time

import numpy as np

import attnscale as at

GRID = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0])
LEARNING_RATES = {
    ("sgd", "readout"): 0.5,
    ("adam", "readout"): 0.01,
    ("sgd", "ce"): 0.05,
    ("adam", "ce"): 0.01,
}


TUNE_RATES = {"sgd": 2.0 ** np.arange(-4, 4), "adam": 2.0 ** np.arange(-8, -2)}


def tuned_sweep(lengths, seeds, steps):
    """The learning rate tuned per scale; ratios as exp(mean log ratio) with 95% intervals."""
    print(f"tuned rates: {seeds} seeds (search) + {seeds} fresh seeds (reported), {steps} steps, batch 8")
    print(f"{'optimizer':>9} {'d':>3} {'n':>5} {'loss(1)/loss(alpha*)':>24} {'loss(8)/loss(1)':>20}  rates")

    def ratio(a, b):
        mean, half = at.seed_interval(np.log(a / b))  # paired by seed
        return f"{np.exp(mean):6.3f} [{np.exp(mean - half):.3f}, {np.exp(mean + half):.3f}]"

    for optimizer, rates in TUNE_RATES.items():
        for d in (16, 64):
            for k, n in enumerate(lengths):
                star = float(at.gaussian_alpha_star(n))
                mult = np.sort([0.5, 1.0, star, 4.0, 8.0])
                best = at.train_at_best_rate(
                    n,
                    d,
                    mult,
                    rates,
                    replicas=seeds,
                    steps=steps,
                    batch=8,
                    optimizer=optimizer,
                    loss="readout",
                    search_seed=2000 + k,
                    seed=3000 + k,
                )
                final = at.evaluate_attention(best.result, n, queries=256, seed=1)["loss"]
                col = {c: int(np.argmin(np.abs(mult - c))) for c in (1.0, star, 8.0)}
                marks = ["*" if edge else "" for edge in best.at_edge]
                chosen = " ".join(f"{r:g}{m}" for r, m in zip(best.rates, marks, strict=True))
                print(
                    f"{optimizer:>9} {d:>3} {n:>5} {ratio(final[:, col[1.0]], final[:, col[star]]):>24} "
                    f"{ratio(final[:, col[8.0]], final[:, col[1.0]]):>20}  {chosen}",
                    flush=True,
                )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 64, 512 only, 3 seeds, 100 steps")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--tune", action="store_true", help="learning rate tuned per scale (read-out loss)")
    args = parser.parse_args(argv)
    lengths = (64, 512) if args.quick else (64, 512, 4096)
    seeds = 3 if args.quick else args.seeds
    steps = 100 if args.quick else args.steps
    if args.tune:
        started = time.perf_counter()
        tuned_sweep(lengths, seeds, steps)
        print(f"total {time.perf_counter() - started:.0f} s")
        return
    print(f"{seeds} seeds, {steps} steps, batch 8, m = 16; loss after the budget, mean ± 95% interval")
    head = f"{'optimizer':>9} {'loss':>7} {'d':>3} {'n':>5} {'best c':>7} "
    head += " ".join(f"{name:>17}" for name in ("c = 1", "alpha*", "sqrt(2 log n)", "best"))
    print(head)
    started = time.perf_counter()
    for (optimizer, loss), lr in LEARNING_RATES.items():
        for d in (16, 64):
            for k, n in enumerate(lengths):
                star, freeze = float(at.gaussian_alpha_star(n)), float(np.sqrt(2 * np.log(n)))
                mult = np.sort(np.concatenate([GRID, [star, freeze]]))
                result = at.train_attention(
                    n,
                    d,
                    mult,
                    replicas=seeds,
                    steps=steps,
                    batch=8,
                    optimizer=optimizer,
                    learning_rate=lr,
                    loss=loss,
                    seed=1000 + k,
                )
                final = at.evaluate_attention(result, n, queries=256, seed=7)["loss"]
                mean, half = at.seed_interval(final)
                best = int(np.argmin(mean))
                cells = []
                for value in (1.0, star, freeze, mult[best]):
                    i = int(np.argmin(np.abs(mult - value)))
                    cells.append(f"{mean[i]:8.4f} ± {half[i]:6.4f}")
                row = f"{optimizer:>9} {loss:>7} {d:>3} {n:>5} {mult[best]:7.2f} "
                print(row + " ".join(cells), flush=True)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
