"""R2I-Bench's table cells as sums over images (:func:`cell_formulas`), for the paired comparisons of runs and
the rank intervals of a report (:mod:`t2ireason.stats_paired`): each cell of :func:`.scores.paper_tables` is a
mean of its images' scores on 0 to ``scale`` (Table 3's Overall the micro average over every scored image, a
category's and a subcategory's the mean of theirs; Table 13's a dimension's mean), as :func:`.scores.aggregate`
computes it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...results import ImageResult
from .scores import _TABLE13, CATEGORY_TITLES

__all__ = ["cell_formulas"]


def _value(v: float | None, scale: float) -> tuple[float, ...]:
    return () if v is None or math.isnan(v) else (scale * v,)


def cell_formulas(aggregate: dict[str, Any], results: Sequence[ImageResult]) -> list[tuple[dict, dict, list]]:
    """For each table of :func:`.scores.paper_tables` (in its order): the terms (each image's values), the cells
    (column -> {term: weight}) and the images' prompt ids."""
    scale = aggregate.get("scale", 100.0)
    rows = [r for r in results if not r.context.get("unscorable") and not r.context.get("excluded")]
    ids = [str(r.id) for r in rows]

    def mean_of(select) -> list[tuple[float, ...]]:  # select(r): the value it adds, or ... (not in the mean)
        return [_value(v, scale) if (v := select(r)) is not ... else () for r in rows]

    terms = {"overall": mean_of(lambda r: r.score)}
    for c in aggregate["categories"]:
        terms[f"category {c}"] = mean_of(lambda r, c=c: r.score if (r.config or "unknown") == c else ...)
    cells = {"Overall": {"overall": 1.0}, **{CATEGORY_TITLES.get(c, c): {f"category {c}": 1.0}
                                             for c in aggregate["categories"]}}
    out = [(terms, cells, ids)]
    dims = aggregate.get("dimensions") or {}
    if dims:
        dim_terms = {d: mean_of(lambda r, d=d: r.subscores.get(d) if d in r.subscores else ...) for d in dims}
        out.append((dim_terms, {title: {d: 1.0} for d, title in _TABLE13.items() if d in dims}, ids))
    for category in aggregate["categories"]:
        subs = [name for name in aggregate["subcategories"] if name.split("/", 1)[0] == category]
        if subs:
            sub_terms = {"category": terms[f"category {category}"],
                         **{name: mean_of(lambda r, name=name: r.score if f"{r.config}/{r.context.get('subcategory')}"
                                          == name else ...) for name in subs}}
            out.append((sub_terms, {"Overall": {"category": 1.0},
                                    **{name.split("/", 1)[1]: {name: 1.0} for name in subs}}, ids))
    return out
