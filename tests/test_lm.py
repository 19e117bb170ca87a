"""models.lm, models.lm_train and the corpus: shapes, masks, rules, gradients, a short run."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnscale as at
from attnscale.models import corpus

jax = pytest.importorskip("jax")
jnp = jax.numpy
from attnscale.models import lm, lm_train  # noqa: E402

TINY = lm.LMConfig(
    d_model=16, n_heads=2, n_layers=1, d_mlp=32, train_length=32, batch=16, steps=150, learning_rate=1e-2
)


@pytest.fixture(scope="module")
def text():
    return corpus.sympy_corpus()


def _numpy_params(config, seed=0):
    return jax.tree.map(np.asarray, lm.init_params(config, seed))


# -- corpus ---------------------------------------------------------------------------


def test_corpus_is_the_recorded_one(text):
    assert text.sha256 == corpus.SYMPY_CORPUS["sha256"]
    files = text.files
    assert sum(len(v) for v in files.values()) == corpus.SYMPY_CORPUS["files"]
    # split by file: no file in two splits, validation and test each one in SPLIT_PERIOD
    assert not set(files["train"]) & set(files["validation"])
    assert not set(files["validation"]) & set(files["test"])
    assert len(files["validation"]) == math.ceil(corpus.SYMPY_CORPUS["files"] / corpus.SPLIT_PERIOD)


def test_corpus_refuses_other_text(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(RuntimeError, match="not the recorded corpus"):
        corpus.sympy_corpus(tmp_path)
    small = corpus.sympy_corpus(tmp_path, check=False)
    assert bytes(small.validation) == b"x = 1\n"  # file 0 goes to validation


def test_windows_are_inputs_and_next_bytes():
    text = np.frombuffer(b"abcdefghij", dtype=np.uint8)
    w = corpus.batch_windows(text, np.array([0, 3]), 4)
    assert w.shape == (2, 5) and w.dtype == np.int32
    assert bytes(w[1].astype(np.uint8)) == b"defgh"
    starts = corpus.window_starts(10, 4, (3, 2), seed=1)
    assert starts.shape == (3, 2) and starts.min() >= 0 and starts.max() <= 5
    np.testing.assert_array_equal(starts, corpus.window_starts(10, 4, (3, 2), seed=1))


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: corpus.window_starts(5, 4, 3, 0), ValueError),
        (lambda: corpus.window_starts(100, 4, 3, -1), TypeError),
        (lambda: corpus.batch_windows(np.zeros(10, np.uint8), np.array([6]), 4), ValueError),
        (lambda: corpus.batch_windows(np.zeros(10, np.uint8), np.array([0.5]), 4), TypeError),
        (lambda: corpus.sympy_corpus("/no/such/folder"), ValueError),
    ],
)
def test_corpus_bad_input(call, error):
    with pytest.raises(error):
        call()


# -- the model ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, name",
    [
        ({"n_heads": 3}, "n_heads"),
        ({"positions": "alibi"}, "positions"),
        ({"scale_rule": "logn"}, "scale_rule"),
        ({"normalizer": "sigmoid"}, "normalizer"),
        ({"normalizer": "relu2", "scale_rule": "logn512"}, "relu2"),
        ({"steps": 0}, "steps"),
        ({"learning_rate": -1.0}, "learning_rate"),
    ],
)
def test_config_refuses_bad_values(changes, name):
    with pytest.raises((ValueError, TypeError), match=name):
        lm.LMConfig(**{**TINY.__dict__, **changes})


def test_shapes():
    params = lm.init_params(TINY, 0)
    logits, stats = lm.forward(TINY, params, jnp.arange(10) % 256)
    assert logits.shape == (10, 256)
    for value in stats.values():
        assert value.shape == (TINY.n_layers, TINY.n_heads, 10)


def test_causal_mask():
    """Changing a later byte leaves every earlier position's logits unchanged."""
    params = lm.init_params(TINY, 0)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 256, 12))
    changed = tokens.at[7].set((tokens[7] + 1) % 256)
    a, _ = lm.forward(TINY, params, tokens)
    b, _ = lm.forward(TINY, params, changed)
    np.testing.assert_array_equal(np.asarray(a[:7]), np.asarray(b[:7]))
    assert np.abs(np.asarray(a[7:]) - np.asarray(b[7:])).max() > 1e-4  # and it does see it later


