"""What several commands share: argument types that name what is wrong, and the options of data, generation and
judges (one definition each, so that ``generate``, ``run``, ``mt2ie`` and ``engine`` take them alike)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["json_dict", "finite_float", "positive_int", "add_data_args", "load_prompt_overrides", "add_generation_args",
           "generation_config", "generation_said", "add_judge_args"]


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def json_dict(text: str) -> dict:
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


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_data_args(p: argparse.ArgumentParser) -> None:
    from ..benchmarks import MODULES

    p.add_argument("--benchmark", required=True, choices=sorted(MODULES), help="which benchmark")
    p.add_argument("--data", default=None,
                   help="Hub dataset id or folder built by datasets_scripts/build.py (default: the small sample shipped with the package)")
    p.add_argument("--configs", nargs="+", default=None, help="configs to use (default: all)")
    p.add_argument("--limit", type=positive_int, default=None, help="use only the first N prompts (quick runs)")


def load_prompt_overrides(path: str | None) -> dict[Any, str] | None:
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


def add_generation_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="the generator: a diffusers Hub id or folder (or diffusers:<...>), openai:<model>[@<base url>] "
                        "(the OpenAI Images API: GPT-Image-1, DALL-E 3, compatible servers), hf:<Hub id or folder> "
                        "(Janus, Janus-Pro), python:<module>:<callable> (your own function of prompts and seeds)")
    p.add_argument("--generator-kwargs", type=json_dict, default={},
                   help='backend options as JSON, e.g. \'{"max_concurrency": 4, "timeout": 120}\' for openai:')
    p.add_argument("--quality", default=None, help="an image API's quality (OpenAI: low, medium, high, auto; hd)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"],
                   help="model dtype (default auto: float16 on GPU, float32 on CPU; float16 needs a GPU)")
    p.add_argument("--steps", type=positive_int, default=None, help="inference steps (default: the pipeline's)")
    p.add_argument("--guidance", type=finite_float(0), default=None,
                   help="guidance scale, a number >= 0 (default: the pipeline's)")
    p.add_argument("--height", type=positive_int, default=None, help="image height (default: the pipeline's)")
    p.add_argument("--width", type=positive_int, default=None, help="image width (default: the pipeline's)")
    p.add_argument("--images-per-prompt", type=positive_int, default=1,
                   help="images per prompt, each with its own seed (default: 1)")
    p.add_argument("--batch-size", type=positive_int, default=1, help="prompts per pipeline call")
    p.add_argument("--seed", type=int, default=0, help="base seed mixed into each image's seed")
    p.add_argument("--pipeline-kwargs", type=json_dict, default={}, help="extra pipeline call arguments as JSON")
    p.add_argument("--cpu-offload", action="store_true", help="model CPU offload (GPU only)")
    p.add_argument("--vae-slicing", action="store_true", help="decode the VAE one image at a time")
    p.add_argument("--revision", default=None, help="model revision")
    p.add_argument("--prompts", default=None,
                   help="rewritten prompts to draw instead (JSONL/Parquet/dataset with id and rewritten_prompt)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (logs, CI)")


def generation_config(args: argparse.Namespace, images: str | Path | None = None):
    """The generation settings, checked before any row, image or folder (the generator's pre-flight: its
    spec, the settings its backend takes, a model folder, a python callable, an endpoint's key and model;
    float16 needs a GPU). Where ``images`` holds a finished generation (a re-run), the endpoint is left to
    the generator's first request: nothing left to draw contacts no server."""
    from ..generation import GenerationConfig, preflight_generator

    config = GenerationConfig(model=args.model, dtype=args.dtype, steps=args.steps, guidance=args.guidance,
                              height=args.height, width=args.width, images_per_prompt=args.images_per_prompt,
                              batch_size=args.batch_size, seed=args.seed, pipeline_kwargs=args.pipeline_kwargs,
                              cpu_offload=args.cpu_offload, vae_slicing=args.vae_slicing, revision=args.revision,
                              quality=args.quality)
    preflight_generator(config, contact=images is None or not (Path(images) / "metadata.parquet").is_file(),
                        **args.generator_kwargs)
    return config


def generation_said(counts: dict, where) -> str:
    """What a generation step did, in words (this process's counts)."""
    said = f"{counts['generated']} generated, {counts['skipped']} already done"
    if counts.get("failed") or counts.get("failed_before"):
        said += (f", {counts.get('failed', 0) + counts.get('failed_before', 0)} could not be made (why: "
                 f"{Path(where) / 'failures.jsonl'})")
    return said


def add_judge_args(p: argparse.ArgumentParser, default: str | None = None, required: bool = True) -> None:
    p.add_argument("--judge", default=default, required=required and default is None,
                   help="judge spec: openai:<model>[@<base url>], hf:<model or folder>, vllm:<model>"
                        + ("" if required else " (default: the preset's judge)"))
    p.add_argument("--judge-kwargs", type=json_dict, default={},
                   help='backend options as JSON, e.g. \'{"max_concurrency": 8, "dtype": "bfloat16"}\'')
    p.add_argument("--cache", default=True, help="response cache file (default: ~/.cache/t2ireason)")
    p.add_argument("--no-cache", dest="cache", action="store_false", help="do not read or write the response cache")
