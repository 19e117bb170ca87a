"""The retrieval sweep of the chapter *Retrieval past the training length*.

    python experiments/retrieval.py                          # the committed results file, every part
    python experiments/retrieval.py --only recall            # one part (resumable: finished runs are kept)
    python experiments/retrieval.py --seeds 5 6 7 8 9 --only recall:rope \\
        --out book/data/retrieval-reseed.json                 # the same arms on new seeds
    python experiments/retrieval.py --only recall --rules logn512 ssmax --seeds 3 4 \\
        --out book/data/retrieval-more.json                   # some arms only
    python experiments/retrieval.py --quick --out /tmp/r.json # a smoke run of the pipeline (about a minute)

Trains small transformers (:mod:`attnscale.models.lm`) on tasks whose heads must
find one key among n (:mod:`attnscale.models.tasks`) at L = 64 tokens, tests them
at 64 ... 2048 tokens under every length rule, and writes one JSON file with
everything the chapter draws and checks and its provenance (command, git
commit, clean tree, package versions, seeds, per-step training losses, wall
times, device).  Never edit the file by hand: rerun this.  Each finished
run is also kept in ``experiments/.cache/<out name>/`` so that an
interrupted sweep resumes where it stopped (delete the folder to start
afresh; a run made at another commit is refused).

Parts, every arm paired by seed (the same initial weights, the same batches):

``recall``
    Multi-query associative recall (causal), RoPE and NoPE, trained under
    the standard scale (O), Su's log_512 n (E) and Scalable-Softmax.  Each
    model is tested at L ... 32L; RoPE models also with NTK-aware rotary
    bases (held fixed across arms).  The O models are also tested under the
    rules applied only at evaluation (Qwen's log_L n, the sqrt rule, the
    calculator) and under the *oracle* factor: the single factor on the
    logits (of every head, or of the retrieval head alone) that minimizes
    the loss on held-out windows at each length.  Controls: the queried
    keys absent from the context.
``bidirectional``
    Su's own settings: a masked language model on the SymPy text (O vs E),
    and bidirectional associative recall with softmax against GAU's
    relu^2/N (N fixed at L, or N = the window).
``needle``
    A ``key = value`` line planted in the SymPy text and asked at the end;
    O, E and Scalable-Softmax with RoPE; exact match by depth and length.
    O is also tested under the rules applied only at evaluation (Qwen's
    log_L n, the sqrt rule, the calculator), as for recall; the oracle
    factor is not searched for the needle.

Workers are separate processes with one XLA thread each.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
from _sweep import count_step, default_workers, provenance, rounded, run_resumable, write_results  # noqa: E402

DEFAULT_OUT = ROOT / "book" / "data" / "retrieval.json"

TRAIN_LENGTH = 64
LENGTHS = (64, 128, 256, 512, 1024)  # every arm and rule
LONG_LENGTHS = (2048,)  # the trained arms with plain positions only (32L)
N_KEYS, N_VALUES = 1024, 64  # recall vocabulary: 1024 distinct keys allow 64L = 4096 tokens
TEST_TOKENS, VALIDATION_TOKENS, MIN_WINDOWS = 8192, 4096, 8
ORACLE_FACTORS = tuple(float(f) for f in np.round(2.0 ** np.linspace(-1.0, 2.5, 11), 4))
ROW_QUERIES, ROW_WINDOWS = 8, 16  # logit rows kept per O model at L (the which-law diagnostic)
MLM_RATE = 0.15
NEEDLE_DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
NEEDLE_WINDOWS = 32  # per depth and length
TEST_SEED, VALIDATION_SEED, CONTROL_SEED = 10_000, 20_000, 30_000


def base_config(quick: bool):
    """The model of every part: 2 blocks of 2 heads of dimension 32, previous-token inputs."""
    from attnscale.models.lm import LMConfig

    if quick:
        return LMConfig(
            d_model=32,
            n_heads=2,
            n_layers=2,
            d_mlp=64,
            steps=40,
            train_length=TRAIN_LENGTH,
            previous_token=True,
            vocab=N_KEYS + N_VALUES + 2,
        )
    return LMConfig(
        d_model=64,
        n_heads=2,
        n_layers=2,
        d_mlp=256,
        train_length=TRAIN_LENGTH,
        batch=32,
        steps=1500,
        learning_rate=3e-3,
        warmup=50,
        previous_token=True,
        vocab=N_KEYS + N_VALUES + 2,
    )


PART_STEPS = {"recall": 1500, "mlm": 1000, "bidirectional_recall": 1500, "needle": 1500}


def config_for(job, quick):
    from attnscale.models.tasks import recall_vocabulary

    base = base_config(quick)
    steps = base.steps if quick else PART_STEPS[job["task"]]
    text_vocab = 257  # bytes and a mask token
    common = dict(positions=job["positions"], steps=steps)
    if job["task"] == "recall":
        return replace(base, scale_rule=job["rule"], **common)
    if job["task"] == "bidirectional_recall":
        relu2 = job["rule"] == "relu2"
        return replace(
            base,
            causal=False,
            normalizer="relu2" if relu2 else "softmax",
            relu2_length=TRAIN_LENGTH if relu2 else None,
            vocab=recall_vocabulary(N_KEYS, N_VALUES).size,
            **common,
        )
    return replace(base, scale_rule=job["rule"], vocab=text_vocab, causal=job["task"] != "mlm", **common)


def jobs_for(seeds, only, rules=None):
    """Every run, heaviest first (of the given rules only, if ``rules`` is not None)."""
    parts = {
        "recall": [("recall", p, r) for r in ("standard", "logn512", "ssmax") for p in ("rope", "nope")],
        "bidirectional": [("mlm", "rope", r) for r in ("standard", "logn512")]
        + [("bidirectional_recall", "rope", r) for r in ("softmax", "relu2")],
        "needle": [("needle", "rope", r) for r in ("standard", "logn512", "ssmax")],
    }
    jobs = []
    for part, arms in parts.items():
        for task, positions, rule in arms:
            if only not in (None, part, f"{part}:{positions}"):
                continue
            if rules is not None and rule not in rules:
                continue
            jobs += [{"task": task, "positions": positions, "rule": rule, "seed": s} for s in seeds]
    return jobs


def job_name(job):
    return f"{job['task']}-{job['positions']}-{job['rule']}-{job['seed']}"


# -- data ---------------------------------------------------------------------------

_STATE: dict = {}


def _init_worker(quick):
    _STATE.update(quick=quick)


def _corpus():
    if "corpus" not in _STATE:
        from attnscale.models.corpus import sympy_corpus

        _STATE["corpus"] = sympy_corpus()
    return _STATE["corpus"]


def make_batch(task, length, count, seed, split="train", **options):
    """``count`` examples of ``task`` at ``length`` tokens (text tasks read ``split``)."""
    from attnscale.models import tasks

    vocabulary = tasks.recall_vocabulary(N_KEYS, N_VALUES)
    if task == "recall":
        return tasks.associative_recall(length, count, seed, vocabulary, **options)
    if task == "bidirectional_recall":
        return tasks.associative_recall(length, count, seed, vocabulary, causal=False, **options)
    text = _corpus().split(split)
    if task == "mlm":
        return tasks.masked_text(text, length, count, seed, rate=MLM_RATE)
    return tasks.needle_in_text(text, length, count, seed, **options)


def training_batches(config, task, seed):
    """Batch of step ``s``: seeded by (seed, s), the same for every arm of a seed."""
    from attnscale.models.tasks import step_seed

    return lambda step: make_batch(task, config.train_length, config.batch, step_seed(seed, step))


def windows_at(length, tokens, quick):
    return 2 if quick else max(MIN_WINDOWS, tokens // length)


# -- evaluation ---------------------------------------------------------------------


def _stats(evaluation):
    """What the chapter needs of one evaluation: per-window accuracy and loss, head statistics."""
    return {
        "acc_by_window": rounded(evaluation["correct"].mean(axis=1), 5),
        "loss_by_window": rounded(evaluation["loss"].mean(axis=1), 5),
        "exact_by_window": rounded(evaluation["correct"].all(axis=1), 1),
        "answer_weight": _answer_weight(evaluation["answer_weight"]),
        "entropy": rounded(evaluation["entropy"].mean(axis=(0, 3)), 5),
        "max_weight": rounded(evaluation["max_weight"].mean(axis=(0, 3)), 5),
    }


def _answer_weight(values):
    """Mean weight on the answer per head; None where no query has one (the control)."""
    if np.all(np.isnan(values)):
        return None
    return rounded(np.nanmean(values, axis=(0, 3)), 5)


def _rope_variants(model, length):
    """Plain RoPE, and (beyond L) RoPE with the NTK-aware base; NoPE has one variant."""
    from attnscale.practice.length_rules import ntk_rope_base

    config = model.config
    out = {"plain": config}
    if config.positions == "rope" and length > TRAIN_LENGTH:
        out["ntk"] = replace(
            config, rope_base=ntk_rope_base(config.rope_base, config.head_dim, TRAIN_LENGTH, length)
        )
    return out


def _factor(config, length, value, scope, head):
    factor = np.ones((config.n_layers, config.n_heads, length), dtype=np.float32)
    if scope == "all":
        factor[:] = value
    else:
        factor[head[0], head[1]] = value
    return factor


def _oracle(model, task, length, head, variants):
    """Validation loss and accuracy over ORACLE_FACTORS, on every head or the retrieval head alone."""
    from attnscale.models import lm_train

    quick = _STATE["quick"]
    batch = make_batch(
        task, length, windows_at(length, VALIDATION_TOKENS, quick), VALIDATION_SEED + length, "validation"
    )
    factors = ORACLE_FACTORS if not quick else ORACLE_FACTORS[::7]
    out = {}
    for variant, config in variants.items():
        for scope in ("all", "head"):
            losses, accs = [], []
            for value in factors:
                e = lm_train.evaluate_task(
                    model, batch, _factor(config, length, value, scope, head), config=config
                )
                losses.append(e["loss"].mean())
                accs.append(e["correct"].mean())
            out[f"{scope}:{variant}"] = {
                "factors": list(factors),
                "loss": rounded(losses),
                "acc": rounded(accs),
            }
    return out


def _calibration(model, task):
    """Each head's entropy and score spread for the queries that see L keys (the rules' input)."""
    from attnscale.models import lm_train

    batch = make_batch(task, TRAIN_LENGTH, 128 if not _STATE["quick"] else 8, VALIDATION_SEED, "validation")
    windows = np.concatenate([batch.inputs, batch.targets[:, -1:]], axis=1)  # causal: targets are the shift
    calibration = lm_train.evaluate(model, windows)
    return calibration["entropy"][..., -1], calibration["score_std"][..., -1]


def run_recall(job, model, record):
    """Every arm of a causal recall model at every length, the oracle, the rules, the control."""
    from attnscale.models import lm_train
    from attnscale.practice.length_rules import rule_factors

    quick = _STATE["quick"]
    config = model.config
    at_l = lm_train.evaluate_task(
        model, make_batch("recall", TRAIN_LENGTH, windows_at(TRAIN_LENGTH, TEST_TOKENS, quick), TEST_SEED)
    )
    weight_at_l = np.nanmean(at_l["answer_weight"], axis=(0, 3))  # (layers, heads)
    head = tuple(int(i) for i in np.unravel_index(np.argmax(weight_at_l), weight_at_l.shape))
    record["retrieval_head"] = list(head)
    control = lm_train.evaluate_task(
        model,
        make_batch(
            "recall", TRAIN_LENGTH, windows_at(TRAIN_LENGTH, TEST_TOKENS, quick), CONTROL_SEED, absent=True
        ),
    )
    record["control_absent"] = _stats(control)
    standard = config.scale_rule == "standard"
    rules = {}
    if standard:
        entropy_l, spread_l = _calibration(model, "recall")
        rules, calculator = rule_factors(
            config.head_dim, entropy_l, spread_l, TRAIN_LENGTH, max(LENGTHS), 4 if quick else 24
        )
        record["at_L"] = {"entropy": rounded(entropy_l), "score_std": rounded(spread_l)}
        record["calculator"] = {
            "grid": rounded(calculator["grid"]),
            "factors": rounded(calculator["factors"]),
            "notes": calculator["notes"],
        }
        rows_batch = make_batch("recall", TRAIN_LENGTH, ROW_WINDOWS if not quick else 2, TEST_SEED + 1)
        scored = np.nonzero(rows_batch.weights[0])[0][-ROW_QUERIES:]
        kept = lm_train.evaluate_task(model, rows_batch, rows=scored)
        record["rows_at_L"] = {
            "queries": scored.tolist(),
            "logits": rounded(kept["rows"], 5),  # (windows, layers, heads, queries, L)
            "answer": rows_batch.answer_keys[:, scored, :].tolist(),  # (windows, queries, 2)
        }
    evaluations = {}
    for length in LENGTHS + LONG_LENGTHS:
        if quick and length > 256:
            continue
        batch = make_batch("recall", length, windows_at(length, TEST_TOKENS, quick), TEST_SEED + length)
        for variant, vconfig in _rope_variants(model, length).items():
            if length in LONG_LENGTHS and variant != "plain":
                continue
            arms = {"trained": None}
            if standard and length > TRAIN_LENGTH and length in LENGTHS:
                arms |= {name: rule(length) for name, rule in rules.items()}
            for arm, factor in arms.items():
                e = lm_train.evaluate_task(model, batch, factor, config=vconfig)
                evaluations.setdefault(f"{arm}:{variant}", {})[str(length)] = _stats(e)
        if standard and length > TRAIN_LENGTH and length in LENGTHS:
            variants = _rope_variants(model, length)
            curves = _oracle(model, "recall", length, head, variants)
            record.setdefault("oracle", {})[str(length)] = curves
            for key, curve in curves.items():
                scope, variant = key.split(":")
                best = curve["factors"][int(np.argmin(curve["loss"]))]
                factor = _factor(variants[variant], length, best, scope, head)
                e = lm_train.evaluate_task(model, batch, factor, config=variants[variant])
                evaluations.setdefault(f"oracle_{scope}:{variant}", {})[str(length)] = _stats(e) | {
                    "factor": best
                }
    record["eval"] = evaluations


def run_text(job, model, record):
    """Masked-token accuracy (MLM) or the needle's exact match, by length (and depth)."""
    from attnscale.models import lm_train
    from attnscale.practice.length_rules import rule_factors

    quick = _STATE["quick"]
    rules = {}
    if job["task"] == "needle" and model.config.scale_rule == "standard":
        # the rules applied at test to O, from its heads at L (as for recall)
        entropy_l, spread_l = _calibration(model, "needle")
        rules, _ = rule_factors(
            model.config.head_dim, entropy_l, spread_l, TRAIN_LENGTH, max(LENGTHS), 4 if quick else 24
        )
        record["at_L"] = {"entropy": rounded(entropy_l), "score_std": rounded(spread_l)}
    evaluations = {}
    for length in LENGTHS:
        if quick and length > 256:
            continue
        for variant, vconfig in _rope_variants(model, length).items():
            if job["task"] == "mlm":
                batch = make_batch(
                    "mlm", length, windows_at(length, TEST_TOKENS, quick), TEST_SEED + length, "test"
                )
                e = lm_train.evaluate_task(model, batch, config=vconfig)
                # masked positions differ per window: accuracy per window from its own positions
                evaluations.setdefault(f"trained:{variant}", {})[str(length)] = {
                    "acc_by_window": rounded(e["correct"].mean(axis=1), 5),
                    "loss_by_window": rounded(e["loss"].mean(axis=1), 5),
                }
                continue
            arms = {"trained": None}
            if rules and length > TRAIN_LENGTH:
                arms |= {name: rule(length) for name, rule in rules.items()}
            for arm, factor in arms.items():
                by_depth = {}
                for depth in NEEDLE_DEPTHS:
                    batch = make_batch(
                        "needle",
                        length,
                        NEEDLE_WINDOWS if not quick else 2,
                        TEST_SEED + length + int(100 * depth),
                        "test",
                        depth=depth,
                    )
                    by_depth[str(depth)] = _stats(
                        lm_train.evaluate_task(model, batch, factor, config=vconfig)
                    )
                evaluations.setdefault(f"{arm}:{variant}", {})[str(length)] = by_depth
    record["eval"] = evaluations


