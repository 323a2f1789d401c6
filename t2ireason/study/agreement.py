"""People against the judge: a study's merged ratings joined to the runs' judge scores, as the papers'
tables report them.

- ``scale`` (T2I-ReasonBench Table 1, PRISM-Bench Table 3): Kendall's tau-b and Spearman's rho between
  the judge's per-image score and the mean of the raters' scores, per dimension or track, their mean over
  the groups (T2I-ReasonBench's "Average") and over every image pooled;
- ``preference`` (R2I-Bench Tables 4 and 21): pairwise accuracy with ties, tau and rho between the
  people's A/B/tie verdict and the judge's margin, per category and overall;
- ``questions``: per-question accuracy (the judge's answer is the one most raters gave), with tau and rho
  between the judge's answers and the raters' mean answers.

Each figure pooled or per group comes with its 95% percentile bootstrap interval over the images
(pairs, questions) of that group (:func:`t2ireason.stats.paired_bootstrap_ci`, ``bootstrap_ci`` for a
share; seeded; none where a resample is degenerate); the statistics themselves are
:mod:`t2ireason.meta_eval`'s. One row per evaluation
(judge) of the runs: comparing judges against people is what the papers' tables do. Inter-rater
agreement (Krippendorff's alpha) is a table of its own.

The figures are written into each run, ``<run>/agreement/<study id>/``: ``agreement.json`` (every figure,
the merged ratings, what was left out and why), ``tables.md``, ``tables.csv`` and ``tables.tex``; the
run's report shows them as its "Agreement with people" section (:func:`agreement_sections`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import ConstantInputWarning

from ..files import atomic_write_json, atomic_write_text, inside
from ..results import Cell, PaperTable
from ..version import __version__
from .protocols import level_of, protocol
from .ratings import Ratings, krippendorff_alpha, merge, read_ratings
from .sample import (
    STUDY_FILE,
    StudyError,
    file_digest,
    finished_evaluations,
    judge_results,
    load_study,
    open_run,
)

__all__ = ["compute_agreement", "tables", "write_agreement", "agreement_sections", "find_study", "AGREEMENT_DIR"]

AGREEMENT_DIR = "agreement"
RESULT_FILE = "agreement.json"


def find_study(ratings: Sequence[str | os.PathLike], study: str | os.PathLike | None = None) -> dict[str, Any]:
    """The study named, else the one the ratings sit in (a study folder, or its ``ratings/`` folder)."""
    if study is not None:
        return load_study(study)
    for p in map(Path, ratings):
        for folder in (p, p.parent, p.parent.parent):
            if (folder / STUDY_FILE).is_file():
                return load_study(folder)
    raise StudyError(f"no {STUDY_FILE} beside the ratings given: name the study folder with --study")


def _runs(study: dict[str, Any], paths: Sequence[str | os.PathLike]) -> list[Any]:
    """The study's runs, in the study's order, from the folders given."""
    given = {}
    for p in paths:
        run = open_run(p)
        given[run.name] = run
    wanted = [r["name"] for r in study["runs"]]
    missing = [n for n in wanted if n not in given]
    extra = [n for n in given if n not in wanted]
    if missing or extra:
        raise StudyError(f"study {study['id']} rated images of the runs {', '.join(wanted)}"
                         + (f"; give the folder of {', '.join(missing)}" if missing else "")
                         + (f"; {', '.join(extra)} is not one of them" if extra else ""))
    return [given[n] for n in wanted]


def _moved(study: dict[str, Any], runs: list[Any]) -> tuple[set[str], list[str]]:
    """Items whose image is no longer in its run as it was rated (gone, or another file now), and why."""
    folders = {run.name: run.images_dir for run in runs}
    gone, problems = set(), []
    for it in study["items"]:
        for img in it["images"]:
            path = inside(folders[img["run"]], img["key"])
            if not path.is_file() or file_digest(path) != img["sha256"]:
                what = "is gone" if not path.is_file() else "is another file now"
                problems.append(f"item {it['id']}: the image {img['key']} of run {img['run']} {what} (not the image "
                                "rated); its ratings are left out")
                gone.add(it["id"])
                break
    return gone, problems


def _mean_interval(values: np.ndarray) -> list[float]:
    """The 95% bootstrap interval of a share (the mean of 0/1 hits)."""
    from ..stats import bootstrap_ci

    return list(bootstrap_ci(values))


def _with_intervals(figures: dict[str, Any], pairs: Callable[[str | None], tuple[np.ndarray, np.ndarray]]) -> None:
    """Add the 95% bootstrap intervals of tau and rho (``<name>_ci``) to the pooled figures and each group's;
    ``pairs(group)``: the two columns correlated there."""
    from ..stats import paired_bootstrap_ci

    for group, target in [(None, figures), *figures.get("per_group", {}).items()]:
        x, y = pairs(group)
        for name in ("kendall_tau", "spearman_rho"):
            target[f"{name}_ci"] = list(paired_bootstrap_ci(x, y, name))


def _floats(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray([math.nan if v is None else float(v) for v in values], dtype=float)


def _scale(items: list[dict[str, Any]], merged: dict[str, Any], judged: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from ..meta_eval import human_correlation

    def score(it: dict[str, Any]) -> float | None:
        r = judged[it["images"][0]["run"]].get(it["images"][0]["key"])
        return None if r is None else r.score

    x, y = _floats([score(it) for it in items]), _floats([merged[it["id"]]["human"] for it in items])
    groups = np.asarray([it["group"] for it in items])
    figures = human_correlation(x, y, groups=groups)

    def pairs(group: str | None) -> tuple[np.ndarray, ...]:
        keep = ~(np.isnan(x) | np.isnan(y)) & (True if group is None else groups == group)
        return x[keep], y[keep]

    _with_intervals(figures, pairs)
    return figures


def _preference(items: list[dict[str, Any]], merged: dict[str, Any], judged: dict[str, dict[str, Any]]
                ) -> dict[str, Any]:
    from ..meta_eval import preference_agreement, preference_verdicts

    def score(img: dict[str, Any]) -> float | None:
        r = judged[img["run"]].get(img["key"])
        return None if r is None else r.score

    a, b = _floats([score(it["images"][0]) for it in items]), _floats([score(it["images"][1]) for it in items])
    human = np.asarray([merged[it["id"]]["human"] for it in items], dtype=float)
    choices = ["A" if h > 0 else "B" if h < 0 else "tie" for h in human]
    groups = np.asarray([it["group"] for it in items])
    figures = preference_agreement(a, b, choices, groups=groups)
    # with the tie threshold that fits the people best (Deutsch et al., 2023, whom R2I-Bench cites)
    calibrated = preference_agreement(a, b, choices, tie_epsilon="calibrated")
    figures["calibrated"] = {"pairwise_accuracy": calibrated["pairwise_accuracy"],
                             "tie_epsilon": calibrated.get("tie_epsilon")}
    verdict = _floats(preference_verdicts(a, b))

    def kept(group: str | None) -> np.ndarray:
        return ~np.isnan(verdict) & (True if group is None else groups == group)

    _with_intervals(figures, lambda group: ((a - b)[kept(group)], human[kept(group)]))
    for group, target in [(None, figures), *figures.get("per_group", {}).items()]:
        target["pairwise_accuracy_ci"] = _mean_interval((verdict == human)[kept(group)].astype(float))
    return figures


def _judge_question(result: Any, question: dict[str, Any]) -> float | None:
    """The judge's answer to the study's question (by id; a question without one by its place)."""
    if result is None:
        return None
    for i, q in enumerate(result.questions, 1):
        if (q.id or f"q{i}") == question["id"] and q.question == question["question"]:
            return q.score
    return None


def _questions(items: list[dict[str, Any]], merged: dict[str, Any], judged: dict[str, dict[str, Any]]
               ) -> dict[str, Any]:
    from ..meta_eval import human_correlation

    judge, human, hits, groups = [], [], [], []
    for it in items:
        result = judged[it["images"][0]["run"]].get(it["images"][0]["key"])
        answers = merged[it["id"]]["questions"]
        for q in it["questions"]:
            if q["id"] not in answers:
                continue
            j, people = _judge_question(result, q), answers[q["id"]]
            judge.append(j)
            human.append(people["human"])
            groups.append(q["group"] or "questions")
            majority = people["majority"]
            hits.append(math.nan if j is None or majority is None else
                        float(level_of(j, q["levels"]) == level_of(majority, q["levels"])))
    x, y, hit, groups = _floats(judge), _floats(human), np.asarray(hits, dtype=float), np.asarray(groups)
    figures = human_correlation(x, y, groups=groups)
    for group, target in [(None, figures), *figures.get("per_group", {}).items()]:
        h = hit[(True if group is None else groups == group) & ~np.isnan(hit)]
        target["accuracy"] = float(np.mean(h)) if h.size else math.nan
        target["n_accuracy"] = int(h.size)
        target["n_no_majority"] = int(np.sum((True if group is None else groups == group) & ~np.isnan(x)
                                             & np.isnan(hit)))

    def pairs(group: str | None) -> tuple[np.ndarray, ...]:
        sel = np.ones(len(x), bool) if group is None else groups == group
        keep = sel & ~(np.isnan(x) | np.isnan(y))
        return x[keep], y[keep]

    _with_intervals(figures, pairs)
    for group, target in [(None, figures), *figures.get("per_group", {}).items()]:
        target["accuracy_ci"] = _mean_interval(hit[(True if group is None else groups == group) & ~np.isnan(hit)])
    return figures


def _raters(study: dict[str, Any], ratings: Ratings, merged: dict[str, Any]) -> dict[str, Any]:
    """Krippendorff's alpha, pooled and per group, and the counts."""
    kind = study["kind"]
    items = {it["id"]: it for it in study["items"]}
    if kind == "scale":
        lo, hi = study["protocol"]["scale"]
        level, domain = "ordinal", list(range(lo, hi + 1))
    elif kind == "preference":
        level, domain = "nominal", [-1, 0, 1]
    else:
        level = "ordinal"
        domain = sorted({(lo + hi) / 2 for it in study["items"] for q in it.get("questions", []) for lo, hi in q["levels"]})
    units: dict[str, list[dict[str, float]]] = {}
    for item_id in merged:
        answers = ratings.answers[item_id]
        if kind == "questions":
            for qid in items[item_id]["questions"]:
                unit = {r: a[qid["id"]] for r, a in answers.items() if qid["id"] in a}
                if unit:
                    units.setdefault(items[item_id]["group"], []).append(unit)
        else:
            units.setdefault(items[item_id]["group"], []).append(answers)
    everything = [u for us in units.values() for u in us]

    def alpha(us: list[dict[str, float]]) -> float:
        return krippendorff_alpha(us, study["raters"], level=level, domain=domain)

    return {"alpha": alpha(everything), "level": level,
            "per_group": {g: alpha(units[g]) for g in study["groups"] if g in units},
            "items": len(merged), "ratings": sum(len(ratings.answers[i]) for i in merged),
            "raters": len(ratings.files), "fewer_raters": sum(len(ratings.answers[i]) < study["raters_per_item"]
                                                               for i in merged)}


