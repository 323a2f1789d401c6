"""MT2IE's data, as a release: the seed prompts and, optionally, finished runs.

Release layout read by :func:`read_release` (a folder)::

    seed_prompts.jsonl     {"id", "category", "prompt", "concepts": [...]} per line
    runs/*.jsonl           optional; one object per iteration with the fields of RUN_FEATURES,
                           "image" a path relative to the .jsonl file (or null for a failed draw)

The agent (:mod:`.agent`) writes rows of exactly ``RUN_FEATURES`` in this layout.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import datasets

from ..base import Anomaly, Release, ReleaseError

__all__ = ["CATEGORIES", "MODES", "SEED_FEATURES", "RUN_FEATURES", "read_jsonl", "read_release", "read_seed_prompts"]

#: the paper's four topic categories, "that encompass COCO's captions" (seed 002, section 5)
CATEGORIES = ("household scenes", "people", "animals", "locations")
#: iterative difficulty (section 5) and adaptive prompting (section 6)
MODES = ("iterative", "adaptive")

SEED_FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "category": datasets.Value("string"),
    "prompt": datasets.Value("string"),
    "concepts": datasets.List(datasets.Value("string")),
})

RUN_FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "run_id": datasets.Value("string"),
    "model": datasets.Value("string"),
    "evaluator": datasets.Value("string"),
    "mode": datasets.Value("string"),
    "seed": datasets.Value("int64"),
    "seed_prompt_id": datasets.Value("string"),
    "category": datasets.Value("string"),
    "iteration": datasets.Value("int32"),
    "prompt": datasets.Value("string"),
    "adaptive_bin": datasets.Value("string"),
    "image": datasets.Image(),
    "image_seed": datasets.Value("int64"),
    "score": datasets.Value("float64"),
    "difficulty": datasets.Value("float64"),
    "difficulty_method": datasets.Value("string"),
    "weighted_score": datasets.Value("float64"),
    "aesthetic": datasets.Value("float64"),
    # the ranking metrics scored beside the agent's own (VQAScore, CLIPScore, DSG, VIEScore, TIFA; seed 002 Table 3)
    "metric_scores": datasets.List({"metric": datasets.Value("string"), "score": datasets.Value("float64"),
                                    "failure": datasets.Value("string")}),
    "judge_replies": datasets.List(datasets.Value("string")),
    "failure": datasets.Value("string"),
})

_RUN_REQUIRED = ("model", "mode", "seed", "seed_prompt_id", "iteration", "prompt")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file; a bad line is an error naming the file and the line."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ReleaseError(f"{path}, line {n}: not valid JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise ReleaseError(f"{path}, line {n}: expected a JSON object, got {type(row).__name__}")
        rows.append(row | {"_line": n})
    return rows


def read_release(source: str | Path) -> Release:
    """The seed prompts and the runs of an MT2IE release folder, checked: a malformed line, a missing
    or unknown field, a duplicate id or a missing image is an error naming the file and the line."""
    source = Path(source)
    seeds_file = source / "seed_prompts.jsonl"
    if not seeds_file.is_file():
        raise ReleaseError(f"{seeds_file}: missing (an MT2IE release holds seed_prompts.jsonl)")
    anomalies: list[Anomaly] = []
    seeds = _seed_prompts(seeds_file, anomalies)
    configs = {"seed_prompts": seeds}
    counts = {"seed_prompts": dict(Counter(r["category"] for r in seeds))}
    run_files = sorted((source / "runs").glob("*.jsonl"))
    if run_files:
        known = {r["id"]: r for r in seeds}
        runs = [row for f in run_files for row in _run_rows(f, known, anomalies)]
        configs["runs"] = runs
        counts["runs"] = {"runs": len({r["run_id"] for r in runs}), "models": len({r["model"] for r in runs}),
                          "failed": sum(r.get("score") is None for r in runs)}
    return Release(configs=configs, anomalies=anomalies, counts=counts, license=None, source=str(source))


def read_seed_prompts(path: str | Path) -> list[dict[str, Any]]:
    """The seed prompts of a ``seed_prompts.jsonl`` file (or of the folder holding one), checked as
    :func:`read_release` checks them; prompts outside the paper's categories are allowed here."""
    path = Path(path)
    path = path / "seed_prompts.jsonl" if path.is_dir() else path
    if not path.is_file():
        raise ReleaseError(f"{path}: no such seed prompts file")
    return _seed_prompts(path, [])