def run_bidirectional_recall(job, model, record):
    """Bidirectional recall by length; a relu^2 model with N fixed at L and with N = the window."""
    from attnscale.models import lm_train

    quick = _STATE["quick"]
    config = model.config
    arms = {"trained": config}
    if config.normalizer == "relu2":
        arms = {"fixed_N": config, "sample_N": replace(config, relu2_length=None)}
    evaluations = {}
    for length in LENGTHS:
        if quick and length > 256:
            continue
        batch = make_batch(
            "bidirectional_recall", length, windows_at(length, TEST_TOKENS, quick), TEST_SEED + length
        )
        for arm, arm_config in arms.items():
            e = lm_train.evaluate_task(model, batch, config=arm_config)
            evaluations.setdefault(f"{arm}:plain", {})[str(length)] = _stats(e)
    record["eval"] = evaluations


def run_job(job):
    from attnscale.models import lm_train

    quick = _STATE["quick"]
    config = config_for(job, quick)
    begin = time.perf_counter()
    model = lm_train.train_task(
        config, training_batches(config, job["task"], job["seed"]), job["seed"], progress=count_step
    )
    record = {**job, "log": model.log()}
    if config.scale_rule == "ssmax":
        record["ssmax_s"] = rounded([layer["ssmax_s"] for layer in model.params["layers"]])
    if job["task"] == "recall":
        run_recall(job, model, record)
    elif job["task"] == "bidirectional_recall":
        run_bidirectional_recall(job, model, record)
    else:
        run_text(job, model, record)
    record["seconds"] = time.perf_counter() - begin
    return record


