r"""Reading the retrieval sweep: accuracy with two-way intervals, oracle factors, length laws.

Chapter *Retrieval past the training length*.  The sweep
(``experiments/retrieval.py``) scores every seed's model on the same test
windows, so each number the chapter reports is the mean of a seeds-by-windows
table with both factors random (:func:`attnscale.crossed_interval`).  The
*oracle factor* :math:`\lambda^*(n)` of a trained model at length :math:`n`
is the factor on its logits that minimizes the held-out loss; the sweep
evaluates a grid of factors, and :func:`oracle_factor` refines the grid's
best point by a parabola in :math:`\log\lambda`.  :func:`fit_length_law`
fits the laws that the length rules assume to the oracle factors.
:func:`carry_runs` and :func:`carry_oracle_fit` read the second sweep
(``experiments/carry.py``): the same task in other rotary regimes, against
the extensions practitioners use, after a short fine-tune, and at other
training lengths and widths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..support import _validate
from ..support.intervals import crossed_interval, seed_interval

__all__ = [
    "LENGTH_LAWS",
    "LawFit",
    "arm_table",
    "carry_oracle_fit",
    "carry_runs",
    "fit_length_law",
    "needle_runs",
    "oracle_factor",
    "oracle_table",
    "paired_table",
    "pool_results",
    "select_runs",
    "window_difference",
]

# Settings that may differ between results files of one experiment: which
# seeds a call trained, and nothing else.
_PER_CALL_SETTINGS = frozenset({"seeds"})


def pool_results(*results):
    """The runs of several results files of the retrieval sweep, as one list.

    The sweep (``experiments/retrieval.py``) writes one file per call; a
    later call may train further seeds or arms.  Their runs can be read
    together only if every setting that decides a run's numbers is the same
    (the model, the steps, the lengths, the test windows, the data seeds);
    only the list of seeds may differ.  A run (task, positions, rule, seed)
    present in two files is refused rather than counted twice.

    Parameters
    ----------
    *results : dict
        Results files as read by :func:`attnscale.models.lm_train.load_results`, each with
        ``"provenance"``, ``"settings"`` and ``"runs"``.

    Returns
    -------
    runs : list of dict
        Every run of every file, in the files' order.
    provenances : list of dict
        Each file's provenance (its command, commit, times), in order.

    Raises
    ------
    ValueError
        If no file is given, two files' settings differ beyond their seeds,
        or one run appears twice.
    """
    if not results:
        raise ValueError("results: give at least one results file")
    for i, result in enumerate(results):
        if not isinstance(result, dict) or not {"provenance", "settings", "runs"} <= result.keys():
            raise ValueError(f"results[{i}] is not a results file (provenance, settings, runs)")
    first = {k: v for k, v in results[0]["settings"].items() if k not in _PER_CALL_SETTINGS}
    runs, seen = [], set()
    for i, result in enumerate(results):
        settings = {k: v for k, v in result["settings"].items() if k not in _PER_CALL_SETTINGS}
        differ = sorted(k for k in first.keys() | settings.keys() if first.get(k) != settings.get(k))
        if differ:
            raise ValueError(f"results[{i}] was made with other settings than results[0]: {differ}")
        for run in result["runs"]:
            key = (run["task"], run["positions"], run["rule"], run["seed"])
            if key in seen:
                raise ValueError(f"results[{i}] repeats the run {key}")
            seen.add(key)
            runs.append(run)
    return runs, [result["provenance"] for result in results]


def select_runs(runs, task, positions, rule):
    """The runs of one arm, sorted by seed (the pairing of arms is by seed)."""
    chosen = [r for r in runs if r["task"] == task and r["positions"] == positions and r["rule"] == rule]
    if not chosen:
        raise ValueError(f"no runs of task {task!r} with positions {positions!r} and rule {rule!r}")
    return sorted(chosen, key=lambda r: r["seed"])


def _table(runs, arm, length, field):
    rows = [r["eval"][arm][str(int(length))][field] for r in runs]
    if len({len(row) for row in rows}) != 1:
        raise ValueError(f"the runs of arm {arm!r} were scored on different windows at {length}")
    return np.asarray(rows, dtype=float)


def arm_table(runs, arm, lengths, field="acc_by_window", level=0.95):
    """Mean and two-way (seed x window) half-width of ``field`` for one arm at each length.

    Parameters
    ----------
    runs : list of dict
        One arm's runs (:func:`select_runs`), at least two seeds.
    arm : str
        An evaluation of the runs, e.g. ``"trained:plain"`` or ``"qwen_logn:ntk"``.
    lengths : sequence of int
    field : str, optional
        ``"acc_by_window"``, ``"loss_by_window"`` or ``"exact_by_window"``.
    level : float, optional

    Returns
    -------
    mean, half : numpy.ndarray
        One entry per length.
    """
    pairs = [crossed_interval(_table(runs, arm, n, field), level) for n in lengths]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def paired_table(runs_a, arm_a, runs_b, arm_b, lengths, field="acc_by_window", level=0.95):
    """Mean and two-way half-width of ``a - b`` at each length (arms paired by seed and window).

    As :func:`arm_table`, for the difference of two arms whose runs share
    seeds (the same initial weights and batches) and test windows.
    """
    seeds_a, seeds_b = [r["seed"] for r in runs_a], [r["seed"] for r in runs_b]
    if seeds_a != seeds_b:
        raise ValueError(f"the arms must be paired by seed, got seeds {seeds_a} and {seeds_b}")
    pairs = [
        crossed_interval(_table(runs_a, arm_a, n, field) - _table(runs_b, arm_b, n, field), level)
        for n in lengths
    ]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


#: The fields of a needle evaluation that are one number per test window.
_WINDOW_FIELDS = ("acc_by_window", "loss_by_window", "exact_by_window")


def needle_runs(runs, depths=None):
    """Needle runs with each evaluation's depths read as one table of windows.

    The sweep scores a needle model at each length on the same number of
    windows at each planted depth (``eval[arm][length][depth][field]``).
    This returns copies of the runs in the layout of the recall runs
    (``eval[arm][length][field]``), each field the windows of the chosen
    depths one after another, in the order given, so that
    :func:`arm_table` and :func:`paired_table` read them unchanged (the
    windows of every depth are the same for every seed).

    Parameters
    ----------
    runs : list of dict
        Runs of the needle task (``run["task"] == "needle"``).
    depths : sequence of str or None, optional
        The depths to keep, as the results file writes them (``"0.5"``);
        ``None`` keeps every depth, in the file's order.

    Returns
    -------
    list of dict
        The runs with only ``acc_by_window``, ``loss_by_window`` and
        ``exact_by_window`` in each evaluation.

    Raises
    ------
    ValueError
        If a run is not a needle run or lacks a requested depth.
    """
    out = []
    for run in runs:
        if run.get("task") != "needle":
            raise ValueError(
                f"needle_runs: run {run.get('task')!r}, seed {run.get('seed')} is not a needle run"
            )
        evaluations = {}
        for arm, by_length in run["eval"].items():
            for length, by_depth in by_length.items():
                chosen = list(by_depth) if depths is None else [str(d) for d in depths]
                missing = [d for d in chosen if d not in by_depth]
                if missing:
                    raise ValueError(f"needle_runs: no depth {missing} in {arm} at {length}")
                evaluations.setdefault(arm, {})[length] = {
                    field: [x for d in chosen for x in by_depth[d][field]] for field in _WINDOW_FIELDS
                }
        out.append({**run, "eval": evaluations})
    return out


def window_difference(run_a, arm_a, run_b, arm_b, length, field="acc_by_window", level=0.95):
    """One seed's ``a - b`` on the same test windows: mean and Student-t half-width over windows.

    The second seed-level check of a conclusion: a difference that the
    two-way interval (:func:`paired_table`) resolves over seeds should also
    hold on each seed alone, with only the windows random.

    Parameters
    ----------
    run_a, run_b : dict
        Two runs scored on the same windows (the same seed of two arms, or
        one run under two evaluations).
    arm_a, arm_b : str
        Their evaluations, e.g. ``"trained:plain"``.
    length : int
    field : str, optional
    level : float, optional

    Returns
    -------
    mean, half : float
    """
    a, b = (
        np.asarray(r["eval"][arm][str(int(length))][field], dtype=float)
        for r, arm in ((run_a, arm_a), (run_b, arm_b))
    )
    if a.shape != b.shape:
        raise ValueError(f"the two runs were scored on different windows at {length}")
    return seed_interval(a - b, level=level)


def oracle_factor(factors, losses):
    r"""The factor that minimizes a loss sampled on a grid, refined by a parabola in :math:`\log\lambda`.

    With the grid's best point :math:`\lambda_k` and its neighbours on a
    grid uniform in :math:`u = \log\lambda` (spacing :math:`h`), the
    parabola through the three points has its minimum at

    .. math:: u^* = u_k + \frac{h}{2}\,\frac{\ell_{k-1} - \ell_{k+1}}{\ell_{k-1} - 2\ell_k + \ell_{k+1}} .

    At an end of the grid (or where the three points are not convex) the
    grid's best point is returned as it is.

    Parameters
    ----------
    factors : array_like
        Increasing, positive, uniform in :math:`\log`; at least three.
    losses : array_like
        Finite, the same length.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> grid = 2.0 ** np.linspace(-1, 2, 13)
    >>> round(oracle_factor(grid, (np.log(grid) - np.log(1.7)) ** 2), 6)
    1.7
    """
    factors = _validate.at_least(factors, "factors", np.finfo(float).tiny)
    losses = _validate.real_array(losses, "losses")
    if factors.ndim != 1 or factors.size < 3 or losses.shape != factors.shape:
        raise ValueError("factors and losses must be 1-d arrays of the same length, at least 3")
    u = np.log(factors)
    steps = np.diff(u)
    if np.any(steps <= 0) or not np.allclose(steps, steps[0], rtol=1e-3):
        raise ValueError("factors must increase uniformly in log")
    k = int(np.argmin(losses))
    if k in (0, factors.size - 1):
        return float(factors[k])
    left, mid, right = losses[k - 1], losses[k], losses[k + 1]
    curvature = left - 2 * mid + right
    if curvature <= 0:
        return float(factors[k])
    return float(np.exp(u[k] + 0.5 * steps[0] * (left - right) / curvature))


def oracle_table(runs, lengths, key, criterion="loss"):
    """The oracle factor of every run (rows) at every length (columns), from the sweep's factor grid.

    Parameters
    ----------
    runs : list of dict
        Runs with an ``"oracle"`` record (the sweep's O models).
    lengths : sequence of int
        Test lengths past :math:`L`.
    key : str
        Which factors were tried: ``"all:plain"``, ``"head:ntk"``, ...
        (every head or the retrieval head alone; plain or NTK-aware RoPE).
    criterion : str, optional
        ``"loss"`` (minimize the held-out loss) or ``"accuracy"``
        (maximize the held-out accuracy); either refined by
        :func:`oracle_factor`.

    Returns
    -------
    numpy.ndarray
        ``(len(runs), len(lengths))``.
    """
    if criterion not in ("loss", "accuracy"):
        raise ValueError(f"criterion must be 'loss' or 'accuracy', got {criterion!r}")
    field, sign = ("loss", 1.0) if criterion == "loss" else ("acc", -1.0)
    table = []
    for run in runs:
        row = []
        for n in lengths:
            curve = run["oracle"][str(int(n))][key]
            row.append(oracle_factor(curve["factors"], sign * np.asarray(curve[field], dtype=float)))
        table.append(row)
    return np.array(table)


#: The laws the length rules assume, each with one parameter c:
#: lambda(n) = law(c, log(n / L)).  The three that grow are 1 at n = L; the
#: constant is c at every length (a fixed factor, the alternative to growth).
LENGTH_LAWS = {
    "constant": lambda c, x: np.full_like(x, c, dtype=float),
    "log n": lambda c, x: 1.0 + c * x,
    "sqrt(log n)": lambda c, x: np.sqrt(np.maximum(1.0 + c * x, 0.0)),
    "power of n": lambda c, x: np.exp(c * x),
}


@dataclass(frozen=True)
class LawFit:
    """A least-squares fit of one length law to oracle factors.

    Attributes
    ----------
    law : str
        A key of :data:`LENGTH_LAWS`.
    parameter : float
        The fitted :math:`c`.
    rms : float
        Root-mean-square residual of the fit (in factor units).
    """

    law: str
    parameter: float
    rms: float


def fit_length_law(lengths, factors, train_length, law):
    """Fit one of :data:`LENGTH_LAWS` to oracle factors measured at ``lengths``.

    Parameters
    ----------
    lengths : array_like
        Window lengths :math:`n > L` (any shape; broadcast with ``factors``).
    factors : array_like
        The oracle factors there (e.g. one row per seed).
    train_length : int
        :math:`L`.
    law : str
        ``"constant"``, ``"log n"``, ``"sqrt(log n)"`` or ``"power of n"``.

    Returns
    -------
    LawFit

    Examples
    --------
    >>> import numpy as np
    >>> n = np.array([128, 256, 512, 1024])
    >>> fit = fit_length_law(n, np.log(n) / np.log(64), 64, "log n")
    >>> round(float(fit.parameter * np.log(64)), 6), fit.rms < 1e-9
    (1.0, True)
    """
    from scipy.optimize import minimize_scalar

    if law not in LENGTH_LAWS:
        raise ValueError(f"law must be one of {tuple(LENGTH_LAWS)}, got {law!r}")
    lengths = _validate.at_least(lengths, "lengths", 1.0)
    factors = _validate.at_least(factors, "factors", np.finfo(float).tiny)
    train_length = _validate.count(train_length, "train_length")
    x, y = np.broadcast_arrays(np.log(lengths / train_length), factors)
    x, y = x.ravel(), y.ravel()
    curve = LENGTH_LAWS[law]
    if law == "constant":
        c = float(y.mean())
    elif law == "log n":
        c = float(np.sum(x * (y - 1.0)) / np.sum(x * x))
    else:
        result = minimize_scalar(
            lambda c: np.sum((curve(c, x) - y) ** 2), bounds=(-5.0, 5.0), method="bounded"
        )
        c = float(result.x)
    return LawFit(law, c, float(np.sqrt(np.mean((curve(c, x) - y) ** 2))))


def carry_runs(result):
    """The runs of a results file of ``experiments/carry.py``, in the shape :func:`arm_table` reads.

    Each run's evaluations become ``run["eval"]``, keyed ``"<method>"`` for
    a method applied at test and ``"ft_<method>"`` after the fine-tune, by
    the test length in tokens (the stretch times the run's training length).

    Parameters
    ----------
    result : dict
        A carry results file (``provenance``, ``settings``, ``runs``).

    Returns
    -------
    list of dict
        The runs, sorted by their arm and seed, each with ``task``
        (``"recall"``, or ``"needle"``: read it through ``needle_runs``),
        ``positions``, ``rule``, ``seed``, ``regime``, ``train_length``,
        ``width`` (or None) and ``eval``.
    """
    if not isinstance(result, dict) or not {"provenance", "settings", "runs"} <= result.keys():
        raise ValueError("result is not a results file (provenance, settings, runs)")
    runs = []
    for record in result["runs"]:
        length = int(record["train_length"])

        def by_length(evaluations, length=length):
            return {str(int(s) * length): value for s, value in evaluations.items()}

        evaluations = {method: by_length(v) for method, v in record.get("test", {}).items()}
        for method, tuned in record.get("finetuned", {}).items():
            evaluations[f"ft_{method}"] = by_length(tuned["eval"])
        runs.append(
            {
                "task": record.get("task", "recall"),
                "positions": record["positions"],
                "rule": record["rule"],
                "seed": record["seed"],
                "regime": record["regime"],
                "train_length": length,
                "width": record.get("width"),
                "eval": evaluations,
                "record": record,
            }
        )
    return sorted(runs, key=lambda r: (r["regime"], r["positions"], r["rule"], r["width"] or 0, r["seed"]))


def carry_oracle_fit(runs, key, scope, stretch, level=0.9, criterion="loss"):
    """The oracle factor of a carry arm at ``stretch`` * L, with a two-way (seed x window) interval.

    Reads the per-window validation losses (or accuracies) the carry sweep
    stores on its factor grid and passes them to
    :func:`attnscale.support.factor_fit.fit_length_factor` (minimum of the mean curve refined by a
    parabola in the log factor; seeds and windows resampled independently).

    Parameters
    ----------
    runs : list of dict
        One arm's runs (:func:`carry_runs`), scored on the same windows.
    key : str
        The record's oracle: ``"oracle_ntk"``, ``"oracle_yarn"`` or ``"oracle"``.
    scope : str
        ``"all"``, ``"beyond"`` or ``"head:<layer>.<head>"``.
    stretch : int
    level : float, optional
    criterion : str, optional
        ``"loss"`` (minimized) or ``"acc"`` (maximized).

    Returns
    -------
    attnscale.LengthFactorFit
    """
    from ..support.factor_fit import fit_length_factor

    if criterion not in ("loss", "acc"):
        raise ValueError(f"criterion must be 'loss' or 'acc', got {criterion!r}")
    oracles = [r["record"][key] for r in runs]
    grid = oracles[0]["factors"]
    curves = np.asarray(
        [o["curves"][scope][str(int(stretch))][f"{criterion}_by_window"] for o in oracles], dtype=float
    )  # (seeds, factors, windows)
    sign = 1.0 if criterion == "loss" else -1.0
    index = {float(f): k for k, f in enumerate(grid)}
    return fit_length_factor(lambda f: sign * curves[:, index[f], :], grid, level=level)
