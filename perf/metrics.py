"""What the evaluate module adds on top of the judge it calls.

VQAScore of 32 generated images (256x256 PIL images) with the tiny local VLM
judge (``t2ireason.testing``), loaded through ``evaluate.load("metrics/vqascore")``.
The figure is the time of ``compute`` divided by the time of the judge call
alone (``judge.yes_probability`` on the same images and questions); the target
is at most 1.15. Both run in this process on one torch thread, so the time is
the process's CPU time (``time.process_time``): what other processes do to a
shared machine does not enter it (the wall-clock ratio is printed beside it,
``<figure>.wall``). Each figure is the median of the ratios of alternating
rounds (judge alone, then the metric). The script prints every figure, then
exits 1 if ``metric_overhead_ratio`` missed its target.

For reference it also prints the ratio through evaluate's own Arrow path
(``add_batch`` then ``compute()``, which PNG-encodes every PIL image into the
cache and reads it back) and with the images given as file paths.

    python perf/metrics.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Like the tests: never reach a hub, keep evaluate's caches out of the user's home.
_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME)

import evaluate  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from _report import figure, summary  # noqa: E402
from PIL import Image  # noqa: E402

from t2ireason.judges import VQASCORE_QUESTION, load_judge  # noqa: E402
from t2ireason.testing import build_tiny_vlm  # noqa: E402

N_IMAGES = 32
SIZE = 256
REPEATS = 9
TARGET = 1.15
METRIC = Path(__file__).resolve().parents[1] / "metrics" / "vqascore"


def timed(fn) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) of ``fn()``."""
    c, t = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c, time.perf_counter() - t


def main() -> int:
    torch.set_num_threads(1)
    root = Path(_HOME)
    judge = load_judge(f"hf:{build_tiny_vlm(root / 'vlm')}")
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)) for _ in range(N_IMAGES)]
    paths = []
    for i, img in enumerate(images):
        paths.append(str(root / f"{i:04d}.png"))
        img.save(paths[-1])
    prompts = [f"a photo of object number {i} on a table" for i in range(N_IMAGES)]
    questions = [VQASCORE_QUESTION.format(prompt=p) for p in prompts]
    metric = evaluate.load(str(METRIC), judge=judge, cache=False)

    expected = judge.yes_probability(images, questions)  # also warms the model up
    assert metric.compute(predictions=images, references=prompts)["scores"] == expected

    def arrow_path():
        metric.add_batch(predictions=images, references=prompts)
        return metric.compute()

    met = True
    for name, inputs, run in [
        ("metric_overhead_ratio", images, lambda: metric.compute(predictions=images, references=prompts)),
        ("paths_overhead_ratio", paths, lambda: metric.compute(predictions=paths, references=prompts)),
        ("arrow_path_overhead_ratio", images, arrow_path),
    ]:
        # alternate judge-alone and metric runs so that load changes hit both
        cpu, wall, judge_ms, metric_ms = [], [], [], []
        for _ in range(REPEATS):
            j = timed(lambda inputs=inputs: judge.yes_probability(inputs, questions))
            m = timed(run)
            cpu.append(m[0] / j[0])
            wall.append(m[1] / j[1])
            judge_ms.append(j[0] * 1000)
            metric_ms.append(m[0] * 1000)
        # the Arrow path is reported, not targeted: it is evaluate's own cost (perf/README.md)
        met &= figure(name, statistics.median(cpu),
                      {"wall": statistics.median(wall), "judge_cpu_ms": statistics.median(judge_ms),
                       "metric_cpu_ms": statistics.median(metric_ms)},
                      None if name == "arrow_path_overhead_ratio" else ("<=", TARGET))
    return summary(met)


if __name__ == "__main__":
    sys.exit(main())
