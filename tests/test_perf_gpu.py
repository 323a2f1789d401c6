"""perf/gpu.py measures on a GPU; on a machine without CUDA it says so and exits 0, so `make perf` runs
everywhere (its code path is smoke-run with `--small`, by hand: perf/README.md)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_script_without_cuda_notes_it_and_exits_0():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "perf/gpu.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("note=no CUDA device here") and "measured nothing" in out.stdout
    assert "targets_met" not in out.stdout  # nothing measured, nothing claimed
