/* The scale calculator of the recipes page: attnscale.recommend_scale in the
 * reader's browser, with no kernel and no network.
 *
 * recommend(setting, table) mirrors attnscale/calculator.py.  Its words (the rows of attnscale.practice.calculator.RULES in
 * order, with their names and sources, and every note) are not typed here: the build writes them from the package
 * into the table (table.words, attnscale.practice.calculator.page_words), and fill() formats their numbers as Python does.
 * This file keeps the arithmetic.  Closed-form rules are computed here.  What needs the package's solvers comes from the table
 * book/_ext/calculator_table.py writes at build time: the causal Gaussian gradient row (cubic in log n), the
 * cosine gradient row (a bicubic spline), and the exact expected entropy of Gaussian scores (two bicubic
 * splines), from which the page solves the exact entropy match and a measured entropy's alpha_L.  For cosine
 * scores the exact expectations are computed here, by quadrature (the package's route, cosineExpectation, for
 * n up to 1e9): the exact entropy match, a measured entropy's alpha_L, and figure (b) (its limit printed only
 * from d = 2.45, COSINE_LIMIT_FROM_D, where the quadrature holds it to the caption's digits).  So is the causal cosine
 * gradient (causalCosine), a maximization over positions of the cosine mean-field share: the package's series
 * and Debye expansion of the log moment generating function, its sum and quadrature over positions and its
 * bounded search, ported.  A row whose answer the table's or the quadrature's error would decide (near a
 * boundary) says "see the CLI", with the command.
 * tests/test_calculator_page.py compares every number with the package.  The form is in book/recipes.md (a raw
 * HTML block); plot() and plotGradient() draw its figures.
 */
