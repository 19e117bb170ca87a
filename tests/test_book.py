"""The build is the test: the real book builds clean, and injected faults fail it.

The fault builds use the book's own ``_config.yml`` on a small probe chapter
(``tests/fixtures/probe.md``) instead of the whole book, so that each costs
seconds; what they test is the configuration, which is the same.  Four
builds test it: the probe clean, then again after a change to the code it
imports; one with every fault that makes a cell raise, each on a page of
its own; one with every fault the build reports as a warning or an error,
each with a cause of its own.  A fault build's root is a plain page, so
that it runs a kernel only for its faulty pages.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from bookbuild import JUPYTEXT_HEADER, ROOT, build_book, notebook_chapters

FIXTURES = Path(__file__).parent / "fixtures"

pytestmark = pytest.mark.book


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


# -- the real book ----------------------------------------------------------


def test_book_builds_clean(built_book):
    result, html = built_book
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"the book build failed:\n{_tail(log, 120)}"
    # Sphinx's own warnings ("WARNING: ..."), not the kernel's log lines ("[IPKernelApp] WARNING | ...")
    sphinx_warnings = [line for line in log.splitlines() if "WARNING:" in line or "ERROR:" in line]
    assert sphinx_warnings == []
    assert (html / "index.html").exists()
    # its kernels are forked from one process (book/_ext/kernel_zygote.py), each a fresh kernel
    # for its chapter: tests/test_rerun.py compares them with kernels started the ordinary way
    if os.environ.get("ATTNSCALE_KERNEL_ZYGOTE") is None and not os.environ.get("ATTNSCALE_BUILT_HTML"):
        assert "parallel_chapters: kernels forked from one process" in log
        assert "Ctrl-C will not work" not in log  # each forked kernel knows its parent, as a fresh one


@pytest.mark.parametrize("chapter", notebook_chapters(), ids=lambda p: p.stem)
def test_every_chapter_executed(built_book, chapter):
    """Each notebook chapter's page shows outputs of its cells, and no error."""
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"
    page = html / chapter.relative_to(ROOT).with_suffix(".html")
    text = page.read_text()
    assert "cell_output" in text, f"{page.name} shows no executed output"
    for marker in ("output traceback", "output stderr", "Traceback (most recent call last)"):
        assert marker not in text, f"{page.name} shows '{marker}'"


def test_there_are_notebook_chapters():
    assert notebook_chapters(), "no executable chapter found in _toc.yml"


# -- faults that must fail the build -----------------------------------------


#: Plain pages beside the probe, so that the probe book has more than five
#: documents: Sphinx reads a book of five or fewer serially, and the faults
#: must fail the parallel read that the real book uses
#: (book/_ext/parallel_chapters.py).
FILLERS = 4

#: What a probe book takes from the book's sources: the configuration and
#: what it names (the local extensions, static files, templates and the
#: bibliography), and the bibliography's page; not the chapters or their data.
PROBE_SOURCES = [
    "_config.yml",
    "book/_ext",
    "book/_static",
    "book/_templates",
    "book/references.bib",
    "book/bibliography.md",
]


def _copy_probe_sources(destination: Path) -> Path:
    for name in PROBE_SOURCES:
        source, target = ROOT / name, destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    return destination


def _probe_book(tmp_path: Path, chapter_text: str) -> tuple[Path, Path]:
    """A book of the probe chapter, a few plain pages and the bibliography, with the book's configuration."""
    source = _copy_probe_sources(tmp_path / "src")
    (source / "book" / "probe.md").write_text(chapter_text)
    shutil.copy2(FIXTURES / "probe_helper.py", source / "book" / "probe_helper.py")
    entries = ["book/bibliography"]
    for k in range(FILLERS):
        (source / "book" / f"filler{k}.md").write_text(f"# Filler {k}\n\nA plain page.\n")
        entries.append(f"book/filler{k}")
    toc = source / "_probe_toc.yml"
    toc.write_text(
        "format: jb-book\nroot: book/probe\nchapters:\n" + "".join(f"  - file: {e}\n" for e in entries)
    )
    return source, toc


PROBE = (FIXTURES / "probe.md").read_text()


def _add_cell(code: str) -> str:
    return PROBE + f"\n```{{code-cell}} ipython3\n{code}\n```\n"


