"""The diagnostic's data checks out of sample: laws outside the battery, in the referee's style.

Run from the repository root (a few minutes on two cores)::

    PYTHONPATH=src python experiments/diagnose_flag_check.py

Draws heads from laws the flag's thresholds were not set on (Student-t,
logistic, Beta(2, 5)) and from laws in the models (Pareto, uniform,
Gaussian), at 16 x 64, 64 x 64, 64 x 1024 and (a few laws) 64 x 8192 and
20000 x 16, and records for each draw whether the 90% interval holds the
law's own two-end ratio alpha_c(16L)/alpha_c(L) (SciPy's quantile and
density, root-free), the domain read, and both flags: the battery lookup
alone and the full flag with the data checks.  It writes
``book/data/which-law-flag-check.json`` with its provenance; the evidence
page of *Which law* reads it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import attnscale as at  # noqa: E402
from attnscale.theory import diagnose  # noqa: E402

sys.path.insert(0, str(ROOT / "experiments"))
from _sweep import write_results  # noqa: E402
from diagnose_battery import provenance  # noqa: E402  (one record for both scripts)

OUT = ROOT / "book" / "data" / "which-law-flag-check.json"
LAWS = {
    "Student-t3": (stats.t(3), False),
    "Student-t5": (stats.t(5), False),
    "Student-t8": (stats.t(8), False),
    "logistic": (stats.logistic(), False),
    "Beta(2, 5)": (stats.beta(2, 5), False),
    "Gaussian": (stats.norm(), True),
    "uniform": (stats.uniform(), True),
    "Pareto, gamma = 1": (stats.pareto(1.0), True),
    "Pareto, gamma = 2": (stats.pareto(2.0), True),
    "Pareto, gamma = 4": (stats.pareto(4.0), True),
}
SIZES = ((16, 64), (64, 64), (64, 1024))
EXTRA = {
    (64, 8192): ("Student-t3", "Student-t5", "Gaussian", "Pareto, gamma = 2"),
    (20000, 16): ("Gaussian", "uniform"),
}
DRAWS = 20


def two_end_ratio(dist, keys, ratio=16.0):
    def alpha_c(n):
        top = dist.isf(1.0 / n)
        return max(n * dist.pdf(top), np.log(n / 2.0) / (top - dist.median()))

    return float(alpha_c(ratio * keys) / alpha_c(float(keys)))


def main(argv):
    begin = time.monotonic()
    prov = provenance(argv)
    cells = [(name, size) for name in LAWS for size in SIZES]
    cells += [(name, size) for size, names in EXTRA.items() for name in names]
    records = []
    for c, (name, (rows, keys)) in enumerate(cells):
        dist, in_model = LAWS[name]
        truth = two_end_ratio(dist, keys)
        rng = np.random.default_rng(9000 + c)
        for j in range(DRAWS):
            out = at.diagnose_law(dist.rvs(size=(rows, keys), random_state=rng), [16.0 * keys], seed=j)
            lo, hi = out.factor_interval[:, 0]
            lo_s, hi_s = out.sampling_interval[:, 0]
            records.append(
                dict(
                    law=name,
                    in_model=in_model,
                    rows=rows,
                    keys=keys,
                    read=out.domain,
                    covered=bool(lo <= truth <= hi),
                    factor=float(out.factor[0]),
                    low=float(lo),
                    high=float(hi),
                    truth=truth,
                    lookup_flagged=bool(not out.coverage >= diagnose.RELIABLE_COVERAGE),
                    flagged=bool(not out.reliable),
                    depth_ratio=out.depth_ratio,
                    domain_agreement=out.domain_agreement,
                    model_bias=float(out.model_bias[0]),
                    low_sampling=float(lo_s),
                    high_sampling=float(hi_s),
                    covered_sampling=bool(lo_s <= truth <= hi_s),
                )
            )
        print(name, rows, keys, f"{time.monotonic() - begin:.0f} s", flush=True)
    prov["wall_seconds"] = round(time.monotonic() - begin, 1)
    out = dict(
        provenance=prov, settings=dict(draws=DRAWS, ratio=16.0, level=0.9, resamples=200), records=records
    )
    write_results(OUT, out)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv)
