"""The report's sections for evaluations made with another metric than their benchmark's own (``t2ireason evaluate
--metric``: VQAScore, CLIPScore, DSG, VIEScore, TIFA, a user's module): one section per benchmark and metric,
beside the benchmark's own and never among its rows (their scales and questions differ), each with the metric's
own tables (:func:`t2ireason.evaluation_metrics.evaluation_tables`), its figures and the gallery of its per-image
results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..evaluation_metrics import evaluation_tables, metric_of, table_scorer
from ..results import PaperTable
from .html import Section

__all__ = ["MetricPart", "is_own", "metric_parts"]


@dataclass
class MetricPart:
    """One section of the report: its heading, tables, figures (PNG and PDF) and HTML section."""

    heading: str
    tables: list[PaperTable]
    figures: list[Path]
    section: Section


def is_own(run: Any, evaluation: str) -> bool:
    """Whether the evaluation scored with its benchmark's own metric (those made before ``metric`` was recorded did)."""
    return metric_of(run.scores(evaluation), run.bench) == run.bench.metric


def _labels(group: Sequence[tuple[Any, str, str]]) -> list[str]:
    """Each evaluation's row label in its metric's section: the run's name where the runs differ, else the
    report's own label (run and evaluation)."""
    names = [run.name for run, _, _ in group]
    return names if len(set(names)) == len(names) else [label for _, _, label in group]


def _about(run: Any, evaluation: str, label: str, metric: str) -> dict[str, Any]:
    """What made one row, as plain values: the metric, its judge (and the LLM that wrote its questions), the images."""
    from ..judges.spec import judge_name, portable_model

    scores = run.scores(evaluation)
    judge = scores.get("judge") or {}
    model = judge_name(judge)
    generator = (run.manifest.get("generation") or {}).get("model")
    asked = judge.get("questions_by") or {}
    return {"model": label, "evaluation": evaluation, "metric": metric,
            "judge": f"{judge.get('backend')}:{model}" if model else judge.get("backend"), "preset": judge.get("preset"),
            "questions": f"written by {portable_model(str(asked['model']))[0]}" if asked.get("model") else None,
            "generator": portable_model(str(generator))[0] if generator else None,
            "images": scores["num_images"], "scored": (scores.get("coverage") or {}).get("text"),
            "failed": scores["num_failed"],
            "not generated": scores.get("num_not_generated", 0), "re-asks": scores["num_reasks"],
            "t2i-reason": scores.get("t2ireason_version")}


def metric_parts(entries: Sequence[tuple[Any, str, str]], out: Path) -> list[MetricPart]:
    """A section for each benchmark and metric among ``entries`` ((run, evaluation, label) of evaluations scored
    with another metric than their benchmark's own), its figures written under ``out / "plots"``."""
    from ..runs import slug
    from .plots import layout, score_distribution, table_bars
    from .tables import side_by_side

    groups: dict[tuple[str, str], list[tuple[Any, str, str]]] = {}
    for entry in entries:
        run, name, _ = entry
        groups.setdefault((run.bench.name, metric_of(run.scores(name), run.bench)), []).append(entry)
    parts = []
    for (bench_name, metric), group in groups.items():
        bench = group[0][0].bench
        pretty = table_scorer(metric, bench).pretty_name
        heading = f"{bench.pretty_name} prompts · {pretty}"
        labels = _labels(group)
        tables = side_by_side([evaluation_tables(run.scores(name), bench, label)
                               for (run, name, _), label in zip(group, labels)])
        results = {label: run.results(name) for (run, name, _), label in zip(group, labels)}
        from .protocol import run_protocol

        for (run, name, _), label in zip(group, labels):  # every run row says how it was measured (no paper rows)
            protocol = run_protocol(run, run.scores(name), results[label], None)
            for table in tables:
                if label in table.rows:
                    table.protocols[label] = protocol
        stem = f"{bench_name}_{slug(table_scorer(metric, bench).short_name, 'metric')}"
        figures: list[Path] = []
        for number, table in enumerate(tables):
            if table.rows and layout(table).axes:
                figures += table_bars(table, out / "plots" / f"{stem}{f'_{number + 1}' if number else ''}_bars")
        figures += score_distribution({label: [r.score for r in rs] for label, rs in results.items()},
                                      out / "plots" / f"{stem}_scores", title=f"{heading}: per-image scores",
                                      unscorable={label: sum(r.unscorable for r in rs) for label, rs in results.items()})
        about = [_about(run, name, label, pretty) for (run, name, _), label in zip(group, labels)]
        section = Section(heading, results, tables, [f for f in figures if f.suffix == ".png"], about)
        parts.append(MetricPart(heading, tables, figures, section))
    return parts


def mt2ie_method_tables(summaries: dict[str, dict[str, Any]]) -> list[PaperTable]:
    """MT2IE output folders (name -> ``summary.json``) scored with ranking metrics beside the agent's: seed 002's
    Table 3 (one folder) or Table 5 (several: the agent with several MLLMs, each folder's methods side by side),
    Kendall's tau of each method's ranking against the reference, and each model's mean rank by each method. A
    label two folders share is told apart by the folder's name."""
    from ..benchmarks.mt2ie.rankings import kendall_table, mean_rank_table

    given = {folder: s["rankings"] for folder, s in summaries.items() if s.get("rankings")}
    if not given:
        return []
    labels = [label for rankings in given.values() for label in rankings]
    rankings = {label if labels.count(label) == 1 else f"{label} [{folder}]": table
                for folder, tables in given.items() for label, table in tables.items()}
    title = ("MT2IE Table 5: Kendall's τ between each method's ranking and the reference" if len(given) > 1
             else "MT2IE Table 3: Kendall's τ between each metric's ranking and the reference")
    tau = kendall_table(rankings, title)
    return ([tau] if tau.columns else []) + [mean_rank_table(rankings)]
