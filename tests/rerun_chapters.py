"""Execute chapters as a reader reruns them: ``python tests/rerun_chapters.py OUT CHAPTER.md ...``.

Each chapter is converted to a notebook with jupytext and executed with
nbclient in a fresh kernel, in its own folder; the executed notebook is
written to ``OUT/<stem>.ipynb`` (or the error to ``OUT/<stem>.error``).  The
test session starts this in the background while it builds the book, so the
two independent executions of every chapter share the machine's cores
(``tests/conftest.py``); ``tests/test_rerun.py`` compares them.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import jupytext
import nbformat
from bookbuild import load_extension
from nbclient import NotebookClient

# Kernels on socket files of their own, as in the build they run beside
# (over TCP two kernels starting at once can draw the same port).
IPCKernelManager = load_extension("parallel_chapters").IPCKernelManager


def rerun(chapter: Path, out: Path) -> None:
    try:
        notebook = jupytext.read(chapter)
        resources = {"metadata": {"path": str(chapter.parent)}}
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            kernel_manager_class=IPCKernelManager,
            resources=resources,
        ).execute()
    except Exception:  # the test reports it, with the chapter's name
        (out / f"{chapter.stem}.error").write_text(traceback.format_exc())
        return
    partial = out / f"{chapter.stem}.ipynb.partial"
    nbformat.write(notebook, partial)
    partial.rename(out / f"{chapter.stem}.ipynb")  # appears complete or not at all


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for chapter in argv[1:]:
        rerun(Path(chapter), out)


if __name__ == "__main__":
    main(sys.argv[1:])
