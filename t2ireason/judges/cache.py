"""An on-disk response cache that wraps any judge.

Judging a benchmark costs hours of GPU time or API money; re-running a report,
a resumed job or a second metric over the same images should not pay again.
:class:`CachedJudge` answers a request from SQLite when the very same question
was asked of the very same judge before, and asks the wrapped judge otherwise.

What makes two requests "the same" (the key, a SHA-256):

- the judge's :meth:`~t2ireason.judges.base.Judge.identity` (backend, model,
  revision, whatever else its answers depend on; never an API key);
- the request's :meth:`~t2ireason.judges.base.ChatRequest.fingerprint` with the
  sampling resolved (the request's own, else the judge's default): messages,
  images by content digest, sampling, ``json_schema``, ``top_logprobs``;
- for answer probabilities: identity, image digest, question and answer.

Only deterministic requests are cached by default (greedy, or a fixed seed):
a sampled reply is one draw, and replaying it would hide the sampling (a run
keeps its own sampled replies for its resume: :mod:`t2ireason.judges.journal`).
Replies with ``error`` set are never stored. Every other reply is kept, whether or not the scorer could read
it: a reply is a fact about a request, and each evaluation reads a cached reply with its own rules (re-asks in
the conversation, R2I-Bench's ``missing: answered`` or ``missing: fail``), so a deterministic judge is never
asked the same thing twice; a reply the evaluation could not read (:meth:`CachedJudge.reject`) is counted, never
deleted (another evaluation may read it), and is never served as an answer, only read again.
``mode="refresh"`` (``evaluate --refresh-cache``; ``--no-cache`` keeps nothing) asks the judge again, say once it
has been fixed. Each reply is committed as soon as the wrapped judge produces it, so an interrupted run keeps its finished work,
and several processes can share one cache file (WAL journal, busy time-outs,
short transactions, retries when the database is locked).

Each row also records the kind, backend, model, the judge identity, the request
fingerprint (JSON), when it was written and when it was last used, so the cache can be
inspected with any SQLite tool and pruned with :meth:`ResponseCache.clear`.

The file is kept under a size limit (``max_size``, default :data:`DEFAULT_MAX_SIZE`, or
``$T2IREASON_CACHE_MAX_SIZE`` such as ``500MB``; ``0`` for none): as a reward in a training loop
every step asks about new images, so without a limit the file would only grow. Past the
limit, the least recently used replies are deleted (SQLite reuses their pages, so the file
stays near the limit), and the write-ahead log is kept to a tenth of it, at most 4 MiB (SQLite's
own checkpoints stay on beside that bound); an evicted reply is
simply asked again when next needed. A file that cannot serve (damaged, its disk full) is a
:class:`CacheError`: one line naming it and the way out, never sqlite3's traceback.
"""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tenacity import (
    Retrying,
    retry,
    retry_if_exception,
    retry_if_result,
    stop_after_delay,
    wait_random,
    wait_random_exponential,
)

from ..progress import progress_bar
from .base import AnswerQuery, ChatRequest, JudgeError, Reply
from .stored import StoredJudge, accepts, canonical, request_key

__all__ = ["CachedJudge", "ResponseCache", "CacheError", "default_cache_path", "default_max_size", "parse_size",
           "CACHE_MODES", "DEFAULT_MAX_SIZE"]

