"""How well the OpenAI-compatible judge keeps its requests in flight, side by side in one run.

Every figure runs against the local test server (``t2ireason.testing_http``) answering each
request in 100 ms, in its own process as a real server would be (in the judge's process it
would compete with the client for the GIL and the figure would measure the harness):

- ``concurrency_efficiency``: 256 text requests, at most 32 in flight. The ideal wall time is
  256 / 32 x 0.1 s = 0.8 s; the figure is ideal / measured (1.0 is perfect).
- ``image_concurrency_efficiency``: 64 distinct 1,024 x 1,024 PNG files (about 2 MB each, read
  with ``as_image`` as a metric reads generated images), 4 questions about each (256 requests),
  at most 16 in flight: ideal (1.6 s) / measured. Fresh image objects for every repeat, so each
  run pays for turning every image into request bytes. A bare aiohttp client sends the same bodies, made
  beforehand, in every round, the judge first in even rounds and the bare client first in odd ones; the
  CPU time of the client (this process) and of the server (its process) a request is printed for each side:
  what load on the machine cannot bend, where the wall-time efficiency moves with it.
- ``client_vs_bare_aiohttp_ratio``: the same 256 text requests (the same body bytes) sent by a
  bare ``aiohttp`` client (a semaphore, one session, ``post`` and ``json.loads``: the least any
  client must do) and by the judge, at 16 and at 32 in flight: the bare client's time over the
  judge's (1.0: the judge costs nothing over the bare client). The figure is the lower of the two.

Each figure is the median of interleaved repeats, so a burst of load from other processes
hits both sides of a ratio alike. Every reply is checked, and the server's own count of
requests in flight never exceeds the bound.

    python perf/_http.py
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from t2ireason.judges import ChatRequest
from t2ireason.judges.openai_judge import OpenAIJudge
from t2ireason.testing_http import Answer, serve

N_REQUESTS = 256
IN_FLIGHT = 32
LATENCY = 0.1
N_IMAGES = 64
QUESTIONS_PER_IMAGE = 4
IMAGE_SIDE = 1024
IMAGE_IN_FLIGHT = 16
MODEL = "test-model"


def _server_process(latency: float, conn, behaviour=None, record: bool = False) -> None:
    with serve(behaviour or Answer("Yes", delay=latency), record=record) as server:
        conn.send(server.base_url)
        conn.recv()  # until the parent says stop


@contextlib.contextmanager
def _server(latency: float = LATENCY, behaviour=None, record: bool = False):
    """The test server in its own process (answering ``Answer("Yes")`` after ``latency``, or ``behaviour``);
    yields its base URL."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_server_process, args=(latency, child, behaviour, record), daemon=True)
    proc.start()
    try:
        base_url = parent.recv()
        SERVER_PIDS[base_url] = proc.pid
        yield base_url
    finally:
        parent.send("stop")
        proc.join(timeout=10)


#: base URL -> process id of each server :func:`_server` started (its CPU time: :func:`_server_cpu`)
SERVER_PIDS: dict[str, int] = {}


def _server_cpu(base_url: str) -> float:
    """CPU seconds the server process has used so far."""
    import psutil

    times = psutil.Process(SERVER_PIDS[base_url]).cpu_times()
    return times.user + times.system


def _stats(base_url: str) -> dict:
    with urllib.request.urlopen(f"{base_url}/_stats") as resp:
        return json.load(resp)


def _check(replies, base_url: str, in_flight: int) -> None:
    stats = _stats(base_url)
    bad = sum(not getattr(r, "ok", r == "Yes") for r in replies)
    if bad or stats["max_in_flight"] > in_flight:
        raise RuntimeError(f"bad run: {bad} failures, max in flight {stats['max_in_flight']} > {in_flight}")


def _text_requests(n: int) -> list[ChatRequest]:
    return [ChatRequest.simple(f"question {i}") for i in range(n)]


def concurrency_efficiency(n: int = N_REQUESTS, in_flight: int = IN_FLIGHT, latency: float = LATENCY,
                           repeats: int = 5) -> float:
    """Ideal wall time over the median measured one, for ``n`` text requests at ``in_flight``."""
    with _server(latency) as base_url:
        requests = _text_requests(n)
        with OpenAIJudge(MODEL, base_url=base_url, max_concurrency=in_flight) as judge:
            judge.chat(requests[:in_flight])  # warm up: endpoint checked, connections opened, loop started
            times, replies = [], []
            for _ in range(repeats):
                start = time.perf_counter()
                replies += judge.chat(requests)
                times.append(time.perf_counter() - start)
        _check(replies, base_url, in_flight)
    return (n / in_flight * latency) / statistics.median(times)