#: Faults that make a cell raise (name: page, the cell, what its failure
#: report must say: the right cause).  A raising cell fails its chapter's
#: read; every chapter is still read (book/_ext/parallel_chapters.py), and
#: each failing one's traceback is printed under its path, so one build holds
#: them all, each on a page of its own.  A failing ``assert`` is the failing
#: check (:class:`attnscale.support.checks.CheckFailed` is an ``AssertionError``).
CELL_FAULTS = {
    "raised exception": ("raised", "raise RuntimeError('injected exception')", ("injected exception",)),
    "failing check": (
        "check",
        "import attnscale\nattnscale.check_close(1.25, 1.5, check='injected comparison', rtol=1e-9)",
        ("check failed: injected comparison", "got 1.25", "expected 1.5"),
    ),
}

#: Faults Sphinx reports as warnings (name: text added to the probe, the
#: warning's cause).  ``--keep-going`` reports every warning and ``-W`` makes
#: any one fail the build, so one build tests them all: a copy of the probe
#: holding every one of them, each of which must be named in a warning line of
#: that page (with a cell that writes a Python warning to stderr, which
#: MyST-NB logs as an error, counted by ``-W`` too), and a copy without its
#: notebook header.
WARNING_FAULTS = {
    "broken reference": ("\nSee {ref}`no-such-label`.\n", "no-such-label"),
    "broken equation reference": ("\nSee {eq}`eq-no-such`.\n", "eq-no-such"),
    "broken theorem reference": ("\nSee {prf:ref}`thm-no-such`.\n", "thm-no-such"),
    "unknown citation key": ("\nAs {cite:t}`nosuchkey2099` shows.\n", "nosuchkey2099"),
    "missing glue key": ("\nThe value {glue:text}`no_such_glue`.\n", "no_such_glue"),
}


def test_probe_builds_clean_and_never_stale(tmp_path):
    """Control: without a fault the probe builds, executes and shows its output.

    The copy also holds the clutter of a reader's checkout (pytest's cache
    and a virtual environment, both with Markdown files in them), which the
    build must ignore.  Then a change to imported code shows up on the next
    build into the same folder (no execution cache: jupyter-cache keys on
    the notebook's text only, and the probe's text stays the same).
    """
    source, toc = _probe_book(tmp_path, PROBE)
    for clutter in (".pytest_cache/README.md", ".venv/lib/site-packages/pkg/README.md", "venv/notes.md"):
        (source / clutter).parent.mkdir(parents=True, exist_ok=True)
        (source / clutter).write_text("# Not part of the book\n")
    output = tmp_path / "out"
    page = output / "_build" / "html" / "book" / "probe.html"
    result = build_book(source, output, toc=toc)
    assert result.returncode == 0, _tail(result.stdout + result.stderr)
    assert "probe executed 0.5" in page.read_text()
    assert "first" in page.read_text()
    # the faults below are injected into a book that Sphinx reads in parallel, as the real one
    assert "parallel_chapters: 6 documents" in result.stdout + result.stderr
    # ... too small for forking its kernels to pay (book/_ext/parallel_chapters.py)
    assert "kernels forked from one process" not in result.stdout + result.stderr
    # ... whose kernels listen on socket files, not on TCP ports that two kernels can draw alike
    assert "Kernel is running over TCP" not in result.stdout + result.stderr
    (source / "book" / "probe_helper.py").write_text('MARKER = "second"\n')
    second = build_book(source, output, toc=toc)
    assert second.returncode == 0, _tail(second.stdout + second.stderr)
    assert "second" in page.read_text(), "the second build served a stale output"


def _relabelled(text: str, page: str) -> str:
    """The probe's text with its own labels renamed after ``page``, so that copies do not clash."""
    for label in ("probe", "eq-probe", "thm-probe"):
        text = re.sub(rf"(?<![\w-]){label}(?![\w-])", f"{label}-{page}", text)
    return text


#: The root page of a fault build: a plain page, so that the build runs a kernel only for the faulty pages.
PLAIN_ROOT = "# Probe book\n\nA plain page; the faults are on the pages after it.\n"


def _build_with_pages(tmp_path: Path, texts: dict[str, str]) -> tuple[int, str]:
    """One build of a plain root page beside the pages ``texts`` (page name: its text, relabelled)."""
    source, toc = _probe_book(tmp_path, PLAIN_ROOT)
    for page, text in texts.items():
        assert text != PROBE
        (source / "book" / f"{page}.md").write_text(_relabelled(text, page))
    toc.write_text(toc.read_text() + "".join(f"  - file: book/{page}\n" for page in texts))
    result = build_book(source, tmp_path / "out", toc=toc)
    return result.returncode, result.stdout + result.stderr