def _rope_numpy(x, base):
    t, _, dh = x.shape
    half = dh // 2
    angle = np.arange(t)[:, None] * base ** (-np.arange(half) / half)[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    return np.concatenate(
        [x[..., :half] * cos - x[..., half:] * sin, x[..., :half] * sin + x[..., half:] * cos], -1
    )


@pytest.mark.parametrize("rule", lm.SCALE_RULES)
@pytest.mark.parametrize("positions", lm.POSITIONS)
def test_one_head_against_the_books_softmax(rule, positions):
    """Every row of every head equals attnscale.theory.softmax of its scaled q.k (NumPy, float64)."""
    config = lm.LMConfig(**{**TINY.__dict__, "scale_rule": rule, "positions": positions})
    params = _numpy_params(config, seed=3)
    layer = params["layers"][0]
    if rule == "ssmax":
        layer["ssmax_s"] = np.array([0.3, 0.7], dtype=np.float32)
    t = 9
    x = np.random.default_rng(1).standard_normal((t, config.d_model)).astype(np.float32)
    out, stats = lm._attention(config, jax.tree.map(jnp.asarray, layer), jnp.asarray(x), jnp.ones((2, t)))

    h, dh = config.n_heads, config.head_dim
    q, k, v = ((x @ layer[w]).reshape(t, h, dh).astype(np.float64) for w in ("wq", "wk", "wv"))
    if positions == "rope":
        q, k = _rope_numpy(q, config.rope_base), _rope_numpy(k, config.rope_base)
    n = np.arange(1, t + 1)
    if rule == "standard":
        factor = np.ones((h, t))
    elif rule == "logn512":  # the package's rule (it needs n >= 2; log 1 = 0 below)
        factor = np.broadcast_to(at.entropy_invariant_scale(np.maximum(n, 2), dh) * math.sqrt(dh), (h, t))
        factor = np.where(n == 1, 0.0, factor)
    else:
        factor = layer["ssmax_s"][:, None] * np.log(n)[None, :]
    expected = np.zeros((t, h, dh))
    for head in range(h):
        for i in range(t):
            row = q[i, head] @ k[: i + 1, head].T / math.sqrt(dh)
            p = at.softmax(row, alpha=factor[head, i])
            expected[i, head] = p @ v[: i + 1, head]
            np.testing.assert_allclose(
                float(stats["entropy"][head, i]), at.softmax_entropy(row, factor[head, i]), atol=2e-4
            )
    np.testing.assert_allclose(np.asarray(out), expected.reshape(t, -1) @ layer["wo"], rtol=2e-4, atol=2e-5)


def test_ssmax_rule_is_the_packages():
    config = lm.LMConfig(**{**TINY.__dict__, "scale_rule": "ssmax"})
    layer = {"ssmax_s": jnp.array([0.25, 0.5])}
    n = np.array([2, 16, 1000])
    got = np.asarray(lm.logit_scale(config, layer, n))
    np.testing.assert_allclose(
        got, at.scalable_softmax_scale(n[None, :], config.head_dim, np.array([[0.25], [0.5]])), rtol=1e-6
    )


def test_relu2_divisors():
    """relu^2/N: a fixed N equal to the sample length is the sample-length rule; another N rescales."""
    base = lm.LMConfig(**{**TINY.__dict__, "normalizer": "relu2"})
    logits = jnp.asarray(np.random.default_rng(2).standard_normal((2, 6, 6)), dtype=jnp.float32)
    sample = lm.attention_weights(base, logits, 6)
    fixed = lm.attention_weights(lm.LMConfig(**{**base.__dict__, "relu2_length": 6}), logits, 6)
    np.testing.assert_array_equal(np.asarray(sample), np.asarray(fixed))
    longer = lm.attention_weights(lm.LMConfig(**{**base.__dict__, "relu2_length": 24}), logits, 6)
    np.testing.assert_allclose(np.asarray(longer) * 4, np.asarray(sample), rtol=1e-6)
    assert np.all(np.triu(np.asarray(sample)[0], 1) == 0)


def test_ssmax_gradient_against_finite_differences(text):
    """d loss / d s_h by autodiff equals a central difference (float64)."""
    with jax.enable_x64(True):
        config = lm.LMConfig(**{**TINY.__dict__, "scale_rule": "ssmax"})
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), lm.init_params(config, 0))
        windows = jnp.asarray(corpus.batch_windows(text.train, np.array([100, 5000]), config.train_length))
        loss = jax.jit(lambda p: lm.loss_fn(config, p, windows))  # compiled once, evaluated 2 x heads times
        grad = jax.grad(loss)(params)["layers"][0]["ssmax_s"]
        step = 1e-5
        for head in range(config.n_heads):

            def at_s(delta, head=head):
                moved = jax.tree.map(lambda a: a, params)
                moved["layers"][0]["ssmax_s"] = params["layers"][0]["ssmax_s"].at[head].add(delta)
                return float(loss(moved))

            numeric = (at_s(step) - at_s(-step)) / (2 * step)
            assert abs(float(grad[head]) - numeric) <= 1e-6 * max(1.0, abs(numeric))
        assert np.all(np.abs(np.asarray(grad)) > 1e-6)  # the check compares something


