"""Does the length answer carry?  The retrieval models in a real model's rotary regime, against practice.

    python experiments/carry.py --part baselines-matched   # one part (resumable: finished runs are kept)
    python experiments/carry.py --part law-64 --seeds 0 1 2
    python experiments/carry.py --quick --part baselines-matched --out /tmp/c.json   # a smoke run

The recall task and models of ``retrieval.py`` (2 blocks of 2 heads, trained
at L tokens), asked three questions the first sweep left open.  Each part
writes ``book/data/carry-<part>.json`` with everything the chapters read and
its provenance (command, git commit, clean tree, package versions, seeds,
per-step losses, wall times).  Never edit a results file by hand: rerun
this.  Each finished run is kept in ``experiments/.cache/carry-<part>/`` so
that an interrupted part resumes where it stopped (a run made at another
commit is refused).

Parts (every arm paired by seed: the same initial weights and batches):

``baselines-matched``, ``baselines-longest``, ``baselines-plain``
    O (the standard scale) with RoPE, trained at L = 64 in three rotary
    regimes: ``matched``, the base that gives it the share of frequency
    pairs completing a period within L of a 4k, base-1e4 model
    (:func:`attnscale.practice.length_rules.matched_rope_base`, 27.1: 12 of its 16
    pairs, as 46 of 64 in that model); ``longest``, the base whose slowest
    pair spans as many training lengths as that model's, 13.3
    (:func:`attnscale.practice.length_rules.longest_wavelength_rope_base`, 187.7:
    8 of 16 pairs within L); and ``plain``, base 1e4 (5 of 16).  One base
    cannot match both at L = 64.  At every length L ... 16L the model is
    tested under what practitioners use: the frequencies unchanged,
    position interpolation (PI), the NTK-aware base, YaRN with and without
    its logit factor, Qwen's dynamic NTK with its log_L n factor, and the
    NTK-aware base with log_L n (the book's advice); each also after a
    short fine-tune at 4L (FINETUNE_STEPS steps of FINETUNE_BATCH windows
    of 4L tokens: 4% of the training steps and of its tokens), then tested
    with the stretch max(4, T/L).  The fine-tune with the frequencies
    unchanged is the control: what the longer windows alone do.  Under the
    NTK-aware base, the oracle factor: the constant on the logits that
    minimizes the validation loss, on every head, on every head past L only
    (like Qwen's, which is 1 up to L), and on each head alone, with each
    validation window's loss stored (two-way intervals); and under YaRN's
    frequencies, the oracle factor on every head (is YaRN's own logit factor
    the best one?).
``trained-longest``
    Su's log_512 n (E) and Scalable-Softmax trained in, ``longest`` base,
    tested with the frequencies unchanged and with the NTK-aware base.
``needle-plain``, ``needle-longest``
    The same baselines on the needle task (the models of ``retrieval.py
    --only needle``: a ``key = value`` line planted in the SymPy text and
    asked at the end), O with RoPE in the plain and longest regimes,
    trained at L = 64; digit accuracy (exact match also stored) on the needle
    chapter's test windows (5 depths of 32 windows at each length), each
    method at test only and after the same fine-tune at 4L (on needle
    windows).  One more method at test: position interpolation with YaRN's
    logit factor (``pi_logit``), which separates YaRN's factor from its
    frequencies.  No oracle factor.
``pi-logit-plain``, ``pi-logit-longest``
    The recall models of ``baselines-plain`` and ``baselines-longest``
    retrained (same seeds, same weights: PI and YaRN reproduce that file),
    tested under PI with YaRN's logit factor, and the oracle factor on every
    head under PI's frequencies: is YaRN's factor what PI lacks?
``law-32``, ``law-64``, ``law-128``
    O at L = 32, 64 or 128 tokens, at two widths (d_model 64 and 128, two
    heads), without positions and with the ``longest`` base (NTK-aware
    beyond L); the oracle factor at 2L ... 16L on every head, past L only,
    and on the retrieval head, per window: how the length law moves with L
    and width.

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

PARTS = (
    "baselines-matched",
    "baselines-longest",
    "baselines-plain",
    "trained-longest",
    "law-32",
    "law-64",
    "law-128",
    "needle-plain",
    "needle-longest",
    "pi-logit-plain",
    "pi-logit-longest",
)
PLAIN_BASE = 10000.0
REFERENCE = {"base": 10000.0, "length": 4096, "head_dim": 128}  # the regime matched: a 4k, base-1e4 model
STRETCHES = (1, 2, 4, 8, 16)  # test lengths T = sL
FINETUNE_STRETCH, FINETUNE_STEPS, FINETUNE_BATCH = 4, 60, 8
FINETUNE_RATE, FINETUNE_WARMUP = 3e-4, 6
FINETUNE_SEED = 50_000  # the fine-tune's batches: step_seed(FINETUNE_SEED + seed, step)
METHODS = ("plain", "pi", "ntk", "yarn", "yarn_nologit", "qwen_dynamic", "ntk_logn")
FINETUNED = ("plain", "pi", "ntk", "yarn", "yarn_nologit", "qwen_dynamic")
NEEDLE_METHODS = (*METHODS, "pi_logit")  # PI's frequencies with YaRN's logit factor
PI_LOGIT_METHODS = ("pi", "pi_logit", "yarn", "yarn_nologit")
WIDTHS = (64, 128)


# -- the models ---------------------------------------------------------------------


def model_config(job, quick):
    """The recall model of ``retrieval.py`` at the job's length, width, positions, base and rule."""
    import retrieval

    base = retrieval.base_config(quick)
    if job.get("task") == "needle":  # the needle chapter's model: bytes of text, causal
        base = retrieval.config_for({"task": "needle", "positions": "rope", "rule": "standard"}, quick)
    length = job["train_length"]
    width = job.get("width", base.d_model)
    rope_base = regime_base(job["regime"], length, width // base.n_heads)
    return replace(
        base,
        train_length=length,
        positions=job["positions"],
        scale_rule=job["rule"],
        rope_base=rope_base,
        d_model=width,
        d_mlp=4 * width,
    )


def _reference():
    return {"reference_base": REFERENCE["base"], "reference_length": REFERENCE["length"]}


def regime_base(regime, length, head_dim):
    """The RoPE base of a regime: ``plain`` 1e4; ``matched``: the reference's share of pairs within L;
    ``longest``: the reference's slowest wavelength in training lengths."""
    from attnscale.practice.length_rules import longest_wavelength_rope_base, matched_rope_base

    if regime == "plain":
        return PLAIN_BASE
    if regime == "matched":
        return matched_rope_base(length, **_reference())
    return longest_wavelength_rope_base(
        length, head_dim, **_reference(), reference_head_dim=REFERENCE["head_dim"]
    )


def jobs_for(part, seeds):
    """Every run of a part, heaviest first."""
    if part.startswith("baselines"):
        regime = part.split("-")[1]
        arms = [dict(regime=regime, positions="rope", rule="standard", train_length=64)]
    elif part.startswith("needle"):
        regime = part.split("-")[1]
        arms = [dict(task="needle", regime=regime, positions="rope", rule="standard", train_length=64)]
    elif part.startswith("pi-logit"):
        regime = part.split("-")[2]
        arms = [dict(regime=regime, positions="rope", rule="standard", train_length=64)]
    elif part == "trained-longest":
        arms = [
            dict(regime="longest", positions="rope", rule=r, train_length=64) for r in ("logn512", "ssmax")
        ]
    else:
        length = int(part.split("-")[1])
        arms = [
            dict(regime="longest", positions=p, rule="standard", train_length=length, width=w)
            for w in sorted(WIDTHS, reverse=True)
            for p in ("rope", "nope")
        ]
    return [{"part": part, **arm, "seed": s} for arm in arms for s in seeds]


def job_name(job):
    width = f"-w{job['width']}" if "width" in job else ""
    task = "needle-" if job.get("task") == "needle" else ""
    arm = f"{job['positions']}-{job['regime']}-{job['rule']}-L{job['train_length']}{width}"
    return f"{task}{arm}-{job['seed']}"


# -- the frequency rules ------------------------------------------------------------


def method_setting(config, method, stretch):
    """The configuration and logit factor of ``method`` for windows of ``stretch`` * L tokens.

    Returns ``(config, factor)`` where ``factor`` maps a window length T to a
    ``(layers, heads, T)`` array (or None: 1 everywhere).
    """
    from attnscale.practice.length_rules import (
        interpolation_frequency_factors,
        ntk_rope_base,
        qwen_ntk_alpha,
        yarn_frequency_factors,
    )

    length, dh = config.train_length, config.head_dim
    stretched_length = round(stretch * length)
    if method == "plain" or stretch == 1:
        return config, None
    if method in ("pi", "pi_logit"):
        factors = interpolation_frequency_factors(dh, stretch)
        tuned = replace(config, rope_frequency_factors=tuple(float(f) for f in factors))
        return tuned, (_yarn_logit(config, stretch) if method == "pi_logit" else None)
    if method in ("ntk", "ntk_logn"):
        tuned = replace(config, rope_base=ntk_rope_base(config.rope_base, dh, length, stretched_length))
        return tuned, (_logn(config) if method == "ntk_logn" else None)
    if method in ("yarn", "yarn_nologit"):
        factors = yarn_frequency_factors(config.rope_base, dh, length, stretch)
        tuned = replace(config, rope_frequency_factors=tuple(float(f) for f in factors))
        return tuned, (None if method == "yarn_nologit" else _yarn_logit(config, stretch))
    if method == "qwen_dynamic":
        alpha = qwen_ntk_alpha(stretched_length, length)
        tuned = replace(config, rope_base=config.rope_base * alpha ** (dh / (dh - 2)))
        return tuned, _logn(config)
    raise ValueError(f"unknown method {method!r}")


def _yarn_logit(config, stretch):
    """YaRN's logit factor m(s)^2 on every head and position."""
    from attnscale.practice import recipes

    logit = float(recipes.yarn_mscale(stretch)) ** 2
    return lambda t: np.full((config.n_layers, config.n_heads, t), logit, dtype=np.float32)


def _logn(config):
    """Qwen's log_L n on every head, 1 for queries that see at most L keys."""

    def factor(t):
        n = np.arange(1, t + 1, dtype=float)
        values = np.where(n > config.train_length, np.log(n) / np.log(config.train_length), 1.0)
        return np.broadcast_to(values, (config.n_layers, config.n_heads, t)).astype(np.float32)

    return factor


# -- evaluation ---------------------------------------------------------------------

_STATE: dict = {}


def _init_worker(quick):
    _STATE.update(quick=quick)


def _needle_batch(length, depth):
    """The needle chapter's test windows at ``length`` tokens with the needle at ``depth``."""
    import retrieval

    windows = retrieval.NEEDLE_WINDOWS if not _STATE["quick"] else 2
    seed = retrieval.TEST_SEED + length + int(100 * depth)  # as retrieval.run_text
    return retrieval.make_batch("needle", length, windows, seed, "test", depth=depth)


def _test_batch(length):
    import retrieval

    quick = _STATE["quick"]
    return retrieval.make_batch(
        "recall",
        length,
        retrieval.windows_at(length, retrieval.TEST_TOKENS, quick),
        retrieval.TEST_SEED + length,
    )


def _validation_batch(length):
    import retrieval

    quick = _STATE["quick"]
    windows = retrieval.windows_at(length, retrieval.VALIDATION_TOKENS, quick)
    return retrieval.make_batch("recall", length, windows, retrieval.VALIDATION_SEED + length, "validation")


def _evaluate(model, batch, config, factor=None):
    import retrieval

    from attnscale.models import lm_train

    e = lm_train.evaluate_task(model, batch, factor, config=config)
    return retrieval._stats(e)


def _stretches(config):
    quick = _STATE["quick"]
    return STRETCHES[:3] if quick else STRETCHES


def evaluate_methods(model, methods, floor=1, task="recall"):
    """Every method at every test length; the stretch is max(floor, T/L).

    A needle evaluation is keyed by depth (``[method][stretch][depth]``), as
    ``retrieval.py`` writes the needle chapter's.
    """
    import retrieval

    config = model.config
    out = {}
    for s in _stretches(config):
        length = s * config.train_length
        if task == "recall":
            batches = {None: _test_batch(length)}
        else:
            batches = {str(d): _needle_batch(length, d) for d in retrieval.NEEDLE_DEPTHS}
        for method in methods:
            tuned, factor = method_setting(config, method, max(floor, s))
            f = None if factor is None else factor(length)
            scored = {d: _evaluate(model, b, tuned, f) for d, b in batches.items()}
            out.setdefault(method, {})[str(s)] = scored[None] if task == "recall" else scored
    return out


def _scope_factor(config, length, value, scope):
    factor = np.ones((config.n_layers, config.n_heads, length), dtype=np.float32)
    if scope == "all":
        factor[:] = value
    elif scope == "beyond":
        factor[:, :, config.train_length :] = value  # queries that see more than L keys
    else:
        layer, head = (int(i) for i in scope.split(":")[1].split("."))
        factor[layer, head] = value
    return factor


def oracle(model, scopes, variant_of):
    """Validation loss and accuracy per window for every oracle factor, scope and length > L."""
    import retrieval

    from attnscale.models import lm_train

    config = model.config
    grid = retrieval.ORACLE_FACTORS if not _STATE["quick"] else retrieval.ORACLE_FACTORS[::5]
    out = {}
    for s in _stretches(config)[1:]:
        length = s * config.train_length
        batch = _validation_batch(length)
        tuned = variant_of(s)
        for scope in scopes:
            losses, accs = [], []
            for value in grid:
                e = lm_train.evaluate_task(
                    model, batch, _scope_factor(tuned, length, value, scope), config=tuned
                )
                losses.append(rounded(e["loss"].mean(axis=1), 5))
                accs.append(rounded(e["correct"].mean(axis=1), 5))
            out.setdefault(scope, {})[str(s)] = {"loss_by_window": losses, "acc_by_window": accs}
    return {"factors": list(grid), "curves": out}


def retrieval_head(model):
    """The (layer, head) with the most weight on the answer's pair at L, and every head's weight."""
    from attnscale.models import lm_train

    config = model.config
    e = lm_train.evaluate_task(model, _test_batch(config.train_length))
    weight = np.nanmean(e["answer_weight"], axis=(0, 3))
    head = tuple(int(i) for i in np.unravel_index(np.argmax(weight), weight.shape))
    return head, rounded(weight, 5)


def finetune(model, method, seed, task="recall"):
    """FINETUNE_STEPS steps at FINETUNE_STRETCH * L under ``method``, from the trained weights."""
    import retrieval

    from attnscale.models import lm_train
    from attnscale.models.tasks import step_seed

    config = model.config
    length = FINETUNE_STRETCH * config.train_length
    tuned, factor = method_setting(config, method, FINETUNE_STRETCH)
    steps = FINETUNE_STEPS if not _STATE["quick"] else 4
    train_config = replace(
        tuned,
        train_length=length,
        steps=steps,
        batch=FINETUNE_BATCH,
        learning_rate=FINETUNE_RATE,
        warmup=min(FINETUNE_WARMUP, steps - 1),
    )
    # a logit factor (YaRN's, Qwen's log_L n) applies during the fine-tune too: the model learns under it
    batches = lambda step: retrieval.make_batch(  # noqa: E731
        task, length, FINETUNE_BATCH, step_seed(FINETUNE_SEED + seed, step)
    )
    tuned_model = lm_train.train_task(
        train_config,
        batches,
        seed,
        progress=count_step,
        init=model.params,
        factor=None if factor is None else factor(length),
    )
    # the pretraining configuration back: every stretch counts from its L, and the method sets the rest
    return replace(tuned_model, config=config)


def _ntk(config, stretch):
    """``config`` with the NTK-aware base for windows of ``stretch`` * L tokens."""
    from attnscale.practice.length_rules import ntk_rope_base

    length = stretch * config.train_length
    return replace(
        config, rope_base=ntk_rope_base(config.rope_base, config.head_dim, config.train_length, length)
    )


def _yarn(config, stretch):
    """``config`` with YaRN's frequencies (without its logit factor) for windows of ``stretch`` * L tokens."""
    return method_setting(config, "yarn_nologit", stretch)[0]


def run_baselines(job, model, record):
    from attnscale.practice.length_rules import rotary_pairs_within

    config = model.config
    record["rope_base"] = config.rope_base
    record["pairs_within_L"] = rotary_pairs_within(config.rope_base, config.head_dim, config.train_length)
    head, weight = retrieval_head(model)
    record["retrieval_head"], record["answer_weight_at_L"] = list(head), weight
    record["test"] = evaluate_methods(model, METHODS)
    scopes = ["all", "beyond"] + [
        f"head:{i}.{j}" for i in range(config.n_layers) for j in range(config.n_heads)
    ]
    record["oracle_ntk"] = oracle(model, scopes, lambda s: _ntk(config, s))
    # the factor that serves best on top of YaRN's frequencies: is YaRN's own logit factor it?
    record["oracle_yarn"] = oracle(model, ["all", "beyond"], lambda s: _yarn(config, s))
    record["finetuned"] = run_finetunes(job, model)


def run_finetunes(job, model, task="recall"):
    """Each of FINETUNED fine-tuned at 4L from the trained weights, then tested under itself."""
    finetuned = {}
    for method in FINETUNED:
        begin = time.perf_counter()
        tuned = finetune(model, method, job["seed"], task)
        finetuned[method] = {
            "losses": rounded(tuned.losses, 5),
            "eval": evaluate_methods(tuned, [method], floor=FINETUNE_STRETCH, task=task)[method],
            "seconds": round(time.perf_counter() - begin, 1),
        }
    return finetuned


def run_needle(job, model, record):
    from attnscale.practice.length_rules import rotary_pairs_within

    config = model.config
    record["rope_base"] = config.rope_base
    record["pairs_within_L"] = rotary_pairs_within(config.rope_base, config.head_dim, config.train_length)
    record["test"] = evaluate_methods(model, NEEDLE_METHODS, task="needle")
    record["finetuned"] = run_finetunes(job, model, task="needle")


def run_pi_logit(job, model, record):
    config = model.config
    record["rope_base"] = config.rope_base
    record["test"] = evaluate_methods(model, PI_LOGIT_METHODS)
    # the factor that serves best on top of PI's frequencies, beside YaRN's m(s)^2
    pi = lambda s: method_setting(config, "pi", s)[0]  # noqa: E731
    record["oracle_pi"] = oracle(model, ["all", "beyond"], pi)


def run_trained(job, model, record):
    config = model.config
    record["rope_base"] = config.rope_base
    head, weight = retrieval_head(model)
    record["retrieval_head"], record["answer_weight_at_L"] = list(head), weight
    record["test"] = evaluate_methods(model, ["plain", "ntk"])


def run_law(job, model, record):
    config = model.config
    record["rope_base"] = config.rope_base
    head, weight = retrieval_head(model)
    record["retrieval_head"], record["answer_weight_at_L"] = list(head), weight
    methods = ["plain", "ntk"] if config.positions == "rope" else ["plain"]
    record["test"] = evaluate_methods(model, methods)

    def variant(s):
        return _ntk(config, s) if config.positions == "rope" else config

    record["oracle"] = oracle(model, ["all", "beyond", f"head:{head[0]}.{head[1]}"], variant)
    if config.positions == "rope":
        record["oracle_yarn"] = oracle(model, ["all"], lambda s: _yarn(config, s))


def run_job(job):
    import retrieval

    from attnscale.models import lm_train

    quick = _STATE["quick"]
    config = model_config(job, quick)
    begin = time.perf_counter()
    task = job.get("task", "recall")
    model = lm_train.train_task(
        config, retrieval.training_batches(config, task, job["seed"]), job["seed"], progress=count_step
    )
    record = {**job, "log": model.log()}
    if config.scale_rule == "ssmax":
        record["ssmax_s"] = rounded([layer["ssmax_s"] for layer in model.params["layers"]])
    if job["part"].startswith("baselines"):
        run_baselines(job, model, record)
    elif job["part"].startswith("needle"):
        run_needle(job, model, record)
    elif job["part"].startswith("pi-logit"):
        run_pi_logit(job, model, record)
    elif job["part"] == "trained-longest":
        run_trained(job, model, record)
    else:
        run_law(job, model, record)
    record["seconds"] = time.perf_counter() - begin
    return record


def job_steps(job, quick):
    steps = model_config(job, quick).steps
    if job["part"].startswith(("baselines", "needle")):
        # a fine-tune step is FINETUNE_BATCH windows of 4L tokens, the tokens of a training step
        steps += len(FINETUNED) * (FINETUNE_STEPS if not quick else 4)
    return steps


# -- the main loop ------------------------------------------------------------------


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=PARTS, required=True)
    parser.add_argument("--out", type=Path, default=None, help="default: book/data/carry-<part>.json")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--workers", type=int, default=None, help="processes (default: 1 per core, at most 2)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny models and runs: a smoke test")
    args = parser.parse_args(argv[1:])
    out_path = args.out or ROOT / "book" / "data" / f"carry-{args.part}.json"

    workers = default_workers(args.workers)
    info = provenance(argv, workers)
    cache = ROOT / "experiments" / ".cache" / out_path.stem
    done = run_resumable(
        run_job,
        jobs_for(args.part, args.seeds),
        job_name,
        cache,
        info,
        args.quick,
        lambda job: job_steps(job, args.quick),
        workers,
        _init_worker,
        (args.quick,),
    )
    records = sorted(done.values(), key=job_name)
    import retrieval

    settings = {
        "part": args.part,
        "base_config": asdict(retrieval.base_config(args.quick)),
        "reference_regime": REFERENCE,
        "bases": {
            regime: {f"L{n}-dh{h}": regime_base(regime, n, h) for n in (32, 64, 128) for h in (32, 64)}
            for regime in ("plain", "matched", "longest")
        },
        "plain_base": PLAIN_BASE,
        "stretches": list(STRETCHES),
        "methods": list(NEEDLE_METHODS if args.part.startswith("needle") else METHODS),
        "needle_depths": list(retrieval.NEEDLE_DEPTHS),
        "needle_windows": retrieval.NEEDLE_WINDOWS,
        "finetune": {
            "methods": list(FINETUNED),
            "stretch": FINETUNE_STRETCH,
            "steps": FINETUNE_STEPS,
            "batch": FINETUNE_BATCH,
            "learning_rate": FINETUNE_RATE,
            "warmup": FINETUNE_WARMUP,
            "seed_offset": FINETUNE_SEED,
            "tested_with_stretch": f"max({FINETUNE_STRETCH}, T/L)",
        },
        "widths": list(WIDTHS),
        "test_tokens": retrieval.TEST_TOKENS,
        "validation_tokens": retrieval.VALIDATION_TOKENS,
        "min_windows": retrieval.MIN_WINDOWS,
        "oracle_factors": list(retrieval.ORACLE_FACTORS),
        "oracle_selects_by": "validation loss",
        "seeds_of_data": {
            "test": retrieval.TEST_SEED,
            "validation": retrieval.VALIDATION_SEED,
            "finetune": FINETUNE_SEED,
        },
        "quick": args.quick,
    }
    out = {"provenance": info, "settings": settings, "runs": records}
    write_results(out_path, out)
    print(f"wrote {out_path} ({out_path.stat().st_size / 1e6:.1f} MB), {len(records)} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
