r"""A small decoder-only language model whose attention scale is one visible rule.

Chapter *A language model*.  Byte-level next-token prediction on the
corpus of :mod:`attnscale.models.corpus`, in JAX (autodiff; the same code runs on
a GPU when JAX finds one).  The model, for ``n_layers`` blocks:

.. math::

   x \leftarrow x + \operatorname{Attn}(\operatorname{RMSNorm}(x)), \qquad
   x \leftarrow x + W_2\,\operatorname{gelu}(W_1 \operatorname{RMSNorm}(x)),

then RMSNorm and a read-out to 256 logits.  Attention is causal and
multi-head; a query at position :math:`i` sees :math:`n = i + 1` keys and
its logits are

.. math:: z_{ij} = \lambda_h(n)\; q_i \cdot k_j, \qquad j \le i,

with the **scale rule** :math:`\lambda_h(n)` of :func:`logit_scale`
(the standard :math:`1/\sqrt{d_h}`, Su's :math:`\log_{512} n/\sqrt{d_h}`,
or Scalable-Softmax's learned :math:`s_h \log n/\sqrt{d_h}`) times an
optional factor chosen at evaluation (the length rules applied to a
trained model), and the **normalizer** of :func:`attention_weights`
(softmax, or GAU's :math:`\operatorname{relu}(z)^2/N` with :math:`N` the
sample length or a fixed one).  Positions: rotary (RoPE, Su et al., 2021)
or none (NoPE).

Initialization follows the book's Part I: every projection has entries of
variance :math:`1/\text{fan-in}`, so that at initialization :math:`q` and
:math:`k` have unit-variance entries and :math:`q\cdot k/\sqrt{d_h}` has
unit variance (the assumption of Part II); the projections back into the
residual stream are scaled down by :math:`1/\sqrt{2\,n_\text{layers}}`.
Training (AdamW, linear warm-up then cosine decay), evaluation and the
results files are in :mod:`attnscale.models.lm_train`, as nanoGPT keeps
``model.py`` apart from ``train.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..support._validate import count as _count

try:  # JAX is a dependency of this module and attnscale.models.lm_train only (requirements.txt pins it)
    import jax
    import jax.numpy as jnp
except ImportError as error:  # pragma: no cover - the pinned install has it
    raise ImportError("attnscale.models.lm needs JAX: pip install -r requirements.txt") from error

__all__ = [
    "NORMALIZERS",
    "POSITIONS",
    "SCALE_RULES",
    "LMConfig",
    "attention_weights",
    "forward",
    "init_params",
    "keys_seen",
    "logit_scale",
    "loss_fn",
    "task_loss_fn",
]

SCALE_RULES = ("standard", "logn512", "ssmax")
NORMALIZERS = ("softmax", "relu2")
POSITIONS = ("rope", "nope")


@dataclass(frozen=True)
class LMConfig:
    """Everything that defines a model and its training.

    Attributes
    ----------
    d_model, n_heads, n_layers, d_mlp : int
        Width, heads (``d_model`` must divide by it), blocks, MLP width.
    positions : str
        ``"rope"`` (rotary position embedding) or ``"nope"`` (none).
    scale_rule : str
        ``"standard"``, ``"logn512"`` or ``"ssmax"``: the scale rule in
        training and evaluation (:func:`logit_scale`).
    normalizer : str
        ``"softmax"`` or ``"relu2"`` (:func:`attention_weights`).
    relu2_length : int or None
        For ``relu2``: the fixed :math:`N` of :math:`\\operatorname{relu}^2/N`;
        ``None`` divides by the sample length.
    train_length : int
        Tokens per training window :math:`L`.
    batch, steps : int
        Windows per step and optimizer steps.
    learning_rate, warmup, weight_decay : float, int, float
        AdamW's peak rate, warm-up steps, and decoupled weight decay (on
        the matrices only).
    vocab : int
        256 (bytes); a task's vocabulary size (:mod:`attnscale.models.tasks`).
    rope_base : float
        RoPE's base :math:`\\theta`.
    rope_frequency_factors : tuple of float or None
        A factor on each of the :math:`d_h/2` rotary frequencies (position
        interpolation, YaRN: :mod:`attnscale.practice.length_rules`); ``None`` keeps
        them.
    previous_token : bool
        Add a learned embedding of the previous token to each position's
        input (a bigram feature; position 0 gets none).  A retrieval head
        can then match a query key to the pair it opened in one step,
        instead of first building a previous-token head (the slow phase of
        an induction head).  Off for the language model.
    causal : bool
        ``True``: a decoder (query :math:`i` sees keys :math:`j \\le i`);
        ``False``: bidirectional (every query sees the whole window, as in
        a masked language model or GAU).
    """

    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    d_mlp: int = 512
    positions: str = "rope"
    scale_rule: str = "standard"
    normalizer: str = "softmax"
    relu2_length: int | None = None
    train_length: int = 64
    batch: int = 32
    steps: int = 1000
    learning_rate: float = 3e-3
    warmup: int = 50
    weight_decay: float = 0.1
    vocab: int = 256
    rope_base: float = 10000.0
    rope_frequency_factors: tuple[float, ...] | None = None
    causal: bool = True
    previous_token: bool = False

    def __post_init__(self):
        for name in ("d_model", "n_heads", "n_layers", "d_mlp", "train_length", "batch", "steps", "vocab"):
            _count(getattr(self, name), name)
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model ({self.d_model}) must split into n_heads ({self.n_heads}) heads of even size"
            )
        for name, allowed in (
            ("positions", POSITIONS),
            ("scale_rule", SCALE_RULES),
            ("normalizer", NORMALIZERS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.relu2_length is not None:
            _count(self.relu2_length, "relu2_length")
        if self.normalizer == "relu2" and self.scale_rule != "standard":
            raise ValueError("relu2 attention is scale-free after normalization: use scale_rule='standard'")
        if not (self.learning_rate > 0 and self.weight_decay >= 0 and self.rope_base > 1):
            raise ValueError("learning_rate must be > 0, weight_decay >= 0 and rope_base > 1")
        _count(self.warmup, "warmup", 0)
        if self.rope_frequency_factors is not None:
            factors = self.rope_frequency_factors
            if not isinstance(factors, tuple) or len(factors) != self.head_dim // 2:
                raise ValueError(
                    f"rope_frequency_factors must be a tuple of head_dim / 2 = {self.head_dim // 2} numbers"
                )
            if not all(isinstance(f, float) and math.isfinite(f) and f > 0 for f in factors):
                raise ValueError("rope_frequency_factors must be finite floats > 0")
        for name in ("causal", "previous_token"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


# -- parameters -------------------------------------------------------------------


def init_params(config: LMConfig, seed: int):
    """Initial parameters (a dict of arrays) from ``jax.random.key(seed)``.

    Models that differ only in their scale rule or normalizer get the same
    initial weights from the same seed (Scalable-Softmax adds its
    :math:`s_h = 1/\\log L`, so that its factor is the standard one at the
    training length).
    """
    keys = iter(jax.random.split(jax.random.key(seed), 2 + 6 * config.n_layers))
    d, f = config.d_model, config.d_mlp

    def dense(fan_in, fan_out, gain=1.0):
        return gain * jax.random.normal(next(keys), (fan_in, fan_out)) / math.sqrt(fan_in)

    residual_gain = 1.0 / math.sqrt(2 * config.n_layers)
    layers = []
    for _ in range(config.n_layers):
        layer = {
            "attn_norm": jnp.ones(d),
            "wq": dense(d, d),
            "wk": dense(d, d),
            "wv": dense(d, d),
            "wo": dense(d, d, residual_gain),
            "mlp_norm": jnp.ones(d),
            "w_in": dense(d, f),
            "w_out": dense(f, d, residual_gain),
        }
        if config.scale_rule == "ssmax":
            layer["ssmax_s"] = jnp.full(config.n_heads, 1.0 / math.log(config.train_length))
        layers.append(layer)
    params = {
        "embed": jax.random.normal(next(keys), (config.vocab, d)),
        "layers": layers,
        "final_norm": jnp.ones(d),
        "unembed": dense(d, config.vocab),
    }
    if config.previous_token:  # its own key, so the other parameters match a model without it
        params["embed_previous"] = jax.random.normal(
            jax.random.fold_in(jax.random.key(seed), 1), (config.vocab, d)
        )
    return params


# -- the two swappable pieces -----------------------------------------------------


def logit_scale(config: LMConfig, layer, n_keys):
    r"""The scale rule :math:`\lambda_h(n)`: the factor on :math:`q\cdot k` of a query that sees n keys.

    ============  ==========================================  ==========================
    rule          :math:`\lambda_h(n)`                        source
    ============  ==========================================  ==========================
    standard      :math:`1/\sqrt{d_h}`                        Vaswani et al. (2017)
    logn512       :math:`\log_{512} n/\sqrt{d_h}`             Su (2021), "entropy invariance"
    ssmax         :math:`s_h \log n/\sqrt{d_h}`, learned      Nakanishi (2025)
    ============  ==========================================  ==========================

    Returns an array of shape ``(n_heads, len(n_keys))``.
    """
    n = jnp.asarray(n_keys, dtype=jnp.float32)
    base = 1.0 / math.sqrt(config.head_dim)
    if config.scale_rule == "standard":
        per_row = jnp.ones_like(n)
        return base * jnp.broadcast_to(per_row, (config.n_heads, n.shape[-1]))
    if config.scale_rule == "logn512":
        return base * jnp.broadcast_to(jnp.log(n) / math.log(512.0), (config.n_heads, n.shape[-1]))
    return base * layer["ssmax_s"][:, None] * jnp.log(n)[None, :]


def attention_weights(config: LMConfig, logits, sample_length):
    r"""The normalizer: softmax, or GAU's :math:`\operatorname{relu}(z)^2/N`.

    ``logits`` has shape ``(heads, T, T)``; in a causal model keys after the
    query are masked.  For ``relu2``, :math:`N` is ``config.relu2_length``
    when set (fixed at the pretraining length) and ``sample_length``
    otherwise.
    """
    visible = _visible(config, logits.shape[-1])
    if config.normalizer == "softmax":
        return jax.nn.softmax(jnp.where(visible, logits, -jnp.inf), axis=-1)
    divisor = config.relu2_length if config.relu2_length is not None else sample_length
    return jnp.where(visible, jax.nn.relu(logits) ** 2, 0.0) / divisor


def _visible(config, t):
    """Which keys each query sees: ``(T, T)`` booleans (all of them when not causal)."""
    if config.causal:
        return jnp.tril(jnp.ones((t, t), dtype=bool))
    return jnp.ones((t, t), dtype=bool)


def keys_seen(config: LMConfig, t: int):
    """How many keys each of the ``t`` queries sees: :math:`i + 1` (causal) or :math:`t`."""
    return jnp.arange(1, t + 1) if config.causal else jnp.full(t, t)


# -- the model ----------------------------------------------------------------------


def _rms_norm(x, weight, eps=1e-6):
    return weight * x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)


def _rope(x, base, frequency_factors=None):
    """Rotate pairs of features (first half with second half) by position-dependent angles."""
    t, _, dh = x.shape
    half = dh // 2
    frequencies = base ** (-jnp.arange(half) / half)
    if frequency_factors is not None:
        frequencies = frequencies * jnp.asarray(frequency_factors, dtype=frequencies.dtype)
    angles = jnp.arange(t)[:, None] * frequencies[None, :]  # (T, dh/2)
    cos, sin = jnp.cos(angles)[:, None, :], jnp.sin(angles)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def _attention(config, layer, x, factor, probe=None, rows=None):
    """One multi-head attention: output (T, d) and per-head statistics."""
    t = x.shape[0]
    heads, dh = config.n_heads, config.head_dim
    q = (x @ layer["wq"]).reshape(t, heads, dh)
    k = (x @ layer["wk"]).reshape(t, heads, dh)
    v = (x @ layer["wv"]).reshape(t, heads, dh)
    if config.positions == "rope":
        q = _rope(q, config.rope_base, config.rope_frequency_factors)
        k = _rope(k, config.rope_base, config.rope_frequency_factors)
    dots = jnp.einsum("ihd,jhd->hij", q, k)  # (heads, T, T)
    scale = logit_scale(config, layer, keys_seen(config, t)) * factor  # (heads, T)
    logits = dots * scale[:, :, None]
    weights = attention_weights(config, logits, t)
    out = jnp.einsum("hij,jhd->ihd", weights, v).reshape(t, config.d_model)
    causal = _visible(config, t)
    safe = jnp.where(causal & (weights > 0), weights, 1.0)
    stats = {
        # Shannon entropy of each row (nats); for relu2 the weights are not a distribution
        "entropy": -jnp.sum(jnp.where(causal, weights * jnp.log(safe), 0.0), axis=-1),
        # spread of the standardized score q.k/sqrt(dh) over the keys a query sees
        "score_std": _masked_std(dots / math.sqrt(dh), causal),
        # the largest weight of the row
        "max_weight": jnp.max(weights, axis=-1),
        # the logits of the last query (it sees every key of the window)
        "last_logits": logits[:, -1, :],
    }
    if probe is not None:
        # the weight each query puts on the two context positions that hold its answer
        index = jnp.clip(probe, 0, t - 1)  # (T, 2); -1 (no answer) reads position 0, masked below
        on_answer = jnp.take_along_axis(weights, jnp.broadcast_to(index[None], (heads, t, 2)), axis=-1)
        stats["answer_weight"] = jnp.where(probe[None, :, 0] >= 0, on_answer.sum(axis=-1), jnp.nan)
    if rows is not None:
        stats["rows"] = logits[:, rows, :]  # (heads, k, T): the logits of chosen queries
    return out @ layer["wo"], stats


def _masked_std(values, mask):
    count = jnp.sum(mask, axis=-1)
    mean = jnp.sum(jnp.where(mask, values, 0.0), axis=-1) / count
    square = jnp.sum(jnp.where(mask, (values - mean[..., None]) ** 2, 0.0), axis=-1)
    return jnp.sqrt(square / count)


def forward(config: LMConfig, params, tokens, factor=None, probe=None, rows=None, readout=None):
    """Next-byte logits for one window, and the attention statistics of every head.

    Parameters
    ----------
    config : LMConfig
    params : dict
        From :func:`init_params` or training.
    tokens : array of int, shape (T,)
    factor : array, optional
        Shape ``(n_layers, n_heads, T)``: an extra factor on every head's
        logits at every position (1 by default), e.g. a length rule applied
        to a trained model at evaluation.
    probe : array of int, optional
        ``(T, 2)``: for each query, two context positions (a task's
        ``answer_keys``; -1 for none); adds ``answer_weight``, the weight
        on them, ``(n_layers, n_heads, T)`` (NaN where there is none).
    rows : array of int, optional
        ``(k,)`` query positions whose logits over the keys are returned as
        ``rows``, ``(n_layers, n_heads, k, T)``.
    readout : array of int, optional
        Compute the output logits only at these positions (a task whose
        loss is read at a few positions saves most of the read-out).

    Returns
    -------
    logits : array, shape (T, vocab)
    stats : dict
        ``entropy``, ``score_std``, ``max_weight``: arrays ``(n_layers, n_heads, T)``
        (one value per query); ``last_logits``: the last query's logits over
        the keys, ``(n_layers, n_heads, T)``.
    """
    t = tokens.shape[0]
    if factor is None:
        factor = jnp.ones((config.n_layers, config.n_heads, t))
    x = params["embed"][tokens]
    if config.previous_token:
        x = x.at[1:].add(params["embed_previous"][tokens[:-1]])
    collected = []
    for index, layer in enumerate(params["layers"]):
        update, stats = _attention(
            config, layer, _rms_norm(x, layer["attn_norm"]), factor[index], probe, rows
        )
        x = x + update
        hidden = jax.nn.gelu(_rms_norm(x, layer["mlp_norm"]) @ layer["w_in"])
        x = x + hidden @ layer["w_out"]
        collected.append(stats)
    if readout is not None:
        x = x[readout]
    logits = _rms_norm(x, params["final_norm"]) @ params["unembed"]
    return logits, {key: jnp.stack([s[key] for s in collected]) for key in collected[0]}


def _token_losses(config, params, windows, factor=None):
    """Cross-entropy (nats) at every position of every window: shape (B, T)."""
    inputs, targets = windows[:, :-1], windows[:, 1:]
    logits, stats = jax.vmap(lambda w: forward(config, params, w, factor))(inputs)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0], stats


def loss_fn(config: LMConfig, params, windows):
    """Mean next-byte cross-entropy (nats per byte) over a batch of windows ``(B, T + 1)``."""
    return jnp.mean(_token_losses(config, params, windows)[0])


def _task_losses(config, params, inputs, targets, factor=None, probe=None, rows=None):
    """Cross-entropy at every position ``(B, T)``, whether the argmax is right, and statistics."""
    if probe is None:
        logits, stats = jax.vmap(lambda x: forward(config, params, x, factor, None, rows))(inputs)
    else:
        logits, stats = jax.vmap(lambda x, p: forward(config, params, x, factor, p, rows))(inputs, probe)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    losses = -jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    return losses, jnp.argmax(logits, axis=-1) == targets, stats


def task_loss_fn(config: LMConfig, params, inputs, targets, weights, readout=None, factor=None):
    """Cross-entropy (nats per token) averaged over the scored positions of a task batch.

    ``readout`` (optional): the positions where every example is scored;
    the output logits are then computed there only (the same loss).
    ``factor`` (optional): a factor on the logits, as in :func:`forward`.
    """
    if readout is None:
        losses = _task_losses(config, params, inputs, targets, factor)[0]
        return jnp.sum(losses * weights) / jnp.sum(weights)
    logits, _ = jax.vmap(lambda x: forward(config, params, x, factor, readout=readout))(inputs)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    picked = -jnp.take_along_axis(log_probs, targets[:, readout, None], axis=-1)[..., 0]
    return jnp.mean(picked)
