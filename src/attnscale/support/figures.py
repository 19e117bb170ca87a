"""Figures and tables whose drawing is plumbing: a chapter computes the numbers, one call here draws them.

Each function takes the numbers a chapter computed (nothing is computed
here) and returns a matplotlib ``Figure``, drawn in the book's
style (``attnscale.use_book_style``), which the chapter glues and closes,
or a captioned table's MyST text, which the chapter displays.  So a
visible cell reads as the mathematics and one line that draws it.
Matplotlib is imported lazily: the numerical package does not depend on it.
"""

from __future__ import annotations

import numpy as np

from .plotting import LINESTYLES, MARKERS

__all__ = [
    "best_scale_table",
    "depth_moments_figure",
    "entropy_rules_figure",
    "frobenius_ratio_table",
    "no_scale_figure",
    "share_percent",
    "tuned_rate_figure",
]


def _curve(values, name: str, size: int) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {array.shape}")
    return array


def no_scale_figure(dims, largest, median, exact_mean):
    r"""Attention rows with and without :math:`1/\sqrt d`, against the head dimension.

    Chapter *Why divide by √d*.  Top: the mean largest weight of a row, each
    curve named where it ends.  Bottom: the gradient objective of the median
    row with its 95% band, and the exact mean over rows (dotted), on a log
    scale; a legend under the axes names the line styles.  Both against
    :math:`d` on a shared base-2 log axis.  Drawn 4.2 in wide, one panel
    above the other, so that its smallest glyph (a tick exponent, 0.8 of
    10.5 pt) is at least 9 CSS px on a phone, where the figure is shown 342
    px wide (``attnscale.support.plotting``).

    Parameters
    ----------
    dims : array_like
        The head dimensions, shape ``(D,)``.
    largest : dict
        Curve label (a TeX string) -> mean largest weight, shape ``(D,)``; one
        entry per arm, drawn in the palette's order with markers ``o``, ``s``, ...
    median : dict
        The same labels -> ``(median, low, high)``, each shape ``(D,)``.
    exact_mean : dict
        The same labels -> the exact mean over rows, shape ``(D,)``.

    Returns
    -------
    matplotlib.figure.Figure

    See Also
    --------
    attnscale.median_interval : the band of the median row.
    """
    import matplotlib.pyplot as plt

    dims = np.asarray(dims)
    if dims.ndim != 1 or dims.size == 0:
        raise ValueError(f"dims must be one non-empty axis, got shape {dims.shape}")
    labels = list(largest)
    if not labels or list(median) != labels or list(exact_mean) != labels:
        raise ValueError("largest, median and exact_mean must name the same arms in the same order")
    fig, axes = plt.subplots(2, 1, figsize=(4.2, 6.2), sharex=True)
    for k, label in enumerate(labels):
        maxp = _curve(largest[label], "largest", dims.size)
        mid, low, high = (_curve(v, "median", dims.size) for v in median[label])
        (line,) = axes[0].plot(dims, maxp, marker=MARKERS[k], ms=4, label=label)
        axes[1].plot(dims, mid, marker=MARKERS[k], ms=4, color=line.get_color())
        axes[1].fill_between(dims, low, high, color=line.get_color(), alpha=0.25, lw=0)
        # each curve named where it ends (no legend to decode; text in black,
        # which reads better than the orange)
        axes[0].annotate(
            label, (dims[-1], maxp[-1]), xytext=(0, 6), textcoords="offset points", ha="right", va="bottom"
        )
    for k, label in enumerate(labels):
        axes[1].plot(dims, _curve(exact_mean[label], "exact_mean", dims.size), ":", color=f"C{k}")
    axes[0].set_ylabel("mean largest weight")
    axes[1].set_ylabel(r"gradient objective w.r.t. $s$")
    axes[1].set_yscale("log")
    axes[1].set_xscale("log", base=2)
    axes[1].set_xlabel("head dimension $d$")
    # the colours are named in the top panel; the legend, under the axes,
    # names the bottom panel's line styles
    axes[1].plot([], [], "-", color="0.3", label="median row, 95% band")
    axes[1].plot([], [], ":", color="0.3", label="mean (exact)")
    fig.legend(*axes[1].get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False)
    return fig


