"""Figures for a paper: each table of a benchmark as grouped bars (values printed, 95% intervals
as whiskers) and, over three or more categories, as a radar; per-image score distributions; MT2IE
score and difficulty per iteration. Every figure is written as PNG (300 dpi) and PDF (vector, fonts
embedded as TrueType) at a paper's column width (3.4 in; 7 in, both columns, for panels side by side)
with 7-8 pt text, and always on 0-100, the scale of every benchmark's table (per-image scores too); a
label breaks between words, never inside one.

Tables are read generically (:func:`layout`): a column naming a summary (Overall, Avg., Mean...)
is never a category axis, and columns named ``"<category> <series>"`` over a few repeated series
(PRISM-Bench's ``"Imagination Ali."``, ``"Imagination Aes."``) become one series each. With
several models and several series, each series gets its own panel with one bar or line per model.
"""

from __future__ import annotations

import math
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ..results import Cell, PaperTable  # noqa: E402

__all__ = ["layout", "Layout", "table_bars", "table_radar", "bars_figure", "radar_figure", "score_distribution",
           "distribution_figure", "mt2ie_iterations", "iterations_figure", "save_figure", "label_problems",
           "COLUMN_WIDTH", "PAGE_WIDTH"]

COLUMN_WIDTH = 3.4  # inches: one column of a two-column paper (ACL, CVPR: 3.25-3.5 in)
PAGE_WIDTH = 7.0  # inches: both columns (ACL 6.3, CVPR 6.9 in); a figure this wide spans them
_STYLE = {"font.size": 7.5, "axes.titlesize": 8, "axes.labelsize": 7.5, "xtick.labelsize": 7, "ytick.labelsize": 7,
          "legend.fontsize": 7, "pdf.fonttype": 42, "ps.fonttype": 42, "axes.spines.top": False,
          "axes.spines.right": False,
          # every text drawn comes from names users give (runs, models, categories): "$x$" is text, not math
          "text.parse_math": False}
# Okabe-Ito: tells apart under every common colour-vision deficiency and in greyscale print
_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
_SUMMARY = re.compile(r"^(overall|avg\.?|average|mean|all|total)$", re.IGNORECASE)


@dataclass
class Layout:
    """What a table plots: its category axes, its series, and the column of each (axis, series)."""

    axes: list[str]
    series: list[str]  # [""] when the table has one series
    columns: dict[tuple[str, str], str]


def layout(table: PaperTable) -> Layout:
    """The axes and series of ``table``: summary columns and counts are left out; ``"<axis> <series>"``
    columns become series when 2-4 suffixes each repeat over two or more axes."""
    def is_count(c: str) -> bool:
        return any(isinstance((cells.get(c) or Cell(None)).value, int) for cells in table.rows.values())

    cols = [c for c in table.columns if not any(_SUMMARY.match(w) for w in c.split()) and not is_count(c)]
    split = [c.rsplit(" ", 1) for c in cols]
    if cols and all(len(s) == 2 for s in split):
        suffixes = list(dict.fromkeys(s for _, s in split))
        prefixes = list(dict.fromkeys(p for p, _ in split))
        if 2 <= len(suffixes) <= 4 and len(prefixes) >= 2 and all(
                sum(1 for _, s in split if s == suf) >= 2 for suf in suffixes):
            return Layout(prefixes, suffixes, {(p, s): c for c, (p, s) in zip(cols, split)})
    return Layout(cols, [""], {(c, ""): c for c in cols})


