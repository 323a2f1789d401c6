"""Stage I of T2I-ReasonBench: question-criterion pairs for new prompts, written by an LLM with the
templates of Figures 9 to 12, validated (every group, with as many pairs as its figure asks: 3-5 reasons and
1-3 quality pairs for Idiom and Textual, 1-3 entity and 2-4 scientific pairs..., keys numbered from 1) and
re-asked where they are not, as rows of the dataset's schema."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from functools import cache
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
    parsed = ask_structured(judge, requests, _criteria_parser(spec, dimension), max_reasks=max_reasks,
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


#: in a stage-1 template, a group's key and the number of pairs asked for it ("'reason_evaluation': ( here should
#: be a dictionary with 3-5 pairs", "'quality_evaluation': (same format as ... with 1-3 pairs")
_ASKED = re.compile(r"'(\w+_evaluation)':\s*\((?:[^()]*?)\bwith (\d+)-(\d+) pairs")


@cache
def pair_counts(dimension: str) -> dict[str, tuple[int, int]]:
    """How many pairs the dimension's stage-1 template (Figures 9 to 12) asks of each group, read from the
    template itself: ``{"reason_evaluation": (3, 5), "quality_evaluation": (1, 3)}`` for idiom."""
    spec = DIMENSIONS[dimension]
    text = render(TEMPLATES, f"criteria_{dimension}", **{f: f for f in ("id", "prompt", *spec.fields)})
    asked = {key: (int(lo), int(hi)) for key, lo, hi in _ASKED.findall(text)}
    if set(asked) != {key for key, _ in spec.groups}:  # a template edited out of the figure's shape
        raise ValueError(f"templates/{TEMPLATES}/criteria_{dimension}.txt asks pair counts for {sorted(asked)}, "
                         f"not for each of {[key for key, _ in spec.groups]}")
    return asked


def _criteria_parser(spec: Dimension, dimension: str):
    """Validate a stage-1 reply: every group, with the number of pairs its template asks
    (:func:`pair_counts`), keys q1/c1... numbered from 1."""
    counts = pair_counts(dimension)

    def parse(text: str) -> tuple[str, list[dict[str, Any]]]:
        value = extract_json(text, expect=dict)
        content = value.get("image_content")
        if not content:
            raise ReplyParseError('the JSON has no "image_content"')
        problems: list[str] = []
        groups = read_groups(value, spec, lambda kind, detail: problems.append(detail))
        for g in groups:
            lo, hi = counts.get(g["group"], (1, 5))
            if g["pairs"] and not lo <= len(g["pairs"]) <= hi:
                problems.append(f"{g['group']}: {len(g['pairs'])} pair{'s' * (len(g['pairs']) != 1)}, where the "
                                f"template asks {lo}-{hi}")
        if problems:
            asked = ", ".join(f"{key} {lo}-{hi}" for key, (lo, hi) in counts.items())
            raise ReplyParseError("; ".join(dict.fromkeys(problems)) + " (use keys q1, c1, q2, c2 ... numbered "
                                  f"from 1, nothing else in a group; pairs per group: {asked})")
        return (content if isinstance(content, str) else as_json_text(content)), groups

    return parse
