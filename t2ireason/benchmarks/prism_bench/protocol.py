"""PRISM-Bench's judge protocol: the templates rendered into requests, the replies read, the presets.

Two protocols, chosen by the ``protocol`` option (the presets set it): ``paper``, the paper's printed
templates (``templates/prism_bench/paper``) with replies read strictly (:func:`parse_judgement`) and
re-asked; ``official``, the authors' ``evaluation/eval_gpt41.py`` and ``eval_qwen25.py``: their strings
byte for byte (``templates/prism_bench/official``), their parser (:func:`clean_and_parse_json`, json then
demjson3) and their counting rules (:func:`official_judgement`), no re-asks.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ...images import ImageError, as_image, qwen_vl_utils_image
from ...judges.base import ChatRequest, Sampling
from ...parsing import ReplyParseError, as_score, cut_off, extract_json
from ...prompts import verbatim
from .release import json_type

__all__ = ["SYSTEM_PROMPT", "AXES", "PROTOCOLS", "GENERAL_TRACK", "IMAGE_PREPARATIONS", "IMAGE_BYTES", "PRESETS", "REPLY_SCHEMA",
           "template", "judge_requests", "parse_judgement", "clean_and_parse_json", "official_judgement", "Judgement"]

#: the system message of the authors' GPT-4.1 script (also in every template's system section)
SYSTEM_PROMPT = "You are a helpful assistant."
AXES = ("alignment", "aesthetic")
#: ``paper``: the paper's printed templates, strict replies with re-asks, mean of the two axis means;
#: ``official``: the authors' code (strings, parser, counting, pooled aggregation)
PROTOCOLS = ("paper", "official")
#: ``image_preparation``: None (each image as it is) or "qwen_vl_utils" (as eval_qwen25.py feeds Qwen2.5-VL)
IMAGE_PREPARATIONS = (None, "qwen_vl_utils")
#: ``image_bytes``: "file" (a file's own bytes) or "pil" (opened and saved again by PIL, as eval_gpt41.py sends)
IMAGE_BYTES = ("file", "pil")
#: the track of a prompt of no PRISM-Bench track (a reward's prompt): its alignment template is the project's
#: own (``templates/prism_bench/project/alignment_general.txt``), under either protocol; not a config
GENERAL_TRACK = "general"

#: what the authors' eval_gpt41.py sends with every request
_GPT41_SAMPLING = Sampling(temperature=0.0, top_p=1.0, seed=42, max_tokens=4096)

#: named judge settings (Benchmark.presets)
PRESETS = {
    # The paper's protocol (its printed templates, its definitions), with GPT-4.1 set as the
    # authors' script sets it; images as they are (the paper says nothing of their encoding).
    "paper": {"judge": "openai:gpt-4.1-2025-04-14",
              "judge_kwargs": {"sampling": _GPT41_SAMPLING},
              "options": {"protocol": "paper"}},
    # evaluation/eval_gpt41.py: its strings, parameters (max_tokens as such, stream false, no
    # response_format), 3 tries per request, its parser, counting and pooled aggregation; each
    # image opened by PIL and saved again in its own format, the bytes it sends (it labels them
    # image/jpeg: a mislabel, not reproduced).
    "official": {"judge": "openai:gpt-4.1-2025-04-14",
                 "judge_kwargs": {"sampling": _GPT41_SAMPLING, "max_tokens_param": "max_tokens",
                                  "max_retries": 2, "extra_body": {"stream": False}},
                 "options": {"protocol": "official", "image_bytes": "pil"}},
    # evaluation/eval_qwen25.py: Qwen2.5-VL-72B in bfloat16 spread over the GPUs (device_map
    # "balanced"), the chat template rendered with add_vision_id=True ("Picture 1: " before the
    # image), each image made RGB by PIL and resized by qwen_vl_utils before the processor, the
    # processor's pixel limits, the image before the text, no system message of its own (the chat
    # template adds its default), the checkpoint's own generation settings, 1024 new tokens; the
    # authors' parser and aggregation.
    "qwen": {"judge": "hf:Qwen/Qwen2.5-VL-72B-Instruct",
             "judge_kwargs": {"dtype": "bfloat16", "device_map": "balanced",
                              "processor_kwargs": {"min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28},
                              "chat_template_kwargs": {"add_vision_id": True},
                              "generation_config": "model",
                              "sampling": Sampling(max_tokens=1024)},
             "options": {"protocol": "official", "system_prompt": None, "image_first": True,
                         "image_preparation": "qwen_vl_utils"}},
}


def protocol_name(value: Any) -> str:
    """The protocol ``value`` names (None: ``paper``), or a ValueError naming the known ones."""
    if value is None:
        return "paper"
    if value not in PROTOCOLS:
        raise ValueError(f"unknown PRISM-Bench protocol {value!r}; known: {', '.join(PROTOCOLS)}")
    return value


# -- requests --------------------------------------------------------------------------------------

#: the default of ``system_prompt``: the template's own system message
FROM_TEMPLATE: Any = type("FromTemplate", (), {"__repr__": lambda self: "<the template's system message>"})()
_SECTION = re.compile(r"^===== (system|user \(text\)) =====\n", re.M)


def template(protocol: str, name: str) -> tuple[str | None, str]:
    """``(system message or None, user text with its {text_prompt} slot)`` of template ``name``
    (``alignment_<track>`` or ``aesthetic``) under ``protocol``, exactly as the file gives them; the
    :data:`GENERAL_TRACK`'s alignment template is the project's own under either protocol. Read on every
    call (the file's text is cached) so that an evaluation records each template it used."""
    folder = "project" if name == f"alignment_{GENERAL_TRACK}" else protocol_name(protocol)
    return _sections(f"prism_bench/{folder}", name, verbatim(f"prism_bench/{folder}", name))


@cache
def _sections(where: str, name: str, text: str) -> tuple[str | None, str]:
    parts = _SECTION.split(text)
    if parts[0] or len(parts) < 3:
        raise ValueError(f"template {where}/{name} does not open with a '===== <role> =====' line")
    sections = {}
    for role, body in zip(parts[1::2], parts[2::2]):
        if role in sections or not body.endswith("\n"):
            raise ValueError(f"template {where}/{name}: malformed section {role!r}")
        sections[role] = body[:-1]  # the newline before the next header (or the file's end) is not text
    if "user (text)" not in sections:
        raise ValueError(f"template {where}/{name} has no user text")
    return sections.get("system"), sections["user (text)"]


def judge_requests(prompt: str, track: str, image: Any, *, protocol: str = "paper", system_prompt: Any = FROM_TEMPLATE,
                   image_first: bool = False, sampling: Sampling | None = None,
                   json_schema: dict | None = None) -> list[ChatRequest]:
    """The two requests for one image, [alignment, aesthetic]: the template's system message (or
    ``system_prompt``; None for none), then one user message of the template text with the prompt
    put in as ``str.format`` does (the authors' code), and the image (before the text with
    ``image_first``)."""
    image = as_image(image)
    requests = []
    for name in (f"alignment_{track}", "aesthetic"):
        system_text, user_text = template(protocol, name)
        text = user_text.format(text_prompt=prompt)
        parts = (image, text) if image_first else (text, image)
        requests.append(ChatRequest.simple(*parts, system_prompt=system_text if system_prompt is FROM_TEMPLATE
                                           else system_prompt, sampling=sampling, json_schema=json_schema))
    return requests


#: what every template asks for: a justification, then a 0-10 score in whole points (it starts
#: at 10 and deducts points), so an enforced schema also stops runaway decimals
REPLY_SCHEMA = {"title": "prism_bench_judgement", "type": "object",
                "properties": {"justification": {"type": "string"},
                               "score": {"type": "integer", "minimum": 0, "maximum": 10}},
                "required": ["justification", "score"], "additionalProperties": False}


def pil_reencoded(images: list[Any]) -> list[Any]:
    """Each readable image as PIL saves it again (:meth:`~t2ireason.images.JudgeImage.pil_reencoded`),
    encoded in worker threads: PIL's PNG encoder releases the GIL, and one 1,024 px image takes a
    tenth of a second or more to encode."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda im: im if isinstance(im, ImageError) else im.pil_reencoded(), images))


def after_convert_rgb(image: Any) -> Any:
    """eval_qwen25.py's image: ``Image.open(path).convert("RGB")`` (alpha dropped, not composited),
    then qwen_vl_utils' ``fetch_image`` (sides to multiples of 28, resized) before the processor."""
    return qwen_vl_utils_image(image.convert("RGB"))


# -- replies ---------------------------------------------------------------------------------------

def parse_judgement(text: str) -> dict[str, Any]:
    """The paper protocol's reading of a reply: ``{"justification": str | None, "score": float}``;
    the score must be a number (or a numeric string) in [0, 10]."""
    value = extract_json(text, expect=dict)
    if "score" not in value:
        raise ReplyParseError(f"the JSON object has no \"score\" (keys: {sorted(value)})")
    justification = value.get("justification")
    return {"score": as_score(value["score"], lo=0, hi=10),
            "justification": None if justification is None else str(justification)}


_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NOT_PARSED = object()


def clean_and_parse_json(text: str) -> Any:
    """A reply read as the authors' ``clean_and_parse_json`` reads it (``eval_gpt41.py``,
    ``eval_qwen25.py``): the reply is stripped; a leading ```` ```json ```` is removed; then, on its
    own, a trailing ```` ``` ```` (so a reply ending in a closing fence without an opening one loses
    it too); stripped again; every comma before a closing brace or bracket is removed (inside
    strings as well); then ``json.loads`` and, failing that, ``demjson3.decode``. ``None`` when
    both fail (their code prints such a reply and skips it)."""
    s = text.strip()
    if s.startswith("```json"):
        s = s[len("```json"):]
    if s.endswith("```"):
        s = s[:-3]
    s = _TRAILING_COMMA.sub(r"\1", s.strip())
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        pass
    demjson3 = _demjson3()
    if demjson3 is None:
        return _NOT_PARSED
    try:
        return demjson3.decode(s)
    except Exception:  # demjson3 raises its own errors, and RecursionError on deep nesting
        return None


@cache
def _demjson3():
    try:
        import demjson3
    except ImportError:
        warnings.warn("demjson3 is not installed: the official protocol reads replies with json only, where the "
                      "authors' code also tries demjson3 (pip install demjson3, or t2i-reason[official]); "
                      "replies only demjson3 reads are counted as 'unparsed_no_demjson3'", stacklevel=3)
        return None
    return demjson3


@dataclass
class Judgement:
    """What became of one judge request: ``outcome`` is ``counted`` (``score`` is the raw 0-10
    value) or why it is not (``detail``); ``transient`` marks a backend failure worth retrying."""

    outcome: str
    score: float | None = None
    justification: str | None = None
    detail: str = ""
    transient: bool = False
    texts: list[str] = field(default_factory=list)
    reasks: int = 0


def official_judgement(text: str) -> Judgement:
    """A reply judged by the authors' rules, step by step as their script takes it: parsed by
    :func:`clean_and_parse_json` (``unparsable`` when it fails, or gives a false value: ``{}``,
    ``null``, ``0``, ``""``..., which their script skips as a parsing failure); written with
    ``json.dump`` (``unwritable`` when the value holds what JSON cannot write, a ``Decimal`` or
    ``demjson3.undefined`` from demjson3: their script stops there, and a run started again skips
    the broken file); read back by their summary: counted when it is an object whose ``score`` is
    an int or a float (a boolean ``true`` counts as 1, NaN as it is, no range check); ``not_finite`` for a
    score json reads as an infinity (``1e400``: every mean it entered would be infinite, so it is refused as
    a malformed reply, as the paper protocol refuses it); ``no_number`` when the summary skips it (a missing or non-numeric score, a string "8",
    a string or list without ``score`` in it); ``summary_raises`` when their summary raises on it
    (a bare number or boolean, a string or list holding ``score``)."""
    value = clean_and_parse_json(text)
    texts = [text]
    if value is _NOT_PARSED:
        return Judgement("unparsed_no_demjson3", detail="json.loads cannot read it and demjson3, which the authors' "
                         "parser tries next, is not installed", texts=texts)
    if value is None or not _truthy(value):
        what = "" if value is None else f" (it parses to {_shown(value)}, which their script takes for a failure)"
        return Judgement("unparsable", detail="the authors' parser cannot read it" + what +
                         " (their code prints and skips it)", texts=texts)
    unwritable = _unwritable(value)
    if unwritable:
        return Judgement("unwritable", detail=f"demjson3 reads it with {unwritable}, which json.dump cannot write: "
                         "the authors' script stops on it (a run started again skips the broken file); not counted",
                         texts=texts)
    if not isinstance(value, dict):
        try:
            skipped = "score" not in value  # their summary's own test, on whatever json.load gives back
        except TypeError:
            skipped = False
        if skipped:
            return Judgement("no_number", texts=texts, detail=f"it parses to {_shown(value)}, not an object: the "
                             "authors' summary finds no \"score\" in it and skips it")
        return Judgement("summary_raises", detail=f"it parses to {_shown(value)}, not an object: the "
                         "authors' summarize_results raises on it (recorded here, not counted)", texts=texts)
    score, justification = value.get("score"), value.get("justification")
    justification = None if justification is None else str(justification)
    if not isinstance(score, (int, float)):
        return Judgement("no_number", justification=justification, texts=texts,
                         detail=f"\"score\" is {_shown(score)}, not an int or a float: the authors' summary skips it")
    if math.isinf(_float(score)):  # 1e400: json reads inf, and every mean it enters is inf: a malformed reply
        return Judgement("not_finite", justification=justification, texts=texts,
                         detail=f"\"score\" is {_shown(score)}, which json reads as {_float(score)}: not a score "
                                "(every mean it entered would be infinite); not counted")
    return Judgement("counted", score=_float(score), justification=justification, texts=texts)


def reply_judgement(reply: Any) -> Judgement:
    """The official protocol's reading of one reply: a judge error, a reply cut at the token limit
    (``cut_off``: never read; the authors' parser fails on the unclosed object and skips it, so their
    count is the same, and a cut that happens to leave valid JSON is not read either), else
    :func:`official_judgement`."""
    if not reply.ok:
        return Judgement("judge_error", detail=f"judge error: {reply.error}", transient=reply.transient,
                         texts=[f"[judge error] {reply.error}"])
    if (cut := cut_off(reply)) is not None:
        return Judgement("cut_off", detail=f"reply {cut}: not read (raise max_tokens)", texts=[reply.text])
    return official_judgement(reply.text)


def _truthy(value: Any) -> bool:
    try:
        return bool(value)
    except Exception:  # a value whose truth cannot be told is not one their script keeps
        return False


def _unwritable(value: Any) -> str | None:
    """What in ``value`` ``json.dump`` cannot write (a type name), or None."""
    try:
        json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        kinds = sorted({type(v).__name__ for v in _leaves(value)
                        if not isinstance(v, (str, int, float, bool, type(None)))})
        return "a " + " and a ".join(kinds) if kinds else "a value JSON cannot hold"
    except RecursionError:
        return "nesting too deep"
    return None


def _leaves(value: Any):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def paper_judgement(p: Any) -> Judgement:
    """The paper protocol's reading of one :func:`~t2ireason.parsing.ask_structured` outcome."""
    if p.ok:
        return Judgement("counted", p.value["score"], p.value["justification"], texts=p.texts, reasks=p.reasks)
    judge_failed = bool(p.replies) and not p.replies[-1].ok
    return Judgement("judge_error" if judge_failed else "failed", detail=p.error, transient=p.transient,
                     texts=p.texts, reasks=p.reasks)


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return math.inf if value > 0 else -math.inf


def _shown(value: Any) -> str:
    if value is None:
        return "missing"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # what demjson3 gives and JSON cannot write
        text = repr(value)
    return f"a {json_type(value)} ({text[:40]})"

