"""MT2IE rankings (section 5, Figure 7, appendix G Table 6): per random seed a model's mean score and
rank, over seeds the mean rank and its variance, and Kendall's tau against a reference ranking.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata

from ... import stats
from ...results import Cell, PaperTable
from ..base import one_of

__all__ = ["METRICS", "rank_models", "paper_tables", "metric_value", "kendall_table", "mean_rank_table"]

METRICS = ("score", "weighted_score", "aesthetic")


def metric_value(row: Mapping[str, Any], metric: str) -> float | None:
    """``row``'s value of ``metric``: a column (:data:`METRICS`), or a ranking metric scored beside the agent's own
    (``metric_scores``: VQAScore, CLIPScore, DSG, VIEScore, TIFA)."""
    if metric in METRICS:
        return row.get(metric)
    return next((s.get("score") for s in row.get("metric_scores") or () if s.get("metric") == metric), None)


def _mean(values: Iterable[float | None]) -> float:
    return stats.mean_se(list(values))[0]


def _reference_scores(reference: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    """Higher is better: a mapping of scores as is, a list of names best first by position."""
    if isinstance(reference, Mapping):
        return {str(k): float(v) for k, v in reference.items()}
    names = [str(n) for n in reference]
    if len(set(names)) != len(names):
        raise ValueError(f"the reference ranking names a model twice: {names}")
    return {n: -float(k) for k, n in enumerate(names)}


def rank_models(runs: Iterable[Mapping[str, Any]], reference: Sequence[str] | Mapping[str, float] | None = None,
                *, metric: str | None = None, mode: str | None = None,
                iterations: int | None = None) -> dict[str, Any]:
    """Rank T2I models from MT2IE run rows (``run_mt2ie``'s, ``MT2IE.read_release``'s or the Hub dataset's).

    Per random seed, a model's score is the mean of ``metric`` over its rows (failures left out and
    counted); models are ranked within each seed (1 = best, ties share the average rank). Per model:
    ``mean`` and ``std`` of the per-seed scores, ``mean_rank`` and ``rank_variance`` over seeds
    (Figure 7; population figures). ``metric`` defaults to ``score`` in iterative mode and
    ``weighted_score`` (score x difficulty, section 6) in adaptive mode; ``aesthetic`` ranks by
    appendix A's score; a ranking metric scored beside the agent's (``metric_scores``: ``clip_score``, ``dsg``...)
    ranks by that metric's scores. ``iterations`` keeps the first N prompts of each run (appendix G's ablation).
    ``reference`` (model names best first, or name -> score, higher better; e.g. GenAIBench's order)
    adds Kendall's tau-b between the mean-rank order and it, and the mean of the per-seed taus (Table 6).
    ``per_iteration`` (model -> iteration -> mean score, difficulty, weighted score) feeds
    :func:`t2ireason.report.plots.mt2ie_iterations` (Figures 3 and 6).
    """
    rows = [r for r in runs if (mode is None or r["mode"] == mode)
            and (iterations is None or int(r["iteration"]) < iterations)]
    if not rows:
        raise ValueError("no MT2IE run rows to rank" + (f" in mode {mode!r}" if mode else ""))
    modes = {r["mode"] for r in rows}
    if len(modes) > 1:
        raise ValueError(f"rows of several modes ({', '.join(sorted(modes))}): pass mode=")
    mode = modes.pop()
    metric = metric or ("weighted_score" if mode == "adaptive" else "score")
    scored_beside = {s.get("metric") for r in rows for s in r.get("metric_scores") or ()}
    one_of("metric", metric, (*METRICS, *sorted(scored_beside)))
    if metric == "weighted_score" and any((r.get("difficulty") or 1) <= 0 for r in rows):
        warnings.warn("some prompt difficulties are <= 0: weighting by them erases or flips those scores "
                      "(Flesch-Kincaid grades of short prompts are negative); prefer yngve or word_count",
                      stacklevel=2)

    values: dict[tuple[str, int], list] = defaultdict(list)
    by_iteration: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        values[(r["model"], int(r["seed"]))].append(metric_value(r, metric))
        by_iteration[r["model"]][int(r["iteration"])].append(r)
    models = sorted({m for m, _ in values})
    seeds = sorted({s for _, s in values})
    per_seed = {m: {s: _mean(values[(m, s)]) for s in seeds if (m, s) in values} for m in models}
    ranks: dict[str, dict[int, float]] = {m: {} for m in models}
    for s in seeds:
        scored = [m for m in models if math.isfinite(per_seed[m].get(s, math.nan))]
        order = rankdata([-per_seed[m][s] for m in scored], method="average")
        for m, k in zip(scored, order):
            ranks[m][s] = float(k)

    table: dict[str, Any] = {"mode": mode, "metric": metric, "seeds": seeds, "models": {},
                             # how the rows' difficulty was computed: the paper's Yngve depth, or a proxy standing in
                             "difficulty_methods": sorted({r["difficulty_method"] for r in rows
                                                           if r.get("difficulty_method")})}
    for m in models:
        means = [v for v in per_seed[m].values() if math.isfinite(v)]
        kept = [v for s in seeds for v in values.get((m, s), [])]
        table["models"][m] = {
            "mean": float(np.mean(means)) if means else math.nan,
            "std": float(np.std(means)) if means else math.nan,
            "per_seed": per_seed[m], "ranks": ranks[m],
            "mean_rank": float(np.mean(list(ranks[m].values()))) if ranks[m] else math.nan,
            "rank_variance": float(np.var(list(ranks[m].values()))) if ranks[m] else math.nan,
            "n": sum(v is not None for v in kept), "failed": sum(v is None for v in kept),
        }
    stat = table["models"]
    table["ranking"] = sorted(models, key=lambda m: (math.isnan(stat[m]["mean_rank"]), stat[m]["mean_rank"],
                                                     -stat[m]["mean"]))
    table["per_iteration"] = {m: {i: {k: _mean(r.get(k) for r in rs) for k in ("score", "difficulty", "weighted_score")}
                                  for i, rs in sorted(its.items())} for m, its in by_iteration.items()}
    if reference is not None:
        ref = _reference_scores(reference)
        common = [m for m in table["ranking"] if m in ref and math.isfinite(stat[m]["mean_rank"])]
        if len(common) < 2:
            raise ValueError(f"Kendall's tau needs at least two ranked models that the reference names; "
                             f"ranked: {table['ranking']}, reference: {sorted(ref)}")
        taus = {}
        for s in seeds:
            both = [m for m in common if s in ranks[m]]
            if len(both) >= 2:
                taus[s] = stats.kendall_tau([-ranks[m][s] for m in both], [ref[m] for m in both])
        table.update(reference=sorted(ref, key=lambda m: -ref[m]), compared=common,
                     kendall_tau=stats.kendall_tau([-stat[m]["mean_rank"] for m in common], [ref[m] for m in common]),
                     kendall_tau_per_seed=taus, kendall_tau_seed_mean=_mean(taus.values()))
    return table


def paper_tables(aggregate: dict[str, Any], label: str) -> list[PaperTable]:
    """The ranking of an agent's run (seed 002, Figure 7 and Table 6), best model first: the mean
    score over seeds and its spread, the mean rank and its variance, and Kendall's tau against the
    reference ranking when one was given. ``aggregate`` is :func:`rank_models`' table, which covers every model of
    the run; ``label`` prefixes the rows when non-empty."""
    metric = aggregate.get("metric", "score")
    table = PaperTable(f"MT2IE ranking ({aggregate.get('mode')}, {metric})",
                       [metric, "std over seeds", "mean rank", "rank variance", "failed"], decimals=3)
    for model in aggregate["ranking"]:
        s = aggregate["models"][model]
        table.rows[f"{label} · {model}" if label else model] = {
            metric: Cell.of(s["mean"]), "std over seeds": Cell.of(s["std"]), "mean rank": Cell.of(s["mean_rank"]),
            "rank variance": Cell.of(s["rank_variance"]), "failed": Cell.of(s["failed"])}
    notes = [f"{len(aggregate.get('seeds') or [])} random seed(s)"]
    methods = aggregate.get("difficulty_methods") or []
    weighted = aggregate.get("metric") == "weighted_score"
    if methods and methods != ["yngve"]:
        others = ", ".join(m for m in methods if m != "yngve")
        notes.append(f"prompt difficulty{' (the weight of each score)' if weighted else ''}: {', '.join(methods)}; "
                     f"{others} is not the paper's Yngve depth (section 6): not the paper's protocol")
    elif methods:
        notes.append(f"prompt difficulty{' (the weight of each score)' if weighted else ''}: Yngve depth, the paper's")
    if aggregate.get("kendall_tau") is not None:
        seed_mean = aggregate.get("kendall_tau_seed_mean")
        notes.append(f"Kendall's tau vs the reference ranking: {aggregate['kendall_tau']:.3f}"
                     + (f" (mean over seeds {seed_mean:.3f})" if seed_mean is not None else ""))
    table.note = "; ".join(notes)
    return [table]


def kendall_table(rankings: Mapping[str, Mapping[str, Any]], title: str = "") -> PaperTable:
    """Seed 002's Tables 3 and 5: Kendall's tau between each evaluation method's ranking of the models and the
    reference ranking (GenAIBench's in the paper), a column per method (``rankings``: label -> :func:`rank_models`'
    table, made with a reference), as the paper lays it out; and the mean of the per-seed taus (Figure 7's
    per-seed behaviour). A method whose table has no tau (no reference) is left out."""
    with_tau = {label: t for label, t in rankings.items() if t.get("kendall_tau") is not None}
    table = PaperTable(title or "MT2IE Table 3: Kendall's τ between each metric's ranking and the reference",
                       list(with_tau), decimals=4)
    table.rows["Kendall's τ"] = {label: Cell.of(t["kendall_tau"]) for label, t in with_tau.items()}
    table.rows["mean τ over seeds"] = {label: Cell.of(t.get("kendall_tau_seed_mean")) for label, t in with_tau.items()}
    compared = sorted({len(t.get("compared") or ()) for t in with_tau.values()})
    table.note = (f"tau-b between the mean-rank order of {', '.join(map(str, compared))} models and the reference "
                  "ranking; each method scores the same images")
    return table


def mean_rank_table(rankings: Mapping[str, Mapping[str, Any]]) -> PaperTable:
    """Each model's mean rank over seeds by each evaluation method (seed 002, Figure 4: the rankings each method
    gives), models in the order of the first method's ranking."""
    first = next(iter(rankings.values()))
    models = list(first["ranking"]) + sorted({m for t in rankings.values() for m in t["models"]} - set(first["ranking"]))
    table = PaperTable("MT2IE: each model's mean rank by each metric (1 = best)", list(rankings), decimals=2)
    for model in models:
        table.rows[model] = {label: Cell.of((t["models"].get(model) or {}).get("mean_rank"))
                             for label, t in rankings.items()}
    table.note = "mean over seeds of the model's rank among the models in each seed's ranking; ties share their rank"
    return table
