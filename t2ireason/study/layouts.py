"""Each paper's meta-evaluation table: every evaluation of the runs against the people, as the paper lays it out.

One row per evaluation, whatever its metric (the benchmark's own, VQAScore, CLIPScore, DSG, VIEScore, a
user's own metric module), in the order of the paper's table (the metrics it has not after), each labelled
by its metric and its judge, as the papers label theirs, each figure's n beside it:

- T2I-ReasonBench Table 1 (seed 000, section 4.2): Kendall's tau and Spearman's rho per dimension and
  their average over the dimensions; here also over every image pooled, with its interval;
- PRISM-Bench Table 3 (seed 004, section 4.3): Spearman's rho and Kendall's tau per track (rho first, as
  printed), and the row of two judges of the benchmark's metric against each other over the runs' mean
  scores on each track ("GPT4.1 vs. Qwen2.5-VL", over 19 models there; here over the runs, with three or more);
- R2I-Bench Table 4 (section 4.3) and Table 21 (appendix B.5): pairwise accuracy, tau and rho; Table 21 per
  category with its Average (the mean over the categories), which is Table 4's figure; here also pooled;
- MT2IE Tables 1 and 2 (seed 002, section 4): Spearman's rho and Kendall's tau on 0-100 over every image of
  a 1-5 Likert study (TIFA160's), for any study that rates each image on a scale;
- a study of the judge's own questions: per-question accuracy, tau and rho.

Beside them the raters' agreement with each other (Krippendorff's alpha). Each figure per group or pooled
comes with its 95% bootstrap interval where :mod:`t2ireason.study.agreement` computed one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results import Cell, PaperTable
from .protocols import protocol

__all__ = ["METRIC_TITLES", "MIN_ITEMS", "metric_title", "tables", "mt2ie_table", "raters_table"]

#: the metrics as the papers' tables name them (a user's own metric module goes by its name)
METRIC_TITLES = {"t2i_reasonscore": "T2I-ReasonScore", "r2i_score": "R2I-Score", "prism_score": "PRISM-Bench score",
                 "knowledge_checklist_score": "Knowledge checklist score", "vqascore": "VQAScore",
                 "clip_score": "CLIPScore", "dsg": "DSGScore", "viescore": "VIEScore", "tifa": "TIFA"}

_UNDEFINED = "– where not defined (ratings or scores all equal)"
#: a figure computed over fewer items (images, pairs, questions) than this is withheld (agreement.py): τ of two
#: items is ±1 and an accuracy of one 0 or 1, whatever the judge; the tables print each figure's n beside it
MIN_ITEMS = 3


def _n_note() -> str:
    """What the n columns are, and why a figure beside a small one is missing."""
    return (f"n: the items each figure is computed over (a figure from fewer than {MIN_ITEMS} is withheld, –: τ of "
            "two items is ±1, an accuracy of one 0 or 1)")


def _n(figures: dict[str, Any], key: str = "n") -> Cell:
    return Cell(int(figures.get(key, 0)))


def metric_title(metric: str) -> str:
    """A metric as the papers name it; a user's module (a folder or Hub id) by its last part."""
    return METRIC_TITLES.get(metric) or Path(str(metric).rstrip("/")).name or str(metric)


def _cell(figures: dict[str, Any], key: str, scale: float = 1.0) -> Cell:
    low, high = figures.get(f"{key}_ci") or (None, None)
    value = figures.get(key)
    return Cell.of({k: None if v is None else v * scale for k, v in (("mean", value), ("ci_low", low), ("ci_high", high))})


def _questions_note(study: dict[str, Any], result: dict[str, Any]) -> str:
    """Whose questions the benchmark's metric asked (T2I-ReasonBench Table 1's LLM column), the same for its rows."""
    if not result.get("questions"):
        return ""
    own = next((r["metric"] for r in result["rows"] if r["own"]), None)
    return f"; {metric_title(own)}'s questions: {result['questions']}" if own else ""


def _resampling_note(result: dict[str, Any]) -> str:
    dropped = sum(r["degenerate"] for r in result.get("resamples", []))
    if not dropped:
        return ""
    return (f"; the intervals leave out {dropped} bootstrap resample(s) with no statistic (their ratings or scores "
            "all equal; agreement.json says where)")