def _panels(table: PaperTable, lay: Layout) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(panel title, [(legend label, model, series)]) per panel: one panel per series when there are
    several models and several series; otherwise one panel whose entries are the models or the series."""
    models = list(table.rows)
    if len(lay.series) > 1 and len(models) > 1:
        return [(s, [(m, m, s) for m in models]) for s in lay.series]
    if len(lay.series) > 1:
        return [("", [(s, models[0], s) for s in lay.series])]
    return [("", [(m, m, "") for m in models])]


def _cell(table: PaperTable, lay: Layout, model: str, axis: str, series: str) -> Cell:
    column = lay.columns.get((axis, series))
    return (table.rows[model].get(column) if column else None) or Cell(None)


def _top(table: PaperTable) -> float:
    """100, or more where a value or interval exceeds it (never expected: every table is on 0-100)."""
    values = [v for cells in table.rows.values() for c in cells.values() for v in (c.value, c.high)
              if isinstance(v, (int, float)) and math.isfinite(v)]
    return max(100.0, math.ceil(max(values, default=0) / 10) * 10)


def _wrap(text: str, width: int) -> str:
    """``text`` on lines of about ``width`` characters, broken between words only: a word longer than
    that keeps its line (a label broken mid-word, "Compositiona/l", reads as two words)."""
    return "\n".join(textwrap.wrap(str(text), width, break_long_words=False, break_on_hyphens=False)) or str(text)


def _check(table: PaperTable) -> Layout:
    if not table.rows:
        raise ValueError(f"nothing to plot in {table.title!r}: no models")
    lay = layout(table)
    if not lay.axes:
        raise ValueError(f"nothing to plot in {table.title!r}: no category columns")
    return lay


def _legend(fig, entries: Sequence[str]) -> None:
    if len(entries) > 1:
        ncol = 1 if max(map(len, entries)) > 24 else min(len(entries), 3)
        handles = fig.axes[0].get_legend_handles_labels()[0]
        fig.legend(handles, entries, loc="outside lower center", ncol=ncol, frameon=False)


def table_bars(table: PaperTable, path: str | os.PathLike, note: str = "") -> list[Path]:
    """:func:`bars_figure` written to ``path`` with ``.png`` and ``.pdf``; returns both."""
    with plt.rc_context(_STYLE):
        return save_figure(bars_figure(table, note), path)


def table_radar(table: PaperTable, path: str | os.PathLike, note: str = "") -> list[Path]:
    """:func:`radar_figure` written to ``path`` with ``.png`` and ``.pdf``; returns both."""
    with plt.rc_context(_STYLE):
        return save_figure(radar_figure(table, note), path)


def _title(table: PaperTable, width: int, note: str) -> str:
    """The figure's title, and under it ``note`` (the images each run scored of its own) in a line or two."""
    return _wrap(table.title, width) + (f"\n{_wrap(note, width)}" if note else "")


def bars_figure(table: PaperTable, note: str = ""):
    """``table`` as horizontal grouped bars, one group per category (top to bottom in the table's
    order), each bar's value printed at its end and its 95% interval drawn where the table has one;
    ``note`` under the title (the images scored of each run's)."""
    lay = _check(table)
    panels = _panels(table, lay)
    n = len(panels[0][1])
    bar, gap = 0.17, 0.14  # inches per bar and between groups
    title = _title(table, 50 if len(panels) == 1 else 100, note)
    height = len(lay.axes) * (n * bar + gap) + 0.75 + (0.15 * math.ceil(n / 3) if n > 1 else 0) + 0.13 * title.count("\n")
    top = _top(table)
    with plt.rc_context(_STYLE):
        fig, axs = plt.subplots(1, len(panels), figsize=(COLUMN_WIDTH if len(panels) == 1 else PAGE_WIDTH,
                                                        height), sharey=True, squeeze=False, layout="constrained")
        for ax, (panel, entries) in zip(axs[0], panels):
            for i, (label, model, series) in enumerate(entries):
                ys = [g * (n + gap / bar) + i for g in range(len(lay.axes))]
                cells = [_cell(table, lay, model, a, series) for a in lay.axes]
                vals = [c.value if isinstance(c.value, (int, float)) else math.nan for c in cells]
                lo = [v - c.low if c.low is not None and not math.isnan(v) else math.nan for v, c in zip(vals, cells)]
                hi = [c.high - v if c.high is not None and not math.isnan(v) else math.nan for v, c in zip(vals, cells)]
                err = [lo, hi] if any(not math.isnan(x) for x in lo) else None
                ax.barh(ys, [0 if math.isnan(v) else v for v in vals], height=0.82, xerr=err, label=label,
                        color=_COLOURS[i % len(_COLOURS)], error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "#333"})
                for y, v, c in zip(ys, vals, cells):
                    end = v if c.high is None else max(v, c.high)
                    text = "n/a" if math.isnan(v) else f"{v:.{table.decimals}f}"
                    ax.text((0 if math.isnan(v) else end) + top * 0.012, y, text, va="center", ha="left", fontsize=6)
            centres = [g * (n + gap / bar) + (n - 1) / 2 for g in range(len(lay.axes))]
            ax.set_yticks(centres, [_wrap(a, 18) for a in lay.axes])
            ax.set_xlim(0, top * 1.16)  # room for the printed values past the longest bar
            ax.set_xticks([t for t in range(0, int(top) + 1, 20)])
            ax.spines["bottom"].set_bounds(0, top)
            ax.xaxis.grid(True, linewidth=0.4, color="#ddd")
            ax.set_axisbelow(True)
            ax.tick_params(axis="y", length=0)
            ax.set_xlabel(f"score (0-{top:g})")
            if panel:
                ax.set_title(panel)
        axs[0][0].invert_yaxis()  # the table's first category on top (once: the panels share the axis)
        fig.suptitle(title, fontsize=8)
        _legend(fig, [e[0] for e in panels[0][1]])
    return fig


