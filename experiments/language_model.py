"""The language-model sweep of the chapter *A language model past its training length*.

    python experiments/language_model.py          # the committed results file: 104 minutes
    python experiments/language_model.py --only length --seeds 5 6 7 8 9 \\
        --out book/data/language-model-reseed.json  # the length arms on new seeds: 56 minutes
    python experiments/language_model.py --quick --out /tmp/lm.json   # a one-minute smoke run

The times are the results files' own (``provenance["wall_seconds"]``), with
two worker processes on two CPU cores that other work shared; the commands
are the ones their provenance records.

Trains byte-level decoder-only transformers (:mod:`attnscale.models.lm`) on the
pinned SymPy sources (:mod:`attnscale.models.corpus`) and writes one JSON file with
everything the chapter draws and checks, and its provenance (the command,
git commit, package versions, corpus checksums, seeds, per-step training
losses, wall times, device).  Never edit the file by hand: rerun this.

Two experiments, every arm paired by seed (the same initial weights and the
same batches):

``length``
    Trained at L = 64 with RoPE and with NoPE under three training rules
    (standard 1/sqrt(d), Su's log_512 n, Scalable-Softmax), evaluated on the
    test split at 64 ... 1024 tokens.  The standard model is also evaluated
    under three rules applied only at evaluation, to rows that see more than
    L keys: Qwen's log_L n, the book's sqrt rule (each head's own score
    spread at L), and the book's calculator (``attnscale.recommend_scale``
    fed each head's measured entropy at L).
``normalizer``
    Pretrained at 256 tokens with softmax or with relu^2/N (N = 256), then
    evaluated at 64 and 128 tokens with N fixed at 256 or N = the sample
    length, and fine-tuned briefly at 64 tokens under each.

Workers are separate processes, each with one XLA thread (two single-threaded
workers train faster on two cores than one process with two threads).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

# One XLA thread per worker; set before JAX is imported anywhere.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
from _sweep import count_step, default_workers, provenance, rounded, run_pool, write_results  # noqa: E402

DEFAULT_OUT = ROOT / "book" / "data" / "language-model.json"

TRAIN_LENGTH = 64
EVAL_LENGTHS = (64, 128, 256, 512, 1024)
EVAL_TOKENS = 32768  # windows per length: EVAL_TOKENS / T, the same windows for every arm and seed
BANDS = ((0, 64), (64, 128), (128, 256), (256, 512), (512, 1024))
CALIBRATION_WINDOWS = 512  # validation windows of L tokens for each head's entropy and spread at L
SPIKE_ROWS = 128  # last rows kept per head for the spike-over-bulk model
RULE_GRID = 24  # lengths in (L, max] at which the calculator is asked; log-linear between
PRETRAIN_LENGTH, PRETRAIN_BATCH = 256, 8
FINETUNE_LENGTH, FINETUNE_STEPS, FINETUNE_RATE = 64, 150, 1e-3
NORMALIZER_LENGTHS = (64, 128)


def base_config(quick: bool):
    from attnscale.models.lm import LMConfig

    if quick:
        return LMConfig(d_model=32, n_heads=2, n_layers=1, d_mlp=64, steps=30, train_length=TRAIN_LENGTH)
    return LMConfig(train_length=TRAIN_LENGTH, steps=1000)


def jobs_for(seeds, only, quick):
    """Every unit of work, heaviest first."""
    jobs = []
    if only in (None, "normalizer"):
        for normalizer in ("relu2", "softmax"):
            jobs += [{"experiment": "normalizer", "normalizer": normalizer, "seed": s} for s in seeds]
    for positions in ("rope", "nope"):
        if only not in (None, "length", f"length:{positions}"):
            continue
        for rule in ("standard", "logn512", "ssmax"):
            jobs += [{"experiment": "length", "positions": positions, "rule": rule, "seed": s} for s in seeds]
    return jobs


def job_steps(job, quick):
    config = base_config(quick)
    if job["experiment"] == "length":
        return config.steps
    finetunes = 2 if job["normalizer"] == "relu2" else 1
    return pretrain_steps(quick) + finetunes * (FINETUNE_STEPS // (10 if quick else 1))


def pretrain_steps(quick):
    return 30 if quick else 600


# -- the worker ---------------------------------------------------------------------

_STATE: dict = {}


def _init_worker(quick):
    from attnscale.models.corpus import sympy_corpus

    _STATE.update(quick=quick, corpus=sympy_corpus())


def _windows(split, length, count, seed):
    from attnscale.models.corpus import batch_windows, window_starts

    text = _STATE["corpus"].split(split)
    return batch_windows(text, window_starts(len(text), length, count, seed), length)


def _test_windows(length):
    count = max(EVAL_TOKENS // length, 8) if not _STATE["quick"] else 4
    return _windows("test", length, count, seed=10_000 + length)


def _summary(evaluation, length, keep_positions=False):
    """What the chapter needs of one evaluation at one length."""
    loss = evaluation["loss"]
    out = {
        "loss": rounded(loss.mean()),
        "bands": rounded([loss[a:b].mean() for a, b in BANDS if b <= length]),
        "entropy_bands": rounded(
            [evaluation["entropy"][..., a:b].mean(axis=-1) for a, b in BANDS if b <= length]
        ),  # (bands, layers, heads)
        "entropy_last": rounded(evaluation["entropy"][..., -1]),  # the query that sees every key
        # each test window's mean loss, in the order of the windows (the same windows for every
        # arm and seed), so that intervals can count the text's sampling as well as the seeds'
        "loss_by_window": rounded(evaluation["loss_by_window"]),
    }
    if keep_positions:
        out["loss_by_position"] = rounded(loss, 6)
    return out


def _rule_factors(model, calibration):
    """The three evaluation-time rules, each a function of the length: (layers, heads, T) factors."""
    from attnscale.practice.length_rules import rule_factors

    rules, calculator = rule_factors(
        model.config.head_dim,
        calibration["entropy"][..., -1],  # rows that see L keys
        calibration["score_std"][..., -1],  # alpha_L on the unit score (standard scale)
        TRAIN_LENGTH,
        max(EVAL_LENGTHS),
        RULE_GRID,
    )
    return rules, {
        "grid": rounded(calculator["grid"]),
        "factors": rounded(calculator["factors"]),
        "notes": calculator["notes"],
    }


def _spike_rows(calibration, model):
    """Per head, SPIKE_ROWS last rows at L: top logit, bulk mean and bulk spread of the rest."""
    logits = calibration["last_logits"][:SPIKE_ROWS]  # (rows, layers, heads, L)
    top = logits.max(axis=-1)
    order = np.sort(logits, axis=-1)
    bulk = order[..., :-1]
    return {
        "top": rounded(np.moveaxis(top, 0, -1), 6),
        "bulk_mean": rounded(np.moveaxis(bulk.mean(axis=-1), 0, -1), 6),
        "bulk_sd": rounded(np.moveaxis(bulk.std(axis=-1), 0, -1), 6),
    }


def run_length(job):
    from attnscale.models import lm, lm_train

    quick = _STATE["quick"]
    config = replace(base_config(quick), positions=job["positions"], scale_rule=job["rule"])
    begin = time.perf_counter()
    model = lm_train.train(config, _STATE["corpus"].train, job["seed"], progress=count_step)
    calibration_windows = _windows(
        "validation", TRAIN_LENGTH, CALIBRATION_WINDOWS if not quick else 8, seed=20_000
    )
    calibration = lm_train.evaluate(model, calibration_windows)
    start = lm_train.TrainedModel(config, lm.init_params(config, job["seed"]), job["seed"], np.zeros(0), 0.0)
    at_init = lm_train.evaluate(start, calibration_windows)
    record = {
        **job,
        "log": model.log(),
        "at_L": {
            "entropy": rounded(calibration["entropy"][..., -1]),
            "score_std": rounded(calibration["score_std"][..., -1]),
            "score_std_init": rounded(at_init["score_std"][..., -1]),
            "entropy_init": rounded(at_init["entropy"][..., -1]),
            "max_weight": rounded(calibration["max_weight"][..., -1]),
        },
        "eval": {"trained": {}},
    }
    if config.scale_rule == "ssmax":
        record["ssmax_s"] = rounded([layer["ssmax_s"] for layer in model.params["layers"]])
    rules = {}
    if config.scale_rule == "standard":
        rules, record["calculator"] = _rule_factors(model, calibration)
        record["spike_rows"] = _spike_rows(calibration, model)
        for name in rules:
            record["eval"][name] = {}
    for length in EVAL_LENGTHS:
        windows = _test_windows(length)
        keep = length in (TRAIN_LENGTH, max(EVAL_LENGTHS))
        record["eval"]["trained"][str(length)] = _summary(lm_train.evaluate(model, windows), length, keep)
        for name, factor_of in rules.items():
            if length > TRAIN_LENGTH:
                evaluation = lm_train.evaluate(model, windows, factor=factor_of(length))
                record["eval"][name][str(length)] = _summary(evaluation, length, keep)
    record["seconds"] = time.perf_counter() - begin
    return record


def run_normalizer(job):
    from attnscale.models import lm_train

    quick = _STATE["quick"]
    text = _STATE["corpus"].train
    base = base_config(quick)
    relu2 = job["normalizer"] == "relu2"
    config = replace(
        base,
        positions="rope",
        normalizer=job["normalizer"],
        relu2_length=PRETRAIN_LENGTH if relu2 else None,
        train_length=PRETRAIN_LENGTH,
        batch=PRETRAIN_BATCH,
        steps=pretrain_steps(quick),
    )
    begin = time.perf_counter()
    model = lm_train.train(config, text, job["seed"], progress=count_step)
    arms = {"fixed": config, "sample": replace(config, relu2_length=None)} if relu2 else {"softmax": config}
    record = {**job, "log": model.log(), "zero_shot": {}, "finetuned": {}, "finetune_logs": {}}
    for arm, arm_config in arms.items():
        record["zero_shot"][arm] = {
            str(length): _summary(lm_train.evaluate(model, _test_windows(length), config=arm_config), length)
            for length in NORMALIZER_LENGTHS
        }
        tune = replace(
            arm_config,
            train_length=FINETUNE_LENGTH,
            batch=base.batch,
            steps=FINETUNE_STEPS // (10 if quick else 1),
            learning_rate=FINETUNE_RATE,
            warmup=10 if not quick else 1,
        )
        tuned = lm_train.train(tune, text, job["seed"] + 1000, progress=count_step, init=model.params)
        record["finetune_logs"][arm] = tuned.log()
        record["finetuned"][arm] = _summary(
            lm_train.evaluate(tuned, _test_windows(FINETUNE_LENGTH)), FINETUNE_LENGTH
        )
    record["seconds"] = time.perf_counter() - begin
    return record


def run_job(job):
    return (run_length if job["experiment"] == "length" else run_normalizer)(job)


# -- the main loop ---------------------------------------------------


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--only", choices=["length", "length:rope", "length:nope", "normalizer"])
    parser.add_argument(
        "--workers", type=int, default=None, help="processes (default: 1 per CPU core, at most 2)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny models and runs: a smoke test of the pipeline"
    )
    args = parser.parse_args(argv[1:])

    workers = default_workers(args.workers)
    jobs = jobs_for(args.seeds, args.only, args.quick)
    total = sum(job_steps(job, args.quick) for job in jobs)
    info = provenance(argv, workers)
    records, info["wall_seconds"] = run_pool(run_job, jobs, workers, total, _init_worker, (args.quick,))
    records.sort(
        key=lambda r: (r["experiment"], r.get("positions", ""), r.get("rule", r.get("normalizer")), r["seed"])
    )
    settings = {
        "base_config": asdict(base_config(args.quick)),
        "seeds": args.seeds,
        "train_length": TRAIN_LENGTH,
        "eval_lengths": list(EVAL_LENGTHS),
        "eval_tokens": EVAL_TOKENS,
        "eval_split": "test",
        "bands": [list(b) for b in BANDS],
        "calibration": {"split": "validation", "windows": CALIBRATION_WINDOWS, "length": TRAIN_LENGTH},
        "rules_apply_beyond": TRAIN_LENGTH,
        "calculator_grid_points": RULE_GRID,
        "normalizer": {
            "pretrain_length": PRETRAIN_LENGTH,
            "pretrain_batch": PRETRAIN_BATCH,
            "pretrain_steps": pretrain_steps(args.quick),
            "eval_lengths": list(NORMALIZER_LENGTHS),
            "finetune_length": FINETUNE_LENGTH,
            "finetune_steps": FINETUNE_STEPS,
            "finetune_rate": FINETUNE_RATE,
        },
        "quick": args.quick,
    }
    out = {"provenance": info, "settings": settings, "runs": records}
    write_results(args.out, out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in {info['wall_seconds'] / 60:.1f} min")


if __name__ == "__main__":
    main()