#: The end of the parallel read's report on a failed chapter (book/_ext/parallel_chapters.py).
FAILED_REPORT = re.compile(r"^The failing worker's traceback \((.*)\):$", re.M)


def _failure_reports(log: str) -> dict[str, str]:
    """Each failed chapter's report in the log: its page's file name, and its traceback."""
    heads = list(FAILED_REPORT.finditer(log))
    ends = [head.start() for head in heads[1:]] + [len(log)]
    return {
        Path(head[1].split()[-1]).name: log[head.end() : end] for head, end in zip(heads, ends, strict=True)
    }


@pytest.fixture(scope="module")
def cell_faults_build(tmp_path_factory):
    """One build with a copy of the probe for each fault of :data:`CELL_FAULTS`."""
    texts = {page: _add_cell(cell) for page, cell, _ in CELL_FAULTS.values()}
    return _build_with_pages(tmp_path_factory.mktemp("cell-faults"), texts)


@pytest.mark.parametrize("fault", CELL_FAULTS, ids=lambda name: name.replace(" ", "-"))
def test_cell_fault_fails_build(cell_faults_build, fault):
    """The build fails, and its report on the fault's own page says why: the fault's cause.

    A report on that page can come only from a failure of that page's read,
    which alone fails the build (every failed task raises at the read's end).
    """
    code, log = cell_faults_build
    page, _, causes = CELL_FAULTS[fault]
    assert code != 0, f"the build ignored every fault:\n{_tail(log)}"
    reports = _failure_reports(log)
    assert f"{page}.md" in reports, f"no failure reported for the page of '{fault}':\n{_tail(log)}"
    for cause in causes:
        assert cause in reports[f"{page}.md"], f"the page of '{fault}' failed, but not for '{cause}'"
    # ... and the build names it among the failed chapters at the end
    assert re.search(rf"failed:\n(.*\n)*.*book/{page}\.md", log), _tail(log)


def test_cell_faults_build_reads_every_chapter(cell_faults_build):
    """Every faulty page failed on its own (one report each), and nothing else failed."""
    _, log = cell_faults_build
    assert sorted(_failure_reports(log)) == sorted(f"{page}.md" for page, _, _ in CELL_FAULTS.values())


#: A cell that writes a Python warning to stderr, and the cause MyST-NB's error names.
PYTHON_WARNING = ("import warnings\nwarnings.warn('injected warning')", "stderr was found")


@pytest.fixture(scope="module")
def warning_faults_build(tmp_path_factory):
    """One build with the faulty copies of the probe of :data:`FAULT_PAGES`."""
    texts = {
        "faults": _add_cell(PYTHON_WARNING[0]) + "".join(added for added, _ in WARNING_FAULTS.values()),
        "headless": JUPYTEXT_HEADER.sub("", PROBE),
    }
    return _build_with_pages(tmp_path_factory.mktemp("warning-faults"), texts)


#: The pages of the warning-fault build (fault: page, cause): every warning fault and a Python
#: warning on one page, each with a cause of its own; the header removed on the other.
FAULT_PAGES = {
    **{fault: ("faults", cause) for fault, (_, cause) in WARNING_FAULTS.items()},
    "python warning": ("faults", PYTHON_WARNING[1]),
    "header removed": ("headless", "code-cell"),
}


@pytest.mark.parametrize("fault", FAULT_PAGES, ids=lambda name: name.replace(" ", "-"))
def test_warning_fault_fails_build(warning_faults_build, fault):
    code, log = warning_faults_build
    assert code != 0, f"the build ignored every fault:\n{_tail(log)}"
    page, cause = FAULT_PAGES[fault]
    warnings = [
        line for line in log.splitlines() if f"{page}.md" in line and ("WARNING" in line or "ERROR" in line)
    ]
    assert any(cause in line for line in warnings), (
        f"no warning on the page with the fault '{fault}' names its cause '{cause}':\n{_tail(log)}"
    )


def test_kernels_get_socket_names_of_their_own():
    """Two kernel managers of the parallel read get different absolute socket prefixes over IPC."""
    from bookbuild import load_extension

    parallel = load_extension("parallel_chapters")
    first, second = parallel.IPCKernelManager(), parallel.IPCKernelManager()
    assert first.transport == second.transport == "ipc"
    assert Path(first.ip).is_absolute() and first.ip != second.ip
