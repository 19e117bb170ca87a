"""The rotary extensions (practice.length_rules) and the length-factor fit, each by a second route."""

from __future__ import annotations

import math
from dataclasses import replace

import mpmath
import numpy as np
import pytest

from attnscale.practice.length_rules import (
    interpolation_frequency_factors,
    matched_rope_base,
    qwen_ntk_alpha,
    rotary_pairs_within,
    rotary_wavelengths,
    yarn_frequency_factors,
)
from attnscale.support.factor_fit import fit_length_factor

# -- the rotary regime ----------------------------------------------------------------


@pytest.mark.parametrize("base", [10.0, 27.1, 1e4, 5e5, 1e6])
@pytest.mark.parametrize("head_dim", [8, 32, 64, 128])
def test_wavelengths_and_pairs_against_mpmath(base, head_dim):
    exact = [2 * mpmath.pi * mpmath.mpf(base) ** (mpmath.mpf(2 * i) / head_dim) for i in range(head_dim // 2)]
    got = rotary_wavelengths(base, head_dim)
    assert np.allclose(got, [float(w) for w in exact], rtol=1e-13, atol=0)
    for length in (8, 64, 512, 4096, 8192, 131072):
        assert rotary_pairs_within(base, head_dim, length) == sum(w <= length for w in exact)


def test_pairs_of_named_models():
    # the regimes the issue and the chapter name: a 4k base-1e4 model, Llama 3 (8k, 5e5), the book's models
    assert rotary_pairs_within(1e4, 128, 4096) == 46
    assert rotary_pairs_within(5e5, 128, 8192) == 35
    assert rotary_pairs_within(1e4, 32, 64) == 5


@pytest.mark.parametrize("length", [16, 32, 64, 128, 256])
@pytest.mark.parametrize(("reference_base", "reference_length"), [(1e4, 4096), (5e5, 8192), (1e4, 2048)])
def test_matched_base_keeps_the_share(length, reference_base, reference_length):
    theta = matched_rope_base(length, reference_base, reference_length)
    share = math.log(reference_length / (2 * math.pi)) / math.log(reference_base)
    assert math.log(length / (2 * math.pi)) / math.log(theta) == pytest.approx(share, rel=1e-12)
    for head_dim in (32, 64, 128):
        # the counts agree to one pair (the share of a discrete count)
        half = head_dim // 2
        small = rotary_pairs_within(theta, head_dim, length) / half
        large = rotary_pairs_within(reference_base, head_dim, reference_length) / half
        assert abs(small - large) <= 1.0 / half + 1e-12


def test_matched_base_refuses_a_reference_outside_the_range():
    with pytest.raises(ValueError, match="reference"):
        matched_rope_base(64, reference_base=100.0, reference_length=4096)  # every pair within 4096
    with pytest.raises(ValueError, match="length"):
        matched_rope_base(4)
    with pytest.raises(ValueError, match="base"):
        matched_rope_base(64, reference_base=float("nan"))


# -- the published extensions ---------------------------------------------------------


def _yarn_by_the_release(base, dim, original, scale, beta_fast=32, beta_slow=1):
    """YaRN's released recipe written out step by step (scaled_rope, find_correction_range and the ramp)."""

    def correction_dim(rotations):
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
    half = dim // 2
    if low == high:
        high += 0.001
    extrapolation = [base ** -(2 * i / dim) for i in range(half)]
    interpolation = [f / scale for f in extrapolation]
    out = []
    for i in range(half):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        mask = 1.0 - ramp
        out.append((interpolation[i] * (1 - mask) + extrapolation[i] * mask) / extrapolation[i])
    return out


@pytest.mark.parametrize("base", [27.1, 1e4, 5e5])
@pytest.mark.parametrize("head_dim", [16, 32, 128])
@pytest.mark.parametrize(("train_length", "stretch"), [(64, 4.0), (4096, 8.0), (8192, 16.0), (64, 1.5)])
def test_yarn_against_the_release(base, head_dim, train_length, stretch):
    got = yarn_frequency_factors(base, head_dim, train_length, stretch)
    want = _yarn_by_the_release(base, head_dim, train_length, stretch)
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    assert np.all((got >= 1 / stretch - 1e-15) & (got <= 1 + 1e-15))
    assert np.all(np.diff(got) <= 1e-15)  # slower pairs are interpolated at least as much


def test_yarn_extremes():
    # a pair turning more than 32 times in L keeps its frequency; one turning less than once gets 1/s
    got = yarn_frequency_factors(1e4, 128, 4096, 8.0)
    wavelengths = rotary_wavelengths(1e4, 128)
    assert np.all(got[4096 / wavelengths > 40] == 1.0)
    assert np.allclose(got[4096 / wavelengths < 0.5], 1 / 8)


def test_interpolation_and_qwen():
    assert np.all(interpolation_frequency_factors(32, 8.0) == 0.125)
    # Qwen's release: ntk_alpha = max(2 ** ceil(log2(T / L) + 1) - 1, 1), tried on every T to 64 L
    for length in range(1, 64 * 64 + 1, 7):
        context_value = math.log(length / 64, 2) + 1
        assert qwen_ntk_alpha(length, 64) == max(2 ** math.ceil(context_value) - 1, 1)
    assert qwen_ntk_alpha(8 * 4096, 4096) == 15


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: interpolation_frequency_factors(32, 0.5), "stretch"),
        (lambda: interpolation_frequency_factors(31, 2.0), "head_dim"),
        (lambda: yarn_frequency_factors(1e4, 32, 64, 2.0, beta_fast=1.0, beta_slow=2.0), "beta_slow"),
        (lambda: yarn_frequency_factors(1.0, 32, 64, 2.0), "base"),
        (lambda: qwen_ntk_alpha(0, 64), "length"),
        (lambda: rotary_pairs_within(1e4, 32, 0), "length"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


# -- the model under a frequency rule -------------------------------------------------


def test_interpolated_rotation_is_the_rotation_at_scaled_positions():
    jnp = pytest.importorskip("jax.numpy")
    from attnscale.models.lm import _rope

    x = jnp.asarray(np.random.default_rng(0).normal(size=(40, 2, 16)), dtype=jnp.float32)
    stretch = 4.0
    got = np.asarray(_rope(x, 100.0, tuple(interpolation_frequency_factors(16, stretch))))
    # second route: rotate by hand at positions p / s
    half = 8
    angles = (np.arange(40) / stretch)[:, None] * 100.0 ** (-np.arange(half) / half)[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    x1, x2 = np.asarray(x)[..., :half], np.asarray(x)[..., half:]
    want = np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    assert np.allclose(got, want, atol=2e-6)
    # unit factors change nothing
    assert np.array_equal(np.asarray(_rope(x, 100.0, (1.0,) * half)), np.asarray(_rope(x, 100.0)))


def test_config_checks_the_frequency_factors():
    pytest.importorskip("jax")
    from attnscale.models.lm import LMConfig

    config = LMConfig(d_model=32, n_heads=2)
    with pytest.raises(ValueError, match="rope_frequency_factors"):
        replace(config, rope_frequency_factors=(1.0,) * 3)
    with pytest.raises(ValueError, match="rope_frequency_factors"):
        replace(config, rope_frequency_factors=(1.0,) * 7 + (float("nan"),))


def test_training_under_a_unit_factor_is_training_without_one():
    pytest.importorskip("jax")
    from attnscale.models import lm_train, tasks
    from attnscale.models.lm import LMConfig

    vocabulary = tasks.recall_vocabulary(64, 16)
    config = LMConfig(
        d_model=16, n_heads=2, n_layers=1, d_mlp=32, steps=3, batch=4, train_length=32, vocab=vocabulary.size
    )

    def batches(step):
        return tasks.associative_recall(32, 4, tasks.step_seed(0, step), vocabulary)

    plain = lm_train.train_task(config, batches, 0)
    ones = lm_train.train_task(config, batches, 0, factor=np.ones((1, 2, 32)))
    doubled = lm_train.train_task(config, batches, 0, factor=np.full((1, 2, 32), 2.0))
    assert np.allclose(plain.losses, ones.losses, rtol=1e-6)
    assert not np.allclose(plain.losses[1:], doubled.losses[1:], rtol=1e-3)  # the factor reaches the loss
    with pytest.raises(ValueError, match="factor"):
        lm_train.train_task(config, batches, 0, factor=np.ones((1, 2, 31)))


# -- the practitioner's protocol ------------------------------------------------------


def _curve(optimum, noise_sd, windows, models=None, seed=0):
    rng = np.random.default_rng(seed)
    shape = (windows,) if models is None else (models, windows)
    window_noise = rng.normal(0, noise_sd, shape)
    window_tilt = rng.normal(0, noise_sd, shape)  # each window prefers a slightly different factor

    def loss_at(factor):
        x = np.log(factor) - np.log(optimum)
        return x**2 + window_tilt * x + window_noise

    return loss_at


def test_fit_recovers_a_known_optimum_and_covers_it():
    grid = 2.0 ** np.linspace(-1, 2.5, 11)
    hits, widths = 0, []
    for seed in range(40):
        fit = fit_length_factor(_curve(1.7, 0.3, 24, seed=seed), grid, resamples=400)
        hits += fit.low <= 1.7 <= fit.high
        widths.append(math.log(fit.high / fit.low))
    # 90% intervals: at least 30 of 40 cover (a binomial 0.9 falls below 31 with probability ~0.04)
    assert hits >= 30, hits
    assert 0.02 < np.median(widths) < 0.6


def test_fit_two_way_is_wider_than_one_way_when_models_differ():
    grid = 2.0 ** np.linspace(-1, 2.5, 11)
    rng = np.random.default_rng(3)
    optima = 1.7 * np.exp(rng.normal(0, 0.15, 5))  # five seeds, each its own optimum

    def loss_at(factor):
        return (np.log(factor) - np.log(optima))[:, None] ** 2 + rng.normal(0, 0.01, (5, 24))

    two_way = fit_length_factor(loss_at, grid)
    one_way = fit_length_factor(lambda f: loss_at(f)[0], grid)
    assert two_way.high / two_way.low > one_way.high / one_way.low


def test_fit_warns_at_the_edge():
    grid = np.array([0.5, 1.0, 1.5, 2.0])
    with pytest.warns(UserWarning, match="end of the grid"):
        fit = fit_length_factor(_curve(4.0, 0.05, 16), grid)
    assert fit.at_edge and fit.factor == 2.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"loss_at": 3.0}, "loss_at"),
        ({"factors": [1.0, 2.0]}, "factors"),
        ({"factors": [0.0, 1.0, 2.0]}, "factors"),
        ({"level": 1.0}, "level"),
        ({"resamples": 0}, "resamples"),
        ({"rng": 3}, "rng"),
        ({"loss_at": lambda f: np.full(4, np.nan)}, "non-finite"),
        ({"loss_at": lambda f: np.ones(int(f * 4))}, "same shape"),
    ],
)
def test_fit_bad_input(kwargs, name):
    arguments = {"loss_at": _curve(1.0, 0.1, 8), "factors": [0.5, 1.0, 2.0]} | kwargs
    with pytest.raises((ValueError, TypeError), match=name):
        fit_length_factor(**arguments)


@pytest.mark.parametrize("length", [32, 64, 128])
@pytest.mark.parametrize("head_dim", [32, 64])
def test_longest_wavelength_base_keeps_the_span(length, head_dim):
    from attnscale.practice.length_rules import longest_wavelength_rope_base

    theta = longest_wavelength_rope_base(length, head_dim)
    span = float(2 * mpmath.pi * mpmath.mpf(1e4) ** (mpmath.mpf(126) / 128)) / 4096  # 13.3 lengths
    assert rotary_wavelengths(theta, head_dim)[-1] / length == pytest.approx(span, rel=1e-12)
    # and it cannot keep the share too: fewer pairs fit within L than in the reference
    assert rotary_pairs_within(theta, head_dim, length) / (head_dim // 2) < 46 / 64
