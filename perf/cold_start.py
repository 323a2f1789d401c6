"""What a command costs before it does any work: start-up, imports, the fixed cost of a resume.

Every time is the wall time of a fresh process (as a user runs it), the median of interleaved
repeats (one of each per round, so that load on the machine moves all alike). Figures:

- ``cli_help_seconds_ratio``: ``t2ireason --help`` over ``python -c pass`` (target: at most 5;
  ``cli_help_seconds`` beside it, target under 0.5 s). Building the parser imports only the
  chosen subcommand's modules, so the top-level help imports none of the libraries.
- ``import_for_http_scoring_ratio``: importing what an HTTP-judged ``evaluate.load`` needs
  (``evaluate``, the ``r2i_score`` module loaded with ``judge="openai:..."``, the HTTP judge), over
  ``import datasets``. No target: ``import evaluate`` imports ``evaluate.evaluator``, which imports
  ``transformers.pipelines`` and torch whatever the metric needs (printed as ``.torch_imported``);
  nothing in this package can avoid that (see perf/README.md).
- ``import_for_cli_http_scoring_ratio``: what ``t2ireason evaluate --judge openai:...`` imports
  before it asks anything (the command, the run, the benchmark module, the HTTP judge and its
  cache), over ``import datasets`` (target: at most 3, and neither torch, ``transformers`` nor
  ``evaluate`` imported: ``.heavy_imported`` must be empty).
- ``evaluate_fixed_cost_seconds``: ``t2ireason evaluate`` on a finished run of R2I-Bench at full
  size (2,968 prompts) with an HTTP judge: the seconds from the end of start-up (every import
  done) to the command's return, in a fresh process; nothing is left to score, so this is the
  fixed cost of a resume (reading the run's rows, images and results). Printed beside its
  denominator, ``evaluate_fixed_cost_seconds.startup_seconds`` (the imports of the same process).
  Target: at most 0.5 s.

The script prints every figure, then exits 1 if any missed its target.

    python perf/cold_start.py [--repeats 7] [--prompts 2968]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Like the tests: never reach a hub, keep caches out of the user's home.
_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "HF_HOME": _HOME, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
os.environ.update({k: ENV[k] for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME")})
sys.path.insert(0, str(ROOT / "perf"))

from _report import figure, summary  # noqa: E402

JUDGE = "openai:perf-judge@http://127.0.0.1:9/v1"  # never reached: nothing is left to ask
OPTIONS = '{"structured_output": true}'
HEAVY = ("torch", "transformers", "transformers.pipelines", "evaluate", "diffusers")

#: figure -> (comparison, target)
TARGETS = {
    "cli_help_seconds_ratio": ("<=", 5.0),
    "cli_help_seconds": ("<=", 0.5),
    "import_for_cli_http_scoring_ratio": ("<=", 3.0),
    "evaluate_fixed_cost_seconds": ("<=", 0.5),
}

EVALUATE_LOAD = f"""
import sys
import evaluate
metric = evaluate.load({str(ROOT / 'metrics' / 'r2i_score')!r}, judge={JUDGE!r})
import t2ireason.judges.openai_judge, t2ireason.judges.cache
print("TORCH", "torch" in sys.modules)
"""

CLI_IMPORTS = """
import json, sys
from t2ireason import cli, runs, scoring
from t2ireason.benchmarks import get_benchmark
get_benchmark("r2i-bench")
import t2ireason.judges.openai_judge, t2ireason.judges.cache
print("HEAVY", json.dumps([m for m in HEAVY_NAMES if m in sys.modules]))
""".replace("HEAVY_NAMES", repr(HEAVY))

NOOP_RESUME = """
import json, sys, time
t0 = time.perf_counter()
from t2ireason import cli, runs, scoring
from t2ireason.benchmarks import get_benchmark
get_benchmark("r2i-bench")
import t2ireason.judges.openai_judge, t2ireason.judges.cache
t1 = time.perf_counter()
status = cli.main(["evaluate", "--run", sys.argv[1], "--judge", sys.argv[2], "--options", sys.argv[3],
                   "--no-progress", "--allow-failed"])