_COMPUTE = {"scale": _scale, "preference": _preference, "questions": _questions}


def compute_agreement(study: dict[str, Any], runs: Sequence[str | os.PathLike], ratings: Sequence[str | os.PathLike],
                      *, evaluations: Sequence[str] | None = None) -> dict[str, Any]:
    """The agreement of each evaluation (judge) of ``runs`` with the people who rated ``study``
    (``ratings``: the raters' files, or folders of them). Returns every figure, the paper's tables
    (``tables``, :class:`~t2ireason.results.PaperTable`), the merged ratings and ``problems``: each
    thing left out, one line each."""
    opened = _runs(study, runs)
    common = [n for n in finished_evaluations(opened[0]) if all(n in finished_evaluations(r) for r in opened[1:])]
    if evaluations:
        unknown = [e for e in evaluations if e not in common]
        if unknown:
            raise StudyError(f"evaluation(s) {', '.join(unknown)} not finished in every run of the study "
                             f"(finished in all: {', '.join(common) or 'none'})")
        common = list(evaluations)
    if not common:
        raise StudyError("no evaluation is finished in every run of the study: score the runs first "
                         "(`t2ireason evaluate`), then compare")
    gone, problems = _moved(study, opened)
    read = read_ratings(study, ratings)
    problems = read.problems + problems
    if not read.files:
        raise StudyError(f"no usable ratings file among {', '.join(map(str, ratings))}"
                         + (f": {problems[0]}" if problems else ""))
    merged = merge(study, read, gone)
    items = [it for it in study["items"] if it["id"] in merged]
    per_evaluation = {}
    for name in common:
        judged = {run.name: judge_results(run, name) for run in opened}
        with warnings.catch_warnings():  # constant ratings or scores in a group: its figure is not defined (–)
            warnings.simplefilter("ignore", ConstantInputWarning)
            figures = _COMPUTE[study["kind"]](items, merged, judged)
        if figures.get("n_excluded"):
            what = "questions" if study["kind"] == "questions" else "rated items"
            problems.append(f"evaluation {name}: {figures['n_excluded']} {what} have no judge score (the judge "
                            "failed, or did not score them); left out of its figures")
        per_evaluation[name] = figures
    out = {"study": study["id"], "title": study["title"], "kind": study["kind"], "benchmark": study["benchmark"],
           "computed": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), "t2ireason_version": __version__,
           "runs": [r.name for r in opened], "evaluations": per_evaluation,
           "raters": _raters(study, read, merged), "files": read.files, "problems": problems,
           "left_out": sorted(gone), "merged": merged}
    out["tables"] = tables(study, out)
    return out


