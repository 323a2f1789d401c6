"""The seeded, resumable, sharded driver every backend runs under (:func:`generate`).

The path of one image: a benchmark row gives a prompt and the file name of the official layout; the image's
seed comes from (benchmark, prompt id, sample index), never from the process, so the same images come out
however many processes share the work; the image is written atomically, so an interrupted run restarts where
it stopped and never counts a half-written file. An image the backend could not make is recorded with its
reason (``failures.jsonl``), never a crash and never a silently missing image. At the end the output folder
holds ``metadata.parquet``, which makes the folder itself a dataset: ``load_dataset(<folder>)`` gives an
``image`` column the metrics take directly.

A re-run skips the finished images and the recorded failures: a refusal is the model's answer to that prompt
(asking again costs as much and is refused again), kept as such; ``retry_failed`` draws again the images whose
failure was the server's or the network's (``retryable``: an error status after every retry, a broken reply).

One generation writes a folder at a time (a file lock: a second one waits ``lock_timeout`` seconds, then stops,
so no image is paid for twice). Each image is checked before it is kept, and a run whose first images all fail
stops before paying for the rest (:mod:`.outcomes`); a folder in which nothing was made takes other settings.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ..files import atomic_write_text, jsonable, remove_partial_files
from ..progress import progress_bar
from .base import Drawn, Generator
from .jobs import GenerationConfig, Job, changed_settings, check_dtype, check_job_paths
from .outcomes import FirstFailures, checked, describe_notes, noted
from .registry import backend_class, load_generator
from .spec import GeneratorError
from .store import (
    CONFIG_FILE,
    RECORDS,
    ImageWriter,
    RecordLog,
    folder_lock,
    forget_records,
    made_any_image,
    read_records,
    readable,
    write_manifest,
)

__all__ = ["generate", "LOCK_TIMEOUT"]

logger = logging.getLogger(__name__)
#: seconds a second generation into the same folder waits for the first before it stops
LOCK_TIMEOUT = 10.0


def generate(jobs: Sequence[Job], config: GenerationConfig, out_dir: str | os.PathLike, *,
             pipeline: Any = None, generator: Generator | None = None, state: Any = None, progress: bool = True,
             writers: int = 4, retry_failed: bool = False, lock_timeout: float = LOCK_TIMEOUT,
             **options: Any) -> dict[str, int]:
    """Make the images of ``jobs`` this process is responsible for; skip finished ones and recorded failures
    (those whose failure was transient too, with ``retry_failed``: they are drawn again).

    The generator is ``config.model``'s (:func:`~t2ireason.generation.load_generator`, with ``options``), or
    ``generator``, or the diffusers ``pipeline`` given. ``writers`` threads encode and write the finished images
    while the next batch draws (:class:`~t2ireason.generation.ImageWriter`; ``0`` writes each batch before
    drawing the next).

    Runs under ``accelerate launch``/``torchrun`` (each process takes its share via
    ``PartialState.split_between_processes``) or as one plain process. Returns counts for this process:
    ``generated``, ``skipped`` (finished before), and, when there are any, ``failed`` (images that could not
    be made now) and ``failed_before`` (recorded failures kept).

    Another process generating into ``out_dir`` makes this one wait ``lock_timeout`` seconds, then a
    :class:`GeneratorError`; so does a run whose first images all fail (none recorded: fix, and run again).
    """
    import torch
    from accelerate import PartialState

    out = Path(out_dir)
    check_job_paths(jobs, out)
    spec = config.spec
    state = state or PartialState(cpu=not torch.cuda.is_available())
    if pipeline is None and generator is None:
        cls = backend_class(spec)
        cls.check_config(config)
        if "dtype" in cls.takes:  # a local model's: float16 needs a GPU
            check_dtype(config.dtype, str(state.device))
    settings = jsonable(config.to_dict())
    _check_settings(out, settings)  # every process reads the file before the barrier, and refuses alike
    state.wait_for_everyone()
    # the main process holds the folder's lock until the manifest is written: another `generate` into it waits
    with folder_lock(out, lock_timeout) if state.is_main_process else nullcontext():
        if state.is_main_process:
            _check_settings(out, settings, replace=True)  # again under the lock: another may have written it
            (out / CONFIG_FILE).write_text(json.dumps(settings, indent=2))
            remove_partial_files(out)  # left by a process killed mid-write; never counted as done
        state.wait_for_everyone()
        counts = _draw_mine(jobs, config, out, state, pipeline=pipeline, generator=generator, progress=progress,
                            writers=writers, retry_failed=retry_failed, options=options)
        state.wait_for_everyone()
        if state.is_main_process:
            write_manifest(jobs, config, out, generator=spec.identity())
        state.wait_for_everyone()
    return counts


def _draw_mine(jobs: Sequence[Job], config: GenerationConfig, out: Path, state: Any, *, pipeline: Any,
               generator: Generator | None, progress: bool, writers: int, retry_failed: bool,
               options: dict[str, Any]) -> dict[str, int]:
    """This process's share of ``jobs``: the finished ones skipped, the others drawn, written and recorded."""
    spec = config.spec
    counts = {"generated": 0, "skipped": 0}
    failed = failed_before = 0
    notes: list[dict[str, Any]] = []  # the extras of the images kept with a note (another size than asked...)
    with state.split_between_processes(list(jobs)) as mine:
        records = read_records(out)
        todo = []
        for job, done in zip(mine, readable([out / j.file for j in mine])):
            record = records.get(job.file) or {}
            if done:
                counts["skipped"] += 1
            elif record.get("failure") and not (retry_failed and record.get("retryable")):
                failed_before += 1
            else:
                todo.append(job)
        if todo:
            if generator is not None:
                gen, ours = generator, False
            elif pipeline is not None:
                from .diffusers_backend import DiffusersGenerator

                gen, ours = DiffusersGenerator(spec, config, device=str(state.device), pipeline=pipeline), True
            else:
                gen, ours = load_generator(config, device=str(state.device), **options), True
            desc = f"generating (rank {state.process_index})" if state.num_processes > 1 else "generating"
            who = spec.describe()
            try:
                with progress_bar(len(todo), progress and state.is_local_main_process, desc=desc, unit="img") as bar, \
                        ImageWriter(writers, max_pending=max(2 * writers, config.batch_size)) as writer, \
                        RecordLog(out, state.process_index) as log:
                    def record_failure(job: Job, drawn: Drawn) -> None:
                        nonlocal failed
                        log.add(job, failure=drawn.failure, kind=drawn.kind or "error", retryable=drawn.retryable,
                                extra=drawn.extra)
                        failed += 1

                    first = FirstFailures(len(todo), record_failure, who)

                    def on_drawn(job: Job, drawn: Drawn) -> None:
                        drawn = checked(drawn, job, config, who)
                        if drawn.image is not None:
                            first.settle()
                            if drawn.extra or records.get(job.file):  # before the image: never one without it
                                log.add(job, extra=drawn.extra)
                            writer.submit(drawn.image, out / job.file)
                            counts["generated"] += 1
                            if noted(drawn.extra):
                                notes.append(drawn.extra)
                        elif not first.hold(job, drawn):
                            if drawn.kind == "refused":
                                first.settle()
                            record_failure(job, drawn)
                        bar.update(1)

                    try:
                        gen.draw(todo, on_drawn)
                    finally:  # failures held back, when the run ends for another reason: each image's own
                        first.release()
            except GeneratorError as e:
                _keep_traceback(e, out, state.process_index)
                raise
            finally:
                if ours:
                    gen.close()
    said = describe_notes(notes)
    if said:
        logger.warning("%d images made in %s are kept with a note in their 'extra' (metadata.parquet): %s",
                       len(notes), out, said)
    if failed or failed_before:
        counts.update(failed=failed, failed_before=failed_before)
    return counts


