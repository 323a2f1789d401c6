"""VIEScore (Ku et al., ACL 2024, arXiv:2312.14867) for text-to-image generation.

Record -> request -> reply -> score, for one image:

1. two requests, each one user message with the text and then the image, as the authors' GPT-4o wrapper sends
   them (viescore/mllm_tools/openai.py): semantic consistency (SC) with the prompt (``templates/viescore/
   sc_t2i.txt``: the paper's context, the one-image generation rule and the t2i SC rule, joined as
   viescore/__init__.py joins them; the text recorded as every prompt of the paper's released GPT-4o
   results), and perceptual quality (PQ: naturalness and artifacts; ``templates/viescore/pq.txt``);
2. each reply is the JSON the context asks for, ``{"score": [...], "reasoning": "..."}`` (the authors' parser
   also takes a bare list of scores or a bare number): SC one score, PQ two, each 0 to 10; any other reply is
   re-asked in the same conversation, then recorded as the image's failure with every raw reply (the
   authors' standalone code guesses a random score after one failed retry; never here). Read strictly: nothing
   repaired, and a reply with two JSON objects refused (re-asked), never read by one of them;
3. SC = min(SC scores), PQ = min(PQ scores), O = sqrt(SC x PQ) (0-10, the paper's Eq. 1); the image's score is
   O / 10 (0-1), SC, PQ and O kept in its subscores and each reasoning with its question. A score that is not a
   whole number (7.5) is read as given (``paper``), or cut to its integer part as the authors' analysis does
   (``official``: ``int()``, 7.5 -> 7 -> 0.7).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ..images import ImageError, JudgeImage, load_images
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, as_score, ask_structured, score_list, strict_json_values
from ..prompts import verbatim
from ..results import ImageResult, QuestionResult
from .base import Baseline, failed_image, image_source, prompt_rows

__all__ = ["VIEScore", "PRESETS", "ASPECTS", "reply_schema", "parse_reply", "viescore_requests"]

#: the paper's judge as paper_implementation/mllm_tools/openai.py (GPT4o) calls it: gpt-4o-2024-05-13, a payload
#: of max_tokens 1400 and nothing else (the API's defaults stand, temperature 1 and top_p 1, recorded as such)
_JUDGE = {"judge": "openai:gpt-4o-2024-05-13",
          "judge_kwargs": {"sampling": Sampling(temperature=1.0, max_tokens=1400), "sampling_params": ["max_tokens"]}}

PRESETS = {
    # The paper's GPT-4o results, each score read as given (7.5 is 7.5).
    "paper": dict(_JUDGE),
    # The same, each score read as the authors' analysis reads it (analyze_json.ipynb: int(), 7.5 -> 7).
    "official": {**_JUDGE, "options": {"fractional_scores": "truncate"}},
}

#: how a score that is not a whole number is read: as given ("keep") or cut to its integer part ("truncate",
#: the authors' analyze_json.ipynb: ``[int(score) for score in scores]``)
FRACTIONAL_SCORES = ("keep", "truncate")
DELIMITER = "||V^=^V||"

#: each request's template and the aspects its scores rate, in order (the rules' own words)
ASPECTS = {"SC": ("sc_t2i", ("semantic consistency",)), "PQ": ("pq", ("naturalness", "artifacts"))}

_SCORE_OPTIONS = frozenset({"sampling", "max_reasks", "structured_output", "fractional_scores"})


def reply_schema(n: int) -> dict[str, Any]:
    """The reply the context asks for, as a JSON schema (for judges that enforce one: ``structured_output``)."""
    return {"title": "viescore", "type": "object", "additionalProperties": False, "required": ["score", "reasoning"],
            "properties": {"score": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10},
                                     "minItems": n, "maxItems": n},
                           "reasoning": {"type": "string"}}}


def parse_reply(text: str, n: int) -> tuple[list[float], str | None]:
    """``(scores, reasoning)`` from a reply, read strictly: one JSON object with ``score`` (a list of ``n``
    scores, or one score when ``n`` is 1) and ``reasoning`` (between the authors' ``||V^=^V||`` delimiters when
    the reply has both, else the one object in it), or a bare list of ``n`` scores, or a bare number when ``n``
    is 1. Nothing is repaired (quotes, commas), and a reply holding two JSON objects (or lists) is refused, not
    read by its last: either is re-asked."""
    stripped = text.strip()
    if n == 1 and stripped.isdigit():
        return [as_score(stripped, lo=0, hi=10)], None
    value = _strict_value(text)
    reasoning = None
    if isinstance(value, dict):
        if "score" not in value:
            raise ReplyParseError('the JSON object has no "score"')
        reasoning = value.get("reasoning")
        if reasoning is not None and not isinstance(reasoning, str):
            raise ReplyParseError('"reasoning" is not text')
        value = value["score"]
        if not isinstance(value, list):
            value = [value]
    return score_list(value, n, lo=0, hi=10), reasoning


def _strict_value(text: str) -> Any:
    """The one JSON value a reply gives, as it is written (the authors' parser takes what lies between its two
    delimiters, newlines dropped, as json.loads reads it)."""
    if text.count(DELIMITER) == 2:
        inner = text[text.find(DELIMITER) + len(DELIMITER): text.rfind(DELIMITER)].replace("\n", "").strip()
        try:
            return json.loads(inner)
        except ValueError:
            raise ReplyParseError(f"the text between the {DELIMITER} delimiters is not JSON as written "
                                  "(read strictly: not repaired)") from None
    values = strict_json_values(text)
    # as the authors' parser: a reply with braces is read by its object, one without by its list of scores
    kind, name = (dict, "object") if "{" in text else (list, "list")
    found = [v for v in values if isinstance(v, kind)]
    if len(found) > 1:
        raise ReplyParseError(f"the reply holds {len(found)} JSON {name}s: give one")
    if found:
        return found[0]
    if kind is dict:
        raise ReplyParseError("the reply's JSON object does not decode as written (read strictly: not repaired)")
    if not text.strip():
        raise ReplyParseError("empty reply")
    raise ReplyParseError("no JSON object found in the reply as written (read strictly: not repaired)")


def viescore_requests(prompt: str, image: JudgeImage, sampling: Sampling | None = None,
                      structured: bool = False) -> dict[str, ChatRequest]:
    """The SC and PQ requests about one image: the template's text (``<prompt>`` replaced by the prompt, as the
    authors' code does), then the image."""
    out = {}
    for key, (template, aspects) in ASPECTS.items():
        text = verbatim("viescore", template).replace("<prompt>", prompt)
        out[key] = ChatRequest.simple(text, image, sampling=sampling,
                                      json_schema=reply_schema(len(aspects)) if structured else None)
    return out