# ---------------------------------------------------------------------------------------------- tables

def _cell(figures: dict[str, Any], key: str) -> Cell:
    low, high = figures.get(f"{key}_ci") or (None, None)
    return Cell.of({"mean": figures.get(key), "ci_low": low, "ci_high": high})


def tables(study: dict[str, Any], result: dict[str, Any]) -> list[PaperTable]:
    """The paper's table for the study's kind (one row per evaluation), then the raters' agreement."""
    kind, proto = study["kind"], protocol(study["benchmark"])
    decimals = proto.decimals if kind == proto.kind else 3
    groups = study["groups"]
    rows: dict[str, dict[str, Cell]] = {}
    for name, f in result["evaluations"].items():
        per = f.get("per_group", {})
        cells: dict[str, Cell] = {}
        if kind == "preference":
            for g, title in [*((g, t) for g, t in groups.items() if g in per), (None, "Overall")]:
                src = f if g is None else per[g]
                cells |= {f"{title} acc.": _cell(src, "pairwise_accuracy"), f"{title} τ": _cell(src, "kendall_tau"),
                          f"{title} ρ": _cell(src, "spearman_rho")}
            cells["Overall acc. (tie-calibrated)"] = Cell.of(f["calibrated"]["pairwise_accuracy"])
        elif kind == "scale":
            for g, title in groups.items():
                if g in per:
                    cells |= {f"{title} τ": _cell(per[g], "kendall_tau"), f"{title} ρ": _cell(per[g], "spearman_rho")}
            if len(per) > 1:
                cells |= {"Average τ": Cell.of(f["group_average"]["kendall_tau"]),
                          "Average ρ": Cell.of(f["group_average"]["spearman_rho"])}
            cells |= {"All τ": _cell(f, "kendall_tau"), "All ρ": _cell(f, "spearman_rho")}
        else:
            cells |= {f"{g} acc.": _cell(src, "accuracy") for g, src in per.items()}
            cells |= {"All acc.": _cell(f, "accuracy"), "All τ": _cell(f, "kendall_tau"),
                      "All ρ": _cell(f, "spearman_rho"), "questions": Cell(f["n"])}
        rows[name] = cells
    columns = list(dict.fromkeys(c for cells in rows.values() for c in cells))
    raters = result["raters"]
    n_runs = len(study["runs"])
    if kind == "scale":
        lo, hi = study["protocol"]["scale"]
        title = (f"{proto.table}: correlation with human ratings" if kind == proto.kind
                 else "Correlation with human ratings")
        note = (f"Kendall's τ-b and Spearman's ρ between the judge's per-image score and the mean of the raters' "
                f"{lo}-{hi} ratings; {raters['items']} images of {n_runs} run(s)"
                + ("; Average is the mean over the groups, All pools every image" if len(groups) > 1 else ""))
    elif kind == "preference":
        title = (f"{proto.table}: agreement with human A/B/tie choices" if kind == proto.kind
                 else "Agreement with human A/B/tie choices")
        note = (f"{study['runs'][0]['name']} (A) against {study['runs'][1]['name']} (B), {raters['items']} prompts; "
                "pairwise accuracy counts the judge's choice (the higher score, a tie when equal) against the "
                "raters' (the sign of their mean verdict); tie-calibrated: margins up to the threshold that fits the "
                "raters best count as ties (Deutsch et al., 2023; agreement.json gives it); τ and ρ correlate the "
                "raters' verdict with the judge's margin A - B")
    else:
        title = "Per-question agreement with human answers"
        note = ("accuracy: the judge's answer is the one most raters gave (questions without a majority left out); "
                "τ and ρ between the judge's answers and the raters' mean answers")
    out = [PaperTable(title, columns, rows, note + "; – where not defined (ratings or scores all equal)", decimals)]
    alpha = {f"{groups.get(g, g)} α": v for g, v in raters["per_group"].items()}
    alpha |= {"All α": raters["alpha"], "items": raters["items"], "ratings": raters["ratings"],
              "raters": raters["raters"]}
    out.append(PaperTable.one_row(
        "Inter-rater agreement (Krippendorff's α)", "raters", alpha, decimals=3,
        note=f"{raters['level']} α over the items rated by two raters or more; {raters['fewer_raters']} item(s) "
             f"rated by fewer than the study's {study['raters_per_item']}; "
             f"{len(result['problems'])} thing(s) left out (agreement.json lists them)"))
    return out


