"""perf/gpu_parallel.py, the data-parallel figure, measures on a GPU; without CUDA it says so and exits 0, and
``--small`` runs its whole code path on the CPU (one process, then two under torchrun, the same scores)."""

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
    assert (tmp_path / "figures.jsonl").read_text().count("\n") == 2
