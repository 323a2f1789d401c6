"""The paper-style report of runs side by side (and of MT2IE output folders): its tables, figures and
one HTML page, written from the runs' finished evaluations (:func:`write_report`, ``t2ireason report``)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..benchmarks import get_benchmark
from ..results import coverage
from ..runs import RUN_FILE, Run, RunError, finished_evaluations, slug

__all__ = ["write_report", "figure_name"]


def _is_mt2ie_output(path: Path) -> bool:
    """An output folder of ``t2ireason mt2ie`` (its summary and runs), not a run folder."""
    return not (path / RUN_FILE).is_file() and (path / "summary.json").is_file() and (path / "runs").is_dir()


def figure_name(title: str, benchmark: str = "") -> str:
    """A table's figures' file name, numbered as the paper numbers the table: ``table3`` for "R2I-Bench
    Table 3: R2I-Score", else the title without the benchmark's name (``con-mix-by-subcategory``)."""
    number = re.search(r"\bTable (\d+)\b", title)
    if number:
        return f"table{number.group(1)}"
    if benchmark and title.lower().startswith(benchmark.lower()):
        title = title[len(benchmark):]
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "table"  # no dot: the suffix is the format


def _run_tables(run: Run, evaluation: str, label: str, results: list) -> list:
    """The run's tables of the paper, each numbered as the paper numbers its layout under the run's judge
    (PRISM-Bench's Table 4 for Qwen2.5-VL-72B), the run's row with how it was measured and whether that is
    the protocol of the paper's table (:func:`~t2ireason.report.protocol.run_protocol`)."""
    from ..error_types import error_type_tables
    from .protocol import table_protocol

    scores = run.scores(evaluation)
    tables = run.bench.paper_tables(scores["aggregate"], label)
    for t in tables:
        t.title, t.protocols[label] = table_protocol(run, scores, results, t.title)
    return tables + error_type_tables(run, evaluation, label)  # R2I-Bench's Figure 6, where the types were given


def _change_tables(bench: Any, group: Sequence[tuple[Run, str, str]], results: dict[str, list]) -> list:
    """The tables of a run's changes against another's, where the benchmark's paper has one (T2I-ReasonBench's
    Table 3: a run of LLM-rewritten prompts against the run of the original prompts with the same generator,
    judge and preset: :meth:`~t2ireason.benchmarks.Benchmark.change_tables`)."""
    def key(run: Run, evaluation: str) -> tuple:
        judge = run.scores(evaluation).get("judge") or {}
        return ((run.manifest.get("generation") or {}).get("model"), judge.get("backend"), judge.get("model"),
                judge.get("preset"))

    from .protocol import table_protocol

    originals = {key(run, n): (run, n, label) for run, n, label in group
                 if not (run.manifest.get("generation") or {}).get("rewritten_prompts")}
    tables = []
    for run, n, label in group:
        if (run.manifest.get("generation") or {}).get("rewritten_prompts") and key(run, n) in originals:
            base, base_n, base_label = originals[key(run, n)]
            scores = run.scores(n)
            for t in bench.change_tables(scores["aggregate"], base.scores(base_n)["aggregate"], label, base_label):
                t.title, t.protocols[label] = table_protocol(run, scores, results[label], t.title)
                tables.append(t)
    return tables


def _sweep_tables(group: Sequence[tuple[Run, str, str]]) -> list:
    """Each run's ``t2ireason sweep`` (T2I-ReasonBench Table 1's rows: a row per question LLM x judge), where it has
    one whose pairs are all finished."""
    from ..sweep import SWEEP_FILE, read_sweep, sweep_table

    tables = []
    for run in dict.fromkeys(run for run, _, _ in group):
        if (run.path / SWEEP_FILE).is_file():
            pairs = read_sweep(run)
            if pairs and all((run.evaluation_dir(p.evaluation) / "scores.json").is_file() for p in pairs):
                table = sweep_table(run, pairs)
                table.title += f": {run.name}"
                tables.append(table)
    return tables


