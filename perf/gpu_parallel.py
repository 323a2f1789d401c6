"""The data-parallel figure (issue 41 item 4): ``t2ireason evaluate`` of one run by one process, then by two
(``torchrun --nproc_per_node 2``: two processes on one GPU, or one on each of two), the same judge, images and
settings: the judging time of each (the slowest process's, from ``scores.json``'s ``processes``), the whole
command's wall time, and their ratios, each beside the CPU time it took. The results are compared image by
image (each image's score, sub-scores, raw replies and whether it failed), not only the aggregate.

The judge is a local VLM (``hf:``) asked for JSON under the benchmark's schema (constrained decoding), greedy,
with a bounded reply: PRISM-Bench's shipped sample (29 prompts, two requests an image) with its paper preset.
By default the model is LLaVA-1.5-7B's shape with random weights in bfloat16 (built into ``--work``, as
``perf/gpu.py`` builds it; or ``--judge hf:<folder>``, e.g. one ``perf/gpu.py --work`` built); ``--small``
runs the tiny test judge on the CPU (6 prompts, replies of 4 tokens), a smoke run of the code path whose
figures mean nothing. ``--http SECONDS`` judges over HTTP instead: the local OpenAI-compatible test server (in
its own process) answering every request after that many seconds, the judge at its default concurrency (16
requests in flight a process): what a launch costs and gives with an API judge, on any machine. Without CUDA
and without ``--small`` or ``--http`` it prints a note and exits 0.

**How the sides are timed** (issue 51). On Linux with autogroup scheduling (``/proc/sys/kernel/
sched_autogroup_enabled``), the CPU is shared between sessions first, then between the processes of a session;
torchrun starts each worker in a session of its own (``setsid``), so on a machine other sessions load, two
workers get two sessions' shares where one process gets one: wall-time speed-ups of 4.85x (judging) on 2 cores
were read that way. So both sides' commands start in a new session, the sides run alternately (one process
first in odd rounds, two first in even ones), ``--rounds`` times (default 2), each figure is the median of the
rounds' ratios, and the CPU time beside each (the whole command's: every process it started, waited for, from
``getrusage(RUSAGE_CHILDREN)``; the judging span's: ``scores.json``'s ``processes[].cpu_seconds``) says what
the two cost, which load cannot bend. Each figure is printed the moment it is measured (``perf/_report.py``),
and appended to ``--figures`` as a JSON line.

    python perf/gpu_parallel.py [--small | --http SECONDS] [--judge hf:<folder>] [--rounds N] [--work DIR]
                                [--figures FILE.jsonl]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import socket
import statistics
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


def _children_cpu() -> float:
    """CPU seconds of every child process this one has waited for (and of theirs that they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _evaluate(run: Path, judge: str, processes: int, args: argparse.Namespace) -> dict:
    """One ``t2ireason evaluate`` by ``processes`` processes: its wall and CPU seconds, its scores.json, and its
    results by image."""
    sampling = {"temperature": 0, "max_tokens": 4 if args.small else args.max_tokens}
    judge_kwargs = {"sampling": sampling} if args.http else {"sampling": sampling, "batch_size": args.batch_size}
    argv = ["evaluate", "--run", str(run), "--judge", judge, "--preset", "paper", "--name", "p", "--no-cache",
            "--no-progress", "--options", json.dumps({"structured_output": True, "max_reasks": 0}),
            "--judge-kwargs", json.dumps(judge_kwargs)]
    launcher = [sys.executable, "-m", "t2ireason.cli"] if processes == 1 else [
        str(Path(sys.executable).parent / "torchrun"), "--nproc_per_node", str(processes), "--master_addr",
        "127.0.0.1", "--master_port", str(_free_port()), "-m", "t2ireason.cli", "--"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    if args.small or args.http:
        env["OMP_NUM_THREADS"] = "1"  # each process one thread: two processes on two cores
    cpu, start = _children_cpu(), time.perf_counter()
    # a session of its own, as torchrun gives each of its workers: the same share of the CPU per session
    done = subprocess.run([*launcher, *argv], env=env, capture_output=True, text=True, timeout=args.timeout,
                          start_new_session=True)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    scores = run / "evaluations" / "p" / "scores.json"
    if done.returncode not in (0, 1) or not scores.is_file():  # 1: images failed (a random judge's replies
        # run to their bound): the same work either way, still a figure
        raise RuntimeError(f"{processes} process(es): exit {done.returncode}\n{done.stdout[-2000:]}\n"
                           f"{done.stderr[-3000:]}")
    results = {}
    for line in (run / "evaluations" / "p" / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        results[record["key"]] = record
    return {"wall": wall, "cpu": cpu, "scores": json.loads(scores.read_text()), "results": results}


def order(rounds: int) -> list[int]:
    """The process counts in the order they run: one then two in odd rounds, two then one in even ones."""
    return [n for r in range(rounds) for n in ((1, 2) if r % 2 == 0 else (2, 1))]


#: what must be equal, image by image, between the two evaluations (the image's path is the run folder's own)
COMPARED = ("score", "subscores", "replies", "reasks")


def differing_images(one: dict[str, dict], two: dict[str, dict]) -> list[str]:
    """The images (keys) whose results differ between two evaluations of the same images: one missing from
    either, or a different score, sub-scores, raw replies, re-asks, or failing in one and not the other."""
    differ = []
    for key in sorted(set(one) | set(two)):
        a, b = one.get(key), two.get(key)
        if a is None or b is None or any(a.get(k) != b.get(k) for k in COMPARED) or \
                (a.get("failure") is None) != (b.get("failure") is None):
            differ.append(key)
    return differ


def judging(scores: dict) -> tuple[float, float]:
    """(the slowest process's judging seconds, the processes' judging CPU seconds together) of a scores.json."""
    shares = scores["processes"]
    return max(s.get("seconds", 0.0) for s in shares), sum(s.get("cpu_seconds", 0.0) for s in shares)


def compare_rounds(runs: list[tuple[dict, dict]]) -> dict:
    """The figures from each round's (one process, two processes) evaluations: medians over the rounds of the
    ratios one over two (wall: a speed-up above 1; CPU: two over one, the cost of the launch), and the images
    whose results differ in any round."""
    def med(values):
        return statistics.median(values)

    judge = [(judging(one["scores"]), judging(two["scores"])) for one, two in runs]
    differ = sorted({key for one, two in runs for key in differing_images(one["results"], two["results"])})
    last_one, last_two = runs[-1]
    return {
        "judging_speedup": med(o[0] / t[0] for o, t in judge),
        "judging_cpu_ratio": med(t[1] / o[1] if o[1] else float("nan") for o, t in judge),  # nan: said unmeasured
        "wall_speedup": med(o["wall"] / t["wall"] for o, t in runs),
        "command_cpu_ratio": med(t["cpu"] / o["cpu"] for o, t in runs),
        "rounds": len(runs),
        "judging_speedup_rounds": ",".join(f"{o[0] / t[0]:.2f}" for o, t in judge),
        "wall_speedup_rounds": ",".join(f"{o['wall'] / t['wall']:.2f}" for o, t in runs),
        "one_process_judging_seconds": med(o[0] for o, _ in judge),
        "two_processes_judging_seconds": med(t[0] for _, t in judge),
        "one_process_judging_cpu_seconds": med(o[1] for o, _ in judge),
        "two_processes_judging_cpu_seconds": med(t[1] for _, t in judge),
        "one_process_wall_seconds": med(o["wall"] for o, _ in runs),
        "two_processes_wall_seconds": med(t["wall"] for _, t in runs),
        "one_process_cpu_seconds": med(o["cpu"] for o, _ in runs),
        "two_processes_cpu_seconds": med(t["cpu"] for _, t in runs),
        "images": last_one["scores"]["num_images"],
        "shares": "+".join(str(s["images"]) for s in last_two["scores"]["processes"]),
        "differing_images": len(differ), "first_differing": ",".join(differ[:5]),
        "same_scores": not differ and all(o["scores"]["aggregate"] == t["scores"]["aggregate"] for o, t in runs),
    }


@contextlib.contextmanager
def _http_judge(latency: float):
    """The local OpenAI-compatible test server in its own process, answering every request with a PRISM-Bench
    JSON verdict after ``latency`` seconds; yields the judge spec."""
    from _http import _server

    from t2ireason.testing_http import Answer

    reply = '{"justification": "Everything asked for is there.", "score": 7}'
    with _server(behaviour=Answer(reply, delay=latency)) as base_url:
        yield f"openai:test-model@{base_url}"


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
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both sides, alternately (default 2)")
    parser.add_argument("--http", type=float, metavar="SECONDS",
                        help="judge over HTTP: the local test server answering each request after SECONDS")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.small and not args.http:
        print("data_parallel=skipped (no CUDA here; --small or --http runs the code path on the CPU)")
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="t2ireason-gpu-parallel-"))
    try:
        with _http_judge(args.http) if args.http else contextlib.nullcontext() as http:
            judge = http or _judge_folder(args, work, cuda)
            gpus = torch.cuda.device_count() if cuda and not args.http else 0
            px, limit = (32, 6) if args.small else (512 if not args.http else 64, None)
            load = os.getloadavg()[0]
            done: dict[int, list[dict]] = {1: [], 2: []}
            for i, processes in enumerate(order(args.rounds)):
                done[processes].append(_evaluate(_run_folder(work / f"run-{i}", px, limit), judge, processes, args))
        f = compare_rounds(list(zip(done[1], done[2])))
        device = "cpu" if not cuda or args.http else torch.cuda.get_device_name(0)
        common = {"processes": 2, "gpus": gpus, "device": device, "judge": judge.rsplit("/", 1)[-1],
                  "load_average": f"{load:.1f} to {os.getloadavg()[0]:.1f}", "cores": os.cpu_count()}
        judging_details = {**common, **{k: f[k] for k in (
            "rounds", "judging_speedup_rounds", "one_process_judging_seconds", "two_processes_judging_seconds",
            "images", "shares", "differing_images", "first_differing", "same_scores")}}
        figures = [
            ("data_parallel_judging_speedup", f["judging_speedup"], judging_details),
            ("data_parallel_judging_cpu_ratio", f["judging_cpu_ratio"],
             {k: f[k] for k in ("one_process_judging_cpu_seconds", "two_processes_judging_cpu_seconds")}),
            ("data_parallel_wall_speedup", f["wall_speedup"],
             {k: f[k] for k in ("wall_speedup_rounds", "one_process_wall_seconds", "two_processes_wall_seconds")}),
            ("data_parallel_command_cpu_ratio", f["command_cpu_ratio"],
             {k: f[k] for k in ("one_process_cpu_seconds", "two_processes_cpu_seconds")}),
        ]
        for name, value, details in figures:
            figure(name, value, details, ok=f["same_scores"])
            _record(args, name, value, details)
        return summary(f["same_scores"])
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
