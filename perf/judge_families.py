"""P("Yes") batched against one pair per forward, for each open VLM family that runs here.

For every family of ``t2ireason.testing_families`` whose processor can be built in this
environment (Qwen2/2.5/3-VL and SmolVLM2 need torchvision: run this script with
``.venv-vision/bin/python`` to include them), the tiny random judge is loaded through
``hf:<folder>`` and ``yes_probability`` is timed on 32 image-question pairs with
``batch_size=16`` and with ``batch_size=1``, alternately, after a warm-up. Printed per family:

- ``<family>.batching_speedup``: median time one pair per forward / batched (target at least 1.5);
- ``<family>.batched_ms_per_pair``, ``<family>.parameters``;
- ``<family>.same_scores``: batched and single scores agree (rel. 1e-4);

then ``families_measured`` and ``targets_met=<true|false>`` (exit status 1 when a target is missed).
These are tiny-model figures (about 0.1M parameters, CPU): they show what batching does to the
judge's own overhead (rendering, processor, padding, generate), not a real model's throughput.

    python perf/judge_families.py [--only llava-1.5,gemma3] [--repeats 5]
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from _report import figure, summary  # noqa: E402

from t2ireason.images import as_image  # noqa: E402
from t2ireason.judges import load_judge  # noqa: E402
from t2ireason.testing_families import FAMILIES, build_family, describe  # noqa: E402

N_PAIRS = 32
BATCH = 16
TARGET = 1.5


def _has_torchvision() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:
        return False
    return True


def _pairs(n: int):
    rng = np.random.default_rng(0)
    subjects = ["a red bus", "two cats on a sofa", "a lighthouse at night", "a bowl of ramen with chopsticks"]
    images = [as_image(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)) for _ in range(n)]
    questions = [f'Does this figure show "{subjects[i % 4]}" (item {i})? Please answer yes or no.' for i in range(n)]
    return images, questions


def measure(name: str, root: Path, repeats: int) -> dict:
    import torch

    folder = build_family(name, root)
    batched = load_judge(f"hf:{folder}", device="cpu", batch_size=BATCH, **FAMILIES[name].judge_kwargs)
    single = load_judge(f"hf:{folder}", device="cpu", batch_size=1, **FAMILIES[name].judge_kwargs)
    images, questions = _pairs(N_PAIRS)
    with torch.inference_mode():
        a, b = batched.yes_probability(images, questions), single.yes_probability(images, questions)  # warm-up
        ratios, batched_times = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            batched.yes_probability(images, questions)
            t1 = time.perf_counter()
            single.yes_probability(images, questions)
            t2 = time.perf_counter()
            ratios.append((t2 - t1) / (t1 - t0))
            batched_times.append(t1 - t0)
    same = all(abs(x - y) <= 1e-4 * max(abs(x), abs(y)) for x, y in zip(a, b))
    return {"batching_speedup": statistics.median(ratios),
            "batched_ms_per_pair": 1000 * statistics.median(batched_times) / N_PAIRS,
            "parameters": describe(folder)["parameters"], "same_scores": same}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--only", help="comma-separated family names")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch_threads = 1
    import torch

    torch.set_num_threads(torch_threads)
    names = args.only.split(",") if args.only else list(FAMILIES)
    vision = _has_torchvision()
    met, measured = True, 0
    with tempfile.TemporaryDirectory(prefix="t2ireason-families-") as root:
        for name in names:
            if FAMILIES[name].needs_torchvision and not vision:
                print(f"{name}.skipped=needs_torchvision")
                continue
            r = measure(name, Path(root), args.repeats)
            measured += 1
            # a speed-up only counts when batching leaves every score as it was
            met &= figure(f"{name}.batching_speedup", r["batching_speedup"],
                          {"batched_ms_per_pair": r["batched_ms_per_pair"], "parameters": r["parameters"],
                           "same_scores": str(r["same_scores"]).lower()},
                          (">=", TARGET), ok=r["same_scores"])
    print(f"torch_threads={torch_threads}")
    print(f"families_measured={measured}")
    return summary(met)


if __name__ == "__main__":
    sys.exit(main())
