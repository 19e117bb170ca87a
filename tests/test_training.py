"""The training module: bad input refused, gradients against finite differences,
a tiny run that learns, determinism under a seed."""

from __future__ import annotations

import numpy as np
import pytest

import attnscale as at


def _problem(loss, seed=3):
    rng = np.random.default_rng(seed)
    replicas, n_scales, d, m, n = 2, 3, 5, 4, 7
    w_query = rng.standard_normal((replicas, n_scales, d, m)) / 2
    w_key = rng.standard_normal((replicas, n_scales, d, m)) / 2
    scales = np.array([0.3, 1.0, 2.5])
    gain = 1 + 0.1 * rng.standard_normal((replicas, n_scales))
    batch = at.retrieval_batch(replicas, 3, n, m, rng)
    return w_query, w_key, scales, gain, batch


@pytest.mark.parametrize("loss", ["ce", "readout"])
def test_gradients_match_central_differences(loss):
    w_query, w_key, scales, gain, batch = _problem(loss)
    kwargs = dict(loss=loss, length_factor=1.3)
    _, (g_query, g_key, g_gain) = at.attention_loss_and_gradients(
        w_query, w_key, scales, *batch, gain=gain, **kwargs
    )
    h = 1e-6

    def value(wq, wk, g):
        return at.attention_loss_and_gradients(wq, wk, scales, *batch, gain=g, **kwargs)[0]

    for which, array, analytic in [("q", w_query, g_query), ("k", w_key, g_key), ("g", gain, g_gain)]:
        numeric = np.zeros_like(array)
        for idx in np.ndindex(array.shape):
            up, down = array.copy(), array.copy()
            up[idx] += h
            down[idx] -= h
            args_up = {"q": (up, w_key, gain), "k": (w_query, up, gain), "g": (w_query, w_key, up)}[which]
            args_dn = {"q": (down, w_key, gain), "k": (w_query, down, gain), "g": (w_query, w_key, down)}[
                which
            ]
            numeric[idx] = (value(*args_up) - value(*args_dn))[idx[:2]] / (2 * h)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8, err_msg=f"{loss} d/d{which}")
        # the wrong claim "no scale factor in the chain rule" would fail
        assert not np.allclose(
            analytic / scales[None, :, None, None] if which != "g" else 2 * analytic, numeric
        )


def test_cross_entropy_gradient_is_p_minus_onehot():
    # independent route: dL/dz = p - e_t, so dL/dg = lambda * sum_j (p_j - e_tj) r_j / batch
    w_query, w_key, scales, gain, batch = _problem("ce")
    keys, queries, targets = batch
    _, (_, _, g_gain) = at.attention_loss_and_gradients(w_query, w_key, scales, *batch, gain=gain)
    raw = at.attention_scores(w_query, w_key, keys, queries)  # (R, B, S, n)
    z = gain[:, None, :, None] * scales[None, None, :, None] * raw
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    onehot = np.zeros_like(p)
    np.put_along_axis(onehot, np.broadcast_to(targets[:, :, None, None], (*p.shape[:3], 1)), 1.0, axis=-1)
    expected = np.einsum("rbsn,rbsn->rs", p - onehot, raw) * scales / keys.shape[1]
    np.testing.assert_allclose(g_gain, expected, rtol=1e-10, atol=1e-12)


def test_initial_scores_have_variance_d():
    rng = np.random.default_rng(0)
    d, m = 32, 16
    wq, wk = at.init_projections(300, d, m, rng)
    keys, queries, _ = at.retrieval_batch(300, 2, 64, m, rng)
    var = at.attention_scores(wq, wk, keys, queries).var() / d
    assert abs(var - 1.0) < 0.05  # a missing 1/m in the init would give 16


@pytest.mark.parametrize("optimizer,lr", [("adam", 0.02), ("sgd", 0.5)])
def test_tiny_run_learns(optimizer, lr):
    result = at.train_attention(
        16, 16, [2.0], replicas=2, steps=150, batch=8, optimizer=optimizer, learning_rate=lr, loss="readout"
    )
    start = result.losses[:, 0, :10].mean()
    end = at.evaluate_attention(result, 16, queries=128, seed=1)["loss"].mean()
    assert start > 0.3  # uniform attention: about 1/2
    assert end < 0.05


