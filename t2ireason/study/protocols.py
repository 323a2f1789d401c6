"""Each paper's human study: what the raters were shown, on which scale, how the sample was drawn.

Three kinds of study, each one a paper ran:

- ``scale``: one score per image on the paper's scale. T2I-ReasonBench (seed 000, section 4.2 and
  appendix C.2): 1-5 on the dimension's own criterion (Figures 15-18), 20 prompts a dimension, three
  annotators an image, their scores averaged, Kendall's tau and Spearman's rho per dimension (Table 1).
  PRISM-Bench (seed 004, section 4.3): one composite 1-10 on alignment and aesthetics, rated "according to
  the same prompts provided to the VLM", 20 prompts a track, three evaluators an image (Table 3).
- ``preference``: R2I-Bench (seed 003, appendix B.2): two models' images of one prompt, the rater picks
  the one most aligned with the prompt or calls a tie; pairwise accuracy, tau and rho (Tables 4 and 21).
- ``questions``: any benchmark whose judge answers questions (R2I-Bench's, T2I-ReasonBench's and
  WorldGenBench's questions with their criteria, PRISM-Bench's two axes): the raters answer the judge's
  own questions on the judge's own levels, so that agreement can be measured question by question.
  WorldGenBench's paper has no human study: this is its default.

Where a paper is silent (R2I-Bench's sample size and raters per pair, every questions study) the
defaults here are the other papers' (20 prompts a group, three raters an item) and are recorded in the
study as choices, not as the paper's. What R2I-Bench and PRISM-Bench told their raters is adapted, not
verbatim (each template's header says how): addressed to the rater, and naming no model (R2I-Bench's
sentence names the two it compared, which are not the study's, and a study's raters are not told whose
images they see). T2I-ReasonBench's criteria (Figures 15-18) are the paper's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..prompts import render, template_text

__all__ = ["KINDS", "Protocol", "PROTOCOLS", "protocol", "group_of", "group_title", "criterion_blocks",
           "question_criterion", "question_levels", "level_of",
           "Levels"]

KINDS = ("scale", "preference", "questions")
#: a question's answer levels, ascending: (low, high) pairs, a point level with low == high (as R2I-Bench's)
Levels = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Protocol:
    """One benchmark's human study as its paper ran it (``paper_*`` False where the value is ours)."""

    benchmark: str
    kind: str
    scale: tuple[int, int] | None  # the rating scale of a ``scale`` study
    per_group: int  # prompts drawn per dimension, track or category
    raters_per_item: int
    source: str  # where the paper describes the study
    table: str  # the paper's table this study's agreement fills
    decimals: int  # as that table prints its figures
    paper_sample: bool = True  # per_group and raters_per_item are the paper's
    rows: tuple[str, ...] = ()  # the metrics as that table lists its rows, top to bottom (empty: no table)


PROTOCOLS: dict[str, Protocol] = {
    "t2i-reasonbench": Protocol("t2i-reasonbench", "scale", (1, 5), 20, 3,
                                "seed 000 (T2I-ReasonBench), section 4.2 and appendix C.2, Figures 15-18",
                                "T2I-ReasonBench Table 1", 4, rows=("t2i_reasonscore", "clip_score", "vqascore")),
    "prism-bench": Protocol("prism-bench", "scale", (1, 10), 20, 3,
                            "seed 004 (PRISM-Bench), section 4.3", "PRISM-Bench Table 3", 3,
                            rows=("clip_score", "prism_score")),
    "r2i-bench": Protocol("r2i-bench", "preference", None, 20, 3,
                          "seed 003 (R2I-Bench), section 4.3 and appendix B.2", "R2I-Bench Tables 4 and 21", 3,
                          paper_sample=False, rows=("clip_score", "dsg", "viescore", "vqascore", "r2i_score")),
    "worldgenbench": Protocol("worldgenbench", "questions", None, 20, 3,
                              "WorldGenBench's paper (seed 001) has no human study: the judge's own checklist "
                              "items are rated", "per-question agreement", 3, paper_sample=False),
}

#: the row field that holds a row's group (the paper tables' columns)
_GROUP_FIELD = {"t2i-reasonbench": "dimension", "prism-bench": "track", "r2i-bench": "category",
                "worldgenbench": "domain"}