def _scale_table(study: dict[str, Any], result: dict[str, Any], rows: list[dict[str, Any]]) -> PaperTable:
    """T2I-ReasonBench Table 1 (tau, rho per dimension, their average) or PRISM-Bench Table 3 (rho, tau per
    track, and two judges against each other), every image pooled beside."""
    bench, proto = study["benchmark"], protocol(study["benchmark"])
    groups = study["groups"]
    order = ("spearman_rho", "kendall_tau") if bench == "prism-bench" else ("kendall_tau", "spearman_rho")
    sign = {"kendall_tau": "τ", "spearman_rho": "ρ"}
    cells_of: dict[str, dict[str, Cell]] = {}
    for row in rows:
        f = result["evaluations"][row["evaluation"]]
        per = f.get("per_group", {})
        cells: dict[str, Cell] = {}
        for g, title in groups.items():
            if g in per:
                cells |= {f"{title} {sign[k]}": _cell(per[g], k) for k in order} | {f"{title} n": _n(per[g])}
        if len(per) > 1 and bench != "prism-bench":  # PRISM-Bench's table has no average
            cells |= {f"Average {sign[k]}": Cell.of(f["group_average"][k]) for k in order}
        cells |= {f"All {sign[k]}": _cell(f, k) for k in order} | {"All n": _n(f)}
        cells_of[row["label"]] = cells
    judges = result.get("judges")
    if judges and judges.get("per_group"):
        cells_of[judges["label"]] = {f"{groups[g]} {sign[k]}": Cell.of(v[k]) for g, v in judges["per_group"].items()
                                     if g in groups for k in order}
    lo, hi = study["protocol"]["scale"]
    n_runs = len(study["runs"])
    title = (f"{proto.table}: correlation with human ratings" if study["kind"] == proto.kind
             else "Correlation with human ratings")
    note = (f"Kendall's τ-b and Spearman's ρ between each evaluation's per-image score and the mean of the raters' "
            f"{lo}-{hi} ratings, {result['raters']['items']} images of {n_runs} run(s)"
            + ("; Average is the mean over the groups (those where it is defined)" if len(groups) > 1
               and bench != "prism-bench" else "")
            + "; All pools every image; " + _n_note())
    if judges:
        note += (f"; {judges['label']}: the two judges of the benchmark's metric against each other over the "
                 f"{judges['n_models']} runs' mean scores of each group, every image of the runs (as the paper's "
                 "two judges over its 19 models)" if judges.get("per_group") else f"; {judges['why']}")
    columns = list(dict.fromkeys(c for cells in cells_of.values() for c in cells))
    return PaperTable(title, columns, cells_of, note + _questions_note(study, result) + "; " + _UNDEFINED
                      + _resampling_note(result), proto.decimals)


def mt2ie_table(study: dict[str, Any], result: dict[str, Any], rows: list[dict[str, Any]]) -> PaperTable:
    """MT2IE Tables 1 and 2: rho and tau on 0-100 over every image rated on a scale."""
    cells_of = {row["label"]: {"ρ": _cell(result["evaluations"][row["evaluation"]], "spearman_rho", 100.0),
                               "τ": _cell(result["evaluations"][row["evaluation"]], "kendall_tau", 100.0),
                               "n": _n(result["evaluations"][row["evaluation"]])}
                for row in rows}
    lo, hi = study["protocol"]["scale"]
    return PaperTable("MT2IE Tables 1 and 2: correlation with human ratings over every image", ["ρ", "τ", "n"],
                      cells_of,
                      f"As MT2IE (seed 002, section 4) reports agreement with TIFA160's 1-5 Likert ratings: Spearman's ρ "
                      f"and Kendall's τ-b on 0-100 over every image ({result['raters']['items']}), here against the "
                      f"mean of the raters' {lo}-{hi} ratings; " + _UNDEFINED + "; " + _n_note()
                      + _resampling_note(result), 1)


