"""The papers' tables as Markdown, CSV and LaTeX, for one run or several side by side.

Each benchmark module lays out its tables for one model
(:meth:`~t2ireason.benchmarks.Benchmark.paper_tables`); here the rows of
several models are stacked under the same columns and rendered. A cell shows
its value with one decimal, as the papers do, and its 95% interval where one
was computed; the CSV keeps full precision with the interval in columns of
its own; the LaTeX (:mod:`t2ireason.report.latex`) is booktabs with each column's best value in
bold, laid out to fit a column. How a cell reads and which rows are best: :mod:`t2ireason.report.cells`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from ..results import Cell, PaperTable, RowProtocol
from .cells import best_rows, format_cell, is_change

__all__ = ["side_by_side", "to_markdown", "to_csv", "format_cell", "best_rows", "grouped_rows", "protocol_line",
           "protocol_lines", "PROTOCOL_COLUMNS", "RANK_COLUMNS"]


def side_by_side(per_model: Sequence[Sequence[PaperTable]]) -> list[PaperTable]:
    """The tables of several models merged by title: one row per model, the union of their
    columns in first-seen order (a model that lacks a column shows an empty cell), each row's group and
    protocol kept, the notes' parts once each."""
    merged: dict[str, PaperTable] = {}
    for tables in per_model:
        for t in tables:
            into = merged.setdefault(t.title, PaperTable(t.title, [], {}, t.note, t.decimals))
            into.columns += [c for c in t.columns if c not in into.columns]
            parts = into.note.split("; ") if into.note else []
            into.note = "; ".join(parts + [p for p in (t.note.split("; ") if t.note else []) if p not in parts])
            for label, cells in t.rows.items():
                if label in into.rows:
                    raise ValueError(f"two runs are both labelled {label!r} in {t.title!r}; give them distinct names")
                into.rows[label] = dict(cells)
            into.groups.update(t.groups)
            into.protocols.update(t.protocols)
    return list(merged.values())


def grouped_rows(table: PaperTable) -> list[tuple[str | None, list[str]]]:
    """The table's rows in order, under their group headings: ``[(heading or None, [labels])]``, a new
    heading wherever the group changes (None for rows of no group)."""
    out: list[tuple[str | None, list[str]]] = []
    for label in table.rows:
        group = table.groups.get(label)
        if not out or out[-1][0] != group:
            out.append((group, []))
        out[-1][1].append(label)
    return out


def protocol_line(label: str, p: RowProtocol) -> str:
    """How a run's row was measured, in one line: its judge, preset, questions, images; and whether that is
    the paper's protocol (``measured as the paper's rows: yes``, ``no (<what differs>)``, ``unverified (<what
    could not be checked>)`` or ``n/a (no published rows)``)."""
    scored, _, total = (p.images or "").partition(" of ")
    said = [f"judge {p.judge}", f"preset {p.preset}", f"questions: {p.questions}",
            f"images: {scored} of the benchmark's {total} scored" if p.images else None,
            f"of the run's own, {p.coverage}" if p.coverage else None]
    text = f"{label}: " + "; ".join(s for s in said if s)
    verdict, _, why = p.comparable.partition(": ")
    return text + f"; measured as the paper's rows: {verdict}" + (f" ({why})" if why else "")


def protocol_lines(tables: Sequence[PaperTable], said: Sequence[PaperTable] = ()) -> str:
    """How each run row of ``tables`` was measured, one line per run and table (``- <title>: <protocol line>``),
    but those ``said`` already gives in the same words: what a console shows beside its headline table, so that a
    run found only in a later table (a Qwen-judged PRISM-Bench run's Table 4) is said too."""
    known = {protocol_line(label, p) for t in said for label, p in t.protocols.items() if label in t.rows}
    lines = []
    for t in tables:
        for label, p in t.protocols.items():
            line = protocol_line(label, p)
            if label in t.rows and not p.paper and line not in known:
                known.add(line)
                lines.append(f"- {_md_escape(t.title)}: {_md_escape(line)}")
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(tables: Sequence[PaperTable], *, intervals: bool = True) -> str:
    """Every table as a Markdown section: a heading, the table (its rows under their group headings,
    italic), its note (95% intervals in brackets), then how each run's row was measured and whether that
    is the paper's protocol (:func:`protocol_line`)."""
    out, said = [], ""
    for t in tables:
        out.append(f"### {_md_escape(t.title)}\n")
        out.append("| Model | " + " | ".join(_md_escape(c) for c in t.columns) + " |")
        out.append("|---|" + "---:|" * len(t.columns))
        for group, labels in grouped_rows(t):
            if group:
                out.append(f"| *{_md_escape(group)}* |" + " |" * len(t.columns))
            for label in labels:
                cells = t.rows[label]
                out.append(f"| {_md_escape(label)} | "
                           + " | ".join(format_cell(cells.get(c), intervals=intervals, decimals=t.decimals,
                                                    signed=is_change(c)) for c in t.columns) + " |")
        notes = [t.note] if t.note else []
        if intervals and any(cell.low is not None for cells in t.rows.values() for cell in cells.values()):
            notes.append("95% bootstrap confidence intervals in brackets")
        if notes:
            out.append(f"\n{_md_escape('; '.join(notes))}.")
        out += [f"\n{_md_escape(line)}." for line in t.remarks]  # how its runs compare, what it can detect
        runs = "\n".join(f"- {_md_escape(protocol_line(label, p))}" for label, p in t.protocols.items()
                         if label in t.rows and not p.paper)
        if runs and runs != said:  # the same runs measured the same way as the table above: said there
            out.append("\n" + runs)
        said = runs or said
        out.append("")
    return "\n".join(out)


#: the columns of tables.csv after each cell's: how its row was measured (:class:`RowProtocol`)
PROTOCOL_COLUMNS = ("judge", "preset", "images", "coverage", "comparable")
#: the last columns of tables.csv: the run's 95% rank interval among the report's runs (empty: unknown)
RANK_COLUMNS = ("rank_low", "rank_high")


def to_csv(tables: Sequence[PaperTable]) -> str:
    """One long CSV: table, model, column, value, ci_low, ci_high (full precision, empty where none), then
    how the row was measured: judge, preset, images (scored of the benchmark's), coverage (scored of the
    run's own, and why the others were not) and comparable (``yes``, or ``no: <what differs>`` from the
    protocol of the paper's rows), then rank_low and rank_high: the ends of the run's 95% rank interval among the
    report's runs over bootstrap resamples of the prompts (empty where unknown: a paper's row, a run not
    compared)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["table", "model", "column", "value", "ci_low", "ci_high", *PROTOCOL_COLUMNS, *RANK_COLUMNS])
    for t in tables:
        for label, cells in t.rows.items():
            p = t.protocols.get(label)
            about = ["" if p is None or getattr(p, k) is None else getattr(p, k) for k in PROTOCOL_COLUMNS]
            for column in t.columns:
                cell = cells.get(column) or Cell(None)
                writer.writerow([t.title, label, column, *("" if v is None else repr(v)
                                                           for v in (cell.value, cell.low, cell.high)), *about,
                                 *("" if v is None else v for v in (cell.rank_low, cell.rank_high))])
    return buf.getvalue()
