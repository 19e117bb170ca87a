"""How the tests build the book: one place for the command and its flags.

The README's build command must use exactly :data:`BUILD_FLAGS`
(``tests/test_repository.py`` checks it), so what the tests build is what a
reader builds.
"""

from __future__ import annotations

import ctypes.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

#: Re-read every page (--all), turn every Sphinx warning into a failure (-W)
#: after reporting all of them (--keep-going), and warn about every missing
#: cross-reference target (-n, nitpicky).
BUILD_FLAGS = ["--all", "-W", "-n", "--keep-going"]

#: The programs the PDF build and its tests need (Debian packages: CONTRIBUTING.md, "The PDF").
PDF_TOOLS = ("xelatex", "latexmk", "pdftotext", "pdfimages", "pdfinfo")


def missing_pdf_tools() -> list[str]:
    """What the PDF build lacks: programs of :data:`PDF_TOOLS`, and the Cairo library CairoSVG loads."""
    missing = [tool for tool in PDF_TOOLS if shutil.which(tool) is None]
    if ctypes.util.find_library("cairo") is None:  # the figures' SVG-to-PDF conversion
        missing.append("libcairo (Debian's libcairo2)")
    return missing


#: Headless Chromium without anything that reaches the network on its own.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def load_extension(name: str):
    """The local Sphinx extension ``book/_ext/<name>.py`` as a module (it is not a package)."""
    import importlib.util

    folder = str(ROOT / "book" / "_ext")
    if folder not in sys.path:  # as jupyter-book does: the extensions import book/_ext/tex_symbols.py
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, ROOT / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The files that make up the book's sources.
BOOK_FILES = ["_config.yml", "_toc.yml", "book"]

JUPYTEXT_HEADER = re.compile(r"\A---\s*\njupytext:.*?\nkernelspec:.*?\n---\s*\n", re.S)


def copy_book(destination: Path) -> Path:
    """Copy the book's sources (config, toc, chapters) into ``destination``."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in BOOK_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source,
                destination / name,
                ignore=shutil.ignore_patterns("_build", "*.ipynb", ".ipynb_checkpoints"),
            )
        else:
            shutil.copy2(source, destination / name)
    return destination


def build_book(source: Path, output: Path, *, toc: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``jupyter-book build`` as the README does; output under ``output/_build/html``.

    No shell is involved, so no pipe can hide the exit status: the process's
    own status is returned, together with everything it printed.
    """
    return start_build(source, output, toc=toc).wait()


class Build:
    """A ``jupyter-book build`` running in the background (:func:`start_build`)."""

    def __init__(self, command: list[str], cwd: Path, log: Path):
        self.command, self.log = command, log
        with log.open("w") as sink:  # a file, not a pipe: a long log cannot block the build
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=cwd)
        self._result: subprocess.CompletedProcess | None = None

    def wait(self) -> subprocess.CompletedProcess:
        """Wait for the build; its exit status and everything it printed (as stdout)."""
        if self._result is None:
            code = self.process.wait()
            self._result = subprocess.CompletedProcess(self.command, code, self.log.read_text(), "")
        return self._result


def start_build(source: Path, output: Path, *, toc: Path | None = None) -> Build:
    """Start :func:`build_book`'s command without waiting for it."""
    command = [jupyter_book_executable(), "build", str(source), *BUILD_FLAGS, "--path-output", str(output)]
    if toc is not None:
        command += ["--toc", str(toc)]
    output.mkdir(parents=True, exist_ok=True)
    return Build(command, source, output / "build.log")


def calculator_probe_source(root: Path) -> Path:
    """A book of the recipes page's calculator section alone, in ``root`` (no code cells).

    The book's configuration, extensions, static files and templates, and a
    table of contents of one page: the section between the labels
    ``sec-calculator-page`` and ``sec-apply-factor`` of ``book/recipes.md``.
    Its build writes the calculator's table (``book/_ext/calculator_table.py``).
    """
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "_config.yml", root)
    for name in ("_ext", "_static", "_templates"):
        shutil.copytree(ROOT / "book" / name, root / "book" / name)
    shutil.copy(ROOT / "book" / "references.bib", root / "book")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/probe\n")
    text = (ROOT / "book" / "recipes.md").read_text()
    start, end = text.index("(sec-calculator-page)="), text.index("(sec-apply-factor)=")
    (root / "book" / "probe.md").write_text("# Probe\n\n" + text[start:end])
    return root


def jupyter_book_executable() -> str:
    """The ``jupyter-book`` script of the running interpreter's environment."""
    beside = Path(sys.executable).with_name("jupyter-book")
    found = str(beside) if beside.exists() else shutil.which("jupyter-book")
    if found is None:
        raise RuntimeError("jupyter-book is not installed: pip install -r requirements.txt")
    return found


