"""What the evaluate module adds on top of the judge it calls.

VQAScore of 32 generated images (256x256 PIL images) with the tiny local VLM
judge (``t2ireason.testing``), loaded through ``evaluate.load("metrics/vqascore")``.
The figure is the time of ``compute`` divided by the time of the judge call
alone (``judge.yes_probability`` on the same images and questions); the target
is at most 1.15. Each time is the median of several alternating runs, on one
torch thread, so that other load on the machine moves both alike.

For reference it also prints the ratio through evaluate's own Arrow path
(``add_batch`` then ``compute()``, which PNG-encodes every PIL image into the
cache and reads it back) and with the images given as file paths.

    python perf/metrics.py
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

# Like the tests: never reach a hub, keep evaluate's caches out of the user's home.
_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME)

import evaluate  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from t2ireason.judges import VQASCORE_QUESTION, load_judge  # noqa: E402
from t2ireason.testing import build_tiny_vlm  # noqa: E402

N_IMAGES = 32
SIZE = 256
REPEATS = 7
TARGET = 1.15
METRIC = Path(__file__).resolve().parents[1] / "metrics" / "vqascore"


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
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

    figures = {}
    for name, inputs, run in [
        ("metric_overhead_ratio", images, lambda: metric.compute(predictions=images, references=prompts)),
        ("paths_overhead_ratio", paths, lambda: metric.compute(predictions=paths, references=prompts)),
        ("arrow_path_overhead_ratio", images, arrow_path),
    ]:
        # alternate judge-alone and metric runs so that load changes hit both
        judge_times, metric_times = [], []
        for _ in range(REPEATS):
            judge_times.append(timed(lambda inputs=inputs: judge.yes_probability(inputs, questions)))
            metric_times.append(timed(run))
        figures[name] = statistics.median(metric_times) / statistics.median(judge_times)
        print(f"{name}={figures[name]:.3f}  (judge {statistics.median(judge_times) * 1000:.0f} ms, "
              f"metric {statistics.median(metric_times) * 1000:.0f} ms)")
    verdict = "ok" if figures["metric_overhead_ratio"] <= TARGET else "OVER TARGET"
    print(f"metric_overhead_ratio={figures['metric_overhead_ratio']:.3f} (target <= {TARGET}: {verdict})")


if __name__ == "__main__":
    main()