def test_cross_entropy_run_learns():
    result = at.train_attention(16, 16, [1.0], replicas=2, steps=150, batch=8, loss="ce", learning_rate=0.02)
    out = at.evaluate_attention(result, 16, queries=128, seed=1)
    assert out["loss"].mean() < 0.5 < np.log(16)
    assert out["accuracy"].mean() > 0.8


def test_deterministic_under_a_seed():
    kwargs = dict(replicas=2, steps=20, batch=4, seed=11)
    a = at.train_attention(32, 8, [0.5, 2.0], **kwargs)
    b = at.train_attention(32, 8, [0.5, 2.0], **kwargs)
    c = at.train_attention(32, 8, [0.5, 2.0], **{**kwargs, "seed": 12})
    np.testing.assert_array_equal(a.losses, b.losses)
    np.testing.assert_array_equal(a.w_query, b.w_query)
    assert not np.array_equal(a.losses, c.losses)
    ea = at.evaluate_attention(a, 64, 1.5, queries=16, seed=2)
    eb = at.evaluate_attention(b, 64, 1.5, queries=16, seed=2)
    for key in ea:
        np.testing.assert_array_equal(ea[key], eb[key])


@pytest.mark.parametrize("learn_gain", [False, [False, True, True]])
def test_replicas_a_few_at_a_time_give_the_same_bits(monkeypatch, learn_gain):
    # a training step computes a few replicas at a time (cache-sized); the
    # numbers are those of one pass over all of them, bit for bit
    kwargs = dict(
        replicas=5,
        steps=12,
        batch=4,
        seed=3,
        learn_gain=learn_gain,
        loss="readout",
        optimizer=["adam", "sgd", "adam"],
        learning_rate=[0.01, 0.5, 0.02],
    )
    monkeypatch.setattr("attnscale.models.training._CACHE_NUMBERS", 2**40)  # all replicas in one pass
    whole = at.train_attention(64, [4, 8, 8], [0.5, 1.0, 2.0], **kwargs)
    monkeypatch.setattr("attnscale.models.training._CACHE_NUMBERS", 2 * 4 * 3 * 64)  # two replicas, then one
    parts = at.train_attention(64, [4, 8, 8], [0.5, 1.0, 2.0], **kwargs)
    for name in ("losses", "w_query", "w_key", "gain"):
        np.testing.assert_array_equal(getattr(parts, name), getattr(whole, name))
    if learn_gain:  # the gain's gradient was exercised
        assert not np.array_equal(whole.gain, np.ones_like(whole.gain))


def test_scales_share_data_and_initialization():
    result = at.train_attention(32, 8, [1.0, 1.0], replicas=2, steps=5, batch=4)
    np.testing.assert_array_equal(result.losses[:, 0], result.losses[:, 1])


def test_logn_rule_and_learned_gain():
    result = at.train_attention(16, 8, [1.0], replicas=1, steps=30, length_rule="logn", learn_gain=True)
    assert result.gain[0, 0] != 1.0
    # at the training length the log n factor is 1: evaluation equals a fixed rule with the same weights
    fixed = at.TrainingResult(**{**result.__dict__, "length_rule": "fixed"})
    a = at.evaluate_attention(result, 16, queries=8, seed=0)
    b = at.evaluate_attention(fixed, 16, queries=8, seed=0)
    np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-12)
    a = at.evaluate_attention(result, 64, queries=8, seed=0)
    b = at.evaluate_attention(fixed, 64, np.log(64) / np.log(16), queries=8, seed=0)
    np.testing.assert_allclose(a["entropy"], b["entropy"], rtol=1e-10)


