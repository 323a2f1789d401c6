"""The papers' tables as Markdown, CSV and LaTeX, for one run or several side by side.

Each benchmark module lays out its tables for one model
(:meth:`~t2ireason.benchmarks.Benchmark.paper_tables`); here the rows of
several models are stacked under the same columns and rendered. A cell shows
its value with one decimal, as the papers do, and its 95% interval where one
was computed; the CSV keeps full precision with the interval in columns of
its own; the LaTeX (:mod:`t2ireason.report.latex`) is booktabs with each column's best value in
bold, laid out to fit a column.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence

from ..results import Cell, PaperTable

__all__ = ["side_by_side", "to_markdown", "to_csv", "format_cell", "best_rows"]

# columns where less is better (MT2IE's ranking: its spread, mean rank, failures); every score is higher-better
_LOWER_IS_BETTER = re.compile(r"\b(rank|std|variance|failed)\b", re.IGNORECASE)


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


def format_cell(cell: Cell | None, *, intervals: bool = True, decimals: int = 1) -> str:
    if cell is None or cell.value is None:
        return "–"
    if isinstance(cell.value, int):  # a count
        return str(cell.value)
    text = f"{cell.value:.{decimals}f}"
    if intervals and cell.low is not None and cell.high is not None:
        text += f" [{cell.low:.{decimals}f}, {cell.high:.{decimals}f}]"
    return text


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


def best_rows(table: PaperTable) -> dict[str, set[str]]:
    """Per column, the labels of the rows holding its best value (ties all count), among two or more
    rows with a value; as printed (the table's decimals), so that what reads equal is equal."""
    best: dict[str, set[str]] = {}
    for column in table.columns:
        values = {label: round(cell.value, table.decimals) for label, cells in table.rows.items()
                  if (cell := cells.get(column)) is not None and isinstance(cell.value, (int, float))}
        if len(values) >= 2:
            pick = min if _LOWER_IS_BETTER.search(column) else max
            top = pick(values.values())
            best[column] = {label for label, v in values.items() if v == top}
    return best


def __getattr__(name: str):
    """``to_latex`` lives in :mod:`t2ireason.report.latex` (it lays tables out to a width); it is
    imported from here as before."""
    if name == "to_latex":
        from .latex import to_latex

        return to_latex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
