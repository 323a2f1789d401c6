"""The data engine on datatrove's local executor (issue 13), one ``key=value`` line each, measured side by
side in one run on a simulated model: a judge that sleeps for each request and a drawer that sleeps for
each image (no compute, so the figures are about scheduling, not about the cores).

- ``speedup_2_workers``: the whole engine (24 candidates, 12 shards, one task per shard, 0.15 s a request
  and an image) on one worker over the same on two: wall time of ``run_engine``, the workers' start-up
  (a few seconds, once per run) included (target at least 1.6);
- ``boundary_idle_fraction``: on two workers, the time a worker waits between its last task of a stage
  and its first of the next (the next stage starts when every task of the one before has completed),
  over workers x wall time (target at most 0.15);
- ``imbalance_many_small`` / ``imbalance_few_large``: one source much slower (the mined text images' 6
  records take 15 times longer a request): the slowest worker's busy time over the mean, summed over the
  stages, with one task per shard (12) against two tasks (datatrove's static split: task i takes shards
  i, i+2, ...); target at most 1.25 with many small tasks.

A last line ``targets_met=<true|false>`` sums up; details follow each figure as ``<figure>.<detail>=``.

    python perf/engine.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-engine-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME,
                  OMP_NUM_THREADS="1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the engine tests' scripted inputs, replies and drawer

from _report import figure, summary  # noqa: E402
from engine.scripted import THRESHOLDS, ScriptedDrawer, input_paths, make_inputs, reply  # noqa: E402

from t2ireason.engine import EngineConfig, Local, Sources, run_engine  # noqa: E402
from t2ireason.judges.scripted import ScriptedJudge  # noqa: E402

TARGETS = {"speedup_2_workers": (">=", 1.6), "boundary_idle_fraction": ("<=", 0.15),
           "imbalance_many_small": ("<=", 1.25)}


class SleepingReplies:
    """The scripted replies after ``seconds`` per request (``slow`` for the mined text images' records)."""

    def __init__(self, seconds: float, slow: float | None = None):
        self.seconds, self.slow = seconds, slow

    def __call__(self, request):
        slow = self.slow is not None and request.metadata["id"].startswith("text-")
        time.sleep(self.slow if slow else self.seconds)
        return reply(request)


def run(name: str, *, workers: int, tasks: int | None, seconds: float, slow: float | None = None,
        image_seconds: float = 0.0):
    root = Path(_HOME) / name
    make_inputs(root / "inputs")
    start = time.monotonic()
    result = run_engine(root / "work", Sources(**input_paths(root / "inputs")),
                        EngineConfig(shard_size=2, thresholds=THRESHOLDS, review_size=3),
                        judge=ScriptedJudge(replies=SleepingReplies(seconds, slow)), cache=None,
                        drawer=ScriptedDrawer(image_seconds), executor=Local(tasks=tasks, workers=workers),
                        out=root / "out", license="apache-2.0", progress=False)
    wall = time.monotonic() - start
    if not result.complete:
        raise RuntimeError(f"{name}: the run did not complete: {[s.failures for s in result.stages]}")
    return result, wall


def boundary_idle(result, workers: int) -> tuple[float, float]:
    """Worker-seconds waiting between a stage's last task and the next stage's first, and that over
    workers x (first task start to last task end)."""
    tasks = sorted((start, end, worker, i) for i, s in enumerate(result.stages) for _, worker, start, end in s.timeline)
    wall = max(t[1] for t in tasks) - min(t[0] for t in tasks)
    idle = 0.0
    for w in range(workers):
        mine = [t for t in tasks if t[2] == w]
        idle += sum(b[0] - a[1] for a, b in zip(mine, mine[1:]) if a[3] != b[3])
    return idle, idle / (workers * wall)


def imbalance(result, workers: int) -> float:
    """Sum over the model stages of the busiest worker's time, over the sum of the mean worker's."""
    slowest = mean = 0.0
    for s in result.stages[:-2]:  # the model stages (not the export)
        busy = [sum(end - start for _, w, start, end in s.timeline if w == worker) for worker in range(workers)]
        slowest, mean = slowest + max(busy), mean + sum(busy) / workers
    return slowest / mean


def main() -> int:
    figures: dict[str, tuple[float, dict]] = {}
    one, one_wall = run("one-worker", workers=1, tasks=None, seconds=0.15, image_seconds=0.15)
    two, two_wall = run("two-workers", workers=2, tasks=None, seconds=0.15, image_seconds=0.15)
    requests = sum(s.stats.get("requests", 0) for s in one.stages)
    figures["speedup_2_workers"] = (one_wall / two_wall, {"one_worker_seconds": one_wall,
                                                          "two_workers_seconds": two_wall, "requests": requests})
    idle, fraction = boundary_idle(two, 2)
    figures["boundary_idle_fraction"] = (fraction, {"idle_worker_seconds": idle, "stage_boundaries": 10})
    small, small_wall = run("many-small", workers=2, tasks=None, seconds=0.02, slow=0.3)
    large, large_wall = run("few-large", workers=2, tasks=2, seconds=0.02, slow=0.3)
    figures["imbalance_many_small"] = (imbalance(small, 2), {"tasks": 12, "wall_seconds": small_wall})
    figures["imbalance_few_large"] = (imbalance(large, 2), {"tasks": 2, "wall_seconds": large_wall})

    met = True
    for name, (value, details) in figures.items():
        met &= figure(name, value, details, TARGETS.get(name))
    return summary(met)


if __name__ == "__main__":
    sys.exit(main())
