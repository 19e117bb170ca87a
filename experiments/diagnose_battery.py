"""The diagnostic's battery: coverage on every law the chapter names, cosine rows over d, planted keys.

Run from the repository root (about ten minutes on two cores)::

    PYTHONPATH=src python experiments/diagnose_battery.py

It writes ``book/data/which-law-battery.json`` with its provenance (command,
git commit, clean tree, package versions, date), read by the chapter *Which
law* and its evidence page, which stay within their time budget by not
re-running it.  Three parts:

- ``coverage``: :func:`attnscale.theory.diagnose.coverage_battery` (30 draws
  of each law at 16 x 64, 64 x 1024 and 64 x 16384), one record per draw,
  and the coverage by the domain read and size that ``BATTERY_COVERAGE``
  in the package must equal (``tests/test_diagnose.py`` holds it), with
  each draw's flag as the shipped diagnostic gives it once the package
  holds that table (``flagged``: the lookup or the data's checks;
  ``lookup_flagged``: the lookup alone);
- ``cosine``: cosine rows at d = 4 ... 256, the domain and kappa read,
  the factor against the cosine law's own two-end ratio, and the data's
  checks (the flag is the lookup in the package's table or those checks);
- ``planted_key``: Gaussian rows with one fixed key at 2 ... 7 standard
  deviations, the domain read, the background's domain and the key found.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "experiments"))

from _sweep import git_record, write_results  # noqa: E402

import attnscale as at  # noqa: E402
from attnscale.theory import diagnose  # noqa: E402

OUT = ROOT / "book" / "data" / "which-law-battery.json"
COSINE_DIMS = (4, 8, 16, 32, 64, 128, 256)
KEY_VALUES = (None, 2.0, 2.5, 3.0, 3.5, 4.0, 7.0)
KEY_SIZES = ((16, 256), (64, 1024))


def provenance(argv):
    """The command, git commit, clean tree, Python, numpy and scipy versions, start time."""
    return git_record(argv)


def coverage_part(draws, seed):
    records = diagnose.coverage_battery(draws=draws, seed=seed)
    table = diagnose.reliability_table(records)
    for r in records:  # the flag the diagnostic gives once BATTERY_COVERAGE holds this table
        r["lookup_flagged"] = bool(table[(r["read"], r["keys"])] < diagnose.RELIABLE_COVERAGE)
        r["flagged"] = bool(r["lookup_flagged"] or not r["checks"])
    return records, [[dom, keys, round(v, 2)] for (dom, keys), v in table.items()]


def cosine_part(draws, seed):
    rng = np.random.default_rng(seed)
    out = []
    for d in COSINE_DIMS:
        half = (d - 1) / 2
        law = stats.beta(half, half, loc=-1.0, scale=2.0)
        for rows, keys in diagnose.BATTERY_SIZES:
            n = 16.0 * keys
            truth = float(
                at.iid_critical_scale(n, "cosine", d) / at.iid_critical_scale(float(keys), "cosine", d)
            )
            gauss = float(at.iid_critical_scale(n) / at.iid_critical_scale(float(keys)))
            for j in range(draws):
                o = at.diagnose_law(law.rvs(size=(rows, keys), random_state=rng), [n], resamples=100, seed=j)
                lo, hi = o.factor_interval[:, 0]
                kappa = -1.0 / o.shape - 1.0 if o.domain == "reverse-weibull" else None
                out.append(
                    dict(
                        d=d,
                        rows=rows,
                        keys=keys,
                        read=o.domain,
                        shape=float(o.shape),
                        kappa=kappa,
                        factor=float(o.factor[0]),
                        low=float(lo),
                        high=float(hi),
                        truth=truth,
                        gaussian=gauss,
                        covered=bool(lo <= truth <= hi),
                        covered_sampling=bool(
                            o.sampling_interval[0, 0] <= truth <= o.sampling_interval[1, 0]
                        ),
                        model_bias=float(o.model_bias[0]),
                        reliable=o.reliable,
                        checks=o.checks,
                    )
                )
    return out


def key_part(draws, seed):
    rng = np.random.default_rng(seed)
    out = []
    for rows, keys in KEY_SIZES:
        n = 16.0 * keys
        for value in KEY_VALUES:
            for j in range(draws):
                x = rng.normal(size=(rows, keys))
                if value is not None:
                    x[:, 0] = value
                o = at.diagnose_law(x, [n], resamples=100, seed=j)
                out.append(
                    dict(
                        rows=rows,
                        keys=keys,
                        value=value,
                        read=o.domain,
                        background=o.background,
                        planted_key=o.planted_key,
                        margin=o.margin,
                        factor=float(o.factor[0]),
                    )
                )
    return out


def main(argv):
    begin = time.monotonic()
    prov = provenance(argv)
    records, table = coverage_part(30, 0)
    print(f"coverage: {len(records)} draws, {time.monotonic() - begin:.0f} s", flush=True)
    cosine = cosine_part(10, 1)
    print(f"cosine: {len(cosine)} draws, {time.monotonic() - begin:.0f} s", flush=True)
    keys = key_part(40, 2)
    print(f"planted keys: {len(keys)} draws, {time.monotonic() - begin:.0f} s", flush=True)
    prov["wall_seconds"] = round(time.monotonic() - begin, 1)
    out = dict(
        provenance=prov,
        settings=dict(
            sizes=[list(s) for s in diagnose.BATTERY_SIZES],
            ratio=16.0,
            level=0.9,
            resamples=100,
            coverage_draws=30,
            cosine_dims=list(COSINE_DIMS),
            cosine_draws=10,
            key_values=list(KEY_VALUES),
            key_sizes=[list(s) for s in KEY_SIZES],
            key_draws=40,
            reliable_coverage=diagnose.RELIABLE_COVERAGE,
        ),
        coverage=records,
        reliability=table,
        cosine=cosine,
        planted_key=keys,
    )
    write_results(OUT, out)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv)
