"""The ``t2ireason`` command line: one tool for the whole loop.

Each subcommand is a thin layer over a library function; ``generators/`` and
``datasets_scripts/`` scripts call the same subcommands, so options are
defined once, here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__

#: subcommand -> (add its arguments, run it, one-line help)
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {}


def _json_dict(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object, e.g. '{\"max_sequence_length\": 256}'")
    return value


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


def _load_prompt_overrides(path: str | None) -> dict[str, str] | None:
    """Rewritten prompts (decoupled baselines): a JSONL/Parquet file or dataset folder with id and prompt columns."""
    if not path:
        return None
    import datasets

    p = Path(path)
    if p.is_file():
        kind = "parquet" if p.suffix == ".parquet" else "json"
        ds = datasets.load_dataset(kind, data_files=str(p), split="train")
    else:
        ds = datasets.load_from_disk(str(p)) if (p / "dataset_info.json").exists() else datasets.load_dataset(str(p), split="train")
    column = next((c for c in ("rewritten_prompt", "prompt") if c in ds.column_names), None)
    if "id" not in ds.column_names or column is None:
        raise SystemExit(f"error: {path} needs an 'id' column and a 'rewritten_prompt' or 'prompt' column; it has {ds.column_names}")
    missing = [str(i) for i, t in zip(ds["id"], ds[column]) if not t]
    if missing:  # never fall back to the original prompt in silence
        raise SystemExit(f"error: {len(missing)} rows of {path} have no rewritten prompt (ids {missing[:5]}...); "
                         "run the rewriting again (cached replies are reused) or drop them")
    return {str(i): str(t) for i, t in zip(ds["id"], ds[column])}


def add_generate_args(p: argparse.ArgumentParser) -> None:
    _add_data_args(p)
    p.add_argument("--model", required=True, help="diffusers model: Hub id or local folder")
    p.add_argument("--out", required=True, help="output folder (images in the benchmark's official layout + metadata.parquet)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"])
    p.add_argument("--steps", type=_positive_int, default=None, help="inference steps (default: the pipeline's)")
    p.add_argument("--guidance", type=float, default=None, help="guidance scale (default: the pipeline's)")
    p.add_argument("--height", type=_positive_int, default=None)
    p.add_argument("--width", type=_positive_int, default=None)
    p.add_argument("--images-per-prompt", type=_positive_int, default=1)
    p.add_argument("--batch-size", type=_positive_int, default=1, help="prompts per pipeline call")
    p.add_argument("--seed", type=int, default=0, help="base seed mixed into each image's seed")
    p.add_argument("--pipeline-kwargs", type=_json_dict, default={}, help="extra pipeline call arguments as JSON")
    p.add_argument("--cpu-offload", action="store_true", help="model CPU offload (GPU only)")
    p.add_argument("--vae-slicing", action="store_true", help="decode the VAE one image at a time")
    p.add_argument("--revision", default=None, help="model revision")
    p.add_argument("--prompts", default=None,
                   help="rewritten prompts to draw instead (JSONL/Parquet/dataset with id and rewritten_prompt)")
    p.add_argument("--no-progress", action="store_true")


def run_generate(args: argparse.Namespace) -> int:
    from .data import load_rows
    from .generation import GenerationConfig, generate, plan_jobs

    rows = load_rows(args.benchmark, args.data, args.configs)[: args.limit]
    config = GenerationConfig(model=args.model, dtype=args.dtype, steps=args.steps, guidance=args.guidance,
                              height=args.height, width=args.width, images_per_prompt=args.images_per_prompt,
                              batch_size=args.batch_size, seed=args.seed, pipeline_kwargs=args.pipeline_kwargs,
                              cpu_offload=args.cpu_offload, vae_slicing=args.vae_slicing, revision=args.revision)
    jobs = plan_jobs(args.benchmark, rows, images_per_prompt=args.images_per_prompt, base_seed=args.seed,
                     prompts=_load_prompt_overrides(args.prompts))
    counts = generate(jobs, config, args.out, progress=not args.no_progress)
    from accelerate import PartialState

    if PartialState().is_main_process:
        print(f"{len(jobs)} images in {args.out} (this process: {counts['generated']} generated, "
              f"{counts['skipped']} already done); manifest: {Path(args.out) / 'metadata.parquet'}")
    return 0


COMMANDS["generate"] = (add_generate_args, run_generate, "generate the benchmark's images with a diffusers model")


def _add_judge_args(p: argparse.ArgumentParser, default: str | None = None) -> None:
    p.add_argument("--judge", default=default, required=default is None,
                   help="judge spec: openai:<model>[@<base url>], hf:<model or folder>, vllm:<model>")
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
    from .judges import load_judge
    from .rewriting import rewrite_prompts, save_rewrites

    rows = load_rows(args.benchmark, args.data, args.configs)[: args.limit]
    judge = load_judge(args.judge, cache=args.cache, **args.judge_kwargs)
    records = rewrite_prompts(args.benchmark, rows, judge, mode=args.mode)
    path = save_rewrites(records, args.out)
    failed = sum(r["failure"] is not None for r in records)
    print(f"{len(records) - failed} of {len(records)} prompts rewritten ({failed} failed) -> {path}")
    return 1 if failed else 0


COMMANDS["rewrite"] = (add_rewrite_args, run_rewrite, "rewrite prompts with an LLM, or describe them with a text module")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t2ireason", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (add_args, _, help_text) in COMMANDS.items():
        add_args(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _, run, _ = COMMANDS[args.command]
    try:
        return run(args)
    except (ValueError, KeyError, FileNotFoundError) as e:  # user errors: one clear line, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
