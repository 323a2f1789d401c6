"""Stage II of T2I-ReasonBench, the judge's side: what the judge is asked and how its replies are read.

The protocol of Figure 14: the judge first describes the image ("Describe this image."), then, continuing
that conversation, answers one turn per question group, scoring each question 1, 0.5 or 0. The group
turn is the paper's template (the group as a JSON object of renumbered pairs and readable rubrics) or the
authors' scripts' text byte for byte; a reply is read from its last JSON object or, as the scripts read
it, its first. Text mode (Table 4) scores a description instead, in one turn per group.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ...images import load_images, qwen_vl_utils_image
from ...judges.base import ChatRequest, Sampling
from ...parsing import ReplyParseError, ask_structured, extract_json, score_list
from ...prompts import render, verbatim
from ...results import ImageResult
from ..base import Benchmark
from .options import check_options
from .questions import render_rubric
from .scores import asked_groups, blank_result, finish
from .values import as_json_text

TEMPLATES = "t2i_reasonbench"
ALLOWED_SCORES = (0.0, 0.5, 1.0)

#: the named judge settings (T2IReasonBench.presets)
PRESETS = {
    # Section 4.2: Gemini-2.5-pro is the paper's MLLM evaluator. Temperature 0 for repeatability; a
    # reasoning model spends part of max_tokens thinking, hence the large budget.
    "paper": {"judge": "openai:gemini-2.5-pro@https://generativelanguage.googleapis.com/v1beta/openai/",
              "judge_kwargs": {"sampling": Sampling(temperature=0.0, max_tokens=8192)},
              "options": {"aggregation": "paper"}},
    # The authors' scripts (evaluation/Qwen2.5-VL/eval_*.py): Qwen2.5-VL-72B-Instruct loaded with
    # torch_dtype="auto", device_map="auto", generate(max_new_tokens=1000) with the checkpoint's own
    # generation config; each image file as qwen_vl_utils hands it to the processor (transparent
    # pixels on white, sides to multiples of 28); their prompt text (the group printed as a Python
    # dict), the first JSON object of a reply, their aggregation.
    "official": {"judge": "hf:Qwen/Qwen2.5-VL-72B-Instruct",
                 "judge_kwargs": {"generation_config": "model", "sampling": Sampling(max_tokens=1000),
                                  "dtype": "auto", "device_map": "auto"},
                 "options": {"aggregation": "official", "template": "official", "reply_json": "first",
                             "image_preparation": "qwen_vl_utils"}},
}


def score(bench: Benchmark, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
          progress: bool | str = False, **options: Any) -> list[ImageResult]:
    """Each image (or description) of ``rows`` judged and scored: see :meth:`T2IReasonBench.score`."""
    opts = check_options(options)
    mode, aggregation = opts["mode"], opts["aggregation"]
    if len(rows) != len(images):
        raise ValueError(f"got {len(rows)} rows but {len(images)} {'descriptions' if mode == 'text' else 'images'}")
    if mode == "text" and opts["template"] == "official":
        raise ValueError("the official scripts have no text score: use template='paper' with mode='text'")
    results = [blank_result(bench, row, i, mode) for i, row in enumerate(rows)]
    # every question is listed in its result from the start, so unanswered ones show as None
    groups = [asked_groups(row, mode, result) for row, result in zip(rows, results)]
    label = progress if isinstance(progress, str) else "T2I-ReasonBench"
    transient = [False] * len(rows)

    # Stage II, turn 1 (image mode): one JudgeImage per image, shared by every turn about it.
    bases: list[ChatRequest | None] = [None] * len(rows)
    texts: list[str | None] = [None] * len(rows)
    if mode == "image":
        asks = []
        prepare = qwen_vl_utils_image if opts["image_preparation"] == "qwen_vl_utils" else None
        for i, img in enumerate(load_images(images, prepare=prepare)):
            if isinstance(img, Exception):
                results[i].failure = f"image could not be read: {img}"
                continue
            results[i].image = results[i].image or img.source
            asks.append((i, ChatRequest.simple(img, render(TEMPLATES, "describe"), metadata={"id": results[i].id})))
        # the scripts go on with whatever the describe turn gave, an empty text too; the paper's template asks again
        describe = _as_described if opts["template"] == "official" else _description
        described = ask_structured(judge, [r for _, r in asks], describe, max_reasks=opts["max_reasks"],
                                   progress=f"{label}: describe" if progress else False)
        for (i, request), outcome in zip(asks, described):
            results[i].replies.extend(outcome.texts)
            results[i].reasks += outcome.reasks
            if outcome.ok:
                bases[i], texts[i] = request, outcome.value
                results[i].context["description"] = outcome.value
            else:
                results[i].failure = f"describe turn: {outcome.error}"
                transient[i] = outcome.transient
    else:
        for i, text in enumerate(images):
            text = _as_text(text)
            if not isinstance(text, str) or not text.strip():
                what = "an empty string" if isinstance(text, str) else f"a {type(text).__name__}"
                raise ValueError(f"text mode scores descriptions: item {i} ({results[i].id}) is {what}, "
                                 f"not a non-empty string")
            texts[i] = text
            results[i].context["description"] = text

    # Stage II, one turn per question group, continuing the describe conversation.
    asks = []
    for i in range(len(rows)):
        if texts[i] is None:
            continue
        for group in groups[i]:
            pairs = group["pairs"]
            schema = _reply_schema(len(pairs)) if opts["structured_output"] else None
            if mode == "text":
                request = ChatRequest.simple(render(TEMPLATES, "text_evaluation", description=texts[i],
                                                    pairs=group_prompt(pairs, group.get("extra"))),
                                             json_schema=schema, metadata={"id": results[i].id})
            elif opts["template"] == "official":
                request = bases[i].then(texts[i], official_turn(group), json_schema=schema)
            else:
                request = bases[i].then(texts[i], render(TEMPLATES, "image_evaluation",
                                                         pairs=group_prompt(pairs, group.get("extra"))),
                                        json_schema=schema)
            asks.append((i, group["group"], request, _group_parser(len(pairs), opts["reply_json"] == "first")))
    answered = ask_structured(judge, [a[2] for a in asks], [a[3] for a in asks], max_reasks=opts["max_reasks"],
                              progress=f"{label}: questions" if progress else False)
    outcomes: dict[int, dict[str, Any]] = defaultdict(dict)
    for (i, group, _, _), outcome in zip(asks, answered):
        outcomes[i][group] = outcome
        results[i].replies.extend(outcome.texts)
        results[i].reasks += outcome.reasks
        transient[i] = transient[i] or outcome.transient

    for i, row in enumerate(rows):
        finish(results[i], row, outcomes.get(i, {}), mode, aggregation, opts["weights"])
        results[i].retryable = results[i].failed and transient[i]
    return results


# -- the requests ---------------------------------------------------------------------------------

def group_prompt(pairs: Sequence[dict[str, Any]], extra: dict[str, Any] | str | None = None) -> str:
    """The ``{..._evaluation_qc}`` slot of Figure 14: the group's pairs as a JSON object, renumbered
    ``q1, c1, q2, c2 ...`` in order, as the template's wording ("q1, q2, ... c1, c2, ...") expects, then the
    group's other keys (its ``extra``: a rubric object, a ``scoring`` note) under their own names. Every
    criterion and rubric reaches the judge as readable text (:func:`render_rubric`), never as escaped JSON.
    """
    qc: dict[str, Any] = {}
    for i, p in enumerate(pairs, 1):
        qc[f"q{i}"], qc[f"c{i}"] = p["question"], p["criterion"]
    if isinstance(extra, str):
        extra = json.loads(extra)
    for key, value in (extra or {}).items():
        name = key if key not in qc else f"{key} (group note)"
        qc[name] = render_rubric(value)
    return json.dumps(qc, ensure_ascii=False)


def official_group_text(group: dict[str, Any]) -> str:
    """What the authors' scripts put in the prompt for a group: ``str()`` of the release's object, as
    Python prints a dict (``{'q1': '...', 'c1': '...'}``), keys and values as released, nothing renumbered
    or rendered. Built from the group's ``raw`` JSON; a row without it (built by generate_criteria) is
    printed from its pairs and extra keys."""
    raw = group.get("raw")
    if raw is not None:
        return str(json.loads(raw))
    value: dict[str, Any] = {}
    for p in group["pairs"]:
        value[p["question_key"]] = p["question"]
        if p.get("criterion_key") is not None:
            value[p["criterion_key"]] = json.loads(p["criterion_json"]) if p.get("criterion_json") else p["criterion"]
    value.update(json.loads(group["extra"]) if group.get("extra") else {})
    return str(value)


def official_turn(group: dict[str, Any]) -> str:
    """The group turn the authors' scripts send, byte for byte: their text
    (``templates/t2i_reasonbench/official/image_evaluation.txt``) with :func:`official_group_text`."""
    text = verbatim(f"{TEMPLATES}/official", "image_evaluation").removesuffix("\n")
    return text.format(group=official_group_text(group))


# -- judge replies ---------------------------------------------------------------------------------------

def _reply_schema(n: int) -> dict[str, Any]:
    return {"title": "t2i_reasonbench_scores", "type": "object",
            "properties": {"reason": {"type": "array", "items": {"type": "string"}},
                           "score": {"type": "array", "items": {"type": "number", "enum": [0, 0.5, 1]},
                                     "minItems": n, "maxItems": n}},
            "required": ["reason", "score"], "additionalProperties": False}


_DECODER = json.JSONDecoder()
#: how many ``{`` a "first JSON object" search tries before falling back to the repairing reader
_FIRST_TRIES = 200


def _first_object(text: str) -> dict[str, Any]:
    """The first JSON object of a reply, as the official scripts read it (they take the first
    ``{...}``): a draft answer followed by a corrected one gives the draft. Where no object decodes,
    the repairing reader of :func:`extract_json` has the last word."""
    if not isinstance(text, str):
        raise ReplyParseError(f"reply is {type(text).__name__}, not text")
    start = 0
    for _ in range(_FIRST_TRIES):
        i = text.find("{", start)
        if i < 0:
            break
        try:
            value, _end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            start = i + 1
            continue
        if isinstance(value, dict):
            return value
        start = i + 1
    return extract_json(text, expect=dict)


def _reasons(reason: Any, n: int) -> list[str | None]:
    """The judge's reasoning per question, whatever shape it came in: a list of one per question, one
    text, anything else kept whole (as JSON text) for each question."""
    if reason is None or reason == "" or reason == []:
        return [None] * n
    if isinstance(reason, list) and len(reason) == n:
        return [r if isinstance(r, str) else as_json_text(r) for r in reason]  # a null item stays None
    if isinstance(reason, list):
        whole = "\n".join(r if isinstance(r, str) else as_json_text(r) for r in reason if r is not None)
    else:
        whole = reason if isinstance(reason, str) else as_json_text(reason)
    return [whole or None] * n


def parse_group_reply(text: str, n: int, *, first: bool = False) -> tuple[list[float], list[str | None]]:
    """A group reply ``{"reason": [...], "score": [s1..sn]}`` as ``(scores, reasons)``: exactly ``n``
    scores, each 1, 0.5 or 0 (numbers or numeric text; a value within rounding of one of them is that
    value, so a score is never outside [0, 1]). ``first`` reads the reply's first JSON object (the
    official scripts), else its last (a corrected answer after a draft). Anything else raises
    :class:`ReplyParseError`, which the caller re-asks or records as a failure.

    >>> parse_group_reply('Draft {"score": [0]} then {"reason": "ok", "score": [1]}', 1)
    ([1.0], ['ok'])
    >>> parse_group_reply('Draft {"score": [0]} then {"reason": "ok", "score": [1]}', 1, first=True)
    ([0.0], [None])
    """
    value = _first_object(text) if first else extract_json(text, expect=dict)
    if "score" not in value:
        raise ReplyParseError('the JSON has no "score" list')
    scores = score_list(value["score"], n, allowed=ALLOWED_SCORES)  # snapped: exactly 0, 0.5 or 1
    return scores, _reasons(value.get("reason"), n)


def _group_parser(n: int, first: bool = False) -> Callable[[str], tuple[list[float], list[str | None]]]:
    return lambda text: parse_group_reply(text, n, first=first)


def _description(text: str) -> str:
    """The describe turn's reply, kept as the judge wrote it (it is the next turns' history)."""
    if not text.strip():
        raise ReplyParseError("the description is empty")
    return text


def _as_described(text: str) -> str:
    """The describe turn's reply as the authors' scripts take it: whatever it is, an empty text too
    (``out1`` becomes the assistant turn of every group turn, unchecked)."""
    return text


def _as_text(x: Any) -> Any:
    """A text-mode prediction: a string, or the ``{"bytes": None, "path": text}`` that an evaluate
    module's image feature makes of a string."""
    if isinstance(x, dict) and not x.get("bytes") and isinstance(x.get("path"), str):
        return x["path"]
    return x
