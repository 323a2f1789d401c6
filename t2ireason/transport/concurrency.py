"""How many requests a transport keeps on the wire: ``max_concurrency`` at most, fewer while the server
is overwhelmed.

A server that answers fewer requests at once than it is sent queues the rest; their time in its queue
counts against the client's ``timeout``, so past some point every request times out, and each retry
adds to the queue (a server that answers one request at a time, sent 64, scores nothing). The limit
therefore adapts as TCP's congestion window does (additive increase, multiplicative decrease): halved
when a request times out or the server says it is busy (HTTP 429, 503), once per round of requests
(a request sent before the last cut does not cut again), and raised by one after as many answers in a
row as the limit, back up to ``max_concurrency``. Each cut is one log line; :meth:`AdaptiveLimit.record`
says what was done, for the run's record.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

__all__ = ["AdaptiveLimit", "BUSY_STATUSES"]

logger = logging.getLogger(__name__)

#: the statuses by which a server says it has more than it can answer now
BUSY_STATUSES = (429, 503)


class AdaptiveLimit:
    """At most :attr:`limit` holders at once, ``limit`` between 1 and ``ceiling`` (see the module).
    Lives on one event loop; waiters get their slot in arrival order."""

    def __init__(self, ceiling: int, name: str = "transport"):
        self.ceiling = ceiling
        #: holders allowed now
        self.limit = ceiling
        self.name = name
        self.in_use = 0
        #: the lowest limit reached, and how many times it was cut
        self.lowest = ceiling
        self.cuts = 0
        self._answered = 0  # answers since the limit last changed
        self._round = 0  # counts the cuts: a failure of a request sent before the last cut does not cut again
        self._waiters: collections.deque[asyncio.Future] = collections.deque()

    async def acquire(self) -> int:
        """Wait for a slot; the round it was given in (for :meth:`release`)."""
        self._wake()  # drops the waiters cancelled meanwhile
        if self.in_use < self.limit and not self._waiters:
            self.in_use += 1
            return self._round
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # the slot is taken for us before we are woken
        except asyncio.CancelledError:
            # cancelled while queued: the waiter is cancelled too, and skipped (never removed here: a
            # batch cancelling thousands of waiters would cost the square of their number)
            if waiter.done() and not waiter.cancelled():  # handed a slot, then cancelled: pass it on
                self.in_use -= 1
                self._wake()
            raise
        return self._round

    def release(self, round_: int, outcome: str, why: str = "") -> None:
        """Give the slot of a request sent in ``round_`` back: ``outcome`` is ``"answered"``, ``"busy"``
        (it timed out, or the server said it is busy: ``why`` says which) or ``"failed"`` (another failure,
        which says nothing of the server's load)."""
        self.in_use -= 1
        if outcome == "busy" and round_ == self._round and self.limit > 1:
            before, self.limit = self.limit, max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            self.cuts += 1
            self._round += 1
            self._answered = 0
            logger.warning("%s: %s; at most %d requests in flight now (was %d), more again as answers come",
                           self.name, why, self.limit, before)
        elif outcome == "answered" and self.limit < self.ceiling:
            self._answered += 1
            if self._answered >= self.limit:
                self.limit += 1
                self._answered = 0
                if self.limit == self.ceiling:
                    logger.info("%s: answering again; back to %d requests in flight", self.name, self.ceiling)
        self._wake()

    def _wake(self) -> None:
        """Free slots to the first waiters, in order; cancelled waiters at the head dropped."""
        while self._waiters and (self.in_use < self.limit or self._waiters[0].done()):
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_use += 1
                waiter.set_result(None)

    def record(self) -> dict[str, Any] | None:
        """What was done, for a run's record: None when the limit was never cut."""
        if not self.cuts:
            return None
        return {"max_concurrency": self.ceiling, "lowest": self.lowest, "now": self.limit, "cuts": self.cuts}
