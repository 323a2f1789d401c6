"""The engine's work folder: records in Parquet shards, one folder per stage, committed atomically.

A record travels through every stage in the same shard (shard ``i`` of one stage
becomes shard ``i`` of the next). A shard is either committed (its file exists,
written whole by ``os.replace``) or not started. Dropped records stay in their
shard with ``dropped_by`` set and are passed through untouched, so the last
stage's shards hold the whole history of every candidate: which stage dropped
or labelled it, and why (``events``).

Each stage folder also holds the settings it ran with (``_stage.json``) and, in
``logs/``, datatrove's logging folder for that stage: task logs, per-task
statistics and the completion markers that gate the next stage.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from ..benchmarks.flux_reason import CHARACTERISTICS
from ..files import atomic_file, atomic_write_text

__all__ = ["WORK_FEATURES", "STAGE_NAMES", "EngineError", "RetryShard", "Workdir", "Stage", "Context",
           "new_record", "note", "drop", "write_parquet_atomic"]

#: every stage, in order; ``sources`` is the ingest that creates the shards
STAGE_NAMES = ("sources", "prompts", "synthesis", "quality", "scoring", "captions", "gcot", "original", "translate")

_string = datasets.Value("string")
_per_characteristic = {c: _string for c in CHARACTERISTICS}
#: one record of the work folder: the published schema's fields plus what the stages need and the provenance
WORK_FEATURES = datasets.Features({
    "id": _string,
    "source": _string,  # laion | imagination | text_rendering (the three prompt sources of Figure 3)
    "input_caption": _string,  # the LAION caption (rewritten into the prompt; a candidate original caption)
    "input_image": _string,  # the LAION image that goes with it, or the mined image
    "examples": datasets.List(_string),  # in-context seed prompts of an imagination candidate
    "prompt": _string,  # what the diffusion model draws
    "seed": datasets.Value("int64"),
    "image": _string,  # path relative to the work folder
    "characteristic_scores": {c: datasets.Value("float32") for c in CHARACTERISTICS},
    "characteristics": datasets.List(_string),
    "captions": dict(_per_characteristic),
    "text_strings": datasets.List(_string),  # exact strings the Text rendering caption quotes
    "gcot": _string,
    "original_caption": _string,
    "original_caption_score": datasets.Value("float32"),
    "captions_zh": dict(_per_characteristic),
    "gcot_zh": _string,
    "original_caption_zh": _string,
    "dropped_by": _string,  # the stage that dropped it; None while it is kept
    "events": datasets.List({"stage": _string, "action": _string, "detail": _string}),
})


class EngineError(ValueError):
    """The engine cannot run as asked (work folder, settings, inputs); the message says what to do."""


class RetryShard(RuntimeError):
    """A shard cannot be finished now (a judge backend failed): it is left uncommitted for the next run."""


def new_record(rid: str, source: str, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {name: None for name in WORK_FEATURES}
    record.update(id=rid, source=source, examples=[], characteristics=[], text_strings=[], events=[],
                  characteristic_scores=dict.fromkeys(CHARACTERISTICS), captions=dict.fromkeys(CHARACTERISTICS),
                  captions_zh=dict.fromkeys(CHARACTERISTICS))
    unknown = set(fields) - set(WORK_FEATURES)
    if unknown:
        raise TypeError(f"not fields of a work record: {sorted(unknown)}")
    record.update(fields)
    return record


def note(record: dict[str, Any], stage: str, action: str, detail: str = "") -> None:
    """Add a provenance event: ``labelled``, ``passed``, ``rejected``, ``failed``, ``dropped``..."""
    record["events"].append({"stage": stage, "action": action, "detail": detail})


def drop(record: dict[str, Any], stage: str, reason: str, action: str = "dropped") -> None:
    record["dropped_by"] = stage
    note(record, stage, action, reason)


def write_parquet_atomic(rows: Sequence[dict[str, Any]], features: datasets.Features, path: Path) -> None:
    """Rows as one Parquet file with ``features`` (readable by ``load_dataset``), replacing ``path`` whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(list(rows), schema=features.arrow_schema)
    with atomic_file(path) as f:  # readers see no file or the whole file, never half of one
        pq.write_table(table, f)


