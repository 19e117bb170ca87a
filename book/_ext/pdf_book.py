"""The book as one PDF, numbered exactly as the web pages, and linked from them.

Jupyter Book 1.x builds the PDF through Sphinx's LaTeX builder and
sphinx-jupyterbook-latex (``jupyter-book build . --builder pdflatex``, with
``latex.latex_engine: xelatex`` in ``_config.yml``).  This extension adjusts
that route for this book:

* **Same numbers as the HTML.**  sphinx-jupyterbook-latex turns the parts of
  ``_toc.yml`` into LaTeX ``\\part``s and, for LaTeX to number equations and
  figures per chapter below ``\\part``, raises ``numfig_secnum_depth`` from 1
  to 2.  Sphinx also uses that setting to number theorems and propositions
  (sphinx-proof types their numbers from the environment's figure numbers),
  which would make Theorem 4.1 of the web page "Theorem 4.2.1" in the PDF.
  While the environment assigns those numbers (``env-get-updated``) the
  setting is put back to the book's own value, and raised again for the
  LaTeX writer, so theorems are numbered per chapter as on the web page, and
  LaTeX numbers equations and figures per chapter (``numfigreset=1``).
* **For reading.**  Code cell inputs are left out of the PDF (all of them:
  the folded ones are plumbing and the executed notebooks are the place to
  run code); their outputs stay.  Notebook figures are taken in their PDF
  rendering when a cell provides one (MyST-NB's priority for LaTeX), so they
  stay vector graphics.
* **Fonts with the book's characters.**  FreeSerif/FreeSans/FreeMono (Debian
  ``fonts-freefont-otf``) for text, which have √, ≈, subscript digits and
  Greek; Latin Modern Math (``fonts-lmodern``) for mathematics through
  ``unicode-math``; WenQuanYi Micro Hei (``fonts-wqy-microhei``) for the
  Chinese titles of the source essays in the bibliography.
* **Document class.**  Sphinx's own ``manual`` class instead of
  sphinx-jupyterbook-latex's ``jupyterBook`` class, which loads ``bbm`` (only
  in Debian's 500 MB ``texlive-fonts-extra``), pgfplots and tikz that the book
  does not use; the two environments of that class that the notebook cells
  need are defined in the preamble below.
* **Linked from every web page, when it exists.**  The PDF build writes
  ``_build/latex/<name>.pdf`` (``<name>``: ``latex.latex_documents.targetname``
  of ``_config.yml``).  An HTML build that finds it there (or already beside
  the HTML) copies it to ``<html root>/<name>.pdf`` and gives each page a
  "Whole book (.pdf)" entry in its download menu (a header button on the
  generated pages that have no download menu).  An HTML build without the
  PDF offers no such entry: a link to a file that is not there is a 404.
  Built the other way round (CONTRIBUTING.md: HTML first, then the PDF, which
  reuses the HTML build's executed chapters), ``python
  book/_ext/pdf_book.py _build`` publishes it: it copies the PDF next to
  the HTML and adds the same entry to every page.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.builders.latex import LaTeXBuilder
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

PREAMBLE = r"""
% --- pdf_book.py (book/_ext): fonts, cell outputs ---------------------------
\usepackage{etoolbox}
% A citation inside a figure caption is written to the .aux file too, where
% fragile commands break: make the two that citations use robust.
\robustify{\DUrole}
\robustify{\hyperlink}
% Chinese titles of the source essays (bibliography): a run of CJK
% characters is set in WenQuanYi Micro Hei, through XeTeX's character
% classes (CJK symbols, ideographs, full-width forms; everything else stays
% in class 0).
\newfontfamily\pdfbookcjkfont{WenQuanYi Micro Hei}
\newXeTeXintercharclass\pdfbookcjkclass
\makeatletter
\def\pdfbook@cjkrange#1#2{\count@=#1\relax
  \loop\XeTeXcharclass\count@=\pdfbookcjkclass
    \ifnum\count@<#2\advance\count@\@ne\repeat}
