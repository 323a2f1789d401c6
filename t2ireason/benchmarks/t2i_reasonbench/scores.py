"""T2I-ReasonScore: one image's score from its group replies (section 4.1, equation 2, with the weights of
section 5, or the official scripts' accuracy), the scores of many images aggregated into Table 2 (Table 4's
text and image scores), and the paper's tables."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...results import ImageResult, PaperTable, QuestionResult
from ...stats import summarize
from ..base import Benchmark
from .options import check_options
from .schema import DIMENSIONS, OFFICIAL_WEIGHTS, ROLES

# -- one image -----------------------------------------------------------------------------------------

def blank_result(bench: Benchmark, row: Any, i: int, mode: str) -> ImageResult:
    """The result of ``rows[i]`` before it is judged: the row checked, its fields as context."""
    if not isinstance(row, dict):
        raise ValueError(f"rows[{i}] is a {type(row).__name__}, not a T2I-ReasonBench row (a dict)")
    missing = [f for f in ("id", "dimension", "prompt", "evaluation") if f not in row]
    if missing:
        raise ValueError(f"rows[{i}] lacks field(s) {missing}: is it a T2I-ReasonBench row?")
    if row["dimension"] not in DIMENSIONS:
        raise ValueError(f"rows[{i}] has dimension {row['dimension']!r}; known: {', '.join(DIMENSIONS)}")
    if row.get("name") is None and not isinstance(row["id"], int):
        raise ValueError(f"rows[{i}] has id {row['id']!r} and no name: is it a T2I-ReasonBench row?")
    for g in row["evaluation"] or []:
        if not isinstance(g, dict) or not isinstance(g.get("pairs"), list):
            raise ValueError(f"rows[{i}] ({bench.row_id(row)}) has a question group that is not "
                             f"{{group, pairs...}}: {g!r:.80}")
        if "role" not in g and g.get("group") not in DIMENSIONS[row["dimension"]].group_roles:
            raise ValueError(f"rows[{i}] ({bench.row_id(row)}) has question group {g.get('group')!r}; "
                             f"a {row['dimension']} row has {', '.join(DIMENSIONS[row['dimension']].group_roles)}")
    context = {k: row.get(k) for k in ("tag", "idiom", "idiom_meaning", "explicit_meaning") if row.get(k)}
    context["mode"] = mode
    return ImageResult(id=bench.row_id(row), prompt=bench.prompt(row), score=None, config=row["dimension"],
                       context=context)


def _role(row: dict[str, Any], group: dict[str, Any]) -> str | None:
    """A group's role: the row's own (rows built by the release reader), else from its key (older rows)."""
    if "role" in group:
        return group["role"] if group["role"] in ROLES else None
    return DIMENSIONS[row["dimension"]].group_roles.get(group.get("group"))


def asked_groups(row: dict[str, Any], mode: str, result: ImageResult) -> list[dict[str, Any]]:
    """The groups to ask about: all of them for an image, all but quality for a text; a group whose
    role is unknown is not asked (the build reported it) and is named in the result's context."""
    asked = []
    for g in row["evaluation"] or []:
        role = _role(row, g)
        if role is None:
            result.context.setdefault("unscored_groups", []).append(g.get("group"))
            continue
        if mode == "text" and role == "quality":
            continue
        for p in g["pairs"]:
            result.questions.append(QuestionResult(question=p["question"], score=None, criterion=p["criterion"],
                                                   group=role, id=f"{g['group']}.{p['question_key']}"))
        if g["pairs"]:
            asked.append(g)
    return asked


