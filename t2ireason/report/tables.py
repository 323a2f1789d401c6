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

from ..results import Cell, PaperTable
from .cells import best_rows, format_cell

__all__ = ["side_by_side", "to_markdown", "to_csv", "format_cell", "best_rows"]


def side_by_side(per_model: Sequence[Sequence[PaperTable]]) -> list[PaperTable]:
    """The tables of several models merged by title: one row per model, the union of their
    columns in first-seen order (a model that lacks a column shows an empty cell)."""
    merged: dict[str, PaperTable] = {}
    for tables in per_model:
        for t in tables:
            into = merged.setdefault(t.title, PaperTable(t.title, [], {}, t.note, t.decimals))
            into.columns += [c for c in t.columns if c not in into.columns]
            for label, cells in t.rows.items():
                if label in into.rows:
                    raise ValueError(f"two runs are both labelled {label!r} in {t.title!r}; give them distinct names")
                into.rows[label] = dict(cells)
    return list(merged.values())


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(tables: Sequence[PaperTable], *, intervals: bool = True) -> str:
    """Every table as a Markdown section: a heading, the table, its note (95% intervals in brackets)."""
    out = []
    for t in tables:
        out.append(f"### {_md_escape(t.title)}\n")
        out.append("| Model | " + " | ".join(_md_escape(c) for c in t.columns) + " |")
        out.append("|---|" + "---:|" * len(t.columns))
        for label, cells in t.rows.items():
            out.append(f"| {_md_escape(label)} | "
                       + " | ".join(format_cell(cells.get(c), intervals=intervals, decimals=t.decimals)
                                    for c in t.columns) + " |")
        notes = [t.note] if t.note else []
        if intervals and any(cell.low is not None for cells in t.rows.values() for cell in cells.values()):
            notes.append("95% bootstrap confidence intervals in brackets")
        if notes:
            out.append(f"\n{_md_escape('; '.join(notes))}.")
        out.append("")
    return "\n".join(out)


def to_csv(tables: Sequence[PaperTable]) -> str:
    """One long CSV: table, model, column, value, ci_low, ci_high (full precision, empty where none)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["table", "model", "column", "value", "ci_low", "ci_high"])
    for t in tables:
        for label, cells in t.rows.items():
            for column in t.columns:
                cell = cells.get(column) or Cell(None)
                writer.writerow([t.title, label, column, *("" if v is None else repr(v)
                                                           for v in (cell.value, cell.low, cell.high))])
    return buf.getvalue()