def test_learned_gain_per_model_equals_separate_runs():
    # a head with a learned gain beside one without, in one call: each as if trained alone
    both = at.train_attention(16, 8, [1.0, 1.0], replicas=2, steps=25, learn_gain=[False, True], seed=4)
    plain = at.train_attention(16, 8, [1.0], replicas=2, steps=25, seed=4)
    gained = at.train_attention(16, 8, [1.0], replicas=2, steps=25, learn_gain=True, seed=4)
    for k, alone in enumerate((plain, gained)):
        np.testing.assert_allclose(both.w_query[:, k], alone.w_query[:, 0], rtol=1e-12)
        np.testing.assert_allclose(both.losses[:, k], alone.losses[:, 0], rtol=1e-12)
        np.testing.assert_allclose(both.gain[:, k], alone.gain[:, 0], rtol=1e-12)
    assert np.all(both.gain[:, 0] == 1.0) and np.all(both.gain[:, 1] != 1.0)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_one_step_size_per_model_equals_separate_runs(optimizer):
    # a grid of (scale, step size) in one call: each model as if trained alone with its step size
    multipliers, rates = np.array([0.5, 2.0, 2.0]), np.array([0.3, 0.3, 0.05])
    grid = at.train_attention(
        16,
        8,
        multipliers,
        replicas=2,
        steps=20,
        optimizer=optimizer,
        learning_rate=rates,
        loss="readout",
        seed=3,
    )
    for k, (c, rate) in enumerate(zip(multipliers, rates, strict=True)):
        alone = at.train_attention(
            16, 8, [c], replicas=2, steps=20, optimizer=optimizer, learning_rate=rate, loss="readout", seed=3
        )
        # equal up to rounding: the batched products round differently, and Adam's division by
        # small second moments magnifies that to ~1e-9 in 20 steps; a wrong step size moves by O(1)
        np.testing.assert_allclose(grid.losses[:, k], alone.losses[:, 0], rtol=1e-7)
        np.testing.assert_allclose(grid.w_query[:, k], alone.w_query[:, 0], rtol=1e-7, atol=1e-8)
    # and the two step sizes at c = 2 really differ (rules out an ignored array)
    assert not np.allclose(grid.w_query[:, 1], grid.w_query[:, 2])


def test_heads_of_several_dimensions_in_one_call():
    # d = 4 beside d = 8: the d = 4 head must be exactly a 4-row head trained on the same data
    # from the first 4 rows of the shared draw, at scale c / sqrt(4); reproduced here by hand
    # (the generator's draws, then plain SGD on attention_loss_and_gradients)
    n, m, replicas, steps, rate, c = 16, 6, 2, 15, 0.2, 1.5
    both = at.train_attention(
        n,
        [4, 8],
        [c, c],
        m=m,
        replicas=replicas,
        steps=steps,
        batch=4,
        optimizer="sgd",
        learning_rate=rate,
        loss="readout",
        seed=11,
    )
    rng = np.random.default_rng(11)
    w_query, w_key = at.init_projections(replicas, 8, m, rng)
    w_query, w_key = w_query[:, :, :4], w_key[:, :, :4]
    for step in range(steps):
        keys, queries, targets = at.retrieval_batch(replicas, 4, n, m, rng)
        value, (g_query, g_key, _) = at.attention_loss_and_gradients(
            w_query, w_key, [c / 2.0], keys, queries, targets, loss="readout"
        )
        np.testing.assert_allclose(both.losses[:, 0, step], value[:, 0], rtol=1e-10)
        w_query, w_key = w_query - rate * g_query, w_key - rate * g_key
    np.testing.assert_allclose(both.w_query[:, 0, :4], w_query[:, 0], rtol=1e-9)
    np.testing.assert_allclose(both.scales, [c / 2.0, c / np.sqrt(8)])
    assert not np.allclose(both.losses[:, 0], both.losses[:, 1])  # the scale follows each head's d
    # the rows a head does not have stay exactly zero, under Adam too
    adam = at.train_attention(n, [3, 8, 5], [1.0, 1.0, 1.0], m=m, replicas=2, steps=10, seed=2)
    for k, d in enumerate((3, 8, 5)):
        for w in (adam.w_query, adam.w_key):
            assert np.all(w[:, k, d:] == 0) and np.all(w[:, k, :d] != 0)


@pytest.mark.parametrize("bad", [[4], [4, 0], [4.0, 8.0], "8"])
def test_head_dimensions_must_be_one_integer_per_multiplier(bad):
    with pytest.raises((ValueError, TypeError), match="d must"):
        at.train_attention(16, bad, [1.0, 2.0], replicas=1, steps=1)


