"""The same questions asked of a sampled judge again (``evaluate --repeats K``), to measure its own noise.

:class:`RepeatedJudge` marks every request it passes on as repeat ``k`` (:attr:`ChatRequest.repeat`): a request
of its own, with a key of its own in the response cache and the evaluation's reply journal, so that each repeat
is counted, kept and resumed like any other request and never bought twice, while repeat 0 is exactly the
request a plain evaluation asks (the same cache entry). A greedy judge (temperature 0) would give the same reply
each time: it is refused, needing no repeats. A seeded sampling is offset by ``k`` (the same seed would replay
the same draw).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .base import ChatRequest, Reply, Sampling
from .stored import StoredJudge

__all__ = ["RepeatedJudge", "GreedyJudgeError", "check_sampled"]


class GreedyJudgeError(ValueError):
    """Repeats asked of a judge that samples nothing: every repeat would be the same reply."""


def check_sampled(sampling: Sampling, where: str = "the judge") -> None:
    """Refuse repeats of a greedy judge, naming why."""
    if sampling.temperature == 0:
        raise GreedyJudgeError(f"{where} is greedy (temperature 0): asked again it gives the same reply, so it needs "
                               "no repeats; --repeats measures a sampled judge's noise (a preset that samples, or "
                               "sampling with a temperature above 0)")


class RepeatedJudge(StoredJudge):
    """``judge`` asked each request as its ``k``-th repeat (``k`` >= 1)."""

    def __init__(self, judge: Any, k: int):
        if k < 1:
            raise ValueError(f"a repeat is the 1st or later asking again, got {k}")
        super().__init__(judge)
        self.k = k

    def __repr__(self) -> str:
        return f"RepeatedJudge({self.judge!r}, k={self.k})"

    def _tag(self, request: ChatRequest) -> ChatRequest:
        sampling = self.resolve_sampling(request)
        check_sampled(sampling, f"judge {self.model}")
        if sampling.seed is not None:
            return dataclasses.replace(request, repeat=self.k, sampling=sampling.replace(seed=sampling.seed + self.k))
        return dataclasses.replace(request, repeat=self.k)

    def chat(self, requests: Sequence[ChatRequest], *, progress: bool | str = False,
             on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        tagged = [self._tag(r) for r in requests]
        if self._accepts_on_reply:
            return self.judge.chat(tagged, progress=progress, on_reply=on_reply)
        replies = self.judge.chat(tagged)
        for i, reply in enumerate(replies if on_reply is not None else ()):
            on_reply(i, reply)
        return replies

    def reject(self, requests: Sequence[ChatRequest], replies: Sequence[Reply]) -> None:
        """Passed down as the repeat's requests: a store forgets the repeat's reply, never repeat 0's."""
        super().reject([self._tag(r) for r in requests], replies)
