"""The benchmarks of the seed papers, one module each, found by name.

>>> get_benchmark("r2i-bench").name
'r2i-bench'

Importing this package is cheap (a command's ``--help`` lists the names without loading
``datasets``); a benchmark's module, and what it needs, is imported by :func:`get_benchmark`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import (
        Anomaly,
        Benchmark,
        OfficialRelease,
        Quarantined,
        Release,
        ReleaseError,
        is_safe_name,
        safe_name,
    )

#: benchmark name -> module (each module defines BENCHMARK, an instance of Benchmark)
MODULES = {
    "t2i-reasonbench": "t2ireason.benchmarks.t2i_reasonbench",
    "r2i-bench": "t2ireason.benchmarks.r2i_bench",
    "worldgenbench": "t2ireason.benchmarks.worldgenbench",
    "prism-bench": "t2ireason.benchmarks.prism_bench",
    "flux-reason-6m": "t2ireason.benchmarks.flux_reason",
    "mt2ie": "t2ireason.benchmarks.mt2ie",
}

#: the benchmarks scored by a judge through a metric module (the others are data: a corpus, an agent's seeds)
JUDGED = ("t2i-reasonbench", "r2i-bench", "worldgenbench", "prism-bench")

__all__ = ["Anomaly", "Benchmark", "OfficialRelease", "Quarantined", "Release", "ReleaseError", "get_benchmark",
           "is_safe_name", "safe_name", "MODULES", "JUDGED"]

_BASE_NAMES = {"Anomaly", "Benchmark", "OfficialRelease", "Quarantined", "Release", "ReleaseError", "is_safe_name",
               "safe_name"}


def __getattr__(name: str) -> Any:
    # the base classes import datasets: loaded on first use, not with the registry
    if name in _BASE_NAMES:
        return getattr(importlib.import_module(".base", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_benchmark(name: str) -> Benchmark:
    """The benchmark called ``name`` (underscores and case are forgiven)."""
    key = name.strip().lower().replace("_", "-")
    if key not in MODULES:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(MODULES)}")
    return importlib.import_module(MODULES[key]).BENCHMARK
