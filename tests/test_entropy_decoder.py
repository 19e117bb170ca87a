"""Entropy, decoder and transfer helpers against independent routes."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnscale as at


def mp_entropy(row, alpha):
    spread = float(alpha * (np.max(row) - np.min(row)))
    with mp.workdps(40 + int(min(spread, 2000) / 2.3)):
        w = [mp.exp(mp.mpf(float(alpha)) * mp.mpf(float(x))) for x in row]
        z = mp.fsum(w)
        return float(-mp.fsum((x / z) * mp.log(x / z) for x in w if x > 0))


@pytest.mark.parametrize(
    ("row", "alpha"),
    [
        ([0.0, 0.0, 0.0], 1.0),
        ([1.0, 2.0, 3.0], 0.5),
        ([0.0, -40.0], 1.0),
        ([1e4, -1e4, 0.0], 1e-4),
        ([3.0, 2.999, -5.0], 1e3),
        (list(np.linspace(-3, 3, 25)), 2.0),
        ([5.0], 1.0),
    ],
)
def test_softmax_entropy_against_mpmath(row, alpha):
    assert float(at.softmax_entropy(row, alpha)) == pytest.approx(
        mp_entropy(row, alpha), rel=1e-12, abs=1e-300
    )


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 10).flatmap(lambda n: arrays(np.float64, n, elements=st.floats(-1e4, 1e4))),
    st.floats(0, 1e4),
)
def test_entropy_bounds(row, alpha):
    h = float(at.softmax_entropy(row, alpha))
    assert 0.0 <= h <= np.log(len(row)) * (1 + 1e-12) + 1e-15
    assert float(at.renyi2_entropy(row, alpha)) <= h * (1 + 1e-12) + 1e-15


def test_matching_scale_keeps_meanfield_entropy():
    n = np.geomspace(600, 1e9, 50)
    alpha = at.entropy_matching_scale(n, 1.3, train_length=512)
    np.testing.assert_allclose(
        at.gaussian_meanfield_entropy(alpha, n), at.gaussian_meanfield_entropy(1.3, 512), rtol=1e-12
    )


def test_gradient_fraction_is_one_at_the_optimum():
    n = np.array([2.0, 40.0, 4096.0])
    np.testing.assert_allclose(at.gradient_fraction(at.gaussian_alpha_star(n), n), 1.0, rtol=1e-12)
    np.testing.assert_allclose(at.gradient_fraction(at.cosine_alpha_star(n, 64), n, 64), 1.0, rtol=1e-12)
    assert np.all(at.gradient_fraction(np.array([0.3, 3.0]), 4096.0) < 1)


def test_best_causal_scale_against_a_scan():
    L = 256
    alpha, n_ref, share = at.best_causal_scale(L)
    positions = np.arange(2, L + 1)
    scan = np.linspace(0.5, 3.0, 2501)
    shares = [np.maximum(at.gradient_fraction(a, positions), 0).mean() for a in scan]
    assert alpha == pytest.approx(scan[int(np.argmax(shares))], abs=2e-3)
    assert max(shares) - 1e-12 <= share <= max(shares) + 1e-5  # the scan is discretized
    assert float(at.gaussian_alpha_star(n_ref)) == pytest.approx(alpha, rel=1e-12)


def test_relu_fit_matches_closed_form():
    rng = np.random.default_rng(2)
    scores, values = at.retrieval_task(500, 512, rng, distractor_mean=-1.0)
    u = np.sum(np.maximum(scores, 0) ** 2 * values, axis=-1) / 512
    for kind in ("relu2_n", "relu2_fixed"):
        theta = at.fit_attention_parameter(kind, scores, values)
        assert 1 / theta == pytest.approx(u.mean() / np.mean(u**2), rel=1e-6)


def test_retrieval_error_matches_the_definitions():
    rng = np.random.default_rng(5)
    scores, values = at.retrieval_task(40, 64, rng, distractor_mean=-1.0)
    theta, L = 0.7, 512
    relu2 = np.maximum(scores, 0) ** 2

    def mse(weights):
        return np.mean((np.sum(weights * values, axis=-1) - 1) ** 2)

    expected = {
        "softmax": mse(at.softmax(scores, theta)),
        "softmax_logn": mse(at.softmax(scores, theta * np.log(64) / np.log(L))),
        "relu2_n": mse(relu2 / (theta * 64)),
        "relu2_fixed": mse(relu2 / (theta * L)),
        "relu2_row": mse(relu2 / relu2.sum(axis=-1, keepdims=True)),
    }
    assert set(expected) == set(at.ATTENTIONS)
    for kind, value in expected.items():
        assert at.retrieval_error(kind, theta, scores, values, train_length=L) == pytest.approx(
            value, rel=1e-12
        )


def test_row_normalized_relu2_has_no_parameter_and_handles_empty_rows():
    rng = np.random.default_rng(8)
    scores, values = at.retrieval_task(30, 16, rng, distractor_mean=-1.0)
    assert at.fit_attention_parameter("relu2_row", scores, values) == 1.0
    errors = [at.retrieval_error("relu2_row", t, scores, values) for t in (1e-3, 1.0, 1e3)]
    assert errors[0] == errors[1] == errors[2]  # theta cancels (positive homogeneity)
    # a row with no positive score gets zero weights: output 0, error 1
    negative = -np.ones((1, 5))
    assert at.retrieval_error("relu2_row", 1.0, negative, np.ones((1, 5))) == 1.0


def test_unknown_attention_is_refused():
    scores, values = at.retrieval_task(4, 8, np.random.default_rng(0))
    with pytest.raises(ValueError, match="kind must be one of"):
        at.fit_attention_parameter("relu3", scores, values)
    with pytest.raises(ValueError, match="kind must be one of"):
        at.retrieval_error("relu3", 1.0, scores, values)


def test_spike_over_bulk_with_a_flat_bulk_is_the_closed_form():
    # bulk_sd = 0: one logit s over n - 1 logits mu, p_1 = 1 / (1 + (n - 1) e^(mu - s))
    spike, mu, n = np.array([3.0, 0.0, -2.0, 40.0]), 0.5, 33
    p1 = 1 / (1 + (n - 1) * np.exp(mu - spike))
    closed = -p1 * np.log(p1) - (1 - p1) * np.log((1 - p1) / (n - 1))
    got = at.spike_over_bulk_entropy(spike, mu, 0.0, n, np.random.default_rng(0))
    np.testing.assert_allclose(got, closed, rtol=1e-12, atol=1e-15)


def test_spike_over_bulk_rows_longer_than_a_block_go_one_at_a_time(monkeypatch):
    # A row longer than the block (n > _BULK_BLOCK) is drawn alone: still the flat bulk's closed form.
    monkeypatch.setattr("attnscale.theory.entropy._BULK_BLOCK", 16)
    spike, mu, n = np.array([3.0, -2.0, 9.0]), 0.5, 33
    p1 = 1 / (1 + (n - 1) * np.exp(mu - spike))
    closed = -p1 * np.log(p1) - (1 - p1) * np.log((1 - p1) / (n - 1))
    got = at.spike_over_bulk_entropy(spike, mu, 0.0, n, np.random.default_rng(0))
    np.testing.assert_allclose(got, closed, rtol=1e-12, atol=1e-15)


def test_spike_far_below_the_bulk_leaves_partiii_iid_row():
    # the spike carries no weight: n - 1 i.i.d. N(mu, a^2) logits, whose expected
    # entropy is exact (attnscale.expected_entropy, quadrature)
    a, n, rows = 1.7, 17, 20000
    h = at.spike_over_bulk_entropy(np.full(rows, -1e3), 2.0, a, n, np.random.default_rng(1))
    exact = at.expected_entropy(a, n - 1)
    se = h.std(ddof=1) / np.sqrt(rows)
    assert abs(h.mean() - exact) < 4 * se
    assert abs(float(at.expected_entropy(a, n)) - exact) > 8 * se  # n keys, not n - 1, is excluded


def test_spike_over_bulk_draws_like_one_array_whatever_the_blocks(monkeypatch):
    spike = np.linspace(0.0, 12.0, 35).reshape(5, 7)
    bulk_mean, bulk_sd, n = np.linspace(-1, 1, 7), 2.5, 300
    expected_draws = np.random.default_rng(2).standard_normal((5, 7, n - 1))
    logits = np.concatenate([spike[..., None], bulk_mean[:, None] + bulk_sd * expected_draws], axis=-1)
    direct = at.softmax_entropy(logits)
    monkeypatch.setattr("attnscale.theory.entropy._BULK_BLOCK", 1000)  # three rows a block
    blocked = at.spike_over_bulk_entropy(spike, bulk_mean, bulk_sd, n, np.random.default_rng(2))
    np.testing.assert_array_equal(blocked, direct)
    assert np.all((blocked >= 0) & (blocked <= np.log(n)))


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0.0, 0.0, -1.0, 8), ValueError, "bulk_sd must be >= 0"),
        ((0.0, np.nan, 1.0, 8), ValueError, "bulk_mean must be finite"),
        ((0.0, 0.0, 1.0, 1), ValueError, "n must be >= 2"),
        ((0.0, 0.0, 1.0, 8.0), TypeError, "n must be an integer"),
        ((np.zeros(3), np.zeros(4), 1.0, 8), ValueError, "must broadcast together"),
        (("a", 0.0, 1.0, 8), TypeError, "spike must be a real number"),
    ],
)
def test_spike_over_bulk_refuses_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        at.spike_over_bulk_entropy(*args, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be a numpy"):
        at.spike_over_bulk_entropy(0.0, 0.0, 1.0, 8, 0)


def test_length_rules_default_to_a_training_length_of_512():
    # Both rules' default L is 512: against their closed forms at L = 512, the log_L n rule
    # log(n) / log(512) / sqrt(d) and the sqrt(alpha_L^2 + 2 log(n / 512)) rule.  A default of 513
    # moves either by over 1e-4 relative at n = 4096, far outside rtol 1e-12.
    n, d, alpha_train = 4096.0, 64.0, 1.0
    assert float(at.entropy_invariant_scale(n, d)) == pytest.approx(
        np.log(n) / np.log(512.0) / np.sqrt(d), rel=1e-12
    )
    assert float(at.entropy_matching_scale(n, alpha_train)) == pytest.approx(
        np.sqrt(alpha_train**2 + 2.0 * np.log(n / 512.0)), rel=1e-12
    )
    # the smallest head dimension, d = 1, is accepted: the rule without its 1/sqrt(d)
    assert float(at.entropy_invariant_scale(n, 1.0)) == pytest.approx(np.log(n) / np.log(512.0), rel=1e-12)


def test_matching_scale_is_zero_below_reach_and_exact_just_above_it():
    # alpha(n) = sqrt(max(alpha_L^2 + 2 log(n / L), 0)): 0 when the bracket is negative (n = L/2,
    # alpha_L = 1: 1 - 2 log 2 < 0), and sqrt(1e-6) = 1e-3 when it is 1e-6.  A floor of 1e-3 under
    # the bracket would give sqrt(1e-3) = 0.03 in both.
    assert float(at.entropy_matching_scale(256, 1.0, train_length=512)) == 0.0
    alpha_train = np.sqrt(2.0 * np.log(2.0) + 1e-6)
    assert float(at.entropy_matching_scale(256, alpha_train, train_length=512)) == pytest.approx(
        1e-3, rel=1e-6
    )
