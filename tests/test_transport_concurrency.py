"""The requests a transport keeps in flight (issue 34, item 8): halved when the server times out or says
it is busy, once a round, raised again as it answers; slots handed out in order, a cancelled waiter
skipped, a slot handed to a waiter cancelled before it ran passed on."""

from __future__ import annotations

import asyncio
import concurrent.futures

from t2ireason.testing_http import Answer, serve
from t2ireason.transport.concurrency import AdaptiveLimit


def _run(coroutine):
    """``asyncio.run`` in a thread of its own: in a whole-suite run the browser tests' playwright leaves an
    event loop running in the main thread, where ``asyncio.run`` refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_slots_go_in_order_and_cancelled_waiters_lose_none():
    async def scenario():
        limit = AdaptiveLimit(1, "test")
        await limit.acquire()
        got = []

        async def wait(name):
            await limit.acquire()
            got.append(name)

        b, c, d = (asyncio.ensure_future(wait(n)) for n in "bcd")
        await asyncio.sleep(0)
        b.cancel()  # cancelled while queued, and the slot freed before it ran again: skipped
        limit.release(0, "answered")
        await asyncio.sleep(0)
        assert got == ["c"] and limit.in_use == 1 and b.cancelled()  # its cancellation, no other error
        limit.release(0, "answered")  # handed to d...
        d.cancel()  # ...which is cancelled before it runs: the slot is free again
        await asyncio.gather(b, d, return_exceptions=True)
        assert b.cancelled() and d.cancelled() and limit.in_use == 0
        await limit.acquire()  # not queued behind the cancelled waiters
        assert limit.in_use == 1 and got == ["c"]

    _run(scenario())


def test_a_cut_comes_once_a_round_and_answers_raise_the_limit_again():
    limit = AdaptiveLimit(8, "test")
    rounds = [_run(limit.acquire()) for _ in range(8)]
    for r in rounds:  # eight requests of one round time out: one cut
        limit.release(r, "busy", "timed out")
    assert (limit.limit, limit.cuts, limit.lowest) == (4, 1, 4)
    limit.release(_run(limit.acquire()), "failed")  # a failure of another kind says nothing of load
    assert limit.limit == 4
    for _ in range(4):
        limit.release(_run(limit.acquire()), "answered")
    assert limit.limit == 5 and limit.record() == {"max_concurrency": 8, "lowest": 4, "now": 5, "cuts": 1}
    assert AdaptiveLimit(8).record() is None  # never cut: nothing to record


def test_busy_statuses_cut_the_limit_once_a_round_and_answers_raise_it_again():
    from t2ireason.judges import ChatRequest
    from t2ireason.judges.openai_judge import OpenAIJudge
    from t2ireason.testing_http import Fail

    busy = lambda r: Fail(503, "overloaded") if r.attempt == 0 else Answer("ok")  # noqa: E731 - then answered
    with serve(busy) as server, OpenAIJudge("test-model", base_url=server.base_url, max_concurrency=8,
                                            backoff_base=0.01, backoff_max=0.02) as judge:
        replies = judge.chat([ChatRequest.simple(f"q{i}") for i in range(8)])
        assert all(r.ok for r in replies)
        record = judge.concurrency_record()  # 8 busy at once: one cut; their 8 answers then raise it again
        assert record == {"max_concurrency": 8, "lowest": 4, "now": 5, "cuts": 1}
        judge.chat([ChatRequest.simple(f"more {i}") for i in range(40)])
        assert judge.concurrency_record()["now"] == 8  # grown back, one more after as many answers as allowed
    with serve() as server, OpenAIJudge("test-model", base_url=server.base_url) as judge:
        judge.chat([ChatRequest.simple("q")])
        assert judge.concurrency_record() is None


