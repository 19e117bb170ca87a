"""The build is the test: the real book builds clean, and injected faults fail it.

The fault builds use the book's own ``_config.yml`` on a small probe chapter
(``tests/fixtures/probe.md``) instead of the whole book, so that each costs
seconds; what they test is the configuration, which is the same.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from bookbuild import JUPYTEXT_HEADER, ROOT, build_book, copy_book, notebook_chapters

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


def _probe_book(tmp_path: Path, chapter_text: str) -> tuple[Path, Path]:
    """A copy of the book whose toc holds the probe chapter, a few plain pages and the bibliography."""
    source = copy_book(tmp_path / "src")
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


#: Faults in a chapter's cells (name: chapter text, a string the build log must
#: contain: the right cause).  A failing cell stops the parallel read, so each
#: needs a build of its own.  A failing ``assert`` is the failing check below
#: (:class:`attnscale.support.checks.CheckFailed` is an ``AssertionError``).
CELL_FAULTS = {
    "raised exception": (_add_cell("raise RuntimeError('injected exception')"), "injected exception"),
    "python warning": (_add_cell("import warnings\nwarnings.warn('injected warning')"), "stderr was found"),
}

#: Faults Sphinx reports as warnings (name: text added to the probe, the
#: warning's cause).  ``--keep-going`` reports every warning and ``-W`` makes
#: any one fail the build, so one build tests them all: a copy of the probe
#: holding every one of them, each of which must be named in a warning line of
#: that page, and a copy without its notebook header.
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
    # ... whose kernels listen on socket files, not on TCP ports that two kernels can draw alike
    assert "Kernel is running over TCP" not in result.stdout + result.stderr
    (source / "book" / "probe_helper.py").write_text('MARKER = "second"\n')
    second = build_book(source, output, toc=toc)
    assert second.returncode == 0, _tail(second.stdout + second.stderr)
    assert "second" in page.read_text(), "the second build served a stale output"


@pytest.mark.parametrize("fault", CELL_FAULTS, ids=lambda name: name.replace(" ", "-"))
def test_cell_fault_fails_build(tmp_path, fault):
    text, cause = CELL_FAULTS[fault]
    assert text != PROBE
    source, toc = _probe_book(tmp_path, text)
    result = build_book(source, tmp_path / "out", toc=toc)
    log = result.stdout + result.stderr
    assert result.returncode != 0, f"the build ignored the fault '{fault}':\n{_tail(log)}"
    assert cause in log, f"the build failed, but not because of '{fault}':\n{_tail(log)}"


def _relabelled(text: str, page: str) -> str:
    """The probe's text with its own labels renamed after ``page``, so that copies do not clash."""
    for label in ("probe", "eq-probe", "thm-probe"):
        text = re.sub(rf"(?<![\w-]){label}(?![\w-])", f"{label}-{page}", text)
    return text


#: The pages of the warning-fault build: every warning fault on one, the header removed on the other.
FAULT_PAGES = {"faults": "every warning fault", "headless": "header removed"}


@pytest.fixture(scope="module")
def warning_faults_build(tmp_path_factory):
    """One build of the probe beside the two faulty copies of :data:`FAULT_PAGES`."""
    tmp_path = tmp_path_factory.mktemp("warning-faults")
    source, toc = _probe_book(tmp_path, PROBE)
    texts = {
        "faults": PROBE + "".join(added for added, _ in WARNING_FAULTS.values()),
        "headless": JUPYTEXT_HEADER.sub("", PROBE),
    }
    for page, text in texts.items():
        assert text != PROBE
        (source / "book" / f"{page}.md").write_text(_relabelled(text, page))
    toc.write_text(toc.read_text() + "".join(f"  - file: book/{page}\n" for page in texts))
    result = build_book(source, tmp_path / "out", toc=toc)
    return result, result.stdout + result.stderr


@pytest.mark.parametrize(
    "fault", [*WARNING_FAULTS, "header removed"], ids=lambda name: name.replace(" ", "-")
)
def test_warning_fault_fails_build(warning_faults_build, fault):
    result, log = warning_faults_build
    assert result.returncode != 0, f"the build ignored every fault:\n{_tail(log)}"
    page, cause = (
        ("headless", "code-cell") if fault == "header removed" else ("faults", WARNING_FAULTS[fault][1])
    )
    warnings = [line for line in log.splitlines() if f"{page}.md" in line and "WARNING" in line]
    assert any(cause in line for line in warnings), (
        f"no warning on the page with the fault '{fault}' names its cause '{cause}':\n{_tail(log)}"
    )


def test_failing_check_names_chapter_check_and_values(tmp_path):
    """A failing chapter check tells the reader where, what, and which two values disagreed."""
    text = _add_cell(
        "import attnscale\nattnscale.check_close(1.25, 1.5, check='injected comparison', rtol=1e-9)"
    )
    source, toc = _probe_book(tmp_path, text)
    result = build_book(source, tmp_path / "out", toc=toc)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    for expected in ("probe.md", "check failed: injected comparison", "got 1.25", "expected 1.5"):
        assert expected in log, f"the failure output lacks '{expected}':\n{_tail(log)}"


def test_kernels_get_socket_names_of_their_own():
    """Two kernel managers of the parallel read get different absolute socket prefixes over IPC."""
    from bookbuild import load_extension

    parallel = load_extension("parallel_chapters")
    first, second = parallel.IPCKernelManager(), parallel.IPCKernelManager()
    assert first.transport == second.transport == "ipc"
    assert Path(first.ip).is_absolute() and first.ip != second.ip