def test_train_at_best_rate_keeps_the_best_rate_and_reports_fresh_seeds():
    rates = np.array([1e-6, 0.03, 3.0])  # too small to move, good, divergent (Adam)
    tuned = at.train_at_best_rate(
        16,
        8,
        [0.5, 2.0],
        rates,
        replicas=3,
        steps=60,
        optimizer="adam",
        loss="readout",
        search_seed=5,
        seed=6,
    )
    # independent route: the search loss recomputed from separate runs at each rate
    for k, c in enumerate([0.5, 2.0]):
        alone = [
            at.evaluate_attention(
                at.train_attention(
                    16,
                    8,
                    [c],
                    replicas=3,
                    steps=60,
                    optimizer="adam",
                    learning_rate=r,
                    loss="readout",
                    seed=5,
                ),
                16,
                queries=256,
            )["loss"][:, 0].mean()
            for r in rates
        ]
        searched = tuned.search_loss[:, k].mean(axis=0)
        np.testing.assert_allclose(searched[:2], alone[:2], rtol=1e-6)
        # a divergent run magnifies rounding (the batched products round differently; 1.1e-2 seen),
        # while the good rate's loss is 13 times smaller
        np.testing.assert_allclose(searched[2], alone[2], rtol=5e-2)
        assert tuned.rates[k] == rates[int(np.argmin(alone))]
    assert np.all(tuned.rates == 0.03) and not np.any(tuned.at_edge)
    again = at.train_attention(
        16,
        8,
        [0.5, 2.0],
        replicas=3,
        steps=60,
        optimizer="adam",
        learning_rate=tuned.rates,
        loss="readout",
        seed=6,
    )
    np.testing.assert_array_equal(tuned.result.losses, again.losses)  # the reported runs: fresh seed 6


def test_train_at_best_rate_with_an_optimizer_and_a_grid_per_multiplier_equals_separate_calls():
    # SGD and Adam multipliers searched in one call, each over its own grid: as if searched apart
    common = dict(replicas=2, steps=15, batch=4, loss="readout", search_seed=3, seed=4, queries=32)
    mult = np.array([0.5, 2.0])
    grids = {"sgd": np.array([0.1, 0.4, 1.6]), "adam": np.array([0.003, 0.03])}
    both = at.train_at_best_rate(
        16,
        4,
        np.concatenate([mult, mult]),
        [grids["sgd"]] * 2 + [grids["adam"]] * 2,
        optimizer=["sgd"] * 2 + ["adam"] * 2,
        **common,
    )
    assert both.search_loss.shape == (2, 4, 3) and np.all(np.isnan(both.search_loss[:, 2:, 2]))
    for k, opt in enumerate(grids):
        apart = at.train_at_best_rate(16, 4, mult, grids[opt], optimizer=opt, **common)
        models = slice(2 * k, 2 * k + 2)
        np.testing.assert_array_equal(both.rates[models], apart.rates)
        np.testing.assert_array_equal(both.at_edge[models], apart.at_edge)
        size = grids[opt].size
        np.testing.assert_allclose(both.search_loss[:, models, :size], apart.search_loss, rtol=1e-12)
        np.testing.assert_allclose(both.result.w_query[:, models], apart.result.w_query, rtol=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        (dict(rates=[]), "rates", ValueError),
        (dict(rates=[0.1, 0.0]), "rates", ValueError),
        (dict(rates=[[0.1], [0.2]]), "rates", ValueError),
        (dict(rates=[[[0.1]]]), "rates", ValueError),
        (dict(rates=[[0.1, -1.0]]), "rates", ValueError),
        (dict(rates="fast"), "rates", TypeError),
        (dict(queries=0), "queries", ValueError),
        (dict(learning_rate=0.1), "learning_rate", TypeError),
        (dict(multipliers=[[1.0]]), "multipliers", ValueError),
        (dict(optimizer="lion"), "optimizer", ValueError),
    ],
)
def test_train_at_best_rate_refuses_bad_input(kwargs, name, error):
    args = dict(n=8, d=4, multipliers=[1.0], rates=[0.1], steps=1, replicas=1)
    args.update(kwargs)
    with pytest.raises(error, match=name):
        at.train_at_best_rate(
            args.pop("n"), args.pop("d"), args.pop("multipliers"), args.pop("rates"), **args
        )