def _write_images(folder: Path, n: int = N_IMAGES, side: int = IMAGE_SIDE) -> list[Path]:
    """``n`` distinct ``side`` px PNG files: smooth gradients under a little noise, which PNG
    compresses about as well as a generated picture (about 2 MB each at 1,024 px)."""
    import numpy as np
    from PIL import Image

    y, x = np.mgrid[0:side, 0:side]

    def one(k: int) -> Path:
        rng = np.random.default_rng(k)
        phase = rng.uniform(0, 2 * np.pi, 3)
        base = np.stack([127 + 120 * np.sin(x / side * (2 + c) + phase[c]) * np.cos(y / side * (3 - c))
                         for c in range(3)], -1)
        pixels = np.clip(base + rng.normal(0, 3, base.shape), 0, 255).astype(np.uint8)
        path = folder / f"image_{k:03d}.png"
        Image.fromarray(pixels).save(path, compress_level=1)
        return path

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:  # PIL encodes outside the GIL
        return list(pool.map(one, range(n)))


def _image_requests(paths: list[Path]) -> list[ChatRequest]:
    """Fresh image objects (nothing memoised from an earlier run), read as a metric reads them."""
    from t2ireason.images import as_image

    out = []
    for k, path in enumerate(paths):
        image = as_image(path)
        out += [ChatRequest.simple(image, f"Image {k}, question {q}: is the red cube left of the blue one?")
                for q in range(QUESTIONS_PER_IMAGE)]
    return out


def image_concurrency_efficiency(n_images: int = N_IMAGES, in_flight: int = IMAGE_IN_FLIGHT,
                                 latency: float = LATENCY, repeats: int = 5) -> dict:
    """Ideal wall time over the median measured one for 4 questions about each of ``n_images``
    1,024 px images read from PNG files, and a bare aiohttp client's efficiency on the same
    bodies, prepared beforehand (what the server and the transport allow)."""
    with tempfile.TemporaryDirectory() as tmp, _server(latency) as base_url:
        paths = _write_images(Path(tmp), n_images)
        n = n_images * QUESTIONS_PER_IMAGE
        ideal = n / in_flight * latency
        with OpenAIJudge(MODEL, base_url=base_url, max_concurrency=in_flight) as judge:
            judge.chat(_text_requests(in_flight))  # warm up
            bodies = [judge._request_bytes(r, judge.resolve_sampling(r), False) for r in _image_requests(paths)]
            bare = _BareClient(base_url, in_flight)
            sides = {"judge": [], "bare": []}  # (wall, client CPU, server CPU) seconds of each run
            replies: list = []
            load = os.getloadavg()[0]

            for i in range(repeats):  # the judge first in even rounds, the bare client first in odd ones
                for side in ("judge", "bare") if i % 2 == 0 else ("bare", "judge"):
                    requests = _image_requests(paths)  # fresh image objects: each run pays their encoding
                    cpu, server, start = time.process_time(), _server_cpu(base_url), time.perf_counter()
                    if side == "judge":
                        replies.extend(judge.chat(requests))
                    else:
                        bare.run(bodies, replies)
                    sides[side].append((time.perf_counter() - start, time.process_time() - cpu,
                                        _server_cpu(base_url) - server))
            bare.close()
        _check(replies, base_url, in_flight)
        mean_mb = sum(p.stat().st_size for p in paths) / len(paths) / 1e6
    return image_figures(sides, ideal, n) | {"ideal_seconds": ideal, "mean_file_mb": mean_mb,
                                             "load_average": f"{load:.1f} to {os.getloadavg()[0]:.1f}"}