def _images_scored(table: Any) -> str:
    """The images each run of a table scored, for its figures: ``images scored: a: 3 of 10 (7 not generated)``."""
    said = [f"{label}: {p.coverage.replace(' images scored', '')}" for label, p in table.protocols.items()
            if p.coverage and label in table.rows]
    return ("images scored: " + "; ".join(said)) if said else ""


def _no_published_rows(name: str, why: str = "") -> str:
    """What ``--published`` says of a benchmark whose paper prints no table of scores to place the runs among."""
    return f"*--published: {name} has no published rows{why}: the runs are shown on their own.*\n\n"


def _run_row(run: Run, evaluation: str, label: str) -> dict[str, Any]:
    """What made one model's results, as plain values for the report (local paths reduced to names)."""
    from ..judges.spec import judge_name, portable_model
    from .protocol import questions_text

    scores = run.scores(evaluation)
    judge = scores.get("judge") or {}
    judge_model = judge_name(judge)
    generator = (run.manifest.get("generation") or {}).get("model")
    return {"model": label, "evaluation": evaluation,
            "judge": f"{judge.get('backend')}:{judge_model}" if judge_model else judge.get("backend"),
            "preset": judge.get("preset"),
            "questions": questions_text(run),  # the words of the rows' protocol lines
            "generator": portable_model(str(generator))[0] if generator else None,
            "images": scores["num_images"], "scored": (scores.get("coverage") or {}).get("text"),
            "failed": scores["num_failed"],
            "not generated": scores.get("num_not_generated", 0), "re-asks": scores["num_reasks"],
            "t2i-reason": scores.get("t2ireason_version")}


def _cite_certificates(group: Sequence[tuple[Run, str, str]], tables: Sequence[Any]) -> None:
    """Under each table holding a run judged by a certified substitute judge, the certificate's line (the run
    stays apart from the paper's rows: its judge is not theirs)."""
    from ..study.certificate import certificate_line, run_certificates

    said = [(label, f"{label}: {certificate_line(cert)}") for run, n, label in group
            for cert in run_certificates(run.path, n)]
    for t in tables:
        t.remarks += [line for label, line in said if label in t.rows and line not in t.remarks]


def _cite_judge_noise(group: Sequence[tuple[Run, str, str]], tables: Sequence[Any]) -> None:
    """Under each table holding a run whose evaluation asked its judge K times per image (``evaluate --repeats``),
    the judge's measured noise: the run, K, the judge's share of the variance, the widening, the disagreement."""
    from ..run_evaluation import judge_noise_text
    from .comparisons import measured_noise

    said = [(label, f"{label}: {judge_noise_text(noise)}") for run, n, label in group
            if (noise := measured_noise(run.scores(n)))]
    for t in tables:
        t.remarks += [line for label, line in said if label in t.rows and line not in t.remarks]


