"""How well the OpenAI-compatible judge keeps its requests in flight.

256 requests at most 32 in flight against the local test server, which answers
each in 100 ms: the ideal wall time is 256 / 32 x 0.1 s = 0.8 s. The figure is
ideal / measured (1.0 is perfect; the target is at least 0.8).

    python perf/_http.py
"""

from __future__ import annotations

import time

from t2ireason.judges import ChatRequest
from t2ireason.judges.openai_judge import OpenAIJudge
from t2ireason.testing_http import Answer, serve

N_REQUESTS = 256
IN_FLIGHT = 32
LATENCY = 0.1


def concurrency_efficiency(n: int = N_REQUESTS, in_flight: int = IN_FLIGHT, latency: float = LATENCY) -> float:
    """Ideal wall time divided by the measured one, for ``n`` requests at ``in_flight``."""
    requests = [ChatRequest.simple(f"question {i}") for i in range(n)]
    with serve(Answer("Yes", delay=latency)) as server, \
            OpenAIJudge("perf-model", base_url=server.base_url, max_concurrency=in_flight) as judge:
        judge.chat(requests[:in_flight])  # warm up: connections opened, loop started
        start = time.perf_counter()
        replies = judge.chat(requests)
        elapsed = time.perf_counter() - start
    if not all(r.ok for r in replies) or server.max_in_flight > in_flight:
        raise RuntimeError(f"bad run: {sum(not r.ok for r in replies)} failures, "
                           f"max in flight {server.max_in_flight} > {in_flight}")
    return (n / in_flight * latency) / elapsed


if __name__ == "__main__":
    print(f"concurrency efficiency: {concurrency_efficiency():.3f} "
          f"({N_REQUESTS} requests, {IN_FLIGHT} in flight, {LATENCY * 1000:.0f} ms each; target >= 0.8)")
