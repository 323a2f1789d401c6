"""An MT2IE run's output folder: rows per model, the prompt chains, the settings; what is done is read
back from it, so a run started again skips what is finished. Every file is rewritten atomically.

In a launch of several processes (:mod:`t2ireason.processes`) each process writes the rows and prompt chains
of its share of the runs to a folder of its own, ``.processes/<rank>/`` (``runs/<model>.jsonl``,
``prompt_chains.jsonl``: never a file another process writes), and the main process folds them into the
folder's own files (:func:`fold`): before starting (what a stopped launch left), and once every process has
finished, in the order one process writes them. The images go where one process puts them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ...files import atomic_write_text
from ...generation import GenerationConfig
from .release import RUN_FEATURES, read_jsonl

__all__ = ["Store", "run_row", "describe", "fold", "SHARDS"]

#: each process's folder of a launch, under the output folder
SHARDS = ".processes"


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(path) if path.is_file() else []
    for r in rows:
        r.pop("_line", None)
    return rows


def describe(spec: Any) -> Any:
    """What identifies a drawer (its generation config) or a parser (its name), for settings.json."""
    config = GenerationConfig(model=spec) if isinstance(spec, str) else getattr(spec, "config", spec)
    if isinstance(config, GenerationConfig):
        return config.to_dict()
    # the qualified name alone: a script's functions live in __main__ or in its module name, by how it runs
    return getattr(spec, "__qualname__", type(spec).__qualname__)


class Store:
    """The output folder: rows per model, prompt chains, settings; what is done is read back from it.
    ``rank``: this process's place in a launch of several (its rows and chains then go to its own folder,
    :data:`SHARDS`); ``main``: the process that writes the folder's shared files (settings, seed prompts) and
    sweeps what a killed run left."""

    def __init__(self, out_dir: Path, rank: int | None = None, main: bool = True):
        self.out = out_dir
        self.runs = out_dir / "runs"
        self.main = main
        self.own = out_dir if rank is None else out_dir / SHARDS / str(rank)  # where this process writes
        if main:
            for torn in out_dir.rglob(".tmp-*"):  # left by a killed run: our atomic writes' temporary files
                torn.unlink()
        self.rows: dict[str, list[dict]] = {p.stem: _read_jsonl(p) for p in sorted(self.runs.glob("*.jsonl"))}
        self.done = {(r["run_id"], int(r["iteration"])): r for rows in self.rows.values() for r in rows}
        self.chains = _read_jsonl(out_dir / "prompt_chains.jsonl")
        self.prompts = {(c["chain"], int(c["iteration"])): c for c in self.chains}
        self._mine: dict[str, list[dict]] = {}  # in a launch: the rows this process made
        self._my_chains: list[dict] = []

    def check_settings(self, settings: dict[str, Any]) -> None:
        """Refuse to mix results of another judge, scorer or model under the same names."""
        path = self.out / "settings.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
        if old and "ranking_metrics" not in old:  # a folder made before them: its rows have none
            old["ranking_metrics"] = {}
        for key, value in settings.items():
            if key != "models" and key in old and old[key] != value:
                raise ValueError(f"{self.out} holds results made with {key}={old[key]!r}, not {value!r}; "
                                 "use another output folder")
        models = dict(old.get("models", {}))
        for name, desc in settings["models"].items():
            if name in models and models[name] != desc:
                raise ValueError(f"{self.out} holds results of a different model named {name!r} "
                                 f"({models[name]}); use another name or output folder")
            models[name] = desc
        if self.main:
            atomic_write_text(path, json.dumps({**old, **settings, "models": models}, indent=2) + "\n")

    def add_seed_prompts(self, seed_prompts: list[dict[str, Any]]) -> None:
        path = self.out / "seed_prompts.jsonl"
        rows = {r["id"]: r for r in _read_jsonl(path)}
        for sp in seed_prompts:
            if sp["id"] in rows and rows[sp["id"]]["prompt"] != sp["prompt"]:
                raise ValueError(f"{path} has another prompt under id {sp['id']!r}; use another output folder")
            rows.setdefault(sp["id"], sp)
        if self.main:
            _write_jsonl(path, rows.values())

    def add_chains(self, entries: list[dict[str, Any]]) -> None:
        for e in entries:
            self.prompts[(e["chain"], e["iteration"])] = e
        self.chains.extend(entries)
        self._my_chains.extend(entries)
        _write_jsonl(self.own / "prompt_chains.jsonl", self.chains if self.own == self.out else self._my_chains)

    def add_rows(self, model: str, rows: list[dict[str, Any]]) -> None:
        fresh = [r for r in rows if (r["run_id"], r["iteration"]) not in self.done]  # never twice
        for r in fresh:
            self.done[(r["run_id"], r["iteration"])] = r
        self.rows.setdefault(model, []).extend(fresh)
        self._mine.setdefault(model, []).extend(fresh)
        _write_jsonl(self.own / "runs" / f"{model}.jsonl", self.rows[model] if self.own == self.out else self._mine[model])


def fold(out_dir: Path, order: Callable[[dict[str, Any]], Any] | None = None) -> None:
    """The main process of a launch: the rows and prompt chains in each process's folder (:data:`SHARDS`) moved
    into the output folder's own files, which are then written whole (sorted by ``order``, a key of a row or
    chain, when given: the order one process writes them), and those folders removed."""
    import shutil

    shards = sorted(p for p in (out_dir / SHARDS).glob("*") if p.is_dir()) if (out_dir / SHARDS).is_dir() else []
    if not shards:
        return
    chains = _read_jsonl(out_dir / "prompt_chains.jsonl")
    rows = {p.stem: _read_jsonl(p) for p in sorted((out_dir / "runs").glob("*.jsonl"))}
    for shard in shards:
        chains += _read_jsonl(shard / "prompt_chains.jsonl")
        for p in sorted((shard / "runs").glob("*.jsonl")):
            rows.setdefault(p.stem, []).extend(_read_jsonl(p))
    chains = list({(c["chain"], int(c["iteration"])): c for c in chains}.values())
    if order is not None:
        chains.sort(key=order)
    _write_jsonl(out_dir / "prompt_chains.jsonl", chains)
    for model, made in rows.items():
        made = list({(r["run_id"], int(r["iteration"])): r for r in made}.values())
        if order is not None:
            made.sort(key=order)
        _write_jsonl(out_dir / "runs" / f"{model}.jsonl", made)
    shutil.rmtree(out_dir / SHARDS)


def run_row(**fields: Any) -> dict[str, Any]:
    unknown = set(fields) - set(RUN_FEATURES)
    if unknown:
        raise KeyError(f"not MT2IE run fields: {sorted(unknown)}")
    row = dict.fromkeys(RUN_FEATURES)
    row.update(fields)
    row["id"] = f"{row['run_id']}/{row['iteration']}"
    return row
