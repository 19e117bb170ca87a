"""The controls that can fail: is the answer read from where it was planted?

    python experiments/needle_control.py                      # book/data/needle-control.json
    python experiments/needle_control.py --task recall --out book/data/recall-control.json
    python experiments/needle_control.py --quick --out /tmp/c.json   # a smoke run

Retrains the needle sweep's standard-scale models (O, RoPE; the same
configuration, batches and seeds as ``experiments/retrieval.py --only
needle``, whose results file keeps no weights) and scores each at the
training length L on the sweep's own test windows, at every depth, three
ways:

``plain``
    As the sweep did (it must reproduce the sweep's accuracies: the same
    code and seeds give the same model).
``needle_hidden``
    The planted line (its twelve bytes, ``\\n key = value \\n``) is removed
    from every query's view outside the line: keys at those positions are
    masked in every head of every layer.  If the model reads the value from
    the line, its digit accuracy falls to chance (1/10); if it got the
    digits some other way, it does not.
``decoy_hidden``
    As many positions of the surrounding text, away from the line and the
    question, are masked instead: masking twelve bytes as such must not
    cost the answer.

``--task recall`` does the same for the retrieval chapter's recall models
without positions (O, NoPE; the sweep's test windows at L): ``pair_hidden``
masks, for each scored query, the two positions of its own key-value pair
(in every head of every layer, for that query's row only);
``decoy_hidden`` masks another pair of the same window for it instead.

``--task recall_long`` trains the same O models for ``--steps`` steps
(default twice the sweep's 1500, the learning-rate schedule stretched to
match) and scores them unmasked at L and 16L on the sweep's test windows:
does O, trained to a lower loss, close E's lead past L?
``--task recall_long_rules`` trains the same longer O models and scores
them exactly as the sweep scores its O (``retrieval.run_recall``): every
length, every length rule applied at test, the oracle factor's curves.

The mask works by wrapping the model's own visibility rule
(``attnscale.models.lm._visible``) while the evaluation is traced, so the
forward pass is the model's, not a copy.  Writes one JSON file with its
provenance (command, git commit, clean tree, packages, seeds, per-step
losses, wall time); never edit it by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
from _sweep import count_step, default_workers, provenance, rounded, run_resumable, write_results  # noqa: E402

DEFAULT_OUT = ROOT / "book" / "data" / "needle-control.json"
LINE_BYTES = 12  # "\n" + 3 letters + " = " + 4 digits + "\n"
DECOY_SEED = 40_000
MASKS = ("plain", "needle_hidden", "decoy_hidden")
RECALL_MASKS = ("plain", "pair_hidden", "decoy_hidden")


def _hidden_positions(batch, rng):
    """Per window: the needle line's positions and a decoy span of the same length."""
    count, length = batch.inputs.shape
    line_start = batch.answer_keys[:, -1, 0] - 1  # the "\n" before the key
    question = length - LINE_BYTES + 1  # where the question line starts in the inputs
    needle = np.zeros((count, length), dtype=bool)
    decoy = np.zeros((count, length), dtype=bool)
    for i, start in enumerate(line_start):
        needle[i, start : start + LINE_BYTES] = True
        # a span of the text that touches neither the line nor the question
        free = [
            s for s in range(0, question - LINE_BYTES) if s + LINE_BYTES <= start or s >= start + LINE_BYTES
        ]
        s = int(rng.choice(free))
        decoy[i, s : s + LINE_BYTES] = True
    return {"plain": np.zeros_like(needle), "needle_hidden": needle, "decoy_hidden": decoy}


def _line_blocks(hidden):
    """``(B, T, T)``: query i may not see key j when j is hidden and i is not."""
    return hidden[:, None, :] & ~hidden[:, :, None]


def _pair_blocks(batch, rng):
    """Per window, ``(B, T, T)`` blocks: each scored query's own pair, and another pair instead."""
    count, length = batch.inputs.shape
    own = np.zeros((count, length, length), dtype=bool)
    decoy = np.zeros_like(own)
    for b in range(count):
        scored = np.nonzero(batch.weights[b])[0]
        for i in scored:
            own[b, i, batch.answer_keys[b, i]] = True
            other = int(rng.choice([j for j in scored if j != i]))
            decoy[b, i, batch.answer_keys[b, other]] = True
    return {"plain": np.zeros_like(own), "pair_hidden": own, "decoy_hidden": decoy}


def evaluate_masked(model, batch, blocked):
    """Accuracy and loss at the scored positions with some keys masked per query.

    ``blocked`` is ``(B, T, T)`` booleans: query i does not see key j where
    ``blocked[b, i, j]``, in every head of every layer.
    """
    import jax
    import jax.numpy as jnp

    from attnscale.models import lm

    config = model.config
    original = lm._visible

    def one(params, tokens, targets, mask):
        def visible(cfg, t):
            return original(cfg, t) & ~mask

        lm._visible = visible
        try:
            logits, _ = lm.forward(config, params, tokens)
        finally:
            lm._visible = original
        log_probs = jax.nn.log_softmax(logits, axis=-1)
        loss = -jnp.take_along_axis(log_probs, targets[:, None], axis=-1)[:, 0]
        return loss, jnp.argmax(logits, axis=-1) == targets

    run = jax.jit(jax.vmap(one, in_axes=(None, 0, 0, 0)))
    params = jax.tree.map(jnp.asarray, model.params)
    loss, right = run(params, jnp.asarray(batch.inputs), jnp.asarray(batch.targets), jnp.asarray(blocked))
    scored = batch.weights > 0
    k = int(scored[0].sum())
    where = np.nonzero(scored)[1].reshape(-1, k)
    loss = np.take_along_axis(np.asarray(loss), where, axis=1)
    right = np.take_along_axis(np.asarray(right), where, axis=1)
    return {
        "acc_by_window": rounded(right.mean(axis=1), 5),
        "loss_by_window": rounded(loss.mean(axis=1), 5),
        "exact_by_window": rounded(right.all(axis=1), 1),
    }


