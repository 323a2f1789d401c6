"""Writing files so that a crash never leaves half of one where a whole one is expected."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["atomic_file", "atomic_folder", "atomic_write_text", "atomic_write_json", "json_text", "jsonable", "inside",
           "UnsafePath", "remove_partial_files", "printable", "missing_folder", "names_folder", "near_folder"]


class UnsafePath(ValueError):
    """A path made from data (an id, a name) would leave the folder it belongs in."""


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
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic on POSIX
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
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


#: a lone UTF-16 surrogate: Python text may hold one (a judge's JSON reply escapes it as ``\ud800``),
#: UTF-8 cannot
_SURROGATE = re.compile("[\ud800-\udfff]")


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
