"""One engine run in its own process, for the kill tests (test_datatrove.py) and perf/engine.py:

    python _engine_run.py ROOT --tasks N --workers W [--delay SECONDS] [--pids FILE]

Inputs under ROOT/inputs (scripted.make_inputs), the scripted judge (sleeping ``delay`` per request, noting
its process in ``pids``) and the scripted drawer (``delay`` per image), release in ROOT/out. Exit status 0
when the release is written, 1 when tasks are left for another run.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for engine.scripted in the workers

from engine.scripted import THRESHOLDS, Replies, ScriptedDrawer, input_paths  # noqa: E402
from t2ireason.engine import EngineConfig, Local, Sources, run_engine  # noqa: E402
from t2ireason.judges.scripted import ScriptedJudge  # noqa: E402

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("--tasks", type=int, default=None)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--pids", default=None)
    p.add_argument("--shard-size", type=int, default=5)
    args = p.parse_args()
    result = run_engine(args.root / "work", Sources(**input_paths(args.root / "inputs")),
                        EngineConfig(shard_size=args.shard_size, thresholds=THRESHOLDS, review_size=3),
                        judge=ScriptedJudge(replies=Replies(args.delay, args.pids)), cache=args.root / "cache.sqlite",
                        drawer=ScriptedDrawer(args.delay), executor=Local(tasks=args.tasks, workers=args.workers),
                        out=args.root / "out", license="apache-2.0", progress=False)
    for summary in result.stages:
        print(summary.line(), summary.failures, flush=True)
    sys.exit(0 if result.complete else 1)
