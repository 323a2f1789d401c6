"""Stage I of T2I-ReasonBench: question-criterion pairs for new prompts, written by an LLM with the
templates of Figures 9 to 12, validated (every group, 1 to 5 pairs each, keys numbered from 1) and re-asked
where they are not, as rows of the dataset's schema."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ...judges.base import ChatRequest
from ...parsing import ReplyParseError, ask_structured, extract_json
from ...prompts import render
from .protocol import TEMPLATES
from .questions import read_groups
from .release import PROMPT_KEYS, id_of
from .schema import DIMENSIONS, Dimension
from .values import as_json_text


def generate_criteria(records: Sequence[dict[str, Any]], dimension: str, judge: Any, *, max_reasks: int = 2,
                      strict: bool = False, progress: bool | str = False) -> list[dict[str, Any]]:
    """Rows of question-criterion pairs for ``records``: see :meth:`T2IReasonBench.generate_criteria`."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}; known: {', '.join(DIMENSIONS)}")
    spec = DIMENSIONS[dimension]
    requests = []
    for i, rec in enumerate(records):
        lacking = [f for f in ("id", "prompt", *spec.fields)
                   if not isinstance(rec, dict) or rec.get(f) in (None, "")]
        if lacking:
            raise ValueError(f"records[{i}] lacks {lacking}: a {dimension} record needs id, prompt"
                             + "".join(f", {f}" for f in spec.fields))
        slots = {f: rec[f] for f in ("id", "prompt", *spec.fields)}
        requests.append(ChatRequest.simple(render(TEMPLATES, f"criteria_{dimension}", **slots),
                                           metadata={"id": rec["id"]}))
    parsed = ask_structured(judge, requests, _criteria_parser(spec), max_reasks=max_reasks,
                            progress=f"criteria {dimension}" if progress is True else progress)
    model = judge.identity().get("model") if hasattr(judge, "identity") else None
    rows, failed = [], []
    for rec, outcome in zip(records, parsed):
        ident, _ = id_of(rec, 0, "prompt")
        base = {"id": ident.id, "name": ident.name, "original_id": ident.original, "dimension": dimension,
                **{f: rec.get(f) for f in PROMPT_KEYS if f != "id"}}
        if outcome.ok:
            image_content, groups = outcome.value
            info = {"criteria": {"model": model, "reasks": outcome.reasks}}
        else:
            failed.append(f"{rec['id']}: {outcome.error}")
            image_content, groups = None, []
            info = {"criteria": {"model": model, "failure": outcome.error, "replies": outcome.texts}}
        rows.append({**base, "image_content": image_content, "evaluation": groups, "evaluation_prompt": None,
                     "reason": None, "reason_prompt": None, "extra": as_json_text(info)})
    if failed:
        message = f"criteria generation failed for {len(failed)} of {len(records)} {dimension} record(s): " \
                  + "; ".join(failed)
        if strict:
            raise ValueError(message)
        warnings.warn(message, stacklevel=3)  # names the caller of T2IReasonBench.generate_criteria
    return rows


def _criteria_parser(spec: Dimension):
    """Validate a stage-1 reply: every group, 1 to 5 pairs each, keys q1/c1... numbered from 1."""

    def parse(text: str) -> tuple[str, list[dict[str, Any]]]:
        value = extract_json(text, expect=dict)
        content = value.get("image_content")
        if not content:
            raise ReplyParseError('the JSON has no "image_content"')
        problems: list[str] = []
        groups = read_groups(value, spec, lambda kind, detail: problems.append(detail))
        if problems:
            raise ReplyParseError("; ".join(problems) + " (use keys q1, c1, q2, c2 ... numbered from 1, "
                                  "1 to 5 pairs per group, nothing else in a group)")
        return (content if isinstance(content, str) else as_json_text(content)), groups

    return parse
