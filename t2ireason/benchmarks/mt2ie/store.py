"""An MT2IE run's output folder: rows per model, the prompt chains, the settings; what is done is read
back from it, so a run started again skips what is finished. Every file is rewritten atomically.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ...files import atomic_write_text
from ...generation import GenerationConfig
from .release import RUN_FEATURES, read_jsonl

__all__ = ["Store", "run_row", "describe"]


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
    """The output folder: rows per model, prompt chains, settings; what is done is read back from it."""

    def __init__(self, out_dir: Path):
        self.out = out_dir
        self.runs = out_dir / "runs"
        for torn in out_dir.rglob(".tmp-*"):  # left by a killed run: our atomic writes' temporary files
            torn.unlink()
        self.rows: dict[str, list[dict]] = {p.stem: _read_jsonl(p) for p in sorted(self.runs.glob("*.jsonl"))}
        self.done = {(r["run_id"], int(r["iteration"])): r for rows in self.rows.values() for r in rows}
        self.chains = _read_jsonl(out_dir / "prompt_chains.jsonl")
        self.prompts = {(c["chain"], int(c["iteration"])): c for c in self.chains}

    def check_settings(self, settings: dict[str, Any]) -> None:
        """Refuse to mix results of another judge, scorer or model under the same names."""
        path = self.out / "settings.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
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
        atomic_write_text(path, json.dumps({**old, **settings, "models": models}, indent=2) + "\n")

    def add_seed_prompts(self, seed_prompts: list[dict[str, Any]]) -> None:
        path = self.out / "seed_prompts.jsonl"
        rows = {r["id"]: r for r in _read_jsonl(path)}
        for sp in seed_prompts:
            if sp["id"] in rows and rows[sp["id"]]["prompt"] != sp["prompt"]:
                raise ValueError(f"{path} has another prompt under id {sp['id']!r}; use another output folder")
            rows.setdefault(sp["id"], sp)
        _write_jsonl(path, rows.values())

    def add_chains(self, entries: list[dict[str, Any]]) -> None:
        for e in entries:
            self.prompts[(e["chain"], e["iteration"])] = e
        self.chains.extend(entries)
        _write_jsonl(self.out / "prompt_chains.jsonl", self.chains)

    def add_rows(self, model: str, rows: list[dict[str, Any]]) -> None:
        fresh = [r for r in rows if (r["run_id"], r["iteration"]) not in self.done]  # never twice
        for r in fresh:
            self.done[(r["run_id"], r["iteration"])] = r
        self.rows.setdefault(model, []).extend(fresh)
        _write_jsonl(self.runs / f"{model}.jsonl", self.rows[model])


def run_row(**fields: Any) -> dict[str, Any]:
    unknown = set(fields) - set(RUN_FEATURES)
    if unknown:
        raise KeyError(f"not MT2IE run fields: {sorted(unknown)}")
    row = dict.fromkeys(RUN_FEATURES)
    row.update(fields)
    row["id"] = f"{row['run_id']}/{row['iteration']}"
    return row
