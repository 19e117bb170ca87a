"""The retrieval tasks of models.tasks and the model's modes for them (bidirectional, previous token)."""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.models import corpus, tasks

jax = pytest.importorskip("jax")
from attnscale.models import lm, lm_train  # noqa: E402
from attnscale.practice.length_rules import ntk_rope_base, rule_factors  # noqa: E402

VOCAB = tasks.recall_vocabulary(32, 8)


@pytest.fixture(scope="module")
def text():
    return corpus.sympy_corpus().train


def test_recall_layout_answers_every_query_from_its_pair():
    batch = tasks.associative_recall(32, 5, 3, VOCAB)
    p = 8
    assert batch.inputs.shape == batch.targets.shape == (5, 32)
    assert np.all(batch.inputs[:, 0] == VOCAB.bos)
    np.testing.assert_array_equal(batch.inputs[:, 1:], batch.targets[:, :-1])  # next-token layout
    scored = np.nonzero(batch.weights[0])[0]
    assert len(scored) == p and np.all(batch.weights.sum(axis=1) == p)
    for b in range(5):
        keys = batch.inputs[b, 1 : 2 * p + 1 : 2]
        assert len(set(keys)) == p and keys.min() >= 1 and keys.max() <= VOCAB.n_keys
        # a naive route: look the queried key up in the context by hand
        table = dict(zip(keys, batch.inputs[b, 2 : 2 * p + 2 : 2], strict=True))
        for i in scored:
            assert batch.targets[b, i] == table[batch.inputs[b, i]]
            k, v = batch.answer_keys[b, i]
            assert batch.inputs[b, k] == batch.inputs[b, i] and batch.inputs[b, v] == batch.targets[b, i]
    assert batch.chance == 1 / VOCAB.n_values


def test_recall_control_and_bidirectional_layout():
    absent = tasks.associative_recall(32, 4, 0, VOCAB, absent=True)
    for b in range(4):
        context = set(absent.inputs[b, 1:17:2])
        assert not context & set(absent.inputs[b, absent.weights[b] > 0])
    assert np.all(absent.answer_keys == -1)
    masked = tasks.associative_recall(32, 4, 0, VOCAB, causal=False)
    scored = masked.weights[0] > 0
    assert np.all(masked.inputs[:, scored] == VOCAB.mask)
    k = masked.answer_keys[0, scored][:, 0]
    np.testing.assert_array_equal(masked.inputs[0, k], masked.inputs[0, np.nonzero(scored)[0] - 1])


def test_tasks_are_seeded(text):
    for make in (
        lambda s: tasks.associative_recall(16, 2, s, VOCAB),
        lambda s: tasks.masked_text(text, 16, 2, s),
        lambda s: tasks.needle_in_text(text, 48, 2, s),
    ):
        a, b, c = make(1), make(1), make(2)
        np.testing.assert_array_equal(a.inputs, b.inputs)
        assert not np.array_equal(a.inputs, c.inputs)


def test_needle_is_planted_and_asked(text):
    batch = tasks.needle_in_text(text, 64, 6, 5, depth=0.5)
    for row in range(6):
        tail = bytes(batch.inputs[row].astype(np.uint8))
        key_at, value_at = batch.answer_keys[row, -1]
        key = tail[key_at : key_at + tasks.NEEDLE_KEY_LETTERS]
        value = bytes(batch.targets[row, batch.weights[row] > 0].astype(np.uint8))
        assert tail[value_at : value_at + tasks.NEEDLE_DIGITS] == value and value.isdigit()
        assert (b"\n" + key + b" = " + value[:-1]) == tail[
            -(tasks.NEEDLE_KEY_LETTERS + 3 + tasks.NEEDLE_DIGITS) :
        ]
    shallow = tasks.needle_in_text(text, 64, 1, 5, depth=0.0).answer_keys[0, -1, 0]
    deep = tasks.needle_in_text(text, 64, 1, 5, depth=1.0).answer_keys[0, -1, 0]
    assert shallow == 1 and deep > 30


