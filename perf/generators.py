"""The image generators' figures (issue 31), one ``key=value`` line each.

- ``api_concurrency_efficiency``: 128 images from the ``openai:`` backend through ``generate`` (the path of
  ``t2ireason generate``: each image decoded, written as a PNG, recorded, the manifest at the end) against the
  local test server (``t2ireason.testing_http``, in its own process) answering each request after 200 ms with a
  64 px PNG as base64 (a small image: the server's own drawing of it would otherwise be measured), 16 requests
  in flight: the ideal wall time 128 / 16 x 0.2 s = 1.6 s over the measured one (target at least 0.8); beside
  it the backend alone (the same requests, the images decoded and dropped: no folder). The server's own count
  of requests in flight never exceeds 16.
- ``hf_overhead_ratio``: the tests' tiny Janus (``hf:<folder>``) drawing 12 images through ``generate``, over
  the same images drawn by the bare calls a script of one's own makes (the chat template, the processor in
  image mode, a seed, ``generate``, ``decode_image_tokens``, ``postprocess``, ``image.save``), the model
  loaded once for both (target at most 1.15).
- ``python_overhead_ratio``: a ``python:`` function taking 20 ms an image (batches of 4), drawing 48 images
  through ``generate``, over calling it and saving each image from a plain pool of 4 threads, as ``generate``
  saves (target at most 1.15; the same over a loop saving inline, ``.vs_bare_inline_saving``, beside it); beside it, as
  ``python_overhead_ratio.ms_per_image_added_to_a_free_function``, what ``generate`` adds per image to a
  function that costs nothing (a fresh folder, atomic PNG writes, the manifest) over saving its images.

Each figure is the median of interleaved repeats, so a burst of load from other processes hits both sides of
a ratio alike; every repeat writes into a fresh folder (a finished image would be skipped). A last line
``targets_met=<true|false>`` sums up; the exit status is 1 when a figure missed its target.

    python perf/generators.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Like the tests: never reach a hub, keep caches out of the user's home.
_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _http  # noqa: E402
from _report import failed, figure, summary  # noqa: E402

from t2ireason.generation import GenerationConfig, Job, generate, image_seed, load_generator  # noqa: E402
from t2ireason.testing_http import Images  # noqa: E402

N_API, API_IN_FLIGHT, LATENCY, API_SIDE = 128, 16, 0.2, 64
N_HF = 12
N_PY, PY_BATCH, PY_SECONDS = 48, 4, 0.02
WRITERS = 4  # generate's threads writing PNGs; the bare loop saves from a pool of as many
REPEATS = 5
#: figure -> (comparison, target)
TARGETS = {"api_concurrency_efficiency": (">=", 0.8), "hf_overhead_ratio": ("<=", 1.15),
           "python_overhead_ratio": ("<=", 1.15)}


def _jobs(n: int) -> list[Job]:
    return [Job(f"p{i}", f"a red cube left of a blue sphere, number {i}", 0, f"{i:03d}.png",
                image_seed("perf", f"p{i}", 0)) for i in range(n)]


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _fresh(root: Path):
    """A new empty folder under ``root`` at each call."""
    count = iter(range(10**6))
    return lambda: root / f"out{next(count)}"


def api_concurrency_efficiency() -> tuple[float, dict]:
    jobs = _jobs(N_API)
    with tempfile.TemporaryDirectory() as tmp, _http._server(behaviour=Images(delay=LATENCY), record=True) as url:
        fresh = _fresh(Path(tmp))
        config = GenerationConfig(model=f"openai:test-model@{url}", height=API_SIDE, width=API_SIDE)
        with load_generator(config, max_concurrency=API_IN_FLIGHT) as gen:
            generate(jobs[:API_IN_FLIGHT], config, fresh(), generator=gen, progress=False)  # warm up: check, connect
            times, draws = [], []
            for _ in range(REPEATS):
                times.append(_timed(lambda: generate(jobs, config, fresh(), generator=gen, progress=False)))
                draws.append(_timed(lambda: gen.draw(jobs, lambda job, drawn: None)))  # no folder: the backend alone
        stats = _http._stats(url)
    if stats["max_in_flight"] > API_IN_FLIGHT:
        raise RuntimeError(f"{stats['max_in_flight']} requests were in flight at once, more than {API_IN_FLIGHT}")
    ideal = N_API / API_IN_FLIGHT * LATENCY
    return ideal / statistics.median(times), {"ideal_seconds": ideal, "median_seconds": statistics.median(times),
                                              "backend_alone_efficiency": ideal / statistics.median(draws)}


def _bare_janus(gen, jobs: list[Job], out: Path) -> None:
    """What a script of one's own does with a Janus model: the documented transformers calls, then a save."""
    import torch

    out.mkdir(parents=True)
    for job in jobs:
        text = gen.processor.apply_chat_template([{"role": "user", "content": [{"type": "text", "text": job.prompt}]}],
                                                 add_generation_prompt=True)
        inputs = gen.processor(text=[text], generation_mode="image", return_tensors="pt")
        torch.manual_seed(job.seed)
        tokens = gen.model.generate(**inputs, generation_mode="image", do_sample=True, use_cache=True)
        pixels = gen.model.decode_image_tokens(tokens)
        image = gen.processor.postprocess(list(pixels.permute(0, 3, 1, 2).float()),
                                          return_tensors="PIL.Image.Image")["pixel_values"][0]
        image.save(out / job.file)


