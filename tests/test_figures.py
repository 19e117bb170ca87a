"""The chapters' figure helpers (attnscale.support.figures): what they draw, what they refuse."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnscale import format_uncertain
from attnscale.support import figures

DIMS = 2 ** np.arange(1, 6)


def _arms():
    grow = np.linspace(0.5, 0.9, DIMS.size)
    flat = np.full(DIMS.size, 0.3)
    largest = {"A": grow, "B": flat}
    median = {"A": (grow / 10, grow / 20, grow / 5), "B": (flat / 10, flat / 20, flat / 5)}
    exact = {"A": grow / 8, "B": flat / 8}
    return largest, median, exact


def test_no_scale_figure_draws_every_arm_in_both_panels():
    largest, median, exact = _arms()
    fig = figures.no_scale_figure(DIMS, largest, median, exact)
    top, bottom = fig.axes
    # top: one line per arm, named at its end; bottom: median and exact mean per arm, two legend proxies
    assert [line.get_label() for line in top.lines] == ["A", "B"]
    assert [text.get_text() for text in top.texts] == ["A", "B"]
    np.testing.assert_array_equal(top.lines[1].get_ydata(), largest["B"])
    assert len(bottom.lines) == 2 + 2 + 2 and len(bottom.collections) == 2  # + the 95% bands
    np.testing.assert_array_equal(bottom.lines[2].get_ydata(), exact["A"])
    assert bottom.lines[2].get_linestyle() == ":" and bottom.get_yscale() == "log"
    # the legend of the line styles is the figure's, under the axes
    [legend] = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["median row, 95% band", "mean (exact)"]
    assert all(ax.get_xscale() == "log" for ax in fig.axes)
    assert top.get_shared_x_axes().joined(top, bottom)
    _assert_phone_width(fig)
    plt.close(fig)


def _assert_phone_width(fig):
    """Drawn at most 4.6 in wide: the book's 9.5-pt text is >= 9.8 CSS px shown 342 px wide (a phone)."""
    width = fig.get_figwidth()
    assert width <= 4.6, width
    assert 9.5 * 342 / (width * 72) >= 9.8


def test_no_scale_figure_refuses_mismatched_arms_and_shapes():
    largest, median, exact = _arms()
    with pytest.raises(ValueError, match="same arms"):
        figures.no_scale_figure(DIMS, largest, {"B": median["B"], "A": median["A"]}, exact)
    with pytest.raises(ValueError, match="largest must have shape"):
        figures.no_scale_figure(DIMS, {"A": largest["A"][:-1], "B": largest["B"]}, median, exact)
    with pytest.raises(ValueError, match="dims"):
        figures.no_scale_figure([], largest, median, exact)
    plt.close("all")


def test_entropy_rules_figure_one_panel_per_regime():
    lengths = 2.0 ** np.arange(6, 12)
    probe = np.isin(lengths, [64, 512])
    rules = ["fixed", "log n"]
    exact = {(k, r): np.log(lengths) * (i + 1) for k in ("high", "low") for i, r in enumerate(rules)}
    sampled = {key: (curve[probe], np.full(2, 0.1)) for key, curve in exact.items()}
    titles = {"high": "high entropy", "low": "low entropy"}
    fig = figures.entropy_rules_figure(lengths, exact, sampled, probe, titles, 512)
    assert [ax.get_title() for ax in fig.axes] == ["high entropy", "low entropy"]
    for ax, regime in zip(fig.axes, titles, strict=True):
        # a line per rule, the grey line at L; the sampled means as error bars in the rule's colour
        curves = {line.get_label(): line for line in ax.lines if line.get_label() in rules}
        np.testing.assert_array_equal(curves["fixed"].get_ydata(), exact[(regime, "fixed")])
        assert ax.lines[-1].get_xdata()[0] == 512 and len(ax.containers) == len(rules)
        assert ax.containers[1].lines[0].get_color() == curves["log n"].get_color() != "C0"
        np.testing.assert_array_equal(ax.containers[1].lines[0].get_ydata(), sampled[(regime, "log n")][0])
    # stacked, narrow enough for a phone; one legend under the panels, a marker per rule
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in fig.axes] == [(2, 1)] * 2
    assert fig.get_figwidth() <= 4.6 and fig.axes[0].get_shared_x_axes().joined(*fig.axes)
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == rules
    markers = [c.lines[0].get_marker() for c in fig.axes[1].containers]
    assert [h.get_marker() for h in legend.legend_handles] == markers == ["o", "s"]
    # and a line style of its own, so that the curves differ without colour
    styles = [line.get_linestyle() for line in fig.axes[1].lines if len(line.get_xdata()) > 2]
    assert [h.get_linestyle() for h in legend.legend_handles] == styles == ["-", "--"]
    with pytest.raises(ValueError, match="every"):
        figures.entropy_rules_figure(lengths, exact, {}, probe, titles, 512)
    plt.close("all")


