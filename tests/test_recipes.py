"""Scale recipes, the calculator and its command line.

Every expected value below is recomputed from the released code or the
paper, typed here in plain ``math`` (the file and line it comes from is
named in each test), never through the package function under test.
"""

from __future__ import annotations

import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest

import attnscale as at


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "attnscale", *args], capture_output=True, text=True, check=False
    )


# --- each rule against its published code -----------------------------------------------------


def test_qwen_logn_matches_the_released_logn_list():
    # Qwen-7B modeling_qwen.py, QWenAttention.__init__:
    #   logn_list = [math.log(i, self.seq_length) if i > self.seq_length else 1 for i in range(1, 32768)]
    # applied as query * logn_tensor[:, seq_start:seq_end] (query at 0-based p gets logn_list[p]).
    seq_length, d = 2048, 128
    logn_list = [math.log(i, seq_length) if i > seq_length else 1 for i in range(1, 32768)]
    positions = np.arange(2, 32768)  # n = i keys for the query at 0-based position i - 1
    got = at.logn_beyond_training_scale(positions, d, seq_length) * math.sqrt(d)
    np.testing.assert_allclose(got, logn_list[1:], rtol=1e-14)


def test_yarn_mscale_matches_the_released_get_mscale():
    # YaRN repository, scaled_rope/LlamaDynamicYaRNScaledRotaryEmbedding.py:
    #   def get_mscale(scale=1): return 1.0 if scale <= 1 else 0.1 * math.log(scale) + 1.0
    def get_mscale(scale=1):
        if scale <= 1:
            return 1.0
        return 0.1 * math.log(scale) + 1.0

    stretch = [0.25, 1.0, 1.5, 4.0, 16.0, 32.0, 1e6]
    np.testing.assert_allclose(at.yarn_mscale(stretch), [get_mscale(s) for s in stretch], rtol=1e-15)


def test_yarn_static_is_one_constant_and_dynamic_starts_past_the_training_length():
    # HF transformers modeling_rope_utils.py, _compute_yarn_parameters:
    #   attention_factor = 0.1 * math.log(factor) + 1.0, multiplied into cos and sin (so q and k):
    #   the logits carry its square, at every position.
    d, length, factor = 64, 4096, 4.0
    n = np.array([2, 100, 4096, 8192, 16384, 1e6])
    static = at.yarn_scale(n, d, length, factor=factor) * math.sqrt(d)
    np.testing.assert_allclose(static, (0.1 * math.log(factor) + 1.0) ** 2, rtol=1e-15)
    # dynamic (YaRN repo forward: self.yarn(seq_len / original_max_position_embeddings) when seq_len grows)
    dynamic = at.yarn_scale(n, d, length) * math.sqrt(d)
    expected = [(0.1 * math.log(m / length) + 1.0) ** 2 if m > length else 1.0 for m in n]
    np.testing.assert_allclose(dynamic, expected, rtol=1e-15)


def test_longrope_factor_matches_the_released_formula_and_is_log_l_of_the_window():
    # HF transformers modeling_rope_utils.py, _compute_longrope_parameters:
    #   attention_factor = math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))
    #   with factor = max_position_embeddings / original_max_position_embeddings (1.0 if factor <= 1).
    # Example: a 4096 -> 131072 window, factor 32: sqrt(1 + 5/12) exactly.
    assert float(at.longrope_attention_factor(131072 / 4096, 4096)) == pytest.approx(
        math.sqrt(17 / 12), rel=1e-15
    )
    assert float(at.longrope_attention_factor(0.5, 4096)) == 1.0
    # squared, it is log_L of the configured window sL (the entropy-invariant rule at n = sL)
    s = np.array([1.5, 2.0, 8.0, 64.0])
    np.testing.assert_allclose(
        at.longrope_attention_factor(s, 2048) ** 2, np.log(s * 2048) / np.log(2048), rtol=1e-14
    )


def test_llama4_temperature_matches_the_released_forward():
    # HF transformers models/llama4/modeling_llama4.py, Llama4TextAttention.forward (NoPE layers):
    #   attn_scales = torch.log1p(torch.floor((cache_position.float() + 1.0) / self.floor_scale))
    #                 * self.attn_scale + 1.0 ; query_states = query_states * attn_scales
    # configuration_llama4.py defaults: floor_scale = 8192, attn_scale = 0.1.
    cache_position = np.array([0, 8190, 8191, 8192, 16383, 100_000, 10_000_000])
    expected = [math.log1p(math.floor((p + 1.0) / 8192)) * 0.1 + 1.0 for p in cache_position]
    np.testing.assert_allclose(at.llama4_attention_scale(cache_position + 1.0), expected, rtol=1e-15)
    assert float(at.llama4_attention_scale(8191)) == 1.0  # first change at n = floor_scale
    assert float(at.llama4_attention_scale(8192)) == pytest.approx(1 + 0.1 * math.log(2), rel=1e-15)


def test_infoscale_matches_the_released_code_and_its_large_d_limit():
    # HT-NEKO/Information-Entropy-Invariance, model/my_gau_alpha_eval/layer.py, "InfoScale" branch:
    #   InfoScale_clip = (1-(train_len_ori**(-2/(head_dim))))**0.5 ; InfoScale = (1-(l**(-2/(head_dim))))**0.5
    #   a = a * InfoScale / InfoScale_clip       (a = q.k / sqrt(head_dim))
    for l, d, length in [(1024, 128, 512), (64, 128, 512), (32768, 64, 512), (512, 128, 512)]:
        expected = (1 - l ** (-2 / d)) ** 0.5 / (1 - length ** (-2 / d)) ** 0.5
        assert float(at.infoscale_factor(l, d, length)) == pytest.approx(expected, rel=1e-12)
    # d -> infinity: 1 - n^(-2/d) ~ 2 ln n / d, the sqrt(log_L n) rule
    assert float(at.infoscale_factor(2**20, 1e9, 512)) == pytest.approx(math.sqrt(20 / 9), rel=1e-8)


