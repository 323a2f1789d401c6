"""The paper's evaluation-criteria pipeline (R2I-Bench appendix A.4): for new prompts, imagine the correct
image, design questions with criteria, assign weights within the per-dimension ranges; rows of the
dataset's schema come out, ready to be scored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...judges.base import ChatRequest, Sampling
from ...parsing import ReplyParseError, as_score, ask_structured, extract_json
from ...prompts import render
from .levels import criterion_levels
from .protocol import TEMPLATES
from .scores import WEIGHT_RANGES

__all__ = ["CriteriaGeneration", "generate_criteria"]

#: the names a reply may give a dimension
_DIMENSIONS = {
    "reasoning": "reasoning", "reasoning accuracy": "reasoning", "ra": "reasoning",
    "alignment": "alignment", "text-image alignment": "alignment", "text image alignment": "alignment",
    "ta": "alignment", "quality": "quality", "image quality": "quality", "iq": "quality",
}


@dataclass
class CriteriaGeneration:
    """The outcome of the criteria pipeline for one prompt: a row of the dataset's schema
    (``questions`` empty and ``has_questions`` False when it failed), with everything that
    happened on the way."""

    row: dict[str, Any]
    failure: str | None = None
    #: weights moved into their dimension's range (weights="clamp"), as readable notes
    adjustments: list[str] = field(default_factory=list)
    #: every raw reply, per step: {"imagine": [...], "design": [...], "weight": [...]}
    replies: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failure is None


def _text_reply(text: str) -> str:
    if not text.strip():
        raise ReplyParseError("empty reply")
    return text.strip()


def _weights_parser(ranges: dict[str, tuple[float, float]], mode: str):
    """Validate the WEIGHT step's JSON list; returns (questions, adjustments)."""

    def parse(text: str) -> tuple[list[dict[str, Any]], list[str]]:
        value = extract_json(text, expect=(list, dict))
        if isinstance(value, dict):  # {"questions": [...]} and the like
            lists = [v for v in value.values() if isinstance(v, list)]
            if len(lists) != 1:
                raise ReplyParseError("expected a JSON list of questions")
            value = lists[0]
        if not value:
            raise ReplyParseError("the list of questions is empty")
        questions, adjustments, problems = [], [], []
        for n, item in enumerate(value, start=1):
            if not isinstance(item, dict):
                problems.append(f"item {n} is not an object")
                continue
            question, criterion = item.get("question"), item.get("evaluation_criteria", item.get("criteria"))
            dim = _DIMENSIONS.get(str(item.get("dimension", "")).strip().lower())
            if not isinstance(question, str) or not question.strip():
                problems.append(f"item {n} has no question")
            if not isinstance(criterion, str) or not criterion.strip():
                problems.append(f"item {n} has no evaluation_criteria")
            elif criterion_levels(criterion) is None:  # its levels are what the judge will be held to
                problems.append(f"item {n}'s evaluation_criteria defines no levels that can be read: write each "
                                "level as its score from 0 to 1, a colon, then what earns it")
            if dim is None:
                problems.append(f"item {n} has dimension {item.get('dimension')!r}, not one of {', '.join(ranges)}")
            try:
                weight = as_score(item.get("weight"), lo=1.0, hi=10.0, name=f"item {n} weight")
            except ReplyParseError as e:
                problems.append(str(e))
                continue
            if dim is None or problems:
                continue
            lo, hi = ranges[dim]
            if not lo <= weight <= hi:
                if mode == "reject":
                    problems.append(f"item {n} ({dim}) has weight {weight:g}, outside its range {lo:g} to {hi:g}")
                    continue
                clamped = min(max(weight, lo), hi)
                adjustments.append(f"question {n}: weight {weight:g} clamped to {clamped:g} ({dim} range {lo:g}-{hi:g})")
                weight = clamped
            questions.append({"id": str(n), "question": question.strip(), "criterion": criterion.strip(),
                              "weight": weight, "note": None, "dimension": dim, "extra": None})
        if problems:
            raise ReplyParseError("; ".join(problems))
        return questions, adjustments

    return parse


