"""A file of prompts read into records (each a dict with a ``prompt``), whatever its kind: what ``t2ireason
criteria`` and the rewards' callers bring."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

__all__ = ["read_prompts"]


def read_prompts(path: str | Path) -> list[dict[str, Any]]:
    """The records of a prompts file, each a dict with a ``prompt`` (and whatever fields it gives: ``id``,
    a reference caption, a dimension...): ``.txt`` (a prompt a line, blank lines skipped), ``.jsonl`` (a
    string or an object a line), ``.json`` (a list of them), ``.csv`` (a ``prompt`` column) or ``.parquet``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"prompts file not found: {path}")
    kind = path.suffix.lower()
    if kind == ".txt":
        items: list[Any] = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines()]
        items = [line for line in items if line]
    elif kind == ".jsonl":
        items = []
        for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except ValueError as e:
                    raise ValueError(f"{path}, line {n}: not JSON ({e})") from None
    elif kind == ".json":
        try:
            items = json.loads(path.read_text(encoding="utf-8-sig"))
        except ValueError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        if not isinstance(items, list):
            raise ValueError(f"{path}: expected a JSON list of prompts (strings or objects with a 'prompt')")
    elif kind == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as f:
            items = list(csv.DictReader(f))
    elif kind == ".parquet":
        import pyarrow.parquet as pq

        items = pq.read_table(path).to_pylist()
    else:
        raise ValueError(f"{path}: a prompts file is .txt, .jsonl, .json, .csv or .parquet, not {kind or 'extensionless'}")
    records = []
    for n, item in enumerate(items, 1):
        record = {"prompt": item} if isinstance(item, str) else item
        if not isinstance(record, dict) or not isinstance(record.get("prompt"), str) or not record["prompt"].strip():
            raise ValueError(f"{path}, prompt {n}: needs a non-empty 'prompt' string, got {str(item)[:80]!r}")
        records.append(record)
    if not records:
        raise ValueError(f"{path} holds no prompt")
    return records
