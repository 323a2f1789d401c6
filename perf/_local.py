"""Measurements of the local transformers judge on the tiny LLaVA-layout model.

Each function builds (or reuses) the tiny models under ``models_dir`` and returns
one ratio; ``perf/judges.py`` prints them. Timings are interleaved and repeated,
and the median ratio is reported, so load from other processes affects both
sides alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from t2ireason import testing
from t2ireason.images import as_image
from t2ireason.judges import ChatRequest, Sampling
from t2ireason.judges.transformers_judge import TransformersJudge

N_REQUESTS = 64
BATCH = 16
NEW_TOKENS = 16


def _images(n: int):
    rng = np.random.default_rng(0)
    return [as_image(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)) for _ in range(n)]


def _questions(n: int) -> list[str]:
    subjects = ["a red bus", "two cats on a sofa", "a lighthouse at night", "a bowl of ramen with chopsticks"]
    return [f'Does this figure show "{subjects[i % 4]}" (item {i})? Please answer yes or no.' for i in range(n)]


def _judge(models_dir: str | Path, **kw) -> TransformersJudge:
    vlm = testing.build_all(models_dir)["vlm"]
    return TransformersJudge(str(vlm), device="cpu", **kw)


def _interleaved_ratio(numerator: Callable[[], object], denominator: Callable[[], object], repeats: int) -> float:
    """Median over ``repeats`` of time(numerator) / time(denominator), run alternately after a warm-up."""
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


def overhead_ratio(models_dir: str | Path, repeats: int = 7) -> float:
    """Wall time of ``TransformersJudge.chat`` on 64 requests (no cache, batches of 16,
    16 new tokens each) over the same work written directly: a loop of
    ``processor.apply_chat_template`` + ``model.generate`` + decode over the same batches."""
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
    return _interleaved_ratio(via_judge, direct, repeats)


def batching_speedup(models_dir: str | Path, repeats: int = 3) -> float:
    """Time to score P(Yes) for 64 image-question pairs one at a time over the
    time in batches of 16 (the same judge, teacher-forced, one forward pass per batch)."""
    batched = _judge(models_dir, batch_size=BATCH)
    single = _judge(models_dir, batch_size=1)
    images, questions = _images(N_REQUESTS), _questions(N_REQUESTS)
    a, b = batched.yes_probability(images, questions), single.yes_probability(images, questions)
    assert np.allclose(a, b, rtol=1e-4), "batching must not change the probabilities"
    return _interleaved_ratio(lambda: single.yes_probability(images, questions),
                              lambda: batched.yes_probability(images, questions), repeats)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print(f"overhead_ratio   {overhead_ratio(tmp):.3f}  (target <= 1.15)")
        print(f"batching_speedup {batching_speedup(tmp):.2f}  (target >= 3)")