def test_qknorm_initial_scale_matches_the_released_initialization():
    # CyndxAI/QKNorm, QKNorm/layers.py: ScaleUp(np.log2(self.seq_len_threshold**2 - self.seq_len_threshold))
    # with seq_len_threshold = 72 in QKNorm/configurations.py (97.5th percentile of lengths).
    assert float(at.qknorm_initial_scale(72)) == pytest.approx(math.log2(72**2 - 72), rel=1e-15)
    assert float(at.qknorm_initial_scale(1e150)) == pytest.approx(300 * math.log2(10), rel=1e-12)
    with pytest.raises(ValueError, match="train_length"):
        at.qknorm_initial_scale(1e200)


def test_scalable_softmax_is_n_to_the_power_s_z():
    # Nakanishi (2025), the SSMax definition: SSMax(z)_i = n^(s z_i) / sum_j n^(s z_j).
    rng = np.random.default_rng(0)
    for n, s in [(16, 0.43), (1000, 0.2), (3, 1.0)]:
        z = rng.standard_normal(n)
        direct = n ** (s * z) / np.sum(n ** (s * z))
        via = at.softmax(z, at.scalable_softmax_scale(n, 64, s) * 8.0)
        np.testing.assert_allclose(via, direct, rtol=1e-12)
    np.testing.assert_allclose(
        at.scalable_softmax_scale(np.geomspace(2, 1e6, 30), 64, 1 / np.log(512)),
        at.entropy_invariant_scale(np.geomspace(2, 1e6, 30), 64),
        rtol=1e-14,
    )


def test_adaptive_temperature_matches_the_published_listing():
    # Velickovic et al. (2024), "softmax is not enough", adaptive_temperature_softmax (JAX listing):
    #   poly_fit = [-0.037, 0.481, -2.3, 4.917, -1.791]
    #   beta = where(entropy > 0.5, maximum(polyval(poly_fit, entropy), 1.0), 1.0)
    def beta(h):
        poly = (((-0.037 * h + 0.481) * h - 2.3) * h + 4.917) * h - 1.791
        return max(poly, 1.0) if h > 0.5 else 1.0

    entropies = [0.0, 0.3, 0.5, 0.51, 0.8, 1.0, 2.0, 3.0, 4.5, 6.0]
    np.testing.assert_allclose(at.adaptive_temperature(entropies), [beta(h) for h in entropies], rtol=1e-14)
    assert np.all(at.adaptive_temperature(np.linspace(0, 10, 101)) >= 1.0)  # "never increase entropy"


def test_critical_scale_is_where_a_token_keeps_half_its_weight():
    # Chen, Lin, Polyanskiy, Rigollet (2025): beta_n = gamma log n, gamma_c = 1/(1 - rho).
    # Not an independent route but an identity of that formula (so it tests typos only): a token
    # with self inner product 1 and n - 1 others at rho keeps the weight
    # 1 / (1 + (n - 1) exp(-beta (1 - rho))) = 1 / (1 + (n - 1) / n) at gamma_c, which tends to 1/2.
    for rho in (0.0, 0.3, 0.9):
        n = 1e12
        beta = float(at.critical_scale(n, rho))
        own = 1.0 / (1.0 + (n - 1) * math.exp(-beta * (1 - rho)))
        assert own == pytest.approx(0.5, abs=1e-9)
    with pytest.raises(ValueError, match="rho"):
        at.critical_scale(100, 1.0)


# --- calibrating from a measured head ------------------------------------------------------------


def _reference_entropy(alpha, n, n_s=3001, n_u=1500):
    """E[H] for n i.i.d. N(0, 1) scores by the Laplace identities, on plain grids (independent route).

    E log Z = int_0^inf (e^-t - phi(t)^n) dt / t and E[alpha sum p s] = n int_0^inf
    E[alpha s e^{alpha s} e^{-t e^{alpha s}}] phi(t)^(n-1) dt, phi(t) = E exp(-t e^{alpha s}).
    """
    from scipy.special import exp1

    s = np.linspace(-12, 12, n_s)
    w = np.exp(-0.5 * s * s) / math.sqrt(2 * math.pi) * (s[1] - s[0])
    e = np.exp(alpha * s)
    mean_e = np.sum(w * e)
    u = np.linspace(-math.log(n * mean_e) - 25, 8.0 * alpha + 12.0, n_u)
    t = np.exp(u)
    x = t[:, None] * e[None, :]
    log_phi = np.log1p(-np.sum(w * -np.expm1(-x), axis=1))
    e_log_z = np.trapezoid(np.exp(-t) - np.exp(n * log_phi), u) + t[0] * (n * mean_e - 1) + exp1(t[-1])
    g = np.sum(w * alpha * s * e * np.exp(-x), axis=1)
    return e_log_z - n * np.trapezoid(g * np.exp((n - 1) * log_phi) * t, u)


def test_reference_entropy_agrees_with_sampling():
    rng = np.random.default_rng(7)
    for alpha, n in [(1.0, 512), (3.0, 64)]:
        h = at.softmax_entropy(rng.standard_normal((20000, n)), alpha)
        assert abs(_reference_entropy(alpha, n) - h.mean()) < 4 * h.std() / math.sqrt(h.size)