_STATE: dict = {}


def _init_worker(quick):
    import retrieval as rx

    rx._init_worker(quick)
    _STATE.update(quick=quick)


def run_job(job):
    import retrieval as rx

    from attnscale.models import lm_train

    quick = _STATE["quick"]
    long_task = job["task"] in ("recall_long", "recall_long_rules")
    task = "recall" if long_task else job["task"]  # the task trained and scored
    config = rx.config_for({**job, "task": task}, quick)
    if job.get("steps"):
        config = replace(config, steps=job["steps"])
    begin = time.perf_counter()
    model = lm_train.train_task(
        config, rx.training_batches(config, task, job["seed"]), job["seed"], progress=count_step
    )
    record = {**job, "log": model.log()}
    length = rx.TRAIN_LENGTH
    rng = np.random.default_rng(DECOY_SEED + job["seed"])
    evaluations = {mask: {} for mask in MASKS}
    if job["task"] == "recall_long_rules":
        rx.run_recall({**job, "task": "recall"}, model, record)
        record["seconds"] = time.perf_counter() - begin
        return record
    if job["task"] == "recall_long":
        record["eval"] = {}
        for n in (length, 16 * length):
            batch = rx.make_batch("recall", n, rx.windows_at(n, rx.TEST_TOKENS, quick), rx.TEST_SEED + n)
            record["eval"][f"trained:{n}"] = rx._stats(lm_train.evaluate_task(model, batch))
        record["seconds"] = time.perf_counter() - begin
        return record
    if job["task"] == "recall":
        # the sweep's own test windows at L ("trained:plain" at L)
        windows = rx.windows_at(length, rx.TEST_TOKENS, quick)
        batch = rx.make_batch("recall", length, windows, rx.TEST_SEED + length)
        blocks = _pair_blocks(batch, rng)
        record["eval"] = {
            f"{mask}:{length}": evaluate_masked(model, batch, blocks[mask]) for mask in RECALL_MASKS
        }
        record["seconds"] = time.perf_counter() - begin
        return record
    for depth in rx.NEEDLE_DEPTHS:
        # the sweep's own test windows at L for this depth
        batch = rx.make_batch(
            "needle",
            length,
            rx.NEEDLE_WINDOWS if not quick else 2,
            rx.TEST_SEED + length + int(100 * depth),
            "test",
            depth=depth,
        )
        hidden = _hidden_positions(batch, rng)
        for mask in MASKS:
            evaluations[mask][str(depth)] = evaluate_masked(model, batch, _line_blocks(hidden[mask]))
    record["eval"] = {f"{mask}:{length}": by_depth for mask, by_depth in evaluations.items()}
    record["seconds"] = time.perf_counter() - begin
    return record


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--task", choices=["needle", "recall", "recall_long", "recall_long_rules"], default="needle"
    )
    parser.add_argument("--steps", type=int, default=3000, help="recall_long: training steps")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="tiny models and runs: a smoke test")
    args = parser.parse_args(argv[1:])

    import retrieval as rx

    workers = default_workers(args.workers)
    info = provenance(argv, workers)
    cache = ROOT / "experiments" / ".cache" / args.out.stem
    positions = "rope" if args.task == "needle" else "nope"
    long_task = args.task in ("recall_long", "recall_long_rules")
    extra = {"steps": 40 if args.quick else args.steps} if long_task else {}
    jobs = [
        {"task": args.task, "positions": positions, "rule": "standard", "seed": s, **extra}
        for s in args.seeds
    ]
    done = run_resumable(
        run_job,
        jobs,
        rx.job_name,
        cache,
        info,
        args.quick,
        lambda job: job.get("steps") or rx.config_for(job, args.quick).steps,
        workers,
        _init_worker,
        (args.quick,),
    )
    records = sorted(done.values(), key=lambda r: r["seed"])
    source = "retrieval-needle.json" if args.task == "needle" else "retrieval.json"
    if long_task:
        source = f"retrieval.json, O trained {extra['steps']} steps instead of 1500"
    settings = {
        "reproduces": f"book/data/{source} (task {args.task}, {positions}, standard)",
        "task": args.task,
        "train_length": rx.TRAIN_LENGTH,
        "needle_depths": list(rx.NEEDLE_DEPTHS),
        "needle_windows": rx.NEEDLE_WINDOWS,
        "line_bytes": LINE_BYTES,
        "masks": list(MASKS if args.task == "needle" else RECALL_MASKS),
        "seeds": sorted(r["seed"] for r in records),
        "seeds_of_data": {"test": rx.TEST_SEED, "decoy": DECOY_SEED},
        "quick": args.quick,
    }
    out = {"provenance": info, "settings": settings, "runs": records}
    write_results(args.out, out)
    print(f"wrote {args.out}, {len(records)} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
