"""WorldGenBench's judge protocol: the paper's strict checklist prompt (Appendix 8) with the image where
the paper puts ``{image}``, and a reply of exactly one 0/1 per item (else re-asked).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...images import as_image
from ...judges.base import ChatRequest, Sampling
from ...parsing import ReplyParseError, extract_json, score_list
from ...prompts import render

__all__ = ["PRESETS", "reply_schema", "checklist_request", "parse_checklist_reply"]

#: named judge settings (Benchmark.presets)
PRESETS = {
    # Section 3.2 and Appendix 8: GPT-4o; the paper gives no decoding settings, so greedy.
    "paper": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.0)}},
}

_IMAGE_SLOT = "\x00IMAGE\x00"


def reply_schema(n: int) -> dict[str, Any]:
    """One 0/1 per checklist item, in an object (structured-output APIs want an object at the top)."""
    return {"title": "worldgenbench_checklist", "type": "object",
            "properties": {"answers": {"type": "array", "items": {"enum": [0, 1]}, "minItems": n, "maxItems": n}},
            "required": ["answers"], "additionalProperties": False}


def checklist_request(checklist: Sequence[dict[str, str]], image: Any, sampling: Sampling | None = None,
                      json_schema: dict | None = None) -> ChatRequest:
    """The judge request for one image: the Appendix 8 prompt listing every item and explanation,
    with the image where the paper's ``{image}`` slot is."""
    before, after = render("worldgenbench", "checklist", checklist=checklist, image=_IMAGE_SLOT).split(_IMAGE_SLOT)
    return ChatRequest.simple(before.rstrip() + "\n", as_image(image), "\n" + after.lstrip(), sampling=sampling,
                              json_schema=json_schema)


def parse_checklist_reply(text: str, n: int) -> list[int]:
    """Exactly ``n`` binary values from a reply such as ``[1, 0, 0]`` (an object holding one list is
    accepted too). Raises ReplyParseError otherwise, which triggers a re-ask."""
    value = extract_json(text, expect=(list, dict))
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise ReplyParseError(f"expected a list of {n} binary values, got an object")
        value = lists[0]
    return [int(v) for v in score_list(value, n, allowed=(0, 1))]