def finish(result: ImageResult, row: dict[str, Any], outcomes: dict[str, Any], mode: str,
            aggregation: str, weights: dict[str, dict[str, float]]) -> None:
    """Fill in question scores, group means and the image score; record what failed."""
    dim = row["dimension"]
    failures = [result.failure] if result.failure else []
    by_role: dict[str, list[float | None]] = defaultdict(list)
    for g in row["evaluation"] or []:
        role = _role(row, g)
        if role is None or (mode == "text" and role == "quality"):
            continue
        if not g["pairs"]:
            failures.append(f"group {g['group']} has no question-criterion pairs")
            by_role[role].append(None)
            continue
        outcome = outcomes.get(g["group"])
        qs = [q for q in result.questions if q.id.startswith(f"{g['group']}.")]
        if outcome is None:
            by_role[role].extend([None] * len(qs))
        elif outcome.ok:
            scores, reasons = outcome.value
            for q, s, r in zip(qs, scores, reasons):
                q.score, q.reasoning = s, r
            by_role[role].extend(scores)
        else:
            failures.append(f"group {g['group']}: {outcome.error}")
            by_role[role].extend([None] * len(qs))
    # a group's score is the mean of its questions (eq. 1); None if any question failed
    result.subscores = {role: (None if not v or any(s is None for s in v) else _unit(math.fsum(v) / len(v)))
                        for role, v in by_role.items()}
    if aggregation == "paper":
        w = weights[dim]
        if mode == "text":
            w = {k: v for k, v in w.items() if k != "quality"}
    else:
        w = OFFICIAL_WEIGHTS[dim]
    needed = {role: wt for role, wt in w.items() if wt}
    absent = [role for role in needed if role not in result.subscores]
    if absent:
        failures.append(f"no {', '.join(absent)} questions for a {dim} row")
    if not absent and all(result.subscores[r] is not None for r in needed):
        # within [0, sum of the weights] whatever rounding does
        result.score = min(max(math.fsum(wt * result.subscores[r] for r, wt in needed.items()), 0.0),
                           math.fsum(needed.values()))
    if failures:
        result.failure = "; ".join(dict.fromkeys(failures))
    result.context.update(aggregation=aggregation, weights=dict(w))


def _unit(x: float) -> float:
    return min(max(x, 0.0), 1.0)


# -- many images ------------------------------------------------------------------------------------