def generate_criteria(prompts: Sequence[dict[str, Any]], judge: Any, *, weights: str = "clamp",
                      ranges: dict[str, tuple[float, float]] | None = None, max_reasks: int = 2,
                      sampling: Sampling | None = None, progress: bool | str = False) -> list[CriteriaGeneration]:
    """Evaluation questions, criteria and weights for new prompts (seed 003, appendix A.4).

    Each prompt is a dict with ``prompt`` and ``reference_caption`` (the paper's [EXPECTED]), and
    optionally ``assessment_point``, ``category``, ``subcategory`` and ``source_id`` (defaults:
    ``"custom"``, ``"custom"``, its position from 1). Three text-only turns of one conversation per
    prompt, batched across prompts: imagine the correct image, design questions with criteria on
    [0, 1], each criterion with the levels it defines (the paper's DESIGN_EVALUATION_QUESTIONS: not
    necessarily 1, 0.5 and 0), assign weights (the paper's WEIGHT prompt, plus the section 3
    per-dimension ranges: reasoning 7-10, alignment 4-6, quality 1-3). Every reply is validated and
    re-asked up to ``max_reasks`` times; a weight outside 1-10, a missing field or a criterion whose
    levels cannot be read (:func:`~.levels.criterion_levels`) is always re-asked; a weight
    inside 1-10 but outside its dimension's range is moved to the range's nearest end and noted in
    ``adjustments`` (``weights="clamp"``, default) or re-asked (``weights="reject"``). The paper's
    authors then had experts review everything: so should you.
    """
    if weights not in ("clamp", "reject"):
        raise ValueError(f"weights must be 'clamp' or 'reject', got {weights!r}")
    ranges = dict(ranges or WEIGHT_RANGES)
    if set(ranges) != set(WEIGHT_RANGES):
        raise ValueError(f"ranges must give {sorted(WEIGHT_RANGES)}, got {sorted(ranges)}")
    shown_ranges = {d: (f"{lo:g}", f"{hi:g}") for d, (lo, hi) in ranges.items()}
    sampling = sampling or Sampling(temperature=0.1)  # the paper's setting for this pipeline
    out: list[CriteriaGeneration] = []
    for i, p in enumerate(prompts):
        if not isinstance(p, dict) or not str(p.get("prompt") or "").strip() or not str(p.get("reference_caption") or "").strip():
            raise ValueError(f"prompts[{i}] needs a non-empty 'prompt' and 'reference_caption' (the expected answer)")
        cat, sub = p.get("category") or "custom", p.get("subcategory") or "custom"
        sid = str(p.get("source_id") or i + 1)
        row = {"id": f"{cat}/{sub}/{sid}", "source_id": sid, "prompt": p["prompt"].strip(),
               "reference_caption": p["reference_caption"].strip(), "assessment_point": (p.get("assessment_point") or "").strip(),
               "category": cat, "subcategory": sub, "category_cell": p.get("category_cell") or cat,
               "subcategory_cell": p.get("subcategory_cell") or sub, "has_questions": False, "questions": [],
               "extra": None}
        out.append(CriteriaGeneration(row=row, replies={"imagine": [], "design": [], "weight": []}))

    def slots(g: CriteriaGeneration) -> dict[str, str]:
        return {"prompt": g.row["prompt"], "expected": g.row["reference_caption"]}

    live = list(out)
    conversations = [ChatRequest.simple(render(TEMPLATES, "imagine_image", **slots(g)), sampling=sampling) for g in live]
    steps = [("imagine", _text_reply), ("design", _text_reply), ("weight", _weights_parser(ranges, weights))]
    for n, (step, parser) in enumerate(steps):
        parsed = ask_structured(judge, conversations, parser, max_reasks=max_reasks,
                                progress=f"criteria: {step}" if progress is True else progress)
        nxt_live, nxt_conv = [], []
        for g, conv, res in zip(live, conversations, parsed):
            g.replies[step] = res.texts
            if not res.ok:
                g.failure = f"{step} step: {res.error}"
                continue
            if step == "weight":
                g.row["questions"], g.adjustments = res.value
                g.row["has_questions"] = True
                continue
            # the next turn follows the accepted reply (failed attempts, if any, are left out)
            follow = (render(TEMPLATES, "design_questions", **slots(g)) if n == 0 else
                      render(TEMPLATES, "weight", assessment_points=g.row["assessment_point"] or "(none given)", **slots(g))
                      + "\n\n" + render(TEMPLATES, "weight_dimensions", ranges=shown_ranges))
            nxt_live.append(g)
            nxt_conv.append(conv.then(res.value, follow))
        live, conversations = nxt_live, nxt_conv
    return out