def entropy_rules_figure(lengths, exact, sampled, probe, titles, train_length):
    r"""Expected entropy against the length under several scale rules, one panel per regime.

    Chapter *Entropy invariance*.  The panels stacked, sharing the length
    axis (base-2 log), so the figure stays legible on a phone (4.2 in wide,
    text at the book's sizes).  In each panel, one line per rule (the exact
    :math:`\mathbb E\,H`) and, in the same colour, the Monte Carlo means with
    two standard errors at the probed lengths, with the rule's marker
    (``attnscale.support.plotting.MARKERS``); a grey vertical line at the training
    length.  One legend, under the panels, names the rules by colour and
    marker.

    Parameters
    ----------
    lengths : array_like
        Shape ``(N,)``.
    exact : dict
        ``(regime, rule)`` -> exact expected entropy, shape ``(N,)``; the
        rules in the order of the legend, the same rules in every regime.
    sampled : dict
        The same keys -> ``(mean, standard_error)`` at ``lengths[probe]``.
    probe : array_like
        Boolean mask or indices of the sampled lengths.
    titles : dict
        Regime -> panel title, in the panels' order (top to bottom).
    train_length : float
        Where the rules agree (the grey line).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    lengths = np.asarray(lengths, dtype=float)
    probed = lengths[probe]
    rules = list(dict.fromkeys(rule for _, rule in exact))
    if set(exact) != {(k, r) for k in titles for r in rules} or set(sampled) != set(exact):
        raise ValueError("exact and sampled must hold every (regime, rule) pair of the regimes in titles")
    height = 0.6 + 2.9 * len(titles) + 0.3 * ((len(rules) + 1) // 2)
    fig, axes = plt.subplots(len(titles), 1, figsize=(4.2, height), sharex=True, squeeze=False)
    for ax, regime in zip(axes[:, 0], titles, strict=True):
        for i, rule in enumerate(rules):
            curve = _curve(exact[(regime, rule)], "exact", lengths.size)
            ax.plot(lengths, curve, lw=1.6, color=f"C{i}", ls=LINESTYLES[i], label=rule)
            mean, error = sampled[(regime, rule)]
            ax.errorbar(probed, mean, yerr=2 * np.asarray(error), fmt=MARKERS[i], ms=4, color=f"C{i}")
        ax.set_xscale("log", base=2)
        ax.set_title(titles[regime])
        ax.set_ylabel(r"expected entropy $\mathbb{E}\,H$ (nats)")
        ax.axvline(train_length, color="0.6", lw=0.8)
    axes[-1, 0].set_xlabel("length $n$")
    # the legend's entry for a rule: its colour, its line and its points' marker
    handles = [
        Line2D([], [], color=f"C{i}", lw=1.6, ls=LINESTYLES[i], marker=MARKERS[i], ms=4)
        for i in range(len(rules))
    ]
    fig.legend(handles, rules, loc="outside lower center", ncols=2, frameon=False)
    return fig


#: One marker per architecture of depth_moments_figure: the palette's seven,
#: then two more for the lines whose colour comes round again.
_DEPTH_MARKERS = (*MARKERS, "*", "h")


def depth_moments_figure(layers, forward, backward, dashed):
    r"""Mean squares of activations and of gradients, layer by layer, in deep random networks.

    Chapter *Initialization*.  Top: the mean square of the activations;
    bottom: that of the back-propagated gradient relative to the output's.
    One line per architecture in both panels, each with a marker of its own
    every few layers (the legend, under the axes, names them), on log axes
    clipped at :math:`10^{\pm 16}`, against the layer.  Drawn 4.4 in wide,
    so that its smallest glyph (a tick exponent, 0.8 of 10.5 pt) is at
    least 9 CSS px on a phone, where the figure is shown 342 px wide
    (``attnscale.support.plotting``).

    Parameters
    ----------
    layers : array_like
        The layer indices :math:`0, \dots, L`, shape ``(L + 1,)``.
    forward : dict
        Architecture name -> mean square of the activations, shape ``(L + 1,)``.
    backward : dict
        The same names -> mean square of the gradient relative to the
        output's, shape ``(L + 1,)``.
    dashed : collection of str
        The names drawn dashed (the plain networks); the others are solid.

    Returns
    -------
    matplotlib.figure.Figure

    See Also
    --------
    attnscale.layer_second_moments : the simulation that gives the mean squares.
    """
    import matplotlib.pyplot as plt

    layers = np.asarray(layers)
    if layers.ndim != 1 or layers.size == 0:
        raise ValueError(f"layers must be one non-empty axis, got shape {layers.shape}")
    if list(backward) != list(forward):
        raise ValueError("forward and backward must name the same architectures in the same order")
    fig, axes = plt.subplots(2, 1, figsize=(4.4, 7.0), sharex=True)
    # a marker every `step` layers, each line's a few layers on from the
    # last one's, so that the lines that lie on top of each other stay apart
    step = max(1, (layers.size - 1) // 5)
    for k, arch in enumerate(forward):
        look = {
            "ls": "--" if arch in dashed else "-",
            "lw": 1.5,
            "marker": _DEPTH_MARKERS[k % len(_DEPTH_MARKERS)],
            "ms": 4,
            "markevery": (k * step // len(forward), step),
            "label": arch,
        }
        axes[0].plot(layers, _curve(forward[arch], "forward", layers.size), **look)
        axes[1].plot(layers, _curve(backward[arch], "backward", layers.size), **look)
    axes[0].set_ylabel("mean square of activations")
    axes[1].set_ylabel("gradient mean square / output's")
    axes[1].set_xlabel("layer $l$")
    for ax in axes:
        ax.set_yscale("log")
        ax.set_ylim(1e-16, 1e16)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, frameon=False)
    return fig


def tuned_rate_figure(titles, tuned, single_rate, marked, colors, steps):
    r"""Loss against the scale multiplier with the learning rate tuned per scale, one panel per optimizer.

    Chapter *Training*.  In each panel, for each length: the loss at the
    rate each scale chose (points with 95% intervals), the loss at the
    sweep's single rate (dashed, the same colour), and open markers at
    :math:`\alpha^*(n)` (open triangle) and :math:`\sqrt{2\log n}` (cross); a
    grey vertical line at :math:`c = 1`.  Base-2 log multiplier axis, log
    loss axis shared by the panels.  Each length has its colour and a
    marker of its own (``o``, ``s``, ... in the order of ``colors``); the
    legend, under the axes, names the lengths, then the two line styles
    (tuned rate, one rate) and the two open markers.  Drawn 4.2 in wide, one panel
    above the other, so that its smallest glyph (a tick exponent, 0.8 of
    10.5 pt) is at least 9 CSS px on a phone, where the figure is shown 342
    px wide (``attnscale.support.plotting``).

    Parameters
    ----------
    titles : dict
        Optimizer -> panel title, in the panels' order (top to bottom).
    tuned : dict
        ``(optimizer, n)`` -> ``(multipliers, mean, half_width)``, each shape
        ``(C,)``: the mean loss at the chosen rates and its 95% half-width.
    single_rate : dict
        The same keys -> ``(multipliers, mean)``: the mean loss at one rate.
    marked : dict
        The same keys -> ``(i, j)``: indices into ``tuned``'s multipliers of
        :math:`\alpha^*(n)` and of :math:`\sqrt{2\log n}`.
    colors : dict
        Length ``n`` -> its colour, in the order of the markers.
    steps : int
        The training budget, named on the loss axis.

    Returns
    -------
    matplotlib.figure.Figure

    See Also
    --------
    attnscale.train_at_best_rate : the tuning that gives the losses.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    if set(single_rate) != set(tuned) or set(marked) != set(tuned) or {o for o, _ in tuned} != set(titles):
        raise ValueError("tuned, single_rate and marked must hold the same (optimizer, n) keys as titles")
    fig, axes = plt.subplots(len(titles), 1, figsize=(4.2, 6.6), sharex=True, sharey=True)
    marker = {n: MARKERS[k] for k, n in enumerate(colors)}
    axes = np.atleast_1d(axes)
    for ax, opt in zip(axes, titles, strict=True):
        for n in [n for o, n in tuned if o == opt]:
            mult, mean, half = tuned[(opt, n)]
            ax.errorbar(
                mult,
                mean,
                yerr=half,
                marker=marker[n],
                ms=3,
                capsize=2,
                color=colors[n],
            )
            fixed_mult, fixed_mean = single_rate[(opt, n)]
            ax.plot(fixed_mult, fixed_mean, "--", lw=1, color=colors[n])
            for i, style in zip(marked[(opt, n)], ("v", "x"), strict=True):
                ax.plot(mult[i], mean[i], style, ms=7, mfc="none", color=colors[n])
        ax.axvline(1.0, color="0.6", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel(f"loss after {steps} steps")
        ax.set_title(titles[opt])
    axes[-1].set_xlabel("multiplier $c$ (scale $c/\\sqrt{d}$)")
    # the lengths by colour and marker, then the line styles: a legend that
    # fits under axes 4.2 in wide (one entry per length and style would not)
    lengths = dict.fromkeys(n for _, n in tuned)
    handles = [Line2D([], [], color=colors[n], marker=marker[n], ms=3, label=f"n = {n}") for n in lengths]
    handles.append(Line2D([], [], color="0.3", label="rate tuned per scale"))
    handles.append(Line2D([], [], color="0.3", ls="--", lw=1, label="one rate"))
    for style, name in (("v", r"$\alpha^*(n)$"), ("x", r"$\sqrt{2\log n}$")):
        handles.append(Line2D([], [], color="0.3", ls="", marker=style, ms=7, mfc="none", label=name))
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    return fig


def share_percent(interval, below, rows):
    """A share of rows with its 95% interval over batches, in percent, as text.

    Chapter *The softmax Jacobian and the size of its gradient*.  With no row on the other side
    (``below == 0``) the interval says nothing; the text is then the
    one-sided 95% bound :math:`1 - 3/N` over all :math:`N` rows (the rule
    of three).

    Parameters
    ----------
    interval : tuple of float
        ``(mean, half_width)`` of the share over batches, as fractions.
    below : int
        The number of rows not counted in the share.
    rows : int
        All rows, :math:`N`.

    Returns
    -------
    str
        ``"87.5 ± 1.2"`` (via :func:`attnscale.format_uncertain`) or
        ``"at least 99.25"``; the chapter adds the percent sign.
    """
    from .formatting import format_uncertain

    if below == 0:
        return f"at least {100 * (1 - 3 / rows):.2f}"
    return format_uncertain(100 * interval[0], 100 * interval[1])


def best_scale_table(rows, exact):
    r"""The table of sampled rows' best scales: share above 1 and median, per number of keys.

    Chapter *The softmax Jacobian and the size of its gradient*.  One line per :math:`n`: the rows
    sampled, the share of rows whose best scale exceeds 1, the count of
    rows best at or below 1, the median best scale, and, where known, the
    exact share and median.

    Parameters
    ----------
    rows : dict
        ``n`` -> ``(batches, batch_rows, share, below, median)``: the number
        of batches and of rows in each, the share's text
        (:func:`share_percent`), the count of rows best at or below 1, and
        the median's ``(mean, half_width)`` over batches.
    exact : dict
        ``n`` -> ``(share, median)``, the closed forms (share as a fraction),
        for the :math:`n` that have them; the others read "none known".

    Returns
    -------
    str
        The captioned table (``tab-jacobian-best-scale``), for
        ``IPython.display.Markdown``.

    See Also
    --------
    attnscale.row_best_scale : every row's best scale.
    """
    from .formatting import captioned_table, format_uncertain

    if not set(exact) <= set(rows):
        raise ValueError("exact values given for a number of keys with no sampled rows")
    lines = []
    for n, (batches, batch_rows, share, below, median) in rows.items():
        known = f"{100 * exact[n][0]:.1f}% / {exact[n][1]:.3f}" if n in exact else "none known"
        lines.append(
            f"| {n} | {batches} × {batch_rows} | {share}% | {below} | {format_uncertain(*median)} | {known} |"
        )
    return captioned_table(
        "| n | rows | best scale > 1 (share) | rows with best scale ≤ 1 "
        "| median best scale | exact (n = 2): share / median |\n"
        "| --- | --- | --- | --- | --- | --- |\n" + "\n".join(lines),
        caption="Sampled rows of $n$ Gaussian scores: the share whose best "
        "scale exceeds 1 and the median best scale (means over five "
        "batches with 95% intervals), beside the exact values at $n "
        "= 2$.",
        name="tab-jacobian-best-scale",
    )


def frobenius_ratio_table(rows):
    r"""The table of the best scale under the L1 and the Frobenius norm of the Jacobian, per number of keys.

    Chapter *The softmax Jacobian and the size of its gradient*.  One line
    per :math:`n`: the median best scale under each norm and the median
    ratio, each with its 95% interval over batches, and the range of the
    ratio over all rows.

    Parameters
    ----------
    rows : dict
        ``n`` -> ``(l1, frobenius, ratio, ratio_range)``: three
        ``(mean, half_width)`` pairs and the ``(min, max)`` of the ratio.

    Returns
    -------
    str
        The captioned table (``tab-jacobian-frobenius``), for
        ``IPython.display.Markdown``.

    See Also
    --------
    attnscale.row_best_scale : every row's best scale, under either norm.
    """
    from .formatting import captioned_table, format_uncertain

    lines = []
    for n, (l1, frobenius, ratio, (low, high)) in rows.items():
        lines.append(
            f"| {n} | {format_uncertain(*l1)} | {format_uncertain(*frobenius)} | "
            f"{format_uncertain(*ratio)} | {low:.3f} to {high:.2f} |"
        )
    return captioned_table(
        "| n | best scale, L1 (median) | best scale, Frobenius (median) "
        "| ratio F / L1 (median) | ratio, range |\n| --- | --- | --- | --- "
        "| --- |\n" + "\n".join(lines),
        caption="The best scale of sampled rows under the L1 norm of the "
        "Jacobian and under its Frobenius norm (medians with 95% "
        "intervals), and the ratio of the two.",
        name="tab-jacobian-frobenius",
    )
