"""The package built once per test session with ``python -m build`` (sdist, then the wheel from
the sdist, as a release is built), for the packaging and Space tests."""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def distributions() -> dict[str, Path]:
    """``{"sdist": ..., "wheel": ...}`` built from this checkout into a temporary folder."""
    out = Path(tempfile.mkdtemp(prefix="t2ireason-dist-"))
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (sdist,), (wheel,) = out.glob("*.tar.gz"), out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel, "log": done.stdout + done.stderr}
