"""Which differences between a report's runs are real (issue 49): for runs scored on the same prompts under the
same protocol, each table cell's paired difference with its bootstrap interval and permutation p-value
(``comparisons.csv``, ``comparisons.md``, a LaTeX table, the HTML), Holm-corrected per table and pair; each run's
rank interval per column (``rank_low``, ``rank_high`` in ``tables.csv``); and under each table the smallest
difference its prompts can detect. The statistics are :mod:`t2ireason.stats_paired`'s; the cells are the
benchmark's own (:meth:`~t2ireason.benchmarks.Benchmark.cell_formulas`), checked against the table it printed.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..results import ImageResult, PaperTable
from ..stats_paired import (
    cell_values,
    detectable_with_judge,
    draw_flips,
    formulas_from,
    holm,
    joint_bootstrap,
    rank_intervals,
    sign_flip_test,
)
from .cells import is_change, lower_is_better

__all__ = ["Comparisons", "compare_runs", "write_comparisons", "pairing_record", "differs", "measured_noise", "COLUMNS",
           "MARK", "ALPHA"]

#: the columns of comparisons.csv (``p_holm``: the p-value after Holm's correction, which ``significant`` reads)
COLUMNS = ("table", "column", "run_a", "run_b", "n", "difference", "ci_low", "ci_high", "p_value", "significant",
           "p_holm")
#: beside a run's value that differs significantly from the column's best run
MARK = "‡"
ALPHA = 0.05
METHOD = ("paired comparisons over prompts (the resampling unit: a prompt, with all its images of both runs): "
          "difference of the two runs' cells as the table computes them, 95% percentile interval of {b} paired "
          "bootstrap resamples, p-value of a sign-flip permutation test ({b} flips), significant at 5% after Holm's "
          "correction over the table's cells for each pair")
SHORT_METHOD = ("runs compared in pairs over the same prompts (comparisons.csv): paired bootstrap of {b} resamples of "
                "prompts, sign-flip test, Holm per table and pair; rank intervals over the same resamples")
RULE = (f"{MARK}: differs from the column's best run (paired over prompts, sign-flip permutation test, "
        "Holm-corrected over the table's cells, p < 0.05)")


def pairing_record(run: Any, evaluation: str) -> dict[str, Any]:
    """What two runs must share to be compared cell by cell: the benchmark, its preset and protocol, the judge,
    and the data the prompts came from (as ``scores.json`` and ``run.json`` record them). The one place the
    criterion is read, so that a fuller record of the protocol can replace it."""
    from .protocol import STATISTICS, judge_text, questions_text

    scores = run.scores(evaluation)
    judge = scores.get("judge") or {}
    options = {k: v for k, v in ((scores.get("settings") or {}).get("options") or {}).items() if k not in STATISTICS}
    return {"benchmark": run.bench.name, "preset": judge.get("preset"), "judge": judge_text(judge),
            "sampling": judge.get("sampling"), "options": options or None,
            "protocol": (scores.get("aggregate") or {}).get("protocol"), "data": questions_text(run)}


def differs(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """What differs between two runs' :func:`pairing_record`, or None when they can be paired."""
    said = [f"{k} {a.get(k)} against {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return "; ".join(said) or None


@dataclass
class Comparisons:
    """What :func:`compare_runs` found: one row per cell and pair, the pairs left out and why, each run's rank
    interval and mark per (table, label, column), and the lines said under each table."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    ranks: dict[tuple[str, str, str], tuple[int, int]] = field(default_factory=dict)
    marks: set[tuple[str, str, str]] = field(default_factory=set)
    remarks: dict[str, list[str]] = field(default_factory=dict)
    n_resamples: int = 2000

    def annotate(self, tables: Sequence[PaperTable]) -> None:
        """Mark the tables' cells (significantly below the best run; rank intervals) and say under each table
        how its cells were compared and what its prompts can detect."""
        for t in tables:
            for label, cells in t.rows.items():
                for column, cell in cells.items():
                    if (t.title, label, column) in self.marks:
                        cell.mark = MARK
                    if (t.title, label, column) in self.ranks:
                        cell.rank_low, cell.rank_high = self.ranks[(t.title, label, column)]
            said = list(self.remarks.get(t.title, []))
            if any(cell.mark for cells in t.rows.values() for cell in cells.values()) and RULE not in t.note:
                t.note = "; ".join(p for p in (t.note, RULE) if p)  # the rule in the caption
            if any(t.title == r["table"] for r in self.rows):
                said.append(SHORT_METHOD.format(b=self.n_resamples))
            if said and any(p.paper for p in t.protocols.values()):
                said.append("rank intervals are among this report's runs; the paper's rows have no per-prompt "
                            "scores: their intervals are unknown")
            t.remarks = [s for s in said if s not in t.remarks] + list(t.remarks)

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in self.rows:
            w.writerow(["" if r[c] is None or (isinstance(r[c], float) and math.isnan(r[c])) else
                        ("yes" if r[c] else "no") if c == "significant" else r[c] for c in COLUMNS])
        return buf.getvalue()

    def to_latex(self) -> str:
        """The pairwise table a paper can include (booktabs), one float per table compared: on its headline
        column (:func:`headline_column`), each pair's difference (row run less column run) with its 95% interval
        under it, significant ones (Holm) in bold; every column's pairs are in comparisons.csv and .md."""
        from .latex import _tex

        out = ["% t2i-reason paired comparisons; needs \\usepackage{booktabs}"]
        for title in dict.fromkeys(r["table"] for r in self.rows):
            rows = [r for r in self.rows if r["table"] == title]
            column = headline_column(list(dict.fromkeys(r["column"] for r in rows)))
            rows = {(r["run_a"], r["run_b"]): r for r in rows if r["column"] == column}
            labels = list(dict.fromkeys([a for a, _ in rows] + [b for _, b in rows]))
            out += ["\\begin{table}[t]", "\\centering", "\\footnotesize",
                    "\\begin{tabular}{l" + "c" * (len(labels) - 1) + "}", "\\toprule",
                    " & ".join(["$A$ $\\backslash$ $B$", *(_tex(b) for b in labels[1:])]) + " \\\\", "\\midrule"]
            for a in labels[:-1]:
                cells = []
                for b in labels[1:]:
                    r = rows.get((a, b))
                    if r is None or r["difference"] is None or math.isnan(r["difference"]):
                        cells.append("")
                        continue
                    diff = f"{r['difference']:+.1f}"
                    diff = f"\\textbf{{{diff}}}" if r["significant"] else diff
                    cells.append(f"\\begin{{tabular}}[c]{{@{{}}c@{{}}}}{diff}\\\\{{\\scriptsize "
                                 f"[{r['ci_low']:+.1f}, {r['ci_high']:+.1f}]}}\\end{{tabular}}")
                out.append(" & ".join([_tex(a), *cells]) + " \\\\")
            n = next(iter(rows.values()))["n"]
            out += ["\\bottomrule", "\\end{tabular}",
                    f"\\caption{{{_tex(title)}, {_tex(column)}: each pair's difference $A - B$ over the same {n} "
                    f"prompts, its 95\\% paired bootstrap interval under it ({self.n_resamples} resamples of the "
                    "prompts), in bold where significant (sign-flip permutation test, Holm-corrected over the "
                    "table's columns for each pair, $p < 0.05$).}", "\\end{table}", ""]
        return "\n".join(out)

    def html_rows(self) -> list[dict[str, Any]]:
        """The comparisons as the plain rows of a page's table (and the pairs not compared, with why)."""
        rows = [{"table": r["table"], "column": r["column"], "run A": r["run_a"], "run B": r["run_b"], "n": r["n"],
                 "A − B [95% CI]": _interval(r), "p": _p(r["p_value"]), "p (Holm)": _p(r["p_holm"]),
                 "significant": "yes" if r["significant"] else "no"} for r in self.rows]
        return rows + [{"table": "not compared", "column": why} for why in self.left_out]

    def to_markdown(self) -> str:
        out = [f"Method: {METHOD.format(b=self.n_resamples)}.", ""]
        for title in dict.fromkeys(r["table"] for r in self.rows):
            out += [f"### {title}", "", "| Column | Run A | Run B | n | A - B [95% CI] | p | p (Holm) | |",
                    "|---|---|---|---:|---:|---:|---:|---|"]
            for r in (r for r in self.rows if r["table"] == title):
                out.append(f"| {r['column']} | {r['run_a']} | {r['run_b']} | {r['n']} | {_interval(r)} | "
                           f"{_p(r['p_value'])} | {_p(r['p_holm'])} | {'significant' if r['significant'] else ''} |")
            out.append("")
        if self.left_out:
            out += ["Not compared:", *[f"- {why}" for why in self.left_out], ""]
        return "\n".join(out)


def write_comparisons(found: Sequence[tuple[str, Comparisons]], out: Any) -> dict[str, Any]:
    """``comparisons.csv``, ``comparisons.md`` and ``comparisons.tex`` in ``out`` for the benchmarks of more than
    one run (``found``: benchmark name, its comparisons); nothing when there are none. Returns their paths."""
    from pathlib import Path

    if not found:
        return {}
    out = Path(out)
    header = ",".join(COLUMNS) + "\n"
    csv_text = header + "".join(f.to_csv().split("\n", 1)[1] for _, f in found)
    md = "\n".join(f"## {name}\n\n{f.to_markdown()}" for name, f in found)
    tex = "\n".join(f.to_latex() for _, f in found)
    paths = {"comparisons_csv": out / "comparisons.csv", "comparisons_md": out / "comparisons.md",
             "comparisons_tex": out / "comparisons.tex"}
    for key, text in zip(paths, (csv_text, md, tex)):
        paths[key].write_text(text, encoding="utf-8")
    return paths


def headline_column(columns: Sequence[str]) -> str:
    """The column a table is summed up by: its last Overall (PRISM-Bench's Overall Avg.), else its last."""
    overall = [c for c in columns if "overall" in c.lower()]
    return (overall or list(columns))[-1]


def _interval(r: dict[str, Any]) -> str:
    if r["difference"] is None or math.isnan(r["difference"]):
        return "–"
    return f"{r['difference']:+.2f} [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"


def _p(p: float | None) -> str:
    return "–" if p is None or math.isnan(p) else f"{p:.3g}"


def _prompt_order(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def compare_runs(bench: Any, group: Sequence[tuple[Any, str, str]], results: dict[str, list[ImageResult]],
                 per_run: Sequence[Sequence[PaperTable]], *, n_resamples: int = 2000, seed: int = 0,
                 alpha: float = ALPHA, power: float = 0.8) -> Comparisons:
    """Compare the runs of one benchmark (``group``: run, evaluation, label; ``per_run``: each run's tables in
    the benchmark's order, titled as the report titles them): runs that share :func:`pairing_record` and their
    prompts are compared cell by cell, every pair of them, and ranked with intervals; the others are left out
    and said. Under each table, the smallest difference its prompts can detect (power ``power``, level ``alpha``)."""
    found = Comparisons(n_resamples=n_resamples)
    formulas, records, prompts, noise = {}, {}, {}, {}
    for (run, n, label), tables in zip(group, per_run):
        noise[label] = measured_noise(run.scores(n))
        declared = bench.cell_formulas(run.scores(n)["aggregate"], results[label])
        if declared is None:
            found.left_out.append(f"{label}: {bench.pretty_name} declares no per-prompt form of its tables; "
                                  "nothing compared")
            continue
        formulas[label] = _checked(declared, tables, label, found)
        records[label] = pairing_record(run, n)
        prompts[label] = frozenset(i for _, _, ids in declared for i in ids)
    # runs compared together: the same record and prompts (in the first's order)
    groups: list[list[str]] = []
    for label in formulas:
        home = next((g for g in groups if records[g[0]] == records[label] and prompts[g[0]] == prompts[label]), None)
        if home is None:
            groups.append([label])
        else:
            home.append(label)
    for ga, gb in itertools.combinations(groups, 2):
        a, b = ga[0], gb[0]
        why = differs(records[a], records[b]) or (f"different prompts ({len(prompts[a])} and {len(prompts[b])}, "
                                                  f"{len(prompts[a] & prompts[b])} in common)")
        found.left_out += [f"{x} and {y}: {why}" for x in ga for y in gb]
    for labels in groups:
        _compare_group(labels, formulas, _titles(group, per_run), found, n_resamples=n_resamples, seed=seed,
                       alpha=alpha, power=power, noise=noise)
    return found


def _titles(group: Sequence[tuple[Any, str, str]], per_run: Sequence[Sequence[PaperTable]]
                   ) -> dict[str, list[str]]:
    return {label: [t.title for t in tables] for (_, _, label), tables in zip(group, per_run)}


def _checked(declared: list[tuple], tables: Sequence[PaperTable], label: str, found: Comparisons) -> list[tuple]:
    """The declared cells that give the value the run's table printed (the others left out and said): what is
    compared is what the table shows."""
    out = []
    for (terms, cells, ids), table in zip(declared, tables):
        order = _prompt_order(ids)
        at = {p: i for i, p in enumerate(order)}
        columns = [c for c in cells if c in table.columns and not is_change(c)]
        names = list(terms)
        f = formulas_from(terms, cells, [at[i] for i in ids], len(order), columns, names)
        values = cell_values(f)[0] if order else np.full(len(columns), np.nan)
        kept = {}
        for column, v in zip(columns, values):
            printed = (table.rows.get(label) or {}).get(column)
            if printed is not None and printed.value is not None and math.isfinite(v) \
                    and math.isclose(v, printed.value, rel_tol=1e-9, abs_tol=1e-9):
                kept[column] = cells[column]
            elif printed is not None and printed.value is not None:
                found.left_out.append(f"{label}, {table.title}, {column}: not the table's value when computed "
                                      f"per prompt ({v!r} against {printed.value!r}); not compared")
        out.append((terms, kept, ids))
    return out


def _compare_group(labels: list[str], formulas: dict[str, list[tuple]], titles: dict[str, list[str]],
                   found: Comparisons, *, n_resamples: int, seed: int, alpha: float, power: float,
                   noise: dict[str, dict | None]) -> None:
    first = labels[0]
    for k, (_, _, ids) in enumerate(formulas[first]):
        title = titles[first][k]
        order = _prompt_order(ids)
        if len(order) < 2:
            continue
        columns = [c for c in formulas[first][k][1] if all(c in formulas[x][k][1] for x in labels)]
        if not columns:
            continue
        names = list(dict.fromkeys(t for x in labels for t in formulas[x][k][0]))
        at = {p: i for i, p in enumerate(order)}
        runs = [formulas_from(formulas[x][k][0], formulas[x][k][1], [at[i] for i in formulas[x][k][2]], len(order),
                              columns, names) for x in labels]
        _detectable(title, columns, runs, len(order), found, alpha=alpha, power=power,
                    noise=[noise.get(x) for x in labels], labels=labels)
        if len(labels) < 2:
            continue
        dist = joint_bootstrap(runs, n_resamples=n_resamples, seed=seed)
        observed = {}
        flips = draw_flips(len(order), n_resamples, seed)  # the same flips for every pair
        for i, j in itertools.combinations(range(len(labels)), 2):
            diff, p = sign_flip_test(runs[i], runs[j], flips=flips)
            lo, hi = np.nanpercentile(dist[i] - dist[j], [2.5, 97.5], axis=0)
            adjusted = holm(p)
            for c, column in enumerate(columns):
                row = {"table": title, "column": column, "run_a": labels[i], "run_b": labels[j], "n": len(order),
                       "difference": float(diff[c]), "ci_low": float(lo[c]), "ci_high": float(hi[c]),
                       "p_value": float(p[c]), "p_holm": float(adjusted[c]),
                       "significant": bool(adjusted[c] < alpha)}
                found.rows.append(row)
                observed[(i, j, c)] = row
        values = np.stack([cell_values(r)[0] for r in runs])
        for c, column in enumerate(columns):
            lower = lower_is_better(column)
            low, high = rank_intervals(dist[:, :, c], higher_is_better=not lower)
            for r, label in enumerate(labels):
                if math.isfinite(low[r]):
                    found.ranks[(title, label, column)] = (int(low[r]), int(high[r]))
            best = int(np.nanargmin(values[:, c]) if lower else np.nanargmax(values[:, c]))
            for r, label in enumerate(labels):
                row = observed.get((min(r, best), max(r, best), c))
                if r != best and row and row["significant"]:
                    found.marks.add((title, label, column))


def measured_noise(scores: dict[str, Any]) -> dict[str, Any] | None:
    """A run's ``judge_noise`` (``evaluate --repeats K``) where it measured the judge's share, else None."""
    noise = scores.get("judge_noise") or {}
    share = noise.get("judge_share")
    return noise if share is not None and math.isfinite(share) and noise.get("repeats", 0) >= 2 else None


def _detectable(title: str, columns: list[str], runs: list, n: int, found: Comparisons, *, alpha: float,
                power: float, noise: Sequence[dict | None] = (), labels: Sequence[str] = ()) -> None:
    """The line under the table: the smallest difference in its headline column (its last Overall) detectable with
    ``power`` at ``alpha``, from the paired variance of the runs' per-prompt influence (the mean over pairs), or
    with one run, from its own as if against an independent run alike. Where some runs measured their judge's
    noise (``noise``: each run's ``judge_noise`` or None), the line says the judge's part of that variance and the
    difference detectable with each image scored by the mean of the runs' K replies, and with a noiseless judge
    (:func:`~t2ireason.stats_paired.detectable_with_judge`)."""
    pairs = list(itertools.combinations(range(len(runs)), 2))
    noise = list(noise) or [None] * len(runs)
    shares = [x["judge_share"] if x else 0.0 for x in noise]
    repeats = [int(x["repeats"]) if x else 1 for x in noise]
    parts = [detectable_with_judge(runs[i], runs[j], shares=(shares[i], shares[j]), repeats=(repeats[i], repeats[j]),
                                   alpha=alpha, power=power) for i, j in pairs] or \
            [detectable_with_judge(runs[0], shares=(shares[0], 0.0), repeats=(repeats[0], 1), alpha=alpha, power=power)]

    def pooled(key: str) -> np.ndarray:  # over pairs, as the variances pool: the root of the mean square
        return np.sqrt(np.nanmean([p[key] ** 2 for p in parts], axis=0))

    mdd = pooled("mdd")
    if pairs:
        source = f"each prompt's difference of two runs' influence on the cell, pooled over {len(pairs)} pairs"
    else:
        source = "as against an independent run alike, sqrt(2) times the sd of the run's per-prompt influence"
    c = columns.index(headline_column(columns))
    if not math.isfinite(mdd[c]):
        return
    finite = mdd[np.isfinite(mdd)]
    spread = f"; {finite.min():.1f} to {finite.max():.1f} across its columns" if finite.size > 1 else ""
    found.remarks.setdefault(title, []).append(
        f"with {n} prompts, differences under {mdd[c]:.1f} points in {columns[c]} are within noise ({power:.0%} "
        f"power, two-sided {alpha:.0%}: (z[1-a/2] + z[power]) sd(d)/sqrt(n), d {source}{spread})")
    measured = [f"{label} (K={k})" for label, x, k in zip(labels, noise, repeats) if x]
    if not measured or not mdd[c] > 0:
        return
    part = float(np.nanmean([p["judge_part"][c] * p["mdd"][c] ** 2 for p in parts]) / mdd[c] ** 2)
    ks = sorted({k for x, k in zip(noise, repeats) if x})
    found.remarks[title].append(
        f"of that variance of d, {part:.0%} is the judge's own noise (measured by evaluate --repeats on "
        f"{', '.join(measured)}; each score is one reply, so var(d) holds each run's judge variance once, s var(IF) "
        f"with s its judge share, 0 where unmeasured): with each image scored by the mean of its "
        f"{'/'.join(map(str, ks))} replies the difference detectable would be {pooled('mdd_repeats')[c]:.1f} points "
        f"(var(d) less (1 - 1/K) s var(IF) per run), with a noiseless judge "
        f"{pooled('mdd_noiseless')[c]:.1f}")
