"""Image generation for the benchmarks: seeded per image, sharded, resumable.

The path of one image: a benchmark row gives a prompt and the file name of
the official layout; the image's seed comes from (benchmark, prompt id,
sample index), never from the process, so the same images come out however
many processes share the work; the image is written atomically, so an
interrupted run restarts where it stopped and never counts a half-written file.
Finished images are encoded and written by a small pool of threads while the
pipeline draws the next batch (:class:`ImageWriter`): encoding a 512 px PNG takes
about as long as a quarter of an SD-1.5 batch's drawing, and the GPU would wait for it.
At the end the output folder holds ``metadata.parquet`` (one row per image:
prompt id, file, seed, prompt, generation configuration), which makes the
folder itself a dataset: ``load_dataset(<folder>)`` gives an ``image`` column
the metrics take directly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from . import __version__
from .benchmarks import get_benchmark
from .files import atomic_file, inside, remove_partial_files
from .progress import progress_bar

if TYPE_CHECKING:
    from .benchmarks import Benchmark

__all__ = ["GenerationConfig", "Job", "image_seed", "plan_jobs", "check_job_paths", "generate", "write_manifest", "draw",
           "Drawer", "load_pipeline", "check_dtype", "check_model", "is_readable_image", "save_image_atomic", "ImageWriter",
           "MANIFEST", "DTYPES"]

MANIFEST = "metadata.parquet"
CONFIG_FILE = "generation_config.json"
DTYPES = ("auto", "float32", "float16", "bfloat16")


@dataclass
class GenerationConfig:
    """Everything that decides the pixels; saved with the images."""

    model: str
    dtype: str = "auto"  # "auto": float16 on GPU, float32 on CPU
    steps: int | None = None
    guidance: float | None = None
    height: int | None = None
    width: int | None = None
    images_per_prompt: int = 1
    batch_size: int = 1  # prompts per pipeline call
    seed: int = 0  # mixed into every image's seed, to draw another set of samples
    pipeline_kwargs: dict[str, Any] = field(default_factory=dict)
    cpu_offload: bool = False
    vae_slicing: bool = False
    revision: str | None = None

    def __post_init__(self):
        for name in ("images_per_prompt", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("steps", "height", "width"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.guidance is not None and not (isinstance(self.guidance, (int, float)) and math.isfinite(self.guidance)
                                              and self.guidance >= 0):
            raise ValueError(f"guidance must be a finite number >= 0, got {self.guidance!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; use {', '.join(DTYPES)}")

    def call_kwargs(self) -> dict[str, Any]:
        kw = dict(self.pipeline_kwargs)
        for ours, theirs in (("steps", "num_inference_steps"), ("guidance", "guidance_scale"),
                             ("height", "height"), ("width", "width")):
            if getattr(self, ours) is not None:
                kw[theirs] = getattr(self, ours)
        return kw

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Job:
    """One image to make."""

    prompt_id: str
    prompt: str
    sample: int
    file: str  # relative to the output folder, in the benchmark's official layout
    seed: int
    config: str | None = None


def image_seed(benchmark: str, prompt_id: str, sample: int, base_seed: int = 0) -> int:
    """A 63-bit seed from what identifies the image (not from the process that makes it)."""
    digest = hashlib.sha256(f"{benchmark}\x1f{prompt_id}\x1f{sample}\x1f{base_seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


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


def is_readable_image(path: str | os.PathLike) -> bool:
    """True when the file exists, decodes and is whole (a PNG ends with its IEND chunk, which PIL does
    not check): a finished image, not a torn write or a copy that stopped short."""
    from .images import ImageError, as_image

    try:
        as_image(Path(path))
        return True
    except ImageError:
        return False


def _readable(paths: Sequence[Path]) -> list[bool]:
    """:func:`is_readable_image` of each path, decoded by a few threads at once (PIL decodes without
    holding the GIL): a resumed run of thousands of images, and the check before the manifest, wait
    for the disk and the decoder, not for one core."""
    if len(paths) < 2:
        return [is_readable_image(p) for p in paths]
    with ThreadPoolExecutor(min(8, os.cpu_count() or 1, len(paths)), thread_name_prefix="image-check") as pool:
        return list(pool.map(is_readable_image, paths))


def save_image_atomic(image: Image.Image, path: Path) -> None:
    """A PNG that is either whole or absent, however the process ends."""
    with atomic_file(path) as f:
        image.save(f, format="PNG")


class ImageWriter:
    """Images saved by a bounded pool of threads while the caller goes on (the next batch draws).

    Each image is written atomically (:func:`save_image_atomic`), bytes for bytes as an inline save
    writes it. At most ``max_pending`` images wait in memory: :meth:`submit` waits for the oldest
    beyond that. A failed write is raised by the next :meth:`submit` or by :meth:`close`; leaving the
    ``with`` block, by an error or an interruption too, waits for every image already handed over,
    so a drawn image is never lost to an exception (a killed process loses only images not yet
    written, which a rerun draws again). ``workers=0`` saves inline, in the caller's thread.
    """

    def __init__(self, workers: int = 4, max_pending: int | None = None):
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.max_pending = max_pending or 2 * max(workers, 1)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="image-writer") if workers else None
        self._pending: deque[Future] = deque()
        self.written = 0

    def submit(self, image: Image.Image, path: Path) -> None:
        if self._pool is None:
            save_image_atomic(image, path)
            self.written += 1
            return
        while self._pending and (self._pending[0].done() or len(self._pending) >= self.max_pending):
            self._pending.popleft().result()  # raises a failed write
            self.written += 1
        self._pending.append(self._pool.submit(save_image_atomic, image, path))

    def close(self) -> None:
        """Wait for every pending write; raise the first that failed (the others are finished first)."""
        error = None
        while self._pending:
            try:
                self._pending.popleft().result()
                self.written += 1
            except BaseException as e:  # noqa: BLE001 - the first failure is raised once all are done
                error = error or e
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if error is not None:
            raise error

    def __enter__(self) -> ImageWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        try:
            self.close()
        except BaseException:
            if kind is None:  # a write failed and nothing else is on its way out
                raise


def check_job_paths(jobs: Sequence[Job], out_dir: str | os.PathLike) -> None:
    """Every image file of ``jobs`` stays inside ``out_dir``: a file name made from a hostile
    id (``../../outside/x``) is refused, naming it, before anything is written."""
    for job in jobs:
        inside(out_dir, job.file)


def check_dtype(name: str, device: str) -> None:
    """float16 needs a GPU: diffusers pipelines in float16 on the CPU fail or draw noise.
    Refused before the model is loaded, saying what to use instead."""
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; use {', '.join(DTYPES)}")
    if name == "float16" and not str(device).startswith(("cuda", "xpu", "mps")):
        raise ValueError(f"dtype float16 needs a GPU and this process runs on {device}; "
                         "use float32 (or bfloat16, or auto: float16 on GPU, float32 on CPU)")


def check_model(model: str | os.PathLike, revision: str | None = None) -> None:
    """A ``--model`` that names a local folder: it exists (else the closest folder beside it is
    named) and holds a diffusers pipeline (``model_index.json``); a Hub id, offline
    (``HF_HUB_OFFLINE``), is in the local Hugging Face cache. Checked before anything is created;
    online, a Hub id is fetched when the pipeline loads."""
    from .files import missing_folder

    said = missing_folder(model)
    if said:
        raise ValueError(f"--model: {said}; give a diffusers pipeline folder (save_pretrained) or a Hub id")
    folder = Path(model).expanduser()
    if folder.is_dir():
        if not (folder / "model_index.json").is_file():
            raise ValueError(f"--model: {model} is not a diffusers pipeline folder (it has no model_index.json); "
                             "give the folder save_pretrained wrote, or a Hub id")
        return
    from huggingface_hub import constants, try_to_load_from_cache

    if constants.HF_HUB_OFFLINE and not isinstance(try_to_load_from_cache(str(model), "model_index.json",
                                                                          revision=revision), str):
        raise ValueError(f"--model: {model} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set: "
                         f"download it first (`hf download {model}`), or give a local pipeline folder")


def _resolve_dtype(name: str, device: str):
    import torch

    check_dtype(name, device)
    if name == "auto":
        return torch.float16 if str(device).startswith("cuda") else torch.float32
    return getattr(torch, name)


def load_pipeline(config: GenerationConfig, device: str):
    """The diffusers pipeline, once per process, with the memory options users expect."""
    import torch
    from diffusers import DiffusionPipeline

    pipe = DiffusionPipeline.from_pretrained(config.model, dtype=_resolve_dtype(config.dtype, device),
                                             revision=config.revision)
    if config.cpu_offload and str(device).startswith("cuda"):
        pipe.enable_model_cpu_offload(device=device)  # moves each sub-model to the GPU only while used
    else:
        pipe.to(device)
    if config.vae_slicing and hasattr(getattr(pipe, "vae", None), "enable_slicing"):
        pipe.vae.enable_slicing()
    pipe.set_progress_bar_config(disable=True)
    torch.set_grad_enabled(False)
    return pipe


def draw(pipe: Any, prompts: Sequence[str], seeds: Sequence[int], config: GenerationConfig) -> list[Image.Image]:
    """One pipeline call for several prompts, each image with its own seed."""
    import torch

    # one CPU generator per image: the same seed gives the same latents on any device
    generators = [torch.Generator("cpu").manual_seed(int(s)) for s in seeds]
    return pipe(prompt=list(prompts), generator=generators, num_images_per_prompt=1,
                **config.call_kwargs()).images


class Drawer:
    """A text-to-image model as a callable ``drawer(prompts, seeds) -> images``, loaded once
    (the MT2IE agent draws through it, prompt by prompt, as it goes)."""

    def __init__(self, config: GenerationConfig, device: str | None = None, name: str | None = None):
        import torch

        self.config = config
        self.name = name or config.model
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._pipe = None

    def __call__(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Image.Image]:
        if self._pipe is None:
            self._pipe = load_pipeline(self.config, self.device)
        out: list[Image.Image] = []
        for start in range(0, len(prompts), self.config.batch_size):
            end = start + self.config.batch_size
            out.extend(draw(self._pipe, prompts[start:end], seeds[start:end], self.config))
        return out


def generate(jobs: Sequence[Job], config: GenerationConfig, out_dir: str | os.PathLike, *,
             pipeline: Any = None, state: Any = None, progress: bool = True, writers: int = 4) -> dict[str, int]:
    """Make the images of ``jobs`` this process is responsible for; skip finished ones.

    ``writers`` threads encode and write the finished images while the next batch draws
    (:class:`ImageWriter`; ``0`` writes each batch before drawing the next).

    Runs under ``accelerate launch``/``torchrun`` (each process takes its share
    via ``PartialState.split_between_processes``) or as one plain process.
    Returns counts for this process: ``generated``, ``skipped``.
    """
    import torch
    from accelerate import PartialState

    out = Path(out_dir)
    check_job_paths(jobs, out)
    state = state or PartialState(cpu=not torch.cuda.is_available())
    if pipeline is None:
        check_dtype(config.dtype, str(state.device))
    out.mkdir(parents=True, exist_ok=True)
    if state.is_main_process:
        (out / CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2))
        remove_partial_files(out)  # left by a process killed mid-write; never counted as done
    state.wait_for_everyone()
    counts = {"generated": 0, "skipped": 0}
    with state.split_between_processes(list(jobs)) as mine:
        todo = [j for j, done in zip(mine, _readable([out / j.file for j in mine])) if not done]
        counts["skipped"] = len(mine) - len(todo)
        if todo:
            pipe = pipeline or load_pipeline(config, str(state.device))
            desc = f"generating (rank {state.process_index})" if state.num_processes > 1 else "generating"
            with progress_bar(len(todo), progress and state.is_local_main_process, desc=desc, unit="img") as bar, \
                    ImageWriter(writers, max_pending=max(2 * writers, config.batch_size)) as writer:
                for start in range(0, len(todo), config.batch_size):
                    batch = todo[start : start + config.batch_size]
                    images = draw(pipe, [j.prompt for j in batch], [j.seed for j in batch], config)
                    for job, image in zip(batch, images):
                        writer.submit(image, out / job.file)
                    counts["generated"] += len(batch)
                    bar.update(len(batch))
    state.wait_for_everyone()
    if state.is_main_process:
        write_manifest(jobs, config, out)
    state.wait_for_everyone()
    return counts


def write_manifest(jobs: Sequence[Job], config: GenerationConfig, out_dir: str | os.PathLike) -> Path:
    """``metadata.parquet`` for the finished images (an ImageFolder manifest: ``file_name`` plus
    columns), so ``load_dataset(out_dir)`` yields the images with their prompt ids and seeds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    done = [j for j, ok in zip(jobs, _readable([inside(out, j.file) for j in jobs])) if ok]
    missing = len(jobs) - len(done)
    if missing:
        raise RuntimeError(f"{missing} of {len(jobs)} images are missing in {out}; run again to resume")
    generation = json.dumps({**config.to_dict(), "t2ireason_version": __version__}, sort_keys=True)
    table = pa.table({
        "file_name": [j.file for j in done],
        "prompt_id": [j.prompt_id for j in done],
        "config": [j.config for j in done],
        "sample": pa.array([j.sample for j in done], pa.int32()),
        "seed": pa.array([j.seed for j in done], pa.int64()),
        "prompt": [j.prompt for j in done],
        "generation": [generation] * len(done),
    })
    path = out / MANIFEST
    with atomic_file(path) as f:
        pq.write_table(table, f)
    return path
