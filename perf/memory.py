"""What ``t2ireason evaluate`` holds in memory for each image it scores (issue 51), one ``key=value`` line each.

- ``evaluate_kb_per_image``: the peak resident memory (Linux's ``VmHWM``) of ``t2ireason evaluate`` over an HTTP
  judge (the local OpenAI-compatible test server in its own process, answering every request at once, each of the
  schema's questions scored 0 or 1 by a hash of the request) on a run of R2I-Bench's full-size synthetic build (``perf/build.py``), at
  ``SMALL`` and at ``LARGE`` images (each a distinct PNG of noise of 64 and of 256 pixels, ``--px``), each in a fresh process: the difference over the difference in images, in
  KB. What a process holds at its start (the interpreter, the imports, the rows file) cancels out; what grows
  with the images is what is held per image. Median of ``--rounds`` rounds (default 2), the two sizes in turn.
  Target: at most ``TARGET_KB`` KB an image. Beside it each size's peak in MB.

A last line ``targets_met=<true|false>`` sums up; the exit status is 1 when the figure missed its target.

    python perf/memory.py [--small 64] [--large 1024] [--rounds 2] [--px 64 256]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME)
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "perf")]

from _http import _server  # noqa: E402
from _report import failed, figure, summary  # noqa: E402

from t2ireason.testing_http import Answer  # noqa: E402

SMALL, LARGE, TARGET_KB = 64, 1024, 16.0
#: 256 px, the issue's regime, where the images in flight make the peak; 64 px, where the command's end makes it
PX = (64, 256)
#: runs the command in this child and prints its own peak resident memory last (KB, Linux's ``VmHWM``): not
#: ``ru_maxrss``, which counts the resident memory of the process that started it (this one, with the build in
#: memory) as a floor, so a small command read this script's size rather than its own (issue 51)
_CHILD = ("import sys\nfrom t2ireason import cli\ntry:\n    status = cli.main(sys.argv[1:])\nfinally:\n"
          "    hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
          "    print('peak_kb=%s' % hwm[0])\nsys.exit(status)\n")


def every_question_scored(request) -> Answer:
    """The server's answer: each question of the request's schema scored 0 or 1 by a hash of the request (R2I-Bench's
    reply). The scores spread as real ones do, so the aggregate's bootstrap runs: all alike, it is skipped, and its
    memory went unmeasured (issue 51)."""
    schema = request.body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    seed = zlib.crc32(json.dumps(request.body, sort_keys=True).encode())
    return Answer(json.dumps({k: (seed >> i) & 1 for i, k in enumerate(schema.get("properties", {"score": 1}))}))


def _run(folder: Path, data: Path, images: int, px: int = 256) -> Path:
    """A run of the first ``images`` prompts, each image a distinct ``px`` pixel PNG of noise (distinct bytes: an
    image held after it is scored shows, which one file linked everywhere would hide)."""
    from PIL import Image

    from t2ireason.runs import Run

    run = Run.create(folder, "r2i-bench", data=data, limit=images)
    for i, row in enumerate(run.rows()):
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.effect_noise((px, px), 20 + i % 200).convert("RGB").save(path)
    return run.path


def peak_kb(run: Path, base_url: str) -> int:
    """The peak resident memory of one ``t2ireason evaluate`` of ``run`` in a fresh process."""
    argv = ["evaluate", "--run", str(run), "--judge", f"openai:test-model@{base_url}", "--options",
            '{"structured_output": true}', "--no-cache", "--no-progress", "--allow-failed"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "OPENAI_API_KEY": "k", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, *argv], env=env, capture_output=True, text=True,
                          timeout=900)
    lines = [x for x in done.stdout.splitlines() if x.startswith("peak_kb=")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"evaluate exited {done.returncode}: {done.stderr[-2000:]}")
    return int(lines[-1].split("=")[1])


def kb_per_image(small: int, large: int, rounds: int, px: int) -> tuple[float, dict]:
    import build as perf_build

    from t2ireason.build import build_dataset

    work = Path(_HOME) / f"work-{px}"
    release, data = work / "release", work / "hub"
    perf_build.write_release(release, max(large, 2968))
    build_dataset("r2i-bench", release, data, license="other")
    peaks: dict[int, list[int]] = {small: [], large: []}
    with _server(behaviour=every_question_scored, record=True) as base_url:  # record: the behaviour reads the body
        for r in range(rounds):
            for images in (small, large) if r % 2 == 0 else (large, small):  # in turn: load moves both alike
                run = _run(work / f"run-{r}-{images}", data, images, px)
                peaks[images].append(peak_kb(run, base_url))
    slopes = [(b - a) / (large - small) for a, b in zip(peaks[small], peaks[large])]
    return statistics.median(slopes), {"small_images": small, "large_images": large,
                                       "small_peak_mb": statistics.median(peaks[small]) / 1024,
                                       "large_peak_mb": statistics.median(peaks[large]) / 1024,
                                       "rounds": ",".join(f"{s:.1f}" for s in slopes), "image_px": px,
                                       "load_average": f"{os.getloadavg()[0]:.1f}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--small", type=int, default=SMALL, help=f"images of the small run (default {SMALL})")
    parser.add_argument("--large", type=int, default=LARGE, help=f"images of the large run (default {LARGE})")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both sizes (default 2)")
    parser.add_argument("--px", type=int, nargs="+", default=list(PX),
                        help=f"side of each image in pixels, one figure each (default {' '.join(map(str, PX))})")
    args = parser.parse_args(argv)
    if not 0 < args.small < args.large <= 2968:
        parser.error("--small and --large: 0 < small < large <= 2968 (R2I-Bench's prompts)")
    target = ("<=", TARGET_KB)
    try:
        # one figure a size: the headline is the largest, since large images hide the growth under the transient
        # peak of the images in flight, which small ones do not (the command's peak is then at its end)
        measured = {px: kb_per_image(args.small, args.large, args.rounds, px) for px in args.px}
    except Exception as e:  # noqa: BLE001 - said, and the exit status says it missed
        return summary(failed("evaluate_kb_per_image", e, target))
    worst = max(measured, key=lambda px: measured[px][0])
    value, details = measured[worst]
    details = {**details, **{f"at_{px}px": f"{v:.1f} (rounds {d['rounds']})" for px, (v, d) in measured.items()}}
    return summary(figure("evaluate_kb_per_image", value, details, target, digits=1))


if __name__ == "__main__":
    import shutil

    try:
        status = main()
    finally:
        shutil.rmtree(_HOME, ignore_errors=True)
    sys.exit(status)
