"""What a fully cached re-run costs next to the first run.

A benchmark pass asks 4 questions about each of 64 generated images (512x512)
through the OpenAI-compatible judge, 16 requests in flight, against the local
test server answering each in 500 ms (a short judge reply from a served VLM).
The first run goes through an empty response cache; the re-run, with fresh
image objects (so every content digest is computed again, as in a new process)
and a fresh :class:`CachedJudge`, must not reach the server at all. The figure
is re-run time / first-run time (the target is at most 0.03).

    python perf/_cache.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from t2ireason.images import JudgeImage
from t2ireason.judges import ChatRequest
from t2ireason.judges.cache import CachedJudge
from t2ireason.judges.openai_judge import OpenAIJudge
from t2ireason.testing_http import Answer, serve

N_IMAGES = 64
QUESTIONS_PER_IMAGE = 4
SIDE = 512
IN_FLIGHT = 16
LATENCY = 0.5


def _requests(pictures: list[Image.Image]) -> list[ChatRequest]:
    """Fresh JudgeImage objects each time: digests are not carried over between runs."""
    out = []
    for k, picture in enumerate(pictures):
        image = JudgeImage(picture)
        out += [ChatRequest.simple(image, f"Image {k}, question {q}: is the red cube on the left? "
                                   'Answer with JSON {"answer": "yes" | "no"}.')
                for q in range(QUESTIONS_PER_IMAGE)]
    return out


def _run(server, path: Path, pictures: list[Image.Image]) -> tuple[float, CachedJudge]:
    with OpenAIJudge("test-model", base_url=server.base_url, api_key="sk-perf",
                     max_concurrency=IN_FLIGHT) as inner:
        judge = CachedJudge(inner, path)
        start = time.perf_counter()
        replies = judge.chat(_requests(pictures))
        elapsed = time.perf_counter() - start
        judge.store.close()
    if not all(r.ok for r in replies):
        raise RuntimeError(f"{sum(not r.ok for r in replies)} requests failed")
    return elapsed, judge


def cached_rerun_ratio(n_images: int = N_IMAGES, latency: float = LATENCY) -> dict:
    """Time of a fully cached re-run over that of the first run, and how many requests
    reached the backend during the re-run (must be 0)."""
    rng = np.random.default_rng(0)
    pictures = [Image.fromarray(rng.integers(0, 256, (SIDE, SIDE, 3), dtype=np.uint8)) for _ in range(n_images)]
    with tempfile.TemporaryDirectory() as tmp, serve(Answer('{"answer": "yes"}', delay=latency)) as server:
        path = Path(tmp) / "judge_cache.sqlite"
        first, cold = _run(server, path, pictures)
        asked_first = len(server.requests)
        rerun, warm = _run(server, path, pictures)
        asked_rerun = len(server.requests) - asked_first
    n = n_images * QUESTIONS_PER_IMAGE
    if cold.misses != n or warm.hits != n:
        raise RuntimeError(f"bad run: first {cold.stats()}, re-run {warm.stats()}")
    return {"ratio": rerun / first, "first_s": first, "rerun_s": rerun, "requests": n,
            "backend_calls_first": asked_first, "backend_calls_rerun": asked_rerun,
            "rerun_ms_per_request": 1000 * rerun / n}


if __name__ == "__main__":
    r = cached_rerun_ratio()
    print(f"cached re-run ratio: {r['ratio']:.4f} (target <= 0.03): first run {r['first_s']:.2f} s, "
          f"re-run {r['rerun_s']:.3f} s ({r['rerun_ms_per_request']:.2f} ms per request), "
          f"{r['requests']} requests, backend calls during the re-run: {r['backend_calls_rerun']}")
