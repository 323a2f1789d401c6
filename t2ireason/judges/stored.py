"""A judge whose replies are kept somewhere: what the response cache and a run's reply journal share.

:class:`StoredJudge` wraps another judge: it describes itself as that judge does, answers
each request it can from its store, asks the wrapped judge the others, and keeps every new
reply the moment it arrives (each passed on first, then stored), so an interruption loses
nothing that was received. The stores differ in what they keep and for whom:
:class:`~t2ireason.judges.cache.CachedJudge` (deterministic replies, for every run),
:class:`~t2ireason.judges.journal.JournaledJudge` (every reply, for one evaluation's resume).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..files import json_text
from ..progress import progress_bar
from ..redaction import SECRET_NAME
from .base import AnswerQuery, ChatRequest, Judge, Reply, Sampling

__all__ = ["StoredJudge", "request_key", "public_identity"]


def public_identity(judge: Any) -> dict[str, Any]:
    """``judge.identity()`` with anything that looks like a credential dropped (identity() must hold
    none; a new key must not make a judge another judge)."""
    return {k: v for k, v in judge.identity().items() if not SECRET_NAME.fullmatch(str(k))}


def canonical(obj: Any) -> str:
    """One JSON text per value (sorted keys, no spaces); a lone surrogate stays escaped, so SQLite and UTF-8 take it."""
    return json_text(obj, sort_keys=True, separators=(",", ":"))


def request_key(kind: str, identity: dict, fingerprint: dict) -> str:
    """The SHA-256 naming one question to one judge: its identity and the request's fingerprint."""
    return hashlib.sha256(canonical({"kind": kind, "judge": identity, "request": fingerprint}).encode()).hexdigest()


def accepts(fn: Callable | None, name: str) -> bool:
    """Whether ``fn`` takes a keyword argument ``name``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


class StoredJudge(Judge):
    """``judge`` with a store of replies in front of it. Subclasses say which stored replies
    answer which requests (:meth:`_stored`) and keep new ones (:meth:`_keep`)."""

    def __init__(self, judge: Any):
        if not (hasattr(judge, "chat") and hasattr(judge, "identity")):
            raise TypeError(f"{type(self).__name__} wraps a judge (chat() and identity()), got {type(judge).__name__}")
        self.judge = judge
        self._accepts_on_reply = accepts(judge.chat, "on_reply")

    # -- the wrapped judge's description --------------------------------------

    @property
    def backend(self) -> str:
        return getattr(self.judge, "backend", "custom")

    @property
    def model(self) -> str:
        return getattr(self.judge, "model", "unknown")

    @property
    def revision(self) -> str | None:
        return getattr(self.judge, "revision", None)

    @property
    def default_sampling(self) -> Sampling:
        return getattr(self.judge, "default_sampling", Sampling())

    @property
    def batch_size(self) -> int:
        return getattr(self.judge, "batch_size", 8)

    @property
    def max_pixels(self) -> int | None:
        return getattr(self.judge, "max_pixels", None)

    @property
    def max_concurrency(self) -> int | None:
        return getattr(self.judge, "max_concurrency", None)

    def concurrency_record(self) -> dict[str, Any] | None:
        """What the wrapped judge did about an overwhelmed server (:mod:`t2ireason.transport.concurrency`)."""
        record = getattr(self.judge, "concurrency_record", None)
        return record() if record is not None else None

    def identity(self) -> dict[str, Any]:
        """The wrapped judge's identity (a store does not change answers), secrets dropped."""
        return public_identity(self.judge)

    def resolve_sampling(self, request: ChatRequest) -> Sampling:
        resolve = getattr(self.judge, "resolve_sampling", None)
        return resolve(request) if resolve else request.sampling or self.default_sampling

    def close(self) -> None:
        close = getattr(self.judge, "close", None)
        if close:
            close()

    def reject(self, requests: Sequence[ChatRequest], replies: Sequence[Reply]) -> None:
        """``replies`` (to ``requests``) failed validation: the scorer could not read them. Every store keeps
        them (a reply is a fact about its request, read by each evaluation with its own rules); the response cache
        counts them, and this one passes the word down."""
        reject = getattr(self.judge, "reject", None)
        if reject is not None:
            reject(requests, replies)

    def innermost(self) -> Any:
        """The judge under every store (what a pre-flight probe asks)."""
        inner = self.judge
        return inner.innermost() if isinstance(inner, StoredJudge) else inner

    # -- what a store does -------------------------------------------------------

    def _stored(self, requests: list[ChatRequest]) -> list[Reply | None]:
        """The stored reply answering each request, or None where the judge is to be asked."""
        raise NotImplementedError

    def _keep(self, request: ChatRequest, reply: Reply) -> None:
        """Store a new reply (called once per reply, as it arrives)."""
        raise NotImplementedError

    def _counts(self) -> dict[str, int]:
        """What the progress bar shows beside the throughput."""
        return {}

    # -- answering ------------------------------------------------------------

    def chat(self, requests: Sequence[ChatRequest], *, progress: bool | str = False,
             on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        """Like :meth:`Judge.chat`: stored replies first (given to ``on_reply`` at once), then
        each new reply as it arrives, passed on and stored before the next is handled."""
        requests = list(requests)
        replies = self._stored(requests)
        todo = [i for i, reply in enumerate(replies) if reply is None]

        with progress_bar(len(requests), progress, desc=f"judge {self.model}") as bar:
            if on_reply is not None:
                for i, reply in enumerate(replies):
                    if reply is not None:
                        on_reply(i, reply)
            bar.update(len(requests) - len(todo))
            if self._counts():
                bar.set_postfix(**self._counts())

            def keep(j: int, reply: Reply) -> None:
                i = todo[j]
                replies[i] = reply
                if on_reply is not None:  # passed on first: a store that fails (a full disk) loses nothing above it
                    on_reply(i, reply)
                self._keep(requests[i], reply)
                bar.update(1)

            pending = [requests[i] for i in todo]
            if pending and self._accepts_on_reply:
                result = self.judge.chat(pending, on_reply=keep)
                for j, reply in enumerate(result):  # a judge that took on_reply but did not call it
                    if replies[todo[j]] is None:
                        keep(j, reply)
            elif pending:  # a judge without on_reply: chunks of its batch size, each kept before the next
                for start in range(0, len(pending), self.batch_size):
                    for j, reply in enumerate(self.judge.chat(pending[start : start + self.batch_size]), start):
                        keep(j, reply)
        return replies  # type: ignore[return-value]  # every slot is filled above

    def answer_probability(self, queries: Sequence[AnswerQuery], *, progress: bool | str = False) -> list[float]:
        return self.judge.answer_probability(list(queries), progress=progress)

    def _chat_batch(self, requests: list[ChatRequest]) -> list[Reply]:
        return self.chat(requests)

    def _answer_logprobs(self, queries: list[AnswerQuery]) -> list[float]:
        import math

        return [math.log(p) if p > 0 else float("-inf") for p in self.answer_probability(queries)]