def radar_figure(table: PaperTable, note: str = ""):
    """``table`` as a radar over its categories (three or more), 0-100 outward, one line per model
    (or per series for one model; one radar per series for several models of a multi-series table);
    ``note`` under the title (the images scored of each run's)."""
    lay = _check(table)
    if len(lay.axes) < 3:
        raise ValueError(f"a radar chart needs at least 3 categories, {table.title!r} has {len(lay.axes)}")
    panels = _panels(table, lay)
    top = _top(table)
    angles = [2 * math.pi * i / len(lay.axes) for i in range(len(lay.axes))]
    with plt.rc_context(_STYLE):
        side = COLUMN_WIDTH if len(panels) <= 2 else PAGE_WIDTH / len(panels)  # at most a page's width
        title = _title(table, 50 * min(len(panels), 2), note)
        fig, axs = plt.subplots(1, len(panels), figsize=(side * len(panels), side + 0.55 + 0.15 * (len(panels) > 1)
                                                         + 0.13 * title.count("\n")),
                                subplot_kw={"projection": "polar"}, squeeze=False, layout="constrained")
        for ax, (panel, entries) in zip(axs[0], panels):
            ax.set_theta_offset(math.pi / 2)  # the first category at the top, the others clockwise
            ax.set_theta_direction(-1)
            for i, (label, model, series) in enumerate(entries):
                vals = [_cell(table, lay, model, a, series).value for a in lay.axes]
                # a category without a value is a gap in the line, never a zero
                vals = [float(v) if isinstance(v, (int, float)) else math.nan for v in vals]
                colour = _COLOURS[i % len(_COLOURS)]
                ax.plot([*angles, angles[0]], [*vals, vals[0]], color=colour, linewidth=1.1, label=label,
                        marker="o", markersize=2)
                if not any(math.isnan(v) for v in vals):
                    ax.fill([*angles, angles[0]], [*vals, vals[0]], color=colour, alpha=0.08)
            ax.set_xticks(angles, [_wrap(a, 12) for a in lay.axes], fontsize=6.5)
            ax.set_ylim(0, top)
            # the outer circle is the top of the scale; its number would sit on a category's label
            labelled = (0.2, 0.4, 0.6, 0.8) if side >= 3 else (0.4, 0.8)  # a small radar has room for fewer
            ax.set_yticks([top * f for f in (0.2, 0.4, 0.6, 0.8, 1.0)],
                          [f"{top * f:g}" if f in labelled else "" for f in (0.2, 0.4, 0.6, 0.8, 1.0)],
                          fontsize=5.5, color="#777")
            ax.set_rlabel_position(180 / len(lay.axes))  # between the first two categories
            ax.tick_params(axis="x", pad=1)
            ax.grid(linewidth=0.4, color="#ccc")
            if panel:
                ax.set_xlabel(panel, labelpad=4, fontsize=8)
        fig.get_layout_engine().set(w_pad=0.1, h_pad=0.06)  # polar labels reach past what the layout measures
        fig.suptitle(title, fontsize=8)
        _legend(fig, [e[0] for e in panels[0][1]])
    return fig


def score_distribution(scores: Mapping[str, Sequence[float | None]], path: str | os.PathLike, **options: Any
                       ) -> list[Path]:
    """:func:`distribution_figure` written to ``path`` with ``.png`` and ``.pdf``; returns both."""
    with plt.rc_context(_STYLE):
        return save_figure(distribution_figure(scores, **options), path)


def distribution_figure(scores: Mapping[str, Sequence[float | None]], *, title: str = "",
                        xlabel: str = "per-image score (0-100)", bins: int = 20,
                        unscorable: Mapping[str, int] | None = None):
    """Histogram of per-image scores (each image's 0-1 reward, drawn on 0-100 as the tables are) for each
    model, counts of images on the y axis. A None is left out and counted in the legend: as ``failed``,
    or as ``not scorable`` for the ``unscorable[model]`` prompts the benchmark could not score at all (no
    questions: no judge was asked)."""
    if not scores:
        raise ValueError("nothing to plot: no models")
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2.2 + 0.15 * len(scores)), layout="constrained")
        edges = [100 * i / bins for i in range(bins + 1)]
        for i, (m, vals) in enumerate(scores.items()):
            ok = [100 * min(max(v, 0.0), 1.0) for v in vals if v is not None and math.isfinite(v)]
            unscored = (unscorable or {}).get(m, 0)
            failed = len(vals) - len(ok) - unscored
            said = [f"n={len(ok)}"] + ([f"{failed} failed"] if failed else []) + (
                [f"{unscored} not scorable"] if unscored else [])
            label = f"{m} ({', '.join(said)})"
            colour = _COLOURS[i % len(_COLOURS)]
            ax.hist(ok, bins=edges, histtype="stepfilled", alpha=0.25, color=colour)
            ax.hist(ok, bins=edges, histtype="step", linewidth=1.0, color=colour, label=label)
        ax.set_xlim(0, 100)
        ax.set_xticks(range(0, 101, 20))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of images: whole numbers
        ax.set_xlabel(xlabel)
        ax.set_ylabel("images")
        ax.set_title(_wrap(title, 60))
        fig.legend(loc="outside lower center", frameon=False)  # under the axes: never over a bar
    return fig


