"""The logic of the CPU perf scripts (what each side of a ratio does, what is compared, how a figure that could
not be measured is said): nothing here times anything."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    """perf/<name>.py as a module, its changes to the environment (HF_HOME, offline flags) undone after."""
    with mock.patch.dict(os.environ), mock.patch.object(sys, "path", [str(ROOT / "perf"), *sys.path]):
        spec = importlib.util.spec_from_file_location(f"perf_{name}", ROOT / "perf" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        module.environ_set = dict(os.environ)  # as the script left it
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


def test_alternating_times_both_sides_in_turn_and_takes_the_cpu_ratio(monkeypatch):
    """perf/_local.alternating: after one untimed run of each side, each round times both, the numerator first
    in even rounds and the denominator first in odd ones; the figure is the median of the rounds' CPU ratios
    (the wall ratio beside it)."""
    local = _script("_local")
    calls: list[str] = []
    times = {"n": [(2.0, 10.0), (3.0, 9.0), (2.5, 8.0)], "d": [(1.0, 1.0), (1.0, 2.0), (1.0, 1.0)]}

    def timed(fn):
        fn()
        return times[calls[-1]].pop(0)

    monkeypatch.setattr(local, "_cpu_and_wall", timed)
    r = local.alternating(lambda: calls.append("n"), lambda: calls.append("d"), 3)
    assert calls == ["n", "d", "n", "d", "d", "n", "n", "d"]
    assert r["ratio"] == 2.5 and r["wall"] == 8.0 and r["rounds"] == "2.00,3.00,2.50"


def test_alternating_refuses_a_side_without_cpu_time(monkeypatch):
    local = _script("_local")
    monkeypatch.setattr(local, "_cpu_and_wall", lambda fn: (0.0, 0.1))
    with pytest.raises(RuntimeError, match="no measurable CPU time"):
        local.alternating(lambda: None, lambda: None, 1, warm_up=False)


def test_a_figure_that_is_not_a_number_is_said_failed_not_printed_as_nan(capsys):
    report = _script("_report")
    assert report.figure("batching_speedup_60m", float("nan"), {}, (">=", 0.85)) is False
    out = capsys.readouterr().out
    assert "nan" not in out.split("error=")[0] and "batching_speedup_60m=error" in out
    assert "batching_speedup_60m.met=false" in out and "not measured" in out


def test_judges_pins_one_thread_and_says_why_a_figure_failed(monkeypatch, capsys):
    """perf/judges.py: torch on one thread (OMP_NUM_THREADS too, set before torch loads), and a measurement
    giving nan is an error with its reason."""
    import torch

    threads = torch.get_num_threads()
    judges = _script("judges")
    assert judges.environ_set["OMP_NUM_THREADS"] == "1" and judges.environ_set["MKL_NUM_THREADS"] == "1"
    seen = []

    def nan(name, models_dir):
        seen.append(torch.get_num_threads())
        return float("nan"), {"rounds": "nan"}

    monkeypatch.setattr(judges, "measure", nan)
    try:
        assert judges.main(["--only", "overhead_ratio"]) == 1
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert seen == [1]
    assert "overhead_ratio=error" in out and "not a number" in out and "overhead_ratio=nan" not in out


def test_image_figures_pair_the_rounds_and_report_cpu_a_request():
    """perf/_http.image_figures: the wall ratio is taken round by round (bare over judge), and the client's and the
    server's CPU a request come from the CPU seconds of each side."""
    http = _script("_http")
    sides = {"judge": [(2.0, 0.5, 1.0), (4.0, 0.7, 1.2), (3.0, 0.6, 1.1)],
             "bare": [(1.6, 0.25, 0.9), (2.0, 0.35, 1.0), (3.0, 0.3, 1.0)]}
    r = http.image_figures(sides, ideal=1.6, n=100)
    assert r["efficiency"] == pytest.approx(1.6 / 3.0) and r["bare_aiohttp_efficiency"] == pytest.approx(1.6 / 2.0)
    assert r["vs_bare_aiohttp"] == pytest.approx(0.8)  # rounds: 0.8, 0.5, 1.0
    assert r["client_cpu_ms_a_request"] == pytest.approx(6.0) and r["bare_client_cpu_ms_a_request"] == pytest.approx(3.0)
    assert r["client_cpu_vs_bare"] == pytest.approx(2.0) and r["server_cpu_ms_a_request"] == pytest.approx(11.0)


def test_memory_reads_the_commands_own_peak_not_the_resident_memory_of_its_parent():
    """Issue 51: ``ru_maxrss`` of a child counts what its parent held when it started it, so the small run of
    ``perf/memory.py`` read the script's own size (about 260 MB) and the per-image growth came out flat at 64 px.
    The child reports its own peak (``VmHWM``): here 400 MB held by this process must not show in it."""
    import subprocess

    memory = _script("memory")
    ballast = b"\x01" * (400 * 2**20)  # written, so resident in this process when the child starts
    done = subprocess.run([sys.executable, "-c", memory._CHILD, "--help"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    peak = int(done.stdout.splitlines()[-1].removeprefix("peak_kb="))
    assert 0 < peak < 200 * 1024 < len(ballast) // 1024, peak