\pdfbook@cjkrange{"3000}{"303F}
\pdfbook@cjkrange{"4E00}{"9FFF}
\pdfbook@cjkrange{"FF00}{"FFEF}
\makeatother
\XeTeXinterchartoks 0 \pdfbookcjkclass = {\begingroup\pdfbookcjkfont}
\XeTeXinterchartoks 4095 \pdfbookcjkclass = {\begingroup\pdfbookcjkfont}
\XeTeXinterchartoks \pdfbookcjkclass 0 = {\endgroup}
\XeTeXinterchartoks \pdfbookcjkclass 4095 = {\endgroup}
% a line may break between two CJK characters
\XeTeXinterchartoks \pdfbookcjkclass \pdfbookcjkclass = {\hskip 0pt plus 0.1em\relax}
\XeTeXinterchartokenstate=1
\usepackage{changepage}
% Mathematics in Latin Modern Math (unicode-math is loaded above by
% sphinx-jupyterbook-latex), so √, ≈ typed as Unicode work in formulas too.
\setmathfont{latinmodern-math.otf}
% The two environments of sphinx-jupyterbook-latex's class that notebook
% cells use: an input (never shown here) and an output (shown indented).
\definecolor{CodeBlockOutputBorderColor}{RGB}{224,224,224}
\definecolor{CodeBlockOutputColor}{RGB}{250,250,250}
\newenvironment{sphinxVerbatimInput}{}{}
\newenvironment{sphinxVerbatimOutput}
  {\colorlet{VerbatimBorderColor}{CodeBlockOutputBorderColor}%
   \colorlet{VerbatimColor}{CodeBlockOutputColor}%
   \begin{adjustwidth}{12pt}{}}
  {\end{adjustwidth}}
% ---------------------------------------------------------------------------
"""


def pdf_name(config) -> str:
    """The PDF's file name: ``latex.latex_documents.targetname`` with .pdf."""
    for document in config.latex_documents or []:
        return str(Path(document[1]).with_suffix(".pdf"))
    return f"{config.project}.pdf"


# -- configuration -------------------------------------------------------------


def _configure(app, config):
    """After sphinx-jupyterbook-latex's own ``config-inited`` handler."""
    app._pdf_book_html_secnum_depth = config.numfig_secnum_depth
    config.latex_theme = "manual"
    elements = dict(config.latex_elements or {})
    elements.setdefault("papersize", "a4paper")
    elements.setdefault("pointsize", "11pt")
    elements["releasename"] = "Version"
    # sphinx-jupyterbook-latex loads ucharclasses, which would take over
    # XeTeX's character classes and sets no font transition here.
    preamble = elements.get("preamble", "").replace(r"\usepackage[Latin,Greek]{ucharclasses}", "")
    elements["preamble"] = preamble + PREAMBLE
    config.latex_elements = elements
    # makeindex (TeX Live's binaries) instead of xindy (one more Debian package)
    config.latex_use_xindy = False


def _secnum_depth_for_numbers(app, env):
    """Before Sphinx numbers figures and theorems: the book's own depth."""
    if isinstance(app.builder, LaTeXBuilder):
        app._pdf_book_latex_secnum_depth = app.config.numfig_secnum_depth
        app.config.numfig_secnum_depth = app._pdf_book_html_secnum_depth
    return []


def _secnum_depth_for_latex(app, env):
    """After the numbering: the depth the LaTeX writer needs below \\part."""
    if isinstance(app.builder, LaTeXBuilder):
        app.config.numfig_secnum_depth = app._pdf_book_latex_secnum_depth
    return []


# -- LaTeX: no code inputs -------------------------------------------------------


class RemoveCellInputs(SphinxPostTransform):
    """Drop every code cell's input from the LaTeX output (outputs stay)."""

    # before sphinx-jupyterbook-latex wraps inputs for LaTeX (priority 400, 999)
    default_priority = 100
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.container)):
            if "cell_input" in node.get("classes", []):
                node.parent.remove(node)


class PlainProofs(SphinxPostTransform):
    """A proof as text ("*Proof.* ... □"), not as an admonition box without a title.

    sphinx-proof makes a proof an untitled admonition whose first paragraph
    starts with "Proof. "; Sphinx's LaTeX writer then opens a titled box and
    takes the paragraph's first token as the title.
    """

    default_priority = 100
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.admonition)):
            classes = node.get("classes", [])
            if "proof" not in classes or "proof" not in node.get("ids", []) or node.next_node(nodes.title):
                continue
            body = nodes.container("", *node.children, classes=["proof"])
            first = body.next_node(nodes.Text)
            if first is not None and first.astext().startswith("Proof. "):
                first.parent.replace(first, nodes.Text(first.astext()[len("Proof. ") :]))
                first_para = body.next_node(nodes.paragraph)
                first_para.insert(0, nodes.emphasis("", "Proof."))
                first_para.insert(1, nodes.Text(" "))
            paragraphs = list(body.findall(nodes.paragraph))
            if paragraphs:
                paragraphs[-1].append(nodes.raw("", r"\hfill\ensuremath{\square}", format="latex"))
            node.replace_self(body)


# -- HTML: the link to the PDF ---------------------------------------------------


ENTRY_TEXT = "Whole book (.pdf)"
ENTRY_TOOLTIP = "Download the whole book as one PDF"
ENTRY_LABEL = "download-book-pdf-button"


def _pdf_available(app) -> bool:
    """The PDF is (or is about to be, see _copy_built_pdf) beside the HTML."""
    name = pdf_name(app.config)
    outdir = Path(app.outdir)
    return (outdir / name).exists() or (outdir.parent / "latex" / name).exists()