t2 = time.perf_counter()
print("TIMES", json.dumps({"startup": t1 - t0, "fixed": t2 - t1, "status": status}))
"""


def timed_process(argv: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0 or "error:" in proc.stderr:
        raise RuntimeError(f"{argv[:3]}... exited {proc.returncode}: {proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def help_command() -> list[str]:
    script = Path(sys.executable).parent / "t2ireason"  # the console script, as installed
    return [str(script), "--help"] if script.is_file() else [sys.executable, "-m", "t2ireason.cli", "--help"]


def finished_run(folder: Path, prompts: int) -> Path:
    """A run of a full-size synthetic R2I-Bench build, every image scored (by a scripted judge
    standing in for the HTTP one, under the same judge spec, so the command finds it finished)."""
    import build as perf_build  # perf/build.py: the synthetic release of the official size
    from PIL import Image

    import t2ireason.judges
    from t2ireason import cli
    from t2ireason.build import build_dataset
    from t2ireason.judges.scripted import ScriptedJudge
    from t2ireason.runs import Run

    release, data = folder / "release", folder / "hub"
    perf_build.write_release(release, prompts)
    build_dataset("r2i-bench", release, data, license="other")
    run = Run.create(folder / "run", "r2i-bench", data=data)
    image = folder / "image.png"
    Image.new("RGB", (64, 64), "white").save(image)
    for row in run.rows():
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(image, path)

    def reply(request):
        return json.dumps({k: 1 for k in request.json_schema["properties"]})

    real = t2ireason.judges.load_judge
    t2ireason.judges.load_judge = lambda spec, cache=None, **kw: ScriptedJudge(reply, model="perf-judge")
    try:
        status = cli.main(["evaluate", "--run", str(run.path), "--judge", JUDGE, "--options", OPTIONS, "--no-cache",
                           "--no-progress", "--allow-failed"])
    finally:
        t2ireason.judges.load_judge = real
    if status != 0:
        raise RuntimeError(f"scoring the perf run failed ({status})")
    return run.path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--prompts", type=int, default=2968, help="R2I-Bench prompts of the resumed run")
    args = parser.parse_args(argv)

    run = finished_run(Path(_HOME) / "fixed-cost", args.prompts)
    noop = [sys.executable, "-c", NOOP_RESUME, str(run), JUDGE, OPTIONS]
    commands = {
        "python": [sys.executable, "-c", "pass"],
        "help": help_command(),
        "datasets": [sys.executable, "-c", "import datasets"],
        "evaluate_load": [sys.executable, "-c", EVALUATE_LOAD],
        "cli_imports": [sys.executable, "-c", CLI_IMPORTS],
        "noop": noop,
    }
    for argv_ in commands.values():  # warm the file system cache once
        timed_process(argv_)
    times: dict[str, list[float]] = {name: [] for name in commands}
    inner: dict[str, list[float]] = {"startup": [], "fixed": []}
    outputs: dict[str, str] = {}
    for _ in range(args.repeats):
        for name, argv_ in commands.items():
            elapsed, out = timed_process(argv_)
            times[name].append(elapsed)
            outputs[name] = out
            if name == "noop":
                measured = json.loads(out.split("TIMES", 1)[1])
                if measured["status"] != 0:
                    raise RuntimeError(f"the no-op resume exited {measured['status']}: {out}")
                inner["startup"].append(measured["startup"])
                inner["fixed"].append(measured["fixed"])
    med = {name: statistics.median(t) for name, t in times.items()}
    heavy = json.loads(outputs["cli_imports"].split("HEAVY", 1)[1])
    figures = {
        "cli_help_seconds_ratio": med["help"] / med["python"],
        "cli_help_seconds": med["help"],
        "import_for_http_scoring_ratio": med["evaluate_load"] / med["datasets"],
        "import_for_cli_http_scoring_ratio": med["cli_imports"] / med["datasets"],
        "evaluate_fixed_cost_seconds": statistics.median(inner["fixed"]),
    }
    details = {
        "cli_help_seconds_ratio": {"python_seconds": med["python"]},
        "import_for_http_scoring_ratio": {
            "seconds": med["evaluate_load"], "import_datasets_seconds": med["datasets"],
            "torch_imported": "TORCH True" in outputs["evaluate_load"]},
        "import_for_cli_http_scoring_ratio": {"seconds": med["cli_imports"], "heavy_imported": heavy},
        "evaluate_fixed_cost_seconds": {"startup_seconds": statistics.median(inner["startup"]),
                                        "command_seconds": med["noop"], "prompts": args.prompts},
    }
    met = True
    for name, value in figures.items():
        met &= figure(name, value, details.get(name), TARGETS.get(name),
                      ok=not (heavy and name == "import_for_cli_http_scoring_ratio"))
    return summary(met)


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        import shutil

        shutil.rmtree(_HOME, ignore_errors=True)
