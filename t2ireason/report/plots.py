"""Plots of the papers' kinds: per-dimension bars or radar for several models, score
distributions, and MT2IE score and difficulty per iteration. Each function writes
one PNG and returns its path."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["dimension_bars", "dimension_radar", "score_distribution", "mt2ie_iterations"]


def _save(fig, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _check(table: Mapping[str, Mapping[str, float | None]]) -> list[str]:
    if not table:
        raise ValueError("nothing to plot: no models")
    dims = list(dict.fromkeys(d for scores in table.values() for d in scores))
    if not dims:
        raise ValueError("nothing to plot: no dimensions")
    return dims


def dimension_bars(table: Mapping[str, Mapping[str, float | None]], path: str | os.PathLike, *,
                   title: str = "", ylabel: str = "score (0-100)",
                   errors: Mapping[str, Mapping[str, tuple[float, float]]] | None = None) -> Path:
    """Grouped bars: one group per dimension, one bar per model; ``errors`` holds
    (low, high) confidence intervals drawn as error bars."""
    dims = _check(table)
    models = list(table)
    width = 0.8 / len(models)
    x = np.arange(len(dims))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(dims) * max(1, len(models) / 2)), 4))
    for i, m in enumerate(models):
        vals = [table[m].get(d) for d in dims]
        heights = [v if v is not None else 0 for v in vals]
        yerr = None
        if errors and m in errors:
            # nan where a dimension has no interval: matplotlib then draws no error bar there
            lo = [max(0, h - errors[m][d][0]) if d in errors[m] else math.nan for h, d in zip(heights, dims)]
            hi = [max(0, errors[m][d][1] - h) if d in errors[m] else math.nan for h, d in zip(heights, dims)]
            yerr = [lo, hi]
        ax.bar(x + i * width - 0.4 + width / 2, heights, width, label=m, yerr=yerr, capsize=2)
    ax.set_xticks(x, dims, rotation=30 if len(dims) > 5 else 0, ha="right" if len(dims) > 5 else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(models) > 1:
        ax.legend(fontsize="small")
    return _save(fig, path)


def dimension_radar(table: Mapping[str, Mapping[str, float | None]], path: str | os.PathLike, *,
                    title: str = "", max_value: float = 100.0) -> Path:
    """A radar chart of several models over the dimensions (needs three or more)."""
    dims = _check(table)
    if len(dims) < 3:
        raise ValueError(f"a radar chart needs at least 3 dimensions, got {len(dims)}")
    angles = [2 * math.pi * i / len(dims) for i in range(len(dims))] + [0.0]
    fig, ax = plt.subplots(figsize=(5.5, 5.5), subplot_kw={"projection": "polar"})
    for m, scores in table.items():
        vals = [scores.get(d) or 0.0 for d in dims]
        ax.plot(angles, vals + vals[:1], label=m)
        ax.fill(angles, vals + vals[:1], alpha=0.1)
    ax.set_xticks(angles[:-1], dims, fontsize="small")
    ax.set_ylim(0, max_value)
    ax.set_title(title)
    ax.legend(loc="upper right", bbox_to_anchor=(1.3, 1.1), fontsize="small")
    return _save(fig, path)


def score_distribution(scores: Mapping[str, Sequence[float | None]], path: str | os.PathLike, *,
                       title: str = "", xlabel: str = "score", bins: int = 20) -> Path:
    """Histogram of per-image scores for each model (failures, None, left out and counted in the legend)."""
    if not scores:
        raise ValueError("nothing to plot: no models")
    fig, ax = plt.subplots(figsize=(6, 4))
    for m, vals in scores.items():
        ok = [v for v in vals if v is not None]
        failed = len(vals) - len(ok)
        label = f"{m} (n={len(ok)}" + (f", {failed} failed)" if failed else ")")
        ax.hist(ok, bins=bins, alpha=0.5, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("images")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return _save(fig, path)


def mt2ie_iterations(per_iteration: Mapping[str, Mapping[int, Mapping[str, float]]], path: str | os.PathLike, *,
                     title: str = "MT2IE") -> Path:
    """Mean score and mean prompt difficulty per iteration, one line per model (seed 002, Figures 3 and 6)."""
    if not per_iteration:
        raise ValueError("nothing to plot: no models")
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for m, its in per_iteration.items():
        xs = sorted(its)
        a.plot(xs, [its[i]["score"] for i in xs], marker="o", label=m)
        b.plot(xs, [its[i]["difficulty"] for i in xs], marker="o", label=m)
    a.set(xlabel="iteration", ylabel="score", title=f"{title}: score per iteration")
    b.set(xlabel="iteration", ylabel="prompt difficulty", title=f"{title}: difficulty per iteration")
    for ax in (a, b):
        ax.xaxis.get_major_locator().set_params(integer=True)
    a.legend(fontsize="small")
    return _save(fig, path)
