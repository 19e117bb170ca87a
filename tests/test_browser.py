"""The built book in a real browser: math typeset, images loaded, no console errors.

Serves the session's build on 127.0.0.1, opens every page in headless
Chromium (Debian's, driven by Playwright), waits for MathJax, and checks the
page; with ATTNSCALE_SCREENSHOTS=1 a screenshot of each view lands in
``_build/screenshots/`` (the first screen; the whole page with
ATTNSCALE_SCREENSHOTS=full, which is slow: the API page alone is tens of
thousands of pixels tall).  No check reads them, so the suite takes none.
Skipped when Chromium is not installed, unless ATTNSCALE_REQUIRE_BROWSER=1.

Each page is loaded once, then laid out at each width and switched to each
theme in the same tab (as the theme's own toggle does); loading and
typesetting is what costs time.  Beyond rendering, each page is checked as a
reader meets it:

* it fits: at 1400 px and at 390 px (a phone), light and dark, the page never
  scrolls sideways and no element sticks out of a box that hides it (wide
  math and outputs must scroll inside their own box);
* code is folded: with the folded cells closed, code takes at most a quarter
  of a chapter's height (reported per chapter);
* it is accessible: axe-core (``axe.min.js``, vendored in
  ``tests/vendor/axe-core/`` with its version and SHA-256 checked here)
  finds no serious or critical violation (every rule at 1400 px in the light
  theme; colour contrast again in the dark one), and the names that
  assistive technology speaks contain the text the reader sees (axe's rule
  ``label-content-name-mismatch``, WCAG 2.5.3, switched on explicitly, at
  both widths and in both themes); the counts by impact are printed
  (``pytest -s``) and written to ``_build/screenshots/axe.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from bookbuild import CHROMIUM_ARGS, ROOT, notebook_chapters, svg_glyph_size, toc_files

pytestmark = pytest.mark.book

PAGE_CHECK = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const images = [...document.images];
  for (const img of images) { img.loading = "eager"; }
  const loaded = await Promise.all(images.map(i => i.decode().then(() => true, () => false)));
  const math = [...document.querySelectorAll(".math")];
  return {
    math: math.length,
    untypeset: math.filter(e => !e.querySelector("mjx-container")).map(e => e.textContent.slice(0, 60)),
    mathErrors: document.querySelectorAll("mjx-merror").length,
    images: images.length,
    broken: images.filter((img, k) => !loaded[k] || img.naturalWidth === 0).map(i => i.src),
  };
}
"""


@pytest.fixture(scope="module")
def served(served_book):
    """The build served over HTTP (tests/conftest.py)."""
    return served_book


PAGES = toc_files()


def _shows_code(path: Path) -> bool:
    """A notebook with at least one code cell whose input is not removed from the page."""
    cells = re.findall(r"^(`{3,})\{code-cell\}[^\n]*\n(.*?)^\1", path.read_text(), re.S | re.M)
    return any(not re.search(r"remove-(cell|input)", body.split("\n\n")[0]) for _, body in cells)


SHOWS_CODE = {path for path in notebook_chapters() if _shows_code(path)}


def _screenshot(tab, name: str) -> None:
    """On request (ATTNSCALE_SCREENSHOTS=1, or =full): save what the reader sees first, or the whole page.

    For a person to look at; no check reads them, and 120 of them cost the
    suite some 20 s of a core.
    """
    wanted = os.environ.get("ATTNSCALE_SCREENSHOTS", "")
    if wanted not in ("1", "full"):
        return
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(shots / f"{name}.png"), full_page=wanted == "full")


# Each page is loaded once: loading and typesetting a page (3-6 s) is what
# costs time, not the checks.  The one tab is then laid out at each width and
# switched to each theme, as the theme's own toggle does (data-theme on
# <html>), and every check below reads the report of that one visit.

_VISITS: dict[str, dict] = {}

SET_THEME = """
(theme) => {
  document.documentElement.dataset.theme = theme;
  document.documentElement.dataset.mode = theme;
  return getComputedStyle(document.body).backgroundColor;
}
"""

#: WCAG 2.5.3 (Label in Name, level A): an accessible name contains the
#: visible label.  Up to axe-core 4.12 the rule was tagged experimental and
#: off unless switched on; 4.14 runs it by default.  It is switched on here
#: all the same, so that no other axe-core can leave it off unnoticed.
NAME_RULE = "label-content-name-mismatch"


def _axe_options(*only: str) -> dict:
    """axe.run options: every rule (or just ``only``), with NAME_RULE on."""
    options: dict = {"rules": {NAME_RULE: {"enabled": True}}}
    if only:
        options["runOnly"] = {"type": "rule", "values": list(only)}
    return options


#: What axe checks in each view of a page.  At 1400 px in the light theme,
#: every rule.  Colour contrast is the only other rule a theme can change;
#: in the dark theme only it runs again (it is also the slowest rule).  The
#: names rule runs in every view, because the views show different controls
#: (the sidebar's search field at 1400 px, the header's buttons at 390 px)
#: and the colour-mode button shows the current theme's icon.
AXE_RUNS = {
    ("desktop", "light"): _axe_options(),
    ("desktop", "dark"): _axe_options("color-contrast", NAME_RULE),
    ("phone", "light"): _axe_options(NAME_RULE),
    ("phone", "dark"): _axe_options(NAME_RULE),
}


