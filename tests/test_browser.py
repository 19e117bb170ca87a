"""The built book in a real browser: math typeset, images loaded, no console errors.

Serves the session's build on 127.0.0.1, opens every page in headless
Chromium (Debian's, driven by Playwright), waits for MathJax, and checks the
page; a full-page screenshot of each lands in ``_build/screenshots/``.
Skipped when Chromium is not installed, unless ATTNSCALE_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
from bookbuild import ROOT, toc_files

pytestmark = pytest.mark.book

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

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


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    executable = _chromium()
    if executable is None:
        if os.environ.get("ATTNSCALE_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium is required (ATTNSCALE_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def served(built_book):
    result, html = built_book
    assert result.returncode == 0, "the book build failed; see test_book_builds_clean"

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


PAGES = toc_files()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).name)
def test_page_renders(browser, served, page):
    tab = browser.new_page(viewport={"width": 1300, "height": 900})
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
    report = tab.evaluate(PAGE_CHECK)
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(shots / f"{Path(page).name}.png"), full_page=True)
    tab.close()
    assert report["untypeset"] == [], f"raw TeX left on {page}: {report['untypeset'][:5]}"
    assert report["mathErrors"] == 0, f"MathJax errors on {page}"
    assert report["broken"] == [], f"images that did not load on {page}: {report['broken']}"
    assert problems == [], "\n".join(problems)
    if page.endswith(("jacobian", "scores", "invariance", "initialization", "variance")):
        assert report["math"] > 0 and report["images"] > 0, report


def test_figures_are_opaque(built_book):
    """Figures keep a white background, so they stay readable in the dark theme."""
    import numpy as np
    from PIL import Image

    _, html = built_book
    pngs = sorted((html / "_images").glob("*.png"))
    assert pngs, "no figures in the build"
    for path in pngs:
        image = Image.open(path)
        if "A" in image.getbands():
            assert np.asarray(image.getchannel("A")).min() == 255, f"{path.name} has transparent pixels"
