/* The Scale of Attention: reading comfort that CSS alone cannot give.
 *
 * 1. An inline formula wider than its column scrolls inside its own box
 *    (class "math-wide", book/_static/reading.css); every other formula
 *    overflows visibly, so no scrollbar is drawn under it.
 * 2. The colour-mode button keeps keyboard focus after it is pressed.
 * 3. On the page with the calculator, a second skip link ("Skip to the
 *    calculator") follows the theme's "Skip to main content": the
 *    calculator's first field is two Tabs and an Enter from the page top.
 * 4. Printed output, code and tables wider than their box by at most 3 px
 *    are set a hair smaller, so they fit (no scroll bar, no shade).
 * 5. A box that scrolls sideways (a wide table, a display equation, code)
 *    says so: it is marked "scrolls-sideways" while its content is wider
 *    than it, with "more-left" and "more-right" for the sides that hide
 *    content, and reading.css shades those edges (phones hide scroll bars).
 */
(function () {
  "use strict";

  function markWideFormulas() {
    document.querySelectorAll(".bd-article span.math").forEach(function (span) {
      span.classList.remove("math-wide");
      var column = span.closest("p, li, td, th, dd, figcaption, div") || span.parentElement;
      var formula = span.querySelector("mjx-container");
      if (formula && column && formula.getBoundingClientRect().width > column.clientWidth) {
        span.classList.add("math-wide");
      }
    });
    // A display formula wider than its box by a pixel or three would scroll
    // (and be a Tab stop in Chromium) for nothing: it is set a hair smaller.
    document.querySelectorAll(".bd-article mjx-container[display='true']").forEach(function (box) {
      box.style.fontSize = "";
      var excess = box.scrollWidth - box.clientWidth;
      if (excess > 0 && excess <= 3) {
        box.style.fontSize = Math.floor(1000 * (box.clientWidth - 1) / box.scrollWidth) / 10 + "%";
      }
    });
    fitNearlyFitting();
    // A formula that scrolls is a Tab stop (its arrows scroll it); no other is.
    var boxes = ".bd-article span.math, .bd-article mjx-container[display='true']";
    document.querySelectorAll(boxes).forEach(function (box) {
      var style = getComputedStyle(box).overflowX;
      if (box.scrollWidth > box.clientWidth + 1 && (style === "auto" || style === "scroll")) {
        box.setAttribute("tabindex", "0");
      } else if (box.getAttribute("tabindex") === "0") {
        box.removeAttribute("tabindex");
      }
    });
    markScrollBoxes();
  }

  // Printed output, code and tables wider than their box by a pixel or three
  // (a reader whose system shows scroll bars has a column 15 px narrower)
  // would show the shade and a scroll bar for nothing: as a display formula,
  // such a box is set a hair smaller (in px: a percentage would count from
  // the parent's size, not the box's own).
  var NEARLY_FITTING = [
    ["pre", function (pre) { return pre; }],
    [".pst-scrollable-table-container", function (box) { return box.querySelector(":scope > table"); }],
    [".output table", function (table) { return table; }],
  ];

  function fitNearlyFitting() {
    NEARLY_FITTING.forEach(function (pair) {
      document.querySelectorAll(".bd-article " + pair[0]).forEach(function (box) {
        var content = pair[1](box);
        if (!content) { return; }
        content.style.fontSize = "";
        var excess = box.scrollWidth - box.clientWidth;
        if (excess > 0 && excess <= 3 && box.clientWidth > 0) {
          var size = parseFloat(getComputedStyle(content).fontSize);
          var ratio = (box.clientWidth - 1) / box.scrollWidth;
          content.style.fontSize = Math.floor(100 * size * ratio) / 100 + "px";
        }
      });
    });
  }

  // Every box of the article that may scroll sideways (reading.css makes
  // them scroll boxes; the theme wraps each table in its own container).
  var SCROLL_BOXES = [
    ".pst-scrollable-table-container",
    "div.math",
    "mjx-container[display='true']",
    "span.math.math-wide",
    "pre",
    "div.output",
    "div.cell_output .output",
    "div.proof",
    "div.admonition",
    ".calc-output",
    ".calc-table-box",
    ".output table",
  ].map(function (s) { return ".bd-article " + s; }).join(", ");

  // The sides of a scroll box that hide content, as classes; +1: subpixel widths.
  function markScrollSides(box) {
    var hidden = box.scrollWidth - box.clientWidth;
    var style = getComputedStyle(box).overflowX;
    var scrolls = hidden > 1 && (style === "auto" || style === "scroll");
    var left = Math.abs(box.scrollLeft); // negative in a right-to-left box
    box.classList.toggle("scrolls-sideways", scrolls);
    box.classList.toggle("more-left", scrolls && left > 1);
    box.classList.toggle("more-right", scrolls && left < hidden - 1);
  }

  function onScrollBoxScroll(event) {
    markScrollSides(event.currentTarget);
  }

  function markScrollBoxes() {
    document.querySelectorAll(SCROLL_BOXES).forEach(function (box) {
      markScrollSides(box);
      if (!box.dataset.scrollCue) {
        box.dataset.scrollCue = "1";
        box.addEventListener("scroll", onScrollBoxScroll, { passive: true });
      }
    });
  }

  function afterTypesetting(callback) {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(callback);
    } else {
      callback();
    }
  }

  // The browser test calls it right after changing the viewport (tests/test_browser.py);
  // it marks the boxes that scroll sideways too.
  window.attnscaleMarkWideFormulas = markWideFormulas;
  window.attnscaleMarkScrollBoxes = markScrollBoxes;
  window.attnscaleMarkScrollSides = markScrollSides; // the calculator's table, redrawn as the reader types

  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(markWideFormulas, 150);
  });

  function addCalculatorSkipLink() {
    var form = document.getElementById("attnscale-calculator");
    var skip = document.getElementById("pst-skip-link");
    if (!form || !skip) { return; }
    var link = document.createElement("a");
    link.href = "#attnscale-calculator";
    link.textContent = "Skip to the calculator";
    skip.appendChild(link);
  }

  document.addEventListener("DOMContentLoaded", function () {
    addCalculatorSkipLink();
    afterTypesetting(markWideFormulas);
    // web fonts and images change widths after the first layout
    window.addEventListener("load", function () { afterTypesetting(markWideFormulas); });
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      button.addEventListener("click", function () {
        setTimeout(function () { button.focus({ preventScroll: true }); }, 0);
      });
    });
  });
})();