def test_head_scale_from_entropy_inverts_the_exact_entropy():
    for alpha, length in [(0.7, 512), (2.5, 4096), (4.0, 512)]:
        h = _reference_entropy(alpha, length)
        assert at.head_scale_from_entropy(h, length) == pytest.approx(alpha, rel=1e-5)
    with pytest.raises(ValueError, match="between 0 and log"):
        at.head_scale_from_entropy(math.log(512), 512)
    with pytest.raises(ValueError, match="between 0 and log"):
        at.head_scale_from_entropy(0.0, 512)


@pytest.mark.parametrize(
    ("scores", "d", "guess"),
    [
        *(("gaussian", None, g) for g in (None, 1e-20, 3.0, 5e3)),
        *(("cosine", 16.0, g) for g in (None, 1e-12)),
        ("cosine", 2.5, 5e3),
    ],
)
def test_entropy_solver_finds_the_root_from_far_starts(scores, d, guess):
    """The entropy solver returns E[H]'s root to 1e-11, from its own start or from far below or above.

    Rules out a solver that stops at its bracket's edge or at its guess, or
    that crawls on a flat stretch: a root off by 1e-9 relative moves E[H]
    by more than the tolerance here.  A target that no scale up to the cap
    reaches is refused, naming the cap.
    """
    from attnscale.practice import recipes

    for n, fraction in [(2, 0.3), (64, 0.05), (4096, 0.5), (1e6, 0.9), (1e9, 0.2)]:
        target = fraction * math.log(n)
        if d == 2.5 and n == 1e9:  # so flat a law's cap (6325) cannot bring 1e9 keys down to 4.1 nats
            with pytest.raises(ValueError, match=r"no scale up to 6325 brings the entropy down to 4\.145"):
                recipes._solve_entropy(target, n, scores, d, guess=guess)
            continue
        alpha = recipes._solve_entropy(target, n, scores, d, guess=guess)
        assert recipes._expected_entropy(alpha, n, scores, d) == pytest.approx(target, rel=1e-11), (
            n,
            fraction,
        )


def test_entropy_solver_at_its_edges():
    """A scale at the cap stays at the cap; an entropy within rounding of log n gets the expansion's scale.

    Rules out returning exp(log(cap)), which rounds above the cap that
    ``expected_entropy`` refuses, and a search that fails where E[H] rounds
    to log n.  There the expansion's first term, log n - E[H] = alpha^2 (n -
    1) / (2n), gives alpha to a relative alpha^2 / n.  At two keys mpmath's
    E[H] (an integral over the score difference) holds the gap to 1e-9.  A
    wrong alpha^4 term fails that by 3e-7 at the gap of 1e-7.
    """
    cap = 1e4 / math.sqrt(2.5)
    alpha = at.entropy_matched_scale(2, 2, alpha_train=cap, scores="cosine", d=2.5)
    assert alpha <= cap and alpha == pytest.approx(cap, rel=1e-12)
    assert at.expected_entropy(alpha * math.sqrt(2.5), 2, scores="cosine", d=2.5) > 0
    for length in (2, 4096, 1e9):
        for entropy in (math.log(length) - 1e-13, math.log(length) - 1e-7):
            gap = math.log(length) - entropy  # as rounded
            first_term = math.sqrt(2 * gap * length / (length - 1))
            alpha = at.head_scale_from_entropy(entropy, length)
            assert alpha == pytest.approx(first_term, rel=1e-12 + first_term**2 / length, abs=0)
            if length == 2:
                assert _two_key_gap(alpha) == pytest.approx(gap, rel=1e-9, abs=0), (alpha, gap)


#: log 2 - E[H] for two cosine keys in d = 4 at alpha = 0.02 on the cosine (1e-2 on the unit
#: score), by mpmath at 30 digits over the cosines' difference (tests/references.py's
#: ``cosine_difference_density``; 2.4 s, so stored).
TWO_COSINE_KEY_GAP_D4 = 2.4998437621462894e-05


def test_small_scale_expansion_against_two_key_gaps():
    """c2 alpha^2 + c4 alpha^4 at alpha = 1e-2 against mpmath's gap at two keys, Gaussian and cosine (d = 4).

    The alpha^6 term is 5e-9 of the gap there; held to 2e-8.  A missing
    alpha^4 term (6e-5 off) or the Gaussian fourth moment for the cosines'
    (1.2e-5 off) fails.
    """
    from attnscale.practice import recipes

    for scores, d, want in (("gaussian", None, _two_key_gap(1e-2)), ("cosine", 4.0, TWO_COSINE_KEY_GAP_D4)):
        c2, c4 = recipes._small_gap_terms(2.0, scores, d)
        assert c2 * 1e-4 + c4 * 1e-8 == pytest.approx(want, rel=2e-8, abs=0), scores


