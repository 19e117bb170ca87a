"""Shared fixtures: the book is built once per test session, from a copy, in the background.

The slow work starts as soon as the tests are collected, side by side, so
that both cores stay busy:

* the book build (``built_book``), which itself executes the chapters in
  parallel (``book/_ext/parallel_chapters.py``);
* the reruns of every chapter as a reader reruns them (``tests/test_rerun.py``);
* the PDF build, as soon as the HTML build has finished (``tests/test_pdf.py``);
* the build of the calculator's probe book (``tests/test_calculator_page.py``):
  its page's form, and the calculator's table that the build computes (some
  8 s of one core, 20-40 s on a busy host), which every test of that file
  reads; started here, it is built once for both workers, beside the rest.

Meanwhile the tests that need none of it run first, on two workers
(pytest-xdist, ``-n 2`` in ``pyproject.toml``): the package's unit and
property tests, the fault-injection builds of ``tests/test_book.py`` and the
calculator page's tests; the tests that read the built book come last.

The background work is started once per session, by the process that
schedules the tests (xdist's controller, or the one pytest process with
``-n 0``), and reports through files in one folder that every worker
reads: ``book.json`` when the HTML build has ended, ``pdf.json`` when the
PDF build has, ``calculator.json`` when the calculator's probe book has, and
in ``reruns/`` one executed notebook (or ``.error``) per chapter and ``exit``
when the reruns have ended.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from bookbuild import (
    CHROMIUM_ARGS,
    build_pdf,
    calculator_probe_source,
    copy_book,
    jupyter_book_executable,
    missing_pdf_tools,
    notebook_chapters,
    start_build,
)

# Every process of the session (the two test workers, the book build's
# kernels, the reruns, the PDF build) does its linear algebra on one thread:
# they already share the two cores, and multithreaded BLAS in each spins
# against the others'.  One chapter (evidence-residual) took 12.3 s of CPU
# with the default threads and 4.4 s on one.  Set before numpy loads
# (nothing imported above loads it), inherited by every process started
# below; a user's own setting is kept.  The book build sets the same for
# its kernels (book/_ext/parallel_chapters.py).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
# ... and keeps the memory it frees, as the build's kernels do (MALLOC_REUSE
# in book/_ext/parallel_chapters.py: a tenth of the chapters' CPU time was
# system time, most of it page faults on fresh pages; this halves it).
# The allocator reads them when a process starts.
for _variable, _value in (("MALLOC_MMAP_THRESHOLD_", str(2**32)), ("MALLOC_TRIM_THRESHOLD_", str(2**32))):
    os.environ.setdefault(_variable, _value)

RERUN_SCRIPT = Path(__file__).with_name("rerun_chapters.py")
#: The background processes this process started (only the scheduling process starts any).
STARTED = pytest.StashKey[list]()
#: The folder the background work reports in (the same for the controller and every worker).
FOLDER = pytest.StashKey[Path]()
#: The test files that read each piece of background work (by the fixtures they name).
WANTS = {
    "book": re.compile(r"\b(built_book|served_book|background_pdf)\b"),
    "reruns": re.compile(r"\brerun_notebook\b"),
    "calculator": re.compile(r"\bcalculator_probe\b"),
}


def _needs(item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _is_controller(config) -> bool:
    """xdist's scheduling process (it runs no test itself)."""
    return not _is_worker(config) and getattr(config.option, "numprocesses", None) not in (None, 0)


def _folder(config) -> Path:
    """The background work's folder: the controller's, passed to every worker."""
    if _is_worker(config):
        return Path(config.workerinput["attnscale_background"])
    if FOLDER not in config.stash:
        config.stash[FOLDER] = Path(config._tmp_path_factory.mktemp("background"))
    return config.stash[FOLDER]


class _XdistHooks:
    """xdist's hooks, registered only when xdist is loaded (pytest rejects unknown hooks)."""

    @staticmethod
    def pytest_configure_node(node):
        """Controller: tell each worker where the background work reports."""
        node.workerinput["attnscale_background"] = str(_folder(node.config))

    @staticmethod
    def pytest_xdist_node_collection_finished(node, ids):
        """Controller: start the background work once, when the first worker has collected."""
        config = node.config
        _check_groups_kept(config, ids)
        if STARTED in config.stash:
            return
        root = Path(str(config.rootpath))
        _start_background(config, {str(root / nodeid.split("::")[0]) for nodeid in ids})