def aggregate(results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
    """Table 2 (or Table 4 in text mode) from per-image results: see :meth:`T2IReasonBench.aggregate`."""
    opts = check_options(options)
    kw = {"confidence": opts["confidence"], "n_resamples": opts["n_resamples"], "seed": opts["seed"]}
    aggregation, mode = _same(results, "aggregation", opts["aggregation"]), _same(results, "mode", opts["mode"])
    table4 = aggregation == "paper" and mode == "image"
    by_dim: dict[str, list[ImageResult]] = defaultdict(list)
    for r in results:
        if r.config not in DIMENSIONS:
            raise ValueError(f"result {r.id} has dimension {r.config!r}; known: {', '.join(DIMENSIONS)}")
        by_dim[r.config].append(r)
    dims = [d for d in DIMENSIONS if d in by_dim]
    table: dict[str, dict[str, Any]] = {}
    for d in dims:
        rs = by_dim[d]
        entry: dict[str, Any] = {"score": summarize([r.score for r in rs], scale=100, **kw)}
        for role in ROLES:
            values = [r.subscores[role] for r in rs if role in r.subscores]
            if values:
                entry[role] = summarize(values, scale=100, **kw)
        weights = next((r.context["weights"] for r in rs if "weights" in r.context), None)
        entry["weights"] = weights
        entry["max_score"] = round(100 * math.fsum(weights.values()), 9) if weights else None
        if table4:
            entry["image_score"] = summarize([_reasoning_score(r) for r in rs], scale=100, **kw)
        table[d] = entry
    overall = _overall([[r.score for r in by_dim[d]] for d in dims], **kw)
    out = {
        "t2i_reasonscore": overall["mean"],  # the metric's own key, as every metric module returns one
        "overall": overall["mean"],
        **{d: table[d]["score"]["mean"] for d in dims},
        "dimensions": table,
        "overall_summary": overall,
        "aggregation": aggregation,
        "mode": mode,
        "scale": 100,
    }
    if table4:  # Table 4's image score: w1 S_reason + w2 S_detail, without quality (maximum 90)
        out["image_score"] = {d: table[d]["image_score"]["mean"] for d in dims}
    return out


def paper_tables(aggregate: dict[str, Any], label: str) -> list[PaperTable]:
    """Table 2 (Table 4, the official accuracy), then the group means: see :meth:`T2IReasonBench.paper_tables`."""
    dims = [d for d in DIMENSIONS if d in aggregate["dimensions"]]
    text = aggregate.get("mode") == "text"
    official = aggregate.get("aggregation") == "official"
    title = ("T2I-ReasonBench Table 4: text score" if text else
             "T2I-ReasonBench: accuracy (official scripts)" if official else
             "T2I-ReasonBench Table 2: T2I-ReasonScore")
    headline = {d.title(): aggregate["dimensions"][d]["score"] for d in dims}
    headline["Overall"] = aggregate["overall_summary"]
    groups = {f"{d.title()} {role}": aggregate["dimensions"][d][role]
              for d in dims for role in ROLES if role in aggregate["dimensions"][d]}
    tables = [PaperTable.one_row(title, label, headline, note="0-100; overall is the mean of the dimensions")]
    if not text and not official and all("image_score" in aggregate["dimensions"][d] for d in dims):
        tables.append(PaperTable.one_row(
            "T2I-ReasonBench Table 4: image score", label,
            {d.title(): aggregate["dimensions"][d]["image_score"] for d in dims},
            note="w1 S_reason + w2 S_detail of the image, without quality (maximum 90); the text score "
                 "beside it is a run in text mode"))
    return tables + [PaperTable.one_row("T2I-ReasonBench: question-group means per dimension", label, groups,
                                        note="S_reason, S_detail, S_quality on 0-100")]


def rewrite_table(aggregate: dict[str, Any], baseline: dict[str, Any], label: str, baseline_label: str) -> PaperTable:
    """Table 3 (section 5.2): the T2I-ReasonScore of each dimension and overall with LLM-rewritten prompts,
    each beside its change from the original prompts' (``baseline``, the same model's run), as the paper
    prints the change in a subscript (76.7 with +34.9)."""
    dims = [d for d in DIMENSIONS if d in aggregate["dimensions"]]
    cells: dict[str, Any] = {}
    for name, now, then in [*((d.title(), aggregate["dimensions"][d]["score"]["mean"],
                               (baseline["dimensions"].get(d) or {}).get("score", {}).get("mean")) for d in dims),
                            ("Overall", aggregate["overall_summary"]["mean"], baseline["overall_summary"]["mean"])]:
        cells[f"{name} score"] = now
        cells[f"{name} change"] = now - then if now is not None and then is not None else None
    return PaperTable.one_row("T2I-ReasonBench Table 3: with LLM-rewritten prompts", label, cells,
                              note=f"0-100; each score with its change from {baseline_label}'s, the same model "
                                   "judged alike on the original prompts (+ a gain)")


def _same(results: Sequence[ImageResult], key: str, default: str) -> str:
    """The ``mode`` or ``aggregation`` the results were scored with (they must agree)."""
    values = {r.context[key] for r in results if key in r.context}
    if len(values) > 1:
        raise ValueError(f"the results mix {key}s {sorted(values)}; aggregate them separately")
    return values.pop() if values else default


def _reasoning_score(result: ImageResult) -> float | None:
    """w1 S_reason + w2 S_detail of one image (Table 4's image score), None when a group it needs failed."""
    weights = {role: w for role, w in (result.context.get("weights") or {}).items() if role != "quality" and w}
    values = [result.subscores.get(role) for role in weights]
    if not weights or any(v is None for v in values):
        return None
    return math.fsum(w * v for w, v in zip(weights.values(), values))


def _overall(per_dim: list[list[float | None]], *, confidence: float, n_resamples: int, seed: int) -> dict[str, Any]:
    """Mean of the dimension means (x100), its standard error and a bootstrap interval that
    resamples images within each dimension."""
    xs = [np.asarray([v for v in vals if v is not None and not math.isnan(v)], dtype=float) for vals in per_dim]
    xs = [x for x in xs if x.size]
    failed = sum(len(v) for v in per_dim) - sum(x.size for x in xs)
    if not xs:
        return {"mean": math.nan, "se": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                "n": 0, "failed": failed, "dimensions": 0}
    mean = float(np.mean([x.mean() for x in xs]))
    ses = [x.std(ddof=1) / math.sqrt(x.size) if x.size > 1 else math.nan for x in xs]
    se = math.sqrt(sum(s * s for s in ses)) / len(xs)
    rng = np.random.default_rng(seed)
    boot = np.mean([x[rng.integers(0, x.size, size=(n_resamples, x.size))].mean(axis=1) for x in xs], axis=0)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return {"mean": 100 * mean, "se": 100 * se, "ci_low": 100 * float(lo), "ci_high": 100 * float(hi),
            "n": int(sum(x.size for x in xs)), "failed": failed, "dimensions": len(xs)}
