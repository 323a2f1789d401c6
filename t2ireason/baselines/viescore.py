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
   authors' standalone code guesses a random score after one failed retry; never here);
3. SC = min(SC scores), PQ = min(PQ scores), O = sqrt(SC x PQ) (0-10, the paper's Eq. 1); the image's score is
   O / 10 (0-1), SC, PQ and O kept in its subscores and each reasoning with its question.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..images import ImageError, JudgeImage, load_images
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, as_score, ask_structured, extract_json, score_list
from ..prompts import verbatim
from ..results import ImageResult, QuestionResult
from .base import Baseline, failed_image, image_source, prompt_rows

__all__ = ["VIEScore", "PRESETS", "ASPECTS", "reply_schema", "parse_reply", "viescore_requests"]

PRESETS = {
    # The paper's GPT-4o results (paper_implementation/mllm_tools/openai.py, GPT4o): gpt-4o-2024-05-13,
    # max_tokens 1400, no temperature sent (the API's default, 1).
    "paper": {"judge": "openai:gpt-4o-2024-05-13",
              "judge_kwargs": {"sampling": Sampling(temperature=1.0, max_tokens=1400)}},
}

#: each request's template and the aspects its scores rate, in order (the rules' own words)
ASPECTS = {"SC": ("sc_t2i", ("semantic consistency",)), "PQ": ("pq", ("naturalness", "artifacts"))}

_SCORE_OPTIONS = frozenset({"sampling", "max_reasks", "structured_output"})


def reply_schema(n: int) -> dict[str, Any]:
    """The reply the context asks for, as a JSON schema (for judges that enforce one: ``structured_output``)."""
    return {"title": "viescore", "type": "object", "additionalProperties": False, "required": ["score", "reasoning"],
            "properties": {"score": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10},
                                     "minItems": n, "maxItems": n},
                           "reasoning": {"type": "string"}}}


def parse_reply(text: str, n: int) -> tuple[list[float], str | None]:
    """``(scores, reasoning)`` from a reply: a JSON object with ``score`` (a list of ``n`` scores, or one score
    when ``n`` is 1) and ``reasoning``, or a bare list of ``n`` scores, or a bare number when ``n`` is 1."""
    stripped = text.strip()
    if n == 1 and stripped.isdigit():
        return [as_score(stripped, lo=0, hi=10)], None
    value = extract_json(text)
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
        prompt). ``rows``: the prompts (strings, or dicts with a ``prompt`` and an ``id``)."""
        opts = self.options(options, _SCORE_OPTIONS)
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
            _scored(result, {key: next(parsed) for key in ASPECTS})
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The mean O x 10 (0-100) with its interval, and the means of SC, PQ and O on the paper's 0-10 scale over
        the scored images."""
        out = super().aggregate(results, **options)
        scored = [r for r in results if r.score is not None]
        for key in ("SC", "PQ", "O"):
            out[key] = sum(r.subscores[key] for r in scored) / len(scored) if scored else None
        return out


def _scored(result: ImageResult, parsed: dict[str, Any]) -> None:
    """The image's aspects, SC, PQ and O (or why not)."""
    failures = []
    for key, p in parsed.items():
        result.replies.extend(p.texts)
        result.reasks += p.reasks
        aspects = ASPECTS[key][1]
        scores, reasoning = p.value if p.ok else ([None] * len(aspects), None)
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
