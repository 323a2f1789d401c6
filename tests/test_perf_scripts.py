"""The logic of the CPU perf scripts (what each side of a ratio does, what is compared, how a figure that could
not be measured is said): nothing here times anything."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    """perf/<name>.py as a module, its changes to the environment (HF_HOME, offline flags) undone after."""
    with mock.patch.dict(os.environ), mock.patch.object(sys, "path", [str(ROOT / "perf"), *sys.path]):
        spec = importlib.util.spec_from_file_location(f"perf_{name}", ROOT / "perf" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


class _Picture:
    """Records which thread saved it."""

    def __init__(self, log: list):
        self.log = log

    def save(self, path):
        Path(path).write_bytes(b"png")
        self.log.append(threading.current_thread())


def test_python_overhead_bare_side_saves_from_a_pool_as_generate_does(tmp_path):
    """issue 51: `python_overhead_ratio` compared generate (saving on 4 threads) with a bare loop saving inline,
    so it read 0.74 because of the pool; the bare side now saves from a pool of as many threads."""
    generators = _script("generators")
    jobs = generators._jobs(8)
    log: list = []

    def draw(prompts, seeds):
        return [_Picture(log) for _ in prompts]

    generators._bare_python(draw, jobs, tmp_path / "pool")
    assert sorted(p.name for p in (tmp_path / "pool").iterdir()) == sorted(j.file for j in jobs)
    assert len(log) == 8 and threading.main_thread() not in log  # saved off the drawing thread
    assert generators.WRITERS == 4
    log.clear()
    generators._bare_python(draw, jobs, tmp_path / "inline", writers=0)  # the inline loop, printed beside
    assert log == [threading.main_thread()] * 8