def _link_pdf(app, pagename, templatename, context, doctree):
    """A download-menu entry (or a header button) for the whole book's PDF, if there is one."""
    buttons = context.get("header_buttons")
    if buttons is None:  # not sphinx-book-theme
        return
    if not getattr(app, "_pdf_book_available", False):
        return
    entry = {
        "type": "link",
        "url": context["pathto"](pdf_name(app.config), 1),
        "text": ENTRY_TEXT,
        "tooltip": ENTRY_TOOLTIP,
        "icon": "fas fa-file-pdf",
        "label": ENTRY_LABEL,
    }
    for button in buttons:
        if button.get("label") == "download-buttons":
            button["buttons"].insert(0, entry)
            return
    buttons.append(entry)


def _check_pdf(app):
    if app.builder.format == "html":
        app._pdf_book_available = _pdf_available(app)


def _copy_built_pdf(app, exception):
    """An HTML build that finds the built PDF beside it publishes it too."""
    if exception is not None or app.builder.format != "html":
        return
    built = Path(app.outdir).parent / "latex" / pdf_name(app.config)
    if built.exists():
        shutil.copyfile(built, Path(app.outdir) / built.name)
        logger.info("pdf_book: copied %s into the HTML output", built)


# -- publishing a PDF built after the HTML ------------------------------------------

_MENU = re.compile(r'(<div class="dropdown dropdown-download-buttons">.*?<ul class="dropdown-menu">)', re.S)
_HEADER = re.compile(r'(<div class="article-header-buttons">)')


def _entry_html(href: str, in_menu: bool) -> str:
    """The theme's markup for a link button (sphinx-book-theme's macros/buttons.html)."""
    extra, placement = (" dropdown-item", "left") if in_menu else ("", "bottom")
    link = (
        f'<a href="{href}" target="_blank"\n'
        f'   class="btn btn-sm btn-{ENTRY_LABEL}{extra}"\n'
        f'   title="{ENTRY_TOOLTIP}"\n'
        f'   data-bs-placement="{placement}" data-bs-toggle="tooltip"\n>\n'
        '<span class="btn__icon-container">\n  <i class="fas fa-file-pdf"></i>\n  </span>\n'
        f'<span class="btn__text-container">{ENTRY_TEXT}</span>\n</a>'
    )
    return f"\n      <li>{link}\n</li>" if in_menu else "\n" + link


def publish(build: Path, name: str) -> list[Path]:
    """Copy ``build/latex/<name>`` into ``build/html`` and link it from every page.

    Returns the pages changed.  Pages that already link it are left alone, so
    running it twice changes nothing.
    """
    build = Path(build)
    pdf, html = build / "latex" / name, build / "html"
    if not pdf.exists():
        raise FileNotFoundError(f"no PDF at {pdf}: build it first (CONTRIBUTING.md, 'The PDF')")
    if not html.is_dir():
        raise FileNotFoundError(f"no HTML build at {html}")
    shutil.copyfile(pdf, html / name)
    changed = []
    for page in sorted(html.rglob("*.html")):
        if "_static" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        if f"btn-{ENTRY_LABEL}" in text:
            continue
        href = posixpath.relpath((html / name).as_posix(), page.parent.as_posix())
        in_menu = _MENU.search(text)
        found = in_menu or _HEADER.search(text)
        if found:
            cut = found.end(1)
            new = text[:cut] + _entry_html(href, bool(in_menu)) + text[cut:]
            count = 1
        else:
            count = 0
        if count:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def _main(argv=None) -> int:
    import argparse

    import yaml

    parser = argparse.ArgumentParser(description="Publish the built PDF next to the HTML and link it.")
    parser.add_argument("build", nargs="?", default="_build", help="the build folder (default _build)")
    parser.add_argument("--config", default="_config.yml", help="the book's _config.yml")
    args = parser.parse_args(argv)
    config = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    target = config.get("latex", {}).get("latex_documents", {}).get("targetname")
    name = str(Path(target).with_suffix(".pdf")) if target else f"{config['title']}.pdf"
    pages = publish(Path(args.build), name)
    print(f"pdf_book: {name} published; linked from {len(pages)} pages")
    return 0


def setup(app):
    app.connect("config-inited", _configure, priority=900)
    # Sphinx's toctree collector numbers figures and theorems at priority 500
    app.connect("env-get-updated", _secnum_depth_for_numbers, priority=100)
    app.connect("env-get-updated", _secnum_depth_for_latex, priority=900)
    app.add_post_transform(RemoveCellInputs)
    app.add_post_transform(PlainProofs)
    # after sphinx-book-theme builds the header buttons (priority 501)
    app.connect("builder-inited", _check_pdf)
    app.connect("html-page-context", _link_pdf, priority=600)
    app.connect("build-finished", _copy_built_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    raise SystemExit(_main())