def _seed_prompts(path: Path, anomalies: list[Anomaly]) -> list[dict[str, Any]]:
    rows, seen = [], set()
    for raw in read_jsonl(path):
        line = raw.pop("_line")
        for key in ("id", "category", "prompt"):
            if not str(raw.get(key) or "").strip():
                raise ReleaseError(f"{path}, line {line}: missing {key!r}")
        _check_fields(raw, SEED_FEATURES, f"{path}, line {line}")
        rid = str(raw["id"])
        if rid in seen:
            raise ReleaseError(f"{path}, line {line}: duplicate id {rid!r}")
        seen.add(rid)
        if raw["category"] not in CATEGORIES:
            anomalies.append(Anomaly("other_category", path.name, line,
                                     f"{raw['category']!r} is not one of the paper's {CATEGORIES}"))
        rows.append({"id": rid, "category": raw["category"], "prompt": raw["prompt"].strip(),
                     "concepts": list(raw.get("concepts") or [])})
    return rows


def _run_rows(path: Path, seeds: dict[str, dict], anomalies: list[Anomaly]) -> list[dict[str, Any]]:
    rows, iterations = [], defaultdict(set)
    for raw in read_jsonl(path):
        line = raw.pop("_line")
        missing = [k for k in _RUN_REQUIRED if raw.get(k) is None]
        if missing:
            raise ReleaseError(f"{path}, line {line}: missing {', '.join(missing)}")
        if raw["mode"] not in MODES:
            raise ReleaseError(f"{path}, line {line}: mode {raw['mode']!r} is not one of {MODES}")
        row = dict(raw)
        row["run_id"] = str(raw.get("run_id") or f"{raw['model']}/{raw['mode']}/seed{raw['seed']}/"
                                                  f"{raw['seed_prompt_id']}")
        row["id"] = f"{row['run_id']}/{raw['iteration']}"
        if raw.get("image"):
            image = path.parent / raw["image"]
            if not image.is_file():
                raise ReleaseError(f"{path}, line {line}: image {raw['image']} not found ({image})")
            row["image"] = str(image)
        seed = seeds.get(str(raw["seed_prompt_id"]))
        if seed is None:
            anomalies.append(Anomaly("unknown_seed_prompt", path.name, line,
                                     f"seed_prompt_id {raw['seed_prompt_id']!r} is not in seed_prompts.jsonl"))
        elif not row.get("category"):
            row["category"] = seed["category"]
        if raw.get("score") is None:
            anomalies.append(Anomaly("unscored", path.name, line, raw.get("failure") or "no score, no failure given"))
        iterations[row["run_id"]].add(int(raw["iteration"]))
        _check_fields(row, RUN_FEATURES, f"{path}, line {line}")
        rows.append(row)
    for run_id, its in iterations.items():
        gaps = sorted(set(range(max(its) + 1)) - its)
        if gaps:
            anomalies.append(Anomaly("missing_iteration", path.name, None, f"run {run_id}: iterations {gaps}"))
    return rows


def _check_fields(raw: dict[str, Any], features: datasets.Features, where: str) -> None:
    """Keys outside the schema are an error: a misspelt field would otherwise vanish from the dataset."""
    unknown = sorted(k for k in raw if k not in features)
    if unknown:
        raise ReleaseError(f"{where}: unknown field(s) {unknown}; known: {', '.join(features)}")
