"""The plumbing shared by the training sweeps (``language_model.py``, ``retrieval.py``).

A pool of worker processes with a progress bar of training steps
(:func:`run_pool`, :func:`count_step`), the provenance every results file
records (:func:`provenance`), JSON-ready rounding (:func:`rounded`) and the
results file written whole or not at all (:func:`write_results`).  None of it
changes what a sweep computes.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def rounded(values, digits=7):
    """JSON-ready floats with ``digits`` significant digits (float32 carries about 7)."""
    array = np.asarray(values, dtype=float)
    if array.ndim == 0:
        return float(f"{float(array):.{digits}g}")
    return [rounded(v, digits) for v in array]


def git_record(argv, packages=("numpy", "scipy")):
    """The command, git commit, clean tree (src/, experiments/), Python, package versions, start."""

    def git(*args):
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    return {
        "command": " ".join(["python", *argv]),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--", "src", "experiments")),
        "python": platform.python_version(),
        "packages": {name: metadata.version(name) for name in packages},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def provenance(argv, workers):
    """The command, git commit, clean tree, package versions, corpus, device and start time."""

    import jax

    from attnscale.models.corpus import SYMPY_CORPUS

    record = git_record(argv, ("jax", "jaxlib", "numpy", "scipy", "sympy"))
    return {
        **record,
        "attnscale": metadata.version("attnscale"),
        "corpus": {"source": f"sympy {SYMPY_CORPUS['sympy']} .py files", "sha256": SYMPY_CORPUS["sha256"]},
        "device": [str(d) for d in jax.devices()],
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "workers": workers,
    }


def default_workers(requested):
    """``requested`` processes, or one per CPU core (at most two) on a CPU, one on an accelerator."""
    import jax

    on_cpu = jax.default_backend() == "cpu"
    return requested or (min(2, os.cpu_count() or 1) if on_cpu else 1)


def bar(done, total, begin):
    """A one-line progress bar of ``done`` out of ``total`` steps since ``begin`` (monotonic)."""
    elapsed = time.monotonic() - begin
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else float("nan")
    filled = int(30 * done / total)
    line = "#" * filled + "." * (30 - filled)
    return f"\r[{line}] {done}/{total} steps, {elapsed / 60:5.1f} min, eta {eta / 60:5.1f} min"


# -- the pool -----------------------------------------------------------------------

_COUNTER = None  # in a worker: the steps done by every worker (a shared integer)


def count_step(step, loss):
    """The ``progress`` callback of :func:`attnscale.models.lm_train.train` in a worker: a step done."""
    with _COUNTER.get_lock():
        _COUNTER.value += 1


def _start_worker(counter, initializer, initargs):
    global _COUNTER
    _COUNTER = counter
    initializer(*initargs)


def run_pool(run_job, jobs, workers, total, initializer, initargs=(), on_record=None):
    """``run_job(job)`` for every job in ``workers`` spawned processes, with a progress bar.

    Each worker first calls ``initializer(*initargs)``; ``run_job`` passes
    :func:`count_step` as the training's ``progress`` so that the bar (on
    stderr) counts the ``total`` training steps of all jobs.  Each record is
    handed to ``on_record`` as it arrives (a cache, say).  Returns the
    records in the order they finished, and the wall seconds.
    """
    context = mp.get_context("spawn")
    counter = context.Value("l", 0)
    begin = time.monotonic()
    records = []
    if jobs:
        total = max(total, 1)
        start = (counter, initializer, initargs)
        with context.Pool(workers, initializer=_start_worker, initargs=start) as pool:
            pending = pool.imap_unordered(run_job, jobs)
            while len(records) < len(jobs):
                try:
                    record = pending.next(timeout=2.0)
                except mp.TimeoutError:
                    pass
                else:
                    if on_record is not None:
                        on_record(record)
                    records.append(record)
                print(bar(min(counter.value, total), total, begin), end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    return records, round(time.monotonic() - begin, 1)


def run_resumable(run_job, jobs, name_of, cache: Path, info, quick, steps_of, workers, initializer, initargs):
    """Run the ``jobs`` not yet in ``cache`` in a pool; keep each record there as it finishes.

    ``cache`` holds one JSON file per finished run, named by ``name_of(job)``;
    a record made at another commit or mode (``quick``) is refused, so a
    resumed sweep never mixes code versions.  Sets
    ``info["wall_seconds_this_call"]`` and ``info["run_seconds_total"]`` and
    returns every finished record (kept and new), keyed by name.
    """
    cache.mkdir(parents=True, exist_ok=True)
    done = {}
    for path in sorted(cache.glob("*.json")):
        record = json.loads(path.read_text())
        if record.get("git_commit") != info["git_commit"] or record.get("quick") != quick:
            raise SystemExit(f"{path} was made at another commit or mode: delete {cache} to start afresh")
        done[path.stem] = record
    todo = [job for job in jobs if name_of(job) not in done]
    total = sum(steps_of(job) for job in todo)
    print(f"{len(done)} runs kept from {cache}, {len(todo)} to go ({total} steps)", file=sys.stderr)

    def keep(record):  # in the cache as soon as it finishes
        record |= {"git_commit": info["git_commit"], "quick": quick}
        (cache / f"{name_of(record)}.json").write_text(json.dumps(record, separators=(",", ":")))
        done[name_of(record)] = record

    _, info["wall_seconds_this_call"] = run_pool(
        run_job, todo, workers, total, initializer, initargs, on_record=keep
    )
    info["run_seconds_total"] = round(sum(r["seconds"] for r in done.values()), 1)
    return done


def write_results(path: Path, out: dict) -> None:
    """Write ``out`` as compact JSON to ``path``, whole or not at all (through a ``.partial`` file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(out, separators=(",", ":")))
    partial.rename(path)
