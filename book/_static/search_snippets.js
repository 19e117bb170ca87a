// The search page's excerpts: the article's own words.
//
// Sphinx's search (searchtools.js, Search.htmlToText) cuts each result's
// excerpt from the text of the page's whole main block as the HTML holds it:
// the header's download menu (".ipynb .md .pdf"), the colour-mode buttons,
// the folded code cells' toggles and code ("Show code cell source Hide code
// cell source import io ..."), and formulas as their TeX source ("\(L\)"),
// which MathJax typesets only on the page itself.  Here the excerpt is taken
// from the article alone, without code, toggles or hidden copies, and each
// formula is written as plain text (α, √d, log n).  Every page loads this
// file; it acts only where Sphinx's Search is defined (the search page).
//
// A book opened from disk (file://): the browser refuses the fetch of each
// result's page that an excerpt is cut from (a CORS error in the console for
// every result), so there the results are listed without excerpts.
(() => {
  "use strict";

  // Read by searchtools.js for each result as it is listed, after this file has run.
  if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }

  // What a reader of an excerpt does not want: code, its toggles, the
  // heading's "#" link, copy buttons, scripts and styles.
  const NOISE = [
    ".headerlink",
    "script",
    "style",
    "summary",
    ".cell_input",
    ".copybtn",
    ".visually-hidden",
    ".sr-only",
  ].join(", ");

  const SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", Delta: "Δ", epsilon: "ε", varepsilon: "ε",
    kappa: "κ", lambda: "λ", mu: "μ", sigma: "σ", theta: "θ", pi: "π", tau: "τ", rho: "ρ",
    infty: "∞", cdot: "·", times: "×", le: "≤", leq: "≤", ge: "≥", geq: "≥", approx: "≈",
    pm: "±", to: "→", ll: "≪", gg: "≫", neq: "≠", ne: "≠", sim: "~", propto: "∝", ldots: "…",
    dots: "…", cdots: "…", sum: "Σ", in: "∈", star: "*", prime: "′", mid: "|",
  };
  const SUPERSCRIPT = { 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹", "-": "⁻", "+": "⁺", n: "ⁿ", i: "ⁱ", "*": "*" };

  // A term as it reads after √ or around /: bare when one symbol (n, 2, √d), else in parentheses.
  const grouped = (a) => (/^√?[\p{L}\p{N}]$/u.test(a.trim()) ? a.trim() : `(${a})`);

  // TeX as plain text: \frac{a}{b} -> a/b, \sqrt{x} -> √x, x^{2} -> x², \mathrm{ref} -> ref.
  function texToText(tex) {
    // math delimiters anywhere (a display's number comes before its "\\[")
    let text = tex.trim().replace(/\\[()[\]]/g, " ");
    text = text.replace(/\\sqrt\s*(\w)/g, "√$1"); // \sqrt d, before a fraction takes it in
    for (let k = 0; k < 3; k++) { // nested arguments, innermost first
      text = text
        .replace(/\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}/g, (_, a, b) => `${grouped(a)}/${grouped(b)}`)
        .replace(/\\sqrt\{([^{}]*)\}/g, (_, a) => `√${grouped(a)}`)
        .replace(/\\(?:mathrm|mathbb|mathbf|mathit|mathcal|text|operatorname|boldsymbol)\{([^{}]*)\}/g, "$1");
    }
    text = text
      .replace(/\\sqrt\s*(\w)/g, "√$1")
      .replace(/\\(?:mathbb|mathrm|mathbf)\s*(\w)/g, "$1")
      .replace(/\\(?:left|right|[bB]igg?[lr]?)\b/g, "")
      .replace(/\\q?quad\b/g, " ")
      .replace(/\\[,;:! ]/g, " ")
      .replace(/\^(?:\{([-+0-9ni*]+)\}|([0-9ni*]))/g, (_, a, b) => [...(a ?? b)].map((c) => SUPERSCRIPT[c]).join(""))
      .replace(/\\([A-Za-z]+)/g, (_, name) => SYMBOLS[name] ?? name)
      .replace(/[{}]/g, "");
    return text.replace(/\s+/g, " ").trim();
  }

  function articleText(htmlString, anchor) {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const article = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]');
    if (!article) return "";
    article.querySelectorAll(NOISE).forEach((el) => el.remove());
    article.querySelectorAll(".math").forEach((el) => {
      el.textContent = ` ${texToText(el.textContent)} `;
    });
    // blocks end in a space, so that a heading and the paragraph after it do not run together
    article.querySelectorAll("h1, h2, h3, h4, p, li, td, th, dt, dd, div, figcaption, caption").forEach((el) => {
      el.append(" ");
    });
    let part = null;
    try {
      part = anchor ? article.querySelector(anchor) : null;
    } catch (error) {
      part = null; // an anchor that is no CSS selector: the whole article
    }
    return (part || article).textContent.replace(/\s+/g, " ").replace(/ ([,.;:)])/g, "$1").trim();
  }

  window.attnscaleSearchText = { articleText, texToText }; // for the tests
  document.addEventListener("DOMContentLoaded", () => {
    // searchtools.js declares Search at the top level of its script: a global binding, not window's
    if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
    Search.htmlToText = articleText;
  });
})();