def job_steps(job, quick):
    return config_for(job, quick).steps


# -- the main loop ------------------------------------------------------------------


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--only",
        choices=["recall", "recall:rope", "recall:nope", "bidirectional", "needle"],
        help="one part; the results file then holds every finished run of the cache",
    )
    parser.add_argument(
        "--rules",
        nargs="+",
        choices=["standard", "logn512", "ssmax", "softmax", "relu2"],
        help="train these arms only (e.g. the trained-in rules on new seeds)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="processes (default: 1 per core, at most 2)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny models and runs: a smoke test")
    args = parser.parse_args(argv[1:])

    workers = default_workers(args.workers)
    info = provenance(argv, workers)
    cache = ROOT / "experiments" / ".cache" / args.out.stem
    done = run_resumable(
        run_job,
        jobs_for(args.seeds, args.only, args.rules),
        job_name,
        cache,
        info,
        args.quick,
        lambda job: job_steps(job, args.quick),
        workers,
        _init_worker,
        (args.quick,),
    )
    records = sorted(done.values(), key=lambda r: (r["task"], r["positions"], r["rule"], r["seed"]))
    settings = {
        "base_config": asdict(base_config(args.quick)),
        "part_steps": PART_STEPS,
        "seeds": sorted({r["seed"] for r in records}),
        "train_length": TRAIN_LENGTH,
        "lengths": list(LENGTHS),
        "long_lengths": list(LONG_LENGTHS),
        "recall_vocabulary": {"n_keys": N_KEYS, "n_values": N_VALUES},
        "test_tokens": TEST_TOKENS,
        "validation_tokens": VALIDATION_TOKENS,
        "min_windows": MIN_WINDOWS,
        "oracle_factors": list(ORACLE_FACTORS),
        "oracle_selects_by": "validation loss",
        "rules_apply_beyond": TRAIN_LENGTH,
        "mlm_rate": MLM_RATE,
        "needle_depths": list(NEEDLE_DEPTHS),
        "needle_windows": NEEDLE_WINDOWS,
        "seeds_of_data": {"test": TEST_SEED, "validation": VALIDATION_SEED, "control": CONTROL_SEED},
        "quick": args.quick,
    }
    out = {"provenance": info, "settings": settings, "runs": records}
    write_results(args.out, out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB), {len(records)} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