def _table_from_dict(d: dict[str, Any]) -> PaperTable:
    return PaperTable(d["title"], d["columns"], {label: {c: Cell(**cell) for c, cell in cells.items()}
                                                 for label, cells in d["rows"].items()}, d["note"], d["decimals"])


def write_agreement(result: dict[str, Any], runs: Sequence[str | os.PathLike]) -> list[Path]:
    """Write ``result`` into each run's ``agreement/<study id>/``; returns the folders."""
    from ..report.latex import ONE_COLUMN, to_latex
    from ..report.tables import to_csv, to_markdown

    folders = []
    for run in runs:
        folder = inside(Path(run), AGREEMENT_DIR, result["study"])
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / RESULT_FILE,
                          {**result, "tables": [dataclasses.asdict(t) for t in result["tables"]]})
        atomic_write_text(folder / "tables.md", f"## Agreement with people: {result['title']}\n\n"
                          + to_markdown(result["tables"]))
        atomic_write_text(folder / "tables.csv", to_csv(result["tables"]))
        atomic_write_text(folder / "tables.tex", to_latex(result["tables"], intervals=True, width=ONE_COLUMN))
        folders.append(folder)
    return folders


def agreement_sections(runs: Sequence[str | os.PathLike]) -> list[tuple[str, list[PaperTable]]]:
    """``(title, tables)`` of every study whose agreement was computed for one of ``runs`` (each study
    once), for the runs' report."""
    seen, out = set(), []
    for run in runs:
        for file in sorted(Path(run).glob(f"{AGREEMENT_DIR}/*/{RESULT_FILE}")):
            data = json.loads(file.read_text(encoding="utf-8"))
            if data["study"] in seen:
                continue
            seen.add(data["study"])
            out.append((f"Agreement with people: {data['title']}", [_table_from_dict(t) for t in data["tables"]]))
    return out

