"""A run folder's files that more than one step reads: its locks, and each evaluation's results, reply
journals and scores (:class:`EvaluationFiles`).

An evaluation scored by one process appends each finished chunk's results to ``results.jsonl`` and every
reply it receives to ``replies.jsonl``. In a launch of several processes (``torchrun``, ``accelerate
launch``: :mod:`t2ireason.processes`) each process has files of its own, so that no two processes ever
append to one file (appends stay whole on any file system, NFS included): ``results.rank-<r>.jsonl`` and
``replies.rank-<r>.jsonl``. The main process merges them: before scoring, the results an interrupted launch
left in its processes' files are folded into ``results.jsonl``; after scoring, ``results.jsonl`` is written
whole, one line per image in the run's order (as one process writes it), and the processes' files are
removed. Every process reads every journal (a resumed launch may split the images otherwise than the one
that was stopped, or run as one process): a reply received by any process before a ``kill -9`` is never
asked again. (Two processes asked the very same question, about two identical images, may both take the
first reply a journal holds for it: a reply received either way, none bought twice.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .files import append_whole, atomic_file, iter_records, json_text, read_records

__all__ = ["RunError", "RUN_FILE", "ROWS_FILE", "RESULTS_FILE", "REPLIES_FILE", "SCORES_FILE", "LOCKS",
           "LOCK_TIMEOUT", "MANIFEST_LOCK_TIMEOUT", "folder_lock", "EvaluationFiles", "read_results",
           "retryable", "not_generated"]

RUN_FILE = "run.json"
ROWS_FILE = "rows.parquet"
RESULTS_FILE = "results.jsonl"
REPLIES_FILE = "replies.jsonl"
SCORES_FILE = "scores.json"
LOCKS = ".locks"
#: seconds a second process waits for an evaluation (or a generation) another one is running
LOCK_TIMEOUT = 10.0
#: seconds to wait for run.json, which is only ever held for a read-modify-write
MANIFEST_LOCK_TIMEOUT = 60.0


class RunError(ValueError):
    """A run folder cannot be used as asked; the message says what to do."""


@contextmanager
def folder_lock(run: Path, name: str, timeout: float, busy: str) -> Iterator[None]:
    """Hold ``<run>/.locks/<name>.lock`` (an OS file lock: released when the process ends, however it
    ends); after ``timeout`` seconds, a RunError saying ``busy``."""
    from filelock import FileLock, Timeout

    folder = run / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / f"{name}.lock"), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise RunError(busy) from None
    try:
        yield
    finally:
        lock.release()


def not_generated(record: dict[str, Any]) -> bool:
    """A result recorded for an image the generation could not make."""
    return bool((record.get("context") or {}).get("not_generated"))


def retryable(record: dict[str, Any]) -> bool:
    """A failed image whose failure was the judge's infrastructure, not its reply."""
    return record.get("score") is None and bool(record.get("retryable"))


def read_results(path: Path, repair: bool = True) -> tuple[dict[str, dict[str, Any]], int]:
    """Scored images by key (the last line of a key wins: a retried image), and the number of
    lines. A torn last line (a crash mid-write under an older version) is left out and said;
    ``repair`` (the file's writer) also cuts it off the file."""
    try:
        records = read_records(path, repair=repair)
    except ValueError as e:
        raise RunError(str(e)) from None
    return {record.pop("key"): record for record in records}, len(records)


def _write_results(path: Path, records: Sequence[tuple[str, dict[str, Any]]]) -> None:
    with atomic_file(path) as f:
        for key, record in records:
            f.write((json_text({"key": key, **record}) + "\n").encode("utf-8"))