def mt2ie_iterations(per_iteration: Mapping[str, Mapping[int, Mapping[str, float]]], path: str | os.PathLike, *,
                     title: str = "MT2IE") -> list[Path]:
    """:func:`iterations_figure` written to ``path`` with ``.png`` and ``.pdf``; returns both."""
    with plt.rc_context(_STYLE):
        return save_figure(iterations_figure(per_iteration, title=title), path)


def iterations_figure(per_iteration: Mapping[str, Mapping[int, Mapping[str, float]]], *, title: str = "MT2IE"):
    """Mean score and mean prompt difficulty per iteration, one line per model (seed 002, Figures 3
    and 6), on whole iterations and on the whole scale of each."""
    if not per_iteration:
        raise ValueError("nothing to plot: no models")

    def values(key: str) -> list[float]:
        return [v for its in per_iteration.values() for it in its.values()
                if isinstance(v := it.get(key), (int, float)) and math.isfinite(v)]

    iterations = sorted({int(x) for its in per_iteration.values() for x in its})
    with plt.rc_context(_STYLE):
        fig, (a, b) = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 2.6), layout="constrained")
        for i, (m, its) in enumerate(per_iteration.items()):
            xs = sorted(its)
            colour = _COLOURS[i % len(_COLOURS)]
            a.plot(xs, [its[x]["score"] for x in xs], marker="o", markersize=3, color=colour, label=m)
            b.plot(xs, [its[x]["difficulty"] for x in xs], marker="o", markersize=3, color=colour, label=m)
        a.set(xlabel="iteration", ylabel="score", title="score per iteration")
        b.set(xlabel="iteration", ylabel="prompt difficulty", title="difficulty per iteration")
        # the whole scale, not a window the noise fills: scores on 0-1, difficulty from 0 (or below: a
        # Flesch-Kincaid grade can be negative), whatever its measure
        a.set_ylim(0, max([1.0, *values("score")]))
        low, high = min([0.0, *values("difficulty")]), max([0.0, *values("difficulty")])
        b.set_ylim(low, high + 0.1 * (high - low) or 1.0)
        step = max(1, math.ceil(len(range(iterations[0], iterations[-1] + 1)) / 10))
        for ax in (a, b):  # whole iterations: a tick per iteration (every few of many), none between
            ax.set_xticks(range(iterations[0], iterations[-1] + 1, step))
            ax.set_xlim(iterations[0] - 0.5, iterations[-1] + 0.5)
        fig.suptitle(_wrap(title, 100), fontsize=8)
        _legend(fig, list(per_iteration))
    return fig


def save_figure(fig, path: str | os.PathLike) -> list[Path]:
    """``fig`` as ``<path>.png`` (300 dpi) and ``<path>.pdf`` (vector); closes it."""
    stem = Path(path).with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    try:
        fig.savefig(out[0], dpi=300)
        fig.savefig(out[1])
    finally:
        plt.close(fig)
    return out


def label_problems(fig) -> list[str]:
    """Every pair of visible texts of ``fig`` whose boxes overlap, and every text reaching past the
    figure's edge, as drawn by its renderer (what a reader would see as clutter or a cut label)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    boxes = []
    for t in fig.findobj(matplotlib.text.Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        box = t.get_window_extent(renderer)
        if box.width and box.height:
            boxes.append((t.get_text(), box))
    problems = [f"{text!r} is cut by the figure's edge" for text, b in boxes
                if b.x0 < edge.x0 - 0.5 or b.y0 < edge.y0 - 0.5 or b.x1 > edge.x1 + 0.5 or b.y1 > edge.y1 + 0.5]
    for i, (t1, b1) in enumerate(boxes):
        for t2, b2 in boxes[i + 1:]:
            if b1.x0 < b2.x1 - 0.5 and b2.x0 < b1.x1 - 0.5 and b1.y0 < b2.y1 - 0.5 and b2.y0 < b1.y1 - 0.5:
                problems.append(f"{t1!r} overlaps {t2!r}")
    return problems
