"""The ``t2ireason`` command line: one tool for the whole loop.

Each subcommand is a thin layer over a library function; ``generators/`` and
``datasets_scripts/`` scripts call the same subcommands, so options are
defined once, here.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__

#: subcommand -> (add its arguments, run it, one-line help). Only the chosen subcommand's
#: arguments are built, so ``t2ireason --help`` imports none of the libraries the steps need.
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {}


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _json_dict(text: str) -> dict:
    try:
        value = json.loads(text, parse_constant=_no_constant)  # NaN and Infinity are not valid values
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON: {e}") from None
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object, e.g. '{\"max_sequence_length\": 256}'")
    return value


def finite_float(low: float | None = None, high: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number (never nan or inf), within ``[low, high]`` where given."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f">= {low:g}" if high is None else f"<= {high:g}" if low is None else f"in [{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {value:g}")
        return value

    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_data_args(p: argparse.ArgumentParser) -> None:
    from .benchmarks import MODULES

    p.add_argument("--benchmark", required=True, choices=sorted(MODULES), help="which benchmark")
    p.add_argument("--data", default=None,
                   help="Hub dataset id or folder built by datasets_scripts/build.py (default: the small sample shipped with the package)")
    p.add_argument("--configs", nargs="+", default=None, help="configs to use (default: all)")
    p.add_argument("--limit", type=_positive_int, default=None, help="use only the first N prompts (quick runs)")


def _load_prompt_overrides(path: str | None) -> dict[Any, str] | None:
    """Rewritten prompts (decoupled baselines): a JSONL/JSON/Parquet file or dataset folder with an id column and
    a rewritten_prompt (``t2ireason rewrite``), reason_prompt (T2I-ReasonBench's pipeline_prompts/) or prompt
    column; the ids in any form the benchmark takes for its rows (plan_jobs joins them)."""
    if not path:
        return None
    import datasets

    p = Path(path)
    if p.is_file():
        kind = "parquet" if p.suffix == ".parquet" else "json"
        ds = datasets.load_dataset(kind, data_files=str(p), split="train")
    else:
        ds = datasets.load_from_disk(str(p)) if (p / "dataset_info.json").exists() else datasets.load_dataset(str(p), split="train")
    column = next((c for c in ("rewritten_prompt", "reason_prompt", "prompt") if c in ds.column_names), None)
    if "id" not in ds.column_names or column is None:
        raise SystemExit(f"error: {path} needs an 'id' column and a 'rewritten_prompt', 'reason_prompt' or 'prompt' "
                         f"column; it has {ds.column_names}")
    missing = [str(i) for i, t in zip(ds["id"], ds[column]) if not t]
    if missing:  # never fall back to the original prompt in silence
        raise SystemExit(f"error: {len(missing)} rows of {path} have no rewritten prompt (ids {missing[:5]}...); "
                         "run the rewriting again (cached replies are reused) or drop them")
    prompts: dict[Any, str] = {}
    for i, text in zip(ds["id"], ds[column]):
        if prompts.setdefault(i, str(text)) != str(text):
            raise SystemExit(f"error: {path} gives id {i!r} two different prompts: one row each, please")
    return prompts


def add_generate_args(p: argparse.ArgumentParser) -> None:
    _add_data_args(p)
    p.add_argument("--out", required=True, help="output folder (images in the benchmark's official layout + metadata.parquet)")
    _add_generation_args(p)
    p.add_argument("--retry-failed", action="store_true",
                   help="draw again the images that failed for a transient reason (server errors, broken replies); "
                        "a refusal is kept")


def _add_generation_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="the generator: a diffusers Hub id or folder (or diffusers:<...>), openai:<model>[@<base url>] "
                        "(the OpenAI Images API: GPT-Image-1, DALL-E 3, compatible servers), hf:<Hub id or folder> "
                        "(Janus, Janus-Pro), python:<module>:<callable> (your own function of prompts and seeds)")
    p.add_argument("--generator-kwargs", type=_json_dict, default={},
                   help='backend options as JSON, e.g. \'{"max_concurrency": 4, "timeout": 120}\' for openai:')
    p.add_argument("--quality", default=None, help="an image API's quality (OpenAI: low, medium, high, auto; hd)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"],
                   help="model dtype (default auto: float16 on GPU, float32 on CPU; float16 needs a GPU)")
    p.add_argument("--steps", type=_positive_int, default=None, help="inference steps (default: the pipeline's)")
    p.add_argument("--guidance", type=finite_float(0), default=None,
                   help="guidance scale, a number >= 0 (default: the pipeline's)")
    p.add_argument("--height", type=_positive_int, default=None, help="image height (default: the pipeline's)")
    p.add_argument("--width", type=_positive_int, default=None, help="image width (default: the pipeline's)")
    p.add_argument("--images-per-prompt", type=_positive_int, default=1,
                   help="images per prompt, each with its own seed (default: 1)")
    p.add_argument("--batch-size", type=_positive_int, default=1, help="prompts per pipeline call")
    p.add_argument("--seed", type=int, default=0, help="base seed mixed into each image's seed")
    p.add_argument("--pipeline-kwargs", type=_json_dict, default={}, help="extra pipeline call arguments as JSON")
    p.add_argument("--cpu-offload", action="store_true", help="model CPU offload (GPU only)")
    p.add_argument("--vae-slicing", action="store_true", help="decode the VAE one image at a time")
    p.add_argument("--revision", default=None, help="model revision")
    p.add_argument("--prompts", default=None,
                   help="rewritten prompts to draw instead (JSONL/Parquet/dataset with id and rewritten_prompt)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (logs, CI)")


def _generation_config(args: argparse.Namespace, images: str | Path | None = None):
    """The generation settings, checked before any row, image or folder (the generator's pre-flight: its
    spec, the settings its backend takes, a model folder, a python callable, an endpoint's key and model;
    float16 needs a GPU). Where ``images`` holds a finished generation (a re-run), the endpoint is left to
    the generator's first request: nothing left to draw contacts no server."""
    from .generation import GenerationConfig, preflight_generator

    config = GenerationConfig(model=args.model, dtype=args.dtype, steps=args.steps, guidance=args.guidance,
                              height=args.height, width=args.width, images_per_prompt=args.images_per_prompt,
                              batch_size=args.batch_size, seed=args.seed, pipeline_kwargs=args.pipeline_kwargs,
                              cpu_offload=args.cpu_offload, vae_slicing=args.vae_slicing, revision=args.revision,
                              quality=args.quality)
    preflight_generator(config, contact=images is None or not (Path(images) / "metadata.parquet").is_file(),
                        **args.generator_kwargs)
    return config


def _generation_said(counts: dict, where) -> str:
    """What a generation step did, in words (this process's counts)."""
    said = f"{counts['generated']} generated, {counts['skipped']} already done"
    if counts.get("failed") or counts.get("failed_before"):
        said += (f", {counts.get('failed', 0) + counts.get('failed_before', 0)} could not be made (why: "
                 f"{Path(where) / 'failures.jsonl'})")
    return said


def run_generate(args: argparse.Namespace) -> int:
    from .data import load_rows
    from .generation import FAILURES, generate, plan_jobs, read_failures

    config = _generation_config(args, args.out)
    rows = load_rows(args.benchmark, args.data, args.configs, limit=args.limit)
    jobs = plan_jobs(args.benchmark, rows, images_per_prompt=args.images_per_prompt, base_seed=args.seed,
                     prompts=_load_prompt_overrides(args.prompts))
    counts = generate(jobs, config, args.out, progress=not args.no_progress, retry_failed=args.retry_failed,
                      **args.generator_kwargs)
    from accelerate import PartialState

    if not PartialState().is_main_process:
        return 0
    print(f"{len(jobs)} images in {args.out} (this process: {_generation_said(counts, args.out)}); "
          f"manifest: {Path(args.out) / 'metadata.parquet'}")
    failures = read_failures(args.out)
    for file, why in list(failures.items())[:5]:
        print(f"not made: {file}: {why['kind']}: {why['failure']}")
    transient = sum(why["retryable"] for why in failures.values())
    if transient:  # a script must not take an outage for a finished generation
        print(f"{transient} of them failed for a transient reason: run again with --retry-failed "
              f"(all: {Path(args.out) / FAILURES})")
    return 1 if transient else 0


COMMANDS["generate"] = (add_generate_args, run_generate,
                        "generate the benchmark's images with any generator (diffusers, OpenAI Images, Janus, "
                        "a python function)")


def _add_judge_args(p: argparse.ArgumentParser, default: str | None = None, required: bool = True) -> None:
    p.add_argument("--judge", default=default, required=required and default is None,
                   help="judge spec: openai:<model>[@<base url>], hf:<model or folder>, vllm:<model>"
                        + ("" if required else " (default: the preset's judge)"))
    p.add_argument("--judge-kwargs", type=_json_dict, default={},
                   help='backend options as JSON, e.g. \'{"max_concurrency": 8, "dtype": "bfloat16"}\'')
    p.add_argument("--cache", default=True, help="response cache file (default: ~/.cache/t2ireason)")
    p.add_argument("--no-cache", dest="cache", action="store_false", help="do not read or write the response cache")


def add_rewrite_args(p: argparse.ArgumentParser) -> None:
    from .rewriting import MODES

    _add_data_args(p)
    _add_judge_args(p)
    p.add_argument("--mode", choices=MODES, default="rewrite",
                   help="rewrite: an LLM makes prompts explicit (decoupled baseline); "
                        "describe: a text module writes the visual description (text score)")
    p.add_argument("--out", required=True, help="output folder (rewrites.parquet)")


def run_rewrite(args: argparse.Namespace) -> int:
    from .data import load_rows
    from .judges import load_judge, validate_judge
    from .rewriting import rewrite_prompts, save_rewrites

    validate_judge(args.judge, args.judge_kwargs)
    rows = load_rows(args.benchmark, args.data, args.configs, limit=args.limit)
    judge = load_judge(args.judge, cache=args.cache, **args.judge_kwargs)
    records = rewrite_prompts(args.benchmark, rows, judge, mode=args.mode)
    path = save_rewrites(records, args.out)
    failed = sum(r["failure"] is not None for r in records)
    print(f"{len(records) - failed} of {len(records)} prompts rewritten ({failed} failed) -> {path}")
    return 1 if failed else 0


COMMANDS["rewrite"] = (add_rewrite_args, run_rewrite, "rewrite prompts with an LLM, or describe them with a text module")


# -- datasets ------------------------------------------------------------------------------------

def _lazy(module: str, name: str) -> Callable:
    """A function of ``module`` imported when called (so ``--help`` stays fast)."""
    def call(*args, **kwargs):
        import importlib

        return getattr(importlib.import_module(module, __package__), name)(*args, **kwargs)

    return call


COMMANDS["build"] = (_lazy(".build", "add_build_args"), _lazy(".build", "run_build"),
                     "build a benchmark's Hub dataset (Parquet + card) from its official release")
COMMANDS["push"] = (_lazy(".publish", "add_push_args"), _lazy(".publish", "run_push"),
                    "publish a built dataset folder to the Hub")
COMMANDS["generate"] = COMMANDS.pop("generate")  # keep the loop's order in --help: build, push, generate, ...
COMMANDS["rewrite"] = COMMANDS.pop("rewrite")


# -- evaluate, report, export, run -------------------------------------------------------------------

def _presets_help() -> str:
    """Each judged benchmark's presets, from the benchmark modules themselves."""
    from .benchmarks import JUDGED, get_benchmark

    said = []
    for name in JUDGED:
        bench = get_benchmark(name)
        said.append(f"{name}: " + ", ".join(p + (" (default)" if p == bench.default_preset else "")
                                           for p in bench.presets))
    return "named judge setting of the benchmark's metric; " + "; ".join(said)


def _add_scoring_args(p: argparse.ArgumentParser) -> None:
    from .runs import LOCK_TIMEOUT

    _add_judge_args(p, required=False)
    p.add_argument("--preset", default=None, help=_presets_help())
    p.add_argument("--options", type=_json_dict, default={},
                   help='scoring options of the metric as JSON, e.g. \'{"structured_output": true, "max_reasks": 3}\'')
    p.add_argument("--name", default=None, help="name of this evaluation inside the run (default: from the judge)")
    p.add_argument("--chunk-size", type=_positive_int, default=32,
                   help="images scored between two saves of the results (resume granularity)")
    p.add_argument("--retry-failed", action="store_true",
                   help="score again the images that failed because the judge was unreachable (time-outs, "
                        "server errors); a failed reply is not retried (with `run`, also draw again the images "
                        "that failed for such a reason; a refusal is kept)")
    p.add_argument("--allow-failed", action="store_true",
                   help="exit 0 even when images failed because the judge was unreachable (default: exit 1)")
    p.add_argument("--lock-timeout", type=finite_float(0), default=LOCK_TIMEOUT,
                   help="seconds to wait for another process scoring the same evaluation of the run "
                        f"(default {LOCK_TIMEOUT:g}), then stop with an error")


def _check_scoring(args: argparse.Namespace, benchmark: str, run: str):
    """The judge, its options, the preset and the scoring options, checked before any folder is made; a
    local judge's checkpoint too, unless the evaluation in the run folder ``run`` is finished (then no
    judge is loaded)."""
    from .benchmarks import get_benchmark
    from .scoring import check_loadable, check_setting, judge_setting

    bench = get_benchmark(benchmark)
    setting = judge_setting(bench, args.preset, args.judge, args.judge_kwargs or None, args.options)
    check_setting(bench, setting)
    if setting.preset_settings is not None:  # which of the preset's backend settings the judge gets, in one line,
        print(setting.preset_settings.line())  # before the judge is contacted or anything is made
    if not _finished(run, args, setting):
        check_loadable(bench, setting)
    return setting


def _finished(run: str, args: argparse.Namespace, setting) -> bool:
    """Whether the run folder ``run`` holds this evaluation, finished (a re-run loads and asks no judge)."""
    from .runs import RUN_FILE, evaluation_name

    manifest = Path(run) / RUN_FILE
    if not manifest.is_file():
        return False
    try:
        evaluations = json.loads(manifest.read_text(encoding="utf-8")).get("evaluations") or {}
    except (OSError, ValueError, AttributeError):
        evaluations = {}
    name = args.name or evaluation_name(setting.judge, args.preset)
    return bool((evaluations.get(name) or {}).get("finished"))


def _preflight(args: argparse.Namespace, setting, folder: str) -> None:
    """Before any image is generated or scored and before the run folder is made, the judge is asked
    what scoring will ask (its key, its endpoint, an image with a JSON schema:
    :func:`t2ireason.judges.preflight_spec`) and the response cache is opened, unless this run's
    evaluation is already finished (a re-run contacts no server)."""
    from .judges import preflight_spec
    from .runs import Run, evaluation_name

    name = args.name or evaluation_name(setting.judge, args.preset)
    Run(folder, {}).evaluation_dir(name)  # a name that leaves the run: said before the judge is contacted
    if _finished(folder, args, setting):
        return
    if args.cache:
        from .judges.cache import ResponseCache, default_cache_path

        ResponseCache(default_cache_path() if args.cache is True else args.cache).check()
    preflight_spec(setting.loadable, setting.judge_kwargs, structured=True)


def _evaluate(run, args: argparse.Namespace) -> dict:
    scores = run.evaluate(args.judge, preset=args.preset, judge_kwargs=args.judge_kwargs or None,
                          options=args.options, name=args.name, cache=args.cache, chunk_size=args.chunk_size,
                          progress=not args.no_progress, retry_failed=args.retry_failed,
                          lock_timeout=args.lock_timeout, preflight=False)  # asked before the run was made
    judge = scores["judge"]
    failed, transient = scores["num_failed"], scores.get("num_retryable", 0)
    said = f"{failed} failed"
    if scores.get("num_not_generated"):
        said += f" ({scores['num_not_generated']} of them not generated)"
    if transient:
        said += (f", {transient} of them because the judge was unreachable: run again with --retry-failed "
                 "when it is back")
    if scores.get("retried"):
        said += f"; {scores['retried']} failed images scored again"
    if scores.get("reused"):
        said += f"; {scores['reused']} replies received before reused, not asked again"
    print(f"{scores['num_images']} images scored by {judge['backend']}:{judge.get('model_name') or judge['model']} "
          f"({said}; {scores['num_reasks']} re-asks) -> {run.evaluation_dir(scores['evaluation']) / 'scores.json'}")
    return scores


def _evaluation_status(run, scores: dict, args: argparse.Namespace) -> int:
    """1 when every image failed (said on stderr: how many, the first failure's cause, where every
    one is recorded), or some failed because the judge was unreachable (unless --allow-failed): a
    script or CI job must not take an outage for a score."""
    if scores["num_images"] and scores["num_failed"] == scores["num_images"]:
        from .runs import RESULTS_FILE

        name = scores["evaluation"]
        first = next((r for r in run.results(name) if r.failed), None)
        cause = " ".join(str(first.failure or "no score and no cause recorded").split()) if first else "unknown"
        cause = cause if len(cause) <= 300 else cause[:299] + "…"
        print(f"error: every image failed ({scores['num_failed']} of {scores['num_images']}); the first, "
              f"{first.id if first else '?'}: {cause}; each failure, with the judge's replies, is in "
              f"{run.evaluation_dir(name) / RESULTS_FILE}", file=sys.stderr)
        return 1
    return 1 if scores.get("num_retryable") and not args.allow_failed else 0


def add_evaluate_args(p: argparse.ArgumentParser) -> None:
    from .benchmarks import JUDGED

    p.add_argument("--run", required=True,
                   help="run folder: scores go to <run>/evaluations/<name>/ (created with --benchmark if new)")
    p.add_argument("--benchmark", default=None, choices=JUDGED,
                   help="benchmark of a new run (an existing run knows its own)")
    p.add_argument("--data", default=None, help="Hub dataset id or built folder of a new run (default: the shipped sample)")
    p.add_argument("--configs", nargs="+", default=None, help="configs of a new run (default: all)")
    p.add_argument("--limit", type=_positive_int, default=None, help="only the first N prompts (new run)")
    p.add_argument("--data-revision", default=None, help="revision of a Hub dataset --data (new run)")
    p.add_argument("--images", default=None,
                   help="folder of images to score (generate output, or the official layout); default: <run>/images")
    _add_scoring_args(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bars (logs, CI)")


def _open_or_create(args: argparse.Namespace):
    from .runs import Run

    if args.benchmark:
        return Run.create(args.run, args.benchmark, data=args.data, configs=args.configs, limit=args.limit,
                          revision=args.data_revision)
    if any(getattr(args, k) is not None for k in ("data", "configs", "limit", "data_revision")):
        raise ValueError("--data, --configs, --limit and --data-revision describe a new run: give --benchmark too")
    return Run.open(args.run)


def _check_hub_args(args: argparse.Namespace) -> None:
    """What a run records for the Hub (a release's license, a dataset revision), by its form, first."""
    from .hub_ids import check_license, check_revision

    if getattr(args, "license", None) is not None:
        args.license = check_license(args.license)
    if args.data_revision is not None:
        check_revision(args.data_revision, "--data-revision")


def run_evaluate(args: argparse.Namespace) -> int:
    _check_hub_args(args)
    if args.benchmark:
        setting = _check_scoring(args, args.benchmark, args.run)
        images = Path(args.images or Path(args.run) / "images")
        if not (Path(args.run) / "run.json").is_file():  # a new run: its images and rows, before the judge is asked
            from .data import check_data

            if not images.is_dir():
                raise ValueError(f"no images to score in {images}: generate them first (`t2ireason run`, which also "
                                 f"scores them, or `t2ireason generate --out {images}`), or give --images <folder>")
            check_data(args.benchmark, args.data, args.configs, revision=args.data_revision)
    elif not (Path(args.run) / "run.json").is_file():
        _open_or_create(args)  # says what is missing
    else:
        from .runs import Run

        setting = _check_scoring(args, Run.open(args.run).manifest["benchmark"], args.run)
    if (Path(args.run) / "run.json").is_file() and not args.images and not _finished(args.run, args, setting):
        from .runs import Run

        Run.open(args.run).image_items()  # a prompt without its image: said before the judge is asked
    _preflight(args, setting, args.run)  # a missing key or a judge that cannot score: nothing made
    run = _open_or_create(args)
    if args.images:
        run.use_images(args.images)
    return _evaluation_status(run, _evaluate(run, args), args)


COMMANDS["evaluate"] = (add_evaluate_args, run_evaluate,
                        "score a run's images with the benchmark's metric (resumable; one run, many judges)")


COMMANDS["report"] = (_lazy(".report.command", "add_report_args"), _lazy(".report.command", "run_report"),
                      "paper-style tables (Markdown, CSV), plots and an HTML gallery of one run or several")
COMMANDS["export"] = (_lazy(".report.command", "add_export_args"), _lazy(".report.command", "run_export"),
                      "scored runs as a Hub dataset (image, prompt, every answer and reasoning), optionally pushed")


def add_run_args(p: argparse.ArgumentParser) -> None:
    from .benchmarks import JUDGED

    p.add_argument("--benchmark", required=True, choices=JUDGED, help="which benchmark")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--source", default=None,
                        help="the official release folder: build the dataset from it first (build step)")
    source.add_argument("--data", default=None,
                        help="Hub dataset id or built folder (default: the small sample shipped with the package)")
    p.add_argument("--license", default=None, help="with --source: the release's license, when not known")
    p.add_argument("--configs", nargs="+", default=None, help="configs to use (default: all)")
    p.add_argument("--limit", type=_positive_int, default=None, help="use only the first N prompts (quick runs)")
    p.add_argument("--data-revision", default=None, help="revision (branch, tag, commit) of a Hub dataset --data")
    p.add_argument("--out", required=True, help="run folder (data, images, evaluations, report); reused to resume")
    p.add_argument("--run-name", default=None, help="the run's name in reports (default: the folder's name)")
    _add_generation_args(p)
    _add_scoring_args(p)
    p.add_argument("--embed-images", action="store_true", help="embed the images in the HTML report")


def run_run(args: argparse.Namespace) -> int:
    from .runs import Run

    _check_hub_args(args)
    config = _generation_config(args, Path(args.out) / "images")
    setting = _check_scoring(args, args.benchmark, args.out)
    if not args.source:
        from .data import check_data

        check_data(args.benchmark, args.data, args.configs, revision=args.data_revision)
    _preflight(args, setting, args.out)  # nothing generated for a judge that cannot score
    data = Path(args.out) / "data" if args.source else args.data  # built into the run folder
    run = Run.create(args.out, args.benchmark, data=data, configs=args.configs, limit=args.limit, name=args.run_name,
                     revision=args.data_revision)
    if args.source:
        print(f"[1/4] build {args.benchmark} from {args.source}")
        run.build(args.source, license=args.license)
    else:
        print(f"[1/4] rows of {args.benchmark} from {args.data or 'the sample shipped with t2i-reason'}")
    print("[2/4] generate")
    counts = run.generate(config, prompts=_load_prompt_overrides(args.prompts), progress=not args.no_progress,
                          lock_timeout=args.lock_timeout, retry_failed=args.retry_failed,
                          generator_kwargs=args.generator_kwargs)
    print(f"      {_generation_said(counts, run.images_dir)} -> {run.images_dir}")
    print("[3/4] evaluate")
    scores = _evaluate(run, args)
    print("[4/4] report")
    args.evaluation, args.title = scores["evaluation"], None
    from .report.command import print_report

    print_report([run], args, run.path / "report")
    print(f"run folder: {run.path}")
    return _evaluation_status(run, scores, args)


COMMANDS["run"] = (add_run_args, run_run, "build, generate, evaluate and report in one go (resumable)")


# -- criteria for new prompts (what a reward makes, as a dataset) ---------------------------------------------

COMMANDS["criteria"] = (_lazy(".rewards.command", "add_criteria_args"), _lazy(".rewards.command", "run_criteria"),
                        "a benchmark's criteria made for a file of prompts, written as a dataset its metric reads")


# -- a judge against people: a rating study and its agreement ----------------------------------------------

COMMANDS["rate"] = (_lazy(".study.command", "add_rate_args"), _lazy(".study.command", "run_rate"),
                    "a human rating study of runs' images as a paper ran it: the sample and a page for the raters")
COMMANDS["agreement"] = (_lazy(".study.command", "add_agreement_args"), _lazy(".study.command", "run_agreement"),
                         "the raters' files against the runs' judges: the paper's agreement table")


# -- the agent and the data engine (their options live with them) ---------------------------------------

COMMANDS["mt2ie"] = (_lazy(".mt2ie", "add_mt2ie_args"), _lazy(".mt2ie", "run_mt2ie_command"),
                     "MT2IE: an MLLM writes progressively harder prompts, draws them with each model, ranks the models")
COMMANDS["engine"] = (_lazy(".engine.command", "add_engine_args"), _lazy(".engine.command", "run_engine_command"),
                      "the FLUX-Reason data engine: curate a text-to-image dataset in the FLUX-Reason-6M schema")


class Parser(argparse.ArgumentParser):
    """A mistake on the command line is one line naming it (an unknown option by its name, with the
    closest known one), not the whole usage: ``--help`` lists the options. An option is spelt out
    whole (``allow_abbrev=False``): a truncated ``--judge-kwarg`` is an unknown option, not silently
    another. Subcommands' parsers are of this class too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)  # what this (sub)command was given
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        args, extras = self.parse_known_args(args, namespace)
        if extras:  # a subcommand hands what it did not know back up: its own parser names it
            self._chosen(args).error(f"unrecognized arguments: {' '.join(extras)}")
        return args

    def _chosen(self, namespace: argparse.Namespace) -> Parser:
        """The innermost (sub)command's parser that ``namespace`` was parsed by."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(namespace, action.dest, None))
                if isinstance(chosen, Parser):
                    return chosen._chosen(namespace)
        return self

    def error(self, message: str):
        unknown = self._unknown_option()
        self.exit(2, f"{self.prog}: error: {unknown or message} (options: {self.prog} --help)\n")

    def _unknown_option(self) -> str | None:
        """The first ``--option`` given that this command does not take (argparse names a missing
        required option first, and a misspelt one not at all), with the closest known one."""
        import difflib

        if any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            return None  # the subcommand's own parser judges its options
        known = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        for token in getattr(self, "_given", []):
            if token == "--":
                break
            option = token.split("=", 1)[0]
            if option.startswith("--") and option not in known:
                # compared without the dashes every option shares, which would make any two look alike
                close = difflib.get_close_matches(option[2:], [k[2:] for k in known], n=1, cutoff=0.6)
                return f"unknown option {option}" + (f" (did you mean --{close[0]}?)" if close else "")
        return None


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The parser: every subcommand's options (``"*"``), only ``command``'s, or none (the list of
    subcommands, all ``t2ireason --help`` needs)."""
    parser = Parser(prog="t2ireason", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (add_args, _, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if command in ("*", name):
            add_args(p)
    return parser


def _is_user_error(e: BaseException) -> bool:
    """Bad input, a missing file, a missing optional extra, an unusable judge: one ``error:`` line."""
    if isinstance(e, (ValueError, KeyError, OSError, ImportError)):
        return True
    base = sys.modules.get("t2ireason.judges.base")  # loaded whenever a JudgeError can exist
    return base is not None and isinstance(e, base.JudgeError)


def user_error_text(e: BaseException) -> str | None:
    """The one line a user is shown for a mistake of theirs or an unusable judge (the project's
    own clear messages), or None for anything else (a bug: its traceback is wanted). The command
    line and the metric Spaces both show errors through it."""
    if not _is_user_error(e):
        return None
    message = e.args[0] if isinstance(e, KeyError) and e.args else e
    return " ".join(str(message).split())


def main(argv: Sequence[str] | None = None) -> int:
    from .console import stdout_reader_may_leave

    with stdout_reader_may_leave():
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> int:
    from .console import Terminated, sigterm_as_interrupt

    if not argv:  # as git does: the commands, rather than an error about the missing one
        build_parser(None).print_help(sys.stderr)
        return 2
    command = next((a for a in argv if not a.startswith("-")), None)  # the top level takes no valued option
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    for key, value in vars(args).items():  # a nan or inf slips through float(); no option takes one
        if isinstance(value, float) and not math.isfinite(value):
            print(f"error: --{key.replace('_', '-')} must be a finite number, got {value}", file=sys.stderr)
            return 2
    _, run, _ = COMMANDS[args.command]
    try:
        with sigterm_as_interrupt():
            return run(args)
    except KeyboardInterrupt as e:
        said = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        print(f"{said}: finished work is kept; run the same command again to resume", file=sys.stderr)
        return 128 + signal.SIGTERM if isinstance(e, Terminated) else 130
    except Exception as e:
        text = user_error_text(e)
        if text is None:
            raise
        print("error: " + text, file=sys.stderr)  # one line
        return 2


if __name__ == "__main__":
    sys.exit(main())
