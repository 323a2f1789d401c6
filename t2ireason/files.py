"""Writing files so that a crash never leaves half of one where a whole one is expected.

Files and folders are made with the modes the process's umask allows (``0666 & ~umask``,
``0777 & ~umask``), as ``open`` and ``mkdir`` make them: a team sharing a file system reads
each other's runs. A write the disk cannot take (full, over quota, past a size limit) is a
:class:`WriteFailed` naming the file, and leaves nothing half-written.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["model_fingerprint", "atomic_file", "atomic_folder", "atomic_write_text", "atomic_write_json", "append_whole", "read_records", "iter_records",
           "WriteFailed", "json_text", "jsonable", "inside", "UnsafePath", "remove_partial_files", "printable",
           "missing_folder", "names_folder", "near_folder", "read_parquet_rows"]

logger = logging.getLogger(__name__)

#: what a disk that cannot take more data says (full, over quota, past the process's file size limit)
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class UnsafePath(ValueError):
    """A path made from data (an id, a name) would leave the folder it belongs in."""


class WriteFailed(OSError):
    """A file could not be written (a full disk...): the message names it and says what was kept."""

    def __init__(self, path: str | os.PathLike, error: OSError, kept: str):
        room = " (free space on its disk, then run the same command again)" if error.errno in _NO_ROOM else ""
        super().__init__(f"cannot write {path}: {error.strerror or error}{room}; {kept}")
        self.errno, self.path = error.errno, Path(path)  # (no filename: str() stays the message above)


_umask_lock = threading.Lock()


def _umask() -> int:
    """The process's umask: read from Linux's /proc, else by setting it (the most private value
    meanwhile, so a file another thread makes then is never more open than asked)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return int(next(line for line in f if line.startswith("Umask:")).split()[1], 8)
    except (OSError, StopIteration, ValueError):
        with _umask_lock:
            mask = os.umask(0o077)
            os.umask(mask)
        return mask


def inside(root: str | os.PathLike, *parts: str | os.PathLike) -> Path:
    """``root / parts``, checked to stay inside ``root``: a part made from data (a release id, an
    evaluation name) that is absolute, climbs out with ``..``, or leaves through a symlink is refused
    with :class:`UnsafePath` naming it. Nothing is created."""
    base = Path(root).resolve()
    path = Path(root).joinpath(*parts)
    resolved = path.resolve()
    if resolved != base and base not in resolved.parents:
        shown = "/".join(str(p) for p in parts)
        raise UnsafePath(f"path {shown!r} leaves the folder {root}: refusing to write outside it")
    return path


@contextmanager
def atomic_file(path: str | os.PathLike, *, suffix: str = ".part") -> Iterator[BinaryIO]:
    """A binary file whose contents replace ``path`` whole when the block ends without error.

    It is written under a hidden temporary name in the same folder (``suffix`` keeps it out of
    globs such as ``*.png`` or ``*.jsonl``), synced to disk, then renamed over ``path``:
    readers see the old file or the whole new one, and an interrupted write leaves no file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=suffix)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's file is private (0600); the file replacing path is not
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic on POSIX
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno in _NO_ROOM and not isinstance(e, WriteFailed):
            raise WriteFailed(path, e, "the file is as it was before") from e
        raise


@contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """A folder, yielded empty under a hidden temporary name beside ``path``, that replaces ``path``
    (and whatever was there) when the block ends without error; on an error it is deleted and
    ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        tmp.chmod(0o777 & ~_umask())  # mkdtemp's folder is private (0700); the folder replacing path is not
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_partial_files(folder: str | os.PathLike) -> int:
    """Delete the temporary files :func:`atomic_file` leaves under ``folder`` when a process is killed
    mid-write (``kill -9``, out of memory); call it only when no writer of that folder is running.
    Returns how many were removed."""
    removed = 0
    for stale in Path(folder).rglob(".tmp-*"):
        if stale.is_file():
            stale.unlink(missing_ok=True)
            removed += 1
    return removed


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """``text`` (UTF-8) as the whole new contents of ``path``; see :func:`atomic_file`."""
    with atomic_file(path) as f:
        f.write(text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, value: Any) -> None:
    """``value`` as standard JSON (see :func:`jsonable`: no NaN), written whole or not at all."""
    atomic_write_text(path, json_text(jsonable(value), indent=2) + "\n")


def append_whole(path: str | os.PathLike, lines: Iterable[str], *, sync: bool = False) -> None:
    """Append ``lines`` (each ending with a newline) to ``path``, all of them or none: one
    ``O_APPEND`` write of them together, the file cut back to its former length when the disk
    takes only part of it (a :class:`WriteFailed` naming the file), or when the process is
    interrupted mid-way. ``sync``: on disk (fsync) before returning. One writer at a time."""
    data = "".join(lines).encode("utf-8")
    if not data:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # the umask applies
    try:
        start = os.fstat(fd).st_size
        try:
            written = 0
            while written < len(data):  # a short write, then the error that says why
                written += os.write(fd, data[written:])
            if sync:
                os.fsync(fd)
        except BaseException as e:
            os.ftruncate(fd, start)  # no torn line left behind
            if isinstance(e, OSError):
                raise WriteFailed(path, e, "what it held before is kept") from e
            raise
    finally:
        os.close(fd)


