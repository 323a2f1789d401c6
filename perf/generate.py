"""Time per image of generation with the tiny diffusion pipeline: batched against one prompt per
call, and two processes against one, measured side by side in one run.

- batching: the MT2IE agent's drawer (``t2ireason.generation.Drawer``) making the same images with
  ``batch_size`` 8 and 1, in this process;
- processes: ``t2ireason.generation.generate`` (the path of ``t2ireason generate``) under
  ``torchrun --nproc_per_node 2`` (each rank takes half the images) and ``--nproc_per_node 1``.
  Each rank loads the pipeline and warms it up first; the time is from a barrier before
  ``generate`` to its closing barrier, so start-up and model loading are left out.

Every process runs one torch thread, so two processes use two cores where one uses one; the
single process is also timed with two threads (``one_proc_2threads``), the other way to use a
second core. On a shared machine, two intra-op threads suffer most from other load (they wait
for each other), which is why that figure is printed apart.

Each figure is the median of interleaved repeats (one of each per round, so that load on the
machine moves both alike). Ratios are time per image, the first setting over the second: below 1,
the first is faster.

    python perf/generate.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Like the tests: never reach a hub, keep caches out of the user's home.
_HOME = os.environ.get("T2IREASON_PERF_HOME") or tempfile.mkdtemp(prefix="t2ireason-perf-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME,
                  T2IREASON_PERF_HOME=_HOME)

import torch  # noqa: E402
from diffusers.utils import logging as diffusers_logging  # noqa: E402

from t2ireason.generation import (  # noqa: E402
    Drawer,
    GenerationConfig,
    Job,
    draw,
    generate,
    image_seed,
    load_pipeline,
)
from t2ireason.testing import build_tiny_sd  # noqa: E402

N_IMAGES = 16
BATCH = 8
REPEATS = 5  # batching rounds
PROCESS_REPEATS = 3  # process rounds (each starts torchrun twice)
ROOT = Path(__file__).resolve().parents[1]


def config(model: Path, batch_size: int = 1) -> GenerationConfig:
    return GenerationConfig(model=str(model), steps=2, height=64, width=64, batch_size=batch_size)


def jobs() -> list[Job]:
    # short prompts: the tiny CLIP text encoder reads 16 tokens
    return [Job(f"p{i}", f"a red cat {i}", 0, f"{i:03d}.png", image_seed("perf", f"p{i}", 0)) for i in range(N_IMAGES)]


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def batching(model: Path) -> tuple[float, float]:
    """Seconds per image with batch size 1 and BATCH (medians)."""
    torch.set_num_threads(1)
    todo = jobs()
    prompts, seeds = [j.prompt for j in todo], [j.seed for j in todo]
    one, batched = Drawer(config(model, 1)), Drawer(config(model, BATCH))
    one(prompts[:1], seeds[:1]), batched(prompts[:BATCH], seeds[:BATCH])  # load and warm up
    t1, tb = [], []
    for _ in range(REPEATS):
        t1.append(timed(lambda: one(prompts, seeds)))
        tb.append(timed(lambda: batched(prompts, seeds)))
    return statistics.median(t1) / N_IMAGES, statistics.median(tb) / N_IMAGES


def worker(model: str, out: str, time_file: str) -> None:
    """One rank under torchrun: load, warm up, then time ``generate`` between two barriers."""
    from accelerate import PartialState

    state = PartialState(cpu=True)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    diffusers_logging.disable_progress_bar()
    cfg = config(Path(model))
    pipe = load_pipeline(cfg, "cpu")
    draw(pipe, ["warm up"], [0], cfg)
    state.wait_for_everyone()
    t = time.perf_counter()
    generate(jobs(), cfg, out, pipeline=pipe, state=state, progress=False)  # ends on a barrier
    if state.is_main_process:
        Path(time_file).write_text(str(time.perf_counter() - t))


def processes(model: Path, nproc: int, threads: int, port: int) -> float:
    """Seconds per image of ``generate`` on ``nproc`` torchrun processes of ``threads`` threads."""
    with tempfile.TemporaryDirectory() as tmp:
        time_file = Path(tmp) / "seconds"
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
        subprocess.run([str(Path(sys.executable).parent / "torchrun"), "--nproc_per_node", str(nproc),
                        "--master_port", str(port), __file__, "--worker", str(model), str(Path(tmp) / "out"),
                        str(time_file)], env=env, check=True, capture_output=True)
        return float(time_file.read_text()) / N_IMAGES


def main() -> None:
    diffusers_logging.disable_progress_bar()
    model = build_tiny_sd(Path(_HOME) / "sd")
    per1, perb = batching(model)
    print(f"per_image_ms_batch1={per1 * 1000:.1f}")
    print(f"per_image_ms_batch{BATCH}={perb * 1000:.1f}")
    print(f"batch{BATCH}_vs_batch1_time_ratio={perb / per1:.3f}")
    settings = {"1proc": (1, 1), "2proc": (2, 1), "1proc_2threads": (1, 2)}
    times: dict[str, list[float]] = {name: [] for name in settings}
    for r in range(PROCESS_REPEATS):
        for k, (name, (nproc, threads)) in enumerate(settings.items()):
            times[name].append(processes(model, nproc, threads, 29600 + 3 * r + k))
    ms = {name: statistics.median(t) * 1000 for name, t in times.items()}
    for name, value in ms.items():
        print(f"per_image_ms_{name}={value:.1f}")
    print(f"two_procs_vs_one_time_ratio={ms['2proc'] / ms['1proc']:.3f}")
    print(f"two_procs_vs_one_proc_2threads_time_ratio={ms['2proc'] / ms['1proc_2threads']:.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(*sys.argv[2:5])
    else:
        main()
