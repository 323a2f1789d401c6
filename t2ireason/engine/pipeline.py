"""The pipeline: the stages in order, their settings, and :func:`run_engine`, which ingests the inputs,
checks the settings, and runs every stage as datatrove executors chained with ``depends=`` (on this
machine or as Slurm job arrays), resuming wherever an earlier run stopped."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks.flux_reason import CHARACTERISTICS, characteristic
from ..files import atomic_write_text, remove_partial_files
from .executors import (
    Local,
    LocalExecutor,
    Slurm,
    StageIncomplete,
    WorkerPool,
    check_no_jobs_running,
    quiet_logs,
    record_jobs,
    slurm_executor,
    visible_gpus,
)
from .export import check_release
from .models import Models, Server
from .sources import Sources, candidate_counts, ingest, prompts_stage
from .stages import (
    captions_stage,
    gcot_stage,
    original_stage,
    quality_stage,
    scoring_stage,
    synthesis_stage,
    translate_stage,
)
from .work import STAGE_NAMES, EngineError, Stage, Workdir

__all__ = ["EngineConfig", "STAGES", "EngineResult", "StageSummary", "run_engine", "stage_summary",
           "DEFAULT_THRESHOLD", "RELEASE"]

#: the paper calibrates a threshold per characteristic but does not publish them: ours, for every one
DEFAULT_THRESHOLD = 7.0


@dataclass
class EngineConfig:
    """Every setting that decides what the engine makes (saved with each stage; see ``Workdir.check_settings``)."""

    #: records per shard: the unit of work, of commit and of resumption (a stage holds a shard's images in memory)
    shard_size: int = 256
    seed: int = 0  # mixed into every image seed and every sampled request's seed
    #: characteristic -> minimum relevance (1 to 10) for its label; missing ones get DEFAULT_THRESHOLD
    thresholds: dict[str, float] = field(default_factory=dict)
    original_threshold: float = 7.0  # minimum alignment (1 to 10) to keep an original caption
    imagination_temperature: float = 1.0  # "increase the model's temperature" (section 2.2)
    imagination_examples: int = 10  # in-context seed prompts per imagination candidate (section 2.2)
    gcot_attempts: int = 2  # GCoT plans per image at most (the first and one revision)
    max_reasks: int = 2  # re-asks of a reply that does not parse, before it is recorded as a failure
    on_judge_error: str = "retry"  # backend failure: "retry" the shard next run, or "record" it on the record
    review_size: int = 500  # images per verdict in the quality filter's human-review sample (appendix B.4)
    #: "apply" drops what the quality filter rejects (the paper); "record" keeps it with its verdict, for a
    #: smoke run whose random judge rejects everything
    quality_filter: str = "apply"

    def __post_init__(self):
        unknown = [k for k in self.thresholds if characteristic(k) is None]
        if unknown:
            raise ValueError(f"unknown characteristic(s) {unknown} in thresholds; known: {', '.join(CHARACTERISTICS)}")
        given = {characteristic(k): float(v) for k, v in self.thresholds.items()}
        self.thresholds = {c: given.get(c, DEFAULT_THRESHOLD) for c in CHARACTERISTICS}
        for name in ("shard_size", "imagination_examples", "gcot_attempts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_reasks < 0 or self.review_size < 0:
            raise ValueError("max_reasks and review_size must be >= 0")
        if self.quality_filter not in ("apply", "record"):
            raise ValueError(f"quality_filter must be 'apply' or 'record', got {self.quality_filter!r}")
        if self.on_judge_error not in ("retry", "record"):
            raise ValueError(f"on_judge_error must be 'retry' or 'record', got {self.on_judge_error!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


STAGES = (
    Stage("prompts", prompts_stage, ("seed", "imagination_temperature"), ("judge", "llm"),
          "prompt sources: caption rewriting, progressive imagination, text mining (section 2.2)"),
    Stage("synthesis", synthesis_stage, ("seed",), ("drawer",), "images from the prompts (section 2.2)"),
    Stage("quality", quality_stage, ("quality_filter",), ("judge",), "blur, artifacts, structural errors (appendix B.2)"),
    Stage("scoring", scoring_stage, ("thresholds",), ("judge",),
          "six relevance scores, labels by threshold, typographic filter (section 2.3, appendix B.3)"),
    Stage("captions", captions_stage, (), ("judge",), "a category-specific caption per label (section 2.4)"),
    Stage("gcot", gcot_stage, ("gcot_attempts",), ("judge", "llm"),
          "Generation Chain-of-Thought, checked against the captions (section 2.4, appendix B.5)"),
    Stage("original", original_stage, ("original_threshold",), ("judge",),
          "original captions kept when aligned (section 2.5)"),
    Stage("translate", translate_stage, (), ("llm",), "Chinese translations, text to render kept (section 2.5)"),
)
assert tuple(s.name for s in STAGES) == STAGE_NAMES[1:]
#: the export's folder in the work folder (its datatrove logs); the release itself goes to ``out``
RELEASE = "09-release"


@dataclass
class StageSummary:
    """One stage as datatrove's completion markers and per-task statistics tell it."""

    stage: str
    tasks: int
    completed: int
    stats: dict[str, float] = field(default_factory=dict)  # summed over the completed tasks
    seconds: float = 0.0  # time in the stage's steps, summed over the completed tasks
    failures: dict[int, str] = field(default_factory=dict)  # task -> why it did not complete (this run)
    #: (task, worker, start, end) of the tasks run now on this machine (time.monotonic() seconds)
    timeline: list[tuple[int, int, float, float]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.completed == self.tasks

    def line(self) -> str:
        """``quality    5/5 tasks  22 in, 20 kept, 2 dropped (passed 20, dropped 1, failed 1); 26 requests...``"""
        s = self.stats
        actions = ", ".join(f"{k.removeprefix('action: ')} {v:g}" for k, v in s.items() if k.startswith("action: "))
        parts = [f"{self.stage:<10} {self.completed}/{self.tasks} tasks"]
        if "records in" in s:
            parts.append(f"{s['records in']:g} in, {s.get('kept', 0):g} kept, {s.get('dropped', 0):g} dropped"
                         + (f" ({actions})" if actions else ""))
        if s.get("requests") or s.get("successful_requests"):
            sent = s.get("requests", 0)
            parts.append(f"{sent:g} requests ({s.get('cached replies', 0):g} from the cache, {s.get('re-asks', 0):g} "
                         f"re-asks), {s.get('unparsable answers', 0):g} unparsable, "
                         f"{s.get('backend errors', 0):g} backend errors")
        if "kept" in s and "records in" not in s:  # the release
            parts.append(f"{s['kept']:g} kept")
        parts.append(f"{self.seconds:.1f} s")
        return "  ".join(parts)


@dataclass
class EngineResult:
    candidates: dict[str, int]  # per source
    stages: list[StageSummary]  # every stage run (and the export, when asked)
    statistics: dict[str, Any] | None = None  # the release's, when it was written
    out: Path | None = None
    review: Path | None = None
    jobs: list[str] = field(default_factory=list)  # Slurm: the jobs submitted

    @property
    def pending(self) -> dict[str, int]:
        """stage -> its tasks without a completion marker."""
        return {s.stage: s.tasks - s.completed for s in self.stages}

    @property
    def complete(self) -> bool:
        return all(s.complete for s in self.stages)

    @property
    def lasting_failures(self) -> list[str]:
        """This run's task failures that running the same command again would meet again (a model that
        does not load, a bad setting), as ``stage task N: why``; not a killed worker, a full GPU memory,
        a network or server error, an interruption."""
        return [f"{s.stage} task {rank}: {why}" for s in self.stages for rank, why in sorted(s.failures.items())
                if not any(mark in why for mark in _TRANSIENT)]


#: what a failure that may not happen again says: a killed worker, memory, the network, a busy server
_TRANSIENT = ("BrokenProcessPool", "OutOfMemoryError", "out of memory", "Timeout", "ConnectionError",
              "APIConnectionError", "RateLimitError", "InternalServerError", "ServiceUnavailable",
              "JudgeUnavailable", "KeyboardInterrupt")


def stage_summary(name: str, logs: Path, failures: dict[int, str] | None = None,
                  tasks: int | None = None) -> StageSummary:
    """A stage's summary from its datatrove logging folder: the completion markers, and the statistics
    each completed task saved (``stats/NNNNN.json``), summed. ``tasks``: how many it has (default: as
    its executor last recorded)."""
    executor = logs / "executor.json"
    if tasks is None:
        tasks = json.loads(executor.read_text()).get("world_size", 0) if executor.is_file() else 0
    done = [int(p.name) for p in (logs / "completions").glob("[0-9]*")] if (logs / "completions").is_dir() else []
    done = [r for r in done if r < tasks]
    stats: dict[str, float] = {}
    seconds = 0.0
    for rank in done:  # each completed task's stats, as datatrove saved them (stats/NNNNN.json)
        path = logs / "stats" / f"{rank:05d}.json"
        for step in json.loads(path.read_text()) if path.is_file() else []:
            seconds += step["time_stats"].get("total", 0.0) if isinstance(step["time_stats"], dict) else 0.0
            for key, metric in step["stats"].items():
                if key not in ("doc_len", "doc_len_tokens", "total"):
                    stats[key] = stats.get(key, 0) + (metric.get("total", 0) if isinstance(metric, dict) else metric)
    return StageSummary(name, tasks, len(done), stats, seconds, dict(failures or {}))


def _reconcile(logs: Path, tasks: int) -> None:
    """A stage started with another number of tasks: its completion markers name other shard sets, so
    forget them (and the statistics that go with them); the shards it committed stay and are not redone."""
    executor = logs / "executor.json"
    if executor.is_file() and json.loads(executor.read_text()).get("world_size") != tasks:
        for name in ("completions", "stats", "stats.json", "executor.json"):
            path = logs / name
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def _forget(logs: Path) -> None:
    for name in ("completions", "stats", "stats.json"):
        path = logs / name
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def run_engine(work: str | Path, sources: Sources, config: EngineConfig | None = None, *, judge: Any = None,
               llm: Any = None, drawer: Any = None, judge_kwargs: dict | None = None, llm_kwargs: dict | None = None,
               cache: Any = None, server: Server | None = None, executor: Local | Slurm | None = None,
               out: str | Path | None = None, license: str | None = None, repo_id: str | None = None,
               until: str | None = None, progress: bool = True) -> EngineResult:
    """Run every stage (up to ``until``) over ``sources`` in the work folder ``work``, then, when ``out``
    is given, write the release there and the review sample under ``work/review/quality``.

    ``judge`` is the vision-language model, ``llm`` the text model (imagination, GCoT check, translation;
    default: the judge): judge specs (``judge_kwargs``/``llm_kwargs`` their backend options) or judge
    objects; ``cache`` the response cache (a path, ``True`` for the default one); ``drawer`` a
    ``GenerationConfig`` or a callable ``(prompts, seeds) -> images``; ``server`` serves the judge through
    datatrove's inference runner instead (see :class:`.models.Server`). ``executor``: :class:`Local`
    (default) or :class:`Slurm`. Models are loaded in the tasks, never here.

    Call it again after an interruption: completed tasks are skipped, committed shards kept, and the
    response cache answers what an unfinished task had already asked. With Slurm it returns once the jobs
    are submitted (``jobs``); run it again after they end to submit what did not complete.
    """
    if until is not None and until not in (*STAGE_NAMES[1:], "export"):
        raise ValueError(f"until must be one of {', '.join(STAGE_NAMES[1:])}, export; got {until!r}")
    if out is not None and not license:
        raise EngineError("the release needs a license (--license): the one your images and captions may be "
                          "released under, given the licenses of the models that made them")
    config = config or EngineConfig()
    executor = executor or Local()
    models = Models(judge=judge, judge_kwargs=dict(judge_kwargs or {}), llm=llm, llm_kwargs=dict(llm_kwargs or {}),
                    cache=cache, drawer=drawer, server=server)
    workdir = Workdir(work)
    quiet_logs()  # datatrove logs each task at INFO on the console; its task logs (NN-stage/logs/logs) keep it all
    if isinstance(executor, Slurm):
        check_no_jobs_running(workdir.root)
    for folder in (workdir.root, out):  # what tasks killed mid-write left (nothing of this run is running now)
        if folder is not None and Path(folder).is_dir():
            remove_partial_files(folder)
    ingest(workdir, sources, config)
    candidates = candidate_counts(workdir)
    last = len(STAGES) if until in (None, "export") else STAGE_NAMES.index(until)
    stages = STAGES[:last]

    described = models.describe()
    identities = {s.name: s.identity(config, described) for s in stages}
    # a setting added since a folder was made counts as unchanged when left at its default
    defaults = {f.name: f.default for f in dataclasses.fields(EngineConfig) if f.default is not dataclasses.MISSING}
    for s in stages:  # refuse changed settings before anything runs
        workdir.check_settings(s.name, identities[s.name], defaults)
    for s in stages:
        if not workdir.shards(s.name):
            workdir.save_settings(s.name, identities[s.name])

    tasks = executor.tasks or len(workdir.shard_names())
    chain: list[Any] = []
    names: list[str] = []
    folders: list[Path] = []
    pending_work = False
    for s in stages:
        logs = workdir.logs(s.name)
        _reconcile(logs, tasks)
        pipeline = _stage_pipeline(s, workdir, config, models, progress)
        chain.append(_executor(executor, pipeline, tasks, logs, s.name, gpu=True, depends=chain[-1] if chain else None,
                               progress=progress))
        names.append(s.name)
        folders.append(logs)
        pending_work |= bool(chain[-1].get_incomplete_ranks())

    release: dict[str, Any] | None = None
    if out is not None and last == len(STAGES):
        release = {"out": str(Path(out).resolve()), "license": license, "repo_id": repo_id,
                   "review_size": config.review_size, "seed": config.seed}
        folder = workdir.root / RELEASE
        key = hashlib.sha256(json.dumps(release, sort_keys=True).encode()).hexdigest()[:12]
        saved = folder / "_stage.json"
        check_release(workdir, out, ours=saved.is_file() and json.loads(saved.read_text())["out"] == release["out"])
        if pending_work or not saved.is_file() or json.loads(saved.read_text()).get("key") != key:
            for part in ("export", "card"):  # new work or another release: write it again
                _forget(folder / "logs" / part)
        atomic_write_text(saved, json.dumps({"key": key, **release}, indent=2, sort_keys=True))
        _reconcile(folder / "logs" / "export", tasks)
        run = {f"{stage}: {k}": v for stage in STAGE_NAMES[1:]
               for k, v in (workdir.settings(stage) or {}).items()}
        from .steps import ExportStep, ReleaseStep

        chain.append(_executor(executor, [ExportStep(workdir.root, out)], tasks, folder / "logs" / "export",
                               "export", gpu=False, depends=chain[-1] if chain else None, progress=progress))
        chain.append(_executor(executor, [ReleaseStep(workdir.root, out, license=license, repo_id=repo_id, run=run,
                                                      review_size=config.review_size, seed=config.seed)],
                               1, folder / "logs" / "card", "release", gpu=False, depends=chain[-1],
                               progress=progress))
        names += ["export", "release"]
        folders += [folder / "logs" / "export", folder / "logs" / "card"]

    result = EngineResult(candidates, [])
    if isinstance(executor, Slurm):
        if chain:
            chain[-1].run()  # submits every stage with incomplete tasks, each array after the one before
        result.jobs = record_jobs(workdir.root, chain)
    elif chain:
        pool = None
        if executor.workers > 1 and any(ex.get_incomplete_ranks() for ex in chain):
            gpus = executor.gpus if executor.gpus is not None else visible_gpus()
            pool = WorkerPool(min(executor.workers, tasks), gpus, executor.start_method)
            for ex in chain:
                ex.pool = pool
        try:
            with pool or contextlib.nullcontext():
                chain[-1].run()
        except StageIncomplete:
            pass  # the summary says which stage, and why
    for name, folder, ex in zip(names, folders, chain):
        summary = stage_summary(name, folder, getattr(ex, "failures", None), tasks=ex.world_size)
        summary.timeline = list(getattr(ex, "timeline", []))
        result.stages.append(summary)
    for summary in result.stages:  # a mistake in the run's set-up, the same in every task: say it
        for why in summary.failures.values():
            if why.startswith("EngineError: "):
                raise EngineError(f"{summary.stage}: {why.removeprefix('EngineError: ')}")
    if release is not None and result.complete and not result.jobs:
        result.out = Path(out)
        result.statistics = json.loads((result.out / "statistics.json").read_text())
        review = workdir.root / "review" / "quality" / "review.csv"
        result.review = review if config.review_size and review.is_file() else None
    return result


def _stage_pipeline(stage: Stage, work: Workdir, config: EngineConfig, models: Models, progress: bool) -> list:
    from .steps import ShardReader, ShardWriter, StageStep

    previous = STAGE_NAMES[STAGE_NAMES.index(stage.name) - 1]
    reader = ShardReader(work.root, stage.name, previous)
    if models.server is not None and "judge" in stage.models:
        from .runner import StageInferenceRunner

        return [reader, StageInferenceRunner(stage, work.root, config, models)]
    return [reader, StageStep(stage, work.root, config, models, progress=False), ShardWriter(work.root, stage.name)]


def _executor(executor: Local | Slurm, pipeline: list, tasks: int, logs: Path, name: str, *, gpu: bool,
              depends: Any, progress: bool):
    if isinstance(executor, Slurm):
        return slurm_executor(executor, pipeline, tasks=tasks, logging_dir=logs, stage=name, gpu=gpu, depends=depends)
    return LocalExecutor(pipeline, tasks=tasks, workers=min(executor.workers, tasks), logging_dir=str(logs),
                         depends=depends, start_method=executor.start_method,
                         gpus=(executor.gpus if executor.gpus is not None else visible_gpus()) if gpu else (),
                         progress=name if progress else None)
