"""The engine's stages as datatrove pipeline steps.

Every model stage runs as ``[ShardReader, StageStep, ShardWriter]`` (or ``[ShardReader,
StageInferenceRunner]`` with datatrove's inference runner, see :mod:`.runner`) in its own datatrove
executor, chained to the stage before it with ``depends=``: a stage starts only once every task of the
one before has its completion marker. Task ``r`` of ``N`` takes the shards ``r, r + N, r + 2N...``
(the shard list comes from the ingest, never from the files present).

- :class:`ShardReader` reads the previous stage's shards one record at a time (a datatrove
  ``Document`` carrying the record); a shard this stage already committed (a task killed after
  committing it) is skipped, and counted from its file;
- :class:`StageStep` runs the stage function over each shard's kept records at once (one batch of
  questions per shard); records dropped earlier pass through untouched;
- :class:`ShardWriter` commits a shard whole (temporary file, then rename) as soon as it has all of its
  records, so a killed task leaves no partial shard, and counts what the stage did (kept, dropped, and
  every action of its events) in datatrove's statistics. A shard whose judge backend failed is not
  committed; the task then fails, to be run again by the same command (the response cache answers
  what was asked).

:class:`ExportStep` writes a shard of the release, :class:`ReleaseStep` (one task) the statistics, the
card and the quality filter's review sample.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.disk_base import DiskWriter

from .export import export_review_sample, export_shard, finish_release
from .models import Models
from .work import Context, EngineError, RetryShard, Stage, Workdir

__all__ = ["ShardReader", "StageStep", "ShardWriter", "ExportStep", "ReleaseStep", "record_counts", "ShardsLeft"]


class ShardsLeft(RetryShard):
    """Shards a task could not finish (a judge backend failed): the task stays incomplete."""


def my_shards(work: Workdir, rank: int, world_size: int) -> list[str]:
    return work.shard_names()[rank::world_size]


def record_counts(records: list[dict[str, Any]], stage: str) -> Counter[str]:
    """What ``stage`` did to ``records``: how many it received (not dropped before it), kept and dropped,
    and each action of its events (``passed``, ``labelled``, ``failed``...)."""
    counts: Counter[str] = Counter()
    for r in records:
        if r["dropped_by"] not in (None, stage):
            continue
        counts["records in"] += 1
        counts["kept" if r["dropped_by"] is None else "dropped"] += 1
        counts.update(f"action: {e['action']}" for e in r["events"] if e["stage"] == stage)
    return counts


def _count(step: PipelineStep, counts: Counter[str]) -> None:
    for name, n in counts.items():
        step.stat_update(name, value=n, unit="task")


class ShardReader(PipelineStep):
    """The records of ``previous``'s shards for this task, skipping the shards ``stage`` has committed."""

    name = "engine shards"
    type = "📖 - READER"

    def __init__(self, root: str | Path, stage: str, previous: str):
        super().__init__()
        self.root, self.stage, self.previous = str(root), stage, previous

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        work = Workdir(self.root)
        for shard in my_shards(work, rank, world_size):
            if work.shard_path(self.stage, shard).is_file():  # committed whole by an earlier, killed task
                self.stat_update("shards resumed", unit="task")
                _count(self, record_counts(work.read(self.stage, shard), self.stage))
                continue
            source = work.shard_path(self.previous, shard)
            if not source.is_file():
                raise EngineError(f"{source} is missing although every task of the {self.previous} stage completed; "
                                  f"delete {work.stage_dir(self.previous).name} to redo that stage")
            with self.track_time(unit="shard"):
                records = work.read(self.previous, shard)
            self.stat_update("shards read", unit="task")
            for i, r in enumerate(records):
                yield Document(text=r["prompt"] or r["input_caption"] or r["id"], id=r["id"],
                               metadata={"shard": shard, "index": i, "size": len(records), "record": r})


