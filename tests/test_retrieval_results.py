"""attnscale.models.retrieval: reading a retrieval sweep (two-way intervals, oracle factors, law fits)."""

from __future__ import annotations

import numpy as np
import pytest

import attnscale as at
from attnscale.models import retrieval as rv


def _runs(values, arm="trained:plain", lengths=(64, 128)):
    """Fake runs of one arm: values[seed][length index] is a list of per-window accuracies."""
    return [
        {
            "task": "recall",
            "positions": "rope",
            "rule": "standard",
            "seed": s,
            "eval": {arm: {str(n): {"acc_by_window": list(v[i])} for i, n in enumerate(lengths)}},
        }
        for s, v in enumerate(values)
    ]


def test_arm_table_is_the_crossed_interval_of_each_length():
    rng = np.random.default_rng(0)
    data = rng.random((4, 2, 10))
    runs = _runs(data)
    mean, half = rv.arm_table(runs, "trained:plain", [64, 128])
    for i in range(2):
        expected = at.crossed_interval(data[:, i, :])
        assert mean[i] == pytest.approx(expected[0]) and half[i] == pytest.approx(expected[1])


def test_paired_table_needs_the_same_seeds_and_is_the_difference():
    rng = np.random.default_rng(1)
    a, b = rng.random((3, 2, 8)), rng.random((3, 2, 8))
    mean, _ = rv.paired_table(_runs(a), "trained:plain", _runs(b), "trained:plain", [64, 128])
    np.testing.assert_allclose(mean, (a - b).mean(axis=(0, 2)))
    with pytest.raises(ValueError, match="paired by seed"):
        rv.paired_table(_runs(a), "trained:plain", _runs(b)[:2], "trained:plain", [64])
    with pytest.raises(ValueError, match="no runs"):
        rv.select_runs(_runs(a), "recall", "nope", "standard")


def test_oracle_factor_refines_a_parabola_and_keeps_ends():
    grid = 2.0 ** np.linspace(-1, 2.5, 11)
    for best in (0.8, 1.3, 2.2):
        losses = 3.0 * (np.log(grid) - np.log(best)) ** 2 + 0.1
        assert rv.oracle_factor(grid, losses) == pytest.approx(best, rel=1e-9)
        # the grid's own best point is off by up to half a step: the refinement is not a no-op
    assert abs(grid[np.argmin((np.log(grid) - np.log(1.3)) ** 2)] / 1.3 - 1) > 0.01
    rising = np.linspace(0, 1, 11)
    assert rv.oracle_factor(grid, rising) == grid[0]
    with pytest.raises(ValueError, match="uniformly"):
        rv.oracle_factor([1.0, 2.0, 5.0], [1.0, 0.0, 1.0])
    with pytest.raises(ValueError):
        rv.oracle_factor([1.0, 2.0], [0.0, 1.0])


def test_law_fits_recover_the_law_they_were_given():
    n = np.array([128, 256, 512, 1024])
    x = np.log(n / 64)
    truths = {
        "log n": 1 + 0.3 * x,
        "sqrt(log n)": np.sqrt(1 + 0.7 * x),
        "power of n": np.exp(0.2 * x),
        "constant": np.full(4, 1.4),
    }
    for law, y in truths.items():
        fits = {name: rv.fit_length_law(n, y, 64, name) for name in rv.LENGTH_LAWS}
        assert fits[law].rms < 1e-6
        assert min(fits.values(), key=lambda f: f.rms).law == law
    with pytest.raises(ValueError, match="law"):
        rv.fit_length_law(n, n, 64, "cubic")


def _file(seeds, rule="standard", **settings):
    runs = [dict(r, rule=rule) for r in _runs(np.zeros((max(seeds) + 1, 2, 3)))]
    return {
        "provenance": {"command": f"seeds {seeds}"},
        "settings": {"lengths": [64, 128], "seeds": list(seeds), **settings},
        "runs": [r for r in runs if r["seed"] in seeds],
    }


def test_pool_results_joins_files_that_differ_only_in_their_seeds():
    runs, provenances = rv.pool_results(_file([0, 1]), _file([2, 3]), _file([0], rule="logn512"))
    assert [(r["rule"], r["seed"]) for r in runs] == [
        ("standard", 0),
        ("standard", 1),
        ("standard", 2),
        ("standard", 3),
        ("logn512", 0),
    ]
    assert [p["command"] for p in provenances] == ["seeds [0, 1]", "seeds [2, 3]", "seeds [0]"]


def test_pool_results_refuses_other_settings_a_repeated_run_and_no_file():
    with pytest.raises(ValueError, match=r"other settings than results\[0\]: \['lengths'\]"):
        rv.pool_results(_file([0]), _file([1], lengths=[64, 256]))
    with pytest.raises(ValueError, match=r"repeats the run \('recall', 'rope', 'standard', 1\)"):
        rv.pool_results(_file([0, 1]), _file([1, 2]))
    with pytest.raises(ValueError, match="at least one"):
        rv.pool_results()
    with pytest.raises(ValueError, match=r"results\[1\] is not a results file"):
        rv.pool_results(_file([0]), {"runs": []})


def _needle_run(seed, values):
    """A fake needle run: values[depth] a list of per-window numbers at one length."""
    by_depth = {
        depth: {field: [v + k for v in values[depth]] for k, field in enumerate(rv._WINDOW_FIELDS)}
        for depth in values
    }
    for depth in by_depth:
        by_depth[depth]["entropy"] = [0.0]  # a per-head field the layout drops
    return {
        "task": "needle",
        "positions": "rope",
        "rule": "standard",
        "seed": seed,
        "eval": {"trained:plain": {"128": by_depth}},
    }


def test_needle_runs_join_depths_in_order_and_feed_the_tables():
    runs = [_needle_run(s, {"0.0": [s, 1.0], "0.5": [2.0 + s, 3.0]}) for s in range(3)]
    flat = rv.needle_runs(runs)
    assert flat[1]["eval"]["trained:plain"]["128"] == {
        "acc_by_window": [1.0, 1.0, 3.0, 3.0],
        "loss_by_window": [2.0, 2.0, 4.0, 4.0],
        "exact_by_window": [3.0, 3.0, 5.0, 5.0],
    }
    one = rv.needle_runs(runs, depths=["0.5"])
    assert one[0]["eval"]["trained:plain"]["128"]["acc_by_window"] == [2.0, 3.0]
    assert runs[0]["eval"]["trained:plain"]["128"]["0.0"]["acc_by_window"] == [0, 1.0]  # not changed
    mean, _ = rv.arm_table(flat, "trained:plain", [128])
    assert mean[0] == pytest.approx(np.mean([[s, 1, 2 + s, 3] for s in range(3)]))
    with pytest.raises(ValueError, match="no depth"):
        rv.needle_runs(runs, depths=["1.0"])
    with pytest.raises(ValueError, match="not a needle run"):
        rv.needle_runs(_runs(np.zeros((2, 2, 3))))


def test_window_difference_is_a_t_interval_over_one_seeds_windows():
    rng = np.random.default_rng(3)
    a, b = rng.random((1, 2, 12)), rng.random((1, 2, 12))
    got = rv.window_difference(_runs(a)[0], "trained:plain", _runs(b)[0], "trained:plain", 128)
    assert got == pytest.approx(at.seed_interval(a[0, 1] - b[0, 1]))
    with pytest.raises(ValueError, match="different windows"):
        rv.window_difference(_runs(a)[0], "trained:plain", _runs(b[:, :, :5])[0], "trained:plain", 128)
