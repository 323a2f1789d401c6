"""The output folder of a generation: images written whole or not at all, the record of what each image's
backend said besides it (or why it could not be made), and the manifest that makes the folder a dataset.

    <out>/<benchmark layout>/....png     the images (each written atomically: a kill -9 leaves no half image)
    <out>/generation_config.json         the settings (no credentials)
    <out>/.generation/records-<rank>.jsonl  per process, one line per image with something to keep: a backend's
                                         extras (a revised prompt, usage), or the failure (refused, error, and
                                         whether asking again may succeed); appended and synced before the image
                                         is written, the latest line of a file wins
    <out>/metadata.parquet               the finished images (an ImageFolder manifest: ``load_dataset(<out>)``)
    <out>/failures.jsonl                 the images that could not be made, each with its reason

Finished images are encoded and written by a small pool of threads while the model draws the next batch
(:class:`ImageWriter`): encoding a 512 px PNG takes about as long as a quarter of an SD-1.5 batch's drawing, and
the GPU would wait for it.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image

from ..files import atomic_file, atomic_write_text, inside, json_text, jsonable
from ..version import __version__
from .jobs import GenerationConfig, Job

__all__ = ["is_readable_image", "readable", "save_image_atomic", "ImageWriter", "RecordLog", "read_records",
           "read_failures", "write_manifest", "MANIFEST", "CONFIG_FILE", "FAILURES", "RECORDS"]

MANIFEST = "metadata.parquet"
CONFIG_FILE = "generation_config.json"
FAILURES = "failures.jsonl"
RECORDS = ".generation"


def is_readable_image(path: str | os.PathLike) -> bool:
    """True when the file exists, decodes and is whole (a PNG ends with its IEND chunk, which PIL does
    not check): a finished image, not a torn write or a copy that stopped short."""
    from ..images import ImageError, as_image

    try:
        as_image(Path(path))
        return True
    except ImageError:
        return False


def readable(paths: Sequence[Path]) -> list[bool]:
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


class RecordLog:
    """This process's records (``<out>/.generation/records-<rank>.jsonl``): one JSON line per image with
    something to keep besides its pixels, handed to the operating system as written, before its image is
    (a kill -9 never leaves an image without its record; a record whose image is missing is drawn again, and
    the new line wins), and synced to the disk when the log closes (a sync per line would serialise an API's
    images behind the disk)."""

    def __init__(self, out_dir: str | os.PathLike, rank: int = 0):
        self.path = Path(out_dir) / RECORDS / f"records-{rank}.jsonl"
        self._file = None

    def add(self, job: Job, **fields: Any) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json_text(jsonable({"file": job.file, "time": time.time(), **fields})) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def read_records(out_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The latest record of each image file over every process's log (a torn last line, from a kill, is
    skipped)."""
    latest: dict[str, dict[str, Any]] = {}
    for log in sorted((Path(out_dir) / RECORDS).glob("records-*.jsonl")):
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                file = record.get("file") if isinstance(record, dict) else None
                if isinstance(file, str) and record.get("time", 0) >= latest.get(file, {}).get("time", 0):
                    latest[file] = record
    return latest


def read_failures(out_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """``failures.jsonl`` of a finished generation: file name -> why the image could not be made."""
    path = Path(out_dir) / FAILURES
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[record["file_name"]] = record
    return out


def write_manifest(jobs: Sequence[Job], config: GenerationConfig, out_dir: str | os.PathLike, *,
                   generator: dict[str, Any] | None = None) -> Path:
    """``metadata.parquet`` for the finished images (an ImageFolder manifest: ``file_name`` plus columns,
    with ``extra``: what the backend returned besides the image, as JSON), so ``load_dataset(out_dir)``
    yields the images with their prompt ids and seeds (null where the backend takes none); and
    ``failures.jsonl`` for the images that could not be made, each with its reason. An image neither made
    nor recorded as failed is an error: the generation is not finished."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    generator = generator or config.spec.identity()
    records = read_records(out)
    present = readable([inside(out, j.file) for j in jobs])
    done = [j for j, ok in zip(jobs, present) if ok]
    failed = [j for j, ok in zip(jobs, present) if not ok and records.get(j.file, {}).get("failure")]
    missing = len(jobs) - len(done) - len(failed)
    if missing:
        raise RuntimeError(f"{missing} of {len(jobs)} images are missing in {out}; run again to resume")
    seedable = generator.get("seedable", True)
    generation = json.dumps({**config.to_dict(), "generator": generator, "t2ireason_version": __version__},
                            sort_keys=True)

    def extra(job: Job) -> str | None:
        record = records.get(job.file) or {}
        return json_text(record["extra"], sort_keys=True) if record.get("extra") and not record.get("failure") else None

    table = pa.table({
        "file_name": [j.file for j in done],
        "prompt_id": [j.prompt_id for j in done],
        "config": [j.config for j in done],
        "sample": pa.array([j.sample for j in done], pa.int32()),
        "seed": pa.array([j.seed if seedable else None for j in done], pa.int64()),
        "prompt": [j.prompt for j in done],
        "generation": [generation] * len(done),
        "extra": pa.array([extra(j) for j in done], pa.string()),
    })
    path = out / MANIFEST
    with atomic_file(path) as f:
        pq.write_table(table, f)
    lines = []
    for j in failed:
        record = records[j.file]
        lines.append(json_text(jsonable({
            "file_name": j.file, "prompt_id": j.prompt_id, "config": j.config, "sample": j.sample,
            "seed": j.seed if seedable else None, "prompt": j.prompt, "failure": record["failure"],
            "kind": record.get("kind") or "error", "retryable": bool(record.get("retryable")),
            "extra": record.get("extra") or {}})))
    if lines:
        atomic_write_text(out / FAILURES, "\n".join(lines) + "\n")
    else:
        (out / FAILURES).unlink(missing_ok=True)
    return path