def test_depth_moments_figure_one_line_per_architecture_in_both_panels():
    layers = np.arange(4)
    forward = {"plain": 2.0**layers, "res": 1.0 + layers}
    backward = {"plain": 0.5**layers, "res": np.ones(4)}
    fig = figures.depth_moments_figure(layers, forward, backward, dashed=["plain"])
    top, bottom = fig.axes
    for ax, moments in [(top, forward), (bottom, backward)]:
        assert [line.get_label() for line in ax.lines] == ["plain", "res"]
        assert [line.get_linestyle() for line in ax.lines] == ["--", "-"]
        np.testing.assert_array_equal(ax.lines[1].get_ydata(), moments["res"])
        assert ax.get_yscale() == "log" and ax.get_ylim() == (1e-16, 1e16)
        # a marker of its own per architecture, the same in both panels
        assert [line.get_marker() for line in ax.lines] == ["o", "s"]
    [legend] = fig.legends  # under the axes
    assert [t.get_text() for t in legend.get_texts()] == ["plain", "res"]
    _assert_phone_width(fig)
    with pytest.raises(ValueError, match="same architectures"):
        figures.depth_moments_figure(layers, forward, {"res": backward["res"]}, dashed=())
    with pytest.raises(ValueError, match="forward must have shape"):
        figures.depth_moments_figure(layers, {"plain": layers[:-1], "res": layers}, backward, dashed=())
    plt.close("all")


def test_tuned_rate_figure_one_panel_per_optimizer():
    mult = np.array([0.5, 1.0, 2.0, 4.0])
    keys = [(opt, n) for opt in ("sgd", "adam") for n in (64, 256)]
    tuned = {key: (mult, mult / 10 + k, np.full(4, 0.01)) for k, key in enumerate(keys)}
    single = {key: (mult, mult / 5) for key in keys}
    marked = {key: (1, 3) for key in keys}
    titles = {"sgd": "SGD", "adam": "Adam"}
    fig = figures.tuned_rate_figure(titles, tuned, single, marked, {64: "C0", 256: "C1"}, 100)
    assert [ax.get_title() for ax in fig.axes] == ["SGD", "Adam"]
    for ax, opt in zip(fig.axes, titles, strict=True):
        # per length: the tuned points with error bars, the dashed single rate, two open markers
        assert len(ax.containers) == 2 and ax.get_ylabel() == "loss after 100 steps"
        np.testing.assert_array_equal(ax.containers[1].lines[0].get_ydata(), tuned[(opt, 256)][1])
        dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
        np.testing.assert_array_equal(dashed[0].get_ydata(), single[(opt, 64)][1])
        opened = [line for line in ax.lines if line.get_marker() in ("v", "x")]
        assert [line.get_xdata()[0] for line in opened] == [1.0, 4.0, 1.0, 4.0]
        assert ax.get_xscale() == "log" and ax.lines[-1].get_xdata()[0] == 1.0
        # each length's points in its colour with a marker of its own
        assert [(c.lines[0].get_color(), c.lines[0].get_marker()) for c in ax.containers] == [
            ("C0", "o"),
            ("C1", "s"),
        ]
    # one legend under the axes: the lengths, then the line styles
    [legend] = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "n = 64",
        "n = 256",
        "rate tuned per scale",
        "one rate",
        r"$\alpha^*(n)$",
        r"$\sqrt{2\log n}$",
    ]
    assert [h.get_linestyle() for h in legend.legend_handles[2:4]] == ["-", "--"]
    assert [h.get_marker() for h in legend.legend_handles[4:]] == ["v", "x"]
    _assert_phone_width(fig)
    with pytest.raises(ValueError, match="same"):
        figures.tuned_rate_figure(titles, tuned, {}, marked, {64: "C0", 256: "C1"}, 100)
    plt.close("all")


def test_share_percent_gives_the_interval_or_the_rule_of_three():
    assert figures.share_percent((0.875, 0.012), below=10, rows=1000) == format_uncertain(87.5, 1.2)
    # no row on the other side: the one-sided bound 1 - 3/N, whatever the interval
    assert figures.share_percent((1.0, 0.0), below=0, rows=400) == "at least 99.25"


def test_best_scale_table_one_line_per_n_with_the_exact_values_where_known():
    rows = {2: (5, 100, "60.0 ± 2.0", 200, (1.6, 0.05)), 64: (5, 40, "at least 98.50", 0, (2.5, 0.1))}
    table = figures.best_scale_table(rows, {2: (0.6, 1.612)})
    assert ":name: tab-jacobian-best-scale" in table
    body = [line for line in table.splitlines() if line.startswith("| 2 ") or line.startswith("| 64 ")]
    assert len(body) == 2
    body = [line.replace("\u00a0", " ") for line in body]  # numbers kept on one line: test_formatting
    assert body[0].startswith("| 2 | 5 × 100 | 60.0") and body[0].endswith("| 60.0% / 1.612 |")
    assert body[1].startswith("| 64 | 5 × 40 | at least 98.50% | 0 |") and body[1].endswith("| none known |")
    with pytest.raises(ValueError, match="no sampled rows"):
        figures.best_scale_table(rows, {16: (0.7, 2.0)})


def test_frobenius_ratio_table_one_line_per_n():
    rows = {
        64: ((1.5, 0.1), (1.8, 0.1), (1.2, 0.02), (1.0, 1.61)),
        512: ((2.1, 0.1), (2.6, 0.2), (1.25, 0.03), (1.01, 1.7)),
    }
    table = figures.frobenius_ratio_table(rows)
    assert ":name: tab-jacobian-frobenius" in table
    body = [line for line in table.splitlines() if line.startswith(("| 64 ", "| 512 "))]
    body = [line.replace("\u00a0", " ") for line in body]  # numbers kept on one line: test_formatting
    assert body[0] == (
        f"| 64 | {format_uncertain(1.5, 0.1)} | {format_uncertain(1.8, 0.1)} | "
        f"{format_uncertain(1.2, 0.02)} | 1.000 to 1.61 |"
    ).replace("\u00a0", " ")
    assert body[1].startswith("| 512 |") and body[1].endswith("| 1.010 to 1.70 |")
