"""A reward in a training loop (issue 32): what it adds to its judge, and how soon ``submit`` returns.

- ``submit_ms``: ``reward.submit(images, prompts)`` for a group of 64 tensors (64 x 3 x 512 x 512, float32 on
  the host), PRISM Score with an HTTP judge on 127.0.0.1 answering each request in 300 ms: the milliseconds
  until the call returns with its future (median of 7; the largest beside it). Target: under 5 ms.
- ``step_vs_client_ratio``: the same step scored, ``reward(images, prompts)`` from the tensors to the scores
  (the pixels quantised, read, 128 requests (two per image) PNG-encoded and sent at most 32 at once, the
  replies parsed), over the time the same requests take through the bare client, the HTTP judge's own
  ``chat`` at the same concurrency (the same pictures, as in-memory images made afresh each round, so that
  each round pays their encoding as the reward's does). The server runs in its own process. The median of
  the ratios of 9 rounds, each timing both in alternating order (each round's ratio, and the ratio of this
  process's CPU time, ``cpu_ratio``, which other processes on the machine do not move, beside it). Target:
  at most 1.2.
- ``step_vs_prepared_bodies_ratio``: the same step over a bare aiohttp client sending the same 128 request
  bodies made beforehand (a semaphore of 32, ``post``, ``json.loads``: what the transport allows, without
  the images' encoding). Reported, no target.
- ``local_overhead_ratio``: VQAScore of 8 float tensors (3 x 224 x 224) with a local judge of realistic
  proportions (``t2ireason.testing.BASE_VLM``: a LLaVA layout of 60.6M parameters, random weights, 256
  image tokens; CPU, one torch thread): the reward's call from the tensors over the judge's own
  ``yes_probability`` on the same pictures as PIL images, in this process's CPU time (``time.process_time``:
  other processes on the machine do not enter it; the wall ratio beside it). Median of the ratios of 5
  alternating rounds. Target: at most 1.1. ``local_overhead_ratio_tiny``: the same with the tests' tiny
  judge (68k parameters, 32 images of 256 px, 9 rounds), whose answers cost about 2.5 ms an image, so the
  reward's fixed cost per image (``added_cpu_ms_per_image``, printed with both) shows: reported, no target.

Every figure is printed, then ``targets_met``; the exit status is 1 when one missed its target.

    python perf/rewards.py [--only submit_ms,local_overhead_ratio]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from _http import _BareClient, _server  # noqa: E402
from _report import failed, figure, summary  # noqa: E402

from t2ireason import load_reward  # noqa: E402
from t2ireason.testing_http import Answer  # noqa: E402

TARGETS = {"submit_ms": ("<=", 5.0), "step_vs_client_ratio": ("<=", 1.2), "step_vs_prepared_bodies_ratio": None,
           "local_overhead_ratio": ("<=", 1.1), "local_overhead_ratio_tiny": None}
HTTP = ("submit_ms", "step_vs_client_ratio", "step_vs_prepared_bodies_ratio")
GROUP, SIDE, PROMPTS, IN_FLIGHT, LATENCY, ROUNDS = 64, 512, 8, 32, 0.3, 9
REPLY = '{"justification": "Everything asked for is there.", "score": 7}'


def pictures(n: int, side: int, seed: int = 0) -> torch.Tensor:
    """``n`` distinct smooth pictures with a little noise (PNG compresses them as it does generated images), as
    a float batch ``n x 3 x side x side`` in [0, 1], as a pipeline gives it."""
    g = torch.Generator().manual_seed(seed)
    y, x = torch.meshgrid(torch.linspace(0, 1, side), torch.linspace(0, 1, side), indexing="ij")
    phase = torch.rand(n, 3, 1, 1, generator=g) * 6.28
    waves = torch.stack([torch.sin(x * (2 + c) * 3.14 + phase[:, c]) * torch.cos(y * (3 - c) * 3.14) for c in range(3)], 1)
    return (0.5 + 0.45 * waves + 0.01 * torch.randn(n, 3, side, side, generator=g)).clamp(0, 1)


def _prompts(n: int) -> list[str]:
    return [f"a still life with {k + 2} red apples and a blue jug, seen from the left" for k in range(PROMPTS)
            for _ in range(n // PROMPTS)]


def http_figures() -> dict:
    """``submit_ms``, ``step_vs_client_ratio`` and ``step_vs_prepared_bodies_ratio`` against one server."""
    from t2ireason.benchmarks.prism_bench.protocol import GENERAL_TRACK, judge_requests
    from t2ireason.images import as_image, image_batch

    images, prompts = pictures(GROUP, SIDE), _prompts(GROUP)
    pixels = image_batch(images)
    with _server(behaviour=Answer(REPLY, delay=LATENCY)) as base_url:
        reward = load_reward("prism_score", judge=f"openai:test-model@{base_url}",
                             judge_kwargs={"max_concurrency": IN_FLIGHT}, max_in_flight=16)
        judge = reward.scorers[0].judge
        scores, info = reward(images, prompts)  # warm: the endpoint checked, connections open
        assert scores == [0.7] * GROUP and info["num_failed"] == 0, info["per_image"][0]["failure"]
        submits, waits = [], []
        for _ in range(7):
            start = time.perf_counter()
            future = reward.submit(images, prompts)
            submits.append((time.perf_counter() - start) * 1000)
            assert future.result()[0] == scores
            waits.append(time.perf_counter() - start)

        def requests():  # what the reward sends, about pictures made afresh: each round pays their encoding
            return [r for p, x in zip(prompts, pixels) for r in judge_requests(p, GENERAL_TRACK, as_image(x))]

        bodies = [judge._request_bytes(r, judge.resolve_sampling(r), False) for r in requests()]
        bare = _BareClient(base_url, IN_FLIGHT)
        bare.run(bodies[:IN_FLIGHT])
        step, client, plain, cpu = [], [], [], []

        def scored() -> tuple[float, float]:
            start, used = time.perf_counter(), time.process_time()
            assert reward(images, prompts)[0] == scores
            return time.perf_counter() - start, time.process_time() - used

        def asked() -> tuple[float, float]:
            requests_ = requests()
            start, used = time.perf_counter(), time.process_time()
            assert all(r.ok for r in judge.chat(requests_))
            return time.perf_counter() - start, time.process_time() - used

        for k in range(ROUNDS):  # each round both, in alternating order: a burst of load hits both alike
            (r, c) = (scored(), asked()) if k % 2 == 0 else reversed((asked(), scored()))
            step.append(r[0])
            client.append(c[0])
            cpu.append(r[1] / c[1])
            plain.append(bare.run(bodies))
        bare.close()
        reward.close()
    ideal = len(bodies) / IN_FLIGHT * LATENCY
    ratios = [a / b for a, b in zip(step, client)]
    times = {"step_s": statistics.median(step), "client_s": statistics.median(client),
             "prepared_bodies_s": statistics.median(plain), "ideal_s": ideal, "requests": len(bodies),
             "cpu_ratio": statistics.median(cpu), "rounds": ", ".join(f"{r:.2f}" for r in ratios)}
    return {"submit_ms": (statistics.median(submits), {"max_ms": max(submits), "future_done_s": statistics.median(waits)}),
            "step_vs_client_ratio": (statistics.median(ratios), times),
            "step_vs_prepared_bodies_ratio": (statistics.median(a / b for a, b in zip(step, plain)), {})}


def local_overhead_ratio(shape: str = "60m") -> tuple[float, dict]:
    """The reward's CPU time over its local judge's own, VQAScore of float tensors (see the module's docstring)."""
    from t2ireason import testing
    from t2ireason.images import as_image
    from t2ireason.judges import VQASCORE_QUESTION, load_judge

    torch.set_num_threads(1)
    vlm, n, side, repeats = (testing.BASE_VLM, 8, 224, 5) if shape == "60m" else (testing.TINY_VLM, 32, 256, 9)
    judge = load_judge(f"hf:{testing.build_vlm(Path(_HOME) / f'vlm-{shape}', vlm)}", device="cpu")
    images = pictures(n, side, seed=1)
    prompts = [f"a photo of object number {k} on a table" for k in range(n)]
    questions = [VQASCORE_QUESTION.format(prompt=p) for p in prompts]
    pil = [as_image(x).image for x in images]
    reward = load_reward("vqascore", judge=judge)
    assert reward(images, prompts)[0] == judge.yes_probability(pil, questions)  # the same pictures; warm

    def timed(fn):
        c, t = time.process_time(), time.perf_counter()
        fn()
        return time.process_time() - c, time.perf_counter() - t

    cpu, wall, judge_ms, added = [], [], [], []
    for _ in range(repeats):
        j = timed(lambda: judge.yes_probability(pil, questions))
        r = timed(lambda: reward(images, prompts))
        cpu.append(r[0] / j[0])
        wall.append(r[1] / j[1])
        judge_ms.append(j[0] * 1000)
        added.append((r[0] - j[0]) * 1000 / n)
    return statistics.median(cpu), {"wall": statistics.median(wall), "judge_cpu_ms": statistics.median(judge_ms),
                                    "added_cpu_ms_per_image": statistics.median(added), "images": n,
                                    "judge_parameters": f"{testing.vlm_parameters(vlm) / 1e6:.2f}M"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--only", default=",".join(TARGETS), help="comma-separated figures to measure")
    wanted = set(parser.parse_args(argv).only.split(","))
    if unknown := sorted(wanted - set(TARGETS)):
        parser.error(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    print(f"# {load}")
    met = True
    if wanted & set(HTTP):
        try:
            for name, (value, details) in http_figures().items():
                if name in wanted:
                    met &= figure(name, value, details, TARGETS[name])
        except Exception as e:  # noqa: BLE001 - reported as a missed figure, the others still measured
            for name in wanted & set(HTTP):
                met &= failed(name, e, TARGETS[name] or ("<=", float("inf")))
    for name, shape in (("local_overhead_ratio", "60m"), ("local_overhead_ratio_tiny", "tiny")):
        if name in wanted:
            try:
                value, details = local_overhead_ratio(shape)
                met &= figure(name, value, details, TARGETS[name])
            except Exception as e:  # noqa: BLE001
                met &= failed(name, e, TARGETS[name] or ("<=", float("inf")))
    return summary(met)


if __name__ == "__main__":
    sys.exit(main())