def test_nearly_uniform_heads_at_many_keys_follow_the_expansion():
    """At L = 4e8 keys and alpha from 1.5e-3 to 9e-3, the scales invert the two-term expansion.

    There the quadrature's E[H] is biased by up to 4e-12 nats, 4e-6 of a gap
    of 1e-6: a solver on the quadrature below alpha = 1e-2 is that far off.
    The reference is the expansion (checked against mpmath just above),
    solved here by bisection; held to 1e-8.
    """
    from attnscale.practice import recipes

    length = 4e8
    for scores, d in (("gaussian", None), ("cosine", 64.0)):
        c2, c4 = recipes._small_gap_terms(length, scores, d)
        for alpha in (1.5e-3, 5e-3, 9e-3):
            gap = c2 * alpha**2 + c4 * alpha**4
            lo, hi = 0.0, 2 * alpha
            for _ in range(200):  # c2 a^2 + c4 a^4 rises on [0, 2 alpha]
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if c2 * mid**2 + c4 * mid**4 < gap else (lo, mid)
            entropy = math.log(length) - gap
            got = at.head_scale_from_entropy(entropy, length, scores, d)
            # the entropy as typed carries rounding of 1e-15 nats: 1e-9 of the gap
            assert got == pytest.approx(lo, rel=1e-8, abs=0), (scores, alpha)
            assert at.entropy_matched_scale(length, length, alpha, scores, d) == pytest.approx(
                alpha, rel=1e-8
            )


def _two_key_gap(alpha):
    """log 2 - E[H] for two standard normal scores, by mpmath (the difference D is N(0, 2))."""
    with mpmath.workdps(40):
        a = mpmath.mpf(alpha)

        def entropy(x):  # of the weights sigmoid(+-a x), x >= 0
            t = a * x
            return mpmath.log1p(mpmath.exp(-t)) + t / (mpmath.exp(t) + 1)

        density = lambda x: 2 * mpmath.npdf(x, 0, mpmath.sqrt(2))  # noqa: E731 (|D|)
        mean = mpmath.quad(lambda x: entropy(x) * density(x), [0, 2, 8, 40])
        return float(mpmath.log(2) - mean)


def test_cosine_calibration_agrees_with_sampled_cosines():
    # independent route: rows of cosines between random directions (the package's sampler)
    d, length, alpha = 64, 512, 2.0
    scores = at.sample_cosine_scores(4000, length, d, np.random.default_rng(3))
    h = at.softmax_entropy(scores, alpha * math.sqrt(d))
    got = at.head_scale_from_entropy(h.mean(), length, scores="cosine", d=d)
    # the sampled mean carries an error; translate 4 SE of entropy into scale through the slope
    slope = (
        at.expected_entropy(1.01 * alpha * math.sqrt(d), length, scores="cosine", d=d)
        - at.expected_entropy(0.99 * alpha * math.sqrt(d), length, scores="cosine", d=d)
    ) / (0.02 * alpha)
    assert abs(got - alpha) < 4 * h.std() / math.sqrt(h.size) / abs(slope) + 1e-9


def test_entropy_matched_scale_keeps_the_reference_entropy():
    length, alpha_l = 512, 2.0
    n = np.array([1024.0, 8192.0])
    alpha_n = at.entropy_matched_scale(n, length, alpha_l)
    target = _reference_entropy(alpha_l, length)
    for a, m in zip(alpha_n, n, strict=True):
        assert _reference_entropy(a, m) == pytest.approx(target, rel=1e-6)
    assert np.all(alpha_n > alpha_l)
    with pytest.raises(ValueError, match="exceeds log n"):
        at.entropy_matched_scale(64, length, 0.5)


def test_calculator_never_returns_zero_and_says_why():
    # REVIEW 25: recommend_scale(d=128, n=256, train_length=512) used to print a sqrt-rule scale of 0.
    for scores in ("dot", "cosine"):
        rec = at.recommend_scale(d=128, n=256, scores=scores, train_length=512)
        assert all(np.isfinite(e.scale) and e.scale > 0 for e in rec.entries)
        assert not any(e.criterion.startswith("sqrt rule") for e in rec.entries)
        assert any("assumes alpha_L = 1" in note for note in rec.notes)
    rec = at.recommend_scale(d=128, n=256, train_length=512)
    assert any(note.startswith("sqrt rule does not apply") for note in rec.notes)


def test_calculator_scales_the_length_rules_by_the_measured_head():
    d, n, length, alpha_l = 128, 16384, 2048, 2.5
    rec = at.recommend_scale(d, n, train_length=length, head_scale=alpha_l)
    entries = _keyed(rec)
    # typed by hand: alpha_L log_L n, on q.k divided by sqrt(d)
    ei = entries["entropy-invariant"]
    assert ei.criterion == f"entropy-invariant log_{length}(n)"  # the name gives the factor
    assert ei.unit_scale == pytest.approx(alpha_l * math.log(n) / math.log(length), rel=1e-14)
    assert ei.scale == pytest.approx(ei.unit_scale / math.sqrt(d), rel=1e-14)
    yarn = entries["yarn"]
    assert yarn.unit_scale == pytest.approx(alpha_l * (0.1 * math.log(n / length) + 1) ** 2, rel=1e-14)
    sqrt_rule = entries["sqrt"]
    assert sqrt_rule.criterion == "sqrt rule sqrt(1 + 2 ln(n/L)/a_L^2)"  # the factor, as the name says
    assert sqrt_rule.unit_scale == pytest.approx(math.sqrt(alpha_l**2 + 2 * math.log(n / length)), rel=1e-14)
    assert sqrt_rule.factor == pytest.approx(math.sqrt(1 + 2 * math.log(n / length) / alpha_l**2), rel=1e-14)
    assert rec.alpha_train == alpha_l
    # the gradient row does not depend on the head; the standard row is the head as trained (factor 1)
    plain = at.recommend_scale(d, n, train_length=length)
    name = "gradient (Gaussian mean field)"
    assert _entries(plain)[name].unit_scale == _entries(rec)[name].unit_scale
    assert _entries(rec)["standard 1/sqrt(d)"].unit_scale == alpha_l