def protocol(benchmark: str) -> Protocol:
    if benchmark not in PROTOCOLS:
        raise ValueError(f"{benchmark} has no human study here; known: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[benchmark]


def group_of(benchmark: str, row: dict[str, Any]) -> str:
    return str(row[_GROUP_FIELD[benchmark]])


def group_title(benchmark: str, group: str) -> str:
    """A group as its paper's table heads it."""
    if benchmark == "prism-bench":
        from ..benchmarks.prism_bench import TRACKS

        return TRACKS.get(group, group)
    if benchmark == "r2i-bench":
        from ..benchmarks.r2i_bench.scores import CATEGORY_TITLES

        return CATEGORY_TITLES.get(group, group)
    return group.replace("_", " ").title()


def criterion_blocks(benchmark: str, kind: str, row: dict[str, Any]) -> list[dict[str, str]]:
    """What a rater reads beside the image: ``[{"title", "text"}]``, the paper's texts with the row put in."""
    if kind == "questions":
        return []  # each question brings its own criterion
    if kind == "preference":  # R2I-Bench's study, whatever the benchmark of the images
        return [{"title": "What to do (adapted from R2I-Bench, appendix B.2)", "text": template_text("r2i_bench", "human")}]
    if benchmark == "t2i-reasonbench":
        dim = row["dimension"]
        text = render("t2i_reasonbench", f"human_{dim}", prompt=row["prompt"], idiom=row.get("idiom") or "",
                      idiom_meaning=row.get("idiom_meaning") or "", explicit_meaning=row.get("explicit_meaning") or "")
        return [{"title": f"Human evaluation criterion (T2I-ReasonBench, appendix C.2, {_FIGURES[dim]})",
                 "text": text}]
    if benchmark == "prism-bench":
        from ..benchmarks.prism_bench import template

        track = row["track"]
        return [{"title": "What to do (adapted from PRISM-Bench, section 4.3)", "text": template_text("prism_bench", "human")},
                {"title": "The judge's alignment prompt for this track (appendix C.2)",
                 "text": template("paper", f"alignment_{track}")[1].format(text_prompt=row["prompt"])},
                {"title": "The judge's aesthetics prompt (appendix C.3)",
                 "text": template("paper", "aesthetic")[1].format(text_prompt=row["prompt"])}]
    raise ValueError(f"{benchmark} has no {kind} study; rate its judge's questions (--kind questions)")


_FIGURES = {"idiom": "Figure 15", "textual": "Figure 16", "entity": "Figure 17", "scientific": "Figure 18"}


def question_criterion(benchmark: str, row: dict[str, Any], question: Any) -> str:
    """What a rater reads to answer a judge's question: its criterion, or for PRISM-Bench's two axes
    (which have none of their own) the judge's prompt for that axis with the row put in."""
    if benchmark == "prism-bench" and question.id in ("alignment", "aesthetic"):
        from ..benchmarks.prism_bench import template

        name = f"alignment_{row['track']}" if question.id == "alignment" else "aesthetic"
        return template("paper", name)[1].format(text_prompt=row["prompt"])
    return question.criterion or ""


def question_levels(benchmark: str, question: Any) -> Levels:
    """The levels the judge answers a question on, which the raters answer it on too."""
    if benchmark == "r2i-bench":
        from ..benchmarks.r2i_bench import question_levels as r2i_levels

        return r2i_levels({"criterion": question.criterion})[0]
    if benchmark == "t2i-reasonbench":
        from ..benchmarks.t2i_reasonbench import ALLOWED_SCORES

        return tuple((s, s) for s in ALLOWED_SCORES)
    if benchmark == "prism-bench":  # each axis from 0 to 10
        return tuple((float(s), float(s)) for s in range(11))
    return ((0.0, 0.0), (1.0, 1.0))  # WorldGenBench's checklist: each item met or not


def level_of(value: float, levels: Sequence[Sequence[float]]) -> int:
    """The index of the level holding ``value``, else of the nearest one (the higher of two equally near:
    a judge's 7.5 on PRISM-Bench's 0-10 is level 8, as rounding half up reads it)."""
    def distance(level: Sequence[float]) -> float:
        lo, hi = level
        return 0.0 if lo - 1e-9 <= value <= hi + 1e-9 else min(abs(value - lo), abs(value - hi))

    return min(range(len(levels)), key=lambda i: (distance(levels[i]), -i))
