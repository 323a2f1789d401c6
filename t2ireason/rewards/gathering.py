"""Several scorers' requests to one judge sent as one batch.

A combined reward scores each image with several metrics. Each metric's scoring code asks its judge in
rounds (a first turn, then re-asks, or T2I-ReasonBench's describe turn and then its question groups), so
running the metrics one after the other would pay the judge's latency once per metric and round, and give
a local judge smaller batches. :class:`Gathering` stands in for the shared judge: each metric scores in
its own thread, and a request batch waits until every metric still scoring has sent its own (or
finished); then all of them go to the judge in one ``chat`` (and one ``answer_probability``) call, and
each metric gets its own replies back, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..judges.base import AnswerQuery, ChatRequest, Judge, Reply

__all__ = ["Gathering"]


@dataclass
class _Call:
    kind: str  # "chat" or "answer_probability"
    items: list[Any]
    result: list[Any] | None = None
    error: BaseException | None = None
    done: bool = False


class Gathering:
    """``judge`` shared by ``parties`` scorers, each in its own thread, which must call :meth:`finished`
    when it is done (in a ``finally``): until then a call waits for the others' calls (or ends).

    Everything but the two gathered calls (``identity``, ``default_sampling``, ``model``...) is the
    judge's own. An exception of the judge (:class:`~t2ireason.judges.JudgeUnavailable`) reaches every
    scorer whose requests were in the batch."""

    def __init__(self, judge: Any, parties: int):
        if parties < 1:
            raise ValueError(f"a gathering needs at least one party, got {parties}")
        self.judge = judge
        self.batches = 0  # how many batches went to the judge (one per round of every scorer at once)
        self._running = parties
        self._waiting: list[_Call] = []
        self._cond = threading.Condition()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.judge, name)

    def chat(self, requests: Sequence[ChatRequest], *, progress: bool | str = False,
             on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        replies = self._gathered("chat", list(requests))
        if on_reply is not None:
            for i, reply in enumerate(replies):
                on_reply(i, reply)
        return replies

    def answer_probability(self, queries: Sequence[AnswerQuery], *, progress: bool | str = False) -> list[float]:
        return self._gathered("answer_probability", list(queries))

    yes_probability = Judge.yes_probability  # its queries gathered as answer_probability's

    def finished(self) -> None:
        """One scorer is done: the others no longer wait for it."""
        with self._cond:
            self._running -= 1
            batch = self._ready()
        if batch:
            self._ask(batch)

    # -- the batch ----------------------------------------------------------------------------------

    def _gathered(self, kind: str, items: list[Any]) -> list[Any]:
        if not items:
            return []
        call = _Call(kind, items)
        with self._cond:
            self._waiting.append(call)
            batch = self._ready()
        if batch:  # the last to arrive asks for everyone, outside the lock
            self._ask(batch)
        with self._cond:
            while not call.done:
                self._cond.wait()
        if call.error is not None:
            raise call.error
        return call.result  # type: ignore[return-value]  # set with done

    def _ready(self) -> list[_Call]:
        """The waiting calls, taken, once every scorer still running has one (called under the lock)."""
        if not self._waiting or len(self._waiting) < self._running:
            return []
        batch, self._waiting = self._waiting, []
        return batch

    def _ask(self, batch: list[_Call]) -> None:
        try:
            for kind in ("chat", "answer_probability"):
                calls = [c for c in batch if c.kind == kind]
                if not calls:
                    continue
                ask = self.judge.chat if kind == "chat" else self.judge.answer_probability
                answers = ask([item for c in calls for item in c.items])
                start = 0
                for c in calls:
                    c.result = list(answers[start:start + len(c.items)])
                    start += len(c.items)
            self.batches += 1
        except BaseException as e:  # every scorer in the batch hears of it
            for c in batch:
                if c.result is None:
                    c.error = e
        finally:
            with self._cond:
                for c in batch:
                    c.done = True
                self._cond.notify_all()