def test_recommendation_record():
    rec = at.recommend_scale(128, 4096, train_length=512)
    names = [e.criterion for e in rec.entries]
    assert rec.entries[0].key == "yarn" and "standard 1/sqrt(d)" in names  # the marked answer
    assert any(name.startswith("gradient") for name in names)
    assert any(name.startswith("YaRN") for name in names)
    for entry in rec.entries:
        assert entry.scale == pytest.approx(entry.unit_scale / np.sqrt(128))
    cosine = at.recommend_scale(128, 4096, scores="cosine", train_length=512)
    for entry in cosine.entries:
        assert entry.scale == pytest.approx(entry.unit_scale * np.sqrt(128))
    assert "QK-norm" in str(cosine)
    assert all(len(line) <= 88 for line in str(rec).splitlines())


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
        (dict(d=64, n=100, head_scale=2.0), ValueError, "needs train_length"),
        (dict(d=64, n=100, train_length=512, head_scale=0.0), ValueError, "head_scale must be > 0"),
        (dict(d=64, n=100, train_length=512, head_scale=1, head_entropy=3), ValueError, "not both"),
        (dict(d=64, n=100, train_length=512, head_entropy=7.0), ValueError, "between 0 and log"),
        (dict(d=64, n=100, train_length=512, head_entropy="x"), TypeError, "head_entropy"),
        (dict(d=64, n=100, train_length=512, head_scale=[1, 2]), ValueError, "single number"),
    ],
)
def test_recommend_scale_refuses_bad_input(kwargs, error, message):
    with pytest.raises(error, match=message):
        at.recommend_scale(**kwargs)


def test_cli_prints_a_table():
    done = run("scale", "--d", "128", "--n", "4096", "--cosine", "--causal", "--train-length", "512")
    assert done.returncode == 0, done.stderr
    assert "criterion" in done.stdout and "gradient (cosine mean field), causal" in done.stdout
    done = run("scale", "--d", "128", "--n", "8192", "--train-length", "512", "--head-scale", "2")
    assert done.returncode == 0, done.stderr
    assert "alpha_L = 2 at L = 512" in done.stdout


def test_cli_takes_a_measured_entropy():
    done = run("scale", "--d", "128", "--n", "8192", "--train-length", "512", "--head-entropy", "4")
    assert done.returncode == 0, done.stderr
    assert "entropy 4 nats" in done.stdout and "exact entropy match" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["scale", "--d", "64"],
        ["scale", "--d", "abc", "--n", "10"],
        ["scale", "--d", "64", "--n", "1"],
        ["scale", "--d", "64", "--n", "nan"],
        ["scale", "--d", "64", "--n", "10", "--train-length", "0"],
        [
            "scale",
            "--d",
            "64",
            "--n",
            "10",
            "--train-length",
            "512",
            "--head-scale",
            "1",
            "--head-entropy",
            "2",
        ],
        ["scale", "--d", "64", "--n", "10", "--head-scale", "1"],
        ["frobnicate"],
        [],
    ],
)
def test_cli_errors_are_one_line(args):
    done = run(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in done.stderr


# --- the calculator as a table of rules (issue 21, section 3) -----------------------------------


def _entries(rec):
    return {e.criterion: e for e in rec.entries}


def _keyed(rec):
    """The entries by the key of their rule (practice.calculator.RULES), which no setting changes."""
    return {e.key: e for e in rec.entries}


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(d=2, n=100000, scores="cosine", train_length=512),  # used to abort: exact match out of reach
        dict(d=128, n=4096, train_length=512, head_scale=999),  # used to abort with an entropy never given
    ],
)
def test_one_rule_that_cannot_answer_leaves_a_note_and_the_table(kwargs):
    rec = at.recommend_scale(**kwargs)
    names = [e.criterion for e in rec.entries]
    assert "standard 1/sqrt(d)" in names and any(name.startswith("YaRN") for name in names)
    assert not any(name.startswith("exact entropy match") for name in names)
    assert any(note.startswith("exact entropy match") and "not computed" in note for note in rec.notes)
    assert all(np.isfinite(e.scale) and e.scale > 0 for e in rec.entries)


def test_a_failing_rule_is_a_note_by_construction(monkeypatch):
    from attnscale.practice import calculator

    def broken(setting):
        raise RuntimeError("boom")

    rules = list(calculator.RULES)
    rules[2] = calculator._Rule("gradient", "gradient (broken)", "nowhere", broken)
    monkeypatch.setattr(calculator, "RULES", tuple(rules))
    rec = at.recommend_scale(128, 4096, train_length=512)
    assert "gradient (broken)" not in _entries(rec)
    assert any("gradient (broken): not computed here (RuntimeError: boom)" in note for note in rec.notes)
    assert (
        len(rec.entries) == len(calculator.RULES) - 3
    )  # the others still print (two rules need cosine or no L)


def test_a_new_rule_is_one_entry(monkeypatch):
    from attnscale.practice import calculator

    extra = calculator._Rule(
        "twice", "twice the standard", "test", lambda s: calculator._scale(2.0), kind="criterion"
    )
    monkeypatch.setattr(calculator, "RULES", (*calculator.RULES, extra))
    rec = at.recommend_scale(64, 1000)
    want = at.ScaleEntry("twice the standard", 2.0 / 8.0, 2.0, "test", group="criterion", key="twice")
    assert rec.entries[-1] == want