class StageStep(PipelineStep):
    """One engine stage (:class:`~.work.Stage`) over whole shards: the kept records of a shard in one call."""

    type = "🧠 - ENGINE STAGE"

    def __init__(self, stage: Stage, root: str | Path, config: Any, models: Models, progress: bool = False):
        self.name = stage.name  # before datatrove names the step's statistics after it
        super().__init__()
        self.stage, self.root, self.config, self.models, self.progress = stage, str(root), config, models, progress
        self._ctx: Context | None = None

    def context(self) -> Context:
        """The stage's context, its models loaded (once per process) on first use."""
        if self._ctx is None:
            roles = {role: self.models.load(role) for role in self.stage.models}
            self._ctx = Context(Workdir(self.root), self.config, progress=self.progress,
                                count=lambda name, n=1: self.stat_update(name, value=n, unit="task"), **roles)
        return self._ctx

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for shard, docs in itertools.groupby(data, key=lambda d: d.metadata["shard"]):
            docs = list(docs)
            kept = [d.metadata["record"] for d in docs if d.metadata["record"]["dropped_by"] is None]
            if kept:
                ctx = self.context()
                ctx.shard = shard
                with self.track_time(unit="shard"):
                    try:
                        self.stage.run(kept, ctx)
                    except RetryShard as e:  # left for the next run: the writer does not commit it
                        for d in docs:
                            d.metadata["retry"] = str(e)
            yield from docs


class ShardWriter(DiskWriter):
    """Commits each shard of ``stage`` whole once all its records have come through (in their order in the
    shard, whatever order they came in); see the module docstring."""

    name = "engine shards"

    def __init__(self, root: str | Path, stage: str):
        work = Workdir(root)
        super().__init__(str(work.stage_dir(stage)), output_filename="${shard}-${rank}.parquet", compression=None, mode="wb")
        self.root, self.stage = str(root), stage
        self._shards: dict[str, dict[int, dict[str, Any]]] = {}
        self._left: dict[str, str] = {}

    def write(self, document: Document, rank: int = 0, **kwargs) -> None:
        m = document.metadata  # one thread writes (the inference runner's event loop, or the pipeline's)
        if "retry" in m:
            self._left[m["shard"]] = m["retry"]
        records = self._shards.setdefault(m["shard"], {})
        records[m["index"]] = m["record"]
        if len(records) == m["size"]:
            self._commit(m["shard"])

    def _commit(self, shard: str) -> None:
        records = [r for _, r in sorted(self._shards.pop(shard).items())]
        if shard in self._left:
            self.stat_update("shards left for the next run", unit="task")
            return
        with self.track_time(unit="shard"):
            Workdir(self.root).write(self.stage, shard, records)
        self.stat_update("shards committed", unit="task")
        _count(self, record_counts(records, self.stage))

    def _write(self, document: dict, file_handler, filename: str):  # every write goes through write()
        raise NotImplementedError

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
        left = {**self._left, **{s: "the task ended before all its records came through" for s in self._shards}}
        if exc_type is None and left:
            first = next(iter(left.items()))
            raise ShardsLeft(f"{self.stage}: {len(left)} shard(s) left for the next run ({first[0]}: {first[1]})")


class ExportStep(PipelineStep):
    """This task's shards of the release (``data/`` and ``provenance/``)."""

    name = "release shards"
    type = "💽 - WRITER"

    def __init__(self, root: str | Path, out: str | Path):
        super().__init__()
        self.root, self.out = str(root), str(out)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        work = Workdir(self.root)
        for shard in my_shards(work, rank, world_size):
            with self.track_time(unit="shard"):
                self.stat_update("kept", value=export_shard(work, self.out, shard), unit="task")
            self.stat_update("shards written", unit="task")
        return iter(())


class ReleaseStep(PipelineStep):
    """One task: the release's statistics and card, then the quality filter's review sample."""

    name = "release card"
    type = "💽 - WRITER"

    def __init__(self, root: str | Path, out: str | Path, *, license: str, repo_id: str | None,
                 run: dict[str, Any], review_size: int, seed: int):
        super().__init__()
        self.root, self.out, self.license, self.repo_id, self.run_settings = str(root), str(out), license, repo_id, run
        self.review_size, self.seed = review_size, seed

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if rank != 0:
            return iter(())
        work = Workdir(self.root)
        with self.track_time(unit="release"):
            stats = finish_release(work, self.out, license=self.license, repo_id=self.repo_id, run=self.run_settings)
            if self.review_size:
                export_review_sample(work, work.root / "review" / "quality", per_verdict=self.review_size,
                                     seed=self.seed)
        self.stat_update("candidates", value=stats["candidates"], unit="release")
        self.stat_update("kept", value=stats["kept"], unit="release")
        self.stat_update("captions", value=stats["captions_total"], unit="release")
        return iter(())
