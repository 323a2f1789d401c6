"""``perf/gpu.py --profile DIR``: torch.profiler around a stretch of a section, for the gaps a ratio cannot
explain (issue 41: VQAScore's 1.17-1.20 x the forward alone, the eager JSON path's half of bare ``generate``).

Each profiled stretch leaves, in DIR, its Chrome trace (``<section>.<name>.trace.json.gz``: open it in
https://ui.perfetto.dev or chrome://tracing) and its host operations by self time
(``<section>.<name>.top.txt``), and prints two figures: the share of the stretch's wall time the device
was running a kernel or a copy (``device_busy_share``; none on a CPU) and the five host operations that
took the most time of their own."""

from __future__ import annotations

import gzip
import shutil
from contextlib import contextmanager
from pathlib import Path


def busy_share(intervals: list[tuple[float, float]]) -> float | None:
    """The share of the span from the first start to the last end that some interval covers."""
    if not intervals:
        return None
    intervals = sorted(intervals)
    covered, (start, end) = 0.0, intervals[0]
    for s, e in intervals[1:]:
        if s > end:
            covered += end - start
            start, end = s, e
        else:
            end = max(end, e)
    covered += end - start
    span = max(e for _, e in intervals) - intervals[0][0]
    return covered / span if span > 0 else None


@contextmanager
def profiled(setup, section: str, name: str, folder: Path | None):
    """Profile the body (host and, on CUDA, device activity) when ``folder`` is given; else run it as is."""
    if folder is None:
        yield
        return
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    folder.mkdir(parents=True, exist_ok=True)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if setup.device == "cuda" else [])
    with profile(activities=activities) as prof:
        yield
        setup.sync()
    trace = folder / f"{section}.{name}.trace.json"
    prof.export_chrome_trace(str(trace))
    with open(trace, "rb") as raw, gzip.open(f"{trace}.gz", "wb") as packed:
        shutil.copyfileobj(raw, packed)
    trace.unlink()
    averages = prof.key_averages()
    (folder / f"{section}.{name}.top.txt").write_text(averages.table(sort_by="self_cpu_time_total", row_limit=30))
    top = sorted(averages, key=lambda e: e.self_cpu_time_total, reverse=True)[:5]
    details = {"trace": f"{trace.name}.gz",
               "top_host": "; ".join(f"{e.key} {e.self_cpu_time_total / 1000:.1f} ms x{e.count}" for e in top)}
    device = [(e.time_range.start, e.time_range.end) for e in prof.events() if e.device_type == DeviceType.CUDA]
    share = busy_share(device)
    setup.record(section, f"profile_{name}_device_busy_share", share if share is not None else "no device activity",
                 **details)
