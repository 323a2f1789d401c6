"""People against the judges: a study's merged ratings joined to every evaluation of the runs, as the
papers' meta-evaluation tables report them.

- ``scale`` (T2I-ReasonBench Table 1, PRISM-Bench Table 3, MT2IE Tables 1-2): Kendall's tau-b and
  Spearman's rho between the evaluation's per-image score and the mean of the raters' scores, per
  dimension or track, their mean over the groups (T2I-ReasonBench's "Average") and over every image pooled;
- ``preference`` (R2I-Bench Tables 4 and 21): pairwise accuracy with ties, tau and rho between the
  people's A/B/tie verdict and the evaluation's margin, per category, their average and overall;
- ``questions``: per-question accuracy (the judge's answer is the one most raters gave), with tau and rho
  between the judge's answers and the raters' mean answers.

Every evaluation finished in all the study's runs is a row, whatever its metric (the benchmark's own,
VQAScore, CLIPScore, DSG, VIEScore, a user's module: ``scores.json``'s ``metric``), each image's score read
as the run reads any evaluation's; the rows in the order of the paper's table (``Protocol.rows``), each
labelled by its metric and judge (:mod:`t2ireason.study.layouts` lays the tables out). Each figure pooled or
per group comes with its n, and is withheld from fewer than ``MIN_ITEMS`` (3) items (τ of two is ±1), and
with its 95% percentile bootstrap interval over the images (pairs, questions) of that group
(:func:`t2ireason.stats.paired_bootstrap`, ``bootstrap`` for a share; seeded); a resample with no
statistic (its ratings or scores all equal) is dropped from the interval and counted (``resamples``, said
in the tables' notes). The statistics themselves are :mod:`t2ireason.meta_eval`'s. Inter-rater agreement
(Krippendorff's alpha) is a table of its own.

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
from .layouts import MIN_ITEMS, metric_title, tables
from .protocols import group_of, level_of, protocol
from .ratings import Ratings, krippendorff_alpha, merge, read_ratings
from .sample import (
    STUDY_FILE,
    StudyError,
    file_digest,
    finished_evaluations,
    judge_results,
    key_file,
    load_study,
    open_run,
)

__all__ = ["compute_agreement", "tables", "write_agreement", "agreement_sections", "find_study", "AGREEMENT_DIR"]

AGREEMENT_DIR = "agreement"
RESULT_FILE = "agreement.json"


def find_study(ratings: Sequence[str | os.PathLike], study: str | os.PathLike | None = None) -> dict[str, Any]:
    """The study named (its key, or its raters' folder with the key beside it), else the one the ratings sit in
    (the raters' folder, or its ``ratings/`` folder: the key beside that folder)."""
    if study is not None:
        return load_study(study)
    for p in map(Path, ratings):
        for folder in (p, p.parent, p.parent.parent):
            if key_file(folder).is_file() or (folder / STUDY_FILE).is_file():
                return load_study(folder)
    raise StudyError("no study key (<study>.key.json beside the raters' folder <study>) found from the ratings given: "
                     "name it with --study")


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
    """Add the 95% bootstrap intervals of tau and rho (``<name>_ci``) to the pooled figures and each group's, and
    how many resamples had no statistic (``<name>_ci_degenerate``); ``pairs(group)``: the two columns correlated
    there."""
    from ..stats import paired_bootstrap

    for group, target in [(None, figures), *figures.get("per_group", {}).items()]:
        x, y = pairs(group)
        for name in ("kendall_tau", "spearman_rho"):
            found = paired_bootstrap(x, y, name)
            target[f"{name}_ci"] = [found.low, found.high]
            target[f"{name}_ci_degenerate"] = found.degenerate
            target[f"{name}_ci_resamples"] = found.resamples


def _dropped_resamples(name: str, figures: dict[str, Any], groups: dict[str, str]) -> list[dict[str, Any]]:
    """Each interval of ``figures`` that left out resamples with no statistic: where, and how many."""
    out = []
    for group, target in [(None, figures), *figures.get("per_group", {}).items()]:
        for stat in ("kendall_tau", "spearman_rho"):
            k = target.get(f"{stat}_ci_degenerate") or 0
            if k:
                out.append({"evaluation": name, "group": None if group is None else groups.get(group, group),
                            "statistic": stat, "degenerate": k, "resamples": target[f"{stat}_ci_resamples"]})
    return out


_COUNTED = (("kendall_tau", "n"), ("spearman_rho", "n"), ("pairwise_accuracy", "n"), ("accuracy", "n_accuracy"))


def _withhold_tiny(figures: dict[str, Any]) -> None:
    """Each figure (pooled, per group) from fewer than :data:`MIN_ITEMS` items set to NaN, its interval with it, its
    value kept under ``withheld``; the averages over the groups taken again over the figures kept."""
    for target in [figures, *figures.get("per_group", {}).values()]:
        for stat, count in _COUNTED:
            if stat not in target or count not in target or target[count] >= MIN_ITEMS:
                continue
            if not math.isnan(target[stat]):
                target.setdefault("withheld", {})[stat] = target[stat]
            target[stat] = math.nan
            if f"{stat}_ci" in target:
                target[f"{stat}_ci"] = [None, None]
                target[f"{stat}_ci_degenerate"] = 0
    if "calibrated" in figures and figures.get("n", 0) < MIN_ITEMS:
        figures["calibrated"]["pairwise_accuracy"] = math.nan
    per = list(figures.get("per_group", {}).values())
    for stat in figures.get("group_average", {}):
        kept = [p[stat] for p in per if not math.isnan(p[stat])]
        figures["group_average"][stat] = float(np.mean(kept)) if kept else math.nan


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

    # a group of fewer than MIN_ITEMS units: its alpha withheld (NaN, kept under "withheld"), as the tables' figures
    per_group = {g: alpha(units[g]) for g in study["groups"] if g in units}
    withheld = {g: a for g, a in per_group.items() if len(units[g]) < MIN_ITEMS and not math.isnan(a)}
    return {"alpha": alpha(everything) if len(everything) >= MIN_ITEMS else math.nan, "level": level,
            "per_group": {g: math.nan if len(units[g]) < MIN_ITEMS else a for g, a in per_group.items()},
            "per_group_n": {g: len(units[g]) for g in per_group}, "withheld": withheld, "n": len(everything),
            "items": len(merged), "ratings": sum(len(ratings.answers[i]) for i in merged),
            "raters": len(ratings.files), "fewer_raters": sum(len(ratings.answers[i]) < study["raters_per_item"]
                                                               for i in merged)}


_COMPUTE = {"scale": _scale, "preference": _preference, "questions": _questions}


#: the benchmarks whose metric asks each row's own questions (T2I-ReasonBench Table 1's "LLM" column says whose)
_QUESTIONS = ("t2i-reasonbench", "r2i-bench", "worldgenbench")


def _questions_source(run: Any) -> str:
    """Whose questions the run's rows hold: the LLM that made them (``t2ireason criteria``), else the release's
    (or the sample's shipped with the package)."""
    return run.questions_by()


def _rows(study: dict[str, Any], runs: list[Any], names: list[str]) -> list[dict[str, Any]]:
    """Each evaluation as a table row: its metric (``scores.json``'s, else its settings', else the benchmark's), its
    judge, its label (metric and judge), in the order of the paper's table."""
    from ..judges.spec import judge_name

    bench = runs[0].bench
    rows = []
    for name in names:
        scores = runs[0].scores(name)
        metric = scores.get("metric") or (scores.get("settings") or {}).get("metric") or bench.metric
        judge = judge_name(scores.get("judge") or {})
        label = metric_title(metric) + (f" ({judge})" if judge else "")
        asked = (scores.get("settings") or {}).get("questions")
        rows.append({"evaluation": name, "metric": metric, "judge": judge, "own": metric == bench.metric,
                     "label": label, "questions": asked})
    if any(r["own"] and r["questions"] for r in rows):  # T2I-ReasonBench Table 1: a row per question LLM x judge
        for r in rows:
            if r["own"]:
                by = runs[0].questions_by(r["questions"])
                r["label"] = f"{metric_title(r['metric'])} ({by} × {r['judge'] or r['evaluation']})"
    # in the order of the paper's table (its metrics: PROTOCOLS' rows; the benchmark's own first where the paper has
    # no table), then any other metric in the order the evaluations came; one metric's evaluations in that order too
    order = {m: i for i, m in enumerate(protocol(study["benchmark"]).rows or (bench.metric,))}
    rows.sort(key=lambda r: order.get(r["metric"], len(order)))
    labels = [r["label"] for r in rows]
    for r in rows:  # two evaluations alike (another preset, other options): told apart by their names
        if labels.count(r["label"]) > 1:
            r["label"] += f" [{r['evaluation']}]"
    return rows


def _judges_row(study: dict[str, Any], runs: list[Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """PRISM-Bench Table 3's last row: two judges of the benchmark's metric against each other over the runs'
    mean scores of each track (every image of the runs), where the study has two such evaluations."""
    from ..meta_eval import judge_agreement

    own = [r for r in rows if r["own"]]
    if study["benchmark"] != "prism-bench" or study["kind"] != "scale" or len(own) < 2:
        return None
    a, b = own[:2]
    label = f"{a['judge'] or a['evaluation']} vs. {b['judge'] or b['evaluation']}"
    if len(runs) < 3:
        return {"label": label, "why": f"{label}: not computed, the two judges' agreement over the runs' mean scores "
                                       f"needs three runs or more ({len(runs)} rated)"}
    scores: list[dict[str, float | None]] = [{}, {}]
    models, groups = {}, {}
    for run in runs:
        track = {key: group_of(study["benchmark"], row) for key, row, _ in run.image_items(failed=True)}
        for side, row in zip(scores, (a, b)):
            for key, r in judge_results(run, row["evaluation"]).items():
                if key in track:
                    side[f"{run.name}/{key}"] = r.score
                    models[f"{run.name}/{key}"], groups[f"{run.name}/{key}"] = run.name, track[key]
    ids = [i for i in scores[0] if i in scores[1]]
    with warnings.catch_warnings():  # a track where one judge gives every run the same mean: not defined (–)
        warnings.simplefilter("ignore", ConstantInputWarning)
        found = judge_agreement({i: scores[0][i] for i in ids}, {i: scores[1][i] for i in ids},
                                models={i: models[i] for i in ids}, groups={i: groups[i] for i in ids})["model"]
    return {"label": label, "evaluations": [a["evaluation"], b["evaluation"]], "n_models": found["n_models"],
            "per_group": {g: {"kendall_tau": v["kendall_tau"], "spearman_rho": v["spearman_rho"]}
                          for g, v in found.get("per_group", {}).items()},
            "kendall_tau": found["kendall_tau"], "spearman_rho": found["spearman_rho"]}


def compute_agreement(study: dict[str, Any], runs: Sequence[str | os.PathLike], ratings: Sequence[str | os.PathLike],
                      *, evaluations: Sequence[str] | None = None) -> dict[str, Any]:
    """The agreement of each evaluation of ``runs`` (every metric, every judge) with the people who rated
    ``study`` (``ratings``: the raters' files, or folders of them). Returns every figure, the paper's tables
    (``tables``, :class:`~t2ireason.results.PaperTable`), the rows (``rows``: each evaluation's metric, judge and
    label), the merged ratings, ``problems`` (each thing left out, one line each) and ``resamples`` (each
    interval that left out resamples with no statistic)."""
    opened = _runs(study, runs)
    finished = [finished_evaluations(r) for r in opened]
    common = [n for n in finished[0] if all(n in f for f in finished[1:])]
    problems: list[str] = []
    if evaluations:
        unknown = [e for e in evaluations if e not in common]
        if unknown:
            raise StudyError(f"evaluation(s) {', '.join(unknown)} not finished in every run of the study "
                             f"(finished in all: {', '.join(common) or 'none'})")
        common = list(evaluations)
    else:
        for name in dict.fromkeys(n for f in finished for n in f if n not in common):
            have = [r.name for r, f in zip(opened, finished) if name in f]
            problems.append(f"evaluation {name} is finished in {', '.join(have)} only, not in every run the study "
                            "rated; left out (score the others with it to compare it)")
    if not common:
        raise StudyError("no evaluation is finished in every run of the study: score the runs first "
                         "(`t2ireason evaluate`), then compare")
    gone, moved = _moved(study, opened)
    read = read_ratings(study, ratings)
    problems = read.problems + moved + problems
    if not read.files:
        raise StudyError(f"no usable ratings file among {', '.join(map(str, ratings))}"
                         + (f": {problems[0]}" if problems else ""))
    merged = merge(study, read, gone)
    items = [it for it in study["items"] if it["id"] in merged]
    rows = _rows(study, opened, common)
    if study["kind"] == "questions":  # the judge's questions of one evaluation: those of its metric ask them too
        asked = next((r["metric"] for r in rows if r["evaluation"] == study["runs"][0]["evaluation"]), None)
        for r in rows:
            if asked is not None and r["metric"] != asked:
                problems.append(f"evaluation {r['evaluation']} ({metric_title(r['metric'])}) asks none of the "
                                "study's questions; left out")
        rows = [r for r in rows if asked is None or r["metric"] == asked]
    per_evaluation, resamples = {}, []
    for row in rows:
        name = row["evaluation"]
        judged = {run.name: judge_results(run, name) for run in opened}
        with warnings.catch_warnings():  # constant ratings or scores in a group: its figure is not defined (–)
            warnings.simplefilter("ignore", ConstantInputWarning)
            figures = _COMPUTE[study["kind"]](items, merged, judged)
        _withhold_tiny(figures)
        if figures.get("n_excluded"):
            what = "questions" if study["kind"] == "questions" else "rated items"
            problems.append(f"evaluation {name}: {figures['n_excluded']} {what} have no score (the judge failed, or "
                            "did not score them); left out of its figures")
        per_evaluation[name] = figures
        resamples += _dropped_resamples(name, figures, study["groups"])
    out = {"study": study["id"], "title": study["title"], "kind": study["kind"], "benchmark": study["benchmark"],
           "computed": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), "t2ireason_version": __version__,
           "runs": [r.name for r in opened], "rows": rows, "evaluations": per_evaluation,
           "questions": (", ".join(dict.fromkeys(_questions_source(run) for run in opened))
                         if study["benchmark"] in _QUESTIONS and not any(r["questions"] for r in rows)
                         else None),  # an evaluation with questions of its own says whose in its row's label
           "judges": _judges_row(study, opened, rows),
           "raters": _raters(study, read, merged), "files": read.files, "problems": problems, "resamples": resamples,
           "left_out": sorted(gone), "merged": merged}
    out["tables"] = tables(study, out)
    return out


# ---------------------------------------------------------------------------------------------- files

def _table_from_dict(d: dict[str, Any]) -> PaperTable:
    return PaperTable(d["title"], d["columns"], {label: {c: Cell(**cell) for c, cell in cells.items()}
                                                 for label, cells in d["rows"].items()}, d["note"], d["decimals"])


def write_agreement(result: dict[str, Any], runs: Sequence[str | os.PathLike]) -> list[Path]:
    """Write ``result`` into each run's ``agreement/<study id>/``; returns the folders."""
    from ..report.latex import ONE_COLUMN, ONE_COLUMN_HEIGHT, to_latex
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
        atomic_write_text(folder / "tables.tex", to_latex(result["tables"], intervals=True, width=ONE_COLUMN,
                                                          height=ONE_COLUMN_HEIGHT))
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
            out.append((f"Agreement with people: {data['title']} ({', '.join(data['runs'])})",
                        [_table_from_dict(t) for t in data["tables"]]))
    return out

