"""PRISM-Bench's table cells as sums over images (:func:`cell_formulas`), for the paired comparisons of runs
and the rank intervals of a report (:mod:`t2ireason.stats_paired`): each cell of :func:`.scores.paper_tables`
written as the weighted ratios of sums that :func:`.scores.aggregate` computes, so that a resample of the
prompts gives the table as the benchmark would compute it over them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...results import ImageResult
from .protocol import AXES
from .release import TRACKS

__all__ = ["cell_formulas"]

_SHORT = {"alignment": "Ali.", "aesthetic": "Aes."}


def _counted(r: ImageResult, axis: str, official: bool) -> tuple[float, ...]:
    v = r.subscores.get(axis)
    # the paper's intervals are over finite scores; the authors' means over every counted one
    return () if v is None or (not official and not math.isfinite(v)) else (float(v),)


def cell_formulas(aggregate: dict[str, Any], results: Sequence[ImageResult]) -> list[tuple[dict, dict, list]]:
    """For each table of :func:`.scores.paper_tables` (in its order): ``terms`` (name -> each image's values
    pooled into the term's mean), ``cells`` (column -> {term: weight}) and the images' prompt ids. A track's Ali. and Aes. are its
    images' means; its Avg. the mean of the two (paper) or of one pooled list of both (official); Overall
    the mean over the tracks (paper) or over every image (official); Pooled Avg. the mean of the pooled axes."""
    out = []
    for lang, agg in (aggregate.get("by_language") or {"": aggregate}).items():
        rows = [r for r in results if not lang or r.context.get("language") == lang]
        official = agg.get("protocol") == "official"
        terms: dict[str, list[tuple[float, ...]]] = {}
        for key in [t for t in agg["tracks"]] + ["overall"]:
            for axis in AXES:
                terms[f"{key} {axis}"] = [_counted(r, axis, official) if key in ("overall", r.context.get("track"))
                                          else () for r in rows]
            if official:
                terms[f"{key} pooled"] = [a + b for a, b in zip(terms[f"{key} alignment"], terms[f"{key} aesthetic"])]
        cells: dict[str, dict[str, float]] = {}
        tracks = list(agg["tracks"])
        for track in tracks:
            name = TRACKS.get(track, track)
            for axis in AXES:
                cells[f"{name} {_SHORT[axis]}"] = {f"{track} {axis}": 1.0}
            cells[f"{name} Avg."] = ({f"{track} pooled": 1.0} if official else
                                     {f"{track} {axis}": 0.5 for axis in AXES})
        if tracks and official:
            for axis in AXES:
                cells[f"Overall {_SHORT[axis]}"] = {f"overall {axis}": 1.0}
            cells["Overall Avg."] = {"overall pooled": 1.0}
        elif tracks:
            for axis in AXES:
                cells[f"Overall {_SHORT[axis]}"] = {f"{t} {axis}": 1 / len(tracks) for t in tracks}
            cells["Overall Avg."] = {f"{t} {axis}": 0.5 / len(tracks) for t in tracks for axis in AXES}
            cells["Pooled Avg."] = {f"overall {axis}": 0.5 for axis in AXES}
        out.append((terms, cells, [str(r.id) for r in rows]))
    return out
