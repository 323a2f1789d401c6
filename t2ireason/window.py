"""Chunks of scoring in a rolling window: several in flight at once, each handed back as soon as it is done.

An evaluation saves its results a chunk at a time (a resumed run starts after the last chunk saved).
Scored one after the other, the chunks would cap an HTTP judge's concurrency at one chunk's requests
(``max_concurrency`` 64 with chunks of 32 images: 32 in flight), and each chunk would wait for its
slowest request while the judge's other slots stay empty. In a window, the next chunks' requests fill
those slots while a chunk finishes: the judge's concurrency stays full across chunk boundaries, and
chunks only say where results are saved.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from .console import TICK

__all__ = ["window_width", "in_window"]

C = TypeVar("C")
R = TypeVar("R")
_END: Any = object()  # no chunk left


def window_width(judge: Any, chunk_size: int) -> int:
    """How many chunks to keep in flight for ``judge``: enough for its ``max_concurrency`` requests, and
    one more so that the slots a finishing chunk leaves are taken at once; 1 for a judge that answers
    one batch at a time (a local model, a scripted judge: no ``max_concurrency``)."""
    concurrency = getattr(judge, "max_concurrency", None)
    if not isinstance(concurrency, int) or concurrency <= 1:
        return 1
    return -(-concurrency // chunk_size) + 1


def in_window(work: Callable[[C], R], chunks: Iterable[C], width: int) -> Iterator[tuple[C, R]]:
    """``(chunk, work(chunk))`` for every chunk, in the order they finish, ``width`` chunks worked on at
    once in threads (``width`` 1: one after the other, in this thread). The first chunk whose work
    raises stops new chunks from starting; those in flight are finished and handed back (finished work
    is kept), then its exception is raised. An interruption (Ctrl-C) leaves at once: the chunks in
    flight end with their judge, when the caller closes it."""
    if width <= 1:
        for chunk in chunks:
            yield chunk, work(chunk)
        return
    pool = concurrent.futures.ThreadPoolExecutor(width, thread_name_prefix="t2ireason-chunk")
    todo = iter(chunks)
    pending: dict[concurrent.futures.Future, C] = {}
    failure: BaseException | None = None
    try:
        while True:
            while failure is None and len(pending) < width:
                chunk = next(todo, _END)
                if chunk is _END:
                    break
                pending[pool.submit(work, chunk)] = chunk
            if not pending:
                break
            finished = set()
            while not finished:  # in ticks: a Ctrl-C the kernel gave another thread is raised here within one
                finished, _ = concurrent.futures.wait(pending, timeout=TICK,
                                                      return_when=concurrent.futures.FIRST_COMPLETED)
            for future in finished:
                chunk = pending.pop(future)
                if future.exception() is not None:
                    failure = failure or future.exception()
                    continue
                yield chunk, future.result()
        if failure is not None:
            raise failure
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # never waits here for a judge that is not closed yet
