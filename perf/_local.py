"""Measurements of the local transformers judge on LLaVA-layout models built locally.

Each function builds (or reuses) its model under ``models_dir`` and returns one
ratio with its details; ``perf/judges.py`` prints them. The judge's figures are
this process's CPU time on one torch thread (``perf/judges.py`` pins it), the sides
alternated and repeated, the median of the rounds' ratios reported (:func:`alternating`),
so load from other processes cannot bend them; the wall ratio is printed beside.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from t2ireason import testing
from t2ireason.images import as_image
from t2ireason.judges import ChatRequest, Sampling, load_judge
from t2ireason.judges.transformers_judge import TransformersJudge

N_REQUESTS = 64
BATCH = 16
NEW_TOKENS = 16


def _images(n: int, height: int = 48, width: int = 64):
    rng = np.random.default_rng(0)
    return [as_image(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)) for _ in range(n)]


def _questions(n: int) -> list[str]:
    subjects = ["a red bus", "two cats on a sofa", "a lighthouse at night", "a bowl of ramen with chopsticks"]
    return [f'Does this figure show "{subjects[i % 4]}" (item {i})? Please answer yes or no.' for i in range(n)]


def _judge(models_dir: str | Path, **kw) -> TransformersJudge:
    vlm = testing.build_all(models_dir)["vlm"]
    return TransformersJudge(str(vlm), device="cpu", **kw)


def _cpu_and_wall(fn: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds of this process, every thread, and wall seconds) of ``fn()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def alternating(numerator: Callable[[], object], denominator: Callable[[], object], repeats: int,
                warm_up: bool = True) -> dict:
    """time(numerator) / time(denominator), each round timing both, the numerator first in even rounds and the
    denominator first in odd ones (neither always runs after the other), after one untimed run of each.

    ``ratio`` is the median of the rounds' ratios of this process's CPU time (on one torch thread what other
    processes do to a shared machine does not enter it), ``wall`` that of their wall times; ``rounds`` the CPU
    ratio of each round, ``numerator_s`` and ``denominator_s`` the median CPU seconds of each side. A side that
    took no measurable CPU time is an error, not a ratio of nan or infinity."""
    if warm_up:
        numerator(), denominator()
    cpu, wall, num_s, den_s = [], [], [], []
    for i in range(repeats):
        if i % 2 == 0:
            n, d = _cpu_and_wall(numerator), _cpu_and_wall(denominator)
        else:
            d = _cpu_and_wall(denominator)
            n = _cpu_and_wall(numerator)
        if n[0] <= 0 or d[0] <= 0:
            raise RuntimeError(f"a side took no measurable CPU time in round {i + 1} ({n[0]:.3g} s against "
                               f"{d[0]:.3g} s): too little work to time")
        cpu.append(n[0] / d[0])
        wall.append(n[1] / d[1])
        num_s.append(n[0])
        den_s.append(d[0])
    return {"ratio": statistics.median(cpu), "wall": statistics.median(wall),
            "rounds": ",".join(f"{r:.2f}" for r in cpu), "numerator_s": statistics.median(num_s),
            "denominator_s": statistics.median(den_s)}


def _interleaved_ratio(numerator: Callable[[], object], denominator: Callable[[], object], repeats: int) -> float:
    """Median over ``repeats`` of the wall time(numerator) / time(denominator), alternately after a warm-up
    (a wall-time figure: threads that run side by side, which CPU time cannot show)."""
    numerator(), denominator()
    ratios = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        numerator()
        t1 = time.perf_counter()
        denominator()
        t2 = time.perf_counter()
        ratios.append((t1 - t0) / (t2 - t1))
    return statistics.median(ratios)


def overhead_ratio(models_dir: str | Path, repeats: int = 7) -> dict:
    """CPU time of ``TransformersJudge.chat`` on 64 requests (no cache, batches of 16,
    16 new tokens each) over the same work written directly: a loop of
    ``processor.apply_chat_template`` + ``model.generate`` + decode over the same batches
    (:func:`alternating`: the wall ratio beside it)."""
    import torch

    judge = _judge(models_dir, batch_size=BATCH, sampling=Sampling(max_tokens=NEW_TOKENS),
                   generate_kwargs={"min_new_tokens": NEW_TOKENS})
    images, questions = _images(N_REQUESTS), _questions(N_REQUESTS)
    requests = [ChatRequest.simple(img, q) for img, q in zip(images, questions)]
    model, processor = judge.hf_model, judge.processor

    def direct():
        texts = []
        for start in range(0, N_REQUESTS, BATCH):
            conversations = [[{"role": "user", "content": [{"type": "image", "image": img.image},
                                                           {"type": "text", "text": q}]}]
                             for img, q in zip(images[start : start + BATCH], questions[start : start + BATCH])]
            enc = processor.apply_chat_template(conversations, add_generation_prompt=True, tokenize=True,
                                                return_dict=True, return_tensors="pt",
                                                processor_kwargs={"padding": True})
            with torch.inference_mode():
                out = model.generate(**enc, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False)
            texts += processor.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        return texts

    def via_judge():
        return [r.text for r in judge.chat(requests)]

    assert via_judge() == direct(), "the judge and the direct loop must do the same work"
    return alternating(via_judge, direct, repeats, warm_up=False)


@dataclass(frozen=True)
class BatchingSetup:
    """One ``batching_speedup_<size>`` figure: the judge's shape and the work timed."""

    shape: testing.VLMShape
    pairs: int
    image_px: tuple[int, int]  # (height, width) of the images given; the processor resizes them
    repeats: int


