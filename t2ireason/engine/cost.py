"""What a run will cost, before it runs: images to draw, judge calls and tokens per stage.

The candidates are counted exactly (the inputs are ingested first, which is cheap); what happens to them
later is not known in advance, so the estimate rests on stated assumptions (:class:`CostAssumptions`),
the paper's where it gives them. Input tokens are the real templates rendered, at ``chars_per_token``
characters a token, plus ``image_tokens`` per image; output tokens are typical reply lengths. Re-asks
and GCoT revisions beyond ``gcot_plans`` are not counted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ..prompts import render
from .asking import TEMPLATES
from .sources import SOURCE_NAMES, candidate_counts
from .work import Workdir

__all__ = ["CostAssumptions", "StageCost", "estimate_cost", "format_cost"]


@dataclass
class CostAssumptions:
    mining_hit_rate: float = 0.5  # mined images with legible text (our guess)
    quality_pass_rate: float = 0.75  # "about 6 million [of 8 million] pass all checks" (section 2.3)
    labels_per_image: float = 2.0  # category captions per image (~20M captions for 6M images, section 2.5)
    text_rendering_rate: float = 0.15  # images labelled Text rendering (typographic filter calls)
    original_pass_rate: float = 0.5  # LAION captions kept by the alignment judge
    gcot_plans: float = 1.2  # GCoT plans (and checks) per image, revisions included
    prompt_words: int = 60  # words of a prompt or caption
    gcot_words: int = 250
    image_tokens: int = 1280  # Qwen2.5-VL at max_pixels 1280*28*28 (PRISM-Bench's setting)
    chars_per_token: float = 4.0
    output_tokens: dict[str, int] = field(default_factory=lambda: {
        "rewrite": 110, "imagination": 100, "mining": 150, "quality": 60, "scoring": 80, "typography": 40,
        "caption": 160, "gcot": 450, "gcot_check": 80, "original": 50})


@dataclass
class StageCost:
    stage: str
    what: str
    images: int = 0  # drawn
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


def estimate_cost(work: Workdir, config: Any, assumptions: CostAssumptions | None = None) -> list[StageCost]:
    """Per stage and kind of question, from the ingested candidates of ``work`` (see :func:`.sources.ingest`)."""
    a = assumptions or CostAssumptions()
    counts = candidate_counts(work)
    laion, imagination, mined = (counts.get(s, 0) for s in SOURCE_NAMES)
    with_image = any(r["input_image"] for r in _first(work) if r["source"] == "laion")
    words = " ".join(["word"] * a.prompt_words)

    def length(text: str) -> int:
        return math.ceil(len(text) / a.chars_per_token)

    def tokens(template: str, **slots: Any) -> int:
        return length(render(TEMPLATES, template, **slots))

    drawn = laion + imagination + round(mined * a.mining_hit_rate)
    kept = round(drawn * a.quality_pass_rate)
    labels = kept * a.labels_per_image
    captions = [("Entity", words)] * max(1, round(a.labels_per_image))
    gcot = " ".join(["word"] * a.gcot_words)
    laion_kept = kept * laion / drawn if drawn else 0
    rows = [  # stage, what, calls, input tokens per call, output tokens per call, images per call
        ("prompts", "caption rewriting", laion, tokens("rewrite_caption", caption=words, with_image=with_image),
         a.output_tokens["rewrite"], with_image),
        ("prompts", "imagination", imagination, tokens("imagination", examples=[words] * config.imagination_examples),
         a.output_tokens["imagination"], 0),
        ("prompts", "text mining", mined, tokens("text_mining"), a.output_tokens["mining"], 1),
        ("quality", "quality filter", drawn, tokens("quality"), a.output_tokens["quality"], 1),
        ("scoring", "relevance scores", kept, tokens("relevance", prompt=words), a.output_tokens["scoring"], 1),
        ("scoring", "typographic filter", kept * a.text_rendering_rate, tokens("typography", prompt=words),
         a.output_tokens["typography"], 1),
        ("captions", "category captions", labels, tokens("caption", characteristic="entity", display_name="Entity",
                                                         prompt=words), a.output_tokens["caption"], 1),
        ("gcot", "GCoT plans", kept * a.gcot_plans, tokens("gcot", captions=captions, texts=[]),
         a.output_tokens["gcot"], 1),
        ("gcot", "GCoT checks", kept * a.gcot_plans, tokens("gcot_check", captions=captions, gcot=gcot),
         a.output_tokens["gcot_check"], 0),
        ("original", "caption alignment", laion_kept, tokens("original_alignment", caption=words),
         a.output_tokens["original"], 1),
        # a translation is about as many tokens as its English text
        ("translate", "caption translations", labels + laion_kept * a.original_pass_rate,
         tokens("translate", text=words, keep=[]), length(words), 0),
        ("translate", "GCoT translations", kept, tokens("translate", text=gcot, keep=[]), length(gcot), 0),
    ]
    out = [StageCost("synthesis", "images", images=drawn)]
    for stage, what, calls, tokens_in, tokens_out, images in rows:
        calls = round(calls)
        out.append(StageCost(stage, what, calls=calls, input_tokens=calls * (tokens_in + images * a.image_tokens),
                             output_tokens=calls * tokens_out))
    order = ["prompts", "synthesis", "quality", "scoring", "captions", "gcot", "original", "translate"]
    return sorted(out, key=lambda c: order.index(c.stage))


def _first(work: Workdir) -> list[dict[str, Any]]:
    shards = work.shards("sources")
    return work.read("sources", shards[0]) if shards else []


def format_cost(costs: list[StageCost], assumptions: CostAssumptions | None = None) -> str:
    """A plain-text table with totals, and the assumptions it rests on."""
    lines = [f"{'stage':<10} {'what':<20} {'images':>10} {'calls':>10} {'input tokens':>14} {'output tokens':>14}"]
    for c in costs:
        if not (c.images or c.calls):  # a source the run does not use
            continue
        lines.append(f"{c.stage:<10} {c.what:<20} {c.images:>10,} {c.calls:>10,} {c.input_tokens:>14,} "
                     f"{c.output_tokens:>14,}")
    total = {k: sum(getattr(c, k) for c in costs) for k in ("images", "calls", "input_tokens", "output_tokens")}
    lines.append(f"{'total':<31} {total['images']:>10,} {total['calls']:>10,} {total['input_tokens']:>14,} "
                 f"{total['output_tokens']:>14,}")
    assumed = asdict(assumptions or CostAssumptions())
    lines.append("assumptions: " + ", ".join(f"{k}={v}" for k, v in assumed.items() if k != "output_tokens"))
    return "\n".join(lines)
