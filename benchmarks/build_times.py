"""How long the book takes: install, build, each chapter, each test file, in one run.

    python benchmarks/build_times.py              # serial and parallel build, then the test suite
    python benchmarks/build_times.py --install    # ... and a fresh virtual environment's install first
    python benchmarks/build_times.py --no-tests   # the two builds only (about 3 minutes)

Every timing comes from this run, on this machine:

* install: ``python -m pip install -r requirements.txt`` into a new virtual
  environment (``--install``; pip's cache makes a second run faster);
* the README's build command on a fresh copy of the book, once serial
  (``ATTNSCALE_BUILD_JOBS=1``, the baseline) and once as it runs by default
  (the chapters side by side, ``book/_ext/parallel_chapters.py``), with the
  ratio of the two;
* each chapter's execution, from the serial build's log (MyST-NB prints
  "Executed notebook in ... seconds"), with the 15-second budget marked;
* the README's test command (``python -m pytest``), with each test file's
  share of the time spent in tests (pytest's JUnit report).  The book build,
  the chapters' reruns and the PDF run in the background during the tests,
  so a file's share counts the time its tests waited for them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from bookbuild import BUILD_FLAGS, copy_book, jupyter_book_executable  # noqa: E402

WEIGHTS = ROOT / "book" / "_ext" / "chapter_seconds.json"  # read by parallel_chapters.py
CHAPTER_BUDGET = 15.0  # seconds, each chapter on its own
BUILD_BUDGET = 90.0  # seconds, the README's build
TEST_BUDGET = 600.0  # seconds, the README's tests


def host_speed() -> float:
    """Seconds for a fixed pure-Python loop: how fast this machine's host is right now.

    On a shared host the same loop took 0.46 s at one moment and 0.97 s at
    another; printed before and after the runs, it says whether two reports
    (or two parts of one) can be compared directly.
    """
    start = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - start


def timed(command, **kwargs):
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    return time.perf_counter() - start, done


def install_time(scratch: Path) -> float:
    env_dir = scratch / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    seconds, done = timed([str(python), "-m", "pip", "install", "-q", "-r", "requirements.txt"], cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"the install failed:\n{done.stderr[-2000:]}")
    return seconds


def build_time(scratch: Path, jobs: str | None) -> tuple[float, str]:
    source = copy_book(scratch / f"src-{jobs or 'default'}")
    env = dict(os.environ)
    env.pop("ATTNSCALE_BUILD_JOBS", None)
    if jobs is not None:
        env["ATTNSCALE_BUILD_JOBS"] = jobs
    command = [jupyter_book_executable(), "build", str(source), *BUILD_FLAGS]
    seconds, done = timed(command, cwd=source, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the build failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return seconds, done.stdout + done.stderr


def chapter_times(log: str) -> dict[str, float]:
    found = re.findall(r"book/([\w-]+)\.md: Executed notebook in ([0-9.]+) seconds", log)
    return {name: float(seconds) for name, seconds in found}


def test_times(scratch: Path) -> tuple[float, dict[str, float], str]:
    report = scratch / "junit.xml"
    seconds, done = timed(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"], cwd=ROOT
    )
    per_file: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "?").split(".")
        module = next((part for part in parts if part.startswith("test_")), parts[0])
        per_file[f"{module}.py"] += float(case.get("time", 0.0))
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    return seconds, dict(per_file), summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--install", action="store_true", help="time a fresh virtual environment's install too"
    )
    parser.add_argument("--no-tests", action="store_true", help="time the builds only")
    parser.add_argument(
        "--save-weights",
        action="store_true",
        help="write each chapter's serial execution time to book/_ext/chapter_seconds.json, "
        "which the parallel build uses to start the heaviest chapters first",
    )
    args = parser.parse_args()
    print(f"on this machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"host speed: a fixed Python loop takes {host_speed():.2f} s (0.46 s at the fastest seen)\n")
    scratch = Path(tempfile.mkdtemp(prefix="build-times-"))
    try:
        if args.install:
            print(f"install (new venv, pip -r requirements.txt): {install_time(scratch):7.1f} s\n")
        serial, log = build_time(scratch, "1")
        parallel, _ = build_time(scratch, None)
        print("README build command, clean copy of the book")
        print(f"  serial   (ATTNSCALE_BUILD_JOBS=1) {serial:7.1f} s   1.00x   (the baseline)")
        print(
            f"  parallel (default)                {parallel:7.1f} s   {serial / parallel:4.2f}x faster"
            f"   budget {BUILD_BUDGET:.0f} s: {'ok' if parallel <= BUILD_BUDGET else 'OVER'}\n"
        )
        chapters = chapter_times(log)
        print("each chapter's execution (serial build)")
        for name, seconds in sorted(chapters.items(), key=lambda kv: -kv[1]):
            mark = "" if seconds <= CHAPTER_BUDGET else f"   over {CHAPTER_BUDGET:.0f} s"
            print(f"  {name:<20} {seconds:6.1f} s  {seconds / serial:6.1%} of the serial build{mark}")
        print(f"  {'all chapters':<20} {sum(chapters.values()):6.1f} s\n")
        if args.save_weights:
            weights = {f"book/{name}": round(seconds, 1) for name, seconds in sorted(chapters.items())}
            commit = subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
            ).stdout.strip()
            dirty = subprocess.run(
                ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=False
            ).stdout.strip()
            record = {
                "command": "python benchmarks/build_times.py " + " ".join(sys.argv[1:]),
                "commit": commit + (" (with uncommitted changes)" if dirty else ""),
                "measured": f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, serial build",
                "seconds": weights,
            }
            WEIGHTS.write_text(json.dumps(record, indent=1) + "\n")
            print(f"wrote {WEIGHTS.relative_to(ROOT)}\n")
        if not args.no_tests:
            seconds, per_file, summary = test_times(scratch)
            print(
                f"README test command: {seconds:7.1f} s   budget {TEST_BUDGET:.0f} s: "
                f"{'ok' if seconds <= TEST_BUDGET else 'OVER'}   ({summary})"
            )
            spent = sum(per_file.values())
            for name, share in sorted(per_file.items(), key=lambda kv: -kv[1]):
                print(f"  {name:<28} {share:7.1f} s  {share / spent:6.1%}")
        print(f"\nhost speed at the end: the same loop takes {host_speed():.2f} s")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