def read_records(path: str | os.PathLike, *, repair: bool = False) -> list[dict[str, Any]]:
    """The JSON records of a file written by :func:`append_whole`, one a line ([] when there is
    no file). A torn last line (a crash mid-write under an older version, a power cut) is left
    out and said in a warning; with ``repair`` (the file's writer, before appending) it is also
    cut off the file, so the next record starts on a line of its own. A line before it that is not
    a JSON object is a :class:`ValueError` naming the file and line: nothing after it is dropped
    in silence."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    *lines, tail = data.split(b"\n")  # tail: what follows the last newline (b"" in a file written whole)
    records = [_record(path, number, line) for number, line in enumerate(lines, 1)]
    if tail:
        try:
            record = _record(path, len(lines) + 1, tail)
        except ValueError:
            logger.warning("%s ends with a torn line (%d bytes: a write cut short by a crash); it is left out%s",
                           path, len(tail), ", and cut off the file" if repair else "")
            if repair:
                with open(path, "r+b") as f:
                    f.truncate(len(data) - len(tail))
        else:  # whole, but for its newline
            records.append(record)
            if repair:
                append_whole(path, ["\n"])
    return records


def iter_records(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """The JSON records of a file written whole (one a line), one at a time, so that a caller that keeps only
    part of each never holds the file's every record; a line that is not a JSON object is a :class:`ValueError`
    naming the file and line, as in :func:`read_records`."""
    path = Path(path)
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            yield _record(path, number, line)


def _record(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        record = e
    if not isinstance(record, dict):
        why = f" ({record})" if isinstance(record, Exception) else ""
        raise ValueError(f"{path}, line {number}, is not a JSON record{why}: the file was changed by something "
                         "else; correct or delete that line (what it recorded is then done again)")
    return record


#: a lone UTF-16 surrogate: Python text may hold one (a judge's JSON reply escapes it as ``\ud800``),
#: UTF-8 cannot
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_parquet_rows(path: str | os.PathLike, columns: list[str] | None = None) -> list[dict[str, Any]]:
    """The rows of the Parquet file ``path`` (``columns``, or all) as Python dicts, read through the system
    allocator: Arrow's default one (mimalloc) keeps the pages a read used resident after the table is gone, about
    16 KB a row of R2I-Bench's rows for the rest of an evaluation (issue 51, ``perf/memory.py``), where the system
    allocator gives them back."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    table = ds.dataset(str(path), format="parquet").to_table(columns=columns, memory_pool=pa.system_memory_pool())
    return table.to_pylist()


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **kwargs)`` that UTF-8 can always encode: a lone surrogate
    in a string stays its JSON escape (``\\ud800``), so the text reads back exactly as it was."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False, **kwargs))


def printable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, for pages and tables that show it."""
    return _SURROGATE.sub("\ufffd", text)


def jsonable(x: Any) -> Any:
    """``x`` as plain JSON: NaN and infinities become null, dataclasses dicts, unknown objects their repr."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    if isinstance(x, dict):
        return {str(k) if not isinstance(k, tuple) else repr(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return jsonable(dataclasses.asdict(x))
    if hasattr(x, "item") and callable(x.item):  # numpy scalars
        return jsonable(x.item())
    return repr(x)


def missing_folder(name: str | os.PathLike) -> str | None:
    """Where ``name`` (a ``--data`` or ``--model`` value: a local folder or a Hub id) names a local
    folder that is not there: what to say, with the closest folder beside it ("did you mean");
    else None. It names a local folder when it is a path (``/``, ``./``, ``../``, ``~``), has more
    parts than a Hub id's ``org/name``, or its first part is a folder here (``data/r2i-bnech``
    beside ``data/r2i-bench``)."""
    text = str(name)
    path = Path(text).expanduser()
    if path.is_dir() or not names_folder(text):
        return None
    if path.exists():
        return f"{text} is a file, not a folder"
    return f"no folder {text!r}{near_folder(path)}"


def names_folder(name: str) -> bool:
    """Whether ``name`` (a folder or a Hub id) names a local folder: a path (``/``, ``./``, ``../``, ``~``),
    more parts than a Hub id's ``org/name``, or a first part that is a folder here."""
    parts = Path(name).parts
    return (name.startswith(("/", "./", "../", "~", ".\\")) or len(parts) > 2
            or len(parts) == 2 and Path(parts[0]).is_dir())


def near_folder(path: Path) -> str:
    """What to add to a message about a folder that is not there: the closest folder beside it
    ("did you mean"), or that the folder above it is missing too."""
    import difflib

    parent = path.parent
    siblings = [p.name for p in parent.iterdir() if p.is_dir()] if parent.is_dir() else []
    close = difflib.get_close_matches(path.name, siblings, n=1, cutoff=0.6)
    hint = f" (did you mean {str(parent / close[0])!r}?)" if close else ""
    return hint + ("" if parent.is_dir() else f"; {parent} does not exist either")


def model_fingerprint(folder: str | os.PathLike) -> str | None:
    """``sha256:<hex>`` over a local model folder's files (relative paths and contents, in
    order), or None when ``folder`` is not a folder. Reads every byte once: computed when an
    evaluation is first recorded, not on every call."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not any(
            part.startswith(".") for part in p.relative_to(root).parts)):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda f=f: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return f"sha256:{digest.hexdigest()}"