def test_llama4_row_never_falls_below_the_head_and_ignores_l():
    # Llama 4 multiplies its NoPE queries by f(n) = 1 + 0.1 log1p(floor(n / 8192)) >= 1 at every
    # position, whatever the training length (modeling_llama4.py, as in the test above).
    for n in (300.0, 8191.0, 8192.0, 65536.0, 1e6):
        rows = []
        for length in (512.0, 4096.0, 65536.0, 1e6):
            rec = at.recommend_scale(128, n, train_length=length, head_scale=1.7)
            rows.append(_entries(rec)["Llama 4 (NoPE layers), f(n)"].unit_scale)
        expected = 1.7 * (1 + 0.1 * math.log1p(math.floor(n / 8192)))
        np.testing.assert_allclose(rows, expected, rtol=1e-15)
        assert min(rows) >= 1.7


def test_yarn_row_says_which_finetuned_branch_it_shows():
    rec = at.recommend_scale(128, 16384, train_length=4096)
    assert any(note.startswith("YaRN dynamic row") and "finetuned=False" in note for note in rec.notes)


def test_causal_note_in_both_modes():
    for scores in ("dot", "cosine"):
        rec = at.recommend_scale(64, 8192, scores=scores, causal=True)
        assert any(note.startswith("causal: the fixed scale that keeps the most") for note in rec.notes), (
            scores
        )
        assert any("not the book's advice" in note for note in rec.notes)


def test_tiny_dimension_cosine_scale_gets_a_note():
    for d in (2, 4):
        rec = at.recommend_scale(d, 4096, scores="cosine")
        grad = _entries(rec)["gradient (cosine mean field)"]
        assert grad.unit_scale > 100
        assert any(note.startswith(f"gradient (cosine): at d = {d}") for note in rec.notes)
    rec = at.recommend_scale(128, 4096, scores="cosine")
    assert not any(note.startswith("gradient (cosine)") for note in rec.notes)


def test_gradient_note_is_worded_as_a_numerical_finding():
    note = next(n for n in at.recommend_scale(128, 4096).notes if n.startswith("gradient:"))
    assert "numerical finding" in note and "n = 2" in note and "no finite maximizer" not in note


def test_exact_match_beyond_the_exact_range_is_a_note():
    rec = at.recommend_scale(128, 1e12, train_length=4096)
    assert any("exact expectation covers" in note for note in rec.notes)
    assert "qwen" in _keyed(rec)


def test_a_measured_entropy_out_of_reach_is_one_error_naming_it():
    with pytest.raises(ValueError, match=r"head_entropy = 0\.0001 nats"):
        at.recommend_scale(128, 4096, train_length=512, head_entropy=1e-4)
    with pytest.raises(ValueError, match="head_entropy needs train_length"):
        at.recommend_scale(128, 1e12, train_length=1e10, head_entropy=3.0)
    with pytest.raises(ValueError, match=r"n must be <= 1e\+15"):
        at.recommend_scale(128, 1e16)


def test_cli_answers_huge_causal_settings():
    # issue 21: --n 1e9 --causal was killed for memory after 70 s; --n 1e8 took 2 minutes and 4.8 GB
    done = run("scale", "--d", "128", "--n", "1e9", "--causal")
    assert done.returncode == 0, done.stderr
    assert "gradient, causal (Gaussian mean field)" in done.stdout
    done = run("scale", "--d", "128", "--n", "1e6", "--cosine", "--causal", "--train-length", "4096")
    assert done.returncode == 0, done.stderr
    assert "gradient (cosine mean field), causal" in done.stdout


# --- factors on the trained logits, the book's answer marked, the same words everywhere (issue 31) ---


@pytest.mark.parametrize("measure", [dict(head_scale=2.436), dict(head_entropy=5.5)])
def test_a_measured_heads_rule_factor_is_exactly_the_rules_factor(measure):
    """The factor column is the rule's own factor on the trained logits, not alpha_L times it."""
    n, length = 32768.0, 4096.0
    rec = at.recommend_scale(128, n, train_length=length, **measure)
    rows = _keyed(rec)
    assert rows["qwen"].factor == math.log(n) / math.log(length)  # exactly
    assert rows["entropy-invariant"].factor == math.log(n) / math.log(length)
    assert rows["yarn"].factor == float(at.yarn_mscale(n / length)) ** 2
    assert rows["llama4"].factor == float(at.llama4_attention_scale(n))
    assert rows["trained"].factor == 1.0
    assert rows["standard"].factor == 1.0  # the scale the head was trained with: nothing to change
    # every length row: the factor times alpha_L is the scale on the unit-variance score
    for e in rec.entries:
        if not e.absolute:
            assert e.factor * rec.alpha_train == pytest.approx(e.unit_scale, rel=1e-15)
    # without a measurement the factors are the rules' own (alpha_L = 1 where a row needs one) ...
    plain = _keyed(at.recommend_scale(128, n, train_length=length))
    assert plain["qwen"].factor == math.log(n) / math.log(length)
    assert plain["qwen"].factor == plain["qwen"].unit_scale
    # ... and without a training length there is no factor to confuse with the scale
    assert all(e.factor is None for e in at.recommend_scale(128, n).entries)


def _header(lines):
    """The table's column header (the line that starts with "criterion")."""
    return next(line for line in lines if line.split()[:1] == ["criterion"])