def test_masked_text(text):
    batch = tasks.masked_text(text, 32, 50, 0, rate=0.2)
    masked = batch.weights > 0
    assert np.all(batch.inputs[masked] == 256) and np.all(batch.inputs[~masked] == batch.targets[~masked])
    assert np.all(masked.sum(axis=1) == round(0.2 * 32))


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: tasks.associative_recall(30, 1, 0, VOCAB), ValueError),
        (lambda: tasks.associative_recall(4 * 33, 1, 0, VOCAB), ValueError),
        (lambda: tasks.associative_recall(68, 1, 0, VOCAB, absent=True), ValueError),
        (lambda: tasks.associative_recall(32, 0, 0, VOCAB), ValueError),
        (lambda: tasks.associative_recall(32, 1, -1, VOCAB), TypeError),
        (lambda: tasks.associative_recall(32, 1, 0, "v"), TypeError),
        (lambda: tasks.associative_recall(32.0, 1, 0, VOCAB), TypeError),
        (lambda: tasks.recall_vocabulary(1, 8), ValueError),
        (lambda: tasks.masked_text(np.zeros(100, np.uint8), 16, 1, 0, rate=1.0), ValueError),
        (lambda: tasks.needle_in_text(np.zeros(100, np.uint8), 20, 1, 0), ValueError),
        (lambda: tasks.needle_in_text(np.zeros(100, np.uint8), 48, 1, 0, depth=2), ValueError),
    ],
)
def test_bad_input(call, error):
    with pytest.raises(error):
        call()


def test_bidirectional_model_sees_the_future():
    config = lm.LMConfig(d_model=16, n_heads=2, n_layers=1, d_mlp=32, vocab=VOCAB.size, causal=False)
    params = lm.init_params(config, 0)
    tokens = jax.numpy.asarray(tasks.associative_recall(16, 1, 0, VOCAB).inputs[0])
    changed = tokens.at[-1].set((tokens[-1] + 1) % VOCAB.size)
    first = lambda t: lm.forward(config, params, t)[0][0]  # noqa: E731
    assert not np.allclose(first(tokens), first(changed))  # position 0 reads the last token
    causal = lm.LMConfig(**{**config.__dict__, "causal": True})
    params_c = lm.init_params(causal, 0)
    np.testing.assert_allclose(
        lm.forward(causal, params_c, tokens)[0][0], lm.forward(causal, params_c, changed)[0][0], rtol=1e-6
    )


def test_previous_token_input_is_a_shifted_embedding():
    config = lm.LMConfig(d_model=16, n_heads=2, n_layers=1, d_mlp=32, vocab=VOCAB.size, previous_token=True)
    params = lm.init_params(config, 0)
    plain = lm.init_params(lm.LMConfig(**{**config.__dict__, "previous_token": False}), 0)
    assert set(params) - set(plain) == {"embed_previous"}
    np.testing.assert_array_equal(params["embed"], plain["embed"])  # the other weights are unchanged
    tokens = jax.numpy.asarray([3, 5, 7, 9])
    changed = tokens.at[1].set(6)  # changes positions 1 (its token) and 2 (its previous token) only
    a = lm.forward(config, params, tokens)[0]
    b = lm.forward(config, params, changed)[0]
    assert np.allclose(a[0], b[0]) and not np.allclose(a[2], b[2])


def test_task_training_learns_recall_and_the_probe_finds_the_pair():
    """A short run on recall at 16 tokens beats chance, and its answer weights are read where the pair is."""
    vocabulary = tasks.recall_vocabulary(16, 4)
    config = lm.LMConfig(
        d_model=32,
        n_heads=2,
        n_layers=2,
        d_mlp=64,
        vocab=vocabulary.size,
        train_length=16,
        batch=32,
        steps=300,
        learning_rate=1e-2,
        previous_token=True,
        positions="nope",
    )
    model = lm_train.train_task(config, lambda s: tasks.associative_recall(16, 32, s, vocabulary), 0)
    test = tasks.associative_recall(16, 64, 999, vocabulary)
    result = lm_train.evaluate_task(model, test)
    accuracy = result["correct"].mean()
    # chance is 1/4; 64 x 4 answers give a standard error under 0.03
    assert accuracy > 0.5, accuracy
    control = lm_train.evaluate_task(model, tasks.associative_recall(16, 64, 999, vocabulary, absent=True))
    assert control["correct"].mean() < 0.4
    assert np.isnan(control["answer_weight"]).all()
    weight = np.nanmean(result["answer_weight"], axis=(0, 3))
    assert weight.max() > 2 * (2 / 16)  # a head looks at the pair, far more than a uniform row would
    # the loss the loop logs is the scored positions' cross-entropy, recomputed here by hand
    first = lm_train.train_task(config, lambda s: tasks.associative_recall(16, 32, s, vocabulary), 0, steps=1)
    batch0 = tasks.associative_recall(16, 32, 0, vocabulary)
    by_hand = lm.task_loss_fn(
        config, lm.init_params(config, 0), batch0.inputs, batch0.targets, batch0.weights
    )
    np.testing.assert_allclose(first.losses[0], float(by_hand), rtol=1e-5)