def test_a_tiny_run_learns_and_repeats(text):
    """150 tiny steps take the loss below the bytes' unigram entropy; the same seed, the same run."""
    first = lm_train.train(TINY, text.train, seed=0)
    again = lm_train.train(TINY, text.train, seed=0, steps=10)
    np.testing.assert_array_equal(first.losses[:10], again.losses)
    counts = np.bincount(text.train, minlength=256) / len(text.train)
    unigram = -np.sum(counts[counts > 0] * np.log(counts[counts > 0]))
    assert first.losses[0] > math.log(256) - 0.5
    assert first.losses[-10:].mean() < unigram - 0.3, (first.losses[-10:].mean(), unigram)


def test_evaluate_shapes_and_factor(text):
    model = lm_train.train(TINY, text.train, seed=0, steps=5)
    windows = corpus.batch_windows(text.validation, np.array([0, 50, 300]), 20)
    plain = lm_train.evaluate(model, windows, batch=2)
    assert plain["loss"].shape == (20,) and plain["entropy"].shape == (1, 2, 20)
    assert plain["loss_by_window"].shape == (3,)
    np.testing.assert_allclose(plain["loss"].mean(), plain["loss_by_window"].mean(), rtol=1e-5)
    sharper = lm_train.evaluate(model, windows, factor=np.full((1, 2, 20), 3.0, np.float32))
    assert np.all(sharper["entropy"][..., 1:] < plain["entropy"][..., 1:])
    with pytest.raises(ValueError, match="factor"):
        lm_train.evaluate(model, windows, factor=np.ones((1, 2, 19)))
    with pytest.raises(ValueError, match="factor"):
        lm_train.evaluate(model, windows, factor=np.zeros((1, 2, 20)))
    with pytest.raises(ValueError, match="windows"):
        lm_train.evaluate(model, windows.astype(float))


# -- the committed results came from this code -------------------------------------------


@pytest.mark.parametrize("experiment", ["length", "normalizer"])
def test_results_file_replays(text, experiment):
    """The first logged steps of one run of each experiment are reproduced by training again.

    Float32 on another machine, thread count or XLA version may round
    differently, hence a relative tolerance; two seeds differ by far more.
    """
    results = lm_train.load_results()
    assert results["provenance"]["corpus"]["sha256"] == text.sha256
    runs = [r for r in results["runs"] if r["experiment"] == experiment]
    first = sorted(runs, key=lambda r: (r["seed"], str(r)))[0]
    same_config = [r for r in runs if r["log"]["config"] == first["log"]["config"]]
    other = next(r for r in same_config if r["seed"] != first["seed"])
    config = lm.LMConfig(**first["log"]["config"])
    steps = 8
    replay = lm_train.train(config, text.train, first["seed"], steps=steps)
    logged = np.array(first["log"]["losses"][:steps])
    # this machine's replays agree to about 1e-7; 100 times that
    np.testing.assert_allclose(replay.losses, logged, rtol=1e-5)
    assert np.any(np.abs(np.array(other["log"]["losses"][:steps]) / logged - 1) > 1e-5)


def test_sweep_summary_keeps_each_window():
    """The sweep's per-evaluation summary keeps each window's loss, and its other fields as before."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments" / "language_model.py"
    spec = importlib.util.spec_from_file_location("language_model_sweep", path)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    rng = np.random.default_rng(0)
    by_window = rng.uniform(1.0, 3.0, size=(5, 128))  # (windows, positions)
    evaluation = {
        "loss": by_window.mean(axis=0),
        "loss_by_window": by_window.mean(axis=1),
        "entropy": rng.uniform(0.0, 4.0, size=(2, 4, 128)),
    }
    out = sweep._summary(evaluation, 128, keep_positions=True)
    assert set(out) == {
        "loss",
        "bands",
        "entropy_bands",
        "entropy_last",
        "loss_by_window",
        "loss_by_position",
    }
    np.testing.assert_allclose(out["loss_by_window"], by_window.mean(axis=1), rtol=1e-6)
    # the window means average to the loss the file has always stored (to its 7 digits)
    np.testing.assert_allclose(np.mean(out["loss_by_window"]), out["loss"], rtol=1e-6)
    assert out["bands"] == sweep.rounded([by_window[:, a:b].mean() for a, b in ((0, 64), (64, 128))])
