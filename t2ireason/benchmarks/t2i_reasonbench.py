"""T2I-ReasonBench (seed 000): idiom, textual-image, entity and scientific reasoning prompts.

The single source of truth for the benchmark: the row schema, the reader of the
official GitHub release (``prompts/``, ``deepseek_evaluation_qs/``,
``pipeline_prompts/``), the two-stage judge protocol of the paper (Figure 14:
"Describe this image.", then one turn per question group), T2I-ReasonScore
(section 4.1, equation 2, with the weights of section 5), the official code's
aggregation, prompt and reply reading as options, the text score of Table 4,
and stage-1 question-criterion generation for new prompts (Figures 9 to 12).

The reader keeps the release as it is: every value whatever its JSON type,
text byte for byte, every irregular record listed as an :class:`Anomaly`;
only what cannot be kept in a row at all (a record that is not an object, a
rewritten prompt with no prompt to attach to, text that is not JSON) goes to
the release's quarantine with its raw text.

>>> rel = BENCHMARK.read_release(BENCHMARK.sample_path())
>>> sorted(rel.configs) == sorted(BENCHMARK.configs)
True
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import datasets
import numpy as np

from ..files import inside
from ..images import load_images, qwen_vl_utils_image
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, ask_structured, extract_json, score_list
from ..prompts import render, verbatim
from ..results import ImageResult, PaperTable, QuestionResult
from ..stats import summarize
from .base import (
    Anomaly,
    Benchmark,
    OfficialRelease,
    Quarantined,
    Release,
    ReleaseError,
    file_to_read,
    is_safe_name,
    safe_name,
    unread_files,
)

__all__ = ["T2IReasonBench", "BENCHMARK", "DIMENSIONS", "PAPER_WEIGHTS", "OFFICIAL_WEIGHTS", "ROLES", "ANOMALY_KINDS",
           "parse_pairs", "group_prompt", "official_group_text", "official_turn", "render_rubric", "parse_group_reply"]

_TEMPLATES = "t2i_reasonbench"
ROLES = ("reason", "detail", "quality")
ALLOWED_SCORES = (0.0, 0.5, 1.0)


@dataclass(frozen=True)
class Dimension:
    """One dimension (config) of the benchmark: its release files and question groups."""

    prompts_file: str  # prompts/<prompts_file>.json
    name_in_files: str  # deepseek_evaluation_qs/evaluation_<name>.json, pipeline_prompts/<name>_pipeline_prompts.json
    groups: tuple[tuple[str, str], ...]  # (group key in the evaluation file, role), in the release's order
    fields: tuple[str, ...]  # dimension-specific prompt fields given to the stage-1 LLM

    @property
    def group_roles(self) -> dict[str, str]:
        return dict(self.groups)

    def files(self) -> tuple[str, str, str]:
        return (f"prompts/{self.prompts_file}.json",
                f"deepseek_evaluation_qs/evaluation_{self.name_in_files}.json",
                f"pipeline_prompts/{self.name_in_files}_pipeline_prompts.json")


DIMENSIONS: dict[str, Dimension] = {
    "idiom": Dimension("idiom_interpretation", "idiom",
                       (("reason_evaluation", "reason"), ("quality_evaluation", "quality")),
                       ("idiom", "idiom_meaning")),
    "textual": Dimension("textual_image_design", "textual_image",
                         (("reason_evaluation", "reason"), ("quality_evaluation", "quality")), ()),
    "entity": Dimension("entity_reasoning", "entity",
                        (("entity_evaluation", "reason"), ("other_details_evaluation", "detail"),
                         ("quality_evaluation", "quality")), ("explicit_meaning",)),
    "scientific": Dimension("scientific_reasoning", "scientific",
                            (("scientific_evaluation", "reason"), ("other_details_evaluation", "detail"),
                             ("quality_evaluation", "quality")), ("explicit_meaning",)),
}

#: T2I-ReasonScore = w1 S_reason + w2 S_detail + w3 S_quality (section 5, "Implementation Details")
PAPER_WEIGHTS = {
    "idiom": {"reason": 0.9, "detail": 0.0, "quality": 0.1},
    "textual": {"reason": 0.9, "detail": 0.0, "quality": 0.1},
    "entity": {"reason": 0.7, "detail": 0.2, "quality": 0.1},
    "scientific": {"reason": 0.7, "detail": 0.2, "quality": 0.1},
}
#: the official scripts' "reasoning accuracy"; quality is reported on its own
OFFICIAL_WEIGHTS = {
    "idiom": {"reason": 1.0},
    "textual": {"reason": 1.0},
    "entity": {"reason": 0.7, "detail": 0.3},
    "scientific": {"reason": 0.7, "detail": 0.3},
}

_SCORE_OPTIONS = {"mode", "aggregation", "weights", "max_reasks", "structured_output", "reply_json", "template",
                  "image_preparation"}
#: ``image_preparation``: None (each image as it is) or "qwen_vl_utils" (as the authors' eval_*.py feed Qwen2.5-VL)
_IMAGE_PREPARATIONS = (None, "qwen_vl_utils")
_AGGREGATE_OPTIONS = {"confidence", "n_resamples", "seed"}
_READ_OPTIONS = {"configs"}
_MODES = ("image", "text")
_AGGREGATIONS = ("paper", "official")
_REPLY_JSON = ("last", "first")
_TEMPLATE_CHOICES = ("paper", "official")

_PROMPT_KEYS = ("id", "prompt", "tag", "idiom", "idiom_meaning", "explicit_meaning")
_EVAL_KEYS = {"id", "prompt", "explicit_meaning", "image_content"}
_PIPE_KEYS = {"id", "reason", "reason_prompt"}

_CITATION = """@article{sun2025t2ireasonbench,
  title   = {T2I-ReasonBench: Benchmarking Reasoning-Informed Text-to-Image Generation},
  author  = {Sun, Kaiyue and Fang, Rongyao and Duan, Chengqi and Liu, Xian and Liu, Xihui},
  journal = {arXiv preprint arXiv:2508.17472},
  year    = {2025}
}"""

#: The authors' repository at the commit whose evaluation scripts this module was checked against.
#: Their JSON data could not be fetched here, so no file hash is recorded (the build says so).
_AUTHORS_REPO = "KaiyueSun98/T2I-ReasonBench"
_AUTHORS_COMMIT = "83a91df3d36b43665bfc5e8166493665cc5a7f8f"
_AUTHORS_SCRIPTS = tuple(f"evaluation/Qwen2.5-VL/eval_{d}.py" for d in ("idiom", "textual_image", "entity", "scientific"))


def _json_text(value: Any) -> str | None:
    """``value`` as JSON text, key order kept (lone surrogates escaped, so the text is always valid UTF-8)."""
    if value is None:
        return None
    text = json.dumps(value, ensure_ascii=False)
    return text if _utf8(text) else json.dumps(value)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON's \ud800 escapes can carry
        return False
    return True


# -- rubrics: criteria given as text, as objects of score levels, or anything else ---------------------

_LEVEL_KEY = re.compile(r"(?:score[ _-]?)?(1(?:\.0*)?|0?\.50*|0(?:\.0*)?)", re.IGNORECASE)
_ONE_TEXT_KEYS = {"score", "scores", "criteria", "criterion", "scoring", "rubric"}


def _level(key: str) -> float | None:
    m = _LEVEL_KEY.fullmatch(key.strip())
    return float(m[1]) if m else None


def _joined(parts: list[str]) -> str:
    """Items on one line: after a sentence's end a space, otherwise a semicolon."""
    out = ""
    for part in parts:
        if out:
            out += " " if out.rstrip().endswith((".", "!", "?", ")", "。")) else "; "
        out += part
    return out


