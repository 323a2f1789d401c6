"""A bounded prefetch: the next batches are prepared in one background thread while the
caller works on the current one.

A local judge spends a batch's wall time in two places: the CPU (images resized, the chat
template rendered, the processor run) and the accelerator (``generate``). Run one after the
other, the accelerator idles while the CPU works; :func:`prefetched` overlaps them. The order
of the batches is kept, at most ``depth`` batches wait prepared, and the thread never outlives
the loop (it is joined when the loop ends, however it ends).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["prefetched"]

T = TypeVar("T")


def prefetched(items: Iterable[T], prepare: Callable[[T], Any], *, depth: int = 1,
               name: str = "prefetch") -> Iterator[tuple[T, Future]]:
    """``(item, future of prepare(item))`` for each item, in order, with up to ``depth`` items
    beyond the current one prepared meanwhile in one background thread.

    ``future.result()`` gives the prepared value or raises what ``prepare`` raised, so the caller
    handles a failed preparation where it would have handled it inline, when it reaches that
    item (the items before it are finished first). ``depth=0`` prepares inline, in the caller's
    thread, when each item is reached. Closing the generator (a ``break``, an exception in the
    caller's loop) cancels what has not started and waits for what has.
    """
    if depth < 0:
        raise ValueError(f"prefetch depth must be >= 0, got {depth}")
    if depth == 0:
        for item in items:
            done: Future = Future()
            try:
                done.set_result(prepare(item))
            except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
                done.set_exception(e)
            yield item, done
        return
    pending: deque[tuple[T, Future]] = deque()
    source = iter(items)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    try:
        for item in source:
            pending.append((item, pool.submit(prepare, item)))
            if len(pending) > depth:
                yield pending.popleft()
        while pending:
            yield pending.popleft()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