(function () {
  "use strict";

  const MAX_KEYS = 1e15; // attnscale.practice.calculator.MAX_KEYS
  const MAX_D = 1e6; // attnscale.practice.calculator.MAX_D
  const MAX_ALPHA = 1e6; // attnscale.practice.calculator.MAX_ALPHA
  const EXACT_MAX_KEYS = 1e9; // attnscale.practice.calculator._EXACT_MAX_KEYS

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

  // Python's str.format on the package's templates (attnscale.practice.calculator.NOTES and the rows'
  // names): {name} or {name:spec}, spec one of g, .Ng, .Nf, .Ne, .N%; strings as they are.
  function fill(template, values) {
    return template.replace(/\{(\w+)(?::([^}]*))?\}/g, (_, key, spec) => {
      const v = values[key];
      if (v === undefined) throw new Error(`no value for {${key}} in "${template}"`);
      if (typeof v === "string" || spec === undefined) return String(v);
      const [, p, kind] = /^(?:\.(\d+))?([gef%])$/.exec(spec);
      const digits = p === undefined ? 6 : Number(p);
      if (kind === "g") return fmtG(v, digits);
      if (kind === "e") return fmtE(v, digits);
      if (kind === "f") return fmtF(v, digits);
      return fmtF(v * 100, digits) + "%";
    });
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

  // attnscale.cosine_alpha_star(n, d) / sqrt(d): the package's safeguarded Newton steps, ported
  // (cosineAlphaStar below; within 1e-13 of the package's, the tests measure it)
  function cosineUnitStar(n, d) {
    return cosineAlphaStar(n, d / 2 - 1) / Math.sqrt(d);
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
  // attnscale.practice.recipes._solve_entropy, for 0 < target < log n; null when no
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

  // --- exact expectations for cosine scores, by quadrature ---------------
  //
  // attnscale.theory.exact's route, written again for the page (its module notes,
  // the book's theorem exact-expectations).  For n i.i.d. scores s and the
  // Gumbel kernel's variable y = e^(alpha s - tau), with one score's
  //   S(tau) = E[1 - e^-y], f(tau) = E[y e^-y], chi(tau) = E[y^2 e^-y],
  //   eta(tau) = E[y (log y + gamma) e^-y]   (gamma: Euler's constant)
  // and F = 1 - S, the expectations are one integral over tau each:
  //   E[H] = -n int eta F^(n-1) dtau,  E[alpha (1 - sum p^2)] = alpha n (n-1) int f^2 F^(n-2) dtau.
  // F^(n-1) is exp((n-1) log1p(-S)) with S summed directly (no 1 - F), so n
  // may reach 1e9.  A cosine score is c = cos(theta), theta the angle
  // between two random directions, with density sin^(d-2)(theta) / B on
  // [0, pi]: smooth at both ends for integer d (no d = 2 singularity, as in
  // c); the score used is s = c - 1 = -2 sin^2(theta/2), which keeps the
  // top of the support resolved when n is huge (softmax ignores the shift).
  // Quadrature: Gauss-Legendre panels of 8 nodes in theta.  The inner
  // expectations use the law's own panels where alpha is small, and else
  // panels on the kernel's scale in w = alpha s - tau (the step of e^-y,
  // width ~1/alpha in s) cut by the law's panels, with the mass above the
  // window (where 1 - e^-y = 1) from the law's distribution function.  The
  // outer integral's panels follow its integrand, found from a coarse pass
  // (as attnscale.theory.exact._adaptive_edges), with more panels next to each end
  // of the support below d = 10, where the density is rough (a non-integer
  // power of theta) and the end's structure, of width ~1 in tau, matters.

  // 8-point Gauss-Legendre nodes and weights on [-1, 1]
  const GL_X = [
    -0.9602898564975363, -0.7966664774136267, -0.525532409916329, -0.1834346424956498, 0.1834346424956498,
    0.525532409916329, 0.7966664774136267, 0.9602898564975363,
  ];
  const GL_W = [
    0.1012285362903763, 0.2223810344533745, 0.3137066458778873, 0.362683783378362, 0.362683783378362,
    0.3137066458778873, 0.2223810344533745, 0.1012285362903763,
  ];
  const EULER_GAMMA = 0.5772156649015329;
  // panel edges in w = alpha s - tau: left of -46 every kernel but S's is
  // below e^-46 of its peak (and S's below e^-46 of 1), right of 5 e^-y = 0
  const W_EDGES = [
    -46, -38, -31, -25, -20, -16, -12.5, -9.5, -7, -5, -3.5, -2.4, -1.5, -0.75, 0, 0.6, 1.2, 1.8, 2.5, 3.4, 5,
  ];
  const COSINE_CAP = 1e4; // the exact expectation's largest scale on the cosine (attnscale.theory.exact)
  const [GRADING, RATIO] = [20, 0.5]; // geometric levels of a panel next to a rough end, and their ratio

  // theta of a score s = -2 sin^2(theta/2) in [-2, 0], each half from the end it is near
  function angleOf(s) {
    return s > -1 ? 2 * Math.asin(Math.sqrt(-0.5 * s)) : Math.PI - 2 * Math.asin(Math.sqrt(1 + 0.5 * s));
  }

  // The law of one cosine score in dimension d: panels in theta (over
  // pi/2 +- 14.5/sqrt(d - 2), outside which the density is below 1e-45 of
  // its peak), its log density, and P(theta' < theta) from cumulative sums.
  const lawCache = new Map();
  function cosineLaw(d) {
    if (lawCache.has(d)) return lawCache.get(d);
    const power = d - 2;
    const halfWidth = Math.min(Math.PI / 2, 14.5 / Math.sqrt(Math.max(power, 1e-300)));
    const [lo, hi] = [Math.PI / 2 - halfWidth, Math.PI / 2 + halfWidth];
    const full = halfWidth === Math.PI / 2; // the support reaches both ends
    const rough = d < 10; // below, the ends count as hard (attnscale.theory.exact.cosine_law's rough_ends)
    const graded = rough && d !== Math.round(d); // sin^(d-2) not smooth at the ends
    const panels = full ? 48 : 40;
    const width = (hi - lo) / panels;
    let edges = Array.from({ length: panels + 1 }, (_, k) => lo + k * width);
    if (graded) {
      const inner = Array.from({ length: GRADING }, (_, j) => width * 0.5 ** (GRADING - j));
      edges = [lo, ...inner.map((x) => lo + x), ...edges.slice(1, -1), ...inner.reverse().map((x) => hi - x), hi];
    }
    // log of sin^(d-2) theta; far from the ends through cos(theta - pi/2) = 1 - 2 sin^2(...), whose log
    // keeps its digits when d is large and theta near pi/2
    const logSin = (t) =>
      Math.abs(t - Math.PI / 2) < 1 ? Math.log1p(-2 * Math.sin(0.5 * (t - Math.PI / 2)) ** 2) : Math.log(Math.sin(t));
    const logKernel = (t) => (power === 0 ? 0 : power * logSin(t));
    const integral = (a, b) => {
      const half = 0.5 * (b - a);
      const mid = 0.5 * (a + b);
      let sum = 0;
      for (let j = 0; j < 8; j++) sum += GL_W[j] * Math.exp(logKernel(mid + half * GL_X[j]));
      return sum * half;
    };
    const cum = [0];
    for (let k = 0; k + 1 < edges.length; k++) cum.push(cum[k] + integral(edges[k], edges[k + 1]));
    const total = cum[cum.length - 1];
    const logTotal = Math.log(total);
    // int_0^t sin^(d-2): t^(d-1) times a series in t^2, for t below 1e-3 (next term under 1e-14)
    const c4 = (power * power) / 72 - power / 180;
    const series = (t) => t ** (d - 1) * (1 / (d - 1) - (power * t * t) / (6 * (d + 1)) + (c4 * t ** 4) / (d + 3));
    const logSeries = (x) => (d - 1) * x + Math.log(1 / (d - 1) - (power * Math.exp(2 * x)) / (6 * (d + 1)));
    const SMALL = 1e-3;
    function mass(t) {
      // P(theta' < t)
      if (t <= lo) return 0;
      if (t >= hi) return 1;
      if (full && t < SMALL) return series(t) / total;
      if (full && Math.PI - t < SMALL) return 1 - series(Math.PI - t) / total;
      let [a, b] = [0, edges.length - 1];
      while (b - a > 1) {
        const m = (a + b) >> 1;
        if (edges[m] <= t) a = m;
        else b = m;
      }
      return (cum[a] + integral(edges[a], t)) / total;
    }
    // the score s with P(S > s) = p, 0 < p < 1/2 (bisection; in log theta below 1e-3, for tiny p)
    function topScore(p) {
      let t;
      if (full && p < series(SMALL) / total) {
        let [a, b] = [-745, Math.log(SMALL)];
        const want = Math.log(p) + logTotal;
        for (let k = 0; k < 64; k++) {
          const m = 0.5 * (a + b);
          if (logSeries(m) < want) a = m;
          else b = m;
        }
        t = Math.exp(0.5 * (a + b));
      } else {
        let [a, b] = [lo, Math.PI / 2];
        for (let k = 0; k < 64; k++) {
          const m = 0.5 * (a + b);
          if (mass(m) < p) a = m;
          else b = m;
        }
        t = 0.5 * (a + b);
      }
      return -2 * Math.sin(0.5 * t) ** 2;
    }
    const plain = Array.from({ length: panels + 1 }, (_, k) => lo + k * width);
    const law = { d, power, lo, hi, full, rough, graded, width, edges, plain, logKernel, logTotal, mass, topScore };
    if (lawCache.size > 64) lawCache.clear();
    lawCache.set(d, law);
    return law;
  }

  // The inner expectations S, f, chi, eta at one tau (attnscale.theory.exact._inner), on the rule that
  // quadratureRule prepares for (law, alpha), into out.  Plain loops: this is where the time goes.
  function innerCosine(rule, tau, out) {
    const { law, alpha } = rule;
    let S = 0;
    let nodes = rule.u; // the law's own panels: nodes fixed in theta, only the kernel moves with tau
    let weights = rule.weight;
    let count = nodes ? nodes.length : 0;
    if (!nodes) {
      const top = (tau + W_EDGES[W_EDGES.length - 1]) / alpha;
      const bottom = (tau + W_EDGES[0]) / alpha;
      const a = Math.max(top >= 0 ? 0 : angleOf(Math.max(top, -2)), law.lo);
      const b = Math.min(bottom <= -2 ? Math.PI : angleOf(Math.min(bottom, 0)), law.hi);
      S = law.mass(a); // above the window 1 - e^-y is 1
      if (!(b > a)) count = 0;
      else if (top < -rule.margin && bottom > -2 + rule.margin) {
        // a window inside the support (for a law with rough ends, at least its
        // own width from either end): nodes fixed in w, so the kernels are the
        // same at every tau (attnscale.theory.exact._inner_fixed_kernel), times the
        // density of s there, sin^(d-3)(theta) / B with sin^2 = -s (2 + s)
        const half = 0.5 * (law.d - 3);
        return fixedKernelSums(rule, tau, S, out, (v) => {
          const s = v / alpha;
          const c = 1 + s;
          return Math.exp(half * (c > 0.5 ? Math.log(-s * (2 + s)) : Math.log1p(-c * c)) - law.logTotal);
        });
      } else {
        // the window's edges (increasing theta) merged with the law's, then their nodes
        const cuts = SCRATCH_CUTS;
        let m = 0;
        cuts[m++] = a;
        const edges = law.plain;
        let k = 0;
        while (k < edges.length && edges[k] <= a) k++;
        for (let i = W_EDGES.length - 2; i >= 0; i--) {
          const s = (tau + W_EDGES[i]) / alpha;
          if (!(s < 0 && s > -2)) continue;
          const t = angleOf(s);
          if (t <= a) continue;
          if (t >= b) break;
          while (k < edges.length && edges[k] < t) cuts[m++] = edges[k++];
          cuts[m++] = t;
        }
        while (k < edges.length && edges[k] < b) cuts[m++] = edges[k++];
        cuts[m++] = b;
        nodes = SCRATCH_T;
        weights = SCRATCH_W;
        count = 0;
        for (let i = 0; i + 1 < m; i++) count = panelNodes(law, cuts[i], cuts[i + 1], nodes, weights, count);
        for (let i = 0; i < count; i++) {
          const sh = Math.sin(0.5 * nodes[i]);
          nodes[i] = -2 * alpha * sh * sh; // u = alpha s
        }
      }
    }
    return nodeSums(nodes, weights, count, tau, S, rule.expU, 0.01, out);
  }

  // The inner sums at one tau over quadrature nodes u = alpha s with weights (density x quadrature),
  // S added to S0 (attnscale.theory.exact._inner_general): with y = e^(u - tau), S sums weight (1 - e^-y),
  // f weight y e^-y, chi weight y^2 e^-y and eta weight y e^-y (u - tau + gamma), into out.  expU,
  // if given, holds e^u at the nodes: where e^(u - tau) = e^u e^-tau neither overflows nor
  // underflows, one exponential a node fewer.  1 - e^-y is taken as -expm1(-y) below y = small
  // (Infinity: always), as 1 - e^-y above.
  function nodeSums(nodes, weights, count, tau, S0, expU, small, out) {
    let [S, f, chi, eta] = [S0, 0, 0, 0];
    const scale = expU && Math.abs(tau) < 700 ? Math.exp(-tau) : 0;
    for (let i = 0; i < count; i++) {
      const w = Math.min(nodes[i] - tau, 700); // e^w beyond e^700 only multiplies exp(-e^w) = 0
      const y = scale ? expU[i] * scale : Math.exp(w);
      const e = Math.exp(-y);
      const weight = weights[i];
      S += weight * (y < small ? -Math.expm1(-y) : 1 - e);
      const psi = weight * y * e;
      f += psi;
      chi += psi * y;
      eta += psi * (w + EULER_GAMMA);
    }
    out.S = S;
    out.f = f;
    out.chi = chi;
    out.eta = eta;
    return out;
  }

  // The same sums on the fixed-window rule (attnscale.theory.exact._inner_fixed_kernel): the kernels k at
  // the nodes w of rule are the same at every tau, times densityAt(tau + w) (the density of s there);
  // S added to S0.
  function fixedKernelSums(rule, tau, S0, out, densityAt) {
    const { w, k } = rule;
    let [S, f, chi, eta] = [S0, 0, 0, 0];
    for (let i = 0; i < w.length; i++) {
      const density = densityAt(tau + w[i]);
      S += density * k[4 * i];
      f += density * k[4 * i + 1];
      chi += density * k[4 * i + 2];
      eta += density * k[4 * i + 3];
    }
    out.S = S;
    out.f = f;
    out.chi = chi;
    out.eta = eta;
    return out;
  }
  // room for one tau's nodes (a window's panels, graded ends included)
  const SCRATCH_T = new Float64Array(4096);
  const SCRATCH_W = new Float64Array(4096);
  const SCRATCH_CUTS = new Float64Array(512);

  // The Gauss-Legendre nodes (theta) and weights (density x quadrature) of one panel [a, b] in theta,
  // written from index count on; returns the new count.  A panel next to theta = 0 (s = 0) or pi
  // (s = -2) of a law with graded ends is split geometrically toward the end, the last sliver's mass
  // (a series) put at the end itself.
  function panelNodes(law, a, b, nodes, weights, count) {
    if (!(b > a)) return count;
    if (law.graded && a === 0) {
      for (let j = 0; j < GRADING; j++) {
        count = glPanel(law, b * RATIO ** (j + 1), b * RATIO ** j, nodes, weights, count);
      }
      nodes[count] = 0;
      weights[count++] = law.mass(b * RATIO ** GRADING);
    } else if (law.graded && b === Math.PI) {
      const x = Math.PI - a;
      for (let j = 0; j < GRADING; j++) {
        count = glPanel(law, Math.PI - x * RATIO ** j, Math.PI - x * RATIO ** (j + 1), nodes, weights, count);
      }
      nodes[count] = Math.PI;
      weights[count++] = 1 - law.mass(Math.PI - x * RATIO ** GRADING);
    } else count = glPanel(law, a, b, nodes, weights, count);
    return count;
  }
  function glPanel(law, lo, hi, nodes, weights, count) {
    const half = 0.5 * (hi - lo);
    const mid = 0.5 * (lo + hi);
    for (let j = 0; j < 8; j++) {
      const t = mid + half * GL_X[j];
      nodes[count] = t;
      weights[count++] = half * GL_W[j] * Math.exp(law.logKernel(t) - law.logTotal);
    }
    return count;
  }

  // What innerCosine needs for one (law, alpha): for small alpha, the nodes of the law's own panels
  // (u = alpha s and the weights); else, for a law with smooth ends, the window's nodes in w (each of
  // its panels cut to the law's panel width in s) and the kernels times their quadrature weights.
  function quadratureRule(law, alpha) {
    if (1.1 / alpha > law.width) {
      // the kernel's finest panels wider than the law's
      const [u, weight] = [new Float64Array(4096), new Float64Array(4096)];
      let count = 0;
      for (let k = 0; k + 1 < law.plain.length; k++) {
        count = panelNodes(law, law.plain[k], law.plain[k + 1], u, weight, count);
      }
      for (let i = 0; i < count; i++) u[i] = -2 * alpha * Math.sin(0.5 * u[i]) ** 2;
      const nodes = u.slice(0, count);
      const expU = nodes.every((v) => v > -700) ? nodes.map(Math.exp) : null;
      return { law, alpha, u: nodes, expU, weight: weight.slice(0, count) };
    }
    const [w, k] = [[], []];
    for (let i = 0; i + 1 < W_EDGES.length; i++) {
      const pieces = Math.ceil((W_EDGES[i + 1] - W_EDGES[i]) / (alpha * law.width));
      const step = (W_EDGES[i + 1] - W_EDGES[i]) / pieces;
      for (let p = 0; p < pieces; p++) {
        const half = 0.5 * step;
        const mid = W_EDGES[i] + (p + 0.5) * step;
        for (let j = 0; j < 8; j++) {
          const x = mid + half * GL_X[j];
          const weight = (half * GL_W[j]) / alpha; // ds = dw / alpha
          const y = Math.exp(x);
          const e = Math.exp(-y);
          w.push(x);
          k.push(weight * -Math.expm1(-y), weight * y * e, weight * y * y * e, weight * y * e * (x + EULER_GAMMA));
        }
      }
    }
    // the density of s near a rough end is a power of the distance to it:
    // panels in s resolve it only at least a window's width away
    const margin = law.rough ? (W_EDGES[W_EDGES.length - 1] - W_EDGES[0]) / alpha : 0;
    return { law, alpha, margin, w: Float64Array.from(w), k: Float64Array.from(k) };
  }

  // attnscale.theory.exact._adaptive_edges: outer panels where exp(logv) lives.
  function adaptiveEdges(x, logv, drop = 32, step = 4, perPeak = 2) {
    const top = Math.max(...logv);
    let [first, last] = [-1, -1];
    logv.forEach((v, i) => {
      if (v > top - drop) {
        if (first < 0) first = i;
        last = i;
      }
    });
    const [lo, hi] = [Math.max(first - 1, 0), Math.min(last + 1, x.length - 1)];
    const xs = x.slice(lo, hi + 1);
    const vs = logv.slice(lo, hi + 1).map((v) => Math.max(v, top - drop - 10));
    const peak = xs.filter((_, i) => vs[i] > top - 2);
    const peakWidth = Math.max(peak[peak.length - 1] - peak[0], x[1] - x[0]);
    const measure = [0];
    for (let i = 1; i < xs.length; i++) {
      measure.push(measure[i - 1] + Math.abs(vs[i] - vs[i - 1]) / step + ((xs[i] - xs[i - 1]) * perPeak) / peakWidth);
    }
    const end = measure[measure.length - 1];
    const count = Math.ceil(end);
    const edges = [];
    let i = 0;
    for (let k = 0; k <= count; k++) {
      const m = (end * k) / count;
      while (i < measure.length - 2 && measure[i + 1] < m) i++;
      const span = measure[i + 1] - measure[i];
      edges.push(span > 0 ? xs[i] + ((m - measure[i]) / span) * (xs[i + 1] - xs[i]) : xs[i]);
    }
    return edges;
  }

  const log1pPower = (S, power) => (power === 0 ? 0 : power * Math.log1p(-Math.min(S, 1)));

  // E[H] ("entropy") or E[alpha (1 - sum p^2)] ("gradient") for n cosine
  // scores in dimension d, scale alpha on the cosine (attnscale.theory.exact's
  // expected_entropy and expected_gradient with scores="cosine").
  function cosineExpectation(alpha, n, d, what, fast = false) {
    if (alpha === 0) return what === "entropy" ? Math.log(n) : 0;
    const law = cosineLaw(d);
    // tau's range (attnscale.theory.exact._tau_range)
    const upper = alpha * law.topScore(1e-26 / n) + Math.log(n) + 64;
    const delta = n > 2 ? -Math.expm1(-80 / (n - 2)) : 1;
    const lowS = delta < 0.5 ? law.topScore(2 * delta) : -2 * Math.sin(0.5 * law.hi) ** 2;
    const lower = alpha * lowS - 6 - (n <= 2 ? 6 : 0);
    const rule = quadratureRule(law, alpha);
    const inner = (tau, q) => innerCosine(rule, tau, q);
    const coarse = Array.from({ length: 49 }, (_, k) => lower + ((upper - lower) * k) / 48);
    const logv = coarseLogs(coarse, inner, n, what);
    let edges = fast ? adaptiveEdges(coarse, logv, 32, 8, 1) : adaptiveEdges(coarse, logv);
    if (law.rough) {
      // each end of the support puts structure of width ~1 into tau: the
      // kernel's edges next to it, then geometric steps inward
      const extra = [];
      const span = Math.max(2 * alpha, 2);
      const steps = fast ? 16 : 40; // ratio 1.9 or 1.3 at alpha = 1e4
      for (const [end, inward] of [
        [0, -1],
        [-2 * alpha, 1],
      ]) {
        for (const w of W_EDGES) extra.push(end - w);
        for (let k = 0; k < steps; k++) extra.push(end + inward * span ** (k / (steps - 1)));
      }
      const [a, b] = [edges[0], edges[edges.length - 1]];
      edges = [...new Set([...edges, ...extra.filter((t) => t > a && t < b)])].sort((u, v) => u - v);
    }
    return panelSum(edges, inner, alpha, n, what);
  }

  // The route both laws share (attnscale.theory.exact): the integrand's log on a coarse grid of tau, which
  // places the panels, then 8-point Gauss-Legendre on each panel.  inner(tau, q) fills q's f, S, chi and
  // eta at tau (the law's kernel sums).
  function coarseLogs(coarse, inner, n, what) {
    const q = {};
    return coarse.map((tau) => {
      inner(tau, q);
      const v = Math.log(q.f) + log1pPower(q.S, Math.max(n - 2, 0));
      return what === "gradient" ? v : Math.max(v, Math.log(q.chi) + log1pPower(q.S, n - 1));
    });
  }

  // E[alpha (1 - sum p^2)] (what = "gradient") or E[H] ("entropy") from the panels' edges in tau.
  function panelSum(edges, inner, alpha, n, what) {
    const q = {};
    let sum = 0;
    for (let k = 0; k + 1 < edges.length; k++) {
      const half = 0.5 * (edges[k + 1] - edges[k]);
      const mid = 0.5 * (edges[k] + edges[k + 1]);
      for (let j = 0; j < 8; j++) {
        inner(mid + half * GL_X[j], q);
        sum +=
          half *
          GL_W[j] *
          (what === "gradient"
            ? q.f * q.f * Math.exp(log1pPower(q.S, n - 2))
            : q.eta * Math.exp(log1pPower(q.S, n - 1)));
      }
    }
    return what === "gradient" ? alpha * n * (n - 1) * sum : -n * sum;
  }

  // --- exact expectations for Gaussian scores, by quadrature -------------
  //
  // attnscale.theory.exact's route for its normal law, written again for the page as for cosines above: the
  // law's 29 panels on [-14.5, 14.5] below a scale of 1.1, else the kernel's window in w = alpha s - tau
  // (each of its panels cut to the law's width, 1) times the normal density, and the mass above the
  // window from the normal survival function (0 beyond the law's 14.5, as the package's).  The printed
  // digits then agree with the package's, as its table could not (issue 31).

  // erfc(x), to about 1e-14 relative: 1 - erf(x) below 2 (erf's series of positive terms,
  // 2/sqrt(pi) e^(-x^2) sum (2x^2)^k x / (1 3 ... (2k+1)); erfc(2) = 0.005 keeps its digits), the
  // continued fraction beyond
  function erfc(x) {
    if (x < 0) return 2 - erfc(-x);
    if (x < 2) {
      let [term, sum] = [x, x];
      for (let k = 1; k < 200; k++) {
        term *= (2 * x * x) / (2 * k + 1);
        sum += term;
        if (term < 1e-17 * sum) break;
      }
      return 1 - (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * sum;
    }
    if (x > 27.3) return 0; // below the smallest double
    // erfc(x) = e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), by the modified Lentz method
    const tiny = 1e-300;
    let f = x;
    let [C, D] = [x, 0];
    for (let k = 1; k < 500; k++) {
      const a = k / 2;
      D = x + a * D;
      D = D === 0 ? 1 / tiny : 1 / D;
      C = x + a / C;
      if (C === 0) C = tiny;
      const delta = C * D;
      f *= delta;
      if (Math.abs(delta - 1) < 1e-16) break;
    }
    return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
  }
  // P(S > s) for a standard normal score (scipy's ndtr(-s))
  const normalSurvival = (s) => 0.5 * erfc(s / Math.SQRT2);
  // the score s with P(S > s) = p, 0 < p < 1 (-scipy.special.ndtri(p)): Acklam's rational approximation,
  // then Halley steps on the survival function
  function normalTopScore(p) {
    if (p > 0.5) return -normalTopScore(1 - p); // 1 - p is exact there; the steps below keep their digits
    const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716,
      2.506628277459239];
    const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
    const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734,
      4.374664141464968, 2.938163982698783];
    const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
    const tailQ = (q) =>
      (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    let x; // the lower quantile, P(S < x) = p
    if (p < 0.02425) x = tailQ(Math.sqrt(-2 * Math.log(p)));
    else {
      const q = p - 0.5;
      const r = q * q;
      x = ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    }
    for (let k = 0; k < 3; k++) {
      const e = normalSurvival(-x) - p; // P(S < x) - p
      const u = e * Math.sqrt(2 * Math.PI) * Math.exp(0.5 * x * x);
      x -= u / (1 + 0.5 * x * u);
    }
    return -x;
  }
  const NORMAL_EDGE = 14.5; // the law's range, [-14.5, 14.5] (attnscale.theory.exact._GAUSSIAN)
  const LOG_ROOT_2PI = 0.5 * Math.log(2 * Math.PI);
  // the normal law's own panels: nodes and weights (density x quadrature weight)
  const NORMAL_PANELS = (() => {
    const [z, weight] = [[], []];
    for (let k = 0; k < 29; k++) {
      const [lo, hi] = [-NORMAL_EDGE + k, -NORMAL_EDGE + k + 1];
      const [half, mid] = [0.5 * (hi - lo), 0.5 * (lo + hi)];
      for (let j = 0; j < 8; j++) {
        const x = mid + half * GL_X[j];
        z.push(x);
        weight.push(Math.exp(-0.5 * x * x - LOG_ROOT_2PI) * half * GL_W[j]);
      }
    }
    return { z: Float64Array.from(z), weight: Float64Array.from(weight) };
  })();
  // room for the nodes u = alpha z of the normal law's panels at one scale
  const NORMAL_U = new Float64Array(NORMAL_PANELS.z.length);
  // attnscale.theory.exact._make_window_edges and _fixed_kernels for the normal law (panel width 1): the nodes in
  // w and the four kernels times their weights; null below a scale of 1.1 (the law's panels instead)
  function normalRule(alpha) {
    if (1.1 / alpha > 1) return null;
    const [w, k] = [[], []];
    for (let i = 0; i + 1 < W_EDGES.length; i++) {
      const pieces = Math.ceil((W_EDGES[i + 1] - W_EDGES[i]) / alpha);
      const step = (W_EDGES[i + 1] - W_EDGES[i]) / pieces;
      for (let p = 0; p < pieces; p++) {
        const [a, b] = [W_EDGES[i] + p * step, p + 1 < pieces ? W_EDGES[i] + (p + 1) * step : W_EDGES[i + 1]];
        const [half, mid] = [0.5 * (b - a), 0.5 * (a + b)];
        for (let j = 0; j < 8; j++) {
          const x = mid + half * GL_X[j];
          const weight = (half * GL_W[j]) / alpha; // ds = dw / alpha
          const y = Math.exp(x);
          const psi = y * Math.exp(-y);
          w.push(x);
          k.push(weight * -Math.expm1(-y), weight * psi, weight * psi * y, weight * psi * (x + EULER_GAMMA));
        }
      }
    }
    return { w: Float64Array.from(w), k: Float64Array.from(k) };
  }
  // S, f, chi, eta at one tau (attnscale.theory.exact._inner for the normal law), into out
  function innerNormal(alpha, rule, tau, out) {
    if (rule) {
      const inverse = 1 / alpha;
      fixedKernelSums(rule, tau, 0, out, (v) => {
        const s = v * inverse;
        return Math.exp(-0.5 * s * s - LOG_ROOT_2PI);
      });
      const top = (tau + W_EDGES[W_EDGES.length - 1]) / alpha;
      out.S += top >= NORMAL_EDGE ? 0 : normalSurvival(top);
      return out;
    }
    const { z, weight } = NORMAL_PANELS;
    const u = NORMAL_U;
    for (let i = 0; i < z.length; i++) u[i] = alpha * z[i];
    return nodeSums(u, weight, z.length, tau, 0, null, Infinity, out);
  }
  // E[H] ("entropy") or E[alpha (1 - sum p^2)] ("gradient") for n normal scores at the scale alpha
  // (attnscale.expected_entropy and expected_gradient); fast: coarser outer panels, for a solver's first steps
  function normalExpectation(alpha, n, what, fast = false) {
    if (alpha === 0) return what === "entropy" ? Math.log(n) : 0;
    const clip = (s) => Math.min(Math.max(s, -NORMAL_EDGE), NORMAL_EDGE);
    const upper = alpha * clip(normalTopScore(1e-26 / n)) + Math.log(n) + 64;
    const delta = n > 2 ? -Math.expm1(-80 / (n - 2)) : 1;
    const lowS = delta < 0.5 ? clip(normalTopScore(2 * delta)) : -NORMAL_EDGE;
    const lower = alpha * lowS - 6 - (n <= 2 ? 6 : 0);
    const rule = normalRule(alpha);
    const inner = (tau, q) => innerNormal(alpha, rule, tau, q);
    const step = (upper - lower) / 48; // numpy's linspace: k step + start, the last point the end itself
    const coarse = Array.from({ length: 49 }, (_, k) => (k === 48 ? upper : k * step + lower));
    const logv = coarseLogs(coarse, inner, n, what);
    const edges = fast ? adaptiveEdges(coarse, logv, 32, 8, 1) : adaptiveEdges(coarse, logv);
    return panelSum(edges, inner, alpha, n, what);
  }
  // attnscale.practice.recipes._expected_entropy for Gaussian scores, remembered for the last few hundred calls
  const normalCache = new Map();
  function normalEntropy(alpha, n, fast = false) {
    const key = `${alpha} ${n} ${fast}`;
    if (!normalCache.has(key)) {
      if (normalCache.size > 256) normalCache.clear();
      normalCache.set(key, normalExpectation(alpha, n, "entropy", fast));
    }
    return normalCache.get(key);
  }

  // attnscale.gradient_limit(n, "cosine", d): n (n-1) int f(c)^2 F(c)^(n-2) dc, the density at 0 of the
  // gap between the two largest of n cosines; infinite at d = 2.  Above the median (theta < pi/2) in
  // log theta, from where P(theta' < theta) = 1e-40/n (as the package, from that exceedance); below it on
  // the law's panels.
  function cosineGradientLimit(n, d) {
    if (d < 2 + 1e-12) return Infinity;
    const law = cosineLaw(d);
    // the integrand per unit of log theta: f(c)^2 F^(n-2) dc/dlog theta = g^2 / sin * theta * F^(n-2)
    const logIntegrand = (x) => {
      const t = Math.exp(x);
      return (
        2 * (law.logKernel(t) - law.logTotal) - Math.log(Math.sin(t)) + x + log1pPower(law.mass(t), n - 2)
      );
    };
    const start = Math.log(angleOf(law.topScore(1e-40 / n)));
    const coarse = Array.from({ length: 129 }, (_, k) => start + ((Math.log(Math.PI / 2) - start) * k) / 128);
    const edges = adaptiveEdges(coarse, coarse.map(logIntegrand), 32, 1, 6);
    let upper = 0;
    for (let k = 0; k + 1 < edges.length; k++) {
      const half = 0.5 * (edges[k + 1] - edges[k]);
      const mid = 0.5 * (edges[k] + edges[k + 1]);
      for (let j = 0; j < 8; j++) upper += half * GL_W[j] * Math.exp(logIntegrand(mid + half * GL_X[j]));
    }
    let lower = 0;
    const below = [Math.PI / 2, ...law.edges.filter((t) => t > Math.PI / 2)];
    for (let k = 0; k + 1 < below.length; k++) {
      const half = 0.5 * (below[k + 1] - below[k]);
      const mid = 0.5 * (below[k] + below[k + 1]);
      for (let j = 0; j < 8; j++) {
        const t = mid + half * GL_X[j];
        const log = 2 * (law.logKernel(t) - law.logTotal) - Math.log(Math.sin(t)) + log1pPower(law.mass(t), n - 2);
        lower += half * GL_W[j] * Math.exp(log);
      }
    }
    return n * (n - 1) * (upper + lower);
  }

  // attnscale.practice.recipes._expected_entropy for cosine scores: E[H] at the
  // unit-score scale alpha (alpha sqrt(d) on the cosine); fast: the coarser
  // outer panels (cosineExpectation).  Remembered for the last few hundred
  // calls (typing repeats them).
  const entropyCache = new Map();
  function cosineEntropy(alpha, n, d, fast = false) {
    const key = `${alpha} ${n} ${d} ${fast}`;
    if (!entropyCache.has(key)) {
      if (entropyCache.size > 256) entropyCache.clear();
      entropyCache.set(key, cosineExpectation(alpha * Math.sqrt(d), n, d, "entropy", fast));
    }
    return entropyCache.get(key);
  }

  // The unit-score scale alpha with E[H](alpha, n) = target for cosine
  // scores (attnscale.practice.recipes._solve_entropy), 0 < target < log n, from a
  // first guess: {alpha}; {none} when no scale up to the cap brings the
  // entropy that low; {close} when the entropy at the cap is within the
  // quadrature's error of the target.  On the logit of E[H]/log n against
  // log alpha (no digits lost near either end, and nearly straight): secant
  // steps toward the root, then regula falsi (Illinois) once it is
  // bracketed, on the faster expectation (within about 4e-8 of the
  // package's); then one Newton step on the package's own panels, with the
  // slope from the steps before, so that the root is that of the same
  // discretization as the package's (it moves by about 1e-7 from the first;
  // a second step where it moved more).  About five fast expectations and
  // one or two full ones.  Where the scale is below
  // 1e-2, the small-scale expansion's instead (smallScale; as for Gaussian
  // scores, with the cosines' fourth moment).
  function solveCosineEntropy(target, n, d, guess) {
    const entropy = (alpha, fast) => cosineEntropy(alpha, n, d, fast);
    return solveByQuadrature(target, n, entropy, Math.log(COSINE_CAP / Math.sqrt(d)), guess, cosineMu4(d));
  }
  // the same for Gaussian scores, up to the package's cap of 1e3 (attnscale.practice.recipes._law)
  const NORMAL_CAP = 1e3;
  function solveNormalEntropy(target, n, guess) {
    const entropy = (alpha, fast) => normalEntropy(alpha, n, fast);
    return solveByQuadrature(target, n, entropy, Math.log(NORMAL_CAP), guess, 3);
  }
  // entropy(alpha, fast): E[H] at n keys; top: the log of the largest scale the expectation takes;
  // mu4: the unit score's fourth moment (for the small-scale expansion)
  function solveByQuadrature(target, n, entropy, top, guess, mu4) {
    const logN = Math.log(n);
    const small = smallScale(logN - target, n, mu4);
    if (small < EXPANSION_BELOW) return { alpha: small };
    const want = Math.log(target / (logN - target));
    const seen = []; // every (log alpha, logit gap) computed, for the slope
    const F = (x, fast = true) => {
      const h = entropy(Math.exp(x), fast);
      const f = h >= logN ? Infinity : Math.log(h / (logN - h)) - want;
      if (fast && Number.isFinite(f)) seen.push([x, f]);
      return f;
    };
    // from the guess, or the expansion's first term; not below the expansion's reach (as the package)
    const start = guess ?? Math.sqrt((2 * (logN - target) * n) / (n - 1));
    let x0 = Math.min(Math.log(Math.max(start, EXPANSION_BELOW)), top);
    let f0 = F(x0);
    // before a bracket: secant steps toward the root in log alpha, at least 0.05, at most 2, 4, 8 ...
    let x1 = Math.min(x0 + (f0 > 0 ? 0.05 : -0.05), top);
    let f1 = F(x1);
    for (let k = 0; k < 60 && Math.sign(f1) === Math.sign(f0) && f1 !== 0; k++) {
      if (x1 === top && f1 > 0) break;
      const secant = Number.isFinite(f1) && f1 !== f0 ? (-f1 * (x1 - x0)) / (f1 - f0) : NaN;
      const direction = f1 > 0 ? 1 : -1;
      const step = direction * Math.min(Math.max(secant * direction || 0, 0.05), 2 ** (k + 1));
      [x0, f0] = [x1, f1];
      x1 = Math.min(x1 + step, top);
      f1 = F(x1);
    }
    if (x1 === top && (f1 > 0 || Math.abs(f1) < CLOSE)) {
      // the cap's entropy above the target, or too close to it to tell
      return Math.abs(f1) < CLOSE || Math.abs(F(top, false)) < CLOSE ? { close: true } : { none: true };
    }
    // bracketed (Illinois: where the same end stays twice, its value is halved)
    let [a, fa, b, fb] = [x0, f0, x1, f1];
    for (let k = 0; k < 100 && fb !== 0; k++) {
      const x = Number.isFinite(fa) ? b - (fb * (b - a)) / (fb - fa) : 0.5 * (a + b);
      const fx = F(x);
      if (Math.sign(fx) !== Math.sign(fb)) [a, fa] = [b, fb];
      else fa *= 0.5;
      const moved = Math.abs(x - b);
      [b, fb] = [x, fx];
      // the fast expectation's noise is about 1e-8: no use going finer
      if (moved < 1e-7 || Math.abs(fx) < 1e-10) break;
    }
    // the slope from the two points nearest the root that are at least 1e-4 apart (their noise is 1e-8)
    seen.sort((p, q) => Math.abs(p[0] - b) - Math.abs(q[0] - b));
    const far = seen.find((p) => Math.abs(p[0] - seen[0][0]) > 1e-4);
    if (!far) return { alpha: Math.exp(b) };
    // Newton steps on the full expectation, the slope then from the last two (the fast one is off
    // by more near a uniform row, where the outer panels matter most)
    let slope = (far[1] - seen[0][1]) / (far[0] - seen[0][0]);
    let [x, f] = [b, F(b, false)];
    for (let k = 0; k < 4; k++) {
      const next = Math.min(x - f / slope, top);
      if (Math.abs(next - x) < 1e-6) return { alpha: Math.exp(next) }; // what is left: 1e-6 times the slope's error
      const fNext = F(next, false);
      slope = (fNext - f) / (next - x);
      [x, f] = [next, fNext];
    }
    return { alpha: Math.exp(x) };
  }
  // The logit of E[H] at the cap this close to the target's: the quadrature cannot tell which side
  const CLOSE = 1e-6;

  // --- the causal cosine gradient: attnscale.best_causal_scale(L, d), its mathematics ported -------
  // The cosine's log moment generating function L(alpha) = log 0F1(; d/2; alpha^2/4) as
  // attnscale.theory.special computes it: the 0F1 series for alpha^2/4 <= max(nu + 1, 2500), else the uniform
  // (Debye) expansion of I_nu (DLMF 10.41.3, seven terms), nu = d/2 - 1.  cosineParts returns
  // [L, M = L - alpha, c = 1 - L', v = L'', m = L'], each formed without cancellation.
  // Debye polynomials u_k(t) of DLMF 10.41.10: [denominator, [power, numerator] ...] (attnscale.theory.special._DEBYE)
  const DEBYE = [
    [24, [[1, 3], [3, -5]]],
    [1152, [[2, 81], [4, -462], [6, 385]]],
    [414720, [[3, 30375], [5, -369603], [7, 765765], [9, -425425]]],
    [39813120, [[4, 4465125], [6, -94121676], [8, 349922430], [10, -446185740], [12, 185910725]]],
    [
      6688604160,
      [[5, 1519035525], [7, -49286948607], [9, 284499769554], [11, -614135872350], [13, 566098157625],
        [15, -188699385875]],
    ],
    [
      4815794995200,
      [[6, 2757049477875], [8, -127577298354750], [10, 1050760774457901], [12, -3369032068261860],
        [14, 5104696716244125], [16, -3685299006138750], [18, 1023694168371875]],
    ],
    [
      115579079884800,
      [[7, 199689155040375], [9, -12493049053044375], [11, 138799253740521843], [13, -613221795981706275],
        [15, 1347119637570231525], [17, -1570320948552481125], [19, 931766432052080625],
        [21, -221849150488590625]],
    ],
  ];
  // log Gamma(nu + 1) - (nu log nu - nu + log(2 pi nu) / 2), for nu >= 10
  function stirlingCorrection(nu) {
    const inv = 1 / nu;
    const inv2 = inv * inv;
    const high = 1 / 1680 - inv2 * (1 / 1188 - inv2 * (691 / 360360 - inv2 / 156));
    return inv * (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * high)));
  }
  // log Gamma(nu + 1) for 0 <= nu < 10: Stirling at nu + 10, less the logs of the ten factors between
  function logGammaSmall(nu) {
    const m = nu + 10;
    let sum = m * Math.log(m) - m + 0.5 * Math.log(2 * Math.PI * m) + stirlingCorrection(m);
    for (let k = 1; k <= 10; k++) sum -= Math.log(nu + k);
    return sum;
  }
  function cosineSeries(nu, alpha) {
    const b = nu + 1;
    const x = 0.25 * alpha * alpha;
    // its terms fall faster than geometrically past k = sqrt(x): the package's count, tail below 1e-19
    const count = Math.min(Math.max(Math.trunc(24 + 2 * Math.sqrt(x)), 24), 124);
    let [term, tail, weighted] = [1, 0, 0];
    for (let k = 1; k <= count; k++) {
      term *= x / ((b + k - 1) * k);
      tail += term;
      weighted += term * k;
    }
    const logMgf = Math.log1p(tail);
    const mean = alpha > 0 ? (2 * weighted) / (alpha * (1 + tail)) : 0;
    const meanOverAlpha = alpha > 0 ? weighted / (2 * (x > 0 ? x : 1) * (1 + tail)) : 0.5 / b;
    const complement = 1 - mean;
    // v from the Riccati equation of the Bessel function: 1 - m^2 - (2 nu + 1) m / alpha
    const variance = complement * (1 + mean) - (2 * nu + 1) * meanOverAlpha;
    return [logMgf, logMgf - alpha, complement, variance, mean];
  }
  function cosineDebye(nu, alpha) {
    const r = Math.hypot(nu, alpha);
    const p = 1 / r;
    // S = 1 + sum_k u_k(nu p) / nu^k, and its first two derivatives in p
    let [series, dseries, d2series] = [1, 0, 0];
    DEBYE.forEach(([den, terms], index) => {
      const k = index + 1;
      for (const [power, numerator] of terms) {
        const weight = (numerator / den) * nu ** (power - k);
        series += weight * p ** power;
        dseries += weight * power * p ** (power - 1);
        d2series += weight * power * (power - 1) * p ** (power - 2);
      }
    });
    const logS = Math.log(series);
    const rMinusAlpha = nu * (nu / (r + alpha)); // r - alpha, without cancellation
    let logMgf, minusAlpha;
    if (nu >= 10) {
      const w = alpha * (alpha / (r + nu)); // r - nu
      const rest = -nu * Math.log1p(w / (2 * nu)) + 0.5 * Math.log(nu / r) + stirlingCorrection(nu) + logS;
      [logMgf, minusAlpha] = [w + rest, rMinusAlpha - nu + rest];
    } else {
      const rest =
        logGammaSmall(nu) + nu * Math.log(2) - nu * Math.log(nu + r) - 0.5 * Math.log(2 * Math.PI * r) + logS;
      [logMgf, minusAlpha] = [r + rest, rMinusAlpha + rest];
    }
    const slope = dseries / series;
    const complement = (nu + rMinusAlpha) / (nu + r) + alpha * 0.5 * p * p + alpha * p * p * p * slope;
    const mean = alpha / (nu + r) - alpha * 0.5 * p * p - alpha * p * p * p * slope;
    const ap = alpha * p;
    const variance =
      (nu * p) / (nu + r) -
      0.5 * ((nu - alpha) * p) * ((nu + alpha) * p) * p * p -
      p ** 3 * slope +
      3 * ap * ap * p ** 3 * slope +
      ap * ap * p ** 4 * (d2series / series - slope * slope);
    return [logMgf, minusAlpha, complement, variance, mean];
  }
  function cosineParts(nu, alpha) {
    const series = alpha <= 2 * Math.sqrt(Math.max(nu + 1, 2500));
    return series ? cosineSeries(nu, alpha) : cosineDebye(nu, alpha);
  }
  // log R = L(2 alpha) - 2 L(alpha), the gap L'(2 alpha) - L'(alpha), and the parts (for their variances)
  function cosineRatio(nu, alpha) {
    const one = cosineParts(nu, alpha);
    const two = cosineParts(nu, 2 * alpha);
    const logRatio = two[0] < alpha ? two[0] - 2 * one[0] : two[1] - 2 * one[1];
    const gap = one[2] < 0.5 ? one[2] - two[2] : two[4] - one[4];
    return { logRatio, gap, one, two };
  }
  // attnscale.cosine_alpha_star(n, d): safeguarded Newton steps in log alpha on the stationarity
  // condition log R + log(1 + alpha (log R)') = log n, from the Gaussian limit, keeping a bracket
  function cosineAlphaStar(n, nu) {
    const logN = Math.log(n);
    let x = Math.log(Math.sqrt(2 * nu + 2) * gaussianAlphaStar(n));
    let [lo, hi] = [-Infinity, Infinity];
    for (let i = 0; i < 100; i++) {
      const alpha = Math.exp(x);
      const { logRatio, gap, one, two } = cosineRatio(nu, alpha);
      const slope = 2 * alpha * gap;
      const value = logRatio + Math.log1p(slope) - logN;
      const dslope = 2 * gap - 2 * alpha * (one[3] - 2 * two[3]);
      const derivative = alpha * (2 * gap + dslope / (1 + slope));
      const below = value < 0;
      if (below) lo = Math.max(lo, x);
      else hi = Math.min(hi, x);
      let step = -value / derivative;
      if (!(Number.isFinite(step) && derivative > 0)) step = below ? 8 : -8;
      let proposal = Math.min(x + Math.min(Math.max(step, -8), 8), Math.log(1e300));
      const outside = proposal < lo || proposal > hi;
      const bounded = Number.isFinite(lo) && Number.isFinite(hi);
      if (outside && bounded) proposal = 0.5 * (lo + hi);
      const width = Math.abs(proposal - x);
      x = proposal;
      if (value === 0 || (width < 1e-9 && !outside) || (bounded && hi - lo < 4e-16 * Math.abs(hi))) break;
    }
    return Math.exp(x);
  }
  // the mean-field objective at alpha for n keys, given log R(alpha)
  const cosineObjective = (alpha, logRatio, n) => -alpha * Math.expm1(logRatio - Math.log(n));
  const bestObjective = (n, nu) => {
    const star = cosineAlphaStar(n, nu);
    return cosineObjective(star, cosineRatio(nu, star).logRatio, n);
  };

  // attnscale.theory.decoder._Shares for cosine scores: the clipped sum over positions n = 2 .. L of the share
  // rho(alpha, n) = f(alpha, n) / f(alpha*(n), n).  Positions up to 1024 term by term; beyond, the
  // integral in u = log x on Gauss-Legendre panels (12 nodes, width 0.5) from the first position whose
  // share is positive, with the first Euler-Maclaurin correction from central differences.
  const EXACT_POSITIONS = 1024;
  const PANEL_WIDTH = 0.5;
  const GL12_HALF = [0.1252334085114689, 0.3678314989981802, 0.5873179542866175, 0.7699026741943047,
    0.9041172563704748, 0.9815606342467192];
  const GL12_HALF_W = [0.2491470458134027, 0.2334925365383546, 0.20316742672306573, 0.16007832854334642,
    0.10693932599531907, 0.04717533638651141];
  const GL12_X = [...GL12_HALF.map((x) => -x).reverse(), ...GL12_HALF];
  const GL12_W = [...[...GL12_HALF_W].reverse(), ...GL12_HALF_W];
  const STEP = [1 - 1e-4, 1 + 1e-4]; // relative steps of the central differences
  function panels12(a, b, u, w) {
    const [half, mid] = [0.5 * (b - a), 0.5 * (b + a)];
    for (let j = 0; j < 12; j++) {
      const x = mid + half * GL12_X[j];
      u.push(x);
      w.push(half * GL12_W[j] * Math.exp(x));
    }
  }
  // The score law's part of it: law.logZero(alpha), the log of the key count x_0 beyond which the mean-field
  // objective alpha (1 - e^(logZero) / n) is positive (alpha^2 for Gaussian scores, log R(alpha) for
  // cosines), and law.best(n), the best objective at n keys.
  const GAUSSIAN_SHARES = {
    logZero: (alpha) => alpha * alpha,
    best: (n) => {
      const star = gaussianAlphaStar(n);
      return cosineObjective(star, star * star, n); // attnscale.gaussian_objective: the same form
    },
  };
  const cosineShareLaw = (nu) => ({ logZero: (alpha) => cosineRatio(nu, alpha).logRatio, best: (n) => bestObjective(n, nu) });
  function causalShares(length, law) {
    const lastExact = Math.min(length, EXACT_POSITIONS);
    const topExact = [];
    for (let n = 2; n <= lastExact; n++) topExact.push(law.best(n));
    const hasTail = length > EXACT_POSITIONS;
    const tail = {};
    if (hasTail) {
      tail.end = STEP.map((f) => (length + 0.5) * f);
      tail.topEnd = tail.end.map((x) => law.best(x));
      const [lo, hi] = [Math.log(EXACT_POSITIONS + 0.5), Math.log(length + 0.5)];
      const count = Math.max(1, Math.ceil((hi - lo) / PANEL_WIDTH));
      tail.edges = Array.from({ length: count + 1 }, (_, i) => (i === count ? hi : lo + (i * (hi - lo)) / count));
      [tail.u, tail.w] = [[], []];
      for (let i = 0; i < count; i++) panels12(tail.edges[i], tail.edges[i + 1], tail.u, tail.w);
      tail.top = tail.u.map((u) => law.best(Math.exp(u)));
      tail.topStart = STEP.map((f) => law.best((EXACT_POSITIONS + 0.5) * f));
    }
    // the clipped sum at the scale alpha
    return function total(alpha) {
      const logZero = law.logZero(alpha); // log x_0: the objective is positive beyond x_0
      const rho = (n, top) => cosineObjective(alpha, logZero, n) / top;
      // positions below x_0 keep a negative share, clipped to 0: skip them (with a margin of rounding)
      const zero = Math.exp(Math.min(logZero, 710)) * (1 - 1e-9);
      const skip = Math.min(Math.max(Math.ceil(zero) - 2, 0), topExact.length);
      let exact = 0;
      for (let i = skip; i < topExact.length; i++) exact += Math.max(rho(i + 2, topExact[i]), 0);
      let first = EXACT_POSITIONS + 1;
      if (logZero > Math.log(first)) first = logZero <= Math.log(length) ? Math.ceil(Math.exp(logZero)) : Infinity;
      if (!hasTail || first > length) return exact;
      const startX = STEP.map((f) => (first - 0.5) * f);
      let u, w, top, topStart;
      if (first === EXACT_POSITIONS + 1) [u, w, top, topStart] = [tail.u, tail.w, tail.top, tail.topStart];
      else {
        // the panel holding log(m - 1/2) starts there; the panels below it drop out
        const start = Math.log(first - 0.5);
        let k = 0;
        while (k + 1 < tail.edges.length && tail.edges[k + 1] <= start) k++;
        k = Math.min(Math.max(k, 0), tail.edges.length - 2);
        [u, w] = [[], []];
        panels12(start, tail.edges[k + 1], u, w);
        top = u.map((x) => law.best(Math.exp(x)));
        const keep = (k + 1) * 12;
        u = u.concat(tail.u.slice(keep));
        w = w.concat(tail.w.slice(keep));
        top = top.concat(tail.top.slice(keep));
        topStart = startX.map((x) => law.best(x));
      }
      let integral = 0;
      for (let i = 0; i < u.length; i++) integral += w[i] * rho(Math.exp(u[i]), top[i]);
      // the first Euler-Maclaurin correction, -(rho'(L + 1/2) - rho'(m - 1/2)) / 24
      const slope = (x, top) => (rho(x[1], top[1]) - rho(x[0], top[0])) / (x[1] - x[0]);
      const [slopeStart, slopeEnd] = [slope(startX, topStart), slope(tail.end, tail.topEnd)];
      return exact + integral - (slopeEnd - slopeStart) / 24;
    };
  }

  // scipy.optimize.minimize_scalar(method="bounded") as the package calls it (xatol 1e-11): Brent's
  // golden section with parabolic steps, minimizing f on [a, b]; returns [x, f(x)]
  function fminbound(f, a, b, xatol) {
    const sqrtEps = Math.sqrt(2.2e-16);
    const goldenMean = 0.5 * (3 - Math.sqrt(5));
    let fulc = a + goldenMean * (b - a);
    let [nfc, xf] = [fulc, fulc];
    let [rat, e] = [0, 0];
    let x = xf;
    let fx = f(x);
    let num = 1;
    let [ffulc, fnfc] = [fx, fx];
    let xm = 0.5 * (a + b);
    let tol1 = sqrtEps * Math.abs(xf) + xatol / 3;
    let tol2 = 2 * tol1;
    const sign = (v) => Math.sign(v) + (v === 0 ? 1 : 0);
    while (Math.abs(xf - xm) > tol2 - 0.5 * (b - a)) {
      let golden = true;
      if (Math.abs(e) > tol1) {
        golden = false;
        let r = (xf - nfc) * (fx - ffulc);
        let q = (xf - fulc) * (fx - fnfc);
        let p = (xf - fulc) * q - (xf - nfc) * r;
        q = 2 * (q - r);
        if (q > 0) p = -p;
        q = Math.abs(q);
        r = e;
        e = rat;
        if (Math.abs(p) < Math.abs(0.5 * q * r) && p > q * (a - xf) && p < q * (b - xf)) {
          rat = p / q;
          x = xf + rat;
          if (x - a < tol2 || b - x < tol2) rat = tol1 * sign(xm - xf);
        } else golden = true;
      }
      if (golden) {
        e = xf >= xm ? a - xf : b - xf;
        rat = goldenMean * e;
      }
      x = xf + sign(rat) * Math.max(Math.abs(rat), tol1);
      const fu = f(x);
      num++;
      if (fu <= fx) {
        if (x >= xf) a = xf;
        else b = xf;
        [fulc, ffulc] = [nfc, fnfc];
        [nfc, fnfc] = [xf, fx];
        [xf, fx] = [x, fu];
      } else {
        if (x < xf) a = x;
        else b = x;
        if (fu <= fnfc || nfc === xf) {
          [fulc, ffulc] = [nfc, fnfc];
          [nfc, fnfc] = [x, fu];
        } else if (fu <= ffulc || fulc === xf || fulc === nfc) [fulc, ffulc] = [x, fu];
      }
      xm = 0.5 * (a + b);
      tol1 = sqrtEps * Math.abs(xf) + xatol / 3;
      tol2 = 2 * tol1;
      if (num >= 500) break;
    }
    return [xf, fx];
  }

  // attnscale.best_causal_scale(round(n), d): the fixed scale with the largest average share over
  // positions 2 .. n, by the package's bounded search over log alpha between alpha*(2) and alpha*(n);
  // [alpha, n_ref, share], n_ref the key count whose own optimum alpha is (stationarity in closed form).
  // The last few settings are kept: the form recomputes on every keystroke in any field.
  const causalCache = new Map();
  function bestCausal(length, key, law, star, nEquivalent) {
    if (causalCache.has(key)) return causalCache.get(key);
    const total = causalShares(length, law);
    const [lo, hi] = [Math.log(star(2)), Math.log(star(length))];
    let out;
    if (hi - lo < 1e-12) out = [Math.exp(lo), 2, total(Math.exp(lo)) / (length - 1)];
    else {
      const [x, f] = fminbound((t) => -total(Math.exp(t)) / (length - 1), lo, hi, 1e-11);
      const alpha = Math.exp(x);
      out = [alpha, Math.min(Math.max(nEquivalent(alpha), 2), length), -f];
    }
    if (causalCache.size >= 8) causalCache.delete(causalCache.keys().next().value);
    causalCache.set(key, out);
    return out;
  }
  function causalCosine(n, d) {
    const length = roundHalfEven(n);
    const nu = d / 2 - 1;
    const nEquivalent = (alpha) => {
      const { logRatio, gap } = cosineRatio(nu, alpha);
      return Math.exp(logRatio + Math.log1p(2 * alpha * gap));
    };
    return bestCausal(length, `${length} ${d}`, cosineShareLaw(nu), (m) => cosineAlphaStar(m, nu), nEquivalent);
  }
  // the same for Gaussian scores: alpha* in closed form, n_ref = (1 + 2 alpha^2) e^(alpha^2)
  function causalGaussian(n) {
    const length = roundHalfEven(n);
    const nEquivalent = (alpha) => Math.exp(alpha * alpha) * (1 + 2 * alpha * alpha);
    return bestCausal(length, `${length} gaussian`, GAUSSIAN_SHARES, gaussianAlphaStar, nEquivalent);
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

  // --- the rules, one small function each, as in attnscale.practice.calculator------
  // Each returns {unit} (a scale on the unit-variance score) or {cli: true}
  // or no unit, and its notes.

  // A note of the package (attnscale.practice.calculator.NOTES, written into the table by the build).
  const say = (table, key, values = {}) => fill(table.words.notes[key], values);
  // the package's causal note (attnscale.practice.calculator._gradient)
  const causalNote = (table, nRef, share, n) => say(table, "causal", { n_ref: nRef, share, n: roundHalfEven(n) });

  function gradient(s, table) {
    const notes = [];
    if (s.scores !== "dot") {
      let unit;
      if (s.causal) {
        const [alpha, nRef, share] = causalCosine(s.n, s.d);
        unit = alpha / Math.sqrt(s.d);
        notes.push(causalNote(table, nRef, share, s.n));
      } else unit = cosineUnitStar(s.n, s.d);
      if (unit >= 30) notes.push(say(table, "cosine large", { d: s.d, ratio: unit }));
      return { unit, notes };
    }
    let alpha;
    if (s.causal) {
      const [a, nRef, share] = causalGaussian(s.n);
      alpha = a;
      notes.push(causalNote(table, nRef, share, s.n));
    } else {
      alpha = gaussianAlphaStar(s.n);
    }
    notes.push(say(table, "gradient"));
    return { unit: alpha, notes };
  }

  // YaRN's mscale(n/L)^2: 0.1 ln s + 1 on the cos/sin tables, so squared on the logits; 1 up to L
  const yarnSquare = (s) => (s.n / s.L > 1 ? (0.1 * Math.log(s.n / s.L) + 1) ** 2 : 1);

  function sqrtRule(s, table) {
    if (s.scores !== "dot") return { notes: [say(table, "sqrt cosine")] };
    const meanField = s.a * s.a + 2 * Math.log(s.n / s.L);
    // alpha_L solved from a measured entropy carries the quadrature's error, a
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
    if (!(meanField > 0)) return { notes: [say(table, "sqrt none")] };
    return { unit: Math.sqrt(meanField), notes: s.a * s.a >= 2 * Math.log(s.L) ? [say(table, "sqrt frozen")] : [] };
  }

  // attnscale.practice.calculator._exact_match: the package's two range checks, then
  // its solver, on the exact expectation by quadrature (quadratureExactMatch).
  function exactMatch(s, table, name) {
    if (Math.max(s.n, s.L) > EXACT_MAX_KEYS) {
      return { notes: [say(table, "exact range", { name, top: EXACT_MAX_KEYS })] };
    }
    // attnscale.practice.recipes._law: the factor from the unit score to the law's scale, and the law's cap
    const [toLaw, cap] = s.scores === "dot" ? [1, NORMAL_CAP] : [Math.sqrt(s.d), COSINE_CAP];
    if (s.a * toLaw > cap) {
      return { notes: [say(table, "exact alpha", { name, alpha: s.a, top: cap / toLaw, law: lawOf(s) })] };
    }
    return quadratureExactMatch(s, table, name, cap / toLaw);
  }

  // the package's note when no scale up to the cap (top, on the unit score) reaches the entropy
  const outOfReach = (table, name, top, target) => say(table, "exact reach", { name, top, target });

  // The exact match: the head's entropy at L by quadrature (or the measured
  // one: the package solves for alpha_L and recomputes it, to 1e-12), then
  // the scale at n that has it.  The page's and the package's expectations
  // agree to about 1e-8 on E[H] (the tests measure it; both are quadratures
  // of the same integrals on the same panels), so only a target within about
  // that of a boundary is sent to the command line: log n (L > n and the
  // head's entropy at L just below it, where the error in the target is
  // magnified by magnify = (log L - target) log n / (log L |log n - target|);
  // magnify > 1 needs L > n, so extrapolation is never sent away) and the
  // entropy at the cap.  top: the cap on the unit score.
  function quadratureExactMatch(s, table, name, top) {
    const cosine = s.scores !== "dot";
    const [logN, logL] = [Math.log(s.n), Math.log(s.L)];
    // the head's gap log L - E[H] at L; below alpha_L = 1e-2 the expansion's, as the package's
    // (recipes._entropy_gap_at: there the quadrature would leave few digits of it)
    const mu4 = cosine ? cosineMu4(s.d) : 3;
    const tinyHead = s.headEntropy === null && s.a < EXPANSION_BELOW;
    const target =
      s.headEntropy ??
      (tinyHead ? logL - smallGap(s.a, s.L, mu4) : cosine ? cosineEntropy(s.a, s.L, s.d) : normalEntropy(s.a, s.L));
    const gapL = tinyHead ? smallGap(s.a, s.L, mu4) : logL - target;
    const gapN = Math.log(s.n / s.L) + gapL; // log n - E[H] that the match asks for at n (recipes._matched_gap)
    const magnify = (gapL * logN) / (logL * Math.abs(gapN));
    if (s.headEntropy === null && !tinyHead && magnify > QUADRATURE_MAGNIFY) {
      return { cli: true, notes: [], mayCompute: true, why: TOO_CLOSE };
    }
    if (gapN <= 0) return { notes: [notApplies(table, target, s.n)] };
    const small = smallScale(gapN, s.n, mu4);
    if (small < EXPANSION_BELOW) return scaled(small);
    // the first guess, from the table's Gaussian entropy: the scale with this entropy at n (for cosines,
    // alpha_L times the ratio of the Gaussian scales with this entropy at n and at L)
    const [atN, atL] = [gaussianGuess(target, s.n, table), gaussianGuess(target, s.L, table)];
    const out = cosine
      ? solveCosineEntropy(target, s.n, s.d, atN && atL ? (s.a * atN) / atL : atN)
      : solveNormalEntropy(target, s.n, atN);
    if (out.close) return { cli: true, notes: [], mayCompute: true, why: TOO_CLOSE };
    return out.none ? { notes: [outOfReach(table, name, top, target)] } : scaled(out.alpha);
  }
  // Below this scale the small-scale expansion stands for the quadrature (recipes._EXPANSION_BELOW):
  // log n - E[H] = c2 alpha^2 + c4 alpha^4 for unit-variance scores with fourth moment mu4
  // (recipes._small_gap_terms); smallGap is that gap, smallScale its root near sqrt(gap / c2).
  const EXPANSION_BELOW = 1e-2;
  const cosineMu4 = (d) => (3 * d) / (d + 2); // of sqrt(d) times the cosine of two random directions
  function smallTerms(n, mu4) {
    const c4 = ((n - 1) * ((n * n - 6 * n + 6) * mu4 - 3 * (n * n - 4 * n + 6))) / (8 * n ** 3);
    return [(n - 1) / (2 * n), c4];
  }
  function smallGap(alpha, n, mu4) {
    const [c2, c4] = smallTerms(n, mu4);
    return c2 * alpha ** 2 + c4 * alpha ** 4;
  }
  function smallScale(gap, n, mu4) {
    const [c2, c4] = smallTerms(n, mu4);
    const discriminant = c2 * c2 + 4 * c4 * gap;
    if (!(discriminant > 0)) return Infinity; // a gap far past the expansion's reach (c4 < 0)
    return Math.sqrt((2 * gap) / (c2 + Math.sqrt(discriminant)));
  }
  // Beyond this magnification the target's error (a few 1e-8 on the logit) could pass the tests' tolerance.
  const QUADRATURE_MAGNIFY = 100;
  const TOO_CLOSE =
    "too close to where the row changes for the page's quadrature to hold 1e-3; the package may compute it";
  // the Gaussian scale with the same entropy, from the table's spline (within 1e-3): where the solvers start
  const gaussianGuess = (target, n, table) => (target < Math.log(n) ? solveEntropy(target, n, table) : null);
  const notApplies = (table, target, n) => say(table, "exact none", { target, log_n: Math.log(n) });

  // alpha_L from a measured entropy: the quadrature's relative error bound (the tests' QUADRATURE)
  const ALPHA_ERROR = 1e-6;

  // Each row's arithmetic, by the key of its rule in attnscale.practice.calculator.RULES (whose order, names
  // and sources the page reads from table.words.rules): when it belongs to the setting, and the rule.
  const lawOf = (s) => (s.scores === "dot" ? "gaussian" : "cosine");
  // attnscale.practice.calculator._variant and _fill: a template, or templates by variant; fields L and law
  const variant = (s) => s.scores + (s.causal ? " causal" : "");
  const words = (w, s) => fill(typeof w === "string" ? w : w[variant(s)], { L: s.L ?? "None", law: lawOf(s) });
  const always = () => true;
  const withL = (s) => s.L !== null;
  const scaled = (unit, ...notes) => ({ unit, notes }); // a scale and its notes
  // a length rule: its factor on the head's alpha_L, kept exactly for the factor column (calculator._times_head)
  const timesHead = (s, factor, ...notes) => ({ unit: s.a * factor, factor, notes });
  const ARITHMETIC = {
    trained: [(s) => s.L !== null && s.n > s.L, (s) => timesHead(s, 1)],
    // on a trained head (a training length given): the scale it was trained with, factor 1 (calculator._standard)
    standard: [always, (s, table) => (s.L !== null ? timesHead(s, 1, say(table, "standard trained")) : scaled(1))],
    gradient: [always, gradient],
    "base 512": [(s) => s.L === null && !s.contrastive, (s, table) => scaled(Math.log(s.n) / Math.log(512), say(table, "base 512"))],
    "entropy-invariant": [withL, (s) => timesHead(s, Math.log(s.n) / Math.log(s.L))],
    qwen: [withL, (s) => timesHead(s, Math.max(1, Math.log(s.n) / Math.log(s.L)))],
    yarn: [
      withL,
      (s, table) =>
        timesHead(s, yarnSquare(s), say(table, "yarn dynamic"), say(table, "yarn static"), say(table, "rope")),
    ],
    // sqrt(1 + ln(n/L)/ln L)^2, as the package squares longrope_attention_factor
    longrope: [
      withL,
      (s, table) => timesHead(s, s.n > s.L ? Math.sqrt(1 + Math.log(s.n / s.L) / Math.log(s.L)) ** 2 : 1, say(table, "rope")),
    ],
    // 1 - x^(-2/d) = -expm1(-2 ln x / d): no cancellation for large d
    infoscale: [
      withL,
      (s) => timesHead(s, Math.sqrt(Math.expm1((-2 * Math.log(s.n)) / s.d) / Math.expm1((-2 * Math.log(s.L)) / s.d))),
    ],
    llama4: [withL, (s, table) => timesHead(s, 1 + 0.1 * Math.log1p(Math.floor(s.n / 8192)), say(table, "llama4"))],
    sqrt: [withL, sqrtRule],
    qknorm: [(s) => withL(s) && s.scores === "cosine", (s) => scaled((Math.log2(s.L) + Math.log2(s.L - 1)) / Math.sqrt(s.d))],
    exact: [withL, exactMatch],
  };

  // The package's input error (attnscale.practice.calculator.ERRORS), for the form's field it names.
  function inputError(table, field, key, values = {}) {
    // "page": the page's own message (values.text), for what only the page cannot decide
    const error = new Error(key === "page" ? values.text : fill(table.words.errors[key], values));
    error.field = field;
    return error;
  }

  // What a field holds as the command line reads it (attnscale.practice.calculator.read_number): a decimal with an
  // optional exponent, or the package's words; empty is "not given" for the optional fields.
  function readNumber(table, text, name, optional) {
    const typed = String(text ?? "");
    if (optional && typed.trim() === "") return null;
    if (!new RegExp(table.words.syntax).test(typed)) throw inputError(table, name, "syntax", { name, text: typed });
    return Number(typed);
  }

  // attnscale.practice.calculator._number: finite, and in [lo, hi] (lo = 0: above 0), in the package's words.
  function checkNumber(table, x, name, lo, hi, what = "") {
    if (x === null) return null;
    if (!Number.isFinite(x)) throw inputError(table, name, "finite", { name, value: x > 0 ? "inf" : "-inf" });
    if (lo === 0 && !(x > 0)) throw inputError(table, name, "positive", { name, value: x });
    if (x < lo) throw inputError(table, name, "low", { name, low: lo, what, value: x });
    if (x > hi) throw inputError(table, name, "high", { name, high: hi, value: x });
    return x;
  }

  // alpha_L of a measured entropy at L (attnscale.head_scale_from_entropy),
  // or the inline message the package's ValueError stands for; by quadrature for either law
  // (quadratureExactMatch says how close it agrees).
  function headFromEntropy(s, table) {
    const label = "measured entropy H_L";
    const fail = (key, values) => inputError(table, "head_entropy", key, values);
    if (s.L > EXACT_MAX_KEYS) throw fail("entropy L", { top: EXACT_MAX_KEYS });
    if (!(s.headEntropy > 0 && s.headEntropy < Math.log(s.L))) {
      throw fail("entropy range", { log_l: Math.log(s.L), L: s.L, value: s.headEntropy });
    }
    const unreachable = (top) => fail("entropy reach", { value: s.headEntropy, top, target: s.headEntropy });
    const cosine = s.scores !== "dot";
    const guess = gaussianGuess(s.headEntropy, s.L, table);
    const out = cosine ? solveCosineEntropy(s.headEntropy, s.L, s.d, guess) : solveNormalEntropy(s.headEntropy, s.L, guess);
    if (out.close) {
      const flags = `${cosine ? " --cosine" : ""}${s.causal ? " --causal" : ""}`;
      throw inputError(
        table,
        "head_entropy",
        "page",
        { text: `${label}: too close to the lowest entropy the exact expectation reaches for the page to tell ` +
          `whether a scale has it; give alpha_L, or see the CLI: python -m attnscale scale --d ${s.d} ` +
          `--n ${s.n}${flags} --train-length ${s.L} --head-entropy ${s.headEntropy}` },
      );
    }
    if (out.none) throw unreachable(cosine ? COSINE_CAP / Math.sqrt(s.d) : NORMAL_CAP);
    return out.alpha;
  }

  // attnscale.practice.calculator._table_words: the title, the two lines saying what the numbers are, the columns and
  // the headings
  function tableWords(s, answer, table) {
    const T = table.words.table;
    const [raw, unit] = [T[`raw ${s.scores}`], T[`unit ${s.scores}`]];
    const length = s.L !== null ? fill(T.length, { L: s.L }) : "";
    const suffix = s.measured ? " measured" : s.L !== null ? " factor" : "";
    const title = fill(T["title" + suffix], { raw, d: s.d, n: s.n, causal: s.causal ? T.causal : "", length });
    const values = { raw, unit, alpha: s.a };
    const out = { title, first: fill(T["first" + suffix], values), second: fill(T["second" + suffix], values) };
    const level = table.words.answers.confidence[answer];
    const caveat = caveatWords(answer, s, table);
    for (const g of table.words.groups) out[`group ${g}`] = fill(T[`group ${g}`], { answer, level, caveat });
    out.columns = [
      T["column criterion"],
      s.L !== null ? T["column factor"] : T["column scale"],
      s.L !== null ? T["column alpha"] : T["column std"],
      T["column source"],
    ];
    return out;
  }

  // attnscale.practice.calculator._caveat: what the length answer's evidence did not test in this setting
  function caveatWords(answer, s, table) {
    if (answer !== "length") return "";
    const T = table.words.table;
    const items = [];
    if (s.scores === "cosine") items.push(T["caveat cosine"]);
    if (!s.causal) items.push(T["caveat encoder"]);
    if (s.n / s.L > table.words.answers.tested) items.push(fill(T["caveat far"], { tested: table.words.answers.tested }));
    return items.length ? fill(T.caveat, { items: items.join(", ") }) : "";
  }

  // attnscale.practice.calculator.Recommendation.cells: each row's two numbers as the table prints them (a row the page
  // leaves to the command line has none)
  function cells(result, table) {
    const fixed = (x) => (x < 1e3 ? fmtF(x, 3) : fmtE(x, 1)); // attnscale.practice.calculator._fixed
    return result.entries.map((e) => {
      if (e.cli) return null;
      let first;
      if (result.setting.L === null) first = fmtG(e.scale, 4);
      else first = e.factor === null ? table.words.table.absolute : fixed(e.factor);
      return [first, fixed(e.unit)];
    });
  }

  // attnscale.practice.calculator._how: how to use the marked row, from the book's answer (in a decoder its causal
  // words where it has them), its factor and raw scale filled in
  function howWords(answer, entries, s, table) {
    const how = table.words.answers.how;
    const template = (s.causal ? how[`${answer} causal`] : undefined) ?? how[answer];
    const marked = entries.filter((e) => e.group === "answer" && !e.cli);
    if (template === undefined || marked.length === 0) return "";
    const [lowRatio, highRatio] = table.words.answers.contrastive;
    const scale = marked[0].scale;
    return fill(template, {
      factor: marked[0].factor ?? marked[0].unit / s.a,
      scale,
      ntk: ntkWords(s, table),
      root: Math.sqrt(s.d),
      low: scale * lowRatio,
      high: scale * highRatio,
      low_ratio: lowRatio,
      high_ratio: highRatio,
    });
  }

  // attnscale.practice.calculator._ntk_words: RoPE's base stretched for n keys, (n/L)^(d/(d-2)), with its number
  // where it prints (d > 2, no overflow), as the package decides
  function ntkWords(s, table) {
    if (s.L === null) return "";
    const words = table.words.answers.ntk;
    if (s.d > 2) {
      const logValue = (s.d / (s.d - 2)) * Math.log(Math.max(s.n / s.L, 1));
      if (logValue < 700) return fill(words.value, { value: Math.exp(logValue), d: s.d });
    }
    return words.formula;
  }

  // The whole table for one setting: {entries, notes} or {error, field}
  // (field: the form's name of the input the message is about).
  function recommend(input, table) {
    let s;
    // attnscale.__main__ and attnscale.practice.calculator.recommend_scale, in their order: every field read
    // (the command line parses its arguments first), then each checked, then the measurement
    try {
      const typed = {
        d: readNumber(table, input.d, "d", false),
        n: readNumber(table, input.n, "n", false),
        L: readNumber(table, input.trainLength, "train_length", true),
        headScale: readNumber(table, input.headScale, "head_scale", true),
        headEntropy: readNumber(table, input.headEntropy, "head_entropy", true),
      };
      s = {
        d: checkNumber(table, typed.d, "d", 2, MAX_D, " (the head dimension)"),
        n: checkNumber(table, typed.n, "n", 2, MAX_KEYS, " (at least two keys)"),
        L: checkNumber(table, typed.L, "train_length", 2, MAX_KEYS),
        headScale: checkNumber(table, typed.headScale, "head_scale", 0, MAX_ALPHA),
        headEntropy: checkNumber(table, typed.headEntropy, "head_entropy", -Infinity, Infinity),
        scores: input.scores === "cosine" ? "cosine" : "dot",
        causal: Boolean(input.causal),
        contrastive: Boolean(input.contrastive),
      };
      if (s.headScale !== null && s.headEntropy !== null) throw inputError(table, "head_scale", "both");
      if ((s.headScale !== null || s.headEntropy !== null) && s.L === null) {
        throw inputError(table, s.headScale !== null ? "head_scale" : "head_entropy", "needs L");
      }
      if (s.contrastive && (s.causal || s.L !== null || s.scores !== "cosine")) {
        throw inputError(table, "contrastive", "contrastive");
      }
      if (s.headEntropy !== null) s.a = headFromEntropy(s, table);
    } catch (error) {
      if (error.field === undefined) throw error; // a bug, not the reader's input
      return { error: error.message, field: error.field };
    }
    s.a ??= s.headScale ?? 1;
    s.measured = s.headScale !== null || s.headEntropy !== null;
    // attnscale.practice.advice.calculator_answer: the answer of the book that applies, whose rows are marked
    let answer = s.scores === "cosine" ? "cosine" : s.causal ? "decoder" : "dot";
    if (s.L !== null && s.n > s.L) answer = "length";
    if (s.contrastive) answer = "contrastive";
    const marked = table.words.answers.rows[answer];
    const notes = [];
    const addNote = (note) => notes.includes(note) || notes.push(note);
    if (s.headScale !== null) addNote(say(table, "head scale", { alpha: s.a, L: s.L }));
    else if (s.headEntropy !== null) {
      addNote(say(table, "head entropy", { entropy: s.headEntropy, L: s.L, alpha: s.a, law: lawOf(s) }));
      if (s.causal) addNote(say(table, "head entropy causal"));
    } else if (s.L !== null) addNote(say(table, "no head"));
    if (s.L !== null && s.n > s.L) {
      const tested = table.words.answers.tested;
      addNote(say(table, "past L", { tested }));
      if (s.n / s.L > tested) addNote(say(table, "past tested", { ratio: s.n / s.L, tested }));
      if (s.scores === "cosine") addNote(say(table, "length cosine"));
      if (s.causal) addNote(say(table, "causal length"));
    }
    const root = Math.sqrt(s.d);
    const entries = [];
    for (const rule of table.words.rules) {
      const [applies, run] = ARITHMETIC[rule.key];
      if (!applies(s)) continue;
      const name = words(rule.name, s);
      const out = run(s, table, name);
      const group = marked.includes(rule.key) ? "answer" : rule.kind;
      const entry = {
        criterion: name,
        source: words(rule.source, s),
        unit: null,
        scale: null,
        factor: null,
        group,
        key: rule.key,
        absolute: rule.absolute,
        cli: Boolean(out.cli),
      };
      if (out.cli) {
        entries.push(entry);
        out.notes.push(cliNote(name, s, Boolean(out.mayCompute), out.why));
      } else if (out.unit !== undefined) {
        const raw = s.scores === "dot" ? out.unit / root : out.unit * root;
        // never a degenerate scale, as the package's _run
        if (Number.isFinite(out.unit) && out.unit > 0 && Number.isFinite(raw) && raw > 0) {
          // with a training length, a length rule's factor on the trained logits, exactly (the standard
          // scale's 1), or its scale over alpha_L; a rule that sets the scale itself has none
          // (attnscale.practice.calculator._run)
          let factor = null;
          if (s.L !== null) factor = out.factor ?? (rule.absolute ? null : out.unit / s.a);
          const absolute = rule.absolute && factor === null;
          entries.push(Object.assign(entry, { unit: out.unit, scale: raw, factor, absolute }));
        } else {
          out.notes.push(`${name}: gives no usable scale here; left out`);
        }
      }
      out.notes.forEach(addNote);
    }
    // the book's answer first, then the published rules, then the criteria; stable within a group
    const groups = table.words.groups;
    entries.sort((a, b) => groups.indexOf(a.group) - groups.indexOf(b.group));
    const how = howWords(answer, entries, s, table);
    return { entries, notes, setting: s, answer, how, words: tableWords(s, answer, table) };
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
    const curves = [ns.map(gaussianAlphaStar), ns.map((n) => cosineUnitStar(n, s.d))];
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
    const here = [gaussianAlphaStar(s.n), cosineUnitStar(s.n, s.d)];
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

  // Figure (b)'s curve for Gaussian scores at n keys: the exact expected gradient at 121 scales, its
  // limit and the marks (alpha* and the typical row's sqrt(2 log n), each with its value), from the table.
  function gaussianGradientCurve(n, table) {
    const typical = Math.sqrt(2 * Math.log(n));
    const [a0, a1] = table.gradient.span.map((f) => f * typical);
    const alphas = Array.from({ length: 121 }, (_, k) => a0 * (a1 / a0) ** (k / 120));
    const marks = [gaussianAlphaStar(n), typical].map((a) => [a, expectedGradient(a, n, table)]);
    return { alphas, values: alphas.map((a) => expectedGradient(a, n, table)), limit: gradientLimit(n, table), marks };
  }

  // The same for cosine scores at n keys and dimension d, by quadrature:
  // E[alpha (1 - sum p^2)] with alpha on the unit-variance score sqrt(d) cos
  // (attnscale.expected_gradient(alpha sqrt(d), n, "cosine", d) / sqrt(d)) at
  // 41 scales up to the exact expectation's cap, its limit
  // (gradient_limit / sqrt(d)) and the marks (alpha* from the table's
  // spline).  The outer panels are coarser than for the entropy (the tests hold
  // it to 2e-7 of the package, COSINE_GRADIENT: plenty for a drawing and its caption's digits).  A
  // generator, one expectation per step, so that the page can compute it
  // between keystrokes (render); cosineGradientCurve runs it at once.
  function* cosineCurveSteps(n, d, table) {
    const root = Math.sqrt(d);
    const typical = Math.sqrt(2 * Math.log(n));
    const [a0, a1] = [table.gradient.span[0] * typical, Math.min(table.gradient.span[1] * typical, COSINE_CAP / root)];
    const alphas = Array.from({ length: 41 }, (_, k) => a0 * (a1 / a0) ** (k / 40));
    const values = [];
    for (const a of alphas) {
      values.push(cosineExpectation(a * root, n, d, "gradient", true) / root);
      yield;
    }
    const marks = [];
    for (const a of [cosineUnitStar(n, d), typical]) {
      marks.push([a, a >= a0 && a <= a1 ? cosineExpectation(a * root, n, d, "gradient", true) / root : null]);
      yield;
    }
    // the limit: null (not computed) below COSINE_LIMIT_FROM_D, Infinity at d = 2
    const limit = d >= COSINE_LIMIT_FROM_D || d < 2 + 1e-12 ? cosineGradientLimit(n, d) / root : null;
    return { alphas, values, limit, marks, cap: COSINE_CAP / root };
  }
  // Below this d the page's limit is not trusted to the caption's 4 digits: f(c)^2 behaves as
  // |c -+ 1|^(d-3) at both ends, which the graded panels resolve less well as d -> 2 (where the limit
  // is infinite).  Measured against the closed form at n = 2 keys (the worst n: the lower end is not
  // damped by F^(n-2)), 2 B(1/2, d-2) / B(1/2, (d-1)/2)^2: 40 % off at d = 2.01, 5 % at 2.05, 5e-5
  // at 2.2, 3e-9 at 2.4, 2e-10 at 2.45 (tests/test_calculator_page.py holds d >= 2.45 to COSINE_LIMIT).
  const COSINE_LIMIT_FROM_D = 2.45;
  function cosineGradientCurve(n, d, table) {
    const steps = cosineCurveSteps(n, d, table);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  // Figure (b): the exact expected gradient against the scale at the
  // reader's n (and d, for cosines), log scale axis, with the source's
  // alpha*, the typical row's sqrt(2 log n) and the limit marked.  Same
  // plain SVG.  curve: the cosine curve when render has computed it.
  function plotGradient(s, table, curve) {
    const g = table.gradient;
    const n = roundHalfEven(s.n);
    const caption = el("figcaption", "", { id: "calc-gradient-caption" });
    const figure = el("figure", [caption], { class: "calc-figure calc-gradient" });
    if (n > g.nMax) {
      caption.textContent =
        `attnscale computes the exact expected gradient for n up to ${fmtG(g.nMax)} keys; ` +
        `n = ${fmtG(n)} is beyond that, so this figure is not drawn.`;
      return figure;
    }
    const cosine = s.scores === "cosine";
    curve ??= cosine ? cosineGradientCurve(n, s.d, table) : gaussianGradientCurve(n, table);
    const { alphas, values, limit, marks } = curve;
    const [a0, a1] = [alphas[0], alphas[alphas.length - 1]];
    const highest = Math.max(...values);
    // the limit drawn where the curve comes near it (for cosines at small d it is far above, or infinite)
    const showLimit = Number.isFinite(limit) && limit <= 1.5 * highest;
    const top = showLimit ? limit : highest;
    const [W, H, left, right, bottom, lg] = [360, 200, 50, 16, 34, Math.log10]; // left: room for the y label
    const X = (a) => (left + ((lg(a) - lg(a0)) / (lg(a1) - lg(a0))) * (W - left - right)).toFixed(1);
    const Y = (v) => (H - bottom - (v / (1.1 * top)) * (H - bottom - 8)).toFixed(1);
    const svgText = (x, y, t, anchor = "middle") => `<text x="${x}" y="${y}" text-anchor="${anchor}">${t}</text>`;
    let svg = "";
    // grid lines at round values: a step of 1, 2 or 5 times a power of ten, at most five lines
    const power = 10 ** Math.floor(Math.log10(top / 4));
    const step = [1, 2, 5, 10].map((f) => f * power).find((h) => top / h <= 4);
    for (let v = 0; v <= 1.1 * top; v += step) {
      svg += `<line class="grid" x1="${left}" x2="${W - right}" y1="${Y(v)}" y2="${Y(v)}"/>`;
      svg += svgText(left - 4, +Y(v) + 4, fmtG(+v.toPrecision(12)), "end");
    }
    for (let e = Math.ceil(lg(a0)); e <= lg(a1); e++) svg += svgText(X(10 ** e), H - bottom + 16, String(10 ** e));
    if (showLimit) {
      svg += `<line class="curve1 limit" x1="${left}" x2="${W - right}" y1="${Y(limit)}" y2="${Y(limit)}"/>`;
    }
    const points = alphas.map((a, i) => [+X(a), +Y(values[i])]);
    svg += `<path class="curve0" d="${cosine ? smoothPath(points) : "M" + points.map((p) => p.join(",")).join("L")}"/>`;
    const labels = ["α*", "√(2 ln n)"];
    marks.forEach(([a, value], k) => {
      if (value === null) return; // beyond the exact expectation's range
      svg += `<line class="mark" x1="${X(a)}" x2="${X(a)}" y1="8" y2="${H - bottom}"/>`;
      svg += `<circle class="curve0" data-label="${labels[k]}" cx="${X(a)}" cy="${Y(value)}" r="3.5"/>`;
      // labels low, where the rising curve is not (it is near 0 only far left of both marks)
      svg += svgText(+X(a) + 3, H - bottom - 6 - (k === 1 ? 0 : 14), labels[k], "start");
    });
    svg += svgText((left + W) / 2, H - 4, "scale α (multiples of the standard scale)");
    svg += `<text x="10" y="${(H - bottom) / 2}" text-anchor="middle" transform="rotate(-90 10 ${(H - bottom) / 2})">E[α(1 − Σp²)]</text>`;
    caption.textContent = cosine ? cosineCaption(s, n, curve, showLimit) : gaussianCaption(n, curve);
    const labelled = 'role="img" aria-labelledby="calc-gradient-caption"';
    figure.insertAdjacentHTML("afterbegin", `<svg viewBox="0 0 ${W} ${H}" ${labelled}>${svg}</svg>`);
    return figure;
  }

  // A smooth path through points (Catmull-Rom, as cubic Bezier segments): the cosine curve has 41.
  function smoothPath(p) {
    let d = `M${p[0].join(",")}`;
    for (let i = 0; i + 1 < p.length; i++) {
      const [a, b, c, e] = [p[Math.max(i - 1, 0)], p[i], p[i + 1], p[Math.min(i + 2, p.length - 1)]];
      const c1 = [b[0] + (c[0] - a[0]) / 6, b[1] + (c[1] - a[1]) / 6].map((v) => v.toFixed(1));
      const c2 = [c[0] - (e[0] - b[0]) / 6, c[1] - (e[1] - b[1]) / 6].map((v) => v.toFixed(1));
      d += ` C${c1.join(",")} ${c2.join(",")} ${c.join(",")}`;
    }
    return d;
  }

  function gaussianCaption(n, { limit, marks }) {
    const [[star, atStar], [typical, atTypical]] = marks;
    const pct = (v) => share(v, limit);
    return (
      `The exact expected gradient E[α(1 − Σp²)] of softmax over n = ${fmtG(n)} Gaussian scores against ` +
      `the scale α (solid), and its limit ${fmtG(limit, 4)} as α grows (dashed): it rises toward the limit ` +
      `and has no maximum on this range.  The source's α* = ${fmtG(star, 4)} reaches ${pct(atStar)} of ` +
      `the limit; √(2 ln n) = ${fmtG(typical, 4)}, the freezing scale, near which a typical row's gradient ` +
      `(geometric-mean criterion) is largest, reaches ${pct(atTypical)}.`
    );
  }

  // v as a percentage of the limit: to 0.1 %, or below 0.1 % to two significant digits (not "0.0%")
  const share = (v, limit) => {
    const percent = (100 * v) / limit;
    return `${percent >= 0.05 ? fmtF(percent, 1) : fmtG(percent, 2)}%`;
  };

  // Says what the cosine curve shows, from its numbers: where the limit is,
  // and what the marks reach.
  function cosineCaption(s, n, { alphas, limit, marks, cap }, showLimit) {
    const [[star, atStar], [typical, atTypical]] = marks;
    let text =
      `The exact expected gradient E[α(1 − Σp²)] of softmax over n = ${fmtG(n)} cosine scores at ` +
      `d = ${fmtG(s.d)} against the scale α on the unit-variance score √d·cos (solid), up to ` +
      `${fmtG(alphas[alphas.length - 1], 4)}` +
      (alphas[alphas.length - 1] < cap * (1 - 1e-12)
        ? ""
        : `, the exact expectation's cap (${fmtG(COSINE_CAP)} on the cosine)`);
    if (showLimit) text += `, and its limit ${fmtG(limit, 4)} as α grows (dashed)`;
    else if (Number.isFinite(limit)) text += `; its limit as α grows, ${fmtG(limit, 4)}, is above this range`;
    else if (limit === null) {
      text +=
        `; its limit as α grows is not computed to 4 digits below d = ${COSINE_LIMIT_FROM_D}, this close ` +
        "to d = 2, where it is infinite";
    } else {
      text +=
        "; at d = 2 it has no finite limit as α grows (the gap between the two largest cosines has " +
        "infinite density at 0)";
    }
    // it rises: the package's expected_gradient at these 41 scales rises from each to the next by at
    // least 2.4e-5 relative for n from 2 to 1e9 and d from 2 to 1e6 (a grid of 96), far above the
    // page's error; no setting of that grid gives a maximum inside the range (a sampled finding, not
    // a proof; the caption test checks the rise at every setting it draws)
    text += ": it rises over this range.";
    const reach = (v) => (Number.isFinite(limit) ? `reaches ${share(v, limit)} of the limit` : `gives ${fmtG(v, 4)}`);
    text +=
      atStar === null
        ? `  The source's α* = ${fmtG(star, 4)} is beyond this range.`
        : `  The source's α* = ${fmtG(star, 4)} ${reach(atStar)}.`;
    if (atTypical !== null) {
      text +=
        `  √(2 ln n) = ${fmtG(typical, 4)}, the Gaussian freezing scale carried over to cosines, ` +
        `${reach(atTypical)}.`;
    }
    return text;
  }

  // Figure (b) in the form: for Gaussian scores at once, from the table;
  // for cosines from the curves already computed, or else a line saying it
  // is being computed while the curve's 43 quadratures run a few at a time
  // (15 ms slices) between the reader's keystrokes, then drawn in its place.
  // A new n or d drops the job under way.
  const curves = new Map();
  let job = null;
  function gradientFigure(form, s, table) {
    const n = roundHalfEven(s.n);
    if (s.scores !== "cosine" || n > table.gradient.nMax) return plotGradient(s, table);
    const key = `${n} ${s.d}`;
    if (curves.has(key)) return plotGradient(s, table, curves.get(key));
    if (job?.key !== key) {
      if (job) clearTimeout(job.timer);
      const mine = { key, steps: cosineCurveSteps(n, s.d, table) };
      const run = () => {
        if (job !== mine) return;
        const start = performance.now();
        let step;
        do step = mine.steps.next();
        while (!step.done && performance.now() - start < 15);
        if (!step.done) {
          mine.timer = setTimeout(run, 0);
          return;
        }
        job = null;
        if (curves.size > 32) curves.clear();
        curves.set(key, step.value);
        const waiting = form.querySelector(`.calc-gradient[data-key="${key}"]`);
        if (waiting) {
          waiting.replaceWith(plotGradient(s, table, step.value));
          form.dispatchEvent(new CustomEvent("calc-figure-drawn")); // for the status line, once
        }
      };
      job = mine;
      mine.timer = setTimeout(run, 0);
    }
    const caption = el(
      "figcaption",
      `Computing the exact expected gradient for n = ${fmtG(n)} cosine scores at d = ${fmtG(s.d)} …`,
      { id: "calc-gradient-caption" },
    );
    return el("figure", [caption], { class: "calc-figure calc-gradient", "data-key": key });
  }

  // A row's name, broken only at its spaces on a narrow screen: "sqrt((1-n^-2/d)/(1-L^-2/d))" must not
  // break at its minus signs, where "1-" would read as a hyphen.
  function nameWords(name) {
    const parts = [];
    name.split(" ").forEach((word, k) => {
      if (k > 0) parts.push(" ");
      parts.push(el("span", word, { class: "calc-word" }));
    });
    return parts;
  }

  // The message sits under the field it is about, across the form's grid, where a reader typing on a
  // phone sees it (under all the fields it was off screen); with no error it goes back under the fields.
  // Only the message moves: the field being typed in keeps its focus.
  function placeMessage(form, message, field) {
    const input = field ? form.elements[field] : null;
    if (input) {
      if (message.previousElementSibling !== input) input.after(message);
    } else if (message.previousElementSibling !== form.querySelector(".calc-fields")) {
      form.querySelector(".calc-fields").after(message);
    }
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
    const flags = { causal: form.elements.causal.checked, contrastive: form.elements.contrastive.checked };
    const result = recommend({ ...fields, scores: value("scores"), ...flags }, table);
    // bad input: the last good table stays, dimmed, with the reason above it
    message.textContent = result.error || "";
    out.classList.toggle("calc-stale", Boolean(result.error));
    placeMessage(form, message, result.field);
    // the field the message is about, for screen readers (WCAG 3.3.1)
    for (const input of form.querySelectorAll("input")) {
      // a field's own note (what a measurement means) stays part of its description
      input.dataset.note ??= input.getAttribute("aria-describedby") ?? "";
      const note = input.dataset.note;
      if (input.name === result.field) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", note ? `${message.id} ${note}` : message.id);
      } else {
        input.removeAttribute("aria-invalid");
        if (note) input.setAttribute("aria-describedby", note);
        else input.removeAttribute("aria-describedby");
      }
    }
    if (result.error) return result.error;
    // the table as the command line prints it (attnscale.practice.calculator.Recommendation.table): the same
    // title, lines, columns, group headings, rows and digits
    const W = result.words;
    const printed = cells(result, table);
    const body = [];
    let group = null;
    // the words on how to use the marked row, under it (attnscale.practice.calculator.Recommendation.table)
    const how = () =>
      el("tr", [el("td", [el("div", result.how, { class: "calc-wrap-text" })], { colspan: "4" })], {
        class: "calc-how calc-recommended",
      });
    result.entries.forEach((e, i) => {
      if (e.group !== group) {
        if (group === "answer" && result.how) body.push(how());
        group = e.group;
        body.push(el("tr", [el("th", [el("span", W[`group ${group}`], { class: "calc-wrap-text" })], { colspan: "4", scope: "colgroup" })], { class: "calc-group" }));
      }
      body.push(
        el(
          "tr",
          [
            el("th", nameWords(e.criterion), { scope: "row" }),
            ...(e.cli
              ? [el("td", "see the CLI", { colspan: "2" })]
              : printed[i].map((text) => el("td", text, { class: "calc-number" }))),
            el("td", e.source),
          ],
          e.group === "answer" ? { class: "calc-recommended" } : {},
        ),
      );
    });
    if (group === "answer" && result.how) body.push(how());
    const head = el("tr", W.columns.map((h) => el("th", h, { scope: "col" })));
    const caption = el("caption", [el("span", W.title, { class: "calc-wrap-text" })]);
    const tbl = el("table", [caption, el("thead", [head]), el("tbody", body)], { class: "calc-table" });
    const legend = [W.first, W.second].map((line) => el("p", line, { class: "calc-legend" }));
    const notes = el("ul", result.notes.map((note) => el("li", note)), { class: "calc-notes" });
    const figures = [plot(result.setting, table), gradientFigure(form, result.setting, table)];
    // the table scrolls in a box of its own: its shade marks the table, not the words around it
    const box = el("div", [tbl], { class: "calc-table-box" });
    out.replaceChildren(...legend, box, el("p", "Notes:"), notes, ...figures);
    showScrollHint(form);
    return `${result.entries.length} rows updated`;
  }

  // On a narrow screen the table scrolls inside its box; nothing else says so
  // (phones hide scroll bars), so a line above it does, only while it is wider.
  function showScrollHint(form) {
    const box = form.querySelector(".calc-table-box");
    const hint = form.querySelector(".calc-scroll-hint");
    if (!box) return;
    const scrolls = box.scrollWidth > box.clientWidth + 1; // +1: subpixel widths
    if (hint) hint.hidden = !scrolls;
    // a keyboard reader scrolls it with the arrow keys: a Tab stop while it scrolls
    if (scrolls) box.setAttribute("tabindex", "0");
    else box.removeAttribute("tabindex");
    // and its edges shaded where it hides columns, as every box that scrolls sideways (reading.js)
    if (window.attnscaleMarkScrollSides) window.attnscaleMarkScrollSides(box);
  }

  // Screen readers: the table is redrawn on every keystroke, and intermediate
  // input ("1e") is briefly wrong, so the only live region is a short polite
  // status (the row count, or the message; and, once, that figure (b) for cosines is drawn) set once
  // typing pauses.  Cleared at
  // once, so that the same words set again are a change and are read again.
  const ANNOUNCE_DELAY_MS = 500;
  // The status line, set once typing pauses; also(text) adds to what is waiting to be said (figure (b)
  // drawn while the rows' summary waits), or says text alone.
  function announcer(form) {
    const status = form.querySelector(".calc-announce");
    let timer;
    let pending = null;
    const announce = (summary) => {
      clearTimeout(timer);
      status.textContent = "";
      pending = summary;
      timer = setTimeout(() => {
        status.textContent = pending;
        pending = null;
      }, ANNOUNCE_DELAY_MS);
    };
    announce.also = (text) => announce(pending ? `${pending} ${text}` : text);
    return announce;
  }
  const FIGURE_DRAWN = "Figure (b), the expected gradient, drawn.";

  function attach() {
    const form = document.getElementById("attnscale-calculator");
    if (!form) return; // every page loads this file; only the recipes page has the form
    form.hidden = false; // hidden in the page source: without this script it cannot work
    const table = window.ATTNSCALE_CALCULATOR_TABLE;
    if (!table) {
      form.querySelector(".calc-message").textContent = "The calculator's table did not load; use the CLI.";
      return;
    }
    // what the measurements mean, in the command line's words (attnscale.practice.calculator.FIELDS)
    for (const [name, words] of Object.entries(table.words.fields)) {
      const note = form.querySelector(`.calc-field-note[data-field="${name}"]`);
      if (note) note.textContent = words;
    }
    form.addEventListener("submit", (event) => event.preventDefault()); // Enter must not reload
    const announce = announcer(form);
    let typed = false; // a figure drawn after the page loads is not announced either
    const update = () => {
      typed = true;
      announce(render(form, table));
    };
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    form.addEventListener("calc-figure-drawn", () => typed && announce.also(FIGURE_DRAWN));
    render(form, table); // on load nothing is announced: the reader has not typed
    window.addEventListener("resize", () => showScrollHint(form)); // a phone turned, a window resized
  }

  window.AttnScaleCalculator = {
    recommend,
    cells,
    fmtG,
    fmtE,
    fmtF,
    gaussianAlphaStar,
    causalGaussian,
    causalCosine,
    cosineUnitStar,
    cosineAlphaStar,
    gradientLimit,
    expectedGradient,
    expectedEntropy,
    solveEntropy,
    normalExpectation,
    normalEntropy,
    solveNormalEntropy,
    normalTopScore,
    erfc,
    cosineEntropy,
    cosineExpectation,
    cosineGradientLimit,
    cosineGradientCurve,
    solveCosineEntropy,
    plot,
    plotGradient,
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", attach);
  else attach();
})();