class VIEScore(Baseline):
    """VIEScore of each image for its prompt (see the module docstring); any VLM judge."""

    name = "viescore"
    pretty_name = "VIEScore"
    presets = PRESETS
    default_preset = "paper"
    score_options = _SCORE_OPTIONS
    citation = """@inproceedings{ku2024viescore,
  title     = {{VIEScore}: Towards Explainable Metrics for Conditional Image Synthesis Evaluation},
  author    = {Ku, Max and Jiang, Dongfu and Wei, Cong and Yue, Xiang and Chen, Wenhu},
  booktitle = {Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics (ACL)},
  year      = {2024}
}"""

    def score(self, rows: Sequence[Any], images: Sequence[Any], judge: Any, *, progress: bool | str = False,
              **options: Any) -> list[ImageResult]:
        """One result per image. Options: ``sampling`` (the judge's: a Sampling or its fields), ``max_reasks``
        (follow-ups when a reply is not the asked JSON, default 2), ``structured_output`` (also send
        :func:`reply_schema`, for judges that enforce one; default False: the paper's judge saw the plain
        prompt), ``fractional_scores`` ("keep", default: 7.5 is 7.5; "truncate": 7.5 is 7, as the authors'
        analysis reads it with ``int()``; the official preset's). ``rows``: the prompts (strings, or dicts with a
        ``prompt`` and an ``id``)."""
        opts = self.options(options, _SCORE_OPTIONS)
        fractional = opts.get("fractional_scores", "keep")
        if fractional not in FRACTIONAL_SCORES:
            raise ValueError(f"fractional_scores must be one of {', '.join(FRACTIONAL_SCORES)}, got {fractional!r}")
        sampling = Sampling(**opts["sampling"]) if isinstance(opts.get("sampling"), dict) else opts.get("sampling")
        rows = prompt_rows(rows)
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} prompts but {len(images)} images")
        results, requests, parsers, asked = [], [], [], []
        for given, row, image in zip(images, rows, load_images(images)):
            source = image_source(given, image)
            if isinstance(image, ImageError):
                results.append(failed_image(row, source, f"image: {image}"))
                continue
            results.append(ImageResult(id=row["id"], prompt=row["prompt"], score=None, image=source))
            asked.append(results[-1])
            for key, request in viescore_requests(row["prompt"], image, sampling,
                                                  bool(opts.get("structured_output"))).items():
                requests.append(request)
                parsers.append(lambda text, n=len(ASPECTS[key][1]): parse_reply(text, n))
        parsed = iter(ask_structured(judge, requests, parsers, max_reasks=opts.get("max_reasks", 2),
                                     progress=progress))
        for result in asked:
            _scored(result, {key: next(parsed) for key in ASPECTS}, fractional)
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The mean O x 10 (0-100) with its interval, and the means of SC, PQ and O on the paper's 0-10 scale over
        the scored images."""
        out = super().aggregate(results, **options)
        scored = [r for r in results if r.score is not None]
        for key in ("SC", "PQ", "O"):
            out[key] = sum(r.subscores[key] for r in scored) / len(scored) if scored else None
        return out


def _scored(result: ImageResult, parsed: dict[str, Any], fractional: str = "keep") -> None:
    """The image's aspects, SC, PQ and O (or why not); ``fractional="truncate"``: each score cut to its integer
    part, as the authors' analysis reads it (the scores as given kept in the context)."""
    failures = []
    for key, p in parsed.items():
        result.replies.extend(p.texts)
        result.reasks += p.reasks
        aspects = ASPECTS[key][1]
        scores, reasoning = p.value if p.ok else ([None] * len(aspects), None)
        if p.ok and fractional == "truncate" and any(s != int(s) for s in scores):
            result.context.setdefault("scores_as_given", {})[key] = list(scores)
            scores = [float(int(s)) for s in scores]
        for aspect, score in zip(aspects, scores):
            result.questions.append(QuestionResult(question=aspect, score=score, group=key, id=aspect,
                                                   reasoning=reasoning))
        if p.ok:
            result.subscores[key] = min(scores)
        else:
            failures.append(f"{key}: {p.error}")
            result.retryable = result.retryable or p.transient
    if failures:
        result.failure = "; ".join(failures)
        return
    result.subscores["O"] = math.sqrt(result.subscores["SC"] * result.subscores["PQ"])
    result.score = result.subscores["O"] / 10.0
