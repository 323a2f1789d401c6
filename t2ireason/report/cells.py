"""One table cell as every report writes it (the Markdown and CSV tables, the LaTeX, the HTML page): its value with
the table's decimals and its 95% interval, and, per column, the rows holding the best value."""

from __future__ import annotations

import re

from ..results import Cell, PaperTable

__all__ = ["format_cell", "best_rows", "is_change", "lower_is_better"]

# columns where less is better (MT2IE's ranking: its spread, mean rank, failures); every score is higher-better
_LOWER_IS_BETTER = re.compile(r"\b(rank|std|variance|failed)\b", re.IGNORECASE)
# a column of changes, one value against another (T2I-ReasonBench's Table 3: rewritten prompts' gains)
_CHANGE = re.compile(r"\bchange$", re.IGNORECASE)


def is_change(column: str) -> bool:
    """A column of changes (``Idiom change``: rewritten prompts against the originals), printed signed and
    never ranked."""
    return bool(_CHANGE.search(column))


def lower_is_better(column: str) -> bool:
    """A column where less is better (a rank, a spread, failures); every score is higher-better."""
    return bool(_LOWER_IS_BETTER.search(column))


def format_cell(cell: Cell | None, *, intervals: bool = True, decimals: int = 1, signed: bool = False) -> str:
    """A cell's value with the table's decimals (``signed``: ``+21.5``, ``-3.0``, as a change), and its 95%
    interval in brackets where computed and asked; a dash for no value."""
    if cell is None or cell.value is None:
        return "–"
    if isinstance(cell.value, int):  # a count
        return str(cell.value)
    text = f"{cell.value:{'+' if signed else ''}.{decimals}f}"
    text += cell.mark
    if intervals and cell.low is not None and cell.high is not None:
        text += f" [{cell.low:.{decimals}f}, {cell.high:.{decimals}f}]"
    return text


def best_rows(table: PaperTable) -> dict[str, set[str]]:
    """Per column, the labels of the rows holding its best value (ties all count), among two or more
    rows with a value; as printed (the table's decimals), so that what reads equal is equal. A run set
    apart from a paper's rows (:attr:`~t2ireason.results.PaperTable.apart`: measured otherwise) is not
    ranked, nor is a column of changes."""
    best: dict[str, set[str]] = {}
    apart = table.apart
    for column in table.columns:
        if is_change(column):
            continue
        values = {label: round(cell.value, table.decimals) for label, cells in table.rows.items()
                  if label not in apart and (cell := cells.get(column)) is not None
                  and isinstance(cell.value, (int, float))}
        if len(values) >= 2:
            pick = min if lower_is_better(column) else max
            top = pick(values.values())
            best[column] = {label for label, v in values.items() if v == top}
    return best