class Workdir:
    """``<root>/NN-<stage>/shard-XXXXX.parquet``, ``<root>/images/``, ``<root>/review/``."""

    SETTINGS = "_stage.json"
    LOGS = "logs"  # datatrove's logging folder inside each stage folder

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def stage_dir(self, stage: str) -> Path:
        return self.root / f"{STAGE_NAMES.index(stage):02d}-{stage}"

    def shards(self, stage: str) -> list[str]:
        """Names of the committed shards of ``stage``, sorted."""
        folder = self.stage_dir(stage)
        return sorted(p.stem for p in folder.glob("shard-*.parquet")) if folder.is_dir() else []

    def shard_names(self) -> list[str]:
        """Every shard the ingest made (``shard-00000`` ...), whether or not a stage has committed it yet."""
        ingest = self.settings("sources")
        if ingest is None:
            raise EngineError(f"{self.root} has not been ingested yet")
        return [f"shard-{i:05d}" for i in range(ingest["shards"])]

    def logs(self, stage: str) -> Path:
        """datatrove's logging folder of ``stage``: deleting the stage folder forgets its completions too."""
        return self.stage_dir(stage) / self.LOGS

    def shard_path(self, stage: str, shard: str) -> Path:
        return self.stage_dir(stage) / f"{shard}.parquet"

    def read(self, stage: str, shard: str) -> list[dict[str, Any]]:
        return pq.read_table(self.shard_path(stage, shard)).to_pylist()

    def write(self, stage: str, shard: str, records: Sequence[dict[str, Any]]) -> None:
        write_parquet_atomic(records, WORK_FEATURES, self.shard_path(stage, shard))

    def records(self, stage: str) -> Iterable[dict[str, Any]]:
        for shard in self.shards(stage):
            yield from self.read(stage, shard)

    def settings(self, stage: str) -> dict[str, Any] | None:
        path = self.stage_dir(stage) / self.SETTINGS
        return json.loads(path.read_text()) if path.is_file() else None

    def save_settings(self, stage: str, settings: dict[str, Any]) -> None:
        atomic_write_text(self.stage_dir(stage) / self.SETTINGS,
                          json.dumps(settings, indent=2, sort_keys=True, default=str))

    def check_settings(self, stage: str, settings: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
        """A stage that has committed shards must go on with the settings it started with. A setting its
        saved settings lack (added to the engine since) is taken at its value in ``defaults``."""
        old = self.settings(stage)
        if old is None or not self.shards(stage):
            return
        new = json.loads(json.dumps(settings, sort_keys=True, default=str))
        old = {**{k: v for k, v in json.loads(json.dumps(defaults or {}, default=str)).items() if k in new}, **old}
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        if changed:
            later = [self.stage_dir(s).name for s in STAGE_NAMES[STAGE_NAMES.index(stage):]]
            diff = "; ".join(f"{k}: {old.get(k)!r} then, {new.get(k)!r} now" for k in changed)
            raise EngineError(f"stage {stage!r} in {self.root} was run with other settings ({diff}). Run with the "
                              f"same settings, or delete {', '.join(later)} to redo those stages with the new ones")


@dataclass
class Context:
    """What a stage may use: the work folder, the settings, the models, the shard it is on."""

    work: Workdir
    config: Any  # EngineConfig
    judge: Any = None  # a vision-language judge
    llm: Any = None  # a text model (imagination, GCoT check, translation); may be the judge
    drawer: Any = None  # drawer(prompts, seeds) -> images, e.g. generation.Drawer
    progress: bool = False
    shard: str = ""
    #: count(name, n): adds to the running step's statistics (datatrove's stat_update)
    count: Callable[[str, int], None] = field(default=lambda name, n=1: None, repr=False)


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline: ``run(records, ctx)`` annotates the kept records of one shard in place,
    dropping with :func:`drop` and recording with :func:`note`."""

    name: str
    run: Callable[[list[dict[str, Any]], Context], None]
    #: EngineConfig fields its results depend on (a change is refused once it has committed shards)
    settings: tuple[str, ...] = ()
    #: the Context models it uses: "judge", "llm", "drawer"
    models: tuple[str, ...] = ()
    doc: str = ""

    def identity(self, config: Any, models: dict[str, Any]) -> dict[str, Any]:
        """What this stage's results depend on: its settings and the description of each model it uses
        (``models``: role -> description, see :meth:`.models.Models.describe`)."""
        return {**{name: getattr(config, name) for name in self.settings},
                **{model: models[model] for model in self.models}}
