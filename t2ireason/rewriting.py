"""The decoupled baselines of the papers: an LLM reasons about each prompt first.

``rewrite``: an LLM turns a reasoning prompt into an explicit description that a
T2I model then draws (T2I-ReasonBench Table 3, R2I-Bench's gpt-4o+SD3 pipeline).
``describe``: a T2I model's own text module writes the explicit visual description,
which T2I-ReasonBench's text mode scores (its Table 4).

Both go through the judge layer (batching, cache, re-asks) and are saved as a
dataset with ``id``, ``prompt``, ``rewritten_prompt``, ``reasoning`` columns that
``t2ireason generate --prompts`` takes instead of the original prompts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .benchmarks import Benchmark, get_benchmark
from .judges import ChatRequest
from .parsing import ReplyParseError, ask_structured, extract_json
from .prompts import render

__all__ = ["rewrite_prompts", "save_rewrites", "MODES", "REPLY_SCHEMA"]

MODES = ("rewrite", "describe")

REPLY_SCHEMA = {
    "title": "rewritten_prompt",
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "prompt": {"type": "string"}},
    "required": ["reasoning", "prompt"],
    "additionalProperties": False,
}


def _parse(text: str) -> dict[str, str]:
    value = extract_json(text, expect=dict)
    prompt = value.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ReplyParseError('the reply has no non-empty "prompt" string')
    reasoning = value.get("reasoning", "")
    return {"prompt": prompt.strip(), "reasoning": reasoning if isinstance(reasoning, str) else json.dumps(reasoning)}


def rewrite_prompts(benchmark: Benchmark | str, rows: Sequence[dict[str, Any]], judge: Any, *, mode: str = "rewrite",
                    max_reasks: int = 2, progress: bool | str = True) -> list[dict[str, Any]]:
    """One record per row: ``id``, ``prompt``, ``rewritten_prompt`` (None on failure), ``reasoning``,
    ``replies`` (every raw reply) and ``failure``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    prompts = [bench.prompt(r) for r in rows]
    requests = [ChatRequest.simple(render("rewriting", mode, prompt=p), json_schema=REPLY_SCHEMA) for p in prompts]
    parsed = ask_structured(judge, requests, _parse, max_reasks=max_reasks,
                            progress=f"{mode} prompts" if progress is True else progress)
    model = judge.identity().get("model")
    return [{"id": bench.row_id(r), "prompt": p, "rewritten_prompt": (x.value or {}).get("prompt"),
             "reasoning": (x.value or {}).get("reasoning"), "replies": x.texts, "failure": x.error,
             "mode": mode, "model": model}
            for r, p, x in zip(rows, prompts, parsed)]


def save_rewrites(records: Sequence[dict[str, Any]], out: str | os.PathLike) -> Path:
    """Write the records as Parquet (``<out>/rewrites.parquet``), loadable with ``load_dataset``.
    Rows that failed are kept, with ``rewritten_prompt`` empty and ``failure`` saying why."""
    import datasets

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "rewrites.parquet"
    datasets.Dataset.from_list([dict(r) for r in records]).to_parquet(str(path))
    return path
