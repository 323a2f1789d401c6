"""How well the OpenAI-compatible judge keeps its requests in flight.

256 requests at most 32 in flight against the local test server
(``t2ireason.testing_http``), which answers each in 100 ms: the ideal wall time
is 256 / 32 x 0.1 s = 0.8 s. The figure is ideal / measured (1.0 is perfect;
the target is at least 0.8).

The server runs in its own process, as a real one would: in the judge's process
it would compete with the client for the GIL and the figure would measure the
harness rather than the judge.

    python perf/_http.py
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import time
import urllib.request

from t2ireason.judges import ChatRequest
from t2ireason.judges.openai_judge import OpenAIJudge
from t2ireason.testing_http import Answer, serve

N_REQUESTS = 256
IN_FLIGHT = 32
LATENCY = 0.1


def _server_process(latency: float, conn) -> None:
    with serve(Answer("Yes", delay=latency)) as server:
        conn.send(server.base_url)
        conn.recv()  # until the parent says stop


def concurrency_efficiency(n: int = N_REQUESTS, in_flight: int = IN_FLIGHT, latency: float = LATENCY,
                           repeats: int = 5) -> float:
    """Ideal wall time divided by the measured one, for ``n`` requests at ``in_flight``:
    the median over ``repeats`` runs of the same judge (as for the other figures, so a
    burst of load from other processes does not decide the figure)."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_server_process, args=(latency, child), daemon=True)
    proc.start()
    try:
        base_url = parent.recv()
        requests = [ChatRequest.simple(f"question {i}") for i in range(n)]
        with OpenAIJudge("perf-model", base_url=base_url, max_concurrency=in_flight) as judge:
            judge.chat(requests[:in_flight])  # warm up: connections opened, loop started
            times, replies = [], []
            for _ in range(repeats):
                start = time.perf_counter()
                replies += judge.chat(requests)
                times.append(time.perf_counter() - start)
        with urllib.request.urlopen(f"{base_url}/_stats") as resp:
            stats = json.load(resp)
    finally:
        parent.send("stop")
        proc.join(timeout=10)
    if not all(r.ok for r in replies) or stats["max_in_flight"] > in_flight:
        raise RuntimeError(f"bad run: {sum(not r.ok for r in replies)} failures, "
                           f"max in flight {stats['max_in_flight']} > {in_flight}")
    return (n / in_flight * latency) / statistics.median(times)


if __name__ == "__main__":
    eff = concurrency_efficiency()
    print(f"concurrency efficiency: {eff:.3f} ({N_REQUESTS} requests, {IN_FLIGHT} in flight, "
          f"{LATENCY * 1000:.0f} ms each; target >= 0.8; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores)")
