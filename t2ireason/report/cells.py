"""One table cell as every report writes it (the Markdown and CSV tables, the LaTeX, the HTML page): its value with
the table's decimals and its 95% interval, and, per column, the rows holding the best value."""

from __future__ import annotations

import re

from ..results import Cell, PaperTable

__all__ = ["format_cell", "best_rows"]

# columns where less is better (MT2IE's ranking: its spread, mean rank, failures); every score is higher-better
_LOWER_IS_BETTER = re.compile(r"\b(rank|std|variance|failed)\b", re.IGNORECASE)


def format_cell(cell: Cell | None, *, intervals: bool = True, decimals: int = 1) -> str:
    if cell is None or cell.value is None:
        return "–"
    if isinstance(cell.value, int):  # a count
        return str(cell.value)
    text = f"{cell.value:.{decimals}f}"
    if intervals and cell.low is not None and cell.high is not None:
        text += f" [{cell.low:.{decimals}f}, {cell.high:.{decimals}f}]"
    return text


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
