"""perf/gpu.py measures on a GPU; on a machine without CUDA it says so and exits 0, so `make perf` runs
everywhere. Its code path runs here with `--small` (small models on the CPU), through the launcher the GPU
machine's one call uses (perf/gpu_device_run.sh): every section in its own process, each figure written as
it is measured."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_script_without_cuda_notes_it_and_exits_0():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "perf/gpu.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("note=no CUDA device here") and "measured nothing" in out.stdout
    assert "targets_met" not in out.stdout  # nothing measured, nothing claimed


@pytest.mark.slow
def test_every_section_runs_small_on_the_cpu_and_writes_each_figure_as_measured(tmp_path):
    """`perf/gpu.py --small`: every section's code path with small models on the CPU, each figure appended to
    --figures as it is measured; a section stopped part-way (as its time limit stops it) keeps what it wrote."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    figures = tmp_path / "figures.jsonl"
    run = subprocess.run([sys.executable, "perf/gpu.py", "--small", "--work", str(tmp_path / "work"), "--figures",
                          str(figures)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and run.stdout.endswith("targets_met=true\n"), run.stdout + run.stderr
    got = {}
    for line in figures.read_text().splitlines():
        row = json.loads(line)
        got.setdefault(row["section"], {})[row["name"]] = row
    assert got["machine"]["device"]["value"] == "cpu"
    assert not [(s, r["value"]) for s, rows in got.items() for n, r in rows.items() if n == "error"]
    llava, decoding = got["vqascore_llava"], got["json"]
    for name in ("project_b4_ms_a_pair", "project_through_generate_b4_ms_a_pair", "forward_alone_ms_a_pair",
                 "roofline_ms_a_pair", "project_b1_ms_a_pair",
                 "bare_per_pair_ms", "bare_batched_ms_a_pair", "bare_batched_threaded_ms_a_pair"):
        assert llava[name]["value"] > 0, name
    assert llava["vqascore_llava_vs_forward_ratio"]["target"] is None  # a small run claims no target
    for name in ("project_eager_b2_row_steps_per_s", "bare_eager_b4_row_steps_per_s", "compile_seconds_b2",
                 "project_default_b2_row_steps_per_s", "bare_static_b2_row_steps_per_s", "hbm_floor_b2_row_steps_per_s",
                 "tail_filled_vs_eager_b2_time_ratio"):
        assert decoding[name]["value"] > 0, name
    ceiling = decoding["hbm_floor_b2_row_steps_per_s"]  # batch x the copy rate / the weights' size, not half of it
    assert ceiling["value"] == pytest.approx(2 * got["machine"]["copy_gb_per_s"]["value"] / ceiling["weight_gb"])
    assert decoding["compile_seconds_b2"]["mode"] == "static" and "batch 2" in decoding["compile_seconds_b2"]["first_calls"]
    qwen = got["vqascore_qwen"]
    assert qwen["vision_tower_window_by_window_ms_an_image"]["value"] > 0
    assert qwen["vision_tower_one_call_a_layer_ms_an_image"]["value"] > 0
    assert got["generation"]["generation_vs_bare_no_save_ratio"]["value"] > 0
    parallel = got["data_parallel"]["data_parallel_judging_speedup"]
    assert parallel["same_scores"] is True and parallel["shares"] == "3+3"  # two processes, each judging half

    cut = tmp_path / "cut.jsonl"
    section = subprocess.Popen([sys.executable, "perf/gpu.py", "--small", "--only", "json", "--work",
                                str(tmp_path / "work"), "--figures", str(cut)],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not (cut.exists() and "project_eager_b2_row_steps_per_s" in cut.read_text()):
            assert section.poll() is None and time.monotonic() < deadline, "the section ended before its first figure"
            time.sleep(0.05)
        section.terminate()
        assert section.wait(timeout=60) != 0
    finally:
        section.kill()
    kept = [json.loads(line)["name"] for line in cut.read_text().splitlines()]
    assert "project_eager_b2_row_steps_per_s" in kept and "json_default_b2" not in kept


def test_profile_writes_each_stretch_trace_and_its_figures(tmp_path):
    """`--profile DIR`: the VQAScore section's two profiled stretches (the project, and the design before,
    through generate) leave a gzipped Chrome trace and a table of host operations each, and print their
    figures; on a CPU the device's busy share says there was no device activity."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    profiles, figures = tmp_path / "profiles", tmp_path / "figures.jsonl"
    run = subprocess.run([sys.executable, "perf/gpu.py", "--small", "--only", "vqascore_llava", "--work",
                          str(tmp_path / "work"), "--figures", str(figures), "--profile", str(profiles)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    for name in ("project_b4", "project_through_generate_b4"):
        with gzip.open(profiles / f"vqascore_llava.{name}.trace.json.gz", "rt") as trace:
            events = json.load(trace)["traceEvents"]
        assert any(e.get("name") == "aten::mm" for e in events), name  # the model's work is in the trace
        assert "Self CPU" in (profiles / f"vqascore_llava.{name}.top.txt").read_text()
    rows = {r["name"]: r for r in map(json.loads, figures.read_text().splitlines())}
    busy = rows["profile_project_b4_device_busy_share"]
    assert busy["value"] == "no device activity" and "aten::" in busy["top_host"]
    assert busy["trace"] == "vqascore_llava.project_b4.trace.json.gz"


def test_the_hbm_ceiling_is_batch_times_the_copy_rate_over_the_weights():
    """A decode step reads the weights once; the copy rate (2n/t: read plus write) is the memory's whole traffic,
    which a read reaches too. Issue 51's CPU figures: 2 x 11.83 GB/s / 0.000974 GB = 24,290 row-steps/s, where the
    script printed half (12,150); the H200's 1,195 at batch 8 is 2,390."""
    sys.path.insert(0, str(ROOT / "perf"))
    from _limits import hbm_ceiling

    assert hbm_ceiling(2, 11.83e9, 0.000974e9) == pytest.approx(24_292, rel=1e-3)
    assert hbm_ceiling(8, 4_247e9, 14.2e9) == pytest.approx(2 * 1_196, rel=1e-3)
    with pytest.raises(ValueError, match="batch"):
        hbm_ceiling(0, 1e9, 1e9)


def test_busy_share_is_the_covered_part_of_the_span():
    sys.path.insert(0, str(ROOT / "perf"))
    from _profile import busy_share

    assert busy_share([(5, 6), (0, 2), (1, 3)]) == pytest.approx(4 / 6)  # overlaps merged, the gap 3-5 idle
    assert busy_share([(0, 4), (1, 2)]) == 1.0 and busy_share([]) is None


@pytest.mark.skipif(shutil.which("timeout") is None or shutil.which("bash") is None, reason="needs bash and timeout")
def test_the_device_run_runs_each_section_in_its_own_process_and_gathers_the_figures(tmp_path):
    """`bash perf/gpu_device_run.sh --small` (here one quick section, no wheels: the installed packages): the
    section in its own process under its limit, its log and figures.json with its exit status in $OUT, the
    work folder removed."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OUT": str(tmp_path / "out"), "PYTHON": sys.executable,
           "WHEELS": str(tmp_path / "no-wheels"), "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path),
           "SECTIONS": "vqascore_llava"}  # the quickest (6 s); data_parallel's launches have tests of their own
    run = subprocess.run(["bash", "perf/gpu_device_run.sh", "--small"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads((tmp_path / "out" / "figures.json").read_text())
    assert result["runs"] == {"vqascore_llava": {"exit": "0", "seconds": result["runs"]["vqascore_llava"]["seconds"],
                                                 "stopped_by_time_limit": False}}
    assert result["figures"]["vqascore_llava"]["vqascore_llava_vs_forward_ratio"]["value"] > 0
    assert "no wheels in" in run.stdout and "vqascore_llava_vs_forward_ratio=" in run.stdout
    assert (tmp_path / "out" / "vqascore_llava.log").exists() and (tmp_path / "out" / "run.log").exists()
    assert not list(tmp_path.glob("t2ireason-gpu-work-*"))
