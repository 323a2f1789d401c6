"""An evaluation's own record of the replies it received, so that a resume never asks twice.

The response cache keeps only deterministic replies (greedy, or seeded), and rightly: a
sampled reply is one draw, not to be served to another run. But within one evaluation, a
reply already received is that evaluation's answer, sampled or not: after a refused key, a
``kill -9`` or SIGTERM, asking it again would pay for it twice (the R2I-Bench presets sample
at temperature 0.1: every reply of an unfinished chunk was bought again). So the run keeps
every reply it receives in ``evaluations/<name>/replies.jsonl``, one JSON line each, appended
the moment it arrives (whole or not at all: :func:`t2ireason.files.append_whole`), keyed as
the cache keys them (the judge's identity and the request with its sampling; never a key).

A request asked several times within one evaluation gets the journal's replies to it in the
order they were received, then new ones: the same conversation resumes with the same draws.
The journal of an evaluation is deleted when the evaluation is finished (its replies are then
in ``results.jsonl``).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..files import append_whole, json_text, read_records
from .base import ChatRequest, Reply
from .stored import StoredJudge, request_key

__all__ = ["ReplyJournal", "JournaledJudge"]


class ReplyJournal:
    """The file of an evaluation's replies (one writer at a time: the evaluation's lock holder, or in a launch
    of several processes each process its own file). ``others``: the journals of the same evaluation that
    other processes wrote (read too, never written: a resumed launch may give an image to another process)."""

    def __init__(self, path: str | os.PathLike, others: Sequence[str | os.PathLike] = ()):
        self.path = Path(path)
        self._unused: dict[str, deque[dict[str, Any]]] = {}
        for file in [*(Path(p) for p in others if Path(p) != self.path), self.path]:
            for number, record in enumerate(read_records(file, repair=file == self.path), 1):
                if not isinstance(record.get("key"), str) or not isinstance(record.get("reply"), dict):
                    raise ValueError(f"{file}, line {number}, is not a journaled reply (a key and a reply): the "
                                     "file was changed by something else; delete it (its replies are asked again)")
                self._unused.setdefault(record["key"], deque()).append(record["reply"])
        self._lock = threading.Lock()
        #: replies given by :meth:`take` (counted under the lock: several chunks take at once)
        self.taken = 0

    def __len__(self) -> int:
        return sum(len(q) for q in self._unused.values())

    def take(self, key: str) -> Reply | None:
        """The first reply to ``key`` not taken yet by this process, or None."""
        with self._lock:
            waiting = self._unused.get(key)
            if not waiting:
                return None
            self.taken += 1
            return Reply.from_dict(waiting.popleft())

    def add(self, key: str, reply: Reply) -> None:
        """Append a reply as it arrives (a failed request's reply is not an answer: not kept)."""
        if reply.error is None:
            with self._lock:
                append_whole(self.path, [json_text({"key": key, "reply": reply.to_dict()}) + "\n"])

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


class JournaledJudge(StoredJudge):
    """``judge`` answering first from ``journal`` (whatever its sampling), keeping there every reply
    it gives. :attr:`reused` counts the replies the journal answered."""

    def __init__(self, judge: Any, journal: ReplyJournal):
        super().__init__(judge)
        self.journal = journal

    @property
    def reused(self) -> int:
        return self.journal.taken

    def __repr__(self) -> str:
        return f"JournaledJudge({self.judge!r}, {str(self.journal.path)!r})"

    def _key(self, request: ChatRequest) -> str:
        return request_key("chat", self.identity(), request.fingerprint(self.resolve_sampling(request)))

    def _stored(self, requests: list[ChatRequest]) -> list[Reply | None]:
        return [self.journal.take(self._key(r)) for r in requests]

    def _keep(self, request: ChatRequest, reply: Reply) -> None:
        self.journal.add(self._key(request), reply)
