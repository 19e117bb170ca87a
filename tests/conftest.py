"""Shared fixtures: the book is built once per test session, from a copy."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from bookbuild import build_book, copy_book, notebook_chapters

RERUN_SCRIPT = Path(__file__).with_name("rerun_chapters.py")


def pytest_collection_finish(session):
    """Start rerunning the chapters now if the session will compare reruns.

    The reruns (tests/test_rerun.py) and the book build each execute every
    chapter once, one kernel at a time; started together they use both
    cores of a two-core machine instead of running one after the other.
    """
    if not any(item.nodeid.startswith("tests/test_rerun.py") for item in session.items):
        return
    out = Path(session.config._tmp_path_factory.mktemp("reruns"))
    chapters = [str(p) for p in notebook_chapters()]
    process = subprocess.Popen(
        [sys.executable, str(RERUN_SCRIPT), str(out), *chapters],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    session.config.stash[RERUNS] = (process, out)


RERUNS = pytest.StashKey[tuple]()


def pytest_sessionfinish(session):
    process, _ = session.config.stash.get(RERUNS, (None, None))
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def rerun_notebook(request):
    """``rerun_notebook(chapter)``: the chapter executed as a reader reruns it.

    Waits for the background rerun started at collection (or runs it here,
    when the session did not start one).
    """
    process, out = request.config.stash.get(RERUNS, (None, None))
    if process is None:
        out = Path(request.config._tmp_path_factory.mktemp("reruns"))

    def get(chapter: Path, timeout: float = 1800.0):
        done, failed = out / f"{chapter.stem}.ipynb", out / f"{chapter.stem}.error"
        if process is None:
            subprocess.run([sys.executable, str(RERUN_SCRIPT), str(out), str(chapter)], check=True)
        deadline = time.monotonic() + timeout
        while not (done.exists() or failed.exists()):
            if process.poll() is not None:
                time.sleep(0.5)  # the last file may land just before the exit
                if not (done.exists() or failed.exists()):
                    pytest.fail(f"the rerun process exited ({process.returncode}) without {chapter.name}")
            if time.monotonic() > deadline:
                pytest.fail(f"rerunning {chapter.name} took more than {timeout:.0f} s")
            time.sleep(1.0)
        if failed.exists():
            pytest.fail(f"{chapter.name} failed when rerun as a notebook:\n{failed.read_text()}")
        return nbformat.read(done, as_version=4)

    return get


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build a fresh copy of the book exactly as the README does.

    Returns ``(result, html_dir)``.  The copy lives in a new temporary folder,
    so no earlier build or execution cache can leak into it.

    ATTNSCALE_BUILT_HTML=<dir> uses an existing build's HTML folder instead
    (for iterating on the browser tests only; the full suite builds afresh).
    """
    existing = os.environ.get("ATTNSCALE_BUILT_HTML")
    if existing:
        done = subprocess.CompletedProcess(["(existing build)"], 0, "", "")
        return done, Path(existing)
    source = copy_book(tmp_path_factory.mktemp("book-src"))
    output = tmp_path_factory.mktemp("book-out")
    result = build_book(source, output)
    return result, output / "_build" / "html"
