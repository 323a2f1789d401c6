"""How the stages ask their models: one template per question, strict JSON replies, bounded re-asks.

Every question goes through :func:`ask` (``parsing.ask_structured``: batched, re-asked when a reply does
not parse, then recorded as a failure with every raw reply). A backend error (network, rate limit...) is
not the record's fault: by default the shard is left uncommitted, to be retried on the next run, where
the response cache answers everything that did succeed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..images import as_image
from ..judges import ChatRequest, Sampling
from ..parsing import Parsed, ReplyParseError, ask_structured
from ..prompts import render
from .work import Context, RetryShard, drop, note

__all__ = ["TEMPLATES", "request", "schema", "field", "ask", "fail", "image_of", "STRING", "BOOLEAN", "STRINGS", "SCORE",
           "VERDICT"]

TEMPLATES = "flux_engine"
_JSON_TYPES = {str: "string", bool: "boolean", list: "array", float: "number"}
# JSON schema fragments for ``schema``
STRING, BOOLEAN = {"type": "string"}, {"type": "boolean"}
STRINGS = {"type": "array", "items": STRING}
SCORE = {"type": "integer", "enum": list(range(1, 11))}  # a 1-to-10 score
VERDICT = {"type": "string", "enum": ["accept", "reject"]}


def schema(name: str, **properties: dict[str, Any]) -> dict[str, Any]:
    """A request's ``json_schema`` (enforced by backends that can: ``response_format``, constrained
    decoding): an object with every property required and no others; the title names it."""
    return {"title": name, "type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def field(obj: dict[str, Any], key: str, kind: type) -> Any:
    """``obj[key]`` (``obj`` from ``extract_json``) checked to be a ``kind``; strings stripped and non-empty."""
    value = obj.get(key)
    if kind is bool and isinstance(value, str):  # "true"/"false" as strings: a common slip, not an error
        value = {"true": True, "yes": True, "false": False, "no": False}.get(value.strip().lower(), value)
    if isinstance(value, str):
        value = value.strip()
    if not isinstance(value, kind) or value == "":
        raise ReplyParseError(f'the reply needs "{key}" as a {"non-empty " if kind is str else ""}'
                              f"{_JSON_TYPES.get(kind, kind.__name__)}")
    return value


def image_of(record: dict[str, Any], ctx: Context) -> Any:
    """The record's generated image as a JudgeImage (loaded, hashed and encoded once however often asked about)."""
    return as_image(ctx.work.root / record["image"])


def request(template: str, record: dict[str, Any], stage: str, *images: Any, json_schema: dict | None = None,
            sampling: Sampling | None = None, extra: dict | None = None, **slots: Any) -> ChatRequest:
    """The rendered template, then the images (paths included: a bare string would be text), in one user
    turn; ``metadata`` says what it is about."""
    return ChatRequest.simple(render(TEMPLATES, template, **slots), *map(as_image, images), json_schema=json_schema,
                              sampling=sampling, metadata={"stage": stage, "id": record["id"], **(extra or {})})


def ask(judge: Any, requests: Sequence[ChatRequest], parse: Callable[[str], Any] | Sequence[Callable[[str], Any]],
        ctx: Context) -> list[Parsed]:
    if not requests:
        return []
    if judge is None:
        raise ValueError(f"stage {requests[0].metadata.get('stage')} needs a judge model; none was given")
    stage = requests[0].metadata.get("stage")
    results = ask_structured(judge, requests, parse, max_reasks=ctx.config.max_reasks,
                             progress=f"{stage} {ctx.shard}" if ctx.progress else False)
    errors = [p.error for p in results if p.replies and not p.replies[-1].ok]
    # the step's statistics (datatrove's own, per task): questions, requests sent (re-asks included,
    # answers from the response cache too), and the questions left without a usable answer
    ctx.count("questions", len(results))
    ctx.count("requests", sum(len(p.replies) for p in results))
    ctx.count("cached replies", sum(bool(getattr(r, "cached", False)) for p in results for r in p.replies))
    ctx.count("re-asks", sum(p.reasks for p in results))
    ctx.count("unparsable answers", sum(not p.ok for p in results) - len(errors))
    ctx.count("backend errors", len(errors))
    if errors and ctx.config.on_judge_error == "retry":
        raise RetryShard(f"{len(errors)} of {len(requests)} {stage} requests failed in the judge backend "
                         f"(first: {errors[0]}); run again to retry (finished answers are cached)")
    return results


def fail(record: dict[str, Any], stage: str, parsed: Parsed, *, dropping: bool, what: str = "") -> None:
    """Record a question that got no usable answer, with the error and every raw reply."""
    detail = json.dumps({"what": what, "error": parsed.error, "replies": parsed.texts}, ensure_ascii=False)
    if dropping:
        drop(record, stage, detail, action="failed")
    else:
        note(record, stage, "failed", detail)