CACHE_MODES = ("use", "refresh", "off")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key      TEXT PRIMARY KEY,   -- sha256 of the judge identity and the request fingerprint
    kind     TEXT NOT NULL,      -- 'chat' or 'answer_probability'
    backend  TEXT,
    model    TEXT,
    judge    TEXT NOT NULL,      -- identity() as JSON
    request  TEXT NOT NULL,      -- fingerprint as JSON (images by digest)
    reply    TEXT NOT NULL,      -- Reply.to_dict() as JSON, or {"probability": p}
    created  REAL NOT NULL,      -- unix time
    used     REAL                -- unix time of the last read or write (least recently used go first)
);
CREATE INDEX IF NOT EXISTS replies_model ON replies (model);
"""

#: the cache file's size limit unless told otherwise: room for ~100,000 to 300,000 judged images
DEFAULT_MAX_SIZE = 2 * 1024**3
_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}

def default_cache_path() -> Path:
    """Where the cache lives unless told otherwise.

    ``$T2IREASON_CACHE`` (a directory, or a ``.sqlite``/``.db`` file), else
    ``$XDG_CACHE_HOME/t2ireason``, else ``~/.cache/t2ireason``; the file is
    ``judge_cache.sqlite`` in that directory.
    """
    env = os.environ.get("T2IREASON_CACHE")
    if env:
        p = Path(env).expanduser()
        return p if p.suffix in (".sqlite", ".db") else p / "judge_cache.sqlite"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return base / "t2ireason" / "judge_cache.sqlite"


def parse_size(value: Any, where: str = "max_size") -> int | None:
    """A size in bytes from ``2000000``, ``"500MB"`` or ``"2GiB"``; ``0``, ``"0"`` or ``None``: no limit."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{where} must be a size such as 500MB or 2GiB (0 for no limit), got {value!r}")
    if isinstance(value, (int, float)):
        size = value
    else:
        found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", str(value))
        if not found or found[2].lower() not in _UNITS:
            raise ValueError(f"{where} must be a size such as 500MB or 2GiB (0 for no limit), got {value!r}")
        size = float(found[1]) * _UNITS[found[2].lower()]
    if not math.isfinite(size) or size < 0:
        raise ValueError(f"{where} must be a size >= 0 (0 for no limit), got {value!r}")
    return int(size) or None


def default_max_size() -> int | None:
    """``$T2IREASON_CACHE_MAX_SIZE`` if set (``0``: no limit), else :data:`DEFAULT_MAX_SIZE`."""
    env = os.environ.get("T2IREASON_CACHE_MAX_SIZE")
    return DEFAULT_MAX_SIZE if env is None else parse_size(env, "T2IREASON_CACHE_MAX_SIZE")


def _is_busy(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)


# SQLite's busy handler already waits `timeout`; this covers the cases it does not
# (WAL set-up, lock upgrades inside a transaction) with jittered back-off.
_retry_busy = retry(retry=retry_if_exception(_is_busy), wait=wait_random_exponential(0.01, 1.0),
                    stop=stop_after_delay(120), reraise=True)


def _guarded(method: Callable) -> Callable:
    """A ResponseCache operation, retried while the database is busy; any other fault of the
    file (damaged, its disk full) a :class:`CacheError` naming it and the way out."""
    retried = _retry_busy(method)

    @functools.wraps(method)
    def call(self: ResponseCache, *args: Any, **kwargs: Any) -> Any:
        try:
            return retried(self, *args, **kwargs)
        except (OSError, sqlite3.Error) as e:
            raise CacheError(self._unusable(e)) from None

    return call


class CacheError(JudgeError):
    """The response cache cannot be opened or written: the message names the file and why."""


#: the write-ahead log's bound: a tenth of the size limit (within these), past which it is emptied into the file;
#: at most about what SQLite's own checkpoints (every 1,000 pages) let it reach
_WAL_SHARE, _WAL_BOUNDS = 0.1, (64 * 1024, 4 * 1024**2)