def toc_files(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """Every document named in a jb-book table of contents, root first."""
    toc = yaml.safe_load(toc_path.read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def is_notebook(path: Path) -> bool:
    """A MyST-NB text notebook: a .md file that starts with a jupytext header."""
    return path.suffix == ".md" and bool(JUPYTEXT_HEADER.match(path.read_text()))


def notebook_chapters() -> list[Path]:
    """The chapters listed in the toc that are executable notebooks."""
    paths = [ROOT / f"{name}.md" for name in toc_files()]
    return [p for p in paths if p.exists() and is_notebook(p)]


# -- figure text -----------------------------------------------------------------

#: A text matplotlib wrote as paths (svg.fonttype "path"): a group scaled by
#: font size / 100 (matplotlib's text-to-path FONT_SCALE), whose glyphs are
#: <use> elements; a mathtext glyph carries its own scale relative to the
#: text (0.7 or SCRIPT_SCALE for a sub- or superscript, less for a script's
#: script).  As text (fonttype "none"), each <text> or <tspan> has a font
#: size in its style, scripts included.
_PATH_TEXT = re.compile(
    r'<g transform="translate\([^)]*\)(?: rotate\([^)]*\))? scale\(([\d.e-]+) -[\d.e-]+\)">(.*?)</g>', re.S
)
_GLYPH = re.compile(r'<use xlink:href="#([^"]+)"(?: transform="[^"]*?scale\(([\d.e-]+)\)")?')
_STYLED = re.compile(r'<(?:text|tspan)\b[^>]*style="([^"]*)"')
_VIEWBOX = re.compile(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) [\d.]+"')
#: Mathtext's sized delimiters (the radical of a square root, big brackets):
#: drawn scaled to the height of what they enclose, so their scale says
#: nothing of how small the text is.  They are not counted.
_SIZED = "STIXSize"


def svg_glyph_size(text: str) -> tuple[float, float]:
    """(smallest glyph's font size, viewBox width) of a matplotlib SVG, both in its user units.

    Every glyph counts at the size it is drawn, sub- and superscripts
    included (a tick label's exponent, a subscript in a legend), except
    mathtext's sized delimiters.  ``inf`` when the SVG has no text.
    """
    width = _VIEWBOX.search(text)
    if width is None:
        raise ValueError("the SVG has no viewBox")
    sizes = []
    for scale, body in _PATH_TEXT.findall(text):
        for glyph, own in _GLYPH.findall(body):
            if _SIZED not in glyph:
                sizes.append(float(scale) * 100 * (float(own) if own else 1.0))
    for style in _STYLED.findall(text):
        size = re.search(r"font-size:\s*([\d.]+)px", style)
        if size and _SIZED not in style:
            sizes.append(float(size.group(1)))
    return min(sizes, default=float("inf")), float(width.group(1))


# -- the PDF ---------------------------------------------------------------------

#: The PDF build: jupyter-book's LaTeX route (XeLaTeX, see _config.yml), as
#: strict as the HTML build.  Without --all it reuses the environment of the
#: HTML build in the same output folder: the chapters are not executed again.
PDF_BUILD_FLAGS = ["--builder", "pdflatex", "-W", "-n", "--keep-going"]


def pdf_name() -> str:
    """The PDF's file name: ``latex.latex_documents.targetname`` with .pdf."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return str(Path(config["latex"]["latex_documents"]["targetname"]).with_suffix(".pdf"))


def build_pdf(html_build: subprocess.CompletedProcess) -> tuple[subprocess.CompletedProcess, Path]:
    """Build the PDF of the book that ``html_build`` (from :func:`build_book`) built.

    Runs ``jupyter-book build`` with :data:`PDF_BUILD_FLAGS` on the same
    source and output folders, then publishes the PDF next to the HTML and
    links it from every page (``book/_ext/pdf_book.py``), as CONTRIBUTING.md's PDF
    command does.  Returns the process and ``_build/latex/<name>.pdf``.
    """
    arguments = list(html_build.args)
    source = Path(arguments[2])
    output = Path(arguments[arguments.index("--path-output") + 1])
    command = [jupyter_book_executable(), "build", str(source), *PDF_BUILD_FLAGS]
    command += ["--path-output", str(output)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=source, check=False)
    pdf = output / "_build" / "latex" / pdf_name()
    if result.returncode == 0 and pdf.exists():
        # CONTRIBUTING.md's publishing step: the PDF next to the HTML, linked from every page
        publish = [sys.executable, str(source / "book" / "_ext" / "pdf_book.py"), str(output / "_build")]
        publish += ["--config", str(source / "_config.yml")]
        subprocess.run(publish, check=True, cwd=source, capture_output=True, text=True)
    return result, pdf