def test_stacked_models_see_the_same_evaluation_keys():
    # evaluation chunks are set by the keys alone for a few models, so a model evaluates the same
    # whether alone or stacked with copies of itself under other evaluation multipliers
    result = at.train_attention(16, 8, [1.0], replicas=3, steps=5, seed=1)
    stacked = at.TrainingResult(
        **{
            **result.__dict__,
            "scales": np.repeat(result.scales, 3),
            "w_query": np.repeat(result.w_query, 3, axis=1),
            "w_key": np.repeat(result.w_key, 3, axis=1),
            "gain": np.repeat(result.gain, 3, axis=1),
        }
    )
    multiplier = np.array([1.0, 1.5, 3.0])
    together = at.evaluate_attention(stacked, 512, multiplier, queries=300, seed=4)
    for k, nu in enumerate(multiplier):
        alone = at.evaluate_attention(result, 512, nu, queries=300, seed=4)
        np.testing.assert_allclose(together["entropy"][:, k], alone["entropy"][:, 0], rtol=1e-12)


def test_models_evaluated_in_blocks_see_the_keys_of_one_model(monkeypatch):
    # many models: the weights are held a block of models at a time, and the keys drawn do not change
    result = at.train_attention(16, 4, np.linspace(0.5, 3.0, 7), replicas=2, steps=3, seed=2)
    whole = at.evaluate_attention(result, 64, queries=40, seed=5)
    monkeypatch.setattr("attnscale.models.training._EVAL_WEIGHTS", 2 * 64 * 40 * 2)  # two models a block
    blocked = at.evaluate_attention(result, 64, queries=40, seed=5)
    one = at.TrainingResult(
        **{
            **result.__dict__,
            "scales": result.scales[4:5],
            "w_query": result.w_query[:, 4:5],
            "w_key": result.w_key[:, 4:5],
            "gain": result.gain[:, 4:5],
        }
    )
    alone = at.evaluate_attention(one, 64, queries=40, seed=5)
    for key in whole:
        np.testing.assert_allclose(blocked[key], whole[key], rtol=1e-12)
        np.testing.assert_allclose(alone[key][:, 0], whole[key][:, 4], rtol=1e-12)


def test_a_measure_alone_equals_the_same_measure_with_the_others():
    result = at.train_attention(16, 4, [0.5, 2.0], replicas=2, steps=3, seed=6)
    every = at.evaluate_attention(result, 40, queries=30, seed=2)
    for name in every:
        alone = at.evaluate_attention(result, 40, queries=30, seed=2, measures=(name,))
        assert list(alone) == [name]
        np.testing.assert_array_equal(alone[name], every[name])
    for bad, error in (("loss", TypeError), ((), ValueError), (("perplexity",), ValueError)):
        with pytest.raises(error, match="measures"):
            at.evaluate_attention(result, 40, queries=30, measures=bad)


