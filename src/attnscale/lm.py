r"""A small decoder-only language model whose attention scale is one visible rule.

Chapter *A language model*.  Byte-level next-token prediction on the
corpus of :mod:`attnscale.corpus`, in JAX (autodiff; the same code runs on
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
Training: AdamW, linear warm-up then cosine decay.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from ._validate import count as _count
from .corpus import batch_windows, window_starts

try:  # JAX is a dependency of this module only (requirements.txt pins it)
    import jax
    import jax.numpy as jnp
except ImportError as error:  # pragma: no cover - the pinned install has it
    raise ImportError("attnscale.lm needs JAX: pip install -r requirements.txt") from error

__all__ = [
    "NORMALIZERS",
    "POSITIONS",
    "SCALE_RULES",
    "LMConfig",
    "TrainedModel",
    "attention_weights",
    "evaluate",
    "evaluate_task",
    "forward",
    "init_params",
    "keys_seen",
    "load_results",
    "logit_scale",
    "loss_fn",
    "task_loss_fn",
    "train",
    "train_task",
    "with_config",
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
        256 (bytes); a task's vocabulary size (:mod:`attnscale.tasks`).
    rope_base : float
        RoPE's base :math:`\\theta`.
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


def _rope(x, base):
    """Rotate pairs of features (first half with second half) by position-dependent angles."""
    t, _, dh = x.shape
    half = dh // 2
    frequencies = base ** (-jnp.arange(half) / half)
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
        q, k = _rope(q, config.rope_base), _rope(k, config.rope_base)
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


def task_loss_fn(config: LMConfig, params, inputs, targets, weights, readout=None):
    """Cross-entropy (nats per token) averaged over the scored positions of a task batch.

    ``readout`` (optional): the positions where every example is scored;
    the output logits are then computed there only (the same loss).
    """
    if readout is None:
        losses = _task_losses(config, params, inputs, targets)[0]
        return jnp.sum(losses * weights) / jnp.sum(weights)
    logits, _ = jax.vmap(lambda x: forward(config, params, x, readout=readout))(inputs)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    picked = -jnp.take_along_axis(log_probs, targets[:, readout, None], axis=-1)[..., 0]
    return jnp.mean(picked)


# -- training -----------------------------------------------------------------------


def _learning_rate(config, step):
    """Linear warm-up to the peak, then cosine decay to a tenth of it."""
    warm = (step + 1) / max(config.warmup, 1)
    progress = jnp.clip((step - config.warmup) / max(config.steps - config.warmup, 1), 0.0, 1.0)
    cosine = 0.1 + 0.45 * (1.0 + jnp.cos(jnp.pi * progress))
    return config.learning_rate * jnp.where(step < config.warmup, warm, cosine)


def _adamw(config, params, grads, moments, step, beta1=0.9, beta2=0.95, eps=1e-8):
    """One AdamW step; weight decay on the matrices (arrays with two axes) only."""
    first, second = moments
    first = jax.tree.map(lambda m, g: beta1 * m + (1 - beta1) * g, first, grads)
    second = jax.tree.map(lambda v, g: beta2 * v + (1 - beta2) * g * g, second, grads)
    rate = _learning_rate(config, step)
    correction1, correction2 = 1 - beta1 ** (step + 1), 1 - beta2 ** (step + 1)

    def update(p, m, v):
        decay = config.weight_decay * p if p.ndim == 2 else 0.0
        return p - rate * ((m / correction1) / (jnp.sqrt(v / correction2) + eps) + decay)

    return jax.tree.map(update, params, first, second), (first, second)


@dataclass(frozen=True)
class TrainedModel:
    """A trained model and its training log.

    Attributes
    ----------
    config : LMConfig
    params : dict
        Final parameters (NumPy arrays).
    seed : int
        Seeds the initialization and the batch order.
    losses
        Training loss (nats per byte) at every step, a NumPy array ``(steps,)``.
    seconds : float
        Wall time of the training loop (compilation included).
    """

    config: LMConfig
    params: dict
    seed: int
    losses: np.ndarray
    seconds: float

    def log(self) -> dict:
        """A JSON-ready record: the configuration, seed, losses and time."""
        return {
            "config": asdict(self.config),
            "seed": self.seed,
            "losses": [float(x) for x in self.losses],
            "seconds": self.seconds,
        }


def train(
    config: LMConfig, text, seed: int, steps: int | None = None, progress=None, init=None
) -> TrainedModel:
    """Train a model on random windows of ``text`` (the training split's bytes).

    The batches come from :func:`attnscale.corpus.window_starts` with the
    same ``seed`` as the initialization, so two models that differ only in
    their rule see the same initial weights and the same batches in the
    same order (paired arms).

    Parameters
    ----------
    config : LMConfig
    text : numpy.ndarray
        ``uint8`` bytes.
    seed : int
        Non-negative.
    steps : int, optional
        Stop after this many steps (the learning-rate schedule still
        follows ``config.steps``): for reproducing the start of a run.
    progress : callable, optional
        Called as ``progress(step, loss)`` after every step.
    init : dict, optional
        Start from these parameters (fine-tuning a trained model) instead of
        :func:`init_params`; the optimizer's moments start at zero.

    See Also
    --------
    train_task : the same loop on a task's batches.
    """
    total = _total_steps(config, steps)
    starts = window_starts(len(text), config.train_length, (config.steps, config.batch), seed)

    def batch_of(step):
        return (jnp.asarray(batch_windows(text, starts[step], config.train_length)),)

    def loss(params, windows):
        return loss_fn(config, params, windows)

    return _fit(config, seed, total, batch_of, loss, progress, init)


def train_task(
    config: LMConfig, batches, seed: int, steps: int | None = None, progress=None, init=None
) -> TrainedModel:
    """Train a model on a task (:mod:`attnscale.tasks`): loss on the scored positions only.

    As :func:`train`, but the batches come from ``batches(step)``, a
    function of the step that returns a :class:`attnscale.tasks.TaskBatch`
    of ``config.batch`` examples of ``config.train_length`` tokens (seed it
    from the step, so that paired arms see the same examples).  The loss
    logged at each step is the mean cross-entropy over the scored positions.
    """
    total = _total_steps(config, steps)
    if not callable(batches):
        raise TypeError(f"batches must be a function of the step, got {type(batches).__name__}")
    first = batches(0).weights > 0
    # a task scored at the same positions in every example reads out only there
    readout = jnp.asarray(np.nonzero(first[0])[0]) if np.all(first == first[0]) else None

    def batch_of(step):
        batch = batches(step)
        if batch.inputs.shape != (config.batch, config.train_length):
            raise ValueError(
                f"batches({step}) gave inputs of shape {batch.inputs.shape}, "
                f"expected {(config.batch, config.train_length)}"
            )
        if readout is not None and not np.all((batch.weights > 0) == first[0]):
            raise ValueError(f"batches({step}) scores other positions than batches(0)")
        return batch.inputs, batch.targets, batch.weights

    def loss(params, inputs, targets, weights):
        return task_loss_fn(config, params, inputs, targets, weights, readout)

    return _fit(config, seed, total, batch_of, loss, progress, init)


def _total_steps(config, steps) -> int:
    """The argument checks of :func:`train` and :func:`train_task`: the steps to run."""
    if not isinstance(config, LMConfig):
        raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
    total = config.steps if steps is None else _count(steps, "steps")
    if total > config.steps:
        raise ValueError(f"steps must be at most config.steps = {config.steps}, got {total}")
    return total


def _fit(config, seed, total, batch_of, loss, progress, init) -> TrainedModel:
    """The training loop: ``total`` AdamW steps on ``loss(params, *batch_of(step))``.

    ``batch_of(step)`` is the batch source (a tuple of arrays), ``loss`` the
    objective; the parameters start from :func:`init_params` with ``seed``
    (or ``init``), the optimizer's moments at zero.
    """
    params = init_params(config, seed) if init is None else jax.tree.map(jnp.asarray, init)
    moments = (jax.tree.map(jnp.zeros_like, params), jax.tree.map(jnp.zeros_like, params))

    @jax.jit
    def step_fn(params, moments, batch, step):
        value, grads = jax.value_and_grad(lambda p: loss(p, *batch))(params)
        params, moments = _adamw(config, params, grads, moments, step)
        return params, moments, value

    losses = np.empty(total)
    begin = time.perf_counter()
    for step in range(total):
        params, moments, value = step_fn(params, moments, batch_of(step), step)
        losses[step] = float(value)
        if progress is not None:
            progress(step, losses[step])
    seconds = time.perf_counter() - begin
    return TrainedModel(config, jax.tree.map(np.asarray, params), seed, losses, seconds)


# -- evaluation ---------------------------------------------------------------------


def _checked_factor(config, length, factor):
    """The checked ``factor`` of :func:`evaluate` and :func:`evaluate_task`: float32, 1 by default."""
    if factor is None:
        factor = np.ones((config.n_layers, config.n_heads, length), dtype=np.float32)
    factor = np.asarray(factor, dtype=np.float32)
    if factor.shape != (config.n_layers, config.n_heads, length):
        raise ValueError(
            f"factor must have shape {(config.n_layers, config.n_heads, length)}, got {factor.shape}"
        )
    if not np.all(np.isfinite(factor) & (factor > 0)):
        raise ValueError("factor must be finite and > 0")
    return factor


def evaluate_task(
    model: TrainedModel, batch, factor=None, chunk: int = 8, config: LMConfig | None = None, rows=None
) -> dict:
    """A task's accuracy and loss at its scored positions, and the heads' statistics there.

    Parameters
    ----------
    model : TrainedModel
    batch : attnscale.tasks.TaskBatch
    factor : array_like, optional
        ``(n_layers, n_heads, T)`` factor on the logits (1 by default).
    chunk : int, optional
        Examples per compiled call.
    config : LMConfig, optional
        Evaluate under another configuration (e.g. another RoPE base).
    rows : array of int, optional
        Query positions whose logit rows are returned.

    Returns
    -------
    dict
        ``correct`` ``(B, k)`` booleans and ``loss`` ``(B, k)`` at the ``k``
        scored positions of each example (every example of a task has the
        same number); ``answer_weight``, ``entropy``, ``max_weight``:
        ``(B, n_layers, n_heads, k)`` there; ``rows``: ``(B, n_layers,
        n_heads, len(rows), T)`` when asked.
    """
    config = model.config if config is None else config
    length = batch.inputs.shape[1]
    factor = _checked_factor(config, length, factor)
    scored = batch.weights > 0
    per_example = scored.sum(axis=1)
    if per_example.min() != per_example.max() or per_example.min() == 0:
        raise ValueError("every example of batch must have the same, positive number of scored positions")
    chunk = _count(chunk, "chunk")
    key = (config, None if rows is None else tuple(int(r) for r in rows))
    if key not in _TASK_EVALUATORS:
        rows_array = None if rows is None else jnp.asarray(np.asarray(rows, dtype=np.int32))
        _TASK_EVALUATORS[key] = jax.jit(
            lambda p, x, y, f, probe: _task_losses(config, p, x, y, f, probe, rows_array)
        )
    run = _TASK_EVALUATORS[key]
    params = jax.tree.map(jnp.asarray, model.params)
    parts: dict = {}
    for start in range(0, len(batch.inputs), chunk):
        stop = start + chunk
        losses, right, stats = run(
            params,
            jnp.asarray(batch.inputs[start:stop]),
            jnp.asarray(batch.targets[start:stop]),
            jnp.asarray(factor),
            jnp.asarray(batch.answer_keys[start:stop]),
        )
        # the scored positions of each example, (b, k)
        where = np.nonzero(scored[start:stop])[1].reshape(-1, int(per_example[0]))
        piece = {
            "loss": np.take_along_axis(np.asarray(losses), where, axis=1),
            "correct": np.take_along_axis(np.asarray(right), where, axis=1),
        }
        for name in ("answer_weight", "entropy", "max_weight"):  # (b, layers, heads, T) -> (..., k)
            piece[name] = np.take_along_axis(np.asarray(stats[name]), where[:, None, None, :], axis=-1)
        if rows is not None:
            piece["rows"] = np.asarray(stats["rows"])
        for name, value in piece.items():
            parts.setdefault(name, []).append(value)
    return {name: np.concatenate(values) for name, values in parts.items()}


_TASK_EVALUATORS: dict = {}


def evaluate(model: TrainedModel, windows, factor=None, batch: int = 8, config: LMConfig | None = None):
    """Loss at every position and attention statistics, averaged over windows.

    Parameters
    ----------
    model : TrainedModel
    windows : numpy.ndarray
        ``(N, T + 1)`` integer windows (:func:`attnscale.corpus.batch_windows`).
    factor : array_like, optional
        ``(n_layers, n_heads, T)``: a factor on the logits (a length rule
        applied at evaluation); 1 by default.
    batch : int, optional
        Windows per compiled call (memory: about ``batch * heads * T^2`` floats).
    config : LMConfig, optional
        Evaluate the trained weights under another configuration (e.g. the
        relu² normalizer with its divisor set to the sample length).

    Returns
    -------
    dict
        ``loss``: ``(T,)`` mean loss (nats) by position; ``loss_by_window``:
        ``(N,)`` mean over positions of each window; ``entropy``,
        ``score_std``, ``max_weight``: ``(n_layers, n_heads, T)`` means
        over windows; ``last_logits``: ``(N, n_layers, n_heads, T)``, every
        window's last row of logits.
    """
    config = model.config if config is None else config
    windows = np.asarray(windows)
    if windows.ndim != 2 or windows.shape[1] < 2 or windows.dtype.kind not in "iu":
        raise ValueError(f"windows must be integers of shape (N, T + 1), got {windows.shape}")
    length = windows.shape[1] - 1
    factor = _checked_factor(config, length, factor)
    batch = _count(batch, "batch")
    run = _evaluator(config)
    params = jax.tree.map(jnp.asarray, model.params)
    sums, per_window, last = None, [], []
    for start in range(0, len(windows), batch):
        chunk = jnp.asarray(windows[start : start + batch])
        losses, stats = run(params, chunk, jnp.asarray(factor))
        per_window.append(np.asarray(losses).mean(axis=1))
        last.append(np.asarray(stats.pop("last_logits")))
        part = {"loss": np.asarray(losses).sum(axis=0)} | {
            key: np.asarray(value).sum(axis=0) for key, value in stats.items()
        }
        sums = part if sums is None else {key: sums[key] + part[key] for key in sums}
    out = {key: value / len(windows) for key, value in sums.items()}
    out["loss_by_window"] = np.concatenate(per_window)
    out["last_logits"] = np.concatenate(last)
    return out


_EVALUATORS: dict = {}


def _evaluator(config):
    """One compiled evaluation function per configuration (shapes recompile as JAX does)."""
    if config not in _EVALUATORS:
        _EVALUATORS[config] = jax.jit(lambda params, w, f: _token_losses(config, params, w, f))
    return _EVALUATORS[config]


def with_config(model: TrainedModel, **changes) -> LMConfig:
    """The model's configuration with ``changes`` (e.g. ``relu2_length=None``)."""
    return replace(model.config, **changes)


#: Where ``experiments/language_model.py`` writes the sweep, relative to the repository.
RESULTS_FILE = Path("book") / "data" / "language-model.json"


def load_results(path=None, *, name=RESULTS_FILE.name) -> dict:
    """A results file of the language-model sweep (``experiments/language_model.py``).

    Looks at ``path`` if given; otherwise for the file ``name`` (default
    ``language-model.json``; the second sweep on new seeds is
    ``language-model-reseed.json``) in ``data/`` (a chapter running in
    ``book/``), in ``book/data/`` (the repository root) and in the
    repository that holds this package (an editable install), in that order.
    """
    if path is not None:
        candidates = [Path(path)]
    else:
        if not isinstance(name, str) or Path(name).name != name or not name.endswith(".json"):
            raise ValueError(f"name must be a .json file name without a folder, got {name!r}")
        relative = RESULTS_FILE.with_name(name)
        repository = Path(__file__).resolve().parents[2]
        candidates = [Path("data") / name, relative, repository / relative]
    for candidate in candidates:
        if candidate.is_file():
            return json.loads(candidate.read_text())
    raise FileNotFoundError(
        "no language-model results file at "
        + ", ".join(str(c) for c in candidates)
        + ": run python experiments/language_model.py"
    )
