"""Benchmark rows from wherever they live: a Hub dataset, a built folder, or the shipped sample."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .benchmarks import Benchmark, get_benchmark

__all__ = ["load_rows"]


def load_rows(benchmark: Benchmark | str, data: str | os.PathLike | None = None,
              configs: Sequence[str] | None = None, *, split: str = "test",
              revision: str | None = None) -> list[dict[str, Any]]:
    """The rows of ``configs`` (default: all), each once.

    ``data`` is a Hub dataset id or a folder written by ``datasets_scripts/build.py``
    (read with ``load_dataset``), or None for the small release shipped with the
    package (read with the benchmark's own release reader). Configs that are
    unions of others (``all``, languages...) overlap: rows are kept once, by id.
    """
    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    unknown = [c for c in configs or () if c not in bench.configs]
    if unknown:
        raise ValueError(f"unknown config(s) {unknown} of {bench.name}; known: {', '.join(bench.configs)}")
    configs = list(configs or bench.configs)
    if data is None:
        release = bench.read_release(bench.sample_path())
        per_config = [release.configs.get(c, []) for c in configs]
    else:
        import datasets

        per_config = [datasets.load_dataset(str(data), c, split=split, revision=revision) for c in configs]
    rows, seen = [], set()
    for config_rows in per_config:
        for row in config_rows:
            rid = bench.row_id(row)
            if rid not in seen:
                seen.add(rid)
                rows.append(dict(row))
    return rows