def test_entropy_of_uniform_attention_is_log_n():
    # a zero scale gives uniform rows: entropy log n, target weight 1/n
    result = at.train_attention(8, 4, [1.0], replicas=1, steps=1, learning_rate=1e-12)
    zero = at.TrainingResult(**{**result.__dict__, "scales": np.array([0.0])})
    out = at.evaluate_attention(zero, 50, queries=4, seed=0)
    np.testing.assert_allclose(out["entropy"], np.log(50), rtol=1e-12)
    np.testing.assert_allclose(out["target_weight"], 1 / 50, rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        (dict(n=1), "n", ValueError),
        (dict(n=2.5), "n", TypeError),
        (dict(d=0), "d", ValueError),
        (dict(multipliers=[]), "multipliers", ValueError),
        (dict(multipliers=[1.0, -1.0]), "multipliers", ValueError),
        (dict(multipliers=[np.nan]), "multipliers", ValueError),
        (dict(multipliers="big"), "multipliers", TypeError),
        (dict(multipliers=[[1.0]]), "multipliers", ValueError),
        (dict(optimizer="rmsprop"), "optimizer", ValueError),
        (dict(optimizer=None), "optimizer", TypeError),
        (dict(loss="mse"), "loss", ValueError),
        (dict(learning_rate=0.0), "learning_rate", ValueError),
        (dict(learning_rate=np.inf), "learning_rate", ValueError),
        (dict(learning_rate=[0.1, 0.2]), "learning_rate", ValueError),
        (dict(learning_rate=[-0.1]), "learning_rate", ValueError),
        (dict(learning_rate="fast"), "learning_rate", TypeError),
        (dict(steps=0), "steps", ValueError),
        (dict(batch=True), "batch", TypeError),
        (dict(replicas=0), "replicas", ValueError),
        (dict(seed=-1), "seed", TypeError),
        (dict(seed=1.5), "seed", TypeError),
        (dict(length_rule="sqrt"), "length_rule", ValueError),
        (dict(learn_gain="yes"), "learn_gain", TypeError),
        (dict(learn_gain=[True, False]), "learn_gain", TypeError),
        (dict(learn_gain=[1]), "learn_gain", TypeError),
        (dict(query_noise=-0.1), "query_noise", ValueError),
    ],
)
def test_train_refuses_bad_input(kwargs, name, error):
    args = dict(n=8, d=4, multipliers=[1.0], steps=1, replicas=1)
    args.update(kwargs)
    with pytest.raises(error, match=name):
        at.train_attention(args.pop("n"), args.pop("d"), args.pop("multipliers"), **args)


def test_other_functions_refuse_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n"):
        at.retrieval_batch(1, 1, 1, 4, rng)
    with pytest.raises(TypeError, match="rng"):
        at.retrieval_batch(1, 1, 4, 4, 0)
    with pytest.raises(ValueError, match="query_noise"):
        at.retrieval_batch(1, 1, 4, 4, rng, query_noise=np.nan)
    with pytest.raises(TypeError, match="rng"):
        at.init_projections(1, 4, 4, None)
    w_query, w_key, scales, _, batch = _problem("ce")
    with pytest.raises(ValueError, match="scales"):
        at.attention_loss_and_gradients(w_query, w_key, scales[:2], *batch)
    with pytest.raises(ValueError, match="scales"):
        at.attention_loss_and_gradients(w_query, w_key, -scales, *batch)
    with pytest.raises(ValueError, match="w_query"):
        at.attention_loss_and_gradients(w_query[0], w_key, scales, *batch)
    with pytest.raises(ValueError, match="targets"):
        keys, queries, targets = batch
        at.attention_loss_and_gradients(w_query, w_key, scales, keys, queries, targets + 100)
    with pytest.raises(ValueError, match="loss"):
        at.attention_loss_and_gradients(w_query, w_key, scales, *batch, loss="hinge")
    with pytest.raises(ValueError, match="gain"):
        at.attention_loss_and_gradients(w_query, w_key, scales, *batch, gain=np.ones(3))
    with pytest.raises(ValueError, match="length_factor"):
        at.attention_loss_and_gradients(w_query, w_key, scales, *batch, length_factor=0.0)
    with pytest.raises(ValueError, match="keys"):
        at.attention_scores(w_query, w_key, batch[0][..., :2], batch[1])
    result = at.train_attention(8, 4, [1.0], replicas=1, steps=1)
    with pytest.raises(TypeError, match="result"):
        at.evaluate_attention({}, 8)
    with pytest.raises(ValueError, match="multiplier"):
        at.evaluate_attention(result, 8, 0.0)
    with pytest.raises(ValueError, match="n"):
        at.evaluate_attention(result, 1)
    with pytest.raises(TypeError, match="queries"):
        at.evaluate_attention(result, 8, queries=2.0)


def test_initial_weights_are_drawn_first_from_the_seed():
    # the training chapter rebuilds its untrained control this way: the same heads before training
    result = at.train_attention(
        16, 8, [1.0, 2.0], replicas=2, steps=1, optimizer="sgd", learning_rate=1e-300, seed=9
    )
    w_query, w_key = at.init_projections(2, 8, 16, np.random.default_rng(9))
    for trained, initial in ((result.w_query, w_query), (result.w_key, w_key)):
        np.testing.assert_array_equal(trained, np.repeat(initial, 2, axis=1))  # a step of 1e-300 leaves them