def _check_groups_kept(config, ids):
    """Controller: stop if xdist dropped the test groups, which it does silently.

    pytest-xdist 3.8 marks a test's group by appending ``@<group>`` to its
    node id; pytest 9.2 ignores that write (pytest-xdist#1386), so every test
    became a work unit of its own and the costly module fixtures were made
    on both workers.  requirements.txt pins pytest 9.1.1 for that reason;
    this check keeps the pin honest.
    """
    if not config.getvalue("dist") == "loadgroup":
        return
    grouped = [i for i in ids if Path(i.split("::")[0]).name in GROUPED_FILES]
    if grouped and not any("@" in i.rsplit("]", 1)[-1] for i in grouped):
        raise pytest.UsageError(
            f"xdist dropped the test groups of {len(grouped)} tests (first: {grouped[0]}): this "
            "pytest-xdist does not support this pytest (pytest-xdist#1386); install "
            "requirements.txt's pins"
        )


#: XLA's backend optimization level in the test workers.  Their JAX tests
#: compile hundreds of small programs (a tiny model for each test) and run
#: each for a few steps.  At level 0 those tests took 70 core-seconds where
#: they took 83 (back to back, ``-n 0``; a referee measured 84 against 100).
#: Only the machine code changes: eight steps of the stored language-model
#: runs agree between the levels to 1e-7 (float32 rounding; the replay
#: tests allow 1e-5).  The book build, its kernels and the reruns are
#: started by the controller and keep the default level; a worker that
#: builds a probe book, or the book itself when no controller did, passes
#: the flag on.  A user's own setting is kept.
TEST_XLA_FLAGS = "--xla_backend_optimization_level=0"


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks())
    if _is_worker(config):  # set before any test imports JAX, which reads it on first use
        os.environ.setdefault("XLA_FLAGS", TEST_XLA_FLAGS)


def _reads_background(item) -> bool:
    return _needs(item, "built_book") or _needs(item, "rerun_notebook")


#: Files whose module-scoped fixtures are costly (a probe build, trained
#: models, the calculator's table, a browser and its visits): each half of
#: such a file (the tests that read the built book, and the others) runs on
#: one xdist worker, so that the fixture is made once.
GROUPED_FILES = {
    "test_book.py",
    "test_browser.py",
    "test_calculator_page.py",
    "test_lm.py",
    "test_pdf.py",
    "test_tasks.py",
}


#: The calculator page's cosine tests: about half of that file's time (the
#: causal cosine row alone takes minutes on a loaded machine), so a group of
#: their own lets the two workers share the file (each makes its page once).
CALCULATOR_PAGE_COSINE = {
    "test_causal_cosine_matches_the_package",
    "test_cosine_rows_across_the_domain",
    "test_cosine_solve_matches_the_package",
    "test_cosine_expectations_match_the_package",
    "test_cosine_corners_give_the_package_rows_or_a_message",
    "test_cosine_gradient_scale_matches_the_package",
}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(session, config, items):
    """Tests that read the built book go last (stable order otherwise); the costly files' halves grouped."""
    items.sort(key=_reads_background)
    for item in items:
        if item.path.name in GROUPED_FILES:
            half = "book" if _reads_background(item) else "free"
            group = f"{item.path.stem}-{half}"
            if item.path.name == "test_calculator_page.py" and item.originalname in CALCULATOR_PAGE_COSINE:
                group += "-cosine"  # the file's longest tests, on the other worker
            if item.path.name == "test_browser.py" and half == "book":
                group += f"-{_browser_share(item)}"
            item.add_marker(pytest.mark.xdist_group(group))


def _browser_share(item) -> int:
    """Which of two halves of the browser's book tests ``item`` runs in: 0 or 1.

    The browser tests come last, once the book is built; on one worker they
    were the suite's tail while the other worker sat idle.  Split by page
    (every test of a page on one worker, which loads the page once: the
    visits are cached per process), the pages dealt largest first to the
    lighter half by their measured visit times (tests/browser_seconds.json:
    the API page alone costs as much as four others); tests of no one page
    alternate by name.
    """
    page = getattr(item, "callspec", None) and item.callspec.params.get("page")
    if page is not None:
        return browser_halves().get(page, 0)
    return sum(map(ord, item.originalname)) % 2