def _check_settings(out: Path, settings: dict[str, Any], replace: bool = False) -> None:
    """Refuse a folder whose images were made with other settings; a folder in which nothing was made takes
    the new ones (with ``replace``, what the old ones recorded, their failures, is forgotten)."""
    changed = changed_settings(_recorded_config(out), settings)
    if not changed:
        return
    if made_any_image(out):
        raise GeneratorError(f"the images in {out} were made with other settings (they differ in "
                             f"{', '.join(changed)}: {out / CONFIG_FILE}); choose another --out for another "
                             "model or setting, or the same settings to resume")
    if replace:
        forget_records(out)


def _keep_traceback(error: GeneratorError, out: Path, rank: int) -> None:
    """Where the error came from a generator's own exception (a ``python:`` callable that raised), its
    traceback is written to ``<out>/.generation/error-<rank>.txt`` and the message names that file: the
    command line shows one line."""
    cause = error.__cause__
    if cause is None or not error.args:
        return
    import traceback

    path = out / RECORDS / f"error-{rank}.txt"
    try:
        atomic_write_text(path, "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)))
    except OSError:
        return
    error.args = (f"{error.args[0]} (its traceback: {path})", *error.args[1:])


def _recorded_config(out: Path) -> dict[str, Any] | None:
    """The settings the images already in ``out`` were made with (None: a new folder)."""
    try:
        return json.loads((out / CONFIG_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise GeneratorError(f"{out / CONFIG_FILE} cannot be read ({e}); it says what made the images in {out}: "
                             "restore it, or choose another --out") from None