class ResponseCache:
    """The SQLite store behind :class:`CachedJudge`: keyed JSON rows, safe across
    threads and processes. One connection per process (re-opened after a fork).

    With a size limit, the write-ahead log (``<file>-wal``) is bounded too: SQLite's own
    checkpoints (kept on, every 1,000 pages) cannot empty it while other processes keep reading and
    writing (with four writers and a 2 MB limit it grew to 70 MB), so once it holds more than a
    tenth of the limit (at most 4 MiB) a writer checkpoints it into the file and truncates it
    (``wal_checkpoint(TRUNCATE)``, waiting for the others' short transactions); the file and its
    log together stay near the limit (with four writers, at most 1.25 times it over 20 runs)."""

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0, max_size: int | str | None = None):
        self.path = Path(path).expanduser()
        self.timeout = timeout
        #: the file's size limit in bytes (None: no limit); least recently used rows go first
        self.max_size = parse_size(max_size)
        #: the write-ahead log's bound in bytes (None: SQLite's own checkpoints only)
        self.max_wal = None if self.max_size is None else min(max(int(self.max_size * _WAL_SHARE), _WAL_BOUNDS[0]),
                                                              _WAL_BOUNDS[1])
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # autocommit (isolation_level=None): every statement is its own short transaction
                conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                       check_same_thread=False)
                self._setup(conn)
            except (OSError, sqlite3.Error) as e:
                raise CacheError(self._unusable(e)) from None
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _unusable(self, exc: BaseException) -> str:
        """The one line saying why the file cannot be used, and what to do."""
        text = str(exc).lower()
        way = "pass --cache with a file path that can be created or written, or --no-cache"
        in_file = next((p for p in self.path.parents if p.is_file()), None)
        if in_file is not None:
            why = f"{in_file} is a file, not a folder"
        elif self.path.is_dir():
            why = "it is a folder (name a file in it, e.g. judge_cache.sqlite)"
        elif isinstance(exc, sqlite3.DatabaseError) and "malformed" in text:  # flipped pages, a truncated file
            why = f"it is damaged ({exc})"
            way = "move or delete it (a new one is made; the replies it held are asked again), or pass --no-cache"
        elif isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
            why = "it is a file that is not an SQLite database"
        elif "disk is full" in text or isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            why = f"its disk is full ({exc.strerror if isinstance(exc, OSError) else exc})"
            way = ("free space there (or give the cache a smaller size limit, T2IREASON_CACHE_MAX_SIZE), "
                   "pass --cache with a file on another disk, or --no-cache")
        elif isinstance(exc, OSError):
            why = f"{exc.strerror or exc} ({exc.filename or self.path.parent})"
        elif self._conn is not None:  # it worked until now
            why = str(exc)
            way = "check its disk, or pass --no-cache"
        else:
            why = f"{exc} (a folder that cannot be written?)"
        return f"the response cache {self.path} cannot be used: {why}; {way}"

    def check(self) -> None:
        """Open (or create) the file now: a :class:`CacheError` here, before any judging, rather than later."""
        self._connect()

    @_retry_busy
    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # durable across process crashes in WAL mode
        if self.max_wal is not None:
            # SQLite's own checkpoints stay on (every 1,000 pages): turned off, the log of a default 2 GiB cache
            # grew to its bound of 64 MiB before its first checkpoint (67 MB for a 13 MB cache over a full
            # R2I-Bench run). They may make _bound_wal's TRUNCATE busy for a moment, which it waits out.
            conn.execute(f"PRAGMA journal_size_limit = {self.max_wal}")
        conn.executescript(_SCHEMA)
        if "used" not in {row[1] for row in conn.execute("PRAGMA table_info(replies)")}:  # a cache of before
            conn.execute("ALTER TABLE replies ADD COLUMN used REAL")
        conn.execute("CREATE INDEX IF NOT EXISTS replies_used ON replies (used)")

    @_guarded
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._connect().execute(sql, params).fetchall()

    @_guarded
    def _write(self, rows: list[tuple]) -> None:
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")  # take the write lock up front: no upgrade deadlock
            try:
                conn.executemany("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
                if self.max_size is not None:
                    self._evict(conn)
            except BaseException:
                if conn.in_transaction:  # (SQLite may have rolled back already, on a full disk)
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            self._bound_wal(conn)

    def _bound_wal(self, conn: sqlite3.Connection) -> None:
        """Past its bound, the write-ahead log checkpointed into the file and truncated (waiting,
        through the busy handler, for the other processes' transactions to end).

        When another process is checkpointing already, SQLite answers busy at once; writing on
        then would starve that checkpoint of the write lock it waits for, and the log grew
        without bound while the writers took the lock in turns (1.5 MB past a 200 kB bound with
        four writers). So a writer waits until the log is back under its bound (or ``timeout``)."""
        if self.max_wal is None or not self._wal_past_bound():
            return
        Retrying(retry=retry_if_result(bool), wait=wait_random(0.001, 0.02), stop=stop_after_delay(self.timeout),
                 retry_error_callback=lambda state: None)(self._checkpoint, conn)

    def _wal_past_bound(self) -> bool:
        try:
            return os.stat(f"{self.path}-wal").st_size > self.max_wal
        except FileNotFoundError:
            return False

    def _checkpoint(self, conn: sqlite3.Connection) -> bool:
        """One TRUNCATE checkpoint; True while the log is still past its bound after it."""
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return bool(busy) and self._wal_past_bound()

    def _evict(self, conn: sqlite3.Connection) -> None:
        """Past ``max_size``, delete the least recently used rows until the data takes at most 90%
        of it (in the write's transaction). Pages in use are counted: two pragmas, no scan."""
        def used() -> int:
            pages = conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
            return pages * conn.execute("PRAGMA page_size").fetchone()[0]

        size, target = used(), int(self.max_size * 0.9)
        if size <= self.max_size:
            return
        while size > target:
            count = conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
            if count <= 1:  # the newest reply is kept even when it alone is past the limit
                return
            n = min(count - 1, max(1, math.ceil((size - target) / (size / count))))
            conn.execute("DELETE FROM replies WHERE key IN (SELECT key FROM replies ORDER BY used, created LIMIT ?)",
                         (n,))
            size = used()

    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        """The stored values (decoded JSON) of those ``keys`` that are present."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, dict] = {}
        for start in range(0, len(keys), 500):  # stay under SQLite's bound-variable limit
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, value in self._execute(f"SELECT key, reply FROM replies WHERE key IN ({marks})", chunk):
                found[key] = json.loads(value)
        if found and self.max_size is not None:  # what is read is recently used: evicted last
            self._touch(list(found))
        return found

    @_guarded
    def _touch(self, keys: list[str]) -> None:
        now = time.time()
        with self._lock:
            conn = self._connect()
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                conn.execute(f"UPDATE replies SET used = ? WHERE key IN ({','.join('?' * len(chunk))})", [now, *chunk])

    def put_many(self, entries: Iterable[tuple[str, str, dict, dict, dict]]) -> int:
        """Store ``(key, kind, identity, request, value)`` entries in one transaction."""
        now = time.time()
        rows = [(key, kind, ident.get("backend"), ident.get("model"), canonical(ident),
                 canonical(request), canonical(value), now, now)
                for key, kind, ident, request, value in entries]
        if rows:
            self._write(rows)
        return len(rows)

    def clear(self, *, model: str | None = None, judge: dict | None = None,
              older_than: float | None = None) -> int:
        """Delete rows (all, or those of ``model``, of the judge ``identity``, or
        written more than ``older_than`` seconds ago); returns how many."""
        where, params = [], []
        if model is not None:
            where.append("model = ?")
            params.append(model)
        if judge is not None:
            where.append("judge = ?")
            params.append(canonical(judge))
        if older_than is not None:
            where.append("created < ?")
            params.append(time.time() - older_than)
        sql = "DELETE FROM replies" + (" WHERE " + " AND ".join(where) if where else "")
        return self._delete(sql, params)

    @_guarded
    def _delete(self, sql: str, params: Sequence[Any]) -> int:
        with self._lock:
            return self._connect().execute(sql, params).rowcount

    def delete(self, keys: Iterable[str]) -> int:
        """Delete the rows of ``keys``; returns how many there were."""
        keys, count = list(dict.fromkeys(keys)), 0
        for start in range(0, len(keys), 500):  # stay under SQLite's bound-variable limit
            chunk = keys[start : start + 500]
            count += self._delete(f"DELETE FROM replies WHERE key IN ({','.join('?' * len(chunk))})", chunk)
        return count

    def summary(self) -> list[dict[str, Any]]:
        """Rows per (kind, backend, model), with the oldest and newest write times."""
        rows = self._execute("SELECT kind, backend, model, COUNT(*), MIN(created), MAX(created) "
                             "FROM replies GROUP BY kind, backend, model ORDER BY model, kind")
        return [dict(zip(("kind", "backend", "model", "rows", "oldest", "newest"), r)) for r in rows]

    def __len__(self) -> int:
        return self._execute("SELECT COUNT(*) FROM replies")[0][0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


class CachedJudge(StoredJudge):
    """``judge`` with its answers kept in an SQLite file at ``path``.

    ``mode``: ``"use"`` answers from the cache when it can and stores new
    replies; ``"refresh"`` asks the judge again and overwrites; ``"off"`` passes
    everything through. ``cache_nondeterministic=True`` also caches sampled
    (temperature > 0, no seed) requests. Replies served from the cache have
    ``cached=True``. A reply the scorer could not read (:meth:`reject`: it failed
    validation) is counted and kept: each evaluation reads what the cache gives with its own rules.
    Counts are in :attr:`hits`, :attr:`misses` (asked the
    judge, then stored unless the reply was an error), :attr:`bypassed` (not
    cacheable: mode off or nondeterministic), :attr:`rejected` (replies this judge's
    evaluation could not read), :attr:`rejected_cached` (of those, replies the cache
    had served) and :meth:`stats`. ``max_size``: the file's
    size limit (bytes, or ``"500MB"``; ``0`` or ``None`` for none; default
    :func:`default_max_size`), the least recently used replies evicted past it.
    """

    def __init__(self, judge: Any, path: str | os.PathLike | None = None, *, mode: str = "use",
                 cache_nondeterministic: bool = False, max_size: int | str | None = "default"):
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode must be one of {', '.join(CACHE_MODES)}, got {mode!r}")
        super().__init__(judge)
        self.mode = mode
        self.cache_nondeterministic = cache_nondeterministic
        self.store = ResponseCache(default_cache_path() if path is None else path,
                                   max_size=default_max_size() if max_size == "default" else max_size)
        if mode != "off":
            self.store.check()
        self.hits = self.misses = self.bypassed = self.stored = self.rejected = self.rejected_cached = 0
        self._accepts_on_batch = accepts(getattr(judge, "answer_probability", None), "on_batch")

    @property
    def path(self) -> Path:
        return self.store.path

    def stats(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "bypassed": self.bypassed, "stored": self.stored,
                "rejected": self.rejected, "rejected_cached": self.rejected_cached, "mode": self.mode, "path": str(self.path), "max_size": self.store.max_size}

    def clear(self) -> int:
        """Forget every cached answer of this judge (same identity); returns how many rows."""
        return self.store.clear(judge=self.identity())

    def close(self) -> None:
        try:  # the judge first: a reply still arriving is stored, not left to reopen the file
            super().close()
        finally:
            self.store.close()

    def __repr__(self) -> str:
        return f"CachedJudge({self.judge!r}, {str(self.path)!r}, mode={self.mode!r})"

    # -- keys -----------------------------------------------------------------

    def chat_key(self, request: ChatRequest) -> tuple[str, dict] | None:
        """``(key, fingerprint)`` for a request, or None when it is not to be cached."""
        sampling = self.resolve_sampling(request)
        if self.mode == "off" or not (sampling.deterministic or self.cache_nondeterministic):
            return None
        fingerprint = request.fingerprint(sampling)
        return request_key("chat", self.identity(), fingerprint), fingerprint

    def answer_key(self, query: AnswerQuery) -> tuple[str, dict] | None:
        if self.mode == "off":
            return None
        fingerprint = {"image": query.image.digest, "question": query.question, "answer": query.answer}
        return request_key("answer_probability", self.identity(), fingerprint), fingerprint

    # -- answering ------------------------------------------------------------

    def _stored(self, requests: list[ChatRequest]) -> list[Reply | None]:
        """Cached replies come back with ``cached=True``."""
        keys = [self.chat_key(r) for r in requests]
        found = self.store.get_many(k[0] for k in keys if k) if self.mode == "use" else {}
        replies: list[Reply | None] = []
        for k in keys:
            hit = k is not None and k[0] in found
            replies.append(Reply.from_dict({**found[k[0]], "cached": True}) if hit else None)
            self.hits += hit
            self.misses += not hit and k is not None
            self.bypassed += k is None
        return replies

    def _keep(self, request: ChatRequest, reply: Reply) -> None:
        key = self.chat_key(request)
        if key is not None and reply.error is None:
            value = {**reply.to_dict(), "cached": False}
            self.stored += self.store.put_many([(key[0], "chat", self.identity(), key[1], value)])

    def _counts(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}

    def reject(self, requests: Sequence[ChatRequest], replies: Sequence[Reply]) -> None:
        """``replies`` (to ``requests``) failed this evaluation's validation: counted, not deleted. A reply is a
        fact about its request; another evaluation (another re-ask rule, ``missing: answered``) may read it, and
        a deterministic judge would give it again (issue 50: deleting it re-bought every re-asked conversation)."""
        keyed = [reply for request, reply in zip(requests, replies) if self.chat_key(request) is not None]
        self.rejected += len(keyed)
        self.rejected_cached += sum(1 for reply in keyed if reply.cached)
        super().reject(requests, replies)

    def answer_probability(self, queries: Sequence[AnswerQuery], *, progress: bool | str = False) -> list[float]:
        """Like :meth:`Judge.answer_probability`, cached per (image, question, answer)."""
        queries = list(queries)
        keys = [self.answer_key(q) for q in queries]
        found = self.store.get_many(k[0] for k in keys if k) if self.mode == "use" else {}
        out: list[float | None] = [None] * len(queries)
        todo: list[int] = []
        for i, k in enumerate(keys):
            if k and k[0] in found:
                out[i] = found[k[0]]["probability"]
                self.hits += 1
            else:
                todo.append(i)
                self.misses += k is not None
                self.bypassed += k is None
        ident = self.identity()
        with progress_bar(len(queries), progress, desc=f"P(answer) {self.model}") as bar:
            bar.update(len(queries) - len(todo))
            bar.set_postfix(hits=self.hits, misses=self.misses)

            def keep(start: int, probs: list[float]) -> None:
                """Store one answered batch right away (crash safety)."""
                entries = []
                for i, p in zip(todo[start : start + len(probs)], probs):
                    out[i] = p
                    if keys[i]:
                        key, fingerprint = keys[i]
                        entries.append((key, "answer_probability", ident, fingerprint, {"probability": p}))
                self.stored += self.store.put_many(entries)
                bar.update(len(probs))

            pending = [queries[i] for i in todo]
            if pending and self._accepts_on_batch:  # the whole list at once: the judge may overlap its batches
                result = self.judge.answer_probability(pending, on_batch=keep)
                for j, p in enumerate(result):  # a judge that took on_batch but did not call it
                    if out[todo[j]] is None:
                        keep(j, [p])
            else:  # a judge without on_batch: chunks of its batch size, each stored before the next
                for start in range(0, len(pending), self.batch_size):
                    keep(start, self.judge.answer_probability(pending[start : start + self.batch_size]))
        return out  # type: ignore[return-value]

