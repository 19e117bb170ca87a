"""Reading the carry sweep (retrieval.carry_runs, carry_oracle_fit) on a synthetic results file."""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.models.retrieval import arm_table, carry_oracle_fit, carry_runs

GRID = [0.5, 0.7071, 1.0, 1.4142, 2.0, 2.8284]


def _record(seed, best):
    rng = np.random.default_rng(seed)

    def evaluation(level):
        return {"acc_by_window": list(level + rng.normal(0, 0.01, 8))}

    def curve():
        # per-window losses with their minimum at `best` (in log factor), windows tilted a little
        tilt = rng.normal(0, 0.05, 8)
        return {
            "loss_by_window": [list((np.log(f / best)) ** 2 + tilt * np.log(f)) for f in GRID],
            "acc_by_window": [list(1 - (np.log(f / best)) ** 2 + 0 * tilt) for f in GRID],
        }

    return {
        "part": "baselines-plain",
        "regime": "plain",
        "positions": "rope",
        "rule": "standard",
        "train_length": 64,
        "seed": seed,
        "test": {"yarn": {"1": evaluation(0.9), "4": evaluation(0.7)}},
        "finetuned": {"yarn": {"eval": {"1": evaluation(0.9), "4": evaluation(0.8)}}},
        "oracle_ntk": {"factors": GRID, "curves": {"all": {"4": curve()}}},
    }


RESULT = {"provenance": {}, "settings": {}, "runs": [_record(s, 1.4142 * (1 + 0.02 * s)) for s in range(3)]}


def test_carry_runs_put_each_evaluation_at_its_length():
    runs = carry_runs(RESULT)
    assert [r["seed"] for r in runs] == [0, 1, 2]
    assert set(runs[0]["eval"]) == {"yarn", "ft_yarn"}
    assert set(runs[0]["eval"]["yarn"]) == {"64", "256"}
    mean, half = arm_table(runs, "ft_yarn", [64, 256])
    assert mean == pytest.approx([0.9, 0.8], abs=0.02) and np.all(half > 0)


def test_carry_oracle_fit_finds_the_planted_minimum():
    runs = carry_runs(RESULT)
    fit = carry_oracle_fit(runs, "oracle_ntk", "all", 4)
    assert fit.low <= fit.factor <= fit.high
    assert fit.factor == pytest.approx(1.4142 * 1.02, rel=0.05)
    by_accuracy = carry_oracle_fit(runs, "oracle_ntk", "all", 4, criterion="acc")
    assert by_accuracy.factor == pytest.approx(1.4142 * 1.02, rel=0.05)


def test_carry_bad_input():
    with pytest.raises(ValueError, match="result"):
        carry_runs({"runs": []})
    with pytest.raises(ValueError, match="criterion"):
        carry_oracle_fit(carry_runs(RESULT), "oracle_ntk", "all", 4, criterion="median")


def test_carry_needle_runs_read_by_depth():
    """A needle part's evaluations are keyed by depth; needle_runs lays them out as recall's."""
    from attnscale.models.retrieval import needle_runs

    def by_depth(level):
        return {
            d: {f: [level, level + 0.1] for f in ("acc_by_window", "loss_by_window", "exact_by_window")}
            for d in ("0.0", "1.0")
        }

    record = {**_record(0, 1.0), "task": "needle", "test": {"yarn": {"1": by_depth(0.9), "4": by_depth(0.5)}}}
    record["finetuned"] = {"yarn": {"eval": {"4": by_depth(0.6)}}}
    runs = carry_runs({"provenance": {}, "settings": {}, "runs": [record]})
    assert runs[0]["task"] == "needle"
    flat = needle_runs(runs)
    assert flat[0]["eval"]["yarn"]["256"]["exact_by_window"] == [0.5, 0.6, 0.5, 0.6]
    assert flat[0]["eval"]["ft_yarn"]["256"]["exact_by_window"] == [0.6, 0.7, 0.6, 0.7]
    with pytest.raises(ValueError, match="not a needle run"):
        needle_runs(carry_runs(RESULT))
