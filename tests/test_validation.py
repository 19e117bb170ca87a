"""Every public function refuses bad input with an error that names the argument.

For each function a valid call is listed, with the kind of each argument;
each kind has a set of bad values.  Replacing one argument at a time by a bad
value must raise ValueError or TypeError whose message contains the
argument's name: never a NaN, never a traceback from deep inside NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import attnscale as at

ROW = np.array([0.3, -1.2, 2.0])
RNG = np.random.default_rng(0)

BAD = {
    "scores": [
        ([], ValueError),
        ([1.0, np.nan], ValueError),
        ([np.inf, 0.0], ValueError),
        (["a", "b"], TypeError),
        ([1 + 2j], TypeError),
        (None, TypeError),
    ],
    "scale": [
        (-1.0, ValueError),
        (np.nan, ValueError),
        (np.inf, ValueError),
        ("big", TypeError),
        ([], ValueError),
        (None, TypeError),
    ],
    "keys": [
        (1.0, ValueError),
        (0, ValueError),
        (-3.0, ValueError),
        (np.nan, ValueError),
        (np.inf, ValueError),
        ("many", TypeError),
        ([], ValueError),
    ],
    "dimension": [
        (1.0, ValueError),
        (0.5, ValueError),
        (np.nan, ValueError),
        ("wide", TypeError),
        ([], ValueError),
    ],
    "count": [(0, ValueError), (1.5, TypeError), (True, TypeError), ("3", TypeError)],
    "fan": [(0.5, ValueError), (0, ValueError), (np.nan, ValueError), ("wide", TypeError), ([], ValueError)],
    "std": [
        (-1.0, ValueError),
        (np.nan, ValueError),
        (np.inf, ValueError),
        ("big", TypeError),
        ([], ValueError),
    ],
    "length": [(1, ValueError), (2.5, TypeError), (None, TypeError)],
}

# function, valid keyword arguments, the kind of each argument to corrupt
CALLS = [
    (at.softmax, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.softmax_jacobian, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.gradient_l1, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.gradient_objective, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.gradient_frobenius, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.collision_probability, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.renyi2_entropy, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.softmax_entropy, dict(s=ROW, alpha=1.0), dict(s="scores", alpha="scale")),
    (at.gaussian_log_mgf, dict(alpha=1.0), dict(alpha="scale")),
    (at.gaussian_objective, dict(alpha=1.0, n=40), dict(alpha="scale", n="keys")),
    (at.gaussian_alpha_star, dict(n=40), dict(n="keys")),
    (at.gaussian_meanfield_entropy, dict(alpha=1.0, n=40), dict(alpha="scale", n="keys")),
    (at.cosine_density, dict(s=0.3, d=16), dict(d="dimension")),
    (at.cosine_log_mgf, dict(alpha=1.0, d=16), dict(alpha="scale", d="dimension")),
    (at.cosine_objective, dict(alpha=1.0, n=40, d=16), dict(alpha="scale", n="keys", d="dimension")),
    (at.cosine_alpha_star, dict(n=40, d=16), dict(n="keys", d="dimension")),
    (at.cosine_alpha_star_large_d, dict(n=40, d=16), dict(n="keys", d="dimension")),
    (at.theory.special.cosine_log_mgf_parts, dict(alpha=1.0, d=16), dict(alpha="scale", d="dimension")),
    (at.expected_collision, dict(alpha=1.0, n=40), dict(alpha="scale", n="keys")),
    (at.expected_gradient, dict(alpha=1.0, n=40), dict(alpha="scale", n="keys")),
    (at.expected_entropy, dict(alpha=1.0, n=40), dict(alpha="scale", n="keys")),
    (at.expected_max_weight, dict(alpha=1.0, n=40), dict(alpha="scale", n="keys")),
    (at.expected_gradient, dict(alpha=1.0, n=40, scores="cosine", d=16), dict(d="dimension")),
    (at.gradient_limit, dict(n=40), dict(n="keys")),
    (at.cosine_law, dict(d=16), dict(d="dimension")),
    (at.typical_row_scales, dict(n=8, rows=10, seeds=2), dict(n="count", rows="count", seeds="count")),
    (at.yarn_mscale, dict(stretch=2.0), dict(stretch="std")),
    (
        at.longrope_attention_factor,
        dict(factor=32.0, train_length=4096),
        dict(factor="std", train_length="keys"),
    ),
    (at.llama4_attention_scale, dict(n=9000), dict(n="fan", floor_scale="fan", attn_scale="scale")),
    (
        at.infoscale_factor,
        dict(n=1024, d=128, train_length=512),
        dict(n="keys", d="fan", train_length="keys"),
    ),
    (at.critical_scale, dict(n=100, rho=0.2), dict(n="keys", rho="std")),
    (at.adaptive_temperature, dict(entropy=2.0), dict(entropy="scale")),
    (
        at.head_scale_from_entropy,
        dict(entropy=3.0, train_length=512),
        dict(entropy="std", train_length="keys"),
    ),
    (
        at.entropy_matched_scale,
        dict(n=1024, train_length=512, alpha_train=1.0),
        dict(n="keys", train_length="keys", alpha_train="std"),
    ),
    (at.gradient_fraction, dict(alpha=1.0, n=40), dict(alpha="scale", n="keys")),
    (at.gradient_fraction, dict(alpha=1.0, n=40, d=16), dict(d="dimension")),
    (at.best_causal_scale, dict(max_length=64), dict(max_length="length")),
    (
        at.exact_gradient_shares,
        dict(alpha=1.0, max_length=64, nodes=8),
        dict(alpha="scale", max_length="length", nodes="count"),
    ),
    (at.entropy_invariant_scale, dict(n=40, d=16), dict(n="keys")),
    (at.entropy_matching_scale, dict(n=40, alpha_train=1.0), dict(n="keys", alpha_train="scale")),
    (at.sphere_saddle_point, dict(lam=1.0), dict(lam="scale")),
    (at.laplace_slope, dict(lam=1.0), dict(lam="scale")),
    (at.sphere_entropy_slope, dict(lam=1.0, d=16), dict(lam="scale", d="dimension")),
    (
        at.spike_over_bulk_entropy,
        dict(spike=5.0, bulk_mean=0.0, bulk_sd=1.0, n=16, rng=RNG),
        dict(spike="scores", bulk_mean="scores", bulk_sd="std", n="length"),
    ),
    (at.sample_gaussian_scores, dict(samples=2, n=4, rng=RNG), dict(samples="count", n="count")),
    (at.sample_cosine_scores, dict(samples=2, n=4, d=8, rng=RNG), dict(samples="count", d="dimension")),
    (at.sampled_objective, dict(scores=np.ones((2, 3)), alphas=[1.0]), dict(scores="scores", alphas="scale")),
    (at.median_interval, dict(values=np.arange(10.0)), dict(values="scores")),
    (
        at.conditional_objective,
        dict(alphas=[1.0, 3.0], n=8, rows=5, rng=RNG),
        dict(alphas="scale", n="count", rows="count"),
    ),
    (
        at.conditional_objective,
        dict(alphas=[1.0, 3.0], n=8, rows=5, rng=RNG, scores="cosine", d=16),
        dict(d="dimension"),
    ),
    (
        at.conditional_mean_log_scale,
        dict(n=64, rows=50, seeds=2),
        dict(n="count", rows="count", seeds="count"),
    ),
    (
        at.row_best_scale,
        dict(s=np.array([[0.3, -1.2, 2.0], [0.0, 1.0, 0.5]])),
        dict(s="scores"),
    ),
    (at.retrieval_task, dict(samples=2, n=4, rng=RNG), dict(samples="count", n="count", signal="scale")),
    (at.xavier_std, dict(fan_in=4, fan_out=8), dict(fan_in="fan", fan_out="fan")),
    (at.he_std, dict(fan_in=4), dict(fan_in="fan")),
    (at.uniform_bound, dict(std=0.5), dict(std="scale")),
    (at.truncated_normal_std, dict(cut=2.0), dict(cut="scale")),
    (at.standard_scale, dict(d=64), dict(d="fan")),
    (at.logn_beyond_training_scale, dict(n=40, d=16, train_length=512), dict(n="keys", d="fan")),
    (at.yarn_scale, dict(n=40, d=16, train_length=512), dict(n="keys", d="fan")),
    (at.scalable_softmax_scale, dict(n=40, d=16, s=0.2), dict(n="keys", d="fan", s="scale")),
    (at.qknorm_initial_scale, dict(train_length=512), dict(train_length="keys")),
    (at.recommend_scale, dict(d=64, n=40), dict(d="dimension", n="keys")),
    (at.retrieval_batch, dict(replicas=1, batch=2, n=4, m=3, rng=RNG), dict(batch="count", m="count")),
    (at.init_projections, dict(replicas=1, d=4, m=3, rng=RNG), dict(replicas="count", d="count")),
    (
        at.attention_scores,
        dict(
            w_query=np.ones((1, 1, 2, 3)),
            w_key=np.ones((1, 1, 2, 3)),
            keys=np.ones((1, 2, 4, 3)),
            queries=np.ones((1, 2, 3)),
        ),
        dict(w_query="scores", keys="scores"),
    ),
    (
        at.layer_second_moments,
        dict(architecture="plain-he", depth=3, width=8, rng=RNG),
        dict(depth="count", width="count"),
    ),
    (
        at.activation_second_moments,
        dict(activation=np.tanh, depth=3, width=8, rng=RNG),
        dict(depth="count", width="count", weight_std="std"),
    ),
    (
        at.log_growth_law,
        dict(architecture="rezero", width=8, branch_scale=0.5),
        dict(width="count", branch_scale="scale"),
    ),
    (at.accumulation_scale, dict(gaps=np.array([0.5, 1.0, 2.0])), dict(gaps="scores")),
    (at.iid_critical_scale, dict(n=1000), dict(n="keys")),
    (
        at.planted_length_factor,
        dict(top=8.0, bulk_mean=0.0, bulk_sd=1.0, n=4096, train_length=64),
        dict(top="scores", bulk_sd="std", n="keys", train_length="keys"),
    ),
]

CASES = [
    pytest.param(function, kwargs, name, bad, error, id=f"{function.__name__}-{name}-{k}")
    for function, kwargs, kinds in CALLS
    for name, kind in kinds.items()
    for k, (bad, error) in enumerate(BAD[kind])
]


@pytest.mark.parametrize(("function", "kwargs", "name", "bad", "error"), CASES)
def test_bad_argument_is_refused(function, kwargs, name, bad, error):
    with pytest.raises(error) as caught:
        function(**{**kwargs, name: bad})
    assert name in str(caught.value), f"the message does not name '{name}': {caught.value}"


@pytest.mark.parametrize(("function", "kwargs", "kinds"), CALLS, ids=lambda x: getattr(x, "__name__", ""))
def test_valid_call_is_finite(function, kwargs, kinds):
    result = function(**kwargs)
    if isinstance(result, at.Recommendation):
        result = tuple(e.scale for e in result.entries)
    if isinstance(result, at.TypicalRowScales):
        result = (*result.median, *result.mean_log, *result.per_row)
    if isinstance(result, at.ScoreLaw):
        result = result.score_range
    values = result if isinstance(result, tuple) else (result,)
    for value in values:
        assert np.all(np.isfinite(np.asarray(value, dtype=float)))


def test_every_public_function_is_covered():
    covered = {function.__name__ for function, _, _ in CALLS}
    public = {
        name for name in at.__all__ if callable(getattr(at, name)) and not isinstance(getattr(at, name), type)
    }
    not_numeric = {
        "check_close",
        "check_holds",  # takes a callable: bad input tested in tests/test_checks.py
        "check_true",
        "use_book_style",
        "retrieval_error",
        "fit_attention_parameter",
        "fit_length_factor",  # takes a callable: bad input tested in tests/test_length_rules.py
        "activation_second_moment",  # takes a callable: see test_activation_must_be_callable
        "selu_constants",  # no arguments
        # return a dataclass, a dict or nested tuples; tests/test_training.py checks their arguments
        "train_attention",
        "train_at_best_rate",
        "evaluate_attention",
        "attention_loss_and_gradients",
        "format_number",  # prose formatting: bad input tested in tests/test_formatting.py
        "format_uncertain",
        "gaussian_law",  # no arguments
        "seed_interval",  # return a pair: tests/test_intervals.py checks them and their arguments
        "crossed_interval",  # also a pair (mean, half): tests/test_intervals.py
        "crossed_contrast",  # a pair, and crossed_components a named tuple: tests/test_intervals.py
        "crossed_components",
        "format_interval",  # table formatting: bad input tested in tests/test_formatting.py
        "paired_difference",
        "welch_tolerance",  # tests/test_intervals.py checks its arguments
        "answers",  # returns text; tests/test_advice.py checks its arguments
        "diagnose_law",  # returns a dataclass; tests/test_diagnose.py checks its arguments
    }
    assert public - not_numeric <= covered, sorted(public - not_numeric - covered)


def test_entropy_invariant_scale_domain():
    with pytest.raises(ValueError, match="d must be >= 1"):
        at.entropy_invariant_scale(40, 0.5)
    with pytest.raises(ValueError, match="train_length must be >= 2"):
        at.entropy_invariant_scale(40, 64, train_length=1)
    assert at.entropy_invariant_scale(512, 64) == pytest.approx(1 / 8)
    assert at.entropy_invariant_scale(512**2, 64) == pytest.approx(2 / 8)


def test_cosine_density_domain():
    with pytest.raises(ValueError, match="s must lie in"):
        at.cosine_density(1.5, 8)


def test_retrieval_helpers_refuse_bad_kind_and_theta():
    scores, values = at.retrieval_task(3, 8, RNG)
    with pytest.raises(ValueError, match="kind must be one of"):
        at.retrieval_error("gelu", 1.0, scores, values)
    with pytest.raises(ValueError, match="theta"):
        at.retrieval_error("softmax", -1.0, scores, values)


def test_activation_must_be_callable():
    with pytest.raises(TypeError, match="activation must be callable"):
        at.activation_second_moment(3.0)
    with pytest.raises(TypeError, match="activation must be callable"):
        at.activation_second_moments("relu", 3, 8, RNG)