def test_the_table_says_which_number_is_which():
    """Issue 31: the title, the lines above the columns and the columns say factor where factors print."""
    text = str(at.recommend_scale(128, 32768, train_length=4096, head_entropy=5.5))
    lines = text.splitlines()
    assert lines[0].startswith("factor for softmax(factor * trained logits)")
    joined = " ".join(text.split())
    assert "factor: multiplies this head's trained logits" in joined
    assert "alpha: the row as a scale on the unit-variance score" in joined and "not to apply" in joined
    assert "absolute: a rule that sets the scale itself, not a length rule" in joined
    assert _header(lines).split()[:3] == ["criterion", "factor", "alpha"]
    qwen = next(line for line in lines if "Qwen" in line)
    assert qwen.split("Bai")[0].split()[-2:] == ["1.250", "3.045"]  # the factor, then the scale
    assert all(len(line) <= 88 for line in lines)
    plain = str(at.recommend_scale(128, 4096)).splitlines()
    assert plain[0].startswith("scale for softmax(scale * q.k)")
    assert _header(plain).split()[:2] == ["criterion", "scale"] and "factor" not in _header(plain)


@pytest.mark.parametrize("measure", [dict(head_scale=2.436), dict(head_entropy=5.5), {}])
def test_a_rule_with_no_notion_of_a_head_prints_no_factor(measure):
    """The gradient criterion, QK-norm's g: no factor on a trained head; the standard scale's is 1."""
    for scores in ("dot", "cosine"):
        rec = at.recommend_scale(128, 32768, scores=scores, train_length=4096, **measure)
        rows = _keyed(rec)
        for key in ("gradient", *(["qknorm"] if scores == "cosine" else [])):
            assert rows[key].absolute and rows[key].factor is None, (scores, key)
            line = next(
                line for line in str(rec).splitlines() if line.strip().startswith(rows[key].criterion)
            )
            assert line.split()[len(rows[key].criterion.split())] == "absolute", line
        # the standard scale on a trained head: factor 1, and the head's own alpha_L on the unit score
        assert not rows["standard"].absolute and rows["standard"].factor == 1.0
        assert rows["standard"].unit_scale == rec.alpha_train
        assert all(e.factor is not None for e in rec.entries if not e.absolute)
        printed = dict(zip((e.key for e in rec.entries), rec.cells(), strict=True))
        assert printed["standard"][0] == "1.000"
    # without a training length it sets the scale itself
    plain = _keyed(at.recommend_scale(128, 32768))
    assert plain["standard"].absolute and plain["standard"].factor is None
    assert plain["standard"].unit_scale == 1.0


def test_qknorm_is_an_initial_value_not_a_published_scale():
    rec = at.recommend_scale(128, 32768, scores="cosine", train_length=4096)
    qknorm = _keyed(rec)["qknorm"]
    assert qknorm.group == "initial"
    assert "published initial values, learned in training afterwards (not a scale to set):" in str(rec)


def test_the_marked_length_row_leads_with_yarn():
    """Issue 39: the marked row past L is YaRN's, with its own factor; log n only without positions."""
    from attnscale.practice import advice

    assert advice.LENGTH_VERDICT.startswith(advice.ROPE_FIRST)
    assert "YaRN" in at.answers()["length"].recommendation
    assert "NTK-aware base" not in advice.ROPE_FIRST and "then" not in advice.ROPE_FIRST
    for measure in (dict(), dict(head_scale=2.0)):
        rec = at.recommend_scale(128, 32768, train_length=4096, **measure)
        assert [e.key for e in rec.recommended] == ["yarn"]
        yarn = (0.1 * math.log(8.0) + 1.0) ** 2  # YaRN's get_mscale, squared on the logits
        assert rec.how.startswith("with RoPE, use YaRN: interpolate the rotary frequencies by part")
        assert f"by this row's factor, {yarn:.4g} here, its own" in rec.how
        assert "Without positions, multiply the trained logits past L by log n/log L" in rec.how
        text = " ".join(str(rec).split())
        assert text.index(" ".join(rec.how.split())) < text.index("published rules")
    assert at.recommend_scale(128, 4096, train_length=4096).how == ""  # within L: the row says it all
    # in a decoder: one YaRN factor for every position; the log n fallback per position
    causal = at.recommend_scale(128, 32768, causal=True, train_length=4096)
    assert "dynamic YaRN rescales the whole cache" in causal.how
    assert "multiply the query at each position t > L by log t/log L" in causal.how


def test_a_contrastive_loss_marks_the_gradient_row_as_an_order_of_magnitude():
    """Issue 31: the contrastive switch marks the gradient row, and says it is an order of magnitude."""
    rec = at.recommend_scale(768, 64, scores="cosine", contrastive=True)
    assert rec.answer == "contrastive" and [e.key for e in rec.recommended] == ["gradient"]
    assert rec.recommended[0].scale == pytest.approx(float(at.cosine_alpha_star(64, 768)), rel=1e-12)
    assert rec.how.startswith("an order of magnitude")
    ratios = at.practice.advice.contrastive_ratios().values()
    low, high = (rec.recommended[0].scale * r for r in (min(ratios), max(ratios)))
    assert f"({low:.2g} to {high:.2g} here)" in rec.how
    assert "contrastive', low confidence" in str(rec)
    for bad in (dict(causal=True), dict(train_length=512), dict(scores="dot")):
        with pytest.raises(ValueError, match="contrastive loss scores its n candidates at once"):
            at.recommend_scale(768, 64, **{"scores": "cosine", "contrastive": True, **bad})
    with pytest.raises(TypeError, match="contrastive must be True or False"):
        at.recommend_scale(768, 64, contrastive="yes")


