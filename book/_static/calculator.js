/* The scale calculator of the recipes page: attnscale.recommend_scale in the
 * reader's browser, with no kernel and no network.
 *
 * recommend(setting, table) mirrors the rows of attnscale.recipes.RULES, in order, with the same names, sources
 * and notes.  Closed-form rules are computed here.  What needs the package's solvers comes from the table
 * book/_ext/calculator_table.py writes at build time: the causal Gaussian gradient row (cubic in log n), the
 * cosine gradient row (a bicubic spline), and the exact expected entropy of Gaussian scores (two bicubic
 * splines), from which the page solves the exact entropy match and a measured entropy's alpha_L.  What has no
 * table (the causal cosine gradient, the cosine exact match and a cosine head's entropy), and a row whose answer
 * the table's error would decide (near a boundary), says "see the CLI", with the command.  tests/test_calculator_page.py compares every number with the package.  The form is in
 * book/recipes.md (a raw HTML block); plot() and plotGradient() draw its figures.
 */
(function () {
  "use strict";

  const MAX_KEYS = 1e15; // attnscale.recipes.MAX_KEYS
  const MAX_D = 1e6; // beyond, InfoScale's expm1 ratio loses its digits
  const MAX_ALPHA = 1e6; // beyond, alpha_L^2 in the sqrt rule nears overflow
  const EXACT_MAX_KEYS = 1e9; // attnscale.recipes._EXACT_MAX_KEYS

  // The first p significant digits of x > 0, and its decimal exponent, rounded
  // as Python rounds them: to nearest, an exact tie to the even digit (JS's
  // toExponential breaks ties upward: 0.125 to 2 digits is 0.13 there, 0.12 in
  // Python).  toExponential(99) is the exact expansion to 100 digits, enough
  // to see any tie: a tie at p <= 17 digits has only p + 1 significant digits.
  function pythonDigits(x, p) {
    const [exact, e] = x.toExponential(99).split("e");
    const digits = exact.replace(".", "");
    const tie = digits[p] === "5" && /^0*$/.test(digits.slice(p + 1));
    if (tie && Number(digits[p - 1]) % 2 === 0) return [digits.slice(0, p), parseInt(e, 10)]; // down, to even
    const [m, e2] = x.toExponential(p - 1).split("e"); // nearest, or a tie up to even
    return [m.replace(".", ""), parseInt(e2, 10)];
  }

  const strip = (s) => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
  const exponent = (e) => (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0"); // Python: 1e+06

  // Python's format(x, ".{p}g") (and ":g", p = 6), so that names and notes
  // read exactly as the command line prints them.
  function fmtG(x, p = 6) {
    if (x === 0) return "0";
    const sign = x < 0 ? "-" : "";
    const [digits, e] = pythonDigits(Math.abs(x), p);
    if (e < -4 || e >= p) return sign + strip(digits[0] + "." + digits.slice(1)) + "e" + exponent(e);
    const fixed = e >= 0 ? digits.slice(0, e + 1) + "." + digits.slice(e + 1) : "0." + "0".repeat(-e - 1) + digits;
    return sign + strip(fixed);
  }

  // Python's format(x, ".{f}e") for x > 0: f decimals, a two-digit exponent.
  function fmtE(x, f) {
    const [digits, e] = pythonDigits(x, f + 1);
    return digits[0] + (f > 0 ? "." + digits.slice(1) : "") + "e" + exponent(e);
  }

  // Python's format(x, ".{f}f") for x >= 0 and f >= 1.  Below 10^-f no tie
  // is possible (a binary fraction that ends in 5 at the (f+1)th decimal is
  // at least 2^-(f+1) > 10^-f), so toFixed is right there.
  function fmtF(x, f) {
    const e = x > 0 ? parseInt(x.toExponential(99).split("e")[1], 10) : -Infinity; // exact, unlike log10
    const p = e + 1 + f; // significant digits to the f-th decimal
    if (p < 1) return x.toFixed(f);
    const [digits, e2] = pythonDigits(x, p);
    const whole = e2 >= 0 ? digits.slice(0, e2 + 1) : "0";
    const decimals = e2 >= 0 ? digits.slice(e2 + 1) : "0".repeat(-e2 - 1) + digits;
    return whole + (f > 0 ? "." + decimals.padEnd(f, "0").slice(0, f) : "");
  }

  // Python's round(): halves go to the even integer (the package rounds n so).
  function roundHalfEven(x) {
    const r = Math.round(x);
    return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
  }

  // Principal branch of Lambert W for x > 1 (Halley's iteration, which
  // converges cubically from log x - log log x; a few steps reach rounding).
  function lambertW(x) {
    let w = x < 3 ? 0.5 * Math.log1p(x) + 0.3 : Math.log(x) - Math.log(Math.log(x));
    for (let k = 0; k < 30; k++) {
      const ew = Math.exp(w);
      const f = w * ew - x;
      const step = f / (ew * (w + 1) - ((w + 2) * f) / (2 * w + 2));
      w -= step;
      if (Math.abs(step) <= 1e-16 * Math.abs(w)) break;
    }
    return w;
  }

  // attnscale.gaussian_alpha_star: sqrt(W(sqrt(e)/2 n) - 1/2), in closed form.
  function gaussianAlphaStar(n) {
    return Math.sqrt(lambertW(0.5 * Math.exp(0.5) * n) - 0.5);
  }

  // Cubic Lagrange interpolation through the four nodes around x (nodes need
  // not be uniform: the table's are rounded to integers).
  function cubicAt(xs, ys, x) {
    let i = 1;
    while (i < xs.length - 3 && xs[i + 1] < x) i++;
    const idx = [i - 1, i, i + 1, i + 2];
    let sum = 0;
    for (const a of idx) {
      let w = 1;
      for (const b of idx) if (b !== a) w *= (x - xs[b]) / (xs[a] - xs[b]);
      sum += w * ys[a];
    }
    return sum;
  }

  // attnscale.best_causal_scale(round(n)) for Gaussian scores, from the table:
  // exact up to its last length, then cubic in log n (log of the scale, the
  // share itself).  The key count whose optimum the scale is solves the
  // stationarity condition (1 + 2 alpha^2) e^(alpha^2) = n, so it is exact.
  function causalGaussian(n, table) {
    const m = roundHalfEven(n);
    const exact = table.causalExact;
    let alpha, share;
    if (m - 2 < exact.length) [alpha, share] = exact[m - 2];
    else {
      const x = Math.log(m);
      const ln = table.causalLogN;
      alpha = Math.exp(cubicAt(ln, table.causalLog.map((r) => Math.log(r[0])), x));
      share = cubicAt(ln, table.causalLog.map((r) => r[1]), x);
    }
    // kept within 2 .. n as the package keeps it (at n = 2 rounding could put it a hair below)
    const nRef = Math.min(Math.max((1 + 2 * alpha * alpha) * Math.exp(alpha * alpha), 2), m);
    return [alpha, nRef, share];
  }

  // The four cubic B-splines that are nonzero at x, and the first one's index
  // (Cox-de Boor recursion on the knot vector t, each end knot repeated).
  function basis(t, x) {
    let i = 3;
    while (i < t.length - 5 && t[i + 1] <= x) i++;
    const b = [1, 0, 0, 0];
    for (let k = 1; k <= 3; k++) {
      for (let r = k; r >= 0; r--) {
        const j = i - k + r; // this term is B_{j,k}
        const left = r > 0 ? ((x - t[j]) / (t[j + k] - t[j])) * b[r - 1] : 0;
        const right = r < k ? ((t[j + k + 1] - x) / (t[j + k + 1] - t[j + 1])) * b[r] : 0;
        b[r] = left + right;
      }
    }
    return [i - 3, b];
  }

  // A cubic spline (knots t, coefficients c, as scipy's make_interp_spline
  // stores them) at x, and a bicubic one (scipy's RectBivariateSpline: knots
  // tx and ty, coefficients row-major over x then y) at (x, y).
  function spline1(t, c, x) {
    const [i, b] = basis(t, x);
    let sum = 0;
    for (let a = 0; a < 4; a++) sum += c[i + a] * b[a];
    return sum;
  }
  function spline2({ tx, ty, c }, x, y) {
    const [i, bx] = basis(tx, x);
    const [j, by] = basis(ty, y);
    const columns = ty.length - 4;
    let sum = 0;
    for (let a = 0; a < 4; a++) {
      for (let b = 0; b < 4; b++) sum += c[(i + a) * columns + j + b] * bx[a] * by[b];
    }
    return sum;
  }

  // attnscale.cosine_alpha_star(n, d) / sqrt(d), from the build's bicubic
  // spline in (log n, 1/sqrt(d - 1)) of its log ratio to the Gaussian scale.
  function cosineUnitStar(n, d, table) {
    return Math.exp(spline2(table.cosine, Math.log(n), 1 / Math.sqrt(d - 1))) * gaussianAlphaStar(n);
  }

  // attnscale.gradient_limit(n) for Gaussian scores (the expected gradient as
  // alpha grows without bound), from a cubic spline of its log in log log n.
  function gradientLimit(n, table) {
    const g = table.gradient;
    return Math.exp(spline1(g.limitT, g.limitC, Math.log(Math.log(n))));
  }

  // attnscale.expected_gradient(alpha, n): the exact E[alpha (1 - sum p^2)]
  // for n Gaussian scores, 2 <= n <= table.gradient.nMax, alpha within
  // table.gradient.span times sqrt(2 log n); a bicubic spline of its log
  // ratio to the limit, in log log n and log(alpha / sqrt(2 log n)).
  function expectedGradient(alpha, n, table) {
    const x = Math.log(Math.log(n));
    const ratio = spline2(table.gradient, x, Math.log(alpha / Math.sqrt(2 * Math.log(n))));
    return Math.exp(ratio) * gradientLimit(n, table);
  }

  // logit(E[H] / log n) for n Gaussian scores, 2 <= n <= nMax and
  // 0 < alpha <= cap: attnscale.expected_entropy(alpha, n) from the build's
  // two bicubic splines (entropy_spline in book/_ext/calculator_table.py).
  // Below the table's smallest scale, the first term of the expansion,
  // log n - E[H] = alpha^2 (n - 1) / (2n), whose relative error there is
  // under 1e-6.  The logit keeps the digits of both E[H] and log n - E[H].
  function entropyLogit(alpha, n, table) {
    const e = table.entropy;
    const freezing = Math.sqrt(2 * Math.log(n));
    const x = Math.log(Math.log(n));
    if (alpha < e.lowest * freezing) {
      const gap = (alpha * alpha * (n - 1)) / (2 * n);
      return Math.log((Math.log(n) - gap) / gap);
    }
    if (alpha <= 2 * freezing) return spline2(e.low, x, Math.log(alpha / freezing));
    return spline2(e.high, x, Math.log(alpha));
  }

  function expectedEntropy(alpha, n, table) {
    return Math.log(n) / (1 + Math.exp(-entropyLogit(alpha, n, table)));
  }

  // The scale with E[H](alpha, n) = target for Gaussian scores, as
  // attnscale.recipes._solve_entropy, for 0 < target < log n; null when no
  // scale up to the cap brings the entropy that low.  The entropy falls with
  // alpha, so bisection on log alpha, in the logit (no digits lost near
  // either end); below the table the expansion is solved in closed form.
  function solveEntropy(target, n, table) {
    const e = table.entropy;
    const want = Math.log(target / (Math.log(n) - target));
    const lowest = e.lowest * Math.sqrt(2 * Math.log(n));
    if (want >= entropyLogit(lowest, n, table)) {
      return Math.sqrt((2 * (Math.log(n) - target) * n) / (n - 1));
    }
    if (want < entropyLogit(e.cap, n, table)) return null;
    let [lo, hi] = [Math.log(lowest), Math.log(e.cap)];
    for (let k = 0; k < 64; k++) {
      const mid = 0.5 * (lo + hi);
      if (entropyLogit(Math.exp(mid), n, table) > want) lo = mid;
      else hi = mid;
    }
    return Math.exp(0.5 * (lo + hi));
  }

  // mayCompute: the package may still give a note instead of a number, so
  // the page does not promise one
  function cliNote(name, s, mayCompute, reason) {
    // every digit the reader typed (String gives the shortest exact form)
    let args = `--d ${s.d} --n ${s.n}`;
    if (s.scores === "cosine") args += " --cosine";
    if (s.causal) args += " --causal";
    if (s.L !== null) args += ` --train-length ${s.L}`;
    if (s.headScale !== null) args += ` --head-scale ${s.headScale}`;
    if (s.headEntropy !== null) args += ` --head-entropy ${s.headEntropy}`;
    const why = reason ?? (mayCompute ? "the package may compute it" : "needs the package's solver");
    return `${name}: ${why}; see the CLI: python -m attnscale scale ${args}`;
  }

  // --- the rules, one small function each, as in attnscale.recipes -------
  // Each returns {unit} (a scale on the unit-variance score) or {cli: true}
  // or no unit, and its notes.

  function gradient(s, table) {
    const notes = [];
    if (s.scores !== "dot") {
      // the causal cosine row would need a table in n and d of a slow
      // maximization; the command line computes it
      if (s.causal) return { cli: true, notes };
      const unit = cosineUnitStar(s.n, s.d, table);
      if (unit >= 30) {
        notes.push(
          `gradient (cosine): at d = ${fmtG(s.d)} the mean-field optimum is ${fmtG(unit, 3)} times the ` +
            "standard scale; at fixed d it grows like n^(2/(d-1)) (ch. cosine-scores), so in so few " +
            "dimensions it is far above any scale used in practice; check it on the model before using it",
        );
      }
      return { unit, notes };
    }
    let alpha;
    if (s.causal) {
      const [a, nRef, share] = causalGaussian(s.n, table);
      alpha = a;
      notes.push(
        `causal: the best fixed scale is alpha*(n = ${fmtG(nRef, 4)}), the optimum for that many keys; ` +
          `it keeps ${fmtF(share * 100, 1)}% of each position's best mean-field gradient on average ` +
          `over positions 2 .. ${fmtG(roundHalfEven(s.n))}`,
      );
    } else {
      alpha = gaussianAlphaStar(s.n);
    }
    notes.push(
      "gradient: the scale maximizes the source's mean-field objective; the book finds the exact expected gradient " +
        "rising toward a limit with no maximum on the range it computes (a numerical finding, proved only for n = 2)",
    );
    return { unit: alpha, notes };
  }

  // YaRN's mscale(n/L)^2: 0.1 ln s + 1 on the cos/sin tables, so squared on the logits; 1 up to L
  const yarnSquare = (s) => (s.n / s.L > 1 ? (0.1 * Math.log(s.n / s.L) + 1) ** 2 : 1);

  function sqrtRule(s) {
    const gaussianOnly = "the sqrt rule is a Gaussian mean-field rule; for cosines only the exact match is given";
    if (s.scores !== "dot") return { notes: [gaussianOnly] };
    const meanField = s.a * s.a + 2 * Math.log(s.n / s.L);
    // alpha_L solved from a measured entropy carries the table's error, a
    // relative eps (ALPHA_ERROR); alpha_L^2 then carries 2 eps alpha_L^2.
    // That decides the row where the sign of alpha_L^2 + 2 ln(n/L) is in
    // doubt, and the freezing note near alpha_L^2 = 2 ln L; and the row's
    // relative error is eps alpha_L^2 / (alpha_L^2 + 2 ln(n/L)), kept below 7e-4
    if (s.headEntropy !== null) {
      const [a2, eps] = [s.a * s.a, ALPHA_ERROR];
      const signInDoubt = Math.abs(meanField) < 4 * eps * a2;
      const magnified = meanField > 0 && (eps * a2) / meanField > 7e-4;
      const nearFreezing = meanField > 0 && Math.abs(a2 - 2 * Math.log(s.L)) < 6 * eps * a2;
      if (signInDoubt || magnified || nearFreezing) return { cli: true, notes: [], mayCompute: true, why: TOO_CLOSE };
    }
    const none =
      "sqrt rule does not apply: the head's mean-field entropy at L exceeds log n, so no scale at n matches it";
    if (!(meanField > 0)) return { notes: [none] };
    const frozen =
      "sqrt rule: alpha_L is at or past freezing (sqrt(2 ln L)); its mean-field entropy no longer describes the head";
    return { unit: Math.sqrt(meanField), notes: s.a * s.a >= 2 * Math.log(s.L) ? [frozen] : [] };
  }

  // attnscale.recipes._exact_match: the package's two range checks, then,
  // for Gaussian scores, its solver on the build's entropy table (the scale
  // within 1e-3 of the package's; the tests check it).  For cosines the
  // page has no entropy table: past the range checks it sends the reader to
  // the command line.
  function exactMatch(s, table) {
    const name = `exact entropy match (${s.scores === "dot" ? "gaussian" : "cosine"})`;
    if (Math.max(s.n, s.L) > EXACT_MAX_KEYS) {
      return { notes: [`${name}: not computed, the exact expectation covers n and L up to ${fmtG(EXACT_MAX_KEYS)}`] };
    }
    // attnscale.recipes._law: the factor from the unit score to the law's scale, and the law's cap
    const [toLaw, cap] = s.scores === "dot" ? [1, 1e3] : [Math.sqrt(s.d), 1e4];
    if (s.a * toLaw > cap) {
      return {
        notes: [
          `${name}: not computed, alpha_L = ${fmtG(s.a, 4)} is beyond the exact expectation's range ` +
            `(up to ${fmtG(cap / toLaw, 4)} on the unit score for ${s.scores === "dot" ? "gaussian" : "cosine"} scores)`,
        ],
      };
    }
    if (s.scores !== "dot") return { cli: true, notes: [], mayCompute: true };
    // a measured entropy is the target itself (the package solves for
    // alpha_L and recomputes it, to 1e-12)
    const target = s.headEntropy ?? expectedEntropy(s.a, s.L, table);
    // computed from alpha_L, the target carries the table's error: at most
    // about 6e-4 on the logit at L, which is the logit at n's error times
    // magnify = (log L - target) log n / (log L |log n - target|).  Where
    // that is large (L > n, the head's entropy at L just below log n) the
    // error decides whether the row applies, or is magnified in the scale
    // (magnify > 1 needs L > n: extrapolation is never sent away.)  The
    // scale's error is about (magnify + 1) 6e-4 / |d logit / d log alpha|,
    // with the slope 2 near a uniform row: below 1e-3 up to magnify 1.5
    const [logN, logL] = [Math.log(s.n), Math.log(s.L)];
    const magnify = ((logL - target) * logN) / (logL * Math.abs(logN - target));
    if (s.headEntropy === null && magnify > 1.5) {
      return { cli: true, notes: [], mayCompute: true, why: TOO_CLOSE };
    }
    if (target >= Math.log(s.n)) {
      return {
        notes: [
          `exact entropy match does not apply: the head's entropy at L (${fmtG(target, 3)} nats) ` +
            `exceeds log n = ${fmtG(Math.log(s.n), 3)}, the entropy of a uniform row over n keys`,
        ],
      };
    }
    const alpha = solveEntropy(target, s.n, table);
    if (alpha === null) {
      return {
        notes: [
          `${name}: not computed, no scale up to ${fmtG(cap, 4)} brings the entropy down to ` +
            `${fmtG(target, 4)} nats (a head this focused is outside the exact expectation's range)`,
        ],
      };
    }
    return scaled(alpha);
  }

  // alpha_L from a measured entropy: the table's relative error bound (3.3e-4 measured, book/_ext/calculator_table.py)
  const ALPHA_ERROR = 4e-4;
  const TOO_CLOSE = "too close to where the row changes for the page's table to hold 1e-3; the package may compute it";

  // One row: its name and source (text, or a function of the setting), when
  // it belongs to the setting, and the rule (as attnscale.recipes._Rule).
  const rule = (name, source, applies, run) => ({ name, source, applies, run });
  const text = (v, s) => (typeof v === "function" ? v(s) : v);
  const always = () => true;
  const withL = (s) => s.L !== null;
  const scaled = (unit, ...notes) => ({ unit, notes }); // a scale and its notes
  const RULES = [
    rule("standard 1/sqrt(d)", "Vaswani et al. 2017", always, () => scaled(1)),
    rule(
      (s) =>
        s.scores === "dot"
          ? `gradient${s.causal ? ", causal" : ""} (Gaussian mean field)`
          : "gradient (cosine mean field)" + (s.causal ? ", causal" : ""),
      (s) => (s.causal && s.scores === "dot" ? "book ch. decoders" : "Su 2023 (9812)"),
      always,
      gradient,
    ),
    rule("entropy-invariant log_512(n)", "Su 2021 (8823), base 512", (s) => s.L === null, (s) =>
      scaled(Math.log(s.n) / Math.log(512), "give train_length (--train-length) to add the length rules")),
    rule((s) => `entropy-invariant a_L*log_${fmtG(s.L)}(n)`, "Su 2021 (8823)", withL, (s) =>
      scaled((s.a * Math.log(s.n)) / Math.log(s.L))),
    rule("Qwen logn (queries, n > L only)", "Bai et al. 2023", withL, (s) =>
      scaled(s.a * Math.max(1, Math.log(s.n) / Math.log(s.L)))),
    rule("YaRN dynamic, mscale(n/L)^2", "Peng et al. 2023", withL, (s) =>
      scaled(
        s.a * yarnSquare(s),
        "YaRN dynamic row: the YaRN repository's dynamic rotary embedding with finetuned=False " +
          "(factor 1 up to L, then mscale(n/L)^2); finetuned=True starts at mscale(s)^2 for its " +
          "fine-tuned window sL, as static YaRN does",
        "static YaRN and LongRoPE apply one constant, set by the configured window, at every length; " +
          "the rows above assume the window is n",
      )),
    rule("LongRoPE, window n: 1+ln(n/L)/ln L", "Ding et al. 2024", withL, (s) =>
      scaled(s.a * (s.n > s.L ? 1 + Math.log(s.n / s.L) / Math.log(s.L) : 1))),
    // 1 - x^(-2/d) = -expm1(-2 ln x / d): no cancellation for large d
    rule("InfoScale", "Li et al. 2025", withL, (s) =>
      scaled(s.a * Math.sqrt(Math.expm1((-2 * Math.log(s.n)) / s.d) / Math.expm1((-2 * Math.log(s.L)) / s.d)))),
    rule("Llama 4 (NoPE layers), f(n)", "Meta 2025", withL, (s) =>
      scaled(
        s.a * (1 + 0.1 * Math.log1p(Math.floor(s.n / 8192))),
        "Llama 4 row: alpha_L times f(n) = 1 + 0.1 ln(1 + floor(n/8192)), its multiplier on the " +
          "queries of its NoPE layers at n keys; it ignores L and is never below 1",
      )),
    rule("sqrt rule sqrt(a_L^2 + 2 ln(n/L))", "ch. entropy-invariance", withL, sqrtRule),
    rule("QK-norm initial g = log2(L^2 - L)", "Henry et al. 2020", (s) => withL(s) && s.scores === "cosine", (s) =>
      scaled((Math.log2(s.L) + Math.log2(s.L - 1)) / Math.sqrt(s.d))),
    rule((s) => `exact entropy match (${s.scores === "dot" ? "gaussian" : "cosine"})`, "ch. recipes", withL, exactMatch),
  ];

  // Checks one field; returns the number or throws the inline message (lo = 0: open, as the package's "> 0").
  function number(value, label, lo, hi, optional) {
    const typed = String(value ?? "").trim();
    if (typed === "" && optional) return null;
    const x = Number(typed);
    if (typed === "" || !Number.isFinite(x)) throw new Error(`${label}: enter a number`);
    if (lo === 0 ? !(x > 0 && x <= hi) : x < lo || x > hi) {
      throw new Error(`${label}: must be ${lo === 0 ? "above 0" : `at least ${fmtG(lo)}`} and at most ${fmtG(hi)}`);
    }
    return x;
  }

  // alpha_L of a measured entropy at L (attnscale.head_scale_from_entropy),
  // or the inline message the package's ValueError stands for.
  function headFromEntropy(s, table) {
    const label = "measured entropy H_L";
    if (s.L === null) throw new Error("a measured H_L needs the training length L");
    if (s.L > EXACT_MAX_KEYS) {
      throw new Error(`${label} needs L at most ${fmtG(EXACT_MAX_KEYS)} (the exact expectation's range); give alpha_L`);
    }
    if (!(s.headEntropy < Math.log(s.L))) {
      throw new Error(`${label}: must be below log L = ${fmtG(Math.log(s.L), 4)} nats (a uniform row over L keys)`);
    }
    if (s.scores !== "dot") {
      throw new Error(
        `${label}: for cosine scores the page has no table of the exact entropy; give alpha_L, or see the CLI: ` +
          `python -m attnscale scale --d ${s.d} --n ${s.n} --cosine${s.causal ? " --causal" : ""} ` +
          `--train-length ${s.L} --head-entropy ${s.headEntropy}`,
      );
    }
    const alpha = solveEntropy(s.headEntropy, s.L, table);
    if (alpha === null) {
      throw new Error(
        `${label} = ${fmtG(s.headEntropy)} nats: no scale up to ${fmtG(table.entropy.cap)} brings the entropy ` +
          "that low (a head this focused is outside the exact expectation's range); give alpha_L",
      );
    }
    return alpha;
  }

  // The whole table for one setting: {entries, notes} or {error, field}
  // (field: the form's name of the input the message is about).
  function recommend(input, table) {
    let s, field;
    // each check names its field first, so that a message can point at it
    const read = (name, ...args) => ((field = name), number(...args));
    try {
      s = {
        d: read("d", input.d, "head dimension d", 2, MAX_D),
        n: read("n", input.n, "number of keys n", 2, MAX_KEYS),
        L: read("train_length", input.trainLength, "training length L", 2, MAX_KEYS, true),
        headScale: read("head_scale", input.headScale, "measured scale alpha_L", 0, MAX_ALPHA, true),
        headEntropy: read("head_entropy", input.headEntropy, "measured entropy H_L", 0, Math.log(MAX_KEYS), true),
        scores: input.scores === "cosine" ? "cosine" : "dot",
        causal: Boolean(input.causal),
      };
      if (s.headScale !== null && s.headEntropy !== null) {
        throw new Error("give the measured entropy H_L or the measured scale alpha_L, not both");
      }
      field = "head_scale";
      if (s.headScale !== null && s.L === null) throw new Error("a measured alpha_L needs the training length L");
      field = "head_entropy";
      if (s.headEntropy !== null) s.a = headFromEntropy(s, table);
    } catch (error) {
      return { error: error.message, field };
    }
    s.a ??= s.headScale ?? 1;
    const notes = [];
    const addNote = (note) => notes.includes(note) || notes.push(note);
    if (s.headScale !== null) addNote(`head measured: alpha_L = ${fmtG(s.a, 4)} at L = ${fmtG(s.L)}`);
    else if (s.headEntropy !== null) {
      addNote(
        `head measured: entropy ${fmtG(s.headEntropy, 4)} nats at L = ${fmtG(s.L)}, ` +
          `i.e. alpha_L = ${fmtG(s.a, 4)} for gaussian scores (exact expectation)`,
      );
    } else if (s.L !== null) {
      addNote(
        "no measured head: assumes alpha_L = 1 (unit-variance scores at the standard " +
          "scale); give head_entropy (--head-entropy) or head_scale (--head-scale)",
      );
    }
    if (s.L !== null && s.n > s.L) {
      addNote(
        "the length rules say what keeps a head's entropy, not its loss: in the book's language model " +
          "(ch. language-model) no rule applied only at test carried a model far past L; keep the trained " +
          "scale, or train with the rule you will use, and measure",
      );
    }
    const root = Math.sqrt(s.d);
    const entries = [];
    for (const rule of RULES) {
      if (!rule.applies(s)) continue;
      const name = text(rule.name, s);
      const out = rule.run(s, table);
      const entry = { criterion: name, source: text(rule.source, s), unit: null, scale: null, cli: Boolean(out.cli) };
      if (out.cli) {
        entries.push(entry);
        out.notes.push(cliNote(name, s, Boolean(out.mayCompute), out.why));
      } else if (out.unit !== undefined) {
        const raw = s.scores === "dot" ? out.unit / root : out.unit * root;
        // never a degenerate scale, as the package's _run
        if (Number.isFinite(out.unit) && out.unit > 0 && Number.isFinite(raw) && raw > 0) {
          entries.push(Object.assign(entry, { unit: out.unit, scale: raw }));
        } else {
          out.notes.push(`${name}: gives no usable scale here; left out`);
        }
      }
      out.notes.forEach(addNote);
    }
    return { entries, notes, setting: s };
  }

  // --- the form ----------------------------------------------------------

  // An element with text, or with child elements, and attributes.
  function el(tag, content, attrs = {}) {
    const node = document.createElement(tag);
    if (Array.isArray(content)) node.append(...content);
    else if (content !== undefined) node.textContent = content;
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }

  // The figure: the gradient scale alpha*(n), as a multiple of the standard scale, for Gaussian scores
  // and for cosines at the reader's d, n from 2 to 1e15 on log axes, the reader's n marked.  Plain SVG
  // written as text: no plotting library to load.
  function plot(s, table) {
    const [W, H, left, right, bottom, lg] = [360, 200, 44, 16, 34, Math.log10]; // right: room for "1e15"
    const ns = Array.from({ length: 121 }, (_, k) => 2 * 5e14 ** (k / 120));
    const curves = [ns.map(gaussianAlphaStar), ns.map((n) => cosineUnitStar(n, s.d, table))];
    const logs = curves.flat().map(lg);
    const y0 = Math.floor(Math.min(...logs));
    const y1 = Math.max(Math.ceil(Math.max(...logs)), y0 + 1);
    const X = (n) => (left + ((lg(n) - lg(2)) / (15 - lg(2))) * (W - left - right)).toFixed(1);
    const Y = (v) => (H - bottom - ((lg(v) - y0) / (y1 - y0)) * (H - bottom - 8)).toFixed(1);
    const tick = (e) => (Math.abs(e) < 4 ? String(10 ** e) : `1e${e}`);
    const svgText = (x, y, t, anchor = "middle") => `<text x="${x}" y="${y}" text-anchor="${anchor}">${t}</text>`;
    let svg = "";
    for (let e = y0; e <= y1; e += Math.ceil((y1 - y0) / 5)) {
      svg += `<line class="grid" x1="${left}" x2="${W - right}" y1="${Y(10 ** e)}" y2="${Y(10 ** e)}"/>`;
      svg += svgText(left - 4, +Y(10 ** e) + 4, tick(e), "end");
    }
    for (let e = 3; e <= 15; e += 3) svg += svgText(X(10 ** e), H - bottom + 16, `1e${e}`);
    const path = (ys) => "M" + ns.map((n, i) => `${X(n)},${Y(ys[i])}`).join("L");
    curves.forEach((ys, k) => (svg += `<path class="curve${k}" d="${path(ys)}"/>`));
    const here = [gaussianAlphaStar(s.n), cosineUnitStar(s.n, s.d, table)];
    svg += `<line class="mark" x1="${X(s.n)}" x2="${X(s.n)}" y1="8" y2="${H - bottom}"/>`;
    here.forEach((v, k) => (svg += `<circle class="curve${k}" cx="${X(s.n)}" cy="${Y(v)}" r="3.5"/>`));
    svg += svgText((left + W) / 2, H - 4, "number of keys n");
    const caption =
      `The gradient scale alpha*(n) (one length, not causal) in multiples of the standard scale: Gaussian ` +
      `scores (solid) and cosines at d = ${fmtG(s.d)} (dashed).  At n = ${fmtG(s.n)} (dotted line) they are ` +
      `${fmtG(here[0], 4)} and ${fmtG(here[1], 4)}.`;
    const figure = el("figure", [el("figcaption", caption, { id: "calc-figure-caption" })], { class: "calc-figure" });
    const labelled = 'role="img" aria-labelledby="calc-figure-caption"';
    figure.insertAdjacentHTML("afterbegin", `<svg viewBox="0 0 ${W} ${H}" ${labelled}>${svg}</svg>`);
    return figure;
  }

  // Figure (b): the exact expected gradient against the scale at the
  // reader's n (Gaussian scores), log scale axis, with the source's alpha*,
  // the typical row's sqrt(2 log n) and the limit marked.  Same plain SVG.
  function plotGradient(s, table) {
    const g = table.gradient;
    const n = roundHalfEven(s.n);
    const caption = el("figcaption", "", { id: "calc-gradient-caption" });
    const figure = el("figure", [caption], { class: "calc-figure calc-gradient" });
    if (n > g.nMax) {
      caption.textContent =
        `The exact expected gradient is tabulated for n up to ${fmtG(g.nMax)} keys, as attnscale ` +
        `computes it; n = ${fmtG(n)} is beyond that, so this figure is not drawn.`;
      return figure;
    }
    const [W, H, left, right, bottom, lg] = [360, 200, 50, 16, 34, Math.log10]; // left: room for the y label
    const typical = Math.sqrt(2 * Math.log(n));
    const [a0, a1] = g.span.map((f) => f * typical);
    const alphas = Array.from({ length: 121 }, (_, k) => a0 * (a1 / a0) ** (k / 120));
    const values = alphas.map((a) => expectedGradient(a, n, table));
    const limit = gradientLimit(n, table);
    const X = (a) => (left + ((lg(a) - lg(a0)) / (lg(a1) - lg(a0))) * (W - left - right)).toFixed(1);
    const Y = (v) => (H - bottom - (v / (1.1 * limit)) * (H - bottom - 8)).toFixed(1);
    const svgText = (x, y, t, anchor = "middle") => `<text x="${x}" y="${y}" text-anchor="${anchor}">${t}</text>`;
    let svg = "";
    // grid lines at round values: a step of 1, 2 or 5 times a power of ten, at most five lines
    const power = 10 ** Math.floor(Math.log10(limit / 4));
    const step = [1, 2, 5, 10].map((f) => f * power).find((h) => limit / h <= 4);
    for (let v = 0; v <= 1.1 * limit; v += step) {
      svg += `<line class="grid" x1="${left}" x2="${W - right}" y1="${Y(v)}" y2="${Y(v)}"/>`;
      svg += svgText(left - 4, +Y(v) + 4, fmtG(+v.toPrecision(12)), "end");
    }
    for (let e = Math.ceil(lg(a0)); e <= lg(a1); e++) svg += svgText(X(10 ** e), H - bottom + 16, String(10 ** e));
    svg += `<line class="curve1 limit" x1="${left}" x2="${W - right}" y1="${Y(limit)}" y2="${Y(limit)}"/>`;
    svg += `<path class="curve0" d="M${alphas.map((a, i) => `${X(a)},${Y(values[i])}`).join("L")}"/>`;
    const star = gaussianAlphaStar(n);
    const marks = [
      [star, "α*"],
      [typical, "√(2 ln n)"],
    ];
    for (const [a, label] of marks) {
      svg += `<line class="mark" x1="${X(a)}" x2="${X(a)}" y1="8" y2="${H - bottom}"/>`;
      svg += `<circle class="curve0" data-label="${label}" cx="${X(a)}" cy="${Y(expectedGradient(a, n, table))}" r="3.5"/>`;
      // labels low, where the rising curve is not (it is near 0 only far left of both marks)
      svg += svgText(+X(a) + 3, H - bottom - 6 - (a === typical ? 0 : 14), label, "start");
    }
    svg += svgText((left + W) / 2, H - 4, "scale α (multiples of the standard scale)");
    svg += `<text x="10" y="${(H - bottom) / 2}" text-anchor="middle" transform="rotate(-90 10 ${(H - bottom) / 2})">E[α(1 − Σp²)]</text>`;
    const share = (a) => fmtF((100 * expectedGradient(a, n, table)) / limit, 1);
    caption.textContent =
      `The exact expected gradient E[α(1 − Σp²)] of softmax over n = ${fmtG(n)} Gaussian scores against ` +
      `the scale α (solid), and its limit ${fmtG(limit, 4)} as α grows (dashed): it rises toward the limit ` +
      `and has no maximum on this range.  The source's α* = ${fmtG(star, 4)} reaches ${share(star)}% of ` +
      `the limit; √(2 ln n) = ${fmtG(typical, 4)}, the freezing scale, near which a typical row's gradient ` +
      `(geometric-mean criterion) is largest, reaches ${share(typical)}%.` +
      (s.scores === "cosine"
        ? "  Cosine scores: the page has no exact curve for them; attnscale.expected_gradient(alpha, n, " +
          `"cosine", d) computes it.`
        : "");
    const labelled = 'role="img" aria-labelledby="calc-gradient-caption"';
    figure.insertAdjacentHTML("afterbegin", `<svg viewBox="0 0 ${W} ${H}" ${labelled}>${svg}</svg>`);
    return figure;
  }

  function render(form, table) {
    const out = form.querySelector(".calc-output");
    const message = form.querySelector(".calc-message");
    const value = (name) => form.elements[name].value;
    const fields = {
      d: value("d"),
      n: value("n"),
      trainLength: value("train_length"),
      headScale: value("head_scale"),
      headEntropy: value("head_entropy"),
    };
    const result = recommend({ ...fields, scores: value("scores"), causal: form.elements.causal.checked }, table);
    // bad input: the last good table stays, dimmed, with the reason above it
    message.textContent = result.error || "";
    out.classList.toggle("calc-stale", Boolean(result.error));
    // the field the message is about, for screen readers (WCAG 3.3.1)
    for (const input of form.querySelectorAll("input")) {
      if (input.name === result.field) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", message.id);
      } else {
        input.removeAttribute("aria-invalid");
        input.removeAttribute("aria-describedby");
      }
    }
    if (result.error) return result.error;
    const rows = result.entries.map((e) =>
      el("tr", [
        el("th", e.criterion, { scope: "row" }),
        ...(e.cli
          ? [el("td", "see the CLI", { colspan: "2" })]
          : [
              el("td", fmtG(e.scale, 4), { class: "calc-number" }),
              el("td", e.unit < 1e3 ? fmtF(e.unit, 3) : fmtE(e.unit, 1), { class: "calc-number" }),
            ]),
        el("td", e.source),
      ]),
    );
    const head = el("tr", ["criterion", "scale", "× standard", "source"].map((h) => el("th", h, { scope: "col" })));
    const unit = value("scores") === "dot" ? "q·k" : "cos(q, k)";
    const caption = el("caption", `scale for softmax(scale × ${unit})`);
    const tbl = el("table", [caption, el("thead", [head]), el("tbody", rows)], { class: "calc-table" });
    const notes = el("ul", result.notes.map((note) => el("li", note)), { class: "calc-notes" });
    const figures = [plot(result.setting, table), plotGradient(result.setting, table)];
    out.replaceChildren(tbl, el("p", "Notes:"), notes, ...figures);
    showScrollHint(form);
    return `${rows.length} rows updated`;
  }

  // On a narrow screen the table scrolls inside its box; nothing else says so
  // (phones hide scroll bars), so a line above it does, only while it is wider.
  function showScrollHint(form) {
    const out = form.querySelector(".calc-output");
    const hint = form.querySelector(".calc-scroll-hint");
    if (hint) hint.hidden = out.scrollWidth <= out.clientWidth + 1; // +1: subpixel widths
  }

  // Screen readers: the table is redrawn on every keystroke, and intermediate
  // input ("1e") is briefly wrong, so the only live region is a short polite
  // status (the row count, or the message) set once typing pauses.  Cleared at
  // once, so that the same words set again are a change and are read again.
  const ANNOUNCE_DELAY_MS = 500;
  function announcer(form) {
    const status = form.querySelector(".calc-announce");
    let timer;
    return (summary) => {
      clearTimeout(timer);
      status.textContent = "";
      timer = setTimeout(() => (status.textContent = summary), ANNOUNCE_DELAY_MS);
    };
  }

  function attach() {
    const form = document.getElementById("attnscale-calculator");
    if (!form) return; // every page loads this file; only the recipes page has the form
    form.hidden = false; // hidden in the page source: without this script it cannot work
    const table = window.ATTNSCALE_CALCULATOR_TABLE;
    if (!table) {
      form.querySelector(".calc-message").textContent = "The calculator's table did not load; use the CLI.";
      return;
    }
    form.addEventListener("submit", (event) => event.preventDefault()); // Enter must not reload
    const announce = announcer(form);
    form.addEventListener("input", () => announce(render(form, table)));
    form.addEventListener("change", () => announce(render(form, table)));
    render(form, table); // on load nothing is announced: the reader has not typed
    window.addEventListener("resize", () => showScrollHint(form)); // a phone turned, a window resized
  }

  window.AttnScaleCalculator = {
    recommend,
    fmtG,
    fmtE,
    fmtF,
    gaussianAlphaStar,
    causalGaussian,
    cosineUnitStar,
    gradientLimit,
    expectedGradient,
    expectedEntropy,
    solveEntropy,
    plot,
    plotGradient,
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", attach);
  else attach();
})();
