"""Training, evaluation and the results files of the language model of :mod:`attnscale.models.lm`.

Chapter *A language model*.  The model (its configuration, parameters,
forward pass and losses) is :mod:`attnscale.models.lm`; this module trains it,
as nanoGPT keeps ``train.py`` apart from ``model.py``:

* training (:func:`train` on text, :func:`train_task` on a task of
  :mod:`attnscale.models.tasks`): AdamW with decoupled weight decay on the
  matrices, a linear warm-up then a cosine decay to a tenth of the peak
  rate, giving a :class:`TrainedModel`;
* evaluation (:func:`evaluate`, :func:`evaluate_task`), optionally with a
  factor on the logits or under another configuration
  (:func:`with_config`);
* the results files of the sweeps (:func:`load_results`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import jax  # pinned in requirements.txt (attnscale.models.lm says how to install it if it is missing)
import jax.numpy as jnp
import numpy as np

from ..support._validate import count as _count
from .corpus import batch_windows, window_starts
from .lm import LMConfig, _task_losses, _token_losses, init_params, loss_fn, task_loss_fn

__all__ = [
    "TrainedModel",
    "evaluate",
    "evaluate_task",
    "load_results",
    "train",
    "train_task",
    "with_config",
]


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

    The batches come from :func:`attnscale.models.corpus.window_starts` with the
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
        :func:`~attnscale.models.lm.init_params`; the optimizer's moments start at zero.

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
    config: LMConfig, batches, seed: int, steps: int | None = None, progress=None, init=None, factor=None
) -> TrainedModel:
    r"""Train a model on a task (:mod:`attnscale.models.tasks`): loss on the scored positions only.

    As :func:`train`, but the batches come from ``batches(step)``, a
    function of the step that returns a :class:`attnscale.models.tasks.TaskBatch`
    of ``config.batch`` examples of ``config.train_length`` tokens (seed it
    from the step, so that paired arms see the same examples).  The loss
    logged at each step is the mean cross-entropy over the scored positions.
    ``factor`` (optional, ``(n_layers, n_heads, train_length)``): a fixed
    factor on the logits during training, as a length rule applied while
    fine-tuning at a longer length (YaRN's, Qwen's :math:`\log_L n`).
    """
    total = _total_steps(config, steps)
    if factor is not None:
        factor = jnp.asarray(_checked_factor(config, config.train_length, factor))
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
        return task_loss_fn(config, params, inputs, targets, weights, readout, factor)

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
    objective; the parameters start from :func:`~attnscale.models.lm.init_params` with ``seed``
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
    batch : attnscale.models.tasks.TaskBatch
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
        ``(N, T + 1)`` integer windows (:func:`attnscale.models.corpus.batch_windows`).
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