def _visit(browser, served, page):
    """Open ``page`` once; return its measurements keyed by (size, theme)."""
    if page in _VISITS:
        return _VISITS[page]
    tab = browser.new_page(viewport={"width": WIDTHS["desktop"][0], "height": WIDTHS["desktop"][1]})
    problems = []
    tab.on(
        "console",
        lambda message: (
            problems.append(f"console {message.type}: {message.text}") if message.type == "error" else None
        ),
    )
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
    tab.goto(f"{served}/{page}.html", wait_until="load")
    report = {"render": tab.evaluate(PAGE_CHECK)}
    report["code"] = tab.evaluate(CODE_SHARE)
    report["tables"] = tab.evaluate(TABLES)
    # what a reader's browser reported; axe's own stylesheet fetches (it
    # resolves the theme's @import against the page, a 404) come after
    report["problems"] = list(problems)
    tab.add_script_tag(path=str(_axe_script()))
    report["axe version"] = tab.evaluate("axe.version")
    # the theme fades colours in (CSS transitions): axe must see the end state
    tab.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    backgrounds = set()
    for size in WIDTHS:
        width, height = WIDTHS[size]
        tab.set_viewport_size({"width": width, "height": height})
        for theme in THEMES if size == "desktop" else THEMES[::-1]:
            tab.emulate_media(color_scheme=theme)
            backgrounds.add((theme, tab.evaluate(SET_THEME, theme)))
            tab.evaluate(MARK_WIDE_FORMULAS)  # what the page's resize handler does, without its delay
            report[size, theme] = tab.evaluate(FIT_CHECK)
            report["cues", size, theme] = tab.evaluate(SCROLL_CUES)
            if theme == "light":
                report["figures", size] = tab.evaluate(FIGURE_SIZES)
            report["axe", size, theme] = tab.evaluate(AXE_RUN, AXE_RUNS[size, theme])
            _screenshot(tab, f"{Path(page).name}-{size}-{theme}")
    tab.close()
    assert len({bg for _, bg in backgrounds}) == len(THEMES), f"the theme did not switch: {backgrounds}"
    _VISITS[page] = report
    return report


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_page_renders(browser, served, page):
    visit = _visit(browser, served, page)
    report, problems = visit["render"], visit["problems"]
    assert report["untypeset"] == [], f"raw TeX left on {page}: {report['untypeset'][:5]}"
    assert report["mathErrors"] == 0, f"MathJax errors on {page}"
    assert report["broken"] == [], f"images that did not load on {page}: {report['broken']}"
    assert problems == [], "\n".join(problems)
    if page.endswith(("jacobian", "scores", "invariance", "initialization", "variance")):
        assert report["math"] > 0 and report["images"] > 0, report


def test_figures_are_opaque(built_book):
    """Figures keep a white background, so they stay readable in the dark theme."""
    import re

    import numpy as np
    from PIL import Image

    _, html = built_book
    pngs = sorted((html / "_images").glob("*.png"))
    svgs = sorted((html / "_images").glob("*.svg"))
    assert pngs or svgs, "no figures in the build"
    for path in pngs:
        image = Image.open(path)
        if "A" in image.getbands():
            assert np.asarray(image.getchannel("A")).min() == 255, f"{path.name} has transparent pixels"
    # matplotlib draws the figure background as the first patch of the SVG
    background = re.compile(r'<g id="patch_1">\s*<path [^>]*style="fill: #ffffff"')
    for path in svgs:
        assert background.search(path.read_text()), f"{path.name} has no opaque white background"


# ---------------------------------------------------------------------------
# Pages fit: no sideways page scroll, nothing clipped out of sight.

WIDTHS = {"desktop": (1400, 900), "phone": (390, 844)}
THEMES = ["light", "dark"]

MARK_WIDE_FORMULAS = "() => window.attnscaleMarkWideFormulas && window.attnscaleMarkWideFormulas()"