def _preference_tables(study: dict[str, Any], result: dict[str, Any], rows: list[dict[str, Any]]) -> list[PaperTable]:
    """R2I-Bench Table 4 (the average over the categories, and every pair pooled) and Table 21 (per category)."""
    proto = protocol(study["benchmark"])
    paper = study["kind"] == proto.kind
    groups = study["groups"]
    keys = (("acc.", "pairwise_accuracy"), ("τ", "kendall_tau"), ("ρ", "spearman_rho"))
    table4: dict[str, dict[str, Cell]] = {}
    table21: dict[str, dict[str, Cell]] = {}
    for row in rows:
        f = result["evaluations"][row["evaluation"]]
        per = f.get("per_group", {})
        cells: dict[str, Cell] = {}
        if len(per) > 1:
            cells |= {f"Average {name}": Cell.of(f["group_average"][k]) for name, k in keys}
        cells |= {f"All {name}": _cell(f, k) for name, k in keys} | {"All n": _n(f)}
        cells["Tie-calibrated acc."] = Cell.of(f["calibrated"]["pairwise_accuracy"])
        table4[row["label"]] = cells
        by_group: dict[str, Cell] = {}
        for g, title in groups.items():
            if g in per:
                by_group |= {f"{title} {name}": _cell(per[g], k) for name, k in keys} | {f"{title} n": _n(per[g])}
        if len(per) > 1:
            by_group |= {f"Average {name}": Cell.of(f["group_average"][k]) for name, k in keys}
        table21[row["label"]] = by_group
    first, second = (r["name"] for r in study["runs"])
    n = result["raters"]["items"]
    how = (f"{first} against {second}, {n} prompts; pairwise accuracy counts each evaluation's choice (the higher "
           "score, a tie when equal) against the raters' (the sign of their mean verdict); τ and ρ correlate the "
           "raters' verdict with the evaluation's margin between the two images")
    title4 = ("R2I-Bench Table 4: agreement with human A/B/tie choices" if paper
              else "Agreement with human A/B/tie choices (R2I-Bench Table 4's layout)")
    title21 = ("R2I-Bench Table 21: agreement with human A/B/tie choices per category" if paper
               else "Agreement with human A/B/tie choices per group (R2I-Bench Table 21's layout)")
    how += _questions_note(study, result) + "; " + _n_note()
    out = [PaperTable(title4, list(dict.fromkeys(c for cells in table4.values() for c in cells)), table4,
                      how + "; Average is the mean over the categories where it is defined (Table 21's Average row, "
                      "whose figures Table 4 prints), All pools every pair; tie-calibrated: margins up to the threshold that fits the raters "
                      "best count as ties (Deutsch et al., 2023; agreement.json gives it); " + _UNDEFINED
                      + _resampling_note(result), proto.decimals if paper else 3)]
    if any(len(result["evaluations"][r["evaluation"]].get("per_group", {})) > 1 for r in rows):
        out.append(PaperTable(title21, list(dict.fromkeys(c for cells in table21.values() for c in cells)), table21,
                              how + "; per category, and Average: the mean over the categories where it is defined; "
                              + _UNDEFINED
                              + _resampling_note(result), proto.decimals if paper else 3))
    return out


def _questions_table(result: dict[str, Any], rows: list[dict[str, Any]]) -> PaperTable:
    cells_of = {}
    for row in rows:
        f = result["evaluations"][row["evaluation"]]
        cells = {}
        for g, src in f.get("per_group", {}).items():
            cells |= {f"{g} acc.": _cell(src, "accuracy"), f"{g} n": _n(src, "n_accuracy")}
        cells |= {"All acc.": _cell(f, "accuracy"), "All n": _n(f, "n_accuracy"), "All τ": _cell(f, "kendall_tau"),
                  "All ρ": _cell(f, "spearman_rho"), "questions": Cell(f["n"])}
        cells_of[row["label"]] = cells
    return PaperTable("Per-question agreement with human answers",
                      list(dict.fromkeys(c for cells in cells_of.values() for c in cells)), cells_of,
                      "accuracy: the judge's answer is the one most raters gave (questions without a majority left "
                      "out; n: those left, each group's accuracy is over); τ and ρ between the judge's answers and "
                      "the raters' mean answers, over the questions; " + _UNDEFINED + "; " + _n_note()
                      + _resampling_note(result), 3)


def raters_table(study: dict[str, Any], result: dict[str, Any]) -> PaperTable:
    raters, groups = result["raters"], study["groups"]
    alpha: dict[str, Any] = {}
    for g, v in raters["per_group"].items():
        alpha |= {f"{groups.get(g, g)} α": v}
        if "per_group_n" in raters:  # agreement.json written before issue 50 has no n
            alpha[f"{groups.get(g, g)} n"] = int(raters["per_group_n"][g])
    alpha |= {"All α": raters["alpha"], "items": raters["items"], "ratings": raters["ratings"],
              "raters": raters["raters"]}
    return PaperTable.one_row(
        "Inter-rater agreement (Krippendorff's α)", "raters", alpha, decimals=3,
        note=f"{raters['level']} α over the items rated by two raters or more (n: the items, or questions, of each "
             f"group; an α from fewer than {MIN_ITEMS} is withheld, –); {raters['fewer_raters']} item(s) "
             f"rated by fewer than the study's {study['raters_per_item']}; "
             f"{len(result['problems'])} thing(s) left out (agreement.json lists them)")


def tables(study: dict[str, Any], result: dict[str, Any]) -> list[PaperTable]:
    """The paper's meta-evaluation table(s) for the study's kind, a row per evaluation in ``result["rows"]``
    (in the paper's order), then the raters' agreement."""
    rows = result["rows"]
    kind = study["kind"]
    if kind == "scale":
        out = [_scale_table(study, result, rows), mt2ie_table(study, result, rows)]
    elif kind == "preference":
        out = _preference_tables(study, result, rows)
    else:
        out = [_questions_table(result, rows)]
    return out + [raters_table(study, result)]