class EvaluationFiles:
    """The files of one evaluation (``<run>/evaluations/<name>/``) as one process of a launch uses them:
    ``rank`` None for a process alone (``results.jsonl``, ``replies.jsonl``), else its own
    ``results.rank-<r>.jsonl`` and ``replies.rank-<r>.jsonl``."""

    def __init__(self, folder: Path, rank: int | None = None):
        self.folder, self.rank = folder, rank

    @property
    def results(self) -> Path:
        return self.folder / RESULTS_FILE

    @property
    def scores(self) -> Path:
        return self.folder / SCORES_FILE

    @property
    def own_results(self) -> Path:
        """Where this process appends the images it scored."""
        return self.results if self.rank is None else self.folder / f"results.rank-{self.rank}.jsonl"

    @property
    def own_journal(self) -> Path:
        """Where this process appends the replies it receives."""
        return self.folder / (REPLIES_FILE if self.rank is None else f"replies.rank-{self.rank}.jsonl")

    def _of_ranks(self, kind: str) -> list[Path]:
        """Every process's file of ``kind`` (``results``, ``replies``), by rank."""
        if not self.folder.is_dir():
            return []
        found = [(p, p.name[len(kind) + 6: -6]) for p in self.folder.glob(f"{kind}.rank-*.jsonl")]
        return [p for p, rank in sorted(found, key=lambda f: (len(f[1]), f[1])) if rank.isdigit()]

    def journals(self) -> list[Path]:
        """Every journal of the evaluation: the plain one, then each process's."""
        return [self.folder / REPLIES_FILE, *self._of_ranks("replies")]

    def done(self, repair: bool = False) -> tuple[dict[str, dict[str, Any]], int]:
        """Scored images by key (``results.jsonl``, then each process's file; the last line of a key wins),
        and the number of lines in all."""
        done, lines = read_results(self.results, repair=repair)
        for path in self._of_ranks("results"):
            more, n = read_results(path, repair=repair)
            done.update(more)
            lines += n
        return done, lines

    def fold(self) -> tuple[dict[str, dict[str, Any]], int]:
        """The main process, before scoring: what an interrupted launch left in its processes' files is moved
        into ``results.jsonl`` (written whole), so that nothing is appended after a stale line. Returns
        :meth:`done`."""
        done, lines = self.done(repair=True)
        shards = self._of_ranks("results")
        if shards:
            _write_results(self.results, list(done.items()))
            for path in shards:
                path.unlink(missing_ok=True)
            lines = len(done)
        return done, lines

    def append(self, lines: Sequence[str]) -> None:
        """Append this process's scored images (whole lines, on disk before returning)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        append_whole(self.own_results, lines, sync=True)

    def finish(self, order: Sequence[str]) -> None:
        """The main process, once every process has scored: ``results.jsonl`` holds one line per image, in
        ``order`` (the run's image order; images in no order kept after them), and the processes' files are
        removed. Read it with :meth:`in_order`. The lines are read one at a time for their keys: the records are
        held all at once only when the file must be written again (a launch's shares, an image scored twice,
        lines out of order)."""
        shards, wanted = self._of_ranks("results"), set(order)

        def in_run_order(keys: list[str]) -> list[str]:
            present = set(keys)
            return [k for k in order if k in present] + [k for k in keys if k not in wanted]

        try:
            keys = [record.get("key") for path in [self.results, *shards] if path.is_file()
                    for record in iter_records(path)]
        except ValueError:  # a torn or damaged line: the whole read below says it (and leaves a torn last one out)
            keys = None
        unique = list(dict.fromkeys(keys or []))
        if keys is None or shards or len(keys) > len(unique) or unique != in_run_order(unique):
            done, _ = self.done()
            _write_results(self.results, [(key, done[key]) for key in in_run_order(list(done))])
        for path in shards:
            path.unlink(missing_ok=True)

    def in_order(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(key, record)`` for each line of the ``results.jsonl`` that :meth:`finish` wrote, one at a time."""
        if self.results.is_file():
            for record in iter_records(self.results):
                yield record.pop("key"), record

    def delete_journals(self) -> None:
        """Every journal of the evaluation, once its replies are all in ``results.jsonl``."""
        for path in self.journals():
            path.unlink(missing_ok=True)