def render_rubric(value: Any) -> str | None:
    """A criterion (or a group's rubric) as readable text for the judge, whatever its JSON shape.

    Text is sent as it is. An object of score levels (keys ``1``/``0.5``/``0`` or
    ``score_1``/``score_0.5``/``score_0``, in any order) becomes ``"1: ... 0.5: ... 0: ..."``, from the
    highest level down; an object holding one text under ``score``, ``criteria`` (or ``criterion``,
    ``scoring``, ``rubric``) is that text; any other object lists ``key: value`` in the release's order; a
    list joins its items; a number or boolean is its JSON text; ``null`` stays ``None``.

    >>> render_rubric({"0": "No cat.", "score_1": "A cat.", "0.5": "Maybe a cat."})
    '1: A cat. 0.5: Maybe a cat. 0: No cat.'
    >>> render_rubric({"criteria": "1 if red, 0.5 if pink, 0 otherwise"})
    '1 if red, 0.5 if pink, 0 otherwise'
    >>> render_rubric({"score_1": "all legible", "score_2": "one typo"})
    'score_1: all legible; score_2: one typo'
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        if len(value) == 1:
            (key, inner), = value.items()
            if key.strip().lower() in _ONE_TEXT_KEYS and isinstance(inner, str):
                return inner
        levels = {k: _level(k) for k in value}
        if value and all(lv is not None for lv in levels.values()):
            ordered = sorted(value, key=lambda k: -levels[k])
            return _joined([f"{levels[k]:g}: {render_rubric(value[k]) or ''}".rstrip() for k in ordered])
        return _joined([f"{k}: {render_rubric(v) if v is not None else 'null'}" for k, v in value.items()])
    if isinstance(value, list):
        return _joined([render_rubric(v) if v is not None else "null" for v in value])
    return json.dumps(value)


# -- question-criterion pairs ------------------------------------------------------------------------

_Q = re.compile(r"^(?P<prefix>[a-z_]*?)q(?P<n>\d+)$", re.IGNORECASE)
_C = re.compile(r"^(?P<prefix>[a-z_]*?)c(?P<n>\d+)$", re.IGNORECASE)
#: a key repeated within one JSON object: the last value keeps the key (as every JSON reader, and the
#: authors' scripts, would read it), each earlier value is kept under the key with this suffix
_OVERWRITTEN = " (overwritten {n})"


def _key_parts(pattern: re.Pattern, key: str) -> tuple[str, int] | None:
    m = pattern.match(key)
    return (m["prefix"].lower(), int(m["n"])) if m else None


def parse_pairs(group: dict[str, Any], where: str = "") -> tuple[list[dict[str, Any]], dict[str, Any],
                                                                 list[tuple[str, str]]]:
    """The question-criterion pairs of one ``*_evaluation`` object, in question order, with their keys.

    Returns ``(pairs, extra, notes)``. Each pair is ``{question_key, question, criterion_key, criterion,
    criterion_json}``: ``criterion`` is the release's text, or, for a criterion that is not text, its
    rendering by :func:`render_rubric`, with the release's value as JSON text in ``criterion_json``.
    ``extra`` holds the keys that are not part of a pair (a ``scoring`` note, a rubric object, a criterion
    without its question); ``notes`` describe every irregularity as ``(kind, detail)``. A criterion is
    matched to its question by prefix and number, then by number alone, then as the key that follows the
    question; a question left without one keeps a ``None`` criterion. Nothing is dropped and nothing
    raises: ``where`` is kept for callers' messages.

    >>> pairs, extra, notes = parse_pairs({"aq1": "Sharp?", "ac1": "1: yes 0: no", "scoring": "mean"})
    >>> [(p["question_key"], p["criterion_key"]) for p in pairs], extra
    ([('aq1', 'ac1')], {'scoring': 'mean'})
    """
    keys = list(group)
    questions = [k for k in keys if _key_parts(_Q, k)]
    criteria = [k for k in keys if _key_parts(_C, k)]
    used: set[str] = set()
    pairs, notes = [], []
    for qk in questions:
        prefix, n = _key_parts(_Q, qk)
        free = [k for k in criteria if k not in used]
        ck = next((k for k in free if _key_parts(_C, k) == (prefix, n)), None)
        if ck is None:
            ck = next((k for k in free if _key_parts(_C, k)[1] == n), None)
            if ck is None:
                i = keys.index(qk) + 1
                ck = keys[i] if i < len(keys) and keys[i] in free else None
            if ck is None:
                notes.append(("question_without_criterion", f"question {qk!r} has no criterion; kept without one"))
            else:
                notes.append(("irregular_key", f"question {qk!r} paired with criterion {ck!r}"))
        if ck is not None:
            used.add(ck)
        pairs.append({"question_key": qk, "question": group[qk], "criterion_key": ck,
                      "criterion": group[ck] if ck is not None else None})
    orphans = [k for k in criteria if k not in used]
    for k in orphans:
        notes.append(("criterion_without_question", f"criterion {k!r} has no question; kept in the group's extra"))
    extra = {k: group[k] for k in keys if k not in questions and k not in used}

    # pairs follow their numbers (a shuffled release keeps its meaning), in order of appearance on a tie
    order = [keys.index(p["question_key"]) for p in pairs]
    pairs = [p for _, p in sorted(zip(order, pairs), key=lambda t: (_key_parts(_Q, t[1]["question_key"])[1], t[0]))]
    expected = [k for p in pairs for k in (p["question_key"], p["criterion_key"]) if k is not None]
    if [k for k in keys if k in set(expected)] != expected:
        notes.append(("key_order", f"keys in the order {', '.join(k for k in keys if k in set(expected))}; "
                                   f"pairs read as {', '.join(expected)}"))
    irregular = [k for p in pairs for k in (p["question_key"], p["criterion_key"])
                 if k is not None and not re.fullmatch(r"[qc]\d+", k)]
    if irregular:
        notes.append(("irregular_key", f"irregular key(s) {', '.join(irregular)}"))
    numbers = [_key_parts(_Q, p["question_key"])[1] for p in pairs]
    if numbers != list(range(1, len(numbers) + 1)):
        notes.append(("numbering", f"questions numbered {numbers}, not 1..{len(numbers)}"))

    for p in pairs:
        for part in ("question", "criterion"):
            value = p[part]
            if part == "criterion" and value is not None and not isinstance(value, str):
                notes.append(("structured_criterion", f"criterion {p['criterion_key']!r} is "
                                                      f"{_a(value)}; rendered as text for the judge"))
            elif value is None or (isinstance(value, str) and not value.strip()):
                key = p[f"{part}_key"]
                if key is not None:
                    notes.append((f"empty_{part}", f"{part} {key!r} is {'null' if value is None else 'blank'}"))
        p["criterion_json"] = None if p["criterion"] is None or isinstance(p["criterion"], str) \
            else _json_text(p["criterion"])
        p["criterion"] = render_rubric(p["criterion"])
        if p["question"] is not None and not isinstance(p["question"], str):
            notes.append(("non_text_value", f"question {p['question_key']!r} is {_a(p['question'])}; "
                                            "kept as JSON text"))
            p["question"] = _json_text(p["question"])
    return pairs, extra, notes


def _a(value: Any) -> str:
    """``value``'s JSON type with its article, for messages: "an object", "a list", "null"."""
    kind = _type(value)
    return kind if kind == "null" else f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _type(value: Any) -> str:
    return {dict: "object", list: "list", str: "text", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


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
    text = verbatim(f"{_TEMPLATES}/official", "image_evaluation").removesuffix("\n")
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
        return [r if isinstance(r, str) else _json_text(r) for r in reason]  # a null item stays None
    if isinstance(reason, list):
        whole = "\n".join(r if isinstance(r, str) else _json_text(r) for r in reason if r is not None)
    else:
        whole = reason if isinstance(reason, str) else _json_text(reason)
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
    scores = score_list(value["score"], n, allowed=ALLOWED_SCORES)
    scores = [min(ALLOWED_SCORES, key=lambda a: abs(a - s)) for s in scores]  # exactly 0, 0.5 or 1
    return scores, _reasons(value.get("reason"), n)


def _group_parser(n: int, first: bool = False) -> Callable[[str], tuple[list[float], list[str | None]]]:
    return lambda text: parse_group_reply(text, n, first=first)


def _description(text: str) -> str:
    """The describe turn's reply, kept as the judge wrote it (it is the next turns' history)."""
    if not text.strip():
        raise ReplyParseError("the description is empty")
    return text


def _as_text(x: Any) -> Any:
    """A text-mode prediction: a string, or the ``{"bytes": None, "path": text}`` that an evaluate
    module's image feature makes of a string."""
    if isinstance(x, dict) and not x.get("bytes") and isinstance(x.get("path"), str):
        return x["path"]
    return x


# -- file names made from ids -------------------------------------------------------------------------

#: a folder that does not exist: paths made from ids are checked against it for their shape only
_IMAGES_ROOT = Path("/t2ireason-images")
#: the longest id used as its own file stem (room is left for the -2 and _1.png suffixes)
_MAX_STEM_BYTES = 100


def _file_stem(text: str) -> str:
    """The file stem of an id that is not an integer: the id itself when it can be a file name, else
    :func:`~t2ireason.benchmarks.base.safe_name` of it (different ids never share a name). The reader
    owns this mapping (the row keeps ``name`` and ``original_id``): the builder finds nothing to rename."""
    fits = is_safe_name(text) and len(text.encode("utf-8", "surrogatepass")) <= _MAX_STEM_BYTES
    return text if fits else safe_name(text)


def _stem(row: dict[str, Any]) -> str:
    """The file stem of a row's images: its ``name``, or the four-digit id of rows built before names."""
    name = row.get("name")
    if name:
        return name
    return f"{int(row['id']):04d}"


# -- the benchmark ----------------------------------------------------------------------------------


class T2IReasonBench(Benchmark):
    name = "t2i-reasonbench"
    pretty_name = "T2I-ReasonBench"
    configs = tuple(DIMENSIONS)
    metric = "t2i_reasonscore"
    license = None  # neither the paper nor the release states one: users must say
    citation = _CITATION
    official_release = OfficialRelease(kind="github", repo=_AUTHORS_REPO, revision=_AUTHORS_COMMIT,
                                       files={}, scripts=_AUTHORS_SCRIPTS)
    release_markers = ("prompts/idiom_interpretation.json",)
    description = (
        "T2I-ReasonBench (Sun et al., 2025) tests reasoning-informed text-to-image generation with 800 prompts "
        "in four dimensions of 200 each: Idiom Interpretation (a sentence using an idiom figuratively), Textual "
        "Image Design (a design intention for a text-rich image), Entity Reasoning (an entity described but not "
        "named) and Scientific Reasoning (a scene whose look follows from a scientific law). Each prompt comes "
        "with LLM-generated question-criterion pairs (1 / 0.5 / 0) grouped into reasoning, detail and quality "
        "checks, and an LLM-rewritten explicit prompt for the decoupled baseline."
    )
    scoring = (
        "T2I-ReasonScore (section 4.1): a multimodal judge first describes the image ('Describe this image.'), "
        "then, continuing that conversation, answers each question group with the Figure 14 template, scoring "
        "every question 1, 0.5 or 0. A group's score is the mean of its questions; the image score is "
        "0.9 S_reason + 0.1 S_quality for idiom and textual, 0.7 S_reason + 0.2 S_detail + 0.1 S_quality for "
        "entity and scientific; a dimension's score is the mean over its images x 100 and the overall score "
        "the mean of the four dimensions (Table 2). The paper's judge is Gemini-2.5-pro; the official scripts "
        "use Qwen2.5-VL-72B-Instruct and report 'accuracy' (reason; 0.7 reason + 0.3 detail for entity and "
        "scientific) and quality separately. The text score (Table 4) scores a text description instead of an "
        "image with w1 S_reason + w2 S_detail (maximum 90)."
    )
    field_docs = {
        "id": "The prompt's id in its dimension (1 to 200), as the release gives it; null when the release's id "
              "is not an integer (see original_id).",
        "name": "The file stem of the row's images and the end of its row id: the id with four digits (0001 for "
                "id 1, as the official layout names images); for an id that is not an integer, the id itself "
                "when it can be a file name, else a safe name made from it (its readable part and a hash; each "
                "mapping is an unsafe_id anomaly of build_report.json, and original_id keeps the id). A repeated "
                "id adds -2, -3...",
        "original_id": "The release's id as JSON text when it is not an integer (text, a number with decimals, "
                       "missing...); else null.",
        "dimension": "idiom, textual, entity or scientific (the config).",
        "prompt": "The prompt to draw, from prompts/*.json, byte for byte (the evaluation file's prompt when "
                  "prompts/*.json has no record for the id).",
        "tag": "Subcategory: free text (idiom), image type (textual), entity type (entity), "
               "'discipline: topic' (scientific).",
        "idiom": "The idiom the prompt uses (idiom only).",
        "idiom_meaning": "What the idiom means (idiom only).",
        "explicit_meaning": "The prompt with its implicit entity or outcome made explicit (entity, scientific).",
        "image_content": "What the image should convey, as written by the stage-1 LLM; a value that is not text "
                         "(the release has objects in a few records) is kept as its JSON text.",
        "evaluation": "The question-criterion groups, in the release's order.",
        "evaluation.group": "The group's key in the release: reason_evaluation (idiom, textual), entity_evaluation, "
                            "scientific_evaluation, other_details_evaluation (entity, scientific), "
                            "quality_evaluation, or another key the release uses.",
        "evaluation.role": "What the group scores: reason, detail or quality (S_reason, S_detail, S_quality); null "
                           "for a group the reader could not place (kept, reported, not scored).",
        "evaluation.pairs": "The group's question-criterion pairs, in the order of their numbers.",
        "evaluation.pairs.question_key": "The release's key of the question (q1, or irregular ones such as sci_q1, aq1).",
        "evaluation.pairs.question": "A question about the image, byte for byte (a value that is not text is kept "
                                     "as its JSON text).",
        "evaluation.pairs.criterion_key": "The release's key of the criterion (c1, sci_c1, ac1...); null for a "
                                          "question the release gives no criterion.",
        "evaluation.pairs.criterion": "What earns a score of 1, 0.5 and 0, as the judge reads it: the release's "
                                      "text byte for byte; for a criterion given as an object of score levels "
                                      "(1 / 0.5 / 0, score_1 / score_0.5 / score_0 in any order) the text "
                                      "'1: ... 0.5: ... 0: ...'; for an object holding one text (score, criteria) "
                                      "that text; for any other object 'key: value; ...'.",
        "evaluation.pairs.criterion_json": "The criterion as the release gives it, as JSON text, when it is not "
                                           "text (an object, a list, a number); null for a text criterion.",
        "evaluation.extra": "The group's keys that are not question-criterion pairs (a 'scoring' note, a rubric "
                            "object of score_1, score_2... lines, a criterion without its question), as a JSON "
                            "object; sent to the judge with the group. Null when there are none.",
        "evaluation.raw": "The whole group as released, as JSON text in the release's key order (what the "
                          "official scripts print into their prompt).",
        "evaluation_prompt": "The prompt as written in the evaluation file where it differs from prompts/*.json "
                             "(else null); the prompt field is the one used for generation.",
        "reason": "The reasoning of the LLM that rewrote the prompt for the decoupled pipeline (pipeline_prompts).",
        "reason_prompt": "The LLM-rewritten explicit prompt for the decoupled 'reason first, then draw' baseline.",
        "extra": "Keys of the release records outside the schema, as JSON by source file (prompts, evaluation, "
                 "pipeline); else null.",
    }
    presets = {
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

    @property
    def features(self) -> datasets.Features:
        text = datasets.Value("string")
        pair = {"question_key": text, "question": text, "criterion_key": text, "criterion": text,
                "criterion_json": text}
        return datasets.Features({
            "id": datasets.Value("int64"),
            "name": text,
            "original_id": text,
            "dimension": text,
            "prompt": text,
            "tag": text,
            "idiom": text,
            "idiom_meaning": text,
            "explicit_meaning": text,
            "image_content": text,
            "evaluation": datasets.List({"group": text, "role": text, "pairs": datasets.List(pair), "extra": text,
                                         "raw": text}),
            "evaluation_prompt": text,
            "reason": datasets.List(text),
            "reason_prompt": text,
            "extra": text,
        })

    def row_id(self, row: dict[str, Any]) -> str:
        """``<dimension>-<name>`` (``idiom-0001``): ids restart at 1 in every dimension."""
        return f"{row['dimension']}-{_stem(row)}"

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        """The official layout: ``<dimension>/0001.png`` (``0001_<sample>.png`` for further samples).
        Raises :class:`~t2ireason.files.UnsafePath` for a row whose name would leave its folder."""
        suffix = f"_{sample}" if sample else ""
        path = PurePosixPath(str(row["dimension"]), f"{_stem(row)}{suffix}.png")
        inside(_IMAGES_ROOT, *path.parts)
        if len(path.parts) != 2:
            raise ValueError(f"row {self.row_id(row)!r}: its image path {str(path)!r} is not <dimension>/<name>.png")
        return str(path)

    def pipeline_prompts(self, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
        """The release's LLM-rewritten prompts by row id (``generate --prompts`` input for Table 3)."""
        return {self.row_id(r): r["reason_prompt"] for r in rows if r.get("reason_prompt")}

    # -- the release --------------------------------------------------------------------------------

    def read_release(self, source: str | Path, **options: Any) -> Release:
        """Read the official release folder (its root: ``t2ireason build`` finds it in a checkout or an
        archive).

        Option ``configs``: the dimensions to read (default all). Text is kept byte for byte (a
        normalisation is the builder's option, off by default: ``t2ireason build --normalize strip``).

        Nothing in the files stops the read: every record is kept with every value the release gives,
        and every irregularity becomes an :class:`Anomaly` naming the file, the id and what was odd;
        what cannot be kept in a row goes to the release's ``quarantine`` with its raw text.
        ``files_read`` lists the files read, so the builder reports every other one (the authors'
        scripts among them). Only a source that holds no T2I-ReasonBench folder raises
        :class:`ReleaseError`.
        """
        unknown = set(options) - _READ_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; read_release takes {sorted(_READ_OPTIONS)}")
        configs = list(options.get("configs") or self.configs)
        bad = [c for c in configs if c not in DIMENSIONS]
        if bad:
            raise ValueError(f"unknown dimension(s) {bad}; known: {', '.join(DIMENSIONS)}")
        reader = _ReleaseReader(_release_root(Path(source)))
        out, counts = {}, {}
        for config in configs:
            rows = reader.dimension(config)
            if not rows:
                reader.note("no_rows", DIMENSIONS[config].files()[0], None, "no record of this dimension could be read")
                continue
            out[config] = rows
            per_role = {role: 0 for role in ROLES}
            for row in rows:
                for g in row["evaluation"]:
                    if g["role"] in per_role:
                        per_role[g["role"]] += len(g["pairs"])
            counts[config] = {"rows": len(rows), "pairs": sum(len(g["pairs"]) for r in rows for g in r["evaluation"]),
                              **{f"{role}_pairs": n for role, n in per_role.items()}}
        reader.unknown_data_files()
        return Release(configs=out, anomalies=reader.anomalies, counts=counts, license=self.license,
                       source=str(reader.root), quarantine=reader.quarantine, files_read=reader.files_read)

    # -- scoring ------------------------------------------------------------------------------------

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """Score each image (or, in text mode, each description) against its row.

        Options: ``mode`` ``"image"`` (default; the two-stage protocol of Figure 14) or ``"text"``
        (Table 4: ``images`` are text descriptions, strings, scored without an image, a describe
        turn or the quality group); ``aggregation`` ``"paper"`` (default, T2I-ReasonScore with
        :data:`PAPER_WEIGHTS`) or ``"official"`` (the official scripts' accuracy, quality reported
        apart); ``weights`` (per dimension ``{"reason": w1, "detail": w2, "quality": w3}`` overriding
        the paper's); ``template`` ``"paper"`` (default: Figure 14 with the group as a JSON object of
        renumbered pairs and readable rubrics, :func:`group_prompt`) or ``"official"`` (the authors'
        scripts' text byte for byte, the group printed as they print it, :func:`official_group_text`);
        ``reply_json`` ``"last"`` (default: the last JSON object of a reply, a corrected answer after a
        draft) or ``"first"`` (the official scripts' reading); ``max_reasks`` (default 2) for replies
        that do not parse or hold the wrong number of scores; ``structured_output`` (default False: the
        paper's judge saw the plain template) to also send a JSON schema; ``image_preparation``
        (None, default: each image as it is; ``"qwen_vl_utils"``: as the authors' scripts feed
        Qwen2.5-VL, what qwen_vl_utils' ``fetch_image`` makes of the file: transparent pixels
        composited on white, sides resized to multiples of 28,
        :func:`~t2ireason.images.qwen_vl_utils_image`). Batched: every describe turn
        in one ``judge.chat`` batch, then every group turn in one batch (plus one per re-ask round).
        An image that cannot be read, a reply still unusable after the re-asks or a judge error is that
        image's counted failure (``retryable`` when the judge's infrastructure failed), never a zero.
        Options of :meth:`aggregate` are accepted and ignored.
        """
        opts = _check_options(options)
        mode, aggregation = opts["mode"], opts["aggregation"]
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} {'descriptions' if mode == 'text' else 'images'}")
        if mode == "text" and opts["template"] == "official":
            raise ValueError("the official scripts have no text score: use template='paper' with mode='text'")
        results = [self._blank_result(row, i, mode) for i, row in enumerate(rows)]
        # every question is listed in its result from the start, so unanswered ones show as None
        groups = [self._asked_groups(row, mode, result) for row, result in zip(rows, results)]
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
                asks.append((i, ChatRequest.simple(img, render(_TEMPLATES, "describe"), metadata={"id": results[i].id})))
            described = ask_structured(judge, [r for _, r in asks], _description, max_reasks=opts["max_reasks"],
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
                    request = ChatRequest.simple(render(_TEMPLATES, "text_evaluation", description=texts[i],
                                                        pairs=group_prompt(pairs, group.get("extra"))),
                                                 json_schema=schema, metadata={"id": results[i].id})
                elif opts["template"] == "official":
                    request = bases[i].then(texts[i], official_turn(group), json_schema=schema)
                else:
                    request = bases[i].then(texts[i], render(_TEMPLATES, "image_evaluation",
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
            self._finish(results[i], row, outcomes.get(i, {}), mode, aggregation, opts["weights"])
            results[i].retryable = results[i].failed and transient[i]
        return results

    def _blank_result(self, row: Any, i: int, mode: str) -> ImageResult:
        if not isinstance(row, dict):
            raise ValueError(f"rows[{i}] is a {type(row).__name__}, not a T2I-ReasonBench row (a dict)")
        missing = [f for f in ("id", "dimension", "prompt", "evaluation") if f not in row]
        if missing:
            raise ValueError(f"rows[{i}] lacks field(s) {missing}: is it a T2I-ReasonBench row?")
        if row["dimension"] not in DIMENSIONS:
            raise ValueError(f"rows[{i}] has dimension {row['dimension']!r}; known: {', '.join(DIMENSIONS)}")
        if row.get("name") is None and not isinstance(row["id"], int):
            raise ValueError(f"rows[{i}] has id {row['id']!r} and no name: is it a T2I-ReasonBench row?")
        for g in row["evaluation"] or []:
            if not isinstance(g, dict) or not isinstance(g.get("pairs"), list):
                raise ValueError(f"rows[{i}] ({self.row_id(row)}) has a question group that is not "
                                 f"{{group, pairs...}}: {g!r:.80}")
            if "role" not in g and g.get("group") not in DIMENSIONS[row["dimension"]].group_roles:
                raise ValueError(f"rows[{i}] ({self.row_id(row)}) has question group {g.get('group')!r}; "
                                 f"a {row['dimension']} row has {', '.join(DIMENSIONS[row['dimension']].group_roles)}")
        context = {k: row.get(k) for k in ("tag", "idiom", "idiom_meaning", "explicit_meaning") if row.get(k)}
        context["mode"] = mode
        return ImageResult(id=self.row_id(row), prompt=self.prompt(row), score=None, config=row["dimension"],
                           context=context)

    @staticmethod
    def _role(row: dict[str, Any], group: dict[str, Any]) -> str | None:
        """A group's role: the row's own (rows built by this reader), else from its key (older rows)."""
        if "role" in group:
            return group["role"] if group["role"] in ROLES else None
        return DIMENSIONS[row["dimension"]].group_roles.get(group.get("group"))

    def _asked_groups(self, row: dict[str, Any], mode: str, result: ImageResult) -> list[dict[str, Any]]:
        """The groups to ask about: all of them for an image, all but quality for a text; a group whose
        role is unknown is not asked (the build reported it) and is named in the result's context."""
        asked = []
        for g in row["evaluation"] or []:
            role = self._role(row, g)
            if role is None:
                result.context.setdefault("unscored_groups", []).append(g.get("group"))
                continue
            if mode == "text" and role == "quality":
                continue
            for p in g["pairs"]:
                result.questions.append(QuestionResult(question=p["question"], score=None, criterion=p["criterion"],
                                                       group=role, id=f"{g['group']}.{p['question_key']}"))
            if g["pairs"]:
                asked.append(g)
        return asked

    def _finish(self, result: ImageResult, row: dict[str, Any], outcomes: dict[str, Any], mode: str,
                aggregation: str, weights: dict[str, dict[str, float]]) -> None:
        """Fill in question scores, group means and the image score; record what failed."""
        dim = row["dimension"]
        failures = [result.failure] if result.failure else []
        by_role: dict[str, list[float | None]] = defaultdict(list)
        for g in row["evaluation"] or []:
            role = self._role(row, g)
            if role is None or (mode == "text" and role == "quality"):
                continue
            if not g["pairs"]:
                failures.append(f"group {g['group']} has no question-criterion pairs")
                by_role[role].append(None)
                continue
            outcome = outcomes.get(g["group"])
            qs = [q for q in result.questions if q.id.startswith(f"{g['group']}.")]
            if outcome is None:
                by_role[role].extend([None] * len(qs))
            elif outcome.ok:
                scores, reasons = outcome.value
                for q, s, r in zip(qs, scores, reasons):
                    q.score, q.reasoning = s, r
                by_role[role].extend(scores)
            else:
                failures.append(f"group {g['group']}: {outcome.error}")
                by_role[role].extend([None] * len(qs))
        # a group's score is the mean of its questions (eq. 1); None if any question failed
        result.subscores = {role: (None if not v or any(s is None for s in v) else _unit(math.fsum(v) / len(v)))
                            for role, v in by_role.items()}
        if aggregation == "paper":
            w = weights[dim]
            if mode == "text":
                w = {k: v for k, v in w.items() if k != "quality"}
        else:
            w = OFFICIAL_WEIGHTS[dim]
        needed = {role: wt for role, wt in w.items() if wt}
        absent = [role for role in needed if role not in result.subscores]
        if absent:
            failures.append(f"no {', '.join(absent)} questions for a {dim} row")
        if not absent and all(result.subscores[r] is not None for r in needed):
            # within [0, sum of the weights] whatever rounding does
            result.score = min(max(math.fsum(wt * result.subscores[r] for r, wt in needed.items()), 0.0),
                               math.fsum(needed.values()))
        if failures:
            result.failure = "; ".join(dict.fromkeys(failures))
        result.context.update(aggregation=aggregation, weights=dict(w))

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """Table 2 (or Table 4 in text mode) from per-image results, on 0 to 100.

        ``dimensions``: per dimension, ``score`` (T2I-ReasonScore, or the official accuracy) and the
        group subscores ``reason`` / ``detail`` / ``quality``, each a :func:`~t2ireason.stats.summarize`
        (mean, se, bootstrap and normal 95% CIs, n, failed); ``<dimension>``: its mean score (the
        Table 2 cell); ``overall``: the mean of the dimension scores (Table 2's Overall), with
        ``overall_summary`` holding its standard error and a stratified bootstrap interval.
        Failed images are counted in ``failed`` and left out of every mean.
        """
        opts = _check_options(options)
        kw = {"confidence": opts["confidence"], "n_resamples": opts["n_resamples"], "seed": opts["seed"]}
        by_dim: dict[str, list[ImageResult]] = defaultdict(list)
        for r in results:
            if r.config not in DIMENSIONS:
                raise ValueError(f"result {r.id} has dimension {r.config!r}; known: {', '.join(DIMENSIONS)}")
            by_dim[r.config].append(r)
        dims = [d for d in DIMENSIONS if d in by_dim]
        table: dict[str, dict[str, Any]] = {}
        for d in dims:
            rs = by_dim[d]
            entry: dict[str, Any] = {"score": summarize([r.score for r in rs], scale=100, **kw)}
            for role in ROLES:
                values = [r.subscores[role] for r in rs if role in r.subscores]
                if values:
                    entry[role] = summarize(values, scale=100, **kw)
            weights = next((r.context["weights"] for r in rs if "weights" in r.context), None)
            entry["weights"] = weights
            entry["max_score"] = round(100 * math.fsum(weights.values()), 9) if weights else None
            table[d] = entry
        overall = _overall([[r.score for r in by_dim[d]] for d in dims], **kw)
        return {
            "overall": overall["mean"],
            **{d: table[d]["score"]["mean"] for d in dims},
            "dimensions": table,
            "overall_summary": overall,
            "aggregation": _same(results, "aggregation", opts["aggregation"]),
            "mode": _same(results, "mode", opts["mode"]),
            "scale": 100,
        }

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 2 (Table 4 for the text score; the official accuracy with ``aggregation="official"``),
        then each dimension's group means (S_reason, S_detail, S_quality) behind it."""
        dims = [d for d in DIMENSIONS if d in aggregate["dimensions"]]
        text = aggregate.get("mode") == "text"
        official = aggregate.get("aggregation") == "official"
        title = ("T2I-ReasonBench Table 4: text score" if text else
                 "T2I-ReasonBench: accuracy (official scripts)" if official else
                 "T2I-ReasonBench Table 2: T2I-ReasonScore")
        headline = {d.title(): aggregate["dimensions"][d]["score"] for d in dims}
        headline["Overall"] = aggregate["overall_summary"]
        groups = {f"{d.title()} {role}": aggregate["dimensions"][d][role]
                  for d in dims for role in ROLES if role in aggregate["dimensions"][d]}
        return [PaperTable.one_row(title, label, headline, note="0-100; overall is the mean of the dimensions"),
                PaperTable.one_row("T2I-ReasonBench: question-group means per dimension", label, groups,
                                   note="S_reason, S_detail, S_quality on 0-100")]

    # -- stage I: question-criterion generation -----------------------------------------------------

    def generate_criteria(self, records: Sequence[dict[str, Any]], dimension: str, judge: Any, *,
                          max_reasks: int = 2, strict: bool = False,
                          progress: bool | str = False) -> list[dict[str, Any]]:
        """Question-criterion pairs for new prompts, with the stage-1 template of ``dimension``
        (Figures 9 to 12), through any judge (text-only requests), as rows of this dataset's schema.

        ``records`` carry ``id`` and ``prompt`` (and ``idiom``, ``idiom_meaning`` for idiom;
        ``explicit_meaning`` for entity and scientific; optionally ``tag``). A reply must hold every
        group of the dimension, each with 1 to 5 pairs keyed ``q1``/``c1``... numbered from 1, and
        ``image_content``; otherwise it is re-asked (``max_reasks`` times) naming the problem.
        A record still failing gives a row with no groups and the failure (with every raw reply)
        in ``extra``, which :meth:`score` then reports as a failure; ``strict=True`` raises instead.
        """
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
            requests.append(ChatRequest.simple(render(_TEMPLATES, f"criteria_{dimension}", **slots),
                                               metadata={"id": rec["id"]}))
        parsed = ask_structured(judge, requests, _criteria_parser(spec), max_reasks=max_reasks,
                                progress=f"criteria {dimension}" if progress is True else progress)
        model = judge.identity().get("model") if hasattr(judge, "identity") else None
        rows, failed = [], []
        for rec, outcome in zip(records, parsed):
            ident, _ = _id_of(rec, 0, "prompt")
            base = {"id": ident.id, "name": ident.name, "original_id": ident.original, "dimension": dimension,
                    **{f: rec.get(f) for f in _PROMPT_KEYS if f != "id"}}
            if outcome.ok:
                image_content, groups = outcome.value
                info = {"criteria": {"model": model, "reasks": outcome.reasks}}
            else:
                failed.append(f"{rec['id']}: {outcome.error}")
                image_content, groups = None, []
                info = {"criteria": {"model": model, "failure": outcome.error, "replies": outcome.texts}}
            rows.append({**base, "image_content": image_content, "evaluation": groups, "evaluation_prompt": None,
                         "reason": None, "reason_prompt": None, "extra": _json_text(info)})
        if failed:
            message = f"criteria generation failed for {len(failed)} of {len(records)} {dimension} record(s): " \
                      + "; ".join(failed)
            if strict:
                raise ValueError(message)
            warnings.warn(message, stacklevel=2)
        return rows


# -- reading the release -----------------------------------------------------------------------------

#: Every kind of :class:`Anomaly` the reader reports (``build_report.json``), with what it means. Each names
#: the file and the record (its id, or its position); nothing it describes is lost. What "goes to the
#: quarantine" is not in a row: it is in ``Release.quarantine`` (``build_report.json``'s ``quarantine``) with
#: its raw text. Files the reader does not read (the authors' scripts, docs) are not anomalies: the builder
#: lists them as ``ignored_files`` (``authors_scripts`` for the scripts).
ANOMALY_KINDS = {
    # files
    "missing_file": "an expected file is absent: the other files are read without it",
    "file_name": "an expected file is absent but one file's name differs from it only by case, separators or a "
                 "slipped letter: that file is read in its place",
    "ambiguous_file": "an expected file is absent and several files are named like it: none is read in its place",
    "empty_file": "a file holds nothing, or an empty array",
    "malformed_file": "a file is not valid JSON: every whole record in it is read, the rest goes to the quarantine",
    "malformed_record": "damaged text inside a file: it goes to the quarantine, read on from the next whole record",
    "truncated_file": "a file's array is not closed (the file ends early)",
    "missing_comma": "two records with no comma between them: both read",
    "trailing_text": "text after a file's array: it goes to the quarantine",
    "json_lines": "records one after another (JSON lines), not one array: all read",
    "not_an_array": "a file holds one record or an object of records instead of an array: read as records",
    "byte_order_mark": "a file starts with a UTF-8 byte order mark: skipped",
    "not_utf8": "a file is not UTF-8: its undecodable bytes are read as U+FFFD",
    "unknown_data_file": "a JSON file in a data folder that no dimension reads: not read (data the reader may miss)",
    "no_rows": "no record of a dimension could be read: the config is absent",
    # records and ids
    "not_a_record": "a record that is not an object: it goes to the quarantine",
    "no_id": "a record without id: kept as a row of its own, joined with nothing",
    "id_as_text": "an integer id written as text: read as the integer",
    "id_as_float": "an integer id written with decimals: read as the integer",
    "id_not_integer": "an id that is not an integer but can be a file name: its images are named by it",
    "unsafe_id": "an id that cannot be a file name: its images get base.safe_name of it (row: original_id, name)",
    "duplicate_record": "a record repeated exactly: read once",
    "duplicate_id": "an id repeated with other contents: each occurrence is a row (name 0001-2...)",
    "duplicate_key": "a key repeated within one object: the last value keeps it, earlier ones a suffixed key",
    "no_prompt_record": "questions for an id prompts/ lacks: the row takes the evaluation file's prompt",
    "no_evaluation_record": "a prompt without questions: kept, unscorable",
    "no_pipeline_prompt": "a prompt without a rewritten prompt",
    "orphan_pipeline_prompt": "a rewritten prompt with no prompt to attach to: it goes to the quarantine",
    # fields
    "missing_field": "a field is absent (or its value comes from the other file)",
    "null_value": "a field is null",
    "non_text_value": "a text field holds another JSON value: kept as its JSON text",
    "dict_image_content": "image_content is an object: kept as its JSON text",
    "reason_as_text": "a rewritten prompt's reason is one text: kept as a one-item list",
    "extra_key": "keys outside the schema: kept in the row's extra",
    "prompt_mismatch": "the evaluation file's prompt differs from prompts/: kept as evaluation_prompt",
    "explicit_meaning_mismatch": "the evaluation file's explicit_meaning differs: kept in extra",
    "empty_prompt": "a prompt that is empty or only whitespace: kept as it is",
    "invalid_unicode": "a lone surrogate (a \\ud800 escape) that UTF-8 cannot carry: replaced by U+FFFD",
    # question groups
    "unexpected_group": "a group the dimension does not name: its role read from its key, or unknown (not scored)",
    "missing_group": "a group of the dimension is absent",
    "group_not_object": "a group that is not an object of pairs: kept as its raw JSON, no pairs",
    "no_pairs": "a group without question-criterion pairs",
    "pair_count": "a group with more pairs than the templates ask for",
    "irregular_key": "pair keys other than q1/c1 (sci_q1, aq1...), or a criterion matched by number or position",
    "numbering": "questions not numbered 1..n",
    "key_order": "keys not in q1, c1, q2, c2 order: pairs read by their numbers",
    "question_without_criterion": "a question with no criterion: kept with a null criterion",
    "criterion_without_question": "a criterion with no question: kept in the group's extra, sent to the judge",
    "non_pair_key": "a group's key that is not a pair (scoring, a rubric object): kept and sent with the group",
    "structured_criterion": "a criterion that is not text: rendered for the judge, kept as criterion_json",
    "empty_question": "a question that is null or blank",
    "empty_criterion": "a criterion that is null or blank",
}


_DATA_FOLDERS = ("prompts", "deepseek_evaluation_qs", "pipeline_prompts")


def _release_root(path: Path) -> Path:
    """``path``, when it holds the release's data folders (``t2ireason build`` finds them in a checkout
    or an archive one or two folders deeper, by :attr:`T2IReasonBench.release_markers`)."""
    if not path.is_dir():
        raise ReleaseError(f"{path}: not a folder; point to the T2I-ReasonBench release (it holds prompts/, "
                           f"deepseek_evaluation_qs/ and pipeline_prompts/)")
    if not any((path / d).is_dir() for d in _DATA_FOLDERS):
        raise ReleaseError(f"{path}: no prompts/, deepseek_evaluation_qs/ or pipeline_prompts/ folder; pass the "
                           "release's root, or build it with `t2ireason build t2i-reasonbench --source`, which "
                           "finds the root in a checkout or an archive one or two folders deeper")
    return path


def _keep_overwritten(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` keeping every value of a key repeated within one object (see _OVERWRITTEN)."""
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            n = 1
            while f"{key}{_OVERWRITTEN.format(n=n)}" in out:
                n += 1
            out[f"{key}{_OVERWRITTEN.format(n=n)}"] = out[key]
        out[key] = value
    return out


_LOADER = json.JSONDecoder(object_pairs_hook=_keep_overwritten)
_RECORD_START = re.compile(r"[,\[\n][ \t\r\n]*\{")
_RESYNC_TRIES = 100  # bounded: each try may read to the end of the file


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _next_record(text: str, start: int) -> int | None:
    """Where the next whole record (an object with an ``id``) starts after damaged text, if anywhere."""
    for tries, m in enumerate(_RECORD_START.finditer(text, start)):
        if tries >= _RESYNC_TRIES:
            return None
        i = m.end() - 1
        try:
            value, _ = _LOADER.raw_decode(text, i)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "id" in value:
            return i
    return None


def _salvage(text: str) -> tuple[list[Any], list[tuple[str, str]], list[str]]:
    """The whole values of a JSON array (or of a sequence of JSON values, one per line) that does not
    parse as a whole: ``(values, problems, leftovers)``, where leftovers are the raw texts that could not
    be read. Reads past a damaged record to the next whole one."""
    values, problems, leftovers = [], [], []
    i = _skip_space(text, 0)
    in_array = text.startswith("[", i)
    i = _skip_space(text, i + 1) if in_array else i
    closed = False
    while i < len(text):
        if in_array and text[i] == "]":
            closed = True
            end = _skip_space(text, i + 1)
            if end < len(text):
                problems.append(("trailing_text", f"text after the array's end at character {end}"))
                leftovers.append(text[end:])
            break
        try:
            value, end = _LOADER.raw_decode(text, i)
        except (ValueError, RecursionError) as e:
            resume = _next_record(text, i + 1)
            problems.append(("malformed_record", f"text at character {i} is not JSON ({e}); "
                             + ("read on from the next record" if resume is not None else "nothing after it read")))
            leftovers.append(text[i:resume] if resume is not None else text[i:])
            if resume is None:
                break
            i = resume
            continue
        values.append(value)
        i = _skip_space(text, end)
        if i < len(text) and text[i] == ",":
            i = _skip_space(text, i + 1)
        elif in_array and i < len(text) and text[i] != "]":
            problems.append(("missing_comma", f"no comma after the value ending at character {end}"))
    if in_array and not closed:
        problems.append(("truncated_file", "the array is not closed: the file ends early"))
    if not in_array and len(values) > 1:
        problems.append(("json_lines", f"{len(values)} JSON values one after another, not one array"))
    return values, problems, leftovers


@dataclass
class _Id:
    """How a record's id joins files and names files."""

    key: Any  # the join key; None: a record without an id, never joined
    id: int | None  # the integer id, when there is one
    name: str  # the file stem of its images
    original: str | None  # the release's id as JSON text when it is not an integer


_INT64 = 2 ** 63


def _id_of(rec: dict[str, Any], position: int, kind: str) -> tuple[_Id, tuple[str, str] | None]:
    """The id of a record, and the irregularity to report (kind, detail) when it is not a plain integer."""
    if "id" not in rec or rec["id"] is None:
        what = "no 'id'" if "id" not in rec else "id null"
        return _Id(None, None, f"noid-{kind}-{position + 1:04d}", None if "id" not in rec else "null"), \
            ("no_id", f"record {position} has {what}: kept as its own row, joined with nothing")
    value = rec["id"]
    original = _json_text(value)
    number: int | None = None
    note = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number, note = int(value), ("id_as_float", f"id {value!r} is a number with decimals; read as {int(value)}")
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        number, note = int(value), ("id_as_text", f"id {value!r} is text; read as {int(value)}")
    if number is not None and -_INT64 <= number < _INT64:
        return _Id(("int", number), number, f"{number:04d}", None if note is None else original), note
    if number is not None:
        return _Id(("id", original), None, _file_stem(str(number)), original), \
            ("id_not_integer", f"id {original} does not fit a 64-bit integer; its images are named "
                               f"{_file_stem(str(number))!r}")
    text = value if isinstance(value, str) else original
    name = _file_stem(text)
    if name == text:
        return _Id(("id", original), None, name, original), \
            ("id_not_integer", f"id {value!r} is not an integer; its images are named {name!r}")
    return _Id(("id", original), None, name, original), \
        ("unsafe_id", f"id {original} cannot be a file name; its images are named {name!r} (the mapping is kept in "
                      "the row's original_id and name)")


class _ReleaseReader:
    """Reads one release folder, one dimension at a time, collecting every anomaly."""

    def __init__(self, root: Path):
        self.root = root
        self.anomalies: list[Anomaly] = []
        #: what cannot be kept in a row, with its raw text (the anomaly before it says what was odd)
        self.quarantine: list[Quarantined] = []
        self.files_read: set[str] = set()

    def note(self, kind: str, file: str, row: Any, detail: str) -> None:
        self.anomalies.append(Anomaly(kind, file, row, detail))

    def lose(self, file: str, row: Any, raw: str, reason: str) -> None:
        self.quarantine.append(Quarantined(file, row, reason, raw))

    # -- files ------------------------------------------------------------------------------------

    def load(self, rel: str) -> list[Any] | None:
        """The records of one JSON file (None when the file is missing); damage is reported, and what
        can be read of a damaged file is read."""
        path = self.root / rel
        if not path.is_file():
            self.note("missing_file", rel, None, f"no such file in {self.root}" if not path.exists()
                      else "not a file")
            return None
        data = path.read_bytes()
        self.files_read.add(rel)
        if data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8):]
            self.note("byte_order_mark", rel, None, "the file starts with a UTF-8 byte order mark; skipped")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            text = data.decode("utf-8", "replace")
            self.note("not_utf8", rel, None, f"not UTF-8 ({e.reason} at byte {e.start}); undecodable bytes read "
                                             "as U+FFFD")
        if not text.strip():
            self.note("empty_file", rel, None, "the file is empty: no records")
            return []
        try:
            top = _LOADER.decode(text)
        except (ValueError, RecursionError) as e:
            top, problems, leftovers = _salvage(text)
            self.note("malformed_file", rel, None, f"not valid JSON ({e}); {len(top)} whole record(s) read from it")
            for kind, detail in problems:
                self.note(kind, rel, None, detail)
            for raw in leftovers:
                self.lose(rel, None, raw, "text that is not JSON")
            return top
        if isinstance(top, list):
            records = top
        elif isinstance(top, dict) and ("id" in top or "prompt" in top):
            self.note("not_an_array", rel, None, "the file holds one record, not an array of records")
            records = [top]
        elif isinstance(top, dict) and top and all(isinstance(v, dict) for v in top.values()):
            self.note("not_an_array", rel, None, f"the file holds an object of {len(top)} records keyed by "
                                                 f"{', '.join(list(map(repr, top))[:3])}...; read as its values")
            records = list(top.values())
        else:
            self.note("not_an_array", rel, None, f"the file holds a JSON {_type(top)}, not an array of records")
            self.lose(rel, None, _json_text(top) or "null", f"a JSON {_type(top)}, not records")
            return []
        if not records:
            self.note("empty_file", rel, None, "the file holds an empty array: no records")
        return records

    def index(self, rel: str, kind: str, records: list[Any] | None):
        """Records by join key (each key's occurrences in order, exact repeats dropped and reported),
        the records without an id, and the order in which keys first appear."""
        by_key: dict[Any, list[tuple[int, dict, _Id]]] = {}
        unkeyed: list[tuple[int, dict, _Id]] = []
        order: list[Any] = []
        seen: dict[Any, dict[str, int]] = defaultdict(dict)
        for pos, rec in enumerate(records or []):
            if not isinstance(rec, dict):
                self.note("not_a_record", rel, f"record {pos}", f"record {pos} is {_a(rec)}, not an object")
                self.lose(rel, f"record {pos}", _json_text(rec) or "null", f"{_a(rec)}, not a record")
                continue
            ident, problem = _id_of(rec, pos, kind)
            where = _where(ident, pos)
            if problem:
                self.note(problem[0], rel, where, problem[1])
            for key in _overwritten_keys(rec):
                self.note("duplicate_key", rel, where, f"key {key.split(_MARKER)[0]!r} appears more than once in one "
                          f"object; the last value keeps the key (as JSON readers read it), an earlier one is {key!r}")
            if ident.key is None:
                unkeyed.append((pos, rec, ident))
                order.append(("pos", kind, pos))
                continue
            canonical = json.dumps(rec, sort_keys=True, ensure_ascii=True)
            if canonical in seen[ident.key]:
                self.note("duplicate_record", rel, where, f"record {pos} repeats record {seen[ident.key][canonical]} "
                                                          "exactly; read once")
                continue
            seen[ident.key][canonical] = pos
            if ident.key in by_key:
                self.note("duplicate_id", rel, where, f"id {ident.original or ident.id} appears again (record {pos}) "
                                                      "with other contents; kept as a row of its own")
            else:
                order.append(ident.key)
            by_key.setdefault(ident.key, []).append((pos, rec, ident))
        return by_key, unkeyed, order

    # -- one dimension --------------------------------------------------------------------------------

    def dimension(self, config: str) -> list[dict[str, Any]]:
        spec = DIMENSIONS[config]
        # each file under its own name or, failing that, under another spelling (reported)
        expected = {r for d in DIMENSIONS.values() for r in d.files()}
        files = tuple(file_to_read(self.root, rel, expected, self.anomalies) or rel for rel in spec.files())
        prompts_rel, eval_rel, pipe_rel = files
        loaded = {rel: self.load(rel) for rel in (prompts_rel, eval_rel, pipe_rel)}
        p_keys, p_free, p_order = self.index(prompts_rel, "prompt", loaded[prompts_rel])
        e_keys, e_free, e_order = self.index(eval_rel, "evaluation", loaded[eval_rel])
        l_keys, l_free, _ = self.index(pipe_rel, "pipeline", loaded[pipe_rel])
        has = {rel: bool(recs) for rel, recs in loaded.items()}

        rows: list[dict[str, Any]] = []
        units: list[tuple] = []  # (prompt record, evaluation record, pipeline record, ident, occurrence)
        for entry in p_order + [k for k in e_order if k not in p_keys]:
            if isinstance(entry, tuple) and entry[0] == "pos":
                free = p_free if entry[1] == "prompt" else e_free
                pos, rec, ident = next(x for x in free if x[0] == entry[2])
                units.append((rec, None, None, ident, 0) if entry[1] == "prompt" else (None, rec, None, ident, 0))
                continue
            ps, es, ls = p_keys.get(entry, []), e_keys.get(entry, []), l_keys.get(entry, [])
            for k in range(max(len(ps), len(es))):
                p, e, pipe = (xs[k][1] if k < len(xs) else None for xs in (ps, es, ls))
                ident = (ps if k < len(ps) else es)[k][2]
                units.append((p, e, pipe, ident, k))
        for entry, occurrences in l_keys.items():
            n = max(len(p_keys.get(entry, [])), len(e_keys.get(entry, [])))
            for pos, rec, ident in occurrences[n:]:
                self.note("orphan_pipeline_prompt", pipe_rel, _where(ident, pos),
                          f"no prompt with this id in {prompts_rel} or {eval_rel}: the record goes to the quarantine")
                self.lose(pipe_rel, _where(ident, pos), _json_text(rec), "no prompt with this id")
        for pos, rec, ident in l_free:
            self.note("orphan_pipeline_prompt", pipe_rel, _where(ident, pos),
                      "a rewritten prompt without an id cannot be attached to a prompt: it goes to the quarantine")
            self.lose(pipe_rel, _where(ident, pos), _json_text(rec), "no id to attach it to a prompt")

        names: set[str] = set()
        for p, e, pipe, ident, k in units:
            name = ident.name if k == 0 else f"{ident.name}-{k + 1}"
            if name in names:  # an id that is a plain name may equal a made-up one
                name = f"{name}-{hashlib.sha256(repr((ident.key, k)).encode()).hexdigest()[:8]}"
            names.add(name)
            row = self.row(config, spec, files, p, e, pipe, ident, name, has)
            rows.append(row)
        return rows

    def row(self, config: str, spec: Dimension, files: tuple[str, str, str], p: dict | None, e: dict | None,
            pipe: dict | None, ident: _Id, name: str, has: dict[str, bool]) -> dict[str, Any]:
        prompts_rel, eval_rel, pipe_rel = files
        where = ident.id if ident.id is not None else (ident.original or name)

        def complain_in(rel: str):
            return lambda kind, detail: self.note(kind, rel, where, detail)

        complain_p, complain_e, complain_l = complain_in(prompts_rel), complain_in(eval_rel), complain_in(pipe_rel)
        for rec, complain in ((p, complain_p), (e, complain_e), (pipe, complain_l)):
            for key in [k for k, v in (rec or {}).items() if v is None and k != "id"]:
                complain("null_value", f"{key} is null")
        extra: dict[str, Any] = {}
        base = p if p is not None else {}
        if p is None:
            complain_e("no_prompt_record", f"no record with this id in {prompts_rel}: the prompt and fields are "
                                           f"taken from {eval_rel}")
            base = {k: e.get(k) for k in _PROMPT_KEYS if k in e}
        elif e is None and has[eval_rel]:
            complain_p("no_evaluation_record", f"no record with this id in {eval_rel}: no questions to score it")
        if p is not None and p.get("prompt") is None and e is not None and e.get("prompt") is not None:
            complain_p("missing_field", f"no prompt in {prompts_rel}; the prompt of {eval_rel} is used")
            base = {**p, "prompt": e["prompt"]}
        if p is not None and set(p) - set(_PROMPT_KEYS):
            extra["prompts"] = {k: v for k, v in p.items() if k not in _PROMPT_KEYS}
            complain_p("extra_key", f"key(s) {_typed(extra['prompts'])} kept in extra")

        fields = {f: _text(base.get(f), f, complain_p if p is not None else complain_e)
                  for f in _PROMPT_KEYS if f != "id"}
        if fields["prompt"] is None:
            (complain_p if p is not None else complain_e)("missing_field", "no prompt for this id")
        elif not fields["prompt"].strip():
            (complain_p if p is not None else complain_e)("empty_prompt", f"the prompt is {fields['prompt']!r}")

        groups, image_content, evaluation_prompt = [], None, None
        if e is not None:
            groups = _groups_of(e, spec, complain_e)
            if "image_content" not in e:
                complain_e("missing_field", "no image_content")
            elif isinstance(e["image_content"], dict):
                complain_e("dict_image_content", "image_content is an object; kept as JSON text")
                image_content = _json_text(e["image_content"])
            else:
                image_content = _text(e["image_content"], "image_content", complain_e)
            if p is not None and "prompt" in e and e["prompt"] != base.get("prompt"):
                evaluation_prompt = _text(e["prompt"], "evaluation prompt", complain_e)
                complain_e("prompt_mismatch", f"evaluation prompt {e['prompt']!r} differs from {base.get('prompt')!r}")
            leftover = {k: v for k, v in e.items()
                        if k not in _EVAL_KEYS and not any(g["group"] == k for g in groups)}
            if p is not None and "explicit_meaning" in e and e["explicit_meaning"] != p.get("explicit_meaning"):
                leftover["explicit_meaning"] = e["explicit_meaning"]
                complain_e("explicit_meaning_mismatch", "the evaluation file's explicit_meaning differs; kept in extra")
            if set(leftover) - {"explicit_meaning"}:
                complain_e("extra_key", f"key(s) {_typed(leftover, skip='explicit_meaning')} kept in extra")
            if leftover:
                extra["evaluation"] = leftover

        reason = reason_prompt = None
        if pipe is None:
            if has[pipe_rel]:
                complain_l("no_pipeline_prompt", "no rewritten prompt for this id")
        else:
            reason = pipe.get("reason")
            if isinstance(reason, str):
                complain_l("reason_as_text", "reason is a string; kept as a one-item list")
                reason = [reason]
            elif reason is not None and not isinstance(reason, list):
                complain_l("non_text_value", f"reason is {_a(reason)}; kept as a one-item list of its JSON text")
                reason = [_json_text(reason)]
            elif reason is not None:
                for j, r in enumerate(reason):
                    if r is None:
                        complain_l("null_value", f"reason item {j} is null")
                reason = [_text(r, f"reason item {j}", complain_l) for j, r in enumerate(reason)]
            reason_prompt = _text(pipe.get("reason_prompt"), "reason_prompt", complain_l)
            if set(pipe) - _PIPE_KEYS:
                extra["pipeline"] = {k: v for k, v in pipe.items() if k not in _PIPE_KEYS}
                complain_l("extra_key", f"key(s) {_typed(extra['pipeline'])} kept in extra")

        row = {"id": ident.id, "name": name, "original_id": ident.original, "dimension": config,
               "prompt": fields["prompt"], "tag": fields["tag"], "idiom": fields["idiom"],
               "idiom_meaning": fields["idiom_meaning"], "explicit_meaning": fields["explicit_meaning"],
               "image_content": image_content, "evaluation": groups, "evaluation_prompt": evaluation_prompt,
               "reason": reason, "reason_prompt": reason_prompt, "extra": _json_text(extra) if extra else None}
        return _valid_unicode(row, complain_e)

    def unknown_data_files(self) -> None:
        """JSON files in the data folders that no dimension reads: data the reader may be missing.
        (Every other file the reader did not read, the authors' scripts among them, is listed by the
        builder from :attr:`files_read`.)"""
        wanted = {rel for spec in DIMENSIONS.values() for rel in spec.files()}
        for folder in _DATA_FOLDERS:
            for rel in unread_files(self.root, self.files_read | wanted, folder):
                if rel.endswith((".json", ".jsonl")):
                    self.note("unknown_data_file", rel, None, "a JSON file in a data folder that no dimension reads")


def _typed(values: dict[str, Any], skip: str | None = None) -> str:
    """Keys with the type of their values, for anomaly details: ``model (text), note (text)``."""
    return ", ".join(f"{k} ({_type(v)})" for k, v in values.items() if k != skip)


def _where(ident: _Id, position: int) -> Any:
    """How an anomaly names a record: its integer id, else its id as JSON text, else its position."""
    if ident.id is not None:
        return ident.id
    return ident.original if ident.original not in (None, "null") else f"record {position}"


def _text(value: Any, field: str, complain: Callable[[str, str], None]) -> str | None:
    """A text field: the release's text byte for byte, or another JSON value as its JSON text (reported)."""
    if value is None or isinstance(value, str):
        return value
    complain("non_text_value", f"{field} is {_a(value)}; kept as JSON text")
    return _json_text(value)


def _group_role(key: str, spec: Dimension) -> str | None:
    """The role of a group the dimension does not name, from words in its key (None: unknown)."""
    k = key.lower()
    if "quality" in k or "aes" in k:
        return "quality"
    if "detail" in k:
        return "detail"
    if any(w in k for w in ("reason", "entity", "scien", "sci_")):
        return "reason"
    return None


def _groups_of(rec: dict[str, Any], spec: Dimension, complain: Callable[[str, str], None]) -> list[dict[str, Any]]:
    """The record's question groups, in the record's order, each pair kept with its keys, every
    irregularity passed to ``complain(kind, detail)``. A group is a ``*_evaluation`` key, or any other
    key holding an object with question keys (q1, sci_q1...)."""
    groups = []
    for key, value in rec.items():
        if key in _EVAL_KEYS:
            continue
        named = key.lower().endswith("_evaluation")
        if not named and not (isinstance(value, dict) and any(_key_parts(_Q, k) for k in value)):
            continue
        role = spec.group_roles.get(key)
        if role is None:
            role = _group_role(key, spec)
            complain("unexpected_group", f"group {key!r} is not one of {', '.join(spec.group_roles)}; "
                     + (f"read as the {role} group" if role else "its role is unknown: kept, not scored"))
        raw = _json_text(value) if value is not None else "null"
        if not isinstance(value, dict):
            complain("group_not_object", f"{key} is {_a(value)}, not an object of question-criterion pairs; "
                                         "kept as its raw JSON, with no pairs")
            groups.append({"group": key, "role": role, "pairs": [], "extra": None, "raw": raw})
            continue
        pairs, extra, notes = parse_pairs(value, key)
        for kind, note in notes:
            complain(kind, f"{key}: {note}")
        if extra:
            complain("non_pair_key", f"{key}: key(s) {_typed(extra)} kept in the group's extra and sent to the "
                                     "judge with the group")
        if not pairs:
            complain("no_pairs", f"{key}: no question-criterion pairs")
        elif len(pairs) > 5:
            complain("pair_count", f"{key}: {len(pairs)} pairs (the templates ask for 1 to 5)")
        groups.append({"group": key, "role": role, "pairs": pairs, "extra": _json_text(extra) if extra else None,
                       "raw": raw})
    for key, role in spec.groups:
        if key not in rec and not any(g["role"] == role for g in groups):
            complain("missing_group", f"no {key!r} group")
    return groups


_MARKER = _OVERWRITTEN.split("{")[0]


def _overwritten_keys(value: Any) -> list[str]:
    """The keys renamed by :func:`_keep_overwritten` anywhere in a record."""
    if isinstance(value, dict):
        return [k for k in value if _MARKER in k] + [x for v in value.values() for x in _overwritten_keys(v)]
    if isinstance(value, list):
        return [x for v in value for x in _overwritten_keys(v)]
    return []


def _replace(value: Any, fix: Callable[[str, str], str], path: str = "") -> Any:
    if isinstance(value, str):
        return fix(path, value)
    if isinstance(value, dict):
        return {k: _replace(v, fix, f"{path}.{k}" if path else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, fix, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _valid_unicode(row: dict[str, Any], complain: Callable[[str, str], None]) -> dict[str, Any]:
    """Texts that UTF-8 cannot carry (a lone surrogate from a ``\\ud800`` escape) with U+FFFD in its place,
    reported: Parquet stores UTF-8 only."""
    def fix(path: str, text: str) -> str:
        if _utf8(text):
            return text
        complain("invalid_unicode", f"{path} holds a lone surrogate; replaced by U+FFFD")
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

    return _replace(row, fix)


def _unit(x: float) -> float:
    return min(max(x, 0.0), 1.0)


# -- stage I reply validation, options, statistics ---------------------------------------------------


def _criteria_parser(spec: Dimension):
    """Validate a stage-1 reply: every group, 1 to 5 pairs each, keys q1/c1... numbered from 1."""

    def parse(text: str) -> tuple[str, list[dict[str, Any]]]:
        value = extract_json(text, expect=dict)
        content = value.get("image_content")
        if not content:
            raise ReplyParseError('the JSON has no "image_content"')
        problems: list[str] = []
        groups = _groups_of(value, spec, lambda kind, detail: problems.append(detail))
        if problems:
            raise ReplyParseError("; ".join(problems) + " (use keys q1, c1, q2, c2 ... numbered from 1, "
                                  "1 to 5 pairs per group, nothing else in a group)")
        return (content if isinstance(content, str) else _json_text(content)), groups

    return parse


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - _SCORE_OPTIONS - _AGGREGATE_OPTIONS
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; T2I-ReasonBench takes "
                        f"{sorted(_SCORE_OPTIONS | _AGGREGATE_OPTIONS)}")
    opts = {"mode": "image", "aggregation": "paper", "weights": None, "max_reasks": 2, "structured_output": False,
            "reply_json": "last", "template": "paper", "confidence": 0.95, "n_resamples": 2000, "seed": 0,
            "image_preparation": None, **options}
    if opts["image_preparation"] not in _IMAGE_PREPARATIONS:
        raise ValueError(f"image_preparation must be one of {_IMAGE_PREPARATIONS}, got {opts['image_preparation']!r}")
    if opts["mode"] not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {opts['mode']!r}")
    if opts["aggregation"] not in _AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {_AGGREGATIONS}, got {opts['aggregation']!r}")
    if opts["reply_json"] not in _REPLY_JSON:
        raise ValueError(f"reply_json must be one of {_REPLY_JSON}, got {opts['reply_json']!r}")
    if opts["template"] not in _TEMPLATE_CHOICES:
        raise ValueError(f"template must be one of {_TEMPLATE_CHOICES}, got {opts['template']!r}")
    weights = {d: dict(w) for d, w in PAPER_WEIGHTS.items()}
    for d, w in (opts["weights"] or {}).items():
        if d not in weights:
            raise ValueError(f"weights for unknown dimension {d!r}; known: {', '.join(DIMENSIONS)}")
        bad = set(w) - set(ROLES)
        if bad or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in w.values()):
            raise ValueError(f"weights[{d!r}] must map reason/detail/quality to non-negative numbers, got {w!r}")
        weights[d] = {**weights[d], **{k: float(v) for k, v in w.items()}}
    opts["weights"] = weights
    return opts


def _same(results: Sequence[ImageResult], key: str, default: str) -> str:
    """The ``mode`` or ``aggregation`` the results were scored with (they must agree)."""
    values = {r.context[key] for r in results if key in r.context}
    if len(values) > 1:
        raise ValueError(f"the results mix {key}s {sorted(values)}; aggregate them separately")
    return values.pop() if values else default


def _overall(per_dim: list[list[float | None]], *, confidence: float, n_resamples: int, seed: int) -> dict[str, Any]:
    """Mean of the dimension means (x100), its standard error and a bootstrap interval that
    resamples images within each dimension."""
    xs = [np.asarray([v for v in vals if v is not None and not math.isnan(v)], dtype=float) for vals in per_dim]
    xs = [x for x in xs if x.size]
    failed = sum(len(v) for v in per_dim) - sum(x.size for x in xs)
    if not xs:
        return {"mean": math.nan, "se": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                "n": 0, "failed": failed, "dimensions": 0}
    mean = float(np.mean([x.mean() for x in xs]))
    ses = [x.std(ddof=1) / math.sqrt(x.size) if x.size > 1 else math.nan for x in xs]
    se = math.sqrt(sum(s * s for s in ses)) / len(xs)
    rng = np.random.default_rng(seed)
    boot = np.mean([x[rng.integers(0, x.size, size=(n_resamples, x.size))].mean(axis=1) for x in xs], axis=0)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return {"mean": 100 * mean, "se": 100 * se, "ci_low": 100 * float(lo), "ci_high": 100 * float(hi),
            "n": int(sum(x.size for x in xs)), "failed": failed, "dimensions": len(xs)}


BENCHMARK = T2IReasonBench()
