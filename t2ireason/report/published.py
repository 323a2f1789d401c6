"""The papers' main tables as printed, beside a user's runs (``t2ireason report ... --published``).

Each table is package data, ``report/published/<benchmark>_table<N>.csv``: ``# key: value`` lines citing
it (the paper, the seed text it was read from, the table and where it sits, the page where known, the judge
and the question set the paper used, the names the seed's text misreads and how they were corrected, the
table's scale), then one row per model as printed (``model``, ``group`` and, for R2I-Bench, ``size``; then
the table's columns, named as this package's tables name them). :func:`place` adds them, marked
``[paper]``, under the runs' rows of the same table, and says in the table's note what measured them: a
reader sees where a new model stands and what differs in how it was measured (another judge, another
question set). :func:`standing_figure` draws one column of such a table as sorted bars, the runs set apart.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from ..results import Cell, PaperTable

__all__ = ["PublishedTable", "published_tables", "place", "standing_column", "standing_bars", "standing_figure", "MARK"]

#: the mark after a published row's model name
MARK = "[paper]"
#: columns of a published row that are not the table's
_ABOUT = ("model", "group", "size")


@dataclass(frozen=True)
class PublishedTable:
    """One paper table as printed: its citation (``paper``, ``seed``, ``table``, ``page``, ``judge``,
    ``questions``...), the title of the table it joins (``into``), its columns and rows (values as text, as
    printed) and the scale it prints on (``1`` for R2I-Bench's 0-1, else ``100``)."""

    benchmark: str
    citation: dict[str, str]
    columns: list[str]
    rows: list[dict[str, str]]

    @property
    def into(self) -> str:
        return self.citation["into"]

    @property
    def scale(self) -> float:
        return float(self.citation.get("scale", 100))

    def label(self, row: dict[str, str]) -> str:
        return f"{row['model']} {MARK}"

    def cells(self, scale: float = 100.0) -> dict[str, dict[str, Cell]]:
        """Each row's values as cells on ``scale`` (the runs' own)."""
        factor = scale / self.scale
        return {self.label(r): {c: Cell(round(float(r[c]) * factor, 10)) for c in self.columns if r.get(c, "").strip()}
                for r in self.rows}

    def note(self) -> str:
        c = self.citation
        return (f"{MARK}: as printed in {c['paper'].split(':')[0]}, {c['table']} (page: {c['page']}), judged by "
                f"{c['judge']}; questions: {c['questions']}")


def _read(benchmark: str, text: str) -> PublishedTable:
    lines = text.splitlines()
    citation = {}
    while lines and lines[0].startswith("#"):
        key, _, value = lines.pop(0)[1:].partition(":")
        citation[key.strip()] = value.strip()
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    columns = [c for c in rows[0] if c not in _ABOUT] if rows else []
    return PublishedTable(benchmark, citation, columns, rows)


@cache
def published_tables(benchmark: str) -> tuple[PublishedTable, ...]:
    """The published tables of ``benchmark`` (its registry name), in table order; none for one without."""
    folder = resources.files("t2ireason") / "report" / "published"
    files = sorted((f for f in folder.iterdir() if f.name.startswith(f"{benchmark}_table") and f.name.endswith(".csv")),
                   key=lambda f: int(re.search(r"table(\d+)", f.name).group(1)))
    return tuple(_read(benchmark, f.read_text(encoding="utf-8")) for f in files)


def place(tables: Sequence[PaperTable], benchmark: str, scale: float = 100.0) -> tuple[list[PaperTable], list[dict]]:
    """``tables`` (one benchmark's, the runs side by side) with each published table's rows under the runs'
    rows of the table it joins (a table no run has is added, after the others), its note saying what measured
    them; and, per published table, a row for the report's what-made-it table (its rows, judge, questions,
    source)."""
    out = [PaperTable(t.title, list(t.columns), {k: dict(v) for k, v in t.rows.items()}, t.note, t.decimals)
           for t in tables]
    about: list[dict] = []
    for pub in published_tables(benchmark):
        table = next((t for t in out if t.title == pub.into), None)
        if table is None:
            table = PaperTable(pub.into, list(pub.columns), {}, "", 1 if pub.scale != 100 else _decimals(pub))
            out.append(table)
        for label, cells in pub.cells(scale).items():
            if label in table.rows:
                raise ValueError(f"a run is labelled {label!r}, as a published row of {table.title!r}; rename it")
            table.rows[label] = cells
        table.columns += [c for c in pub.columns if c not in table.columns]
        table.note = "; ".join(filter(None, [table.note, pub.note()]))
        about.append({"model": f"the {len(pub.rows)} rows marked {MARK} of {table.title}", "judge": pub.citation["judge"],
                      "questions": pub.citation["questions"],
                      "source": f"{pub.citation['paper'].split(':')[0]}, {pub.citation['table'].split(',')[0]} as "
                                f"printed (seed {pub.citation['seed']})"})
    return out, about


def _decimals(pub: PublishedTable) -> int:
    """The decimals the paper prints."""
    return max(len(v.partition(".")[2]) for r in pub.rows for c, v in r.items() if c in pub.columns)


def standing_column(table: PaperTable) -> str | None:
    """The column a table's standing is drawn on: its last summary column (Overall, Avg., Overall Avg.)."""
    from .plots import _SUMMARY

    summary = [c for c in table.columns if any(_SUMMARY.match(w) for w in c.split())]
    return summary[-1] if summary else None


def standing_figure(table: PaperTable, runs: Sequence[str], path: str | os.PathLike) -> list[Path]:
    """:func:`standing_bars` written to ``path`` as PNG and PDF, as every figure of the report."""
    import matplotlib.pyplot as plt

    from .plots import _STYLE, save_figure

    with plt.rc_context(_STYLE):
        return save_figure(standing_bars(table, runs), path)


def standing_bars(table: PaperTable, runs: Sequence[str]):
    """One column of ``table`` (:func:`standing_column`) as horizontal bars, best first, the rows of ``runs``
    in colour and named in bold, the published ones grey: where each run stands among the paper's models."""
    import matplotlib.pyplot as plt

    from .plots import _COLOURS, _STYLE, COLUMN_WIDTH, _wrap

    column = standing_column(table)
    rows = sorted(((label, cells[column].value) for label, cells in table.rows.items()
                   if column in cells and isinstance(cells[column].value, (int, float))), key=lambda x: -x[1])
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 0.75 + 0.16 * len(rows)), layout="constrained")
        ys = list(range(len(rows)))[::-1]
        ax.barh(ys, [v for _, v in rows], height=0.7,
                color=[_COLOURS[0] if label in runs else "#B0B0B0" for label, _ in rows])
        ax.set_yticks(ys, [label for label, _ in rows])
        for tick, (label, _) in zip(ax.get_yticklabels(), rows):
            tick.set_fontweight("bold" if label in runs else "normal")
        for y, (_, v) in zip(ys, rows):
            ax.text(v, y, f" {v:.{table.decimals}f}", va="center", fontsize=6)
        ax.set_xlim(0, 116)  # 0-100, as every figure, and room for the values printed at the bars' ends
        ax.set_xticks(range(0, 101, 20))
        ax.set_xlabel(column)
        fig.suptitle(_wrap(table.title, 50), fontsize=8)
    return fig
