"""Shared fixtures: the book is built once per test session, from a copy, in the background.

The slow work starts as soon as the tests are collected, side by side, so
that both cores stay busy:

* the book build (``built_book``), which itself executes the chapters in
  parallel (``book/_ext/parallel_chapters.py``);
* the reruns of every chapter as a reader reruns them (``tests/test_rerun.py``);
* the PDF build, as soon as the HTML build has finished (``tests/test_pdf.py``).

Meanwhile the tests that need none of it run first: the package's unit and
property tests, then the fault-injection builds of ``tests/test_book.py``;
the tests that read the built book come last.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from bookbuild import CHROMIUM_ARGS, build_pdf, copy_book, missing_pdf_tools, notebook_chapters, start_build

RERUN_SCRIPT = Path(__file__).with_name("rerun_chapters.py")
BACKGROUND = pytest.StashKey[dict]()


def _needs(item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(session, config, items):
    """Tests that read the built book go last (stable order otherwise)."""
    items.sort(key=lambda item: _needs(item, "built_book") or _needs(item, "rerun_notebook"))


def pytest_collection_finish(session):
    """Start the book build, the chapters' reruns and the PDF build now, in the background."""
    background = session.config.stash.setdefault(BACKGROUND, {})
    if session.config.option.collectonly:
        return
    factory = session.config._tmp_path_factory
    items = session.items
    if any(_needs(item, "rerun_notebook") for item in items):
        out = Path(factory.mktemp("reruns"))
        chapters = [str(p) for p in notebook_chapters()]
        background["reruns"] = (
            subprocess.Popen(
                [sys.executable, str(RERUN_SCRIPT), str(out), *chapters],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
            out,
        )
    if any(_needs(item, "built_book") for item in items) and not os.environ.get("ATTNSCALE_BUILT_HTML"):
        source = copy_book(factory.mktemp("book-src"))
        background["book"] = start_build(source, factory.mktemp("book-out"))
        wants_pdf = any(item.nodeid.startswith("tests/test_pdf.py") for item in items)
        if wants_pdf and not missing_pdf_tools():
            background["pdf"] = _after_build(background["book"])


def _after_build(build):
    """A thread that builds the PDF once the HTML build has succeeded; returns the record it fills."""
    record: dict = {}

    def run():
        result = build.wait()
        if result.returncode == 0:
            record["pdf"] = build_pdf(result)

    record["thread"] = threading.Thread(target=run, daemon=True)
    record["thread"].start()
    return record


def pytest_sessionfinish(session):
    background = session.config.stash.get(BACKGROUND, {})
    processes = [background["reruns"][0]] if "reruns" in background else []
    if "book" in background:
        processes.append(background["book"].process)
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def rerun_notebook(request):
    """``rerun_notebook(chapter)``: the chapter executed as a reader reruns it.

    Waits for the background rerun started at collection (or runs it here,
    when the session did not start one).
    """
    process, out = request.config.stash.get(BACKGROUND, {}).get("reruns", (None, None))
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
def built_book(request, tmp_path_factory):
    """The session's build of a fresh copy of the book, exactly as the README builds it.

    Returns ``(result, html_dir)``.  The copy lives in a new temporary folder,
    so no earlier build or execution cache can leak into it.

    ATTNSCALE_BUILT_HTML=<dir> uses an existing build's HTML folder instead
    (for iterating on the browser tests only; the full suite builds afresh).
    """
    existing = os.environ.get("ATTNSCALE_BUILT_HTML")
    if existing:
        done = subprocess.CompletedProcess(["(existing build)"], 0, "", "")
        return done, Path(existing)
    build = request.config.stash.get(BACKGROUND, {}).get("book")
    if build is None:  # not started at collection (a test asked for it another way)
        build = start_build(
            copy_book(tmp_path_factory.mktemp("book-src")), tmp_path_factory.mktemp("book-out")
        )
    result = build.wait()
    output = Path(result.args[result.args.index("--path-output") + 1])
    return result, output / "_build" / "html"


@pytest.fixture(scope="session")
def background_pdf(request, built_book):
    """The PDF build started when the HTML build finished: ``(result, pdf)``, or None if none was started."""
    record = request.config.stash.get(BACKGROUND, {}).get("pdf")
    if record is None:
        return None
    record["thread"].join()
    return record.get("pdf")


@pytest.fixture(scope="session")
def served_book(built_book):
    """The session's HTML build served on 127.0.0.1 (a plain static server): its base URL."""
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"
    with _serving(html) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's), for the browser and calculator-page tests."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        if os.environ.get("ATTNSCALE_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium is required (ATTNSCALE_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@contextlib.contextmanager
def _serving(directory):
    """Serve ``directory`` over HTTP on a free local port, quietly; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="session")
def serve_folder():
    """``with serve_folder(path) as url:`` serves a built book's folder to the browser tests."""
    return _serving