def write_report(runs: Sequence[Run | str | os.PathLike], out: str | os.PathLike, *, evaluation: str | None = None,
                 embed_images: bool = False, title: str | None = None, published: bool = False,
                 compare: bool = True, n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The paper-style report of one run or several side by side (and of MT2IE output folders:
    their rankings): ``tables.md``, ``tables.csv`` and ``tables.tex`` (the papers' layouts, 95%
    intervals where computed), ``plots/`` (every table as bars and, over three or more categories,
    a radar; the per-image score distribution; PNG and PDF each) and one ``report.html`` holding
    every table and figure and the gallery of each prompt's images across the models. With
    ``published``, each paper's main table as printed joins the runs' (rows marked ``[paper]``, the
    judge and questions it used said with it: :mod:`t2ireason.report.published`), with a figure of where
    each run stands among them. With ``compare``, the runs of a benchmark scored on the same prompts under
    the same protocol are compared cell by cell (``comparisons.csv``, ``.md`` and ``.tex``, a section of the
    page; ``n_resamples`` paired bootstrap resamples and sign flips, ``seed``), each run's rank interval joins
    ``tables.csv``, and a line under each table says the smallest difference its prompts can detect
    (:mod:`t2ireason.report.comparisons`; with the judge's part of it where a run measured its judge's noise).
    Under the tables of a run evaluated with ``--repeats K``, its ``judge_noise`` in words. Returns the paths, the Markdown of every table and of the headline
    table of each benchmark."""
    from .comparisons import compare_runs, write_comparisons
    from .html import Section, write_html_report
    from .latex import ONE_COLUMN, ONE_COLUMN_HEIGHT, to_latex
    from .plots import layout, mt2ie_iterations, score_distribution, table_bars, table_radar
    from .published import MARK, place, standing_figure
    from .tables import protocol_lines, side_by_side, to_csv, to_markdown

    out = Path(out)
    agents = [Path(r) for r in runs if not isinstance(r, Run) and _is_mt2ie_output(Path(r))]
    runs = [r for r in runs if isinstance(r, Run) or Path(r) not in agents]
    entries, unfinished = finished_evaluations(runs, evaluation) if runs or not agents else ([], [])
    out.mkdir(parents=True, exist_ok=True)
    from . import metric_sections
    from .metric_sections import is_own, metric_parts

    by_bench: dict[str, list[tuple[Run, str, str]]] = {}
    other_metrics = [e for e in entries if not is_own(e[0], e[1])]  # their own sections, never among the paper's rows
    for e in entries:
        if e not in other_metrics:
            by_bench.setdefault(e[0].bench.name, []).append(e)

    markdown, headlines, csv_parts, every_table, plots, sections, scored = [], [], [], [], [], [], {}
    compared: list = []  # (benchmark, its comparisons, its runs)
    for bench_name, group in by_bench.items():
        bench = get_benchmark(bench_name)
        results = {label: run.results(n) for run, n, label in group}
        per_run = [_run_tables(run, n, label, results[label]) for run, n, label in group]
        runs_tables = side_by_side(per_run + [_change_tables(bench, group, results)]) + _sweep_tables(group)
        aggregates = [run.scores(n)["aggregate"] for run, n, _ in group]
        for _, _, label in group:
            scored[f"{label} ({bench.pretty_name})"] = coverage(results[label])["text"]
        about: list[dict] = []
        tables = runs_tables
        if published:  # the paper's rows beside the runs', on the runs' scale
            tables, about = place(runs_tables, bench_name, aggregates[0].get("scale", 100.0))
        found = compare_runs(bench, group, results, per_run, n_resamples=n_resamples, seed=seed) if compare else None
        if found is not None:
            found.annotate(tables)
            compared.append((bench.pretty_name, found, len(group)))
        _cite_certificates(group, tables)
        _cite_judge_noise(group, tables)
        none = _no_published_rows(bench.pretty_name) if published and not about else ""
        markdown.append(f"## {bench.pretty_name}\n\n{none}{to_markdown(tables)}")
        later = protocol_lines(tables[1:], tables[:1])  # runs measured otherwise in the tables the console omits
        headlines.append(to_markdown(tables[:1]) + (f"\nIn the other tables:\n{later}\n" if later else ""))
        csv_parts.append(to_csv(tables))
        every_table += tables
        figures = []
        for table in runs_tables:
            axes = layout(table).axes
            if not table.rows or not axes:  # nothing judged in it (every image failed): no figure to draw
                continue
            stem = out / "plots" / f"{bench_name}_{figure_name(table.title, bench.pretty_name)}"
            said = _images_scored(table)
            figures += table_bars(table, f"{stem}_bars", note=said)
            if len(axes) >= 3:
                figures += table_radar(table, f"{stem}_radar", note=said)
        labels = [label for _, _, label in group]
        for table in tables:
            if about and any(r.endswith(MARK) for r in table.rows) and any(r in table.rows for r in labels):
                stem = out / "plots" / f"{bench_name}_{figure_name(table.title, bench.pretty_name)}"
                figures += standing_figure(table, labels, f"{stem}_standing")
        figures += score_distribution({label: [r.score for r in rs] for label, rs in results.items()},
                                      out / "plots" / f"{bench_name}_scores",
                                      title=f"{bench.pretty_name}: per-image scores",
                                      unscorable={label: sum(r.unscorable for r in rs) for label, rs in results.items()})
        plots += figures
        sections.append(Section(bench.pretty_name, results, tables, [f for f in figures if f.suffix == ".png"],
                                [_run_row(run, n, label) for run, n, label in group] + about,
                                subscore_scale=bench.subscore_scale))
        if found is not None and len(group) > 1:
            sections.append(Section(f"{bench.pretty_name}: paired comparisons", {}, runs=found.html_rows(),
                                    kind="comparisons"))
    for part in metric_parts(other_metrics, out):  # VQAScore, CLIPScore, DSG, VIEScore... on a benchmark's prompts
        markdown.append(f"## {part.heading}\n\n{to_markdown(part.tables)}")
        headlines.append(to_markdown(part.tables[:1]))
        csv_parts.append(to_csv(part.tables))
        every_table += part.tables
        plots += part.figures
        sections.append(part.section)
    for folder in agents:  # MT2IE writes its own benchmark: its output is a ranking, not a run
        table = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("table")
        if not table:
            raise RunError(f"{folder}: the MT2IE run has no ranking yet (no iteration was scored)")
        tables = get_benchmark("mt2ie").paper_tables(table, folder.name if len(agents) > 1 else "")
        none = _no_published_rows("MT2IE", " (its prompts are written at run time by the MLLM)") if published else ""
        markdown.append(f"## MT2IE: {folder.name}\n\n{none}{to_markdown(tables)}")
        headlines.append(none + to_markdown(tables))
        csv_parts.append(to_csv(tables))
        every_table += tables
        per_iteration = {m: {int(i): v for i, v in its.items()} for m, its in table["per_iteration"].items()}
        figures = mt2ie_iterations(per_iteration, out / "plots" / f"mt2ie_{slug(folder.name)}",
                                   title=f"MT2IE {table.get('mode', '')}")
        plots += figures
        sections.append(Section(f"MT2IE: {folder.name}", {}, tables, [f for f in figures if f.suffix == ".png"]))
    summaries = {folder.name: json.loads((folder / "summary.json").read_text(encoding="utf-8")) for folder in agents}
    methods = metric_sections.mt2ie_method_tables(summaries)  # the paper's Tables 3 and 5, when ranked by several
    if methods:
        markdown.append(f"## MT2IE: each method's ranking\n\n{to_markdown(methods)}")
        headlines.append(to_markdown(methods[:1]))
        csv_parts.append(to_csv(methods))
        every_table += methods
        sections.append(Section("MT2IE: each method's ranking", {}, methods))
    names = [s.title for s in sections]
    from ..study.agreement import agreement_sections

    for heading, tables in agreement_sections(dict.fromkeys(run.path for run, _, _ in entries)):  # human studies
        markdown.append(f"## {heading}\n\n{to_markdown(tables)}")
        csv_parts.append(to_csv(tables))
        every_table += tables
        sections.append(Section(heading, {}, tables))
    text = "\n".join(markdown)
    (out / "tables.md").write_text(text, encoding="utf-8")
    (out / "tables.csv").write_text("".join(part if i == 0 else part.split("\n", 1)[1]
                                            for i, part in enumerate(csv_parts)), encoding="utf-8")
    (out / "tables.tex").write_text(to_latex(every_table, width=ONE_COLUMN, height=ONE_COLUMN_HEIGHT), encoding="utf-8")
    paths = write_comparisons([(b, f) for b, f, count in compared if count > 1], out)
    labels = list(dict.fromkeys(label for _, _, label in entries))
    meta = {"images scored": "; ".join(f"{k}: {v}" for k, v in scored.items())} if scored else None
    page = write_html_report(sections, out, title=title or (f"{', '.join(names)}: {', '.join(labels)}" if labels
                                                            else ", ".join(names)),
                             embed_images=embed_images, meta=meta)
    return {"markdown": text, "headline": "\n".join(headlines), "tables_md": out / "tables.md",
            "tables_csv": out / "tables.csv", "tables_tex": out / "tables.tex", "plots": plots, "html": [page],
            "unfinished": [f"{run.name} · {n}" for run, n in unfinished], **paths}
