"""One CSV file of the R2I-Bench release read into records: columns recognised by name in any order and
spelling, cells kept as released, every irregularity an :class:`~t2ireason.benchmarks.base.Anomaly`, what
cannot be placed quarantined with its raw text."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base import Anomaly, Quarantined

__all__ = ["Record", "read_csv"]


def _column(name: str) -> str:
    """'Reference Caption' -> 'reference_caption': headers differ in case and spacing between files."""
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def _decode(data: bytes, rel: str, anomalies: list[Anomaly]) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        for encoding in ("cp1252", "latin-1"):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                continue
            anomalies.append(Anomaly("encoding", rel, None, f"not UTF-8 ({e.reason} at byte {e.start}): read as {encoding}"))
            return text
    raise AssertionError("latin-1 decodes every byte")


@dataclass
class Record:
    line: int
    cells: dict[str, str]  # layout column -> cell, as released
    extra: dict[str, str]  # other columns (header as written) -> cell
    raw: str  # the record's lines as released


def read_csv(path: Path, rel: str, columns: dict[str, tuple[str, ...]], needs: Sequence[str],
              anomalies: list[Anomaly], quarantine: list[Quarantined]) -> list[Record]:
    """The records of one CSV file, keyed by layout column, with every irregularity reported.

    Cells are kept as released (whitespace included). Columns are recognised by name in any order
    and spelling variant (:data:`.release._PROMPT_COLUMNS`); columns the layout does not know are kept in
    ``extra``. Records that cannot be placed (a header without the columns in ``needs``, more cells
    than the header, malformed quoting) are quarantined with their raw text; nothing is dropped in
    silence.
    """
    data = path.read_bytes()
    if not data.strip():
        anomalies.append(Anomaly("empty_file", rel, None, "the file is empty" + (" (whitespace only)" if data else "")))
        return []
    lines = io.StringIO(_decode(data, rel, anomalies), newline="").readlines()
    reader = csv.reader(iter(lines), strict=True)
    records: list[tuple[int, list[str], str]] = []
    done = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raw = "".join(lines[done:reader.line_num])
            quarantine.append(Quarantined(rel, f"line {done + 1}", f"malformed CSV: {e}", raw))
            anomalies.append(Anomaly("malformed_row", rel, f"line {done + 1}", f"malformed CSV ({e}): quarantined"))
            done = reader.line_num
            continue
        records.append((done + 1, cells, "".join(lines[done:reader.line_num])))
        done = reader.line_num
    records = [r for r in records if r[1]]  # blank lines
    if not records:
        anomalies.append(Anomaly("empty_file", rel, None, "the file holds no CSV record"))
        return []
    (_, header, _), body = records[0], records[1:]
    canonical = {alias: col for col, aliases in columns.items() for alias in aliases}
    position: dict[str, int] = {}
    extra_at: dict[int, str] = {}
    for i, name in enumerate(header):
        col = canonical.get(_column(name))
        if col is not None and col not in position:
            position[col] = i
        else:
            extra_at[i] = name if name.strip() else f"column {i + 1}"
            if col is not None:
                anomalies.append(Anomaly("duplicate_column", rel, "line 1",
                                         f"column {name!r} repeats {col!r}: its cells are kept in 'extra'"))
    expected = [c for c in columns if c != "note"]
    missing = [c for c in expected if c not in position]
    unplaceable = [c for c in needs if c not in position]
    if not body:
        what = (f"; the header {header} does not name the columns of this layout ({', '.join(expected)})"
                if unplaceable else "")
        anomalies.append(Anomaly("empty_file", rel, None, f"header only, no records{what}"))
        return []
    if unplaceable:
        anomalies.append(Anomaly("unreadable_header", rel, "line 1",
                                 f"the header {header} lacks {unplaceable}: its {len(body)} record(s) cannot be "
                                 "placed and are quarantined with their raw text"))
        quarantine.extend(Quarantined(rel, f"line {line}", f"the file's header lacks {unplaceable}", raw)
                          for line, _, raw in body)
        return []
    if missing:
        anomalies.append(Anomaly("missing_column", rel, "line 1", f"no column {missing} in the header {header}: "
                                 "left empty in every row"))
    if extra_at:
        anomalies.append(Anomaly("unknown_column", rel, "line 1", f"column(s) {list(extra_at.values())} are not "
                                 "in the layout: their cells are kept in each row's 'extra'"))
    out = []
    for line, cells, raw in body:
        if not any(c.strip() for c in cells):
            anomalies.append(Anomaly("blank_row", rel, f"line {line}", "every cell is empty: nothing to keep"))
            continue
        if len(cells) > len(header):
            spill = cells[len(header):]
            if any(c.strip() for c in spill):
                quarantine.append(Quarantined(rel, f"line {line}", f"{len(cells)} cells where the header has "
                                              f"{len(header)}: the columns cannot be told apart", raw))
                anomalies.append(Anomaly("long_row", rel, f"line {line}",
                                         f"{len(cells)} cells where the header has {len(header)}: quarantined"))
                continue
            anomalies.append(Anomaly("long_row", rel, f"line {line}",
                                     f"{len(cells) - len(header)} empty cell(s) beyond the header's {len(header)}"))
        elif len(cells) < len(header):
            anomalies.append(Anomaly("short_row", rel, f"line {line}",
                                     f"{len(cells)} cells where the header has {len(header)}: the missing ones are empty"))
            cells = cells + [""] * (len(header) - len(cells))
        out.append(Record(line, {c: cells[i] for c, i in position.items()},
                           {name: cells[i] for i, name in extra_at.items() if cells[i] != ""}, raw))
    return out

