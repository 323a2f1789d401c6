"""Benchmark rows from wherever they live (a Hub dataset, a built folder, or the shipped sample), and the images a
run of them makes (:func:`plan_jobs`: each row's prompt, file and seed)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .benchmarks import get_benchmark
from .generation.jobs import Job, image_seed

if TYPE_CHECKING:
    from .benchmarks import Benchmark

__all__ = ["load_rows", "check_data", "plan_jobs"]


def check_data(benchmark: Benchmark | str, data: str | os.PathLike | None, configs: Sequence[str] | None = None,
               *, revision: str | None = None) -> list[str] | None:
    """``data`` checked before anything is created or generated: a local folder (see
    :func:`t2ireason.files.missing_folder`) must exist, and a local folder or a Hub dataset id
    (its config list read from the Hub, or from the local cache offline) must hold the configs asked
    (default: every config it holds, at least one) of this benchmark, not another's; a ValueError says
    which and how to fix it. Returns the configs asked (None for the shipped sample)."""
    from pathlib import Path

    from .files import missing_folder

    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    if data is None:
        return None
    said = missing_folder(data)
    if said:
        raise ValueError(f"--data: {said}; give a folder built by `t2ireason build {bench.name} --out <folder>`, "
                         "a Hub dataset id, or nothing for the shipped sample")
    folder = Path(data).expanduser()
    import json

    import datasets

    try:
        if folder.is_dir():
            have = datasets.get_dataset_config_names(str(folder))
        else:
            have = list(_hub_config_names(str(data), revision))
    except Exception as e:  # noqa: BLE001 - not a dataset at all: said here, with the cause
        cause = f"{type(e).__name__}: {' '.join(str(e).split())}"
        if folder.is_dir():
            raise ValueError(f"--data: {data} is not a dataset folder ({cause}); build one with "
                             f"`t2ireason build {bench.name} --out <folder>`") from None
        raise ValueError(f"--data: {data} is no folder here, and no Hub dataset that can be read ({cause}); check "
                         f"the id (and --data-revision), log in (`hf auth login`) for a private or gated dataset, "
                         f"or give a folder built by `t2ireason build {bench.name} --out <folder>`") from None
    # a folder of some configs (`t2ireason criteria` writes those its rows fall in) is read whole
    wanted = list(configs or [c for c in bench.configs if c in have] or bench.configs)
    report = folder / "build_report.json"
    built = json.loads(report.read_text(encoding="utf-8")).get("benchmark") if report.is_file() else None
    if built and built != bench.name or not set(have) <= set(bench.configs):
        what = (f"was built for {built}" if built and built != bench.name
                else f"holds the configs {', '.join(have)}, not {bench.name}'s")
        raise ValueError(f"--data: {data} {what}; build {bench.name} into its own folder (`t2ireason build {bench.name} --out <folder>`), "
                         f"or use --benchmark {built or '<its benchmark>'}")
    absent = [c for c in wanted if c not in have]
    if absent:
        raise ValueError(f"--data: {data} has no config {', '.join(absent)} of {bench.name} (its release has none); "
                         f"pass --configs among {', '.join(c for c in bench.configs if c in have)}")
    return wanted


@functools.lru_cache(maxsize=32)
def _hub_config_names(repo_id: str, revision: str | None) -> tuple[str, ...]:
    """A Hub dataset's configs, asked once a process: `t2ireason run` checks its data before anything is
    made, where the run is made and where the rows are read (a failure is not kept: asked again)."""
    import datasets

    return tuple(datasets.get_dataset_config_names(repo_id, revision=revision))


def load_rows(benchmark: Benchmark | str, data: str | os.PathLike | None = None,
              configs: Sequence[str] | None = None, *, split: str | None = None,
              revision: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows of ``configs`` (default: all), each once, in config order; with ``limit``, the first
    ``limit`` of them.

    ``data`` is a Hub dataset id or a folder written by ``datasets_scripts/build.py`` or ``t2ireason
    criteria`` (read with ``load_dataset``; default configs: those it holds), or None for the small
    release shipped with the package (read with the benchmark's own release reader). Configs that are
    unions of others (``all``, languages...) overlap: rows are kept once, by id.
    Configs are read one after the other and reading stops once ``limit`` rows are in hand.
    """
    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    unknown = [c for c in configs or () if c not in bench.configs]
    if unknown:
        raise ValueError(f"unknown config(s) {unknown} of {bench.name}; known: {', '.join(bench.configs)}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    configs = check_data(bench, data, configs, revision=revision) or list(configs or bench.configs)
    if data is None:
        release = bench.read_release(bench.sample_path())
        per_config: Iterable[Iterable[dict[str, Any]]] = (release.configs.get(c, []) for c in configs)
    else:
        import datasets

        per_config = (datasets.load_dataset(str(data), c, split=split or bench.split, revision=revision)
                      for c in configs)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for config_rows in per_config:  # a generator: a config is read only when the rows so far are too few
        for row in config_rows:
            rid = bench.row_id(row)
            if rid not in seen:
                seen.add(rid)
                rows.append(dict(row))
                if limit is not None and len(rows) == limit:
                    return rows
    return rows


def plan_jobs(benchmark: Benchmark | str, rows: Sequence[dict[str, Any]], *, images_per_prompt: int = 1,
              base_seed: int = 0, prompts: dict[Any, str] | None = None) -> list[Job]:
    """Every image of a run, in a fixed order. ``prompts`` replaces each row's prompt (the rewritten
    prompts of the decoupled baselines), by any id the benchmark takes for the row
    (:meth:`~t2ireason.benchmarks.base.Benchmark.id_forms`); a row without one is an error, never
    drawn from its original prompt in silence."""
    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    if prompts:
        prompts = _rewritten(bench, rows, prompts)
    jobs, seen = [], set()
    for row in rows:
        pid = bench.row_id(row)
        if pid in seen:
            raise ValueError(f"duplicate prompt id {pid!r} in the rows of {bench.name}")
        seen.add(pid)
        prompt = prompts[pid] if prompts else bench.prompt(row)
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"row {pid!r} of {bench.name} has no prompt")
        for s in range(images_per_prompt):
            jobs.append(Job(pid, prompt, s, bench.image_path(row, s),
                            image_seed(bench.name, pid, s, base_seed), row.get("config")))
    files = [j.file for j in jobs]
    if len(set(files)) != len(files):
        raise ValueError(f"{bench.name}: two images map to the same file; check image_path")
    return jobs


def _rewritten(bench: Benchmark, rows: Sequence[dict[str, Any]], prompts: dict[Any, str]) -> dict[str, str]:
    """``prompts`` by the row id of each of ``rows``; every row must have one."""
    joined = bench.row_ids(rows).join(prompts, "rewritten prompts")
    lacking = [bench.row_id(r) for r in rows if bench.row_id(r) not in joined]
    if lacking:
        shown = ", ".join(lacking[:3]) + (", ..." if len(lacking) > 3 else "")
        raise ValueError(f"{len(lacking)} of {len(rows)} rows of {bench.name} have no rewritten prompt ({shown}); "
                         f"the prompts given name rows such as {next(iter(prompts))!r}")
    return joined