@functools.cache
def browser_halves() -> dict[str, int]:
    """Each page's half (0 or 1): pages dealt largest first to the half with less time so far."""
    import json
    import statistics

    seconds = json.loads((Path(__file__).parent / "browser_seconds.json").read_text())["seconds"]
    typical = statistics.median(seconds.values())
    load, halves = [0.0, 0.0], {}
    for page in sorted(notebook_pages(), key=lambda p: (-seconds.get(p, typical), p)):
        half = int(load[1] < load[0])
        halves[page] = half
        load[half] += seconds.get(page, typical)
    return halves


@functools.cache
def notebook_pages() -> list[str]:
    """The book's pages in table-of-contents order (as test_browser.PAGES lists them)."""
    from bookbuild import toc_files

    return toc_files()


def pytest_collection_finish(session):
    """Without xdist: start the background work now, for the tests collected."""
    if session.config.option.collectonly or _is_worker(session.config) or _is_controller(session.config):
        return
    files = {str(item.path) for item in session.items}
    _start_background(session.config, files)


def _start_background(config, files):
    """Start the book build (then the PDF) and the reruns, for whichever of them ``files`` read."""
    started = config.stash.setdefault(STARTED, [])
    folder = _folder(config)
    # the book build and the reruns execute the same chapters: the second to
    # compile a JAX program reads it from the first (book/_ext/parallel_chapters.py)
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(folder / "jax-cache"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    texts = {path: Path(path).read_text() for path in files if path.endswith(".py") and Path(path).exists()}
    wants = {name: any(pattern.search(text) for text in texts.values()) for name, pattern in WANTS.items()}
    wants["book"] = wants["book"] and not os.environ.get("ATTNSCALE_BUILT_HTML")
    wants["pdf"] = wants["book"] and any(Path(path).name == "test_pdf.py" for path in files)
    wants["pdf"] = wants["pdf"] and not missing_pdf_tools()
    _write_json(folder / "plan.json", wants)
    factory = config._tmp_path_factory
    if wants["reruns"]:
        out = folder / "reruns"
        out.mkdir()
        chapters = [str(p) for p in notebook_chapters()]
        # the training chapter and its evidence page train the same sweep: as in
        # the build, the reruns' first kernel to ask trains it and the other reads
        # it (attnscale.support.shared), from a folder of their own, not the build's
        shared = {"ATTNSCALE_SHARED_RESULTS": str(folder / "rerun-shared-results")}
        process = subprocess.Popen(
            [sys.executable, str(RERUN_SCRIPT), str(out), *chapters],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **shared},
        )
        started.append(process)
        _when_done(process, lambda code: (out / "exit").write_text(str(code)))
    if wants["calculator"]:
        started.append(_start_calculator_probe(factory.mktemp("calculator-probe"), folder))
    if wants["book"]:
        build = start_build(copy_book(factory.mktemp("book-src")), factory.mktemp("book-out"))
        started.append(build.process)
        threading.Thread(target=_report_builds, args=(build, folder, wants["pdf"]), daemon=True).start()


def _calculator_probe_build(root: Path) -> list[str]:
    """Write the calculator's probe book into ``root``; the command that builds it (into ``root/_build``)."""
    calculator_probe_source(root)
    return [jupyter_book_executable(), "build", str(root)]


def _calculator_probe_env() -> dict:
    """The build imports the attnscale the tests import (the worktree's, on PYTHONPATH)."""
    import importlib.util

    package = Path(importlib.util.find_spec("attnscale").origin).resolve().parents[1]
    return dict(os.environ, PYTHONPATH=str(package))


def _start_calculator_probe(root: Path, folder: Path):
    log = root / "build.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            _calculator_probe_build(root / "src"),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=_calculator_probe_env(),
        )
    record = {"root": str(root / "src"), "log": str(log)}
    _when_done(process, lambda code: _write_json(folder / "calculator.json", {**record, "returncode": code}))
    return process


def _when_done(process, report):
    """Call ``report(exit code)`` from a thread when ``process`` ends."""
    threading.Thread(target=lambda: report(process.wait()), daemon=True).start()


