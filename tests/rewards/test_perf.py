"""perf/rewards.py refuses a figure it does not know instead of measuring nothing and saying its targets met."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_figure_is_refused_not_skipped():
    out = subprocess.run([sys.executable, "perf/rewards.py", "--only", "submit"], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "unknown figure(s) submit; known: submit_ms" in out.stderr and "targets_met" not in out.stdout