FIT_CHECK = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const doc = document.documentElement;
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  const describe = (el) => {
    const cls = [...el.classList].slice(0, 3).join(".");
    const text = (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
    return `<${el.tagName.toLowerCase()}${cls ? "." + cls : ""}> ${text}`;
  };
  const clipBox = new Map();
  const nearestClip = (el) => {
    // the nearest ancestor (inside the article) whose overflow-x is not visible
    const chain = [];
    let anc = el.parentElement, found = null;
    while (anc && anc !== article.parentElement) {
      if (clipBox.has(anc)) { found = clipBox.get(anc); break; }
      chain.push(anc);
      if (getComputedStyle(anc).overflowX !== "visible") { found = anc; break; }
      anc = anc.parentElement;
    }
    for (const a of chain) { if (a !== found) clipBox.set(a, found); }
    return found;
  };
  const problems = [];
  for (const el of article.querySelectorAll("*")) {
    const unseen = "mjx-assistive-mml, .sr-only, .visually-hidden, details:not([open]) > :not(summary)";
    if (el.closest(unseen)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.position === "fixed") continue;
    const box = nearestClip(el);
    const limit = (box || article).getBoundingClientRect();
    const over = Math.max(r.right - limit.right, limit.left - r.left);
    if (over <= 1) continue;
    if (box) {
      const overflow = getComputedStyle(box).overflowX;
      if (overflow === "auto" || overflow === "scroll") continue;  // scrolls inside its box
      problems.push(`hidden by ${describe(box)} (${Math.round(over)} px): ${describe(el)}`);
    } else {
      problems.push(`sticks out of the page column (${Math.round(over)} px): ${describe(el)}`);
    }
  }
  // An inline formula is a scroll box only when it is wider than its column: a
  // scroll box around a formula that fits draws a scrollbar under it wherever
  // the system shows scrollbars (desktop Linux and Windows).
  const needlessScroll = [];
  for (const span of article.querySelectorAll("span.math")) {
    const overflow = getComputedStyle(span).overflowX;
    if (overflow !== "auto" && overflow !== "scroll") continue;
    const formula = span.querySelector("mjx-container");
    const column = span.closest("p, li, td, th, dd, figcaption, div") || span.parentElement;
    if (!formula || formula.getBoundingClientRect().width <= column.clientWidth) {
      needlessScroll.push(describe(span));
    }
  }
  return {pageOverflow: doc.scrollWidth - doc.clientWidth, problems, needlessScroll};
}
"""


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", list(WIDTHS))
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_page_fits(browser, served, page, size, theme):
    """At 1400 px and 390 px, light and dark: no sideways scroll, nothing clipped unseen."""
    report = _visit(browser, served, page)[size, theme]
    assert report["pageOverflow"] <= 0, f"{page} scrolls sideways by {report['pageOverflow']} px at {size}"
    assert report["problems"] == [], (
        f"{len(report['problems'])} elements on {page} ({size}, {theme}):\n"
        + "\n".join(report["problems"][:15])
    )
    assert report["needlessScroll"] == [], (
        f"{len(report['needlessScroll'])} inline formulas on {page} ({size}, {theme}) are scroll boxes "
        "though they fit their column (a scrollbar under each on desktops that show scrollbars):\n"
        + "\n".join(report["needlessScroll"][:10])
    )


# ---------------------------------------------------------------------------
# A box that scrolls sideways says so: a phone shows no scroll bar, and a wide
# table or equation is cut mid-number at the screen's edge until scrolled.

#: Every scroll box of the article (overflow-x auto or scroll) that the
#: reader sees: whether its content is wider than it, and whether it shows
#: the cue (a background image, the shaded edge of book/_static/reading.css).
#: An element that overflows without being a scroll box is test_page_fits's
#: business (it is either visible past its box or cut off).
SCROLL_CUES = """
() => {
  const article = document.querySelector("article.bd-article");
  const describe = (el) => {
    const cls = [...el.classList].slice(0, 3).join(".");
    const text = (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
    return `<${el.tagName.toLowerCase()}${cls ? "." + cls : ""}> ${text}`;
  };
  const uncued = [], needless = [];
  let cued = 0;
  for (const el of article.querySelectorAll("*")) {
    if (el.closest("mjx-assistive-mml, details:not([open]) > :not(summary)")) continue;
    const style = getComputedStyle(el);
    if (!["auto", "scroll"].includes(style.overflowX) || el.clientWidth === 0) continue;
    const cue = style.backgroundImage.includes("gradient");
    const scrolls = el.scrollWidth > el.clientWidth + 1;
    if (scrolls && !cue) uncued.push(describe(el));
    if (!scrolls && cue) needless.push(describe(el));
    if (scrolls && cue) cued += 1;
  }
  return {uncued, needless, cued};
}
"""


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", list(WIDTHS))
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_sideways_scroll_has_a_cue(browser, served, page, size, theme):
    """Every box wider than its content shows a shaded edge; no box that fits shows one."""
    report = _visit(browser, served, page)["cues", size, theme]
    assert report["uncued"] == [], (
        f"{len(report['uncued'])} boxes on {page} ({size}, {theme}) scroll sideways with no cue:\n"
        + "\n".join(report["uncued"][:10])
    )
    assert report["needless"] == [], (
        f"{len(report['needless'])} boxes on {page} ({size}, {theme}) show the cue though they fit:\n"
        + "\n".join(report["needless"][:10])
    )


#: The first results table's box on a page: its cue classes and its shaded edges, scrolled as asked.
TABLE_CUE = """
async (where) => {
  const box = document.querySelector("article.bd-article .pst-scrollable-table-container");
  box.scrollLeft = where === "end" ? box.scrollWidth : 0;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const caption = box.querySelector("caption");
  return {
    classes: [...box.classList].filter((c) => c.startsWith("more-")).sort(),
    edges: getComputedStyle(box).backgroundPosition,
    note: caption ? getComputedStyle(caption, "::after").content : null,
  };
}
"""


def test_scroll_cue_follows_the_scroll(browser, served):
    """On a phone, Table 12.1: shaded on the right at first, on the left once scrolled to its end."""
    tab = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        tab.goto(f"{served}/book/retrieval.html", wait_until="load")
        tab.evaluate("async () => { if (window.MathJax) { await MathJax.startup.promise; } }")
        tab.evaluate("() => window.attnscaleMarkScrollBoxes()")
        start, end = tab.evaluate(TABLE_CUE, "start"), tab.evaluate(TABLE_CUE, "end")
        assert start["classes"] == ["more-right"] and start["edges"] == "100% 0%", start
        assert end["classes"] == ["more-left"] and end["edges"] == "0% 0%", end
        # in words too, as the calculator's table says it (book/recipes.md); on screen only: the
        # table's name, which assistive technology reads, is its caption alone
        assert "scroll it sideways" in start["note"], start
        assert tab.get_by_role("table", name=re.compile("Recall accuracy at the training")).count() == 1
        assert tab.get_by_role("table", name=re.compile("scroll it sideways")).count() == 0
        tab.set_viewport_size({"width": 1400, "height": 900})
        tab.evaluate("() => window.attnscaleMarkScrollBoxes()")
        wide = tab.evaluate(TABLE_CUE, "start")
        assert wide["classes"] == [] and wide["note"] in ("none", "normal"), wide
    finally:
        tab.close()


CALCULATOR_CUE = """
() => {
  const out = document.querySelector("#attnscale-calculator .calc-table-box");
  const around = document.querySelector("#attnscale-calculator .calc-output");
  const caption = out.querySelector("caption");
  const hints = [...document.querySelectorAll("#attnscale-calculator .calc-scroll-hint")];
  const captionNote = getComputedStyle(caption, "::after").content.includes("scroll it sideways");
  return {
    shaded: out.classList.contains("more-right")
      && getComputedStyle(out).backgroundImage.includes("gradient"),
    // the legend and notes around the table are not under the shade
    around: getComputedStyle(around).backgroundImage.includes("gradient"),
    notes: hints.filter((h) => !h.hidden).length + (captionNote ? 1 : 0),
  };
}
"""


def test_calculator_table_has_the_shade_and_one_note(browser, served):
    """On a phone the calculator's table is shaded as every wide box is, and says so once.

    The shade is on the table's own scroll box, not on the legend and notes around it.
    """
    tab = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        tab.goto(f"{served}/book/recipes.html", wait_until="load")
        tab.evaluate("() => window.attnscaleMarkScrollBoxes()")
        found = tab.evaluate(CALCULATOR_CUE)
    finally:
        tab.close()
    assert found == {"shaded": True, "around": False, "notes": 1}, found


#: A system that shows scroll bars (Windows, classic Linux desktops: 15 px)
#: gives the article a column 15 px narrower than the suite's Chromium, which
#: hides them.  Every scroll box of the article that hides content: by how
#: much, and whether it is shaded.
SCROLL_BOXES_WIDE = """
() => {
  const article = document.querySelector("article.bd-article");
  const boxes = [];
  for (const el of article.querySelectorAll("*")) {
    const style = getComputedStyle(el);
    if (!["auto", "scroll"].includes(style.overflowX) || el.clientWidth === 0) continue;
    const over = el.scrollWidth - el.clientWidth;
    const shaded = style.backgroundImage.includes("gradient");
    if (over > 1 || shaded) {
      const text = (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
      boxes.push({box: `<${el.tagName.toLowerCase()}> ${text}`, over, shaded});
    }
  }
  const doc = document.documentElement;
  return {pageOverflow: doc.scrollWidth - doc.clientWidth, boxes};
}
"""

#: Pages whose every box fits at 1400 px with scroll bars shown (the reviewer
#: of issue 41 found printed output 2 px and Table 10.1 10 px too wide there).
FIT_WITH_SCROLL_BARS = ["book/recipes", "book/training"]


@pytest.fixture(scope="module")
def browser_with_scroll_bars(browser):
    """Chromium as above, but drawing scroll bars (without Playwright's --hide-scrollbars)."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    instance = browser.browser_type.launch(
        executable_path=executable, args=CHROMIUM_ARGS, ignore_default_args=["--hide-scrollbars"]
    )
    yield instance
    instance.close()


@pytest.mark.parametrize(
    "page", [*FIT_WITH_SCROLL_BARS, "book/evidence-calculator"], ids=lambda p: Path(p).name
)
def test_fits_with_scroll_bars_shown(browser_with_scroll_bars, served, page):
    """At 1400 px with 15-px scroll bars: no box scrolls (nor is shaded) for a few pixels.

    A box wider than its content by at most the scroll bar's width would fit
    a reader whose system hides scroll bars; with them shown it must fit too
    (reading.js sets a box off by <= 3 px a hair smaller).  On recipes and
    training nothing scrolls at all; the calculator's evidence page has wide
    tables and code that scroll on every screen, with their shade.
    """
    tab = browser_with_scroll_bars.new_page(viewport={"width": 1400, "height": 900})
    try:
        tab.goto(f"{served}/{page}.html", wait_until="load")
        tab.evaluate("async () => { if (window.MathJax) { await MathJax.startup.promise; } }")
        tab.evaluate(MARK_WIDE_FORMULAS)  # what the page does after typesetting, once more
        found = tab.evaluate(SCROLL_BOXES_WIDE)
        bar = tab.evaluate("() => window.innerWidth - document.documentElement.clientWidth")
    finally:
        tab.close()
    assert bar >= 10, f"scroll bars are not drawn ({bar} px): the run measures nothing"
    assert found["pageOverflow"] <= 0, found
    near = [b for b in found["boxes"] if 1 < b["over"] <= 15]
    assert near == [], f"{page}: boxes that scroll by a scroll bar's width or less: {near}"
    needless = [b for b in found["boxes"] if b["over"] <= 1 and b["shaded"]]
    assert needless == [], f"{page}: shaded boxes that fit: {needless}"
    if page in FIT_WITH_SCROLL_BARS:
        assert found["boxes"] == [], (
            f"{page}: boxes that scroll at 1400 px with scroll bars: {found['boxes']}"
        )


# ---------------------------------------------------------------------------
# Code folded: with folded cells closed, code is at most a quarter of a chapter.

MAX_CODE_SHARE = 0.25

CODE_SHARE = """
() => {
  const article = document.querySelector("article.bd-article");
  const total = article.getBoundingClientRect().height;
  let code = 0, cells = 0;
  for (const el of article.querySelectorAll("div.cell_input")) {
    cells += 1;
    // inside a closed fold the input is laid out but not shown
    if (el.closest("details:not([open])") || !el.checkVisibility()) continue;
    code += el.getBoundingClientRect().height;
  }
  for (const el of article.querySelectorAll("details.hide > summary")) {
    code += el.getBoundingClientRect().height;  // the "show code" toggle itself
  }
  return {code, total, cells, share: code / total};
}
"""


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_code_is_folded(browser, served, page):
    """Code (visible inputs and fold toggles) takes at most 25% of a chapter's height."""
    report = _visit(browser, served, page)["code"]
    if (ROOT / f"{page}.md") in SHOWS_CODE:
        # a page stripped of its code would pass the share trivially
        assert report["cells"] > 0, f"{page} has code cells to show but its page shows no code cell inputs"
    elif report["cells"] == 0:
        pytest.skip(f"{page} shows no code cells")
    print(f"\n{page}: code {report['share']:.0%} of the page ({report['cells']} cells)")
    assert report["share"] <= MAX_CODE_SHARE, (
        f"{page}: code takes {report['share']:.0%} of the page height "
        f"({report['code']:.0f} of {report['total']:.0f} px), more than {MAX_CODE_SHARE:.0%}: "
        "fold setup, plotting and checking cells (hide-input) and remove silent ones (remove-cell)"
    )


# ---------------------------------------------------------------------------
# Accessibility: axe-core on every page, no serious or critical violations.

AXE_RUN = """
async (options) => {
  const result = await axe.run(document, Object.assign({resultTypes: ["violations"]}, options));
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length,
    targets: v.nodes.slice(0, 3).map(n => n.target.join(" ")),
  }));
}
"""

AXE_COUNTS: dict[str, dict] = {}


#: axe-core from the npm package axe-core, vendored with its licence
#: (tests/vendor/axe-core/README.md says why, and how to update it).
AXE_CORE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
AXE_CORE_VERSION = "4.14.1"
AXE_CORE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"


def _axe_script() -> Path:
    assert AXE_CORE.exists(), f"{AXE_CORE} is missing"
    return AXE_CORE


def test_vendored_axe_core_is_the_recorded_release():
    """The vendored axe.min.js is axe-core AXE_CORE_VERSION, byte for byte as published."""
    import hashlib

    data = _axe_script().read_bytes()
    assert data.startswith(f"/*! axe v{AXE_CORE_VERSION}\n".encode()), data[:40]
    assert hashlib.sha256(data).hexdigest() == AXE_CORE_SHA256
    readme = (AXE_CORE.parent / "README.md").read_text()
    assert f"axe-core@{AXE_CORE_VERSION}" in readme and AXE_CORE_SHA256 in readme
    assert (AXE_CORE.parent / "LICENSE").read_text().startswith("Mozilla Public License, version 2.0")


NAME_MISMATCH_PAGE = """<!doctype html><html lang="en"><head><title>names</title></head><body><main>
<details><summary aria-label="Toggle hidden content">Show code cell source</summary><p>code</p></details>
<button aria-label="Search">Search <kbd>Ctrl</kbd>+<kbd>K</kbd></button>
<details><summary>Show code cell source</summary><p>code</p></details>
<button>Search <kbd>Ctrl</kbd>+<kbd>K</kbd></button>
</main></body></html>"""


def test_axe_checks_names_against_labels(browser):
    """With each view's options, the names rule flags the two mismatched controls, not the plain ones."""
    tab = browser.new_page()
    tab.set_content(NAME_MISMATCH_PAGE)
    tab.add_script_tag(path=str(_axe_script()))
    for view, options in AXE_RUNS.items():
        found = {v["id"]: v for v in tab.evaluate(AXE_RUN, options)}
        assert NAME_RULE in found, (view, sorted(found))
        assert found[NAME_RULE]["nodes"] == 2 and found[NAME_RULE]["impact"] == "serious", found[NAME_RULE]
    tab.close()


@pytest.mark.parametrize(("size", "theme"), list(AXE_RUNS))
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_accessibility(browser, served, page, size, theme):
    """axe-core: no serious or critical violation (see AXE_RUNS for the rules in each view)."""
    visit = _visit(browser, served, page)
    assert visit["axe version"] == AXE_CORE_VERSION
    violations = visit["axe", size, theme]
    counts = {}
    for v in violations:
        counts[v["impact"] or "unknown"] = counts.get(v["impact"] or "unknown", 0) + v["nodes"]
    AXE_COUNTS[f"{page} ({size}, {theme})"] = {"counts": counts, "violations": violations}
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    (shots / "axe.json").write_text(json.dumps(AXE_COUNTS, indent=1))
    print(
        f"\naxe {page} ({size}, {theme}): "
        + (", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "no violations")
    )
    bad = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert bad == [], "\n".join(
        f"{v['impact']} {v['id']} x{v['nodes']}: {v['help']} {v['targets']}" for v in bad
    )


# ---------------------------------------------------------------------------
# Figure text: at least 9 CSS pixels as displayed, or the figure opens full size.

MIN_TEXT_PX = 9.0

#: Every figure of the article as laid out: each SVG image's URL, its
#: displayed and natural widths, and where a tap on it leads; each inline
#: SVG's smallest text (the calculator's figures) in CSS pixels.
FIGURE_SIZES = """
() => {
  const article = document.querySelector("article.bd-article");
  const images = [...article.querySelectorAll("img")]
    .filter(img => new URL(img.src).pathname.endsWith(".svg") && img.naturalWidth > 0)
    .map(img => ({
      src: img.src,
      shown: img.getBoundingClientRect().width,
      natural: img.naturalWidth,
      link: img.closest("a[href]") ? img.closest("a[href]").href : null,
    }));
  const inline = [...article.querySelectorAll("svg")]
    .filter(svg => svg.querySelector("text") && svg.getBoundingClientRect().width > 0)
    .map(svg => {
      const sizes = [...svg.querySelectorAll("text")].filter(t => t.textContent.trim()).map(t => {
        const m = t.getScreenCTM();
        return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      });
      return {id: svg.id || svg.closest("[id]")?.id || "(inline svg)", px: Math.min(...sizes)};
    });
  return {images, inline};
}
"""


def svg_text_size(path: Path) -> tuple[float, float]:
    """(smallest glyph's font size, viewBox width) of an SVG, both in its user units.

    Every glyph counts, mathtext's sub- and superscripts included
    (``bookbuild.svg_glyph_size``): a tick label's exponent is the smallest
    glyph of most figures.
    """
    return svg_glyph_size(path.read_text(errors="ignore"))


def _figure_text(built_book, visit, size):
    """Each SVG figure's smallest text in CSS px as shown and at full size, and whether a tap opens it."""
    from urllib.parse import unquote, urlsplit

    _, html = built_book
    found = []
    for image in visit["figures", size]["images"]:
        path = html / unquote(urlsplit(image["src"]).path).lstrip("/")
        font, width = svg_text_size(path)
        found.append(
            {
                "figure": path.name[:12],
                "shown px": round(font * image["shown"] / width, 1),
                "full-size px": round(font * image["natural"] / width, 1),
                "opens full size": image["link"] is not None
                and urlsplit(image["link"]).path == urlsplit(image["src"]).path,
            }
        )
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_figure_text_is_legible(browser, served, built_book, page):
    """Every figure's smallest text is >= 9 CSS px as displayed, at 1400 px and at 390 px.

    Every glyph counts, sub- and superscripts included (a tick label's
    exponent is the smallest glyph of most figures).  The figures are drawn
    4.0 to 4.6 in wide with their legends under the axes (a phone shows them
    whole, 342 px wide), and a tap on one opens its SVG at full size.  Text
    drawn on the page (the calculator's inline SVG) has no full size: >= 9
    px at both widths.
    """
    visit = _visit(browser, served, page)
    small, closed = [], []
    for size in WIDTHS:
        for figure in _figure_text(built_book, visit, size):
            print(f"\n{page} ({size}): {figure}")
            if figure["shown px"] < MIN_TEXT_PX:
                small.append((size, figure))
            if not figure["opens full size"]:
                closed.append((size, figure))
        for svg in visit["figures", size]["inline"]:
            if svg["px"] < MIN_TEXT_PX:
                small.append((size, svg))
    assert small == [], f"{page}: figure text below {MIN_TEXT_PX} px: {small}"
    assert closed == [], f"{page}: figures a tap does not open full size: {closed}"


def test_svg_text_size_reads_matplotlib_figures(tmp_path, monkeypatch, request):
    """svg_text_size finds the smallest glyph matplotlib drew, scripts included, as paths and as text.

    A superscript is 0.7 of its text (matplotlib's default): 0.7 x 11 =
    7.7 points in the axis label, below the legend's 8.5.  A square root's
    radical, drawn scaled to its radicand's height, is not a small glyph.
    """
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    from matplotlib import _mathtext, mathtext

    # matplotlib's own script size, whatever the book style set in this process
    monkeypatch.setattr(_mathtext, "SHRINK_FACTOR", 0.7)
    cache = mathtext.MathTextParser._parse_cached
    cache.cache_clear()
    request.addfinalizer(cache.cache_clear)  # no layout at 0.7 is left for the tests after this one
    for fonttype in ("path", "none"):
        with matplotlib.rc_context({"svg.fonttype": fonttype}):
            fig, ax = plt.subplots(figsize=(4, 3))
            ax.plot([0, 1], [0, 1], label=r"a line, $\sqrt{n}$")
            ax.set_xlabel(r"$\alpha^*$ label", fontsize=11)
            ax.tick_params(labelsize=9)
            ax.legend(fontsize=8.5)
            fig.savefig(tmp_path / f"{fonttype}.svg")
            ax.set_xlabel("label", fontsize=11)
            fig.savefig(tmp_path / f"{fonttype}-plain.svg")
            plt.close(fig)
        font, width = svg_text_size(tmp_path / f"{fonttype}.svg")
        assert (round(font, 2), width) == (7.7, 288.0), (fonttype, font, width)
        font, width = svg_text_size(tmp_path / f"{fonttype}-plain.svg")
        assert (round(font, 2), width) == (8.5, 288.0), (fonttype, font, width)


# ---------------------------------------------------------------------------
# Results tables: numbered, captioned, a header on every column.

TABLES = """
() => [...document.querySelectorAll("article.bd-article table")]
  .filter(t => !t.closest("dl.py"))  // the API reference's docstring tables
  // the calculator's live answer, redrawn on every input, captioned by its title
  .filter(t => !t.closest("form.attnscale-calculator"))
  .map(t => ({
    caption: t.caption ? t.caption.textContent.trim().replace(/\\s+/g, " ").slice(0, 80) : "",
    numbered: !!(t.caption && t.caption.querySelector(".caption-number")),
    // a header whose only content is a typeset formula is empty too: MathJax draws its glyphs
    // with CSS, and its hidden copy for screen readers is no visible text (axe: empty-table-header)
    emptyHeaders: [...t.querySelectorAll("th")].filter(th => {
      const copy = th.cloneNode(true);
      copy.querySelectorAll("mjx-container").forEach(m => m.remove());
      return !copy.textContent.trim();
    }).length,
    head: [...t.querySelectorAll("th")].map(th => th.textContent.trim()).join(" | ").slice(0, 80),
  }))
"""

#: Pages whose tables this test does not hold yet, and why (none now).
TABLES_NOT_YET: dict[str, str] = {}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_results_tables_are_captioned(browser, served, page):
    """Every table of a page (but the API's docstrings and the calculator's live answer) has a
    numbered caption and no empty header cell."""
    tables = _visit(browser, served, page)["tables"]
    bad = [t for t in tables if not (t["caption"] and t["numbered"]) or t["emptyHeaders"]]
    if bad and page in TABLES_NOT_YET:
        pytest.xfail(f"{page}: {TABLES_NOT_YET[page]} ({len(bad)} tables)")
    assert bad == [], f"{page}: tables without a numbered caption or with empty header cells: {bad}"


# ---------------------------------------------------------------------------
# The keyboard: formulas are not Tab stops, header controls show focus, the
# calculator is a few keys from the page top, the colour button keeps focus.

FOCUSED = """
() => {
  const e = document.activeElement;
  const s = getComputedStyle(e);
  return {
    tag: e.tagName, text: (e.getAttribute("aria-label") || e.textContent || "").trim().slice(0, 40),
    header: !!e.closest(".bd-header, .bd-header-article, #pst-skip-link"),
    calculatorField: !!e.closest("#attnscale-calculator") && ["INPUT", "SELECT"].includes(e.tagName),
    outline: s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2,
    formulaFits: !!e.closest("mjx-container, span.math")
      && !(e.scrollWidth > e.clientWidth + 1 && ["auto", "scroll"].includes(s.overflowX)),
  };
}
"""

MAX_TABS_TO_CALCULATOR = 30

NEEDLESS_FORMULA_STOPS = """
() => [...document.querySelectorAll("mjx-container[tabindex], span.math[tabindex]")]
  .filter(e => e.tabIndex >= 0 && !(e.scrollWidth > e.clientWidth + 1)).length
"""


def _keyboard_tab(browser, served, page, width):
    tab = browser.new_page(viewport={"width": width, "height": 900})
    tab.goto(f"{served}/{page}.html", wait_until="load")
    tab.evaluate("async () => { if (window.MathJax) { await MathJax.startup.promise; } }")
    return tab


@pytest.mark.parametrize("width", [1400, 390])
def test_calculator_is_a_few_keys_from_the_top(browser, served, width):
    """Tab to "Skip to the calculator", Enter, Tab: the first field, within 30 keys."""
    tab = _keyboard_tab(browser, served, "book/recipes", width)
    try:
        for _ in range(MAX_TABS_TO_CALCULATOR):
            tab.keyboard.press("Tab")
            focused = tab.evaluate(FOCUSED)
            if focused["calculatorField"]:
                break
            if focused["text"] == "Skip to the calculator":
                tab.keyboard.press("Enter")
        assert focused["calculatorField"], (
            f"no calculator field within {MAX_TABS_TO_CALCULATOR} keys at {width} px"
        )
    finally:
        tab.close()


@pytest.mark.parametrize("width", [1400, 390])
def test_header_controls_show_focus_and_formulas_take_none(browser, served, width):
    """The first Tab stops: every header control draws a focus ring; no formula is among them."""
    tab = _keyboard_tab(browser, served, "book/softmax-jacobian", width)
    try:
        # only formulas that scroll (wider than the column) may take focus: their arrows scroll them
        assert tab.evaluate(NEEDLESS_FORMULA_STOPS) == 0
        seen = []
        for _ in range(40):
            tab.keyboard.press("Tab")
            focused = tab.evaluate(FOCUSED)
            assert not focused["formulaFits"], f"a formula that fits its column is a Tab stop at {width} px"
            if focused["header"]:
                seen.append(focused["text"])
                assert focused["outline"], f"no visible focus ring on the header control {focused['text']!r}"
        assert len(seen) >= 3, seen
    finally:
        tab.close()


def test_colour_button_keeps_focus(browser, served):
    tab = _keyboard_tab(browser, served, "book/variance", 390)
    try:
        tab.focus(".theme-switch-button")
        tab.keyboard.press("Enter")
        tab.wait_for_timeout(50)
        assert "theme-switch-button" in tab.evaluate("document.activeElement.className")
        tab.keyboard.press("Enter")  # a second press still acts on the button
        tab.wait_for_timeout(50)
        assert "theme-switch-button" in tab.evaluate("document.activeElement.className")
    finally:
        tab.close()


def test_general_index_fits_a_phone(browser, served):
    tab = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        tab.goto(f"{served}/genindex.html", wait_until="load")
        overflow = tab.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the general index scrolls sideways by {overflow} px at 390 px"
    finally:
        tab.close()


# ---------------------------------------------------------------------------
# Search: excerpts in the reader's words (book/_static/search_snippets.js).

SEARCH_EXCERPTS = """
async () => {
  const deadline = Date.now() + 60000;
  while (document.querySelectorAll("#search-results p.context").length < 5 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, 1000));  // the excerpts still being fetched
  return {
    installed: typeof Search !== "undefined" && Search.htmlToText === window.attnscaleSearchText.articleText,
    excerpts: [...document.querySelectorAll("#search-results p.context")].map((p) => p.textContent),
  };
}
"""


@pytest.mark.parametrize("query", ["entropy", "scale"])
def test_search_excerpts_are_the_articles_words(browser, served, query):
    """No excerpt shows the download menu ("....ipynb"), TeX ("\\(L\\)") or code toggles and code."""
    tab = browser.new_page()
    tab.goto(f"{served}/search.html?q={query}", wait_until="load")
    found = tab.evaluate(SEARCH_EXCERPTS)
    tab.close()
    assert found["installed"], "search_snippets.js did not replace Search.htmlToText"
    excerpts = found["excerpts"]
    assert len(excerpts) >= 5, excerpts
    bad = [
        e[:120]
        for e in excerpts
        if re.search(
            r"\.\.\.\.(ipynb|md|pdf)\b|\\[(\[]|\\[A-Za-z]{2,}|Show code cell|Hide code cell|import ", e
        )
    ]
    assert bad == [], bad


# ---------------------------------------------------------------------------
# Search ranking: a chapter whose title holds the word comes first
# (book/_static/search_scorer.js, Sphinx's html_search_scorer).

SEARCH_RANKING = """
async () => {
  const deadline = Date.now() + 30000;
  const done = () => (document.querySelector("#search-results .search-summary") || {}).textContent;
  while (!done() && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const links = document.querySelectorAll("#search-results ul.search > li > a");
  return [...links].map((a) => a.getAttribute("href"));
}
"""

#: A word of a chapter's title, and that chapter.  Before the scorer, every
#: page with a section heading holding the word tied with the chapter, and
#: ties went by title as a string ("19. Evidence..." before "7. Entropy..."):
#: "entropy" put its chapter 7th, "jacobian" 3rd, "decoders" 4th; for
#: "retrieval" and "cosine" an API object or an appendix came first.
RANKED_FIRST = {
    "entropy": "book/entropy-invariance.html",
    "jacobian": "book/softmax-jacobian.html",
    "decoders": "book/decoders.html",
    "cosine": "book/cosine-scores.html",
    "retrieval": "book/retrieval.html",
}


@pytest.mark.parametrize("query", list(RANKED_FIRST))
def test_search_ranks_the_chapter_first(browser, served, query):
    """The search page lists first the chapter whose title holds the searched word."""
    tab = browser.new_page()
    try:
        tab.goto(f"{served}/search.html?q={query}", wait_until="load")
        found = tab.evaluate(SEARCH_RANKING)
    finally:
        tab.close()
    assert found and found[0] == RANKED_FIRST[query], f"{query!r}: {found[:8]}"


def test_search_scorer_reaches_the_build(built_book):
    """Sphinx put the scorer into language_data.js, whole (html_search_scorer in _config.yml)."""
    _, html = built_book
    scorer = (ROOT / "book" / "_static" / "search_scorer.js").read_text()
    assert scorer.strip() in (html / "_static" / "language_data.js").read_text()


def test_search_scorer_path_is_the_book_roots(tmp_path):
    """A relative html_search_scorer is read from the book's root, wherever the build runs."""
    from types import SimpleNamespace

    from bookbuild import load_extension

    hygiene = load_extension("page_hygiene")
    config = SimpleNamespace(html_search_scorer="book/_static/search_scorer.js")
    hygiene._search_scorer_path(SimpleNamespace(confdir=str(ROOT)), config)
    assert Path(config.html_search_scorer) == ROOT / "book" / "_static" / "search_scorer.js"
    assert Path(config.html_search_scorer).is_file()
    config = SimpleNamespace(html_search_scorer="")  # none set: Sphinx's own ranking, untouched
    hygiene._search_scorer_path(SimpleNamespace(confdir=str(tmp_path)), config)
    assert config.html_search_scorer == ""


def test_search_from_disk_keeps_the_console_clean(browser, built_book):
    """Opened as a file (file://), the search page lists its results without excerpts, and no error.

    The browser refuses a file page's fetch of another file, which is how
    Sphinx cuts each result's excerpt; search_snippets.js turns the excerpts
    off there, so that the console does not fill with one CORS error per result.
    """
    _, html = built_book
    tab = browser.new_page()
    problems = []
    tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
    try:
        tab.goto((html / "search.html").resolve().as_uri() + "?q=entropy", wait_until="load")
        found = tab.evaluate(SEARCH_RANKING)
        tab.wait_for_timeout(500)  # a fetch, had one started, fails within this
        excerpts = tab.locator("#search-results p.context").count()
    finally:
        tab.close()
    assert problems == [], f"{len(problems)} problems: {problems[:4]}"
    assert len(found) >= 5 and excerpts == 0, (found[:8], excerpts)


def test_search_text_writes_tex_as_text(browser):
    """The excerpts' formulas: TeX as plain text, the article alone, without code."""
    tab = browser.new_page()
    tab.add_script_tag(path=str(ROOT / "book" / "_static" / "search_snippets.js"))
    cases = {
        r"\(\frac{1}{\sqrt d}\)": "1/√d",
        r"\(\mathbb E\,\alpha(1 - \sum_i p_i^2)\)": "E α(1 - Σ_i p_i²)",
        r"\(n = 10^{6}\)": "n = 10⁶",
        r"\(\sqrt{2\log n}\)": "√(2log n)",
    }
    for tex, text in cases.items():
        assert tab.evaluate("t => attnscaleSearchText.texToText(t)", tex) == text
    page = (
        '<main role="main"><div class="bd-header-article">.ipynb .md .pdf</div><article class="bd-article">'
        '<h1>Title<a class="headerlink">#</a></h1><details><summary>Show code cell source</summary>'
        '<div class="cell_input">import io</div></details><p>At <span class="math">\\(L\\)</span>, words.</p>'
        "</article></main>"
    )
    assert tab.evaluate("h => attnscaleSearchText.articleText(h)", page) == "Title At L, words."
    tab.close()
