"""``t2ireason generate`` (a benchmark's images with any generator) and ``t2ireason rewrite`` (prompts rewritten by
an LLM, or described by a text module)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .options import (
    add_data_args,
    add_generation_args,
    add_judge_args,
    generation_config,
    generation_said,
    load_prompt_overrides,
)

__all__ = ["add_generate_args", "run_generate", "add_rewrite_args", "run_rewrite"]


def add_generate_args(p: argparse.ArgumentParser) -> None:
    add_data_args(p)
    p.add_argument("--out", required=True, help="output folder (images in the benchmark's official layout + metadata.parquet)")
    add_generation_args(p)
    p.add_argument("--retry-failed", action="store_true",
                   help="draw again the images that failed for a transient reason (server errors, broken replies); "
                        "a refusal is kept")


def run_generate(args: argparse.Namespace) -> int:
    from ..data import load_rows, plan_jobs
    from ..generation import FAILURES, generate, read_failures

    config = generation_config(args, args.out)
    rows = load_rows(args.benchmark, args.data, args.configs, limit=args.limit)
    jobs = plan_jobs(args.benchmark, rows, images_per_prompt=args.images_per_prompt, base_seed=args.seed,
                     prompts=load_prompt_overrides(args.prompts))
    counts = generate(jobs, config, args.out, progress=not args.no_progress, retry_failed=args.retry_failed,
                      **args.generator_kwargs)
    from accelerate import PartialState

    if not PartialState().is_main_process:
        return 0
    print(f"{len(jobs)} images in {args.out} (this process: {generation_said(counts, args.out)}); "
          f"manifest: {Path(args.out) / 'metadata.parquet'}")
    failures = read_failures(args.out)
    for file, why in list(failures.items())[:5]:
        print(f"not made: {file}: {why['kind']}: {why['failure']}")
    transient = sum(why["retryable"] for why in failures.values())
    if transient:  # a script must not take an outage for a finished generation
        print(f"{transient} of them failed for a transient reason: run again with --retry-failed "
              f"(all: {Path(args.out) / FAILURES})")
    return 1 if transient else 0


def add_rewrite_args(p: argparse.ArgumentParser) -> None:
    from ..rewriting import MODES

    add_data_args(p)
    add_judge_args(p)
    p.add_argument("--mode", choices=MODES, default="rewrite",
                   help="rewrite: an LLM makes prompts explicit (decoupled baseline); "
                        "describe: a text module writes the visual description (text score)")
    p.add_argument("--out", required=True, help="output folder (rewrites.parquet)")


def run_rewrite(args: argparse.Namespace) -> int:
    from ..data import load_rows
    from ..judges import load_judge, validate_judge
    from ..rewriting import rewrite_prompts, save_rewrites

    validate_judge(args.judge, args.judge_kwargs)
    rows = load_rows(args.benchmark, args.data, args.configs, limit=args.limit)
    judge = load_judge(args.judge, cache=args.cache, **args.judge_kwargs)
    records = rewrite_prompts(args.benchmark, rows, judge, mode=args.mode)
    path = save_rewrites(records, args.out)
    failed = sum(r["failure"] is not None for r in records)
    print(f"{len(records) - failed} of {len(records)} prompts rewritten ({failed} failed) -> {path}")
    return 1 if failed else 0
