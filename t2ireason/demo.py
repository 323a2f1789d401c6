"""The offline end-to-end demo (``make demo``): the whole loop on the shipped samples.

1. Builds tiny random models locally (a Stable Diffusion pipeline, a LLaVA-layout
   judge) and loads them through the same ``from_pretrained`` paths real models take.
2. Asks the judge about the sample images shipped with the package: VQAScore's
   P("Yes"), one structured-JSON judgement (the judge layer on its own) and VIEScore.
3. Runs ``t2ireason run`` on each judged benchmark's sample release: build the Hub
   dataset from the release, generate the images, score them with the benchmark's
   metric module, and report the paper's table, plots and an HTML gallery. The first
   run is also scored with another metric, VIEScore (``t2ireason evaluate --metric``),
   an evaluation of its own that the report shows beside the benchmark's.

Nothing reaches a hub. The models are random, so their images are noise and their
judgements meaningless: the demo shows every step working, not a result. The judge
answers under each benchmark's reply schema (``structured_output``: constrained
decoding), with seeded sampling nudged toward short answers
(:func:`t2ireason.testing.tiny_judge_kwargs`), so its replies parse and score.

    python -m t2ireason.demo [--out demo_output] [--limit N]
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from . import cli, testing
from .benchmarks import JUDGED, get_benchmark
from .commands.options import positive_int
from .console import Parser


def _quiet() -> None:
    """The tiny models trip warnings a real model never would (a 16-token CLIP, no torchvision)."""
    import datasets
    import diffusers
    import huggingface_hub
    import transformers

    huggingface_hub.utils.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    diffusers.logging.set_verbosity_error()
    diffusers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    logging.getLogger("transformers").setLevel(logging.ERROR)


def ask_the_judge(models: dict[str, Path], judge_kwargs: dict) -> None:
    """Step 2: the judge layer alone, on the sample images the package ships."""
    from .alignment import vqascore
    from .baselines import get_baseline
    from .benchmarks.prism_bench import REPLY_SCHEMA, judge_requests, parse_judgement
    from .judges import load_judge
    from .parsing import ask_structured

    sample = get_benchmark("flux-reason-6m").sample_path()
    records = [json.loads(line) for line in (sample / "metadata.jsonl").read_text().splitlines()][:3]
    images = [sample / r["file_name"] for r in records]
    prompts = [next(c for c in r["captions"].values() if c) for r in records]
    judge = load_judge(f"hf:{models['vlm']}", **judge_kwargs)
    print("VQAScore, P('Yes' | image, 'Does this figure show \"{prompt}\"? Please answer yes or no.'):")
    for image, prompt, p in zip(images, prompts, vqascore(images, prompts, judge)):
        print(f"  {image.name}  P(Yes) = {p:.4f}   {prompt[:70]}")
    [request, _] = judge_requests(prompts[0], "imagination", images[0], json_schema=REPLY_SCHEMA)
    [outcome] = ask_structured(judge, [request], parse_judgement)
    print("One PRISM-Bench alignment judgement, asked for as JSON (schema enforced by constrained decoding):")
    print(f"  reply: {outcome.texts[-1]}")
    print(f"  parsed: {outcome.value if outcome.ok else 'failed: ' + str(outcome.error)}")
    [vie] = get_baseline("viescore").score(prompts[:1], images[:1], judge, structured_output=True)
    print("VIEScore (the paper's t2i prompts; O = sqrt(min SC x min PQ), 0-10), with its reasons:")
    print(f"  SC {vie.subscores.get('SC')}  PQ {vie.subscores.get('PQ')}  O {vie.subscores.get('O', float('nan')):.2f}"
          f"   reasoning: {(vie.questions[0].reasoning or '')[:60]!r}" if vie.failure is None
          else f"  failed: {vie.failure}")


def _cpu_seconds() -> float:
    """User and system CPU time of this process and the processes it waited for."""
    import resource

    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m t2ireason.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="demo_output", help="where models, runs and reports go (reused)")
    parser.add_argument("--limit", type=positive_int, default=None,
                        help="prompts per benchmark (default: the whole sample)")
    parser.add_argument("--benchmarks", nargs="+", default=list(JUDGED), choices=JUDGED)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    _quiet()
    out = Path(args.out).resolve()

    print("== 1. tiny local models (random weights, saved and reloaded with from_pretrained)")
    models = testing.build_all(out / "models")
    judge_kwargs = {"device": "cpu", **testing.tiny_judge_kwargs(models["vlm"])}
    print(f"   generator {models['sd']}\n   judge     {models['vlm']}")

    print("\n== 2. the judge layer on the sample images")
    ask_the_judge(models, judge_kwargs)

    reports = {}
    for n, name in enumerate(args.benchmarks, start=3):
        bench = get_benchmark(name)
        print(f"\n== {n}. t2ireason run: {bench.pretty_name} (sample release -> dataset -> images -> "
              f"{bench.metric} -> report)")
        run_dir = out / "runs" / name
        argv = ["run", "--benchmark", name, "--source", str(bench.sample_path()), "--out", str(run_dir),
                "--run-name", "tiny-sd", "--model", str(models["sd"]), "--steps", "2", "--height", "64",
                "--width", "64", "--batch-size", "8", "--judge", f"hf:{models['vlm']}",
                "--judge-kwargs", json.dumps(judge_kwargs), "--options", json.dumps({"structured_output": True}),
                "--cache", str(out / "judge_cache.sqlite"), "--name", "tiny-judge"]
        if bench.license is None:
            argv += ["--license", "apache-2.0"]  # the samples are the project's own writing
        if args.limit:
            argv += ["--limit", str(args.limit)]
        code = cli.main(argv)
        if code:
            return code
        if n == 3:  # another metric as an evaluation of the same run, reported beside the benchmark's own
            print("\n   t2ireason evaluate --metric viescore: the same images, scored with VIEScore")
            code = cli.main(["evaluate", "--run", str(run_dir), "--metric", "viescore", "--judge", f"hf:{models['vlm']}",
                             "--judge-kwargs", json.dumps(judge_kwargs), "--options",
                             json.dumps({"structured_output": True}), "--cache", str(out / "judge_cache.sqlite"),
                             "--name", "viescore-tiny-judge", "--no-progress"])
            code = code or cli.main(["report", str(run_dir)])
            if code:
                return code
        reports[bench.pretty_name] = run_dir / "report" / "report.html"

    print(f"\n== done in {time.perf_counter() - start:.0f} s ({_cpu_seconds():.0f} CPU seconds, what a busy machine does "
          "not stretch). HTML reports (open in a browser):")
    for pretty, path in reports.items():
        print(f"   {pretty:16s} {path}")
    print("Compare runs side by side: t2ireason report <run> <run> --out <folder>")
    return 0


if __name__ == "__main__":
    sys.exit(main())