def test_causal_settings_say_which_entropy_and_which_position():
    """A decoder's entropy is of rows over L keys; Qwen's factor is per position (logn_list), here n's."""
    from attnscale.practice.calculator import FIELDS, NOTES

    rec = at.recommend_scale(128, 32768, causal=True, train_length=4096, head_entropy=5.5)
    assert NOTES["head entropy causal"] in rec.notes and NOTES["causal length"] in rec.notes
    assert "log_L t past L (logn_list)" in NOTES["causal length"]
    plain = at.recommend_scale(128, 32768, train_length=4096, head_entropy=5.5)
    assert NOTES["causal length"] not in plain.notes and NOTES["head entropy causal"] not in plain.notes
    # the factor printed is the one the release gives the query at position n (0-based n - 1)
    logn_list = [math.log(i, 4096) if i > 4096 else 1 for i in range(1, 32769)]
    assert _keyed(rec)["qwen"].factor == pytest.approx(logn_list[32768 - 1], rel=1e-15)
    help_text = " ".join(run("scale", "--help").stdout.split())
    for words in FIELDS.values():
        assert " ".join(words.split()) in help_text


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(d=128, n=32768, train_length=4096, head_entropy=5.5),
        dict(d=128, n=4096),
        dict(d=128, n=4096, causal=True),
        dict(d=128, n=4096, scores="cosine", train_length=4096),
        dict(d=64, n=100, train_length=512),
    ],
)
def test_the_marked_rows_are_the_books_answer(kwargs):
    """The rows marked as the book's answer are those attnscale.answers names here, and they come first."""
    from attnscale.practice import advice, calculator

    rec = at.recommend_scale(**kwargs)
    answer = advice.calculator_answer(rec.scores, rec.causal, rec.n, rec.train_length)
    assert rec.answer == answer
    setting = calculator._Setting(rec.d, rec.n, rec.scores, rec.causal, rec.train_length, 1.0)
    names = {}
    for rule in calculator.RULES:
        try:  # a rule whose name needs L has none to give without a training length
            names[rule.key] = rule.name(setting)
        except TypeError:
            continue
    assert [e.key for e in rec.recommended] == list(at.answers()[answer].rows)
    assert [e.criterion for e in rec.recommended] == [names[e.key] for e in rec.recommended]
    assert rec.entries[: len(rec.recommended)] == rec.recommended
    level = at.answers()[answer].confidence
    heading = f"what the book recommends here (its answer '{answer}', {level} confidence"
    assert heading in " ".join(str(rec).split())  # then ":" or what is untested here
    groups = [e.group for e in rec.entries]
    assert groups == sorted(groups, key=calculator.GROUPS.index)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--d", "0x10", "--n", "100"], "d must be a number, got '0x10'"),
        (["--d", "64", "--n", "1e400"], "n must be finite, got inf"),
        (["--d", "64", "--n", "1_000"], "n must be a number, got '1_000'"),
        (["--d", "64", "--n", "inf"], "n must be a number, got 'inf'"),
        (["--d", "2e6", "--n", "100"], "d must be <= 1e+06 (the calculator's range), got 2e+06"),
        (["--d", "64", "--n", "100", "--train-length", "1"], "train_length must be >= 2, got 1"),
        (
            ["--d", "64", "--n", "100", "--train-length", "512", "--head-entropy", "7"],
            "head_entropy must be between",
        ),
    ],
)
def test_cli_errors_are_the_calculators_words(args, message):
    done = run("scale", *args)
    assert done.returncode == 2
    assert done.stderr.strip() == f"python -m attnscale: error: {message}" or message in done.stderr


def test_the_tested_range_is_printed():
    """Practitioner read: a note past the lengths the book tested, none at 16L exactly."""
    rec = at.recommend_scale(128, 131072, causal=True, train_length=8192)
    assert "s = n/L" in rec.how
    assert not any(note.startswith("n/L = ") for note in rec.notes)  # 16L exactly is tested
    far = at.recommend_scale(128, 32 * 8192, train_length=8192)
    assert (
        "n/L = 32 is past the 16L the book tested: every length rule there is an extrapolation" in far.notes
    )


def test_a_cosine_heads_marked_row_says_how_to_use_it():
    """The QK-norm answer: normalize q and k, keep 1/sqrt(d) (sqrt(d) on the cosine), learn gains."""
    rec = at.recommend_scale(128, 4096, scores="cosine", causal=True)
    assert rec.answer == "cosine" and rec.how.startswith(
        "to train: normalize each head's q and k to unit RMS"
    )
    assert f"sqrt(d) = {math.sqrt(128):.4g} on the cosine" in rec.how
    # a trained head (its scale measured at L): still sqrt(d), not alpha_L sqrt(d), and factor 1
    trained = at.recommend_scale(128, 4096, scores="cosine", train_length=4096, head_scale=3.0)
    assert f"sqrt(d) = {math.sqrt(128):.4g} on the cosine" in trained.how and "factor 1" in trained.how


def test_the_length_answers_heading_names_what_was_not_tested():
    """Third read: QK-norm heads, encoders and n/L past 16 are named in the marked group's heading."""
    encoder = str(at.recommend_scale(64, 2048, train_length=512))
    assert "medium confidence where tested; untested here: encoders" in " ".join(encoder.split())
    decoder = str(at.recommend_scale(64, 2048, causal=True, train_length=512))
    assert "(its answer 'length', medium confidence):" in decoder
    far = " ".join(
        str(at.recommend_scale(64, 64 * 512, scores="cosine", causal=True, train_length=512)).split()
    )
    assert "untested here: QK-norm (cosine) heads, n/L past 16" in far