#: ``batching_speedup_<size>`` figures: the tests' toy judge (68k parameters) and a judge of
#: realistic proportions (60.6M parameters, 256 image tokens; 0.5 to 1 s a pair on this CPU).
BATCHING = {
    "toy": BatchingSetup(testing.TINY_VLM, pairs=N_REQUESTS, image_px=(48, 64), repeats=3),
    "60m": BatchingSetup(testing.BASE_VLM, pairs=BATCH, image_px=(512, 512), repeats=3),
}


def batching_speedup(models_dir: str | Path, size: str = "toy") -> dict:
    """Time to score P(Yes) for image-question pairs one at a time over the time in
    batches of 16 (the same model loaded twice through ``hf:<folder>``, teacher-forced,
    one forward pass per batch), with the judge of ``BATCHING[size]``.

    The first run of each judge (the warm-up) checks that batching leaves the scores as they
    are (equal to 1e-6, and 1e-4 relative); ``ratio`` is the median over the repeats after it.
    The model's folder is removed afterwards (the 60m judge's weights take 240 MB).
    """
    folder = Path(models_dir) / f"vlm-{size}"
    try:
        return _batching_speedup(testing.build_vlm(folder, BATCHING[size].shape), BATCHING[size])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _batching_speedup(folder: Path, setup: BatchingSetup) -> dict:
    import torch

    batched = load_judge(f"hf:{folder}", device="cpu", batch_size=BATCH)
    single = load_judge(f"hf:{folder}", device="cpu", batch_size=1)
    images, questions = _images(setup.pairs, *setup.image_px), _questions(setup.pairs)
    a = np.array(batched.yes_probability(images, questions))
    b = np.array(single.yes_probability(images, questions))
    for side, p in (("batched", a), ("one at a time", b)):
        if not np.all(np.isfinite(p)):  # nan would pass the comparison below and say nothing
            raise RuntimeError(f"the judge's P(Yes) {side} is not a finite number for {int(np.sum(~np.isfinite(p)))} "
                               f"of {len(p)} pairs: the random model's activations overflowed")
    abs_diff = float(np.max(np.abs(a - b)))
    rel_diff = float(np.max(np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))))
    if abs_diff > 1e-6 or rel_diff > 1e-4:
        raise RuntimeError(f"batching changed the probabilities: max difference {abs_diff:.3g} ({rel_diff:.3g} relative)")
    # the runs above were the warm-up; CPU time of this process, sides alternated
    r = alternating(lambda: single.yes_probability(images, questions),
                    lambda: batched.yes_probability(images, questions), setup.repeats, warm_up=False)
    return {"ratio": r["ratio"], "wall": r["wall"], "rounds": r["rounds"],
            "parameters": sum(p.numel() for p in batched.hf_model.parameters()),
            "image_tokens": setup.shape.image_tokens, "pairs": setup.pairs, "batch": BATCH,
            "single_cpu_ms_per_pair": 1000 * r["numerator_s"] / setup.pairs,
            "batched_cpu_ms_per_pair": 1000 * r["denominator_s"] / setup.pairs,
            "max_abs_diff": abs_diff, "torch_threads": torch.get_num_threads()}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print(f"overhead_ratio   {overhead_ratio(tmp)['ratio']:.3f}  (target <= 1.15)")
        for size in BATCHING:
            print(f"batching_speedup_{size} {batching_speedup(tmp, size)['ratio']:.2f}")


def decode_threads_speedup(models_dir: str | Path, n: int = 64, side: int = 512, repeats: int = 5) -> dict:
    """``load_images`` of ``n`` PNG files of ``side`` pixels (smooth pictures with some grain: they
    compress about as photographs do) on one thread over on its default threads (one per core, at
    most 8): the decoding and digests a judge's pairs wait for. Checks that the digests are equal."""
    import os

    from PIL import Image

    from t2ireason.images import load_images

    folder = Path(models_dir) / "pngs"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        base = Image.fromarray(rng.integers(0, 256, (side // 32, side // 32, 3), dtype=np.uint8))
        pixels = np.asarray(base.resize((side, side), Image.BICUBIC), dtype=np.int16)
        grain = rng.integers(-6, 7, pixels.shape)
        paths.append(folder / f"{i:03d}.png")
        Image.fromarray(np.clip(pixels + grain, 0, 255).astype(np.uint8)).save(paths[-1])
    serial = [x.digest for x in load_images(paths, workers=1)]
    if [x.digest for x in load_images(paths)] != serial:
        raise RuntimeError("threads decoded other pictures than one thread")
    ratio = _interleaved_ratio(lambda: load_images(paths, workers=1), lambda: load_images(paths), repeats)
    started = time.perf_counter()
    load_images(paths, workers=1)
    return {"ratio": ratio, "ms_an_image_one_thread": (time.perf_counter() - started) / n * 1000,
            "threads": min(8, os.cpu_count() or 1), "images": n, "side": side}
