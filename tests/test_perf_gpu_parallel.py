"""perf/gpu_parallel.py, the data-parallel figure, measures on a GPU; without CUDA it says so and exits 0, and
``--small`` runs its whole code path on the CPU (one process, then two under torchrun, the same scores)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "perf/gpu_parallel.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=400)


def test_without_cuda_it_notes_it_and_exits_0():
    out = _run()
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("data_parallel=skipped (no CUDA here") and "targets_met" not in out.stdout


@pytest.mark.slow
def test_small_runs_one_process_then_two_on_the_cpu(tmp_path):
    out = _run("--small", "--work", str(tmp_path), "--figures", str(tmp_path / "figures.jsonl"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert lines["data_parallel_judging_speedup.same_scores"] == "True"
    assert lines["data_parallel_judging_speedup.shares"] == "3+3"  # each process judged its half
    assert float(lines["data_parallel_judging_speedup"]) > 0 and lines["targets_met"] == "true"
    assert lines["data_parallel_judging_speedup.rounds"] == "2" and lines["data_parallel_judging_speedup.differing_images"] == "0"
    for name in ("data_parallel_judging_cpu_ratio", "data_parallel_wall_speedup", "data_parallel_command_cpu_ratio"):
        assert float(lines[name]) > 0, name
    assert float(lines["data_parallel_command_cpu_ratio.two_processes_cpu_seconds"]) > 0
    assert (tmp_path / "figures.jsonl").read_text().count("\n") == 4


def _module():
    spec = importlib.util.spec_from_file_location("perf_gpu_parallel", ROOT / "perf" / "gpu_parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sides_alternate_round_by_round():
    """Neither side always runs first (issue 51: one process always ran first, once)."""
    assert _module().order(3) == [1, 2, 2, 1, 1, 2]


def test_results_are_compared_image_by_image():
    """Two evaluations with the same aggregate can still differ image by image: each image's score, sub-scores,
    raw replies, re-asks and failing or not are compared, its path (the run folder's own) is not."""
    differing = _module().differing_images
    a = {"x": {"score": 5, "subscores": {"a": 5}, "replies": ["r1"], "image": "run-1/x.png"},
         "y": {"score": 7, "subscores": {"a": 7}, "replies": ["r2"], "image": "run-1/y.png"}}
    swapped = {"x": {**a["x"], "score": 7, "image": "run-2/x.png"}, "y": {**a["y"], "score": 5}}  # same mean
    assert differing(a, {k: {**v, "image": "elsewhere"} for k, v in a.items()}) == []
    assert differing(a, swapped) == ["x", "y"]
    assert differing(a, {"x": a["x"]}) == ["y"]  # missing from one
    assert differing(a, {**a, "x": {**a["x"], "replies": ["other"]}}) == ["x"]
    assert differing(a, {**a, "y": {**a["y"], "failure": "unreadable reply"}}) == ["y"]


def _side(wall, cpu, judging, judging_cpu, results, shares=(29,)):
    return {"wall": wall, "cpu": cpu, "results": results,
            "scores": {"aggregate": {"s": 1}, "num_images": 29,
                       "processes": [{"rank": r, "images": n, "seconds": judging[r], "cpu_seconds": judging_cpu[r]}
                                     for r, n in enumerate(shares)]}}


def test_figures_are_medians_of_the_rounds_with_cpu_beside_wall():
    """The judging figure is the slowest process's seconds, its CPU the processes' together; the whole command's
    wall and CPU beside it; each the median over the rounds; a differing image in any round fails the figure."""
    compare = _module().compare_rounds
    same = {"k": {"score": 1}}
    rounds = [(_side(20.0, 10.0, [8.0], [4.0], same), _side(25.0, 30.0, [4.0, 5.0], [3.0, 3.0], same, (15, 14))),
              (_side(22.0, 12.0, [9.0], [5.0], same), _side(24.0, 36.0, [5.0, 4.5], [3.5, 3.5], same, (15, 14)))]
    f = compare(rounds)
    assert f["judging_speedup"] == (8 / 5 + 9 / 5) / 2 and f["judging_cpu_ratio"] == (6 / 4 + 7 / 5) / 2
    assert f["wall_speedup"] == (20 / 25 + 22 / 24) / 2 and f["command_cpu_ratio"] == 3.0
    assert f["shares"] == "15+14" and f["same_scores"] is True and f["differing_images"] == 0
    rounds[1][1]["results"] = {"k": {"score": 2}}
    f = compare(rounds)
    assert f["same_scores"] is False and f["differing_images"] == 1 and f["first_differing"] == "k"
