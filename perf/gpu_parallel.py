"""The data-parallel figure (issue 41 item 4): ``t2ireason evaluate`` of one run by one process, then by two
(``torchrun --nproc_per_node 2``: two processes on one GPU, or one on each of two), the same judge, images and
settings: the judging time of each (the slowest process's, from ``scores.json``'s ``processes``), the whole
command's wall time, and their ratios. Both evaluations must give the same scores (checked).

The judge is a local VLM (``hf:``) asked for JSON under the benchmark's schema (constrained decoding), greedy,
with a bounded reply: PRISM-Bench's shipped sample (29 prompts, two requests an image) with its paper preset.
By default the model is LLaVA-1.5-7B's shape with random weights in bfloat16 (built into ``--work``, as
``perf/gpu.py`` builds it; or ``--judge hf:<folder>``, e.g. one ``perf/gpu.py --work`` built); ``--small``
runs the tiny test judge on the CPU (6 prompts, replies of 4 tokens), a smoke run of the code path whose
figures mean nothing. Without CUDA
and without ``--small`` it prints a note and exits 0. Each figure is printed the moment it is measured
(``perf/_report.py``), and appended to ``--figures`` as a JSON line.

    python perf/gpu_parallel.py [--small] [--judge hf:<folder>] [--work DIR] [--figures FILE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from _report import figure, summary  # noqa: E402

BENCHMARK = "prism-bench"


def _judge_folder(args: argparse.Namespace, work: Path, cuda: bool) -> str:
    """The judge's spec: given, the tiny test VLM (``--small``), or LLaVA-1.5-7B's shape built once in ``work``."""
    if args.judge:
        return args.judge
    folder = work / ("tiny-vlm" if args.small else "llava-7b")
    if args.small:
        from t2ireason.testing import build_tiny_vlm

        return f"hf:{build_tiny_vlm(folder)}"
    if not (folder / ".built").exists():
        import torch

        try:  # where perf/gpu.py keeps its builders (after issue 41: _gpu_build.py)
            from _gpu_build import build_llava
        except ImportError:
            from gpu import build_llava
        shutil.rmtree(folder, ignore_errors=True)
        build_llava(SimpleNamespace(small=False, device="cuda" if cuda else "cpu", dtype=torch.bfloat16), folder)
        (folder / ".built").touch()
    return f"hf:{folder}"


def _run_folder(folder: Path, px: int, limit: int | None) -> Path:
    """A run folder of PRISM-Bench's sample (its first ``limit`` prompts) with a distinct PNG where each image
    goes."""
    from PIL import Image

    from t2ireason.benchmarks import get_benchmark
    from t2ireason.runs import Run

    shutil.rmtree(folder, ignore_errors=True)
    run = Run.create(folder, BENCHMARK, limit=limit)
    bench = get_benchmark(BENCHMARK)
    for i, row in enumerate(run.rows()):
        path = run.images_dir / bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.effect_noise((px, px), 40 + i).convert("RGB").save(path)
    return folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _evaluate(run: Path, judge: str, processes: int, args: argparse.Namespace) -> tuple[float, dict]:
    """The command's wall time and its scores.json."""
    sampling = {"temperature": 0, "max_tokens": 4 if args.small else args.max_tokens}
    argv = ["evaluate", "--run", str(run), "--judge", judge, "--preset", "paper", "--name", "p", "--no-cache",
            "--no-progress", "--options", json.dumps({"structured_output": True, "max_reasks": 0}),
            "--judge-kwargs", json.dumps({"sampling": sampling, "batch_size": args.batch_size})]
    launcher = [sys.executable, "-m", "t2ireason.cli"] if processes == 1 else [
        str(Path(sys.executable).parent / "torchrun"), "--nproc_per_node", str(processes), "--master_addr",
        "127.0.0.1", "--master_port", str(_free_port()), "-m", "t2ireason.cli", "--"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    if args.small:
        env["OMP_NUM_THREADS"] = "1"  # each process one thread: two processes on two cores
    start = time.perf_counter()
    done = subprocess.run([*launcher, *argv], env=env, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - start
    scores = run / "evaluations" / "p" / "scores.json"
    if done.returncode not in (0, 1) or not scores.is_file():  # 1: images failed (a random judge's replies
        # run to their bound): the same work either way, still a figure
        raise RuntimeError(f"{processes} process(es): exit {done.returncode}\n{done.stdout[-2000:]}\n"
                           f"{done.stderr[-3000:]}")
    return wall, json.loads(scores.read_text())


def _record(args: argparse.Namespace, name: str, value: float, details: dict) -> None:
    if args.figures is not None:
        with open(args.figures, "a", encoding="utf-8") as f:
            f.write(json.dumps({"section": "data_parallel", "name": name, "value": value, **details}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--small", action="store_true", help="the tiny test judge on any device: a smoke run")
    parser.add_argument("--judge", help="the judge spec (default: LLaVA-1.5-7B's shape built into --work)")
    parser.add_argument("--work", type=Path, help="folder for the built judge, kept and reused (default: temporary)")
    parser.add_argument("--figures", type=Path, help="append every figure to this file as a JSON line")
    parser.add_argument("--max-tokens", type=int, default=64, help="the judge's reply bound (default 64)")
    parser.add_argument("--batch-size", type=int, default=8, help="the judge's batch (default 8)")
    parser.add_argument("--timeout", type=float, default=400, help="seconds each command may take")
    args = parser.parse_args(argv)
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.small:
        print("data_parallel=skipped (no CUDA here; --small runs the code path on the CPU)")
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="t2ireason-gpu-parallel-"))
    try:
        judge = _judge_folder(args, work, cuda)
        gpus = torch.cuda.device_count() if cuda else 0
        px, limit = (32, 6) if args.small else (512, None)
        one_wall, one = _evaluate(_run_folder(work / "run-1", px, limit), judge, 1, args)
        two_wall, two = _evaluate(_run_folder(work / "run-2", px, limit), judge, 2, args)
        same = one["aggregate"] == two["aggregate"] and one["num_failed"] == two["num_failed"]
        judging_one = max(s["seconds"] for s in one["processes"])
        judging_two = max(s.get("seconds", 0.0) for s in two["processes"])
        details = {"processes": 2, "gpus": gpus, "device": torch.cuda.get_device_name(0) if cuda else "cpu",
                   "images": one["num_images"], "judge": judge.rsplit("/", 1)[-1],
                   "one_process_judging_seconds": judging_one, "two_processes_judging_seconds": judging_two,
                   "shares": "+".join(str(s["images"]) for s in two["processes"]),
                   "one_process_wall_seconds": round(one_wall, 2), "two_processes_wall_seconds": round(two_wall, 2),
                   "same_scores": same}
        speedup = judging_one / judging_two
        figure("data_parallel_judging_speedup", speedup, details, ok=same)
        _record(args, "data_parallel_judging_speedup", speedup, details)
        wall = one_wall / two_wall
        figure("data_parallel_wall_speedup", wall)
        _record(args, "data_parallel_wall_speedup", wall, {})
        return summary(same)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
