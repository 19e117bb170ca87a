"""Initialization helpers and the deep-network simulator against independent routes."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import attnscale as at
from attnscale.theory import deepnet


def test_truncated_normal_std_against_mpmath():
    for cut in (0.5, 1.0, 2.0, 3.0):
        with mp.workdps(40):
            c = mp.mpf(cut)
            mass = mp.quad(lambda x: mp.npdf(x), [-c, c])
            var = mp.quad(lambda x: x * x * mp.npdf(x), [-c, c]) / mass
        assert float(at.truncated_normal_std(cut)) == pytest.approx(float(mp.sqrt(var)), rel=1e-14)


def test_selu_constants_match_the_published_values():
    scale, alpha = at.selu_constants()
    assert scale == pytest.approx(1.0507009873554805, rel=1e-13)
    assert alpha == pytest.approx(1.6732632423543772, rel=1e-13)


def test_activation_second_moment_against_mpmath():
    with mp.workdps(30):
        exact = mp.quad(lambda x: mp.tanh(x) ** 2 * mp.npdf(x), [-mp.inf, 0, mp.inf])
    assert at.activation_second_moment(np.tanh) == pytest.approx(float(exact), rel=1e-11)


def test_simple_stds():
    assert float(at.xavier_std(100, 300)) == pytest.approx(np.sqrt(2 / 400))
    assert float(at.he_std(128)) == pytest.approx(np.sqrt(2 / 128))
    assert float(at.uniform_bound(1.0)) == pytest.approx(np.sqrt(3))


@pytest.mark.parametrize("architecture", deepnet.ARCHITECTURES)
def test_backward_pass_matches_finite_differences(architecture):
    """<grad, v> equals the directional derivative of <g, f(x)> along v."""
    rng = np.random.default_rng(1)
    depth, width = 4, 16
    weights = deepnet._build(architecture, depth, width, rng)
    x = rng.standard_normal((3, width))
    g = rng.standard_normal((3, width))
    v = rng.standard_normal((3, width))
    scale = 0.7 if architecture == "rezero" else 0.0
    _, cache = deepnet._forward(architecture, weights, x, scale)
    grad_x = deepnet._backward(architecture, weights, cache, g)[0]

    def loss(inputs):
        return float(np.sum(g * deepnet._forward(architecture, weights, inputs, scale)[0][-1]))

    h = 1e-6
    numeric = (loss(x + h * v) - loss(x - h * v)) / (2 * h)
    assert float(np.sum(grad_x * v)) == pytest.approx(numeric, rel=1e-6, abs=1e-8)


def test_pre_norm_grows_linearly_on_average():
    rng = np.random.default_rng(3)
    ends = [at.layer_second_moments("pre-norm", 20, 128, rng)[0][-1] for _ in range(6)]
    assert np.mean(ends) == pytest.approx(21.0, rel=0.15)


def test_architecture_is_checked():
    with pytest.raises(ValueError, match="architecture must be one of"):
        at.layer_second_moments("mlp", 3, 8, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("architecture", "gain"), [("plain-naive", 8 / 2), ("plain-xavier", 1 / 2), ("plain-he", 1.0)]
)
def test_plain_networks_scale_the_second_moment_as_derived(architecture, gain):
    """E[x_{l+1}^2] = m sigma^2 E[relu(h)^2] = (m sigma^2 / 2) E[x_l^2], exactly in expectation."""
    rng = np.random.default_rng(11)
    depth, width = 4, 8
    ends = [at.layer_second_moments(architecture, depth, width, rng, samples=16)[0] for _ in range(3000)]
    ratio = np.mean([end[-1] / end[0] for end in ends])
    assert ratio == pytest.approx(gain**depth, rel=0.12)


@pytest.mark.parametrize("architecture", ["residual", "pre-norm", "rezero", "skipinit", "fixup"])
def test_identity_path_of_an_unnormalized_identity_carries_the_output_gradient(architecture):
    """Without a norm on the identity path, following it alone returns the output gradient unchanged."""
    rng = np.random.default_rng(5)
    backward = at.layer_second_moments(architecture, 6, 16, rng, through_branches=False)[1]
    assert np.allclose(backward, backward[-1], rtol=1e-14, atol=0)


def test_post_norm_identity_path_loses_about_half_per_block():
    """Each RMSNorm backward divides by rms(x + F(x)), about sqrt(2)."""
    rng = np.random.default_rng(6)
    depth = 20
    ratios = [
        (lambda b: b[0] / b[-1])(
            at.layer_second_moments("post-norm", depth, 128, rng, through_branches=False)[1]
        )
        for _ in range(4)
    ]
    per_block = np.exp(np.mean(np.log(ratios)) / depth)
    assert per_block == pytest.approx(0.5, abs=0.03)
    assert per_block != pytest.approx(2**-0.5, abs=0.03)


def test_fixup_and_rezero_start_as_the_identity():
    for architecture in ("fixup", "rezero"):
        forward, backward = at.layer_second_moments(architecture, 5, 16, np.random.default_rng(8))
        assert np.allclose(forward, forward[0], rtol=1e-14) and np.allclose(
            backward, backward[-1], rtol=1e-14
        )


def test_through_branches_must_be_a_bool():
    with pytest.raises(TypeError, match="through_branches"):
        at.layer_second_moments("post-norm", 3, 8, np.random.default_rng(0), through_branches="no")


def test_per_sample_moments_average_to_the_batch_moments():
    for architecture, scale in (("residual", 0.0), ("rezero", [0.0, 0.5, 1.0]), ("plain-he", 0.0)):
        batch = at.layer_second_moments(architecture, 5, 16, np.random.default_rng(4), branch_scale=scale)
        each = at.layer_second_moments(
            architecture, 5, 16, np.random.default_rng(4), branch_scale=scale, per_sample=True
        )
        for b, e in zip(batch, each, strict=True):
            assert e.shape == (*b.shape, 64)
            np.testing.assert_allclose(e.mean(axis=-1), b, rtol=1e-13)


def test_block_law_moments_are_exact():
    """E R = 1 + a^2 and E R^2 = 1 + 2a^2 + 4a^2/m + a^4 (m+2)(m+5)/m^2 (noncentral chi-square)."""
    for m in (8, 32, 128, 2048):
        for a in (0.3, 1.0):
            first, second = deepnet._block_expectation(m, a, (lambda r: r, lambda r: r**2))
            assert first == pytest.approx(1 + a**2, rel=1e-12)
            exact_second = 1 + 2 * a**2 + 4 * a**2 / m + a**4 * (m + 2) * (m + 5) / m**2
            assert second == pytest.approx(exact_second, rel=1e-12)


def test_block_log_law_against_sampling_the_reduced_law():
    """Sample K, S = chi^2_K, g_1 and C = chi^2_(m-1) directly: an independent route to E log R and Var."""
    rng = np.random.default_rng(12)
    m, a, draws = 16, 0.8, 400_000
    k = rng.binomial(m, 0.5, draws)
    s = np.where(k > 0, rng.chisquare(np.maximum(k, 1)), 0.0)
    t_sq = 2 * a**2 * s / m**2
    log_r = np.log((1 + np.sqrt(t_sq) * rng.standard_normal(draws)) ** 2 + t_sq * rng.chisquare(m - 1, draws))
    mean, var = deepnet.log_growth_law("rezero", m, a)
    assert mean == pytest.approx(log_r.mean(), abs=4 * log_r.std() / np.sqrt(draws))
    assert var == pytest.approx(log_r.var(), rel=4 * np.sqrt(2 / draws) * 2)


@pytest.mark.parametrize(
    ("architecture", "scale"), [("rezero", 1.0), ("residual", 0.0), ("plain-naive", 0.0)]
)
def test_log_growth_law_against_simulated_networks(architecture, scale):
    """One input through `depth` random layers: the log growth has depth times the law's mean and variance."""
    rng = np.random.default_rng(13)
    depth, width, networks = 3, 24, 3000
    logs = np.array(
        [
            np.log(
                (lambda f: f[-1] / f[0])(
                    at.layer_second_moments(
                        architecture, depth, width, rng, samples=1, branch_scale=scale, gradients=False
                    )[0]
                )
            )
            for _ in range(networks)
        ]
    )
    mean, var = deepnet.log_growth_law(architecture, width, scale)
    assert logs.mean() == pytest.approx(depth * mean, abs=4 * logs.std() / np.sqrt(networks))
    assert logs.var() == pytest.approx(depth * var, rel=0.15)


def test_plain_log_growth_law_matches_the_digamma_formula_and_scales_with_the_std():
    he_mean, he_var = deepnet.log_growth_law("plain-he", 64)
    naive_mean, naive_var = deepnet.log_growth_law("plain-naive", 64)
    assert naive_mean - he_mean == pytest.approx(np.log(64 / 2), rel=1e-13)
    assert naive_var == pytest.approx(he_var, rel=1e-13)
    # large-width limit: Var log R ~ 5/m (Hanin and Nica)
    assert 256 * deepnet.log_growth_law("plain-he", 256)[1] == pytest.approx(5.0, rel=0.05)


def test_log_growth_law_refuses_other_architectures():
    with pytest.raises(ValueError, match="log_growth_law covers"):
        deepnet.log_growth_law("post-norm", 16)
    with pytest.raises(ValueError, match="branch_scale"):
        deepnet.log_growth_law("rezero", 16, -1.0)