def _write_json(path: Path, record: dict) -> None:
    """Write ``record`` so that a reader never sees half of it (rename is atomic)."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record))
    partial.replace(path)


def _report_builds(build, folder: Path, wants_pdf: bool) -> None:
    """Wait for the HTML build and report it; then build the PDF, if wanted, and report that."""
    result = build.wait()
    _write_json(
        folder / "book.json", {"args": result.args, "returncode": result.returncode, "log": str(build.log)}
    )
    if not wants_pdf or result.returncode != 0:
        _write_json(folder / "pdf.json", {})
        return
    try:
        pdf_result, pdf = build_pdf(result)
        record = {"args": pdf_result.args, "returncode": pdf_result.returncode, "pdf": str(pdf)}
        record.update(stdout=pdf_result.stdout, stderr=pdf_result.stderr)
    except Exception as error:  # reported to the PDF tests, not lost in a thread
        record = {"error": repr(error)}
    _write_json(folder / "pdf.json", record)


def _wait_for(path: Path, what: str, timeout: float = 3600.0) -> dict:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"waited more than {timeout:.0f} s for {what}")
        time.sleep(0.5)
    return json.loads(path.read_text())


def _planned(config, what: str) -> bool:
    """Whether the session's scheduling process started ``what`` ("book", "reruns", "pdf")."""
    plan = _folder(config) / "plan.json"
    if not _is_worker(config) and not plan.exists():
        return False  # this process schedules, and started nothing
    return bool(_wait_for(plan, "the background work's plan", timeout=600.0)[what])


def pytest_sessionfinish(session):
    for process in session.config.stash.get(STARTED, []):
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def rerun_notebook(request):
    """``rerun_notebook(chapter)``: the chapter executed as a reader reruns it.

    Waits for the background rerun started at collection (or runs it here,
    when the session did not start one).
    """
    out = _folder(request.config) / "reruns"
    started = _planned(request.config, "reruns")
    if not started:
        out = Path(request.config._tmp_path_factory.mktemp("reruns"))

    def get(chapter: Path, timeout: float = 1800.0):
        done, failed = out / f"{chapter.stem}.ipynb", out / f"{chapter.stem}.error"
        if not started:
            subprocess.run([sys.executable, str(RERUN_SCRIPT), str(out), str(chapter)], check=True)
        deadline = time.monotonic() + timeout
        while not (done.exists() or failed.exists()):
            if (out / "exit").exists():
                time.sleep(0.5)  # the last file may land just before the exit
                if not (done.exists() or failed.exists()):
                    code = (out / "exit").read_text()
                    pytest.fail(f"the rerun process exited ({code}) without {chapter.name}")
            if time.monotonic() > deadline:
                pytest.fail(f"rerunning {chapter.name} took more than {timeout:.0f} s")
            time.sleep(1.0)
        if failed.exists():
            pytest.fail(f"{chapter.name} failed when rerun as a notebook:\n{failed.read_text()}")
        return nbformat.read(done, as_version=4)

    return get


@pytest.fixture(scope="session")
def calculator_probe(request, tmp_path_factory) -> Path:
    """The calculator's probe book, built (``bookbuild.calculator_probe_source``): its HTML folder.

    Waits for the build started at collection, or builds it here when the
    session did not start one.
    """
    if _planned(request.config, "calculator"):
        record = _wait_for(_folder(request.config) / "calculator.json", "the calculator's probe book")
        code, root, log = record["returncode"], Path(record["root"]), Path(record["log"]).read_text()
    else:
        root = tmp_path_factory.mktemp("calculator-probe") / "src"
        command, env = _calculator_probe_build(root), _calculator_probe_env()
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        code, log = done.returncode, done.stdout + done.stderr
    assert code == 0, f"the calculator's probe book did not build:\n{log[-6000:]}"
    return root / "_build" / "html"


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
    folder = _folder(request.config)
    if _planned(request.config, "book"):
        record = _wait_for(folder / "book.json", "the book build")
        log = Path(record["log"]).read_text()
        result = subprocess.CompletedProcess(record["args"], record["returncode"], log, "")
    else:  # not started at collection (a test asked for it another way)
        build = start_build(
            copy_book(tmp_path_factory.mktemp("book-src")), tmp_path_factory.mktemp("book-out")
        )
        result = build.wait()
    output = Path(result.args[result.args.index("--path-output") + 1])
    return result, output / "_build" / "html"


@pytest.fixture(scope="session")
def background_pdf(request, built_book):
    """The PDF build started when the HTML build finished: ``(result, pdf)``, or None if none was started."""
    if not _planned(request.config, "pdf"):
        return None
    record = _wait_for(_folder(request.config) / "pdf.json", "the PDF build")
    if not record:
        return None
    if "error" in record:
        pytest.fail(f"the PDF build raised {record['error']}")
    result = subprocess.CompletedProcess(
        record["args"], record["returncode"], record["stdout"], record["stderr"]
    )
    return result, Path(record["pdf"])


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