def hf_overhead_ratio() -> tuple[float, dict]:
    import torch

    from t2ireason.testing_families import build_tiny_janus

    torch.set_num_threads(1)
    folder = build_tiny_janus(Path(_HOME) / "janus")
    jobs = _jobs(N_HF)
    config = GenerationConfig(model=f"hf:{folder}")
    with tempfile.TemporaryDirectory() as tmp, load_generator(config, device="cpu") as gen:
        fresh = _fresh(Path(tmp))
        generate(jobs[:2], config, fresh(), generator=gen, progress=False)  # load and warm up
        ours, bare = [], []
        for _ in range(REPEATS):
            ours.append(_timed(lambda: generate(jobs, config, fresh(), generator=gen, progress=False)))
            bare.append(_timed(lambda: _bare_janus(gen, jobs, fresh())))
        parameters = sum(p.numel() for p in gen.model.parameters())
    return (statistics.median(ours) / statistics.median(bare),
            {"ms_per_image": statistics.median(ours) / N_HF * 1000,
             "bare_ms_per_image": statistics.median(bare) / N_HF * 1000, "parameters": parameters})


def _python_module(folder: Path) -> str:
    (folder / "perf_generator.py").write_text(
        "import time\nimport numpy as np\nfrom PIL import Image\n\n"
        "IMAGE = Image.fromarray(np.random.default_rng(0).integers(0, 255, (256, 256, 3), dtype=np.uint8))\n\n"
        "def slow(prompts, seeds):\n"
        f"    time.sleep({PY_SECONDS} * len(prompts))\n"
        "    return [IMAGE.copy() for _ in prompts]\n\n"
        "def free(prompts, seeds):\n"
        "    return [IMAGE.copy() for _ in prompts]\n")
    sys.path.insert(0, str(folder))
    return "perf_generator"


def _bare_python(fn, jobs: list[Job], out: Path, writers: int = WRITERS) -> None:
    """The loop a script of one's own writes: call the function a batch at a time and save each image, from a
    plain pool of ``writers`` threads (``generate``'s number) while the next batch draws, or inline (``0``)."""
    out.mkdir(parents=True)
    pool = ThreadPoolExecutor(writers) if writers else None
    saved = []
    try:
        for start in range(0, len(jobs), PY_BATCH):
            batch = jobs[start: start + PY_BATCH]
            for job, image in zip(batch, fn([j.prompt for j in batch], [j.seed for j in batch])):
                if pool is None:
                    image.save(out / job.file)
                else:
                    saved.append(pool.submit(image.save, out / job.file))
        for done in saved:
            done.result()
    finally:
        if pool is not None:
            pool.shutdown(wait=True)


def python_overhead() -> tuple[float, dict]:
    jobs = _jobs(N_PY)
    with tempfile.TemporaryDirectory() as tmp:
        module = _python_module(Path(tmp))
        fresh = _fresh(Path(tmp))
        results = {}
        for name in ("slow", "free"):
            config = GenerationConfig(model=f"python:{module}:{name}", batch_size=PY_BATCH)
            with load_generator(config) as gen:
                generate(jobs[:PY_BATCH], config, fresh(), generator=gen, progress=False)  # warm up
                ours, bare, inline = [], [], []
                for _ in range(REPEATS):  # the three sides in turn, so that load bends them alike
                    ours.append(_timed(lambda c=config, g=gen: generate(jobs, c, fresh(), generator=g, progress=False,
                                                                        writers=WRITERS)))
                    bare.append(_timed(lambda g=gen: _bare_python(g.fn, jobs, fresh())))
                    inline.append(_timed(lambda g=gen: _bare_python(g.fn, jobs, fresh(), writers=0)))
            results[name] = (statistics.median(ours), statistics.median(bare), statistics.median(inline))
    ours, bare, inline = results["slow"]
    free_ours, free_bare, _ = results["free"]
    return ours / bare, {"ms_per_image": ours / N_PY * 1000, "bare_ms_per_image": bare / N_PY * 1000,
                         "bare_inline_saving_ms_per_image": inline / N_PY * 1000, "vs_bare_inline_saving": ours / inline,
                         "ms_per_image_added_to_a_free_function": (free_ours - free_bare) / N_PY * 1000}


def main() -> int:
    met = True
    for name, measure in (("api_concurrency_efficiency", api_concurrency_efficiency),
                          ("hf_overhead_ratio", hf_overhead_ratio), ("python_overhead_ratio", python_overhead)):
        try:
            value, details = measure()
        except Exception as e:  # noqa: BLE001 - reported, and the other figures still measured
            met = failed(name, e, TARGETS[name])
            continue
        met &= figure(name, value, details, TARGETS[name])
    return summary(met)


if __name__ == "__main__":
    sys.exit(main())
