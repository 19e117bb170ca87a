"""Scale recipes, the calculator and its command line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import attnscale as at


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "attnscale", *args], capture_output=True, text=True, check=False
    )


def test_recipe_relations():
    n = np.geomspace(2, 1e6, 50)
    np.testing.assert_allclose(
        at.scalable_softmax_scale(n, 64, 1 / np.log(512)), at.entropy_invariant_scale(n, 64), rtol=1e-14
    )
    assert float(at.yarn_scale(512, 64, 512)) == pytest.approx(1 / 8)
    assert float(at.yarn_scale(512 * np.e, 64, 512)) == pytest.approx(1.1**2 / 8)
    assert float(at.logn_beyond_training_scale(100, 64, 512)) == pytest.approx(1 / 8)
    assert float(at.qknorm_initial_scale(512)) == pytest.approx(np.log2(512 * 511))


def test_recommendation_record():
    rec = at.recommend_scale(128, 4096, train_length=512)
    names = [e.criterion for e in rec.entries]
    assert names[0] == "standard 1/sqrt(d)"
    assert any(name.startswith("gradient") for name in names)
    assert any(name.startswith("YaRN") for name in names)
    for entry in rec.entries:
        assert entry.scale == pytest.approx(entry.unit_scale / np.sqrt(128))
    cosine = at.recommend_scale(128, 4096, scores="cosine", train_length=512)
    for entry in cosine.entries:
        assert entry.scale == pytest.approx(entry.unit_scale * np.sqrt(128))
    assert "QK-norm" in str(cosine)


def test_recommendation_causal_uses_the_decoder_optimum():
    rec = at.recommend_scale(64, 1024, causal=True)
    alpha, _, _ = at.best_causal_scale(1024)
    causal = next(e for e in rec.entries if "causal" in e.criterion)
    assert causal.unit_scale == pytest.approx(alpha)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(d=1, n=100), ValueError, "d must be >= 2"),
        (dict(d=64, n=1), ValueError, "n must be >= 2"),
        (dict(d=64, n=100, scores="sine"), ValueError, "scores must be"),
        (dict(d=64, n=100, causal="yes"), TypeError, "causal"),
        (dict(d=64, n=100, train_length=1), ValueError, "train_length must be >= 2"),
        (dict(d=np.nan, n=100), ValueError, "d must be finite"),
    ],
)
def test_recommend_scale_refuses_bad_input(kwargs, error, message):
    with pytest.raises(error, match=message):
        at.recommend_scale(**kwargs)


def test_cli_prints_a_table():
    done = run("scale", "--d", "128", "--n", "4096", "--cosine", "--causal", "--train-length", "512")
    assert done.returncode == 0, done.stderr
    assert "criterion" in done.stdout and "gradient (cosine mean field), causal" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["scale", "--d", "64"],
        ["scale", "--d", "abc", "--n", "10"],
        ["scale", "--d", "64", "--n", "1"],
        ["scale", "--d", "64", "--n", "nan"],
        ["scale", "--d", "64", "--n", "10", "--train-length", "0"],
        ["frobnicate"],
        [],
    ],
)
def test_cli_errors_are_one_line(args):
    done = run(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in done.stderr
