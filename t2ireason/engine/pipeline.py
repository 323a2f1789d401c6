"""The pipeline: the stages in order, their settings, and one function that runs them all on one process
or many (``accelerate launch``, ``torchrun``), resuming wherever an earlier run stopped."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks.flux_reason import CHARACTERISTICS, characteristic
from .export import export, export_review_sample
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
from .work import STAGE_NAMES, Context, EngineError, Stage, StageReport, Workdir, run_stage

__all__ = ["EngineConfig", "STAGES", "EngineResult", "run_engine", "DEFAULT_THRESHOLD"]

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
        if self.on_judge_error not in ("retry", "record"):
            raise ValueError(f"on_judge_error must be 'retry' or 'record', got {self.on_judge_error!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


STAGES = (
    Stage("prompts", prompts_stage, ("seed", "imagination_temperature"), ("judge", "llm"),
          "prompt sources: caption rewriting, progressive imagination, text mining (section 2.2)"),
    Stage("synthesis", synthesis_stage, ("seed",), ("drawer",), "images from the prompts (section 2.2)"),
    Stage("quality", quality_stage, (), ("judge",), "blur, artifacts, structural errors (appendix B.2)"),
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


@dataclass
class EngineResult:
    candidates: dict[str, int]  # per source
    stages: list[StageReport]  # this process's view of each stage run
    pending: dict[str, int]  # stage -> shards not committed yet (all processes)
    statistics: dict[str, Any] | None = None  # set on the main process when the release was written
    out: Path | None = None
    review: Path | None = None

    @property
    def complete(self) -> bool:
        return not any(self.pending.values())


def run_engine(work: str | Path, sources: Sources, config: EngineConfig | None = None, *, judge: Any = None,
               llm: Any = None, drawer: Any = None, out: str | Path | None = None, license: str | None = None,
               repo_id: str | None = None, until: str | None = None, state: Any = None,
               progress: bool = True) -> EngineResult:
    """Run every stage (up to ``until``) over ``sources`` in the work folder ``work``, then, when every
    shard is through and ``out`` is given, write the release there and the review sample under
    ``work/review/quality``.

    ``judge`` is the vision-language model (a spec or a Judge, see ``judges.load_judge``), ``llm`` the text
    model (imagination, GCoT check, translation; default: the judge), ``drawer`` a callable
    ``(prompts, seeds) -> images`` such as ``generation.Drawer``. ``state`` is accelerate's
    ``PartialState`` (default: one made for this machine). Call it again after an interruption: committed
    shards are kept, and the judges' response cache answers what an unfinished shard had already asked.
    """
    if until is not None and until not in (*STAGE_NAMES[1:], "export"):
        raise ValueError(f"until must be one of {', '.join(STAGE_NAMES[1:])}, export; got {until!r}")
    if out is not None and not license:
        raise EngineError("the release needs a license (--license): the one your images and captions may be "
                          "released under, given the licenses of the models that made them")
    config = config or EngineConfig()
    if state is None:
        import torch
        from accelerate import PartialState

        state = PartialState(cpu=not torch.cuda.is_available())
    workdir = Workdir(work)
    if state.is_main_process:
        ingest(workdir, sources, config)
    state.wait_for_everyone()
    candidates = candidate_counts(workdir)
    ctx = Context(workdir, config, judge=judge, llm=llm or judge, drawer=drawer, progress=progress)
    last = len(STAGES) if until in (None, "export") else STAGE_NAMES.index(until)
    reports = [run_stage(stage, ctx, state) for stage in STAGES[:last]]
    total = len(workdir.shards("sources"))
    result = EngineResult(candidates, reports, {s.name: total - len(workdir.shards(s.name)) for s in STAGES[:last]})
    if out is not None and last == len(STAGES) and result.complete:
        run = {s.name: workdir.settings(s.name) for s in STAGES}
        result.statistics = export(workdir, out, license=license, state=state, repo_id=repo_id,
                                   run={f"{stage}: {k}": v for stage, settings in run.items()
                                        for k, v in (settings or {}).items()})
        result.out = Path(out)
        if state.is_main_process and config.review_size:
            result.review = export_review_sample(workdir, workdir.root / "review" / "quality",
                                                 per_verdict=config.review_size, seed=config.seed)
        state.wait_for_everyone()
    return result