def test_evaluate_task_rows_and_factor_shapes():
    config = lm.LMConfig(d_model=16, n_heads=2, n_layers=2, d_mlp=32, vocab=VOCAB.size, previous_token=True)
    model = lm_train.TrainedModel(
        config, jax.tree.map(np.asarray, lm.init_params(config, 0)), 0, np.zeros(0), 0.0
    )
    batch = tasks.associative_recall(32, 3, 0, VOCAB)
    out = lm_train.evaluate_task(model, batch, rows=[17, 19])
    assert out["correct"].shape == (3, 8) and out["answer_weight"].shape == (3, 2, 2, 8)
    assert out["rows"].shape == (3, 2, 2, 2, 32)
    with pytest.raises(ValueError, match="factor"):
        lm_train.evaluate_task(model, batch, factor=np.ones((2, 2, 31)))


def test_ntk_base_and_rules():
    # the slowest frequency turns over T tokens as it did over L
    base, dh, L, T = 10000.0, 32, 64, 1024
    new = ntk_rope_base(base, dh, L, T)
    slowest = lambda b: b ** (-(dh // 2 - 1) / (dh // 2))  # noqa: E731
    np.testing.assert_allclose(slowest(new) * T, slowest(base) * L, rtol=1e-12)
    assert ntk_rope_base(base, dh, L, 32) == base
    rules, calc = rule_factors(32, np.full((1, 2), 3.0), np.full((1, 2), 1.5), 64, 1024, 6)
    q = rules["qwen_logn"](256)
    assert q.shape == (1, 2, 256) and np.all(q[..., :64] == 1)
    np.testing.assert_allclose(q[0, 0, 255], np.log(256) / np.log(64), rtol=1e-6)
    s = rules["sqrt_rule"](256)[0, 0, 255]
    np.testing.assert_allclose(s, np.sqrt(1.5**2 + 2 * np.log(4)) / 1.5, rtol=1e-6)
    assert calc["factors"].shape == (1, 2, len(calc["grid"]))
    with pytest.raises(ValueError):
        ntk_rope_base(10000.0, 31, 64, 128)


@pytest.mark.parametrize(("positions", "rule"), [("nope", "ssmax"), ("rope", "logn512")])
def test_retrieval_results_replay(positions, rule):
    """The first logged steps of a retrieval run are reproduced by training again (the chapter replays O)."""
    results = lm_train.load_results(name="retrieval.json")
    runs = sorted(
        (
            r
            for r in results["runs"]
            if r["task"] == "recall" and r["positions"] == positions and r["rule"] == rule
        ),
        key=lambda r: r["seed"],
    )
    first, other = runs[0], runs[1]
    config = lm.LMConfig(**first["log"]["config"])
    vocabulary = tasks.recall_vocabulary(**results["settings"]["recall_vocabulary"])
    steps = 4
    replay = lm_train.train_task(
        config,
        lambda s: tasks.associative_recall(
            config.train_length, config.batch, tasks.step_seed(first["seed"], s), vocabulary
        ),
        first["seed"],
        steps=steps,
    )
    logged = np.array(first["log"]["losses"][:steps])
    np.testing.assert_allclose(replay.losses, logged, rtol=1e-5)  # this machine agrees to about 1e-7
    assert np.any(np.abs(np.array(other["log"]["losses"][:steps]) / logged - 1) > 1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_describe_recall_bolds_each_scored_answer(causal):
    batch = tasks.associative_recall(16, 1, 3, VOCAB, causal=causal)
    words = tasks.describe_recall(batch, VOCAB).split()
    bold = [w.strip("*") for w in words if w.startswith("**")]
    answers = [f"v{t - VOCAB.first_value}" for t in batch.targets[0][batch.weights[0] > 0]]
    assert bold == answers  # every scored answer once, in order, and nothing else
    # the causal text is the tokens read then the last answer; the masked one is the window itself
    assert len(words) == 16 + causal
    assert "⟨mask⟩" not in words  # a masked answer is shown as what must be predicted there


def test_describe_needle_marks_the_planted_line_and_the_answer(text):
    for depth in (0.0, 0.5, 1.0):
        batch = tasks.needle_in_text(text, 64, 2, 7, depth=depth)
        shown = tasks.describe_needle(batch, example=1)
        planted = shown[shown.index("⟦") + 1 : shown.index("⟧")]
        key, value = planted.split(" = ")
        assert len(key) == tasks.NEEDLE_KEY_LETTERS and value.isdigit() and len(value) == tasks.NEEDLE_DIGITS
        # the question asks the planted key, and the bracketed answer is its value
        assert shown.endswith(f"\n{key} = [{value}]")
        # every byte of the window is shown once, the marks aside
        assert len(shown) - 4 == batch.length + 1
    with pytest.raises(TypeError, match="TaskBatch"):
        tasks.describe_needle("not a batch")