def image_figures(sides: dict[str, list[tuple[float, float, float]]], ideal: float, n: int) -> dict:
    """The image figures from each run's (wall, client CPU, server CPU) seconds of each side (``judge``,
    ``bare``), rounds in the same order on both: the judge's efficiency (ideal over its median wall time) and the
    bare client's, the median of the rounds' wall ratios bare over judge, and the CPU each side's client and the
    server spent a request (milliseconds; what load does not bend), with the client CPU ratio judge over bare."""
    judge, bare = sides["judge"], sides["bare"]
    ms = lambda runs, k: statistics.median(r[k] for r in runs) / n * 1000  # noqa: E731
    return {"efficiency": ideal / statistics.median(r[0] for r in judge),
            "bare_aiohttp_efficiency": ideal / statistics.median(r[0] for r in bare),
            "vs_bare_aiohttp": statistics.median(b[0] / j[0] for j, b in zip(judge, bare)),
            "seconds": statistics.median(r[0] for r in judge),
            "client_cpu_ms_a_request": ms(judge, 1), "bare_client_cpu_ms_a_request": ms(bare, 1),
            "client_cpu_vs_bare": statistics.median(j[1] / b[1] for j, b in zip(judge, bare)),
            "server_cpu_ms_a_request": ms(judge, 2), "server_cpu_ms_a_request_bare": ms(bare, 2)}


class _BareClient:
    """The least an HTTP client must do: one aiohttp session, a semaphore, ``post`` the body
    bytes, read and ``json.loads`` the reply. Runs on its own event loop in this thread."""

    def __init__(self, base_url: str, in_flight: int):
        import aiohttp

        self.url = f"{base_url}/chat/completions"
        self.in_flight = in_flight
        self.loop = asyncio.new_event_loop()

        async def session():
            return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight),
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": "Bearer EMPTY"})

        self.session = self.loop.run_until_complete(session())

    def run(self, bodies: list[bytes], out: list | None = None) -> float:
        """Seconds to send every body and read every reply (appended to ``out``)."""

        async def run_all():
            slots = asyncio.Semaphore(self.in_flight)

            async def one(body: bytes) -> str:
                async with slots, self.session.post(self.url, data=body) as resp:
                    data = json.loads(await resp.read())
                return data["choices"][0]["message"]["content"]

            return await asyncio.gather(*(one(b) for b in bodies))

        start = time.perf_counter()
        texts = self.loop.run_until_complete(run_all())
        elapsed = time.perf_counter() - start
        if out is not None:
            out += texts
        return elapsed

    def close(self) -> None:
        self.loop.run_until_complete(self.session.close())
        self.loop.close()


def client_vs_bare_aiohttp_ratio(n: int = N_REQUESTS, in_flights: tuple[int, ...] = (16, 32),
                                 latency: float = LATENCY, repeats: int = 7) -> dict:
    """Per ``in_flight``: the bare aiohttp client's median time over the judge's, for the same
    ``n`` text requests (the same body bytes), repeats interleaved; ``ratio`` is the lowest."""
    out: dict = {}
    with _server(latency) as base_url:
        requests = _text_requests(n)
        for in_flight in in_flights:
            with OpenAIJudge(MODEL, base_url=base_url, max_concurrency=in_flight) as judge:
                bodies = [judge._request_bytes(r, judge.resolve_sampling(r), False) for r in requests]
                bare = _BareClient(base_url, in_flight)
                judge.chat(requests[:in_flight])
                bare.run(bodies[:in_flight])  # both warm
                judge_times, bare_times, replies = [], [], []
                for _ in range(repeats):
                    start = time.perf_counter()
                    replies += judge.chat(requests)
                    judge_times.append(time.perf_counter() - start)
                    bare_times.append(bare.run(bodies, replies))
                bare.close()
            _check(replies, base_url, in_flight)
            ideal = n / in_flight * latency
            out[f"at{in_flight}"] = statistics.median(bare_times) / statistics.median(judge_times)
            out[f"judge_efficiency_at{in_flight}"] = ideal / statistics.median(judge_times)
            out[f"bare_efficiency_at{in_flight}"] = ideal / statistics.median(bare_times)
    out["ratio"] = min(out[f"at{k}"] for k in in_flights)
    return out


if __name__ == "__main__":
    load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    print(f"concurrency_efficiency={concurrency_efficiency():.3f} ({load})")
    images = image_concurrency_efficiency()
    print(f"image_concurrency_efficiency={images['efficiency']:.3f} (bare aiohttp "
          f"{images['bare_aiohttp_efficiency']:.3f}; {load})")
    ratio = client_vs_bare_aiohttp_ratio()
    print(f"client_vs_bare_aiohttp_ratio={ratio['ratio']:.3f} ({ratio}; {load})")
