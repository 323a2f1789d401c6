"""R2I-Bench (seed 003, Chen et al.): reasoning-driven text-to-image generation, scored by R2I-Score.

The path of one image, one file a step:

- ``release.py`` (with ``csv_records.py``): the authors' CSV release read into rows: a prompt with its
  instance-specific questions, each with a criterion defining its scores and a weight; every
  irregularity reported, what cannot be a row quarantined;
- ``levels.py``: the scores each question may get, read from its criterion (mostly 1 / 0.5 / 0);
- ``protocol.py``: one request per image with the paper's "Text-to-Image Quality Evaluation Protocol"
  template (appendix A.4, or the authors' own text) listing every question and criterion; the judge's
  reply, ending in a fenced JSON block ``{"<question id>": score, ...}``, parsed and re-asked; the presets;
- ``scores.py``: the weighted mean ``R2I-Score = sum(w_i * s_i) / sum(w_i)`` (equation 1), the category
  means and the micro average over instances (Table 3) with standard errors and 95% confidence intervals
  (Table 14), Table 13's dimensions;
- ``criteria.py``: the paper's evaluation-criteria pipeline (appendix A.4: imagine the image, design
  questions, assign weights within per-dimension ranges), :func:`generate_criteria`, producing rows of
  this same schema for new prompts.

This module declares the benchmark (schema, release, presets) and ties the steps together.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets

from ...results import ImageResult, PaperTable
from ..base import Benchmark, OfficialRelease, Release, recorded_hashes
from . import release, scores
from .criteria import CriteriaGeneration, generate_criteria
from .levels import DEFAULT_LEVELS, criterion_levels, question_levels
from .protocol import PRESETS, question_keys, render_request, reply_schema
from .release import CATEGORIES, OFFICIAL_SUBCATEGORIES
from .scores import WEIGHT_RANGES, infer_dimension

__all__ = [
    "BENCHMARK", "R2IBench", "CATEGORIES", "OFFICIAL_SUBCATEGORIES", "WEIGHT_RANGES", "DEFAULT_LEVELS",
    "CriteriaGeneration", "generate_criteria", "render_request", "reply_schema", "question_keys",
    "criterion_levels", "question_levels", "infer_dimension",
]

_CITATION = """@misc{chen2025r2ibench,
  title     = {R2I-Bench: Benchmarking Reasoning-Driven Text-to-Image Generation},
  author    = {Chen, Kaijie and Lin, Zihao and Xu, Zhiyang and Shen, Ying and Yao, Yuguang and
               Rimchala, Joy and Zhang, Jiaxin and Huang, Lifu},
  year      = {2025},
  url       = {https://r2i-bench.github.io}
}"""


class R2IBench(Benchmark):
    name = "r2i-bench"
    pretty_name = "R2I-Bench"
    configs = (*CATEGORIES, "all")
    metric = "r2i_score"
    subscore_scale = 100.0  # its dimensions (Table 13) are on 0-1
    license = None  # the release states none that we could check: users must say
    citation = _CITATION
    # The authors' repository at the commit whose files the project checked byte for byte: their
    # SHA-256 (release_hashes/r2i-bench.sha256) are enforced on a fetch and reported on a build from
    # a folder or an archive (a file that differs is a `modified_file` anomaly).
    official_release = OfficialRelease(
        kind="github", repo="PLUM-Lab/R2I-Bench", revision="874e8a1b20a246fe390152c767534a8abcfeae82",
        files=recorded_hashes("r2i-bench"), scripts=("evaluation.py", "instance.py", "generation.py"))
    release_markers = ("data/prompts", "data/evaluation")
    path_fields = ("source_id",)
    description = (
        "R2I-Bench (Chen et al., 2025) evaluates reasoning-driven text-to-image generation: prompts in 7 "
        "reasoning categories (commonsense, compositional, concept mixing, logical, numerical, mathematical, "
        "causal) and 32 subcategories, each with instance-specific evaluation questions, scoring criteria "
        "(mostly 1 / 0.5 / 0, some with other levels or ranges) and importance weights covering text-image "
        "alignment, reasoning accuracy and image quality."
    )
    scoring = (
        "R2I-Score: a multimodal judge (GPT-4o, temperature 0.1, in the paper) receives the image and the "
        "'Text-to-Image Quality Evaluation Protocol' prompt listing the instance's questions and criteria, and "
        "scores each question on the levels its criterion defines. The instance score is "
        "sum(w_i * s_i) / sum(w_i); a category's score is the mean over its instances and the overall score "
        "the micro average over all instances (Table 3), with standard errors and 95% confidence intervals (Table 14). Prompts without questions "
        "are unscorable and reported, not scored 0."
    )
    field_docs = {
        "id": "Benchmark-wide unique id: <category>/<subcategory>/<source_id>.",
        "source_id": "The prompt's id in its release file (unique within that file).",
        "prompt": "The text-to-image prompt to draw.",
        "reference_caption": "A caption of the correct image (the answer the reasoning should reach).",
        "assessment_point": "What the instance tests (the release's 'Assessment Point').",
        "category": "Reasoning category, from the release's folder name (the config).",
        "subcategory": "Reasoning subcategory, from the release's file name.",
        "category_cell": "The release's raw 'Category' cell (inconsistent in places; kept for reference).",
        "subcategory_cell": "The release's raw 'Subcategory' cell (inconsistent in places; kept for reference).",
        "has_questions": "False when the release has no evaluation questions for the prompt (unscorable).",
        "questions": "The instance's evaluation questions (empty when has_questions is False).",
        "questions.id": "The question's number within the instance (the key the judge answers under).",
        "questions.question": "The evaluation question.",
        "questions.criterion": "The scores the question may get and what earns each (the release's "
                               "evaluation_criteria): mostly 1, 0.5 and 0; some criteria define other levels "
                               "(0.75, 0.3...) or ranges (0.7-0.9).",
        "questions.weight": "Importance weight in the weighted mean; mostly 1 to 10, a few from 0 to 50.",
        "questions.note": "An annotator's note (one release file has them); null elsewhere.",
        "questions.dimension": "reasoning / alignment / quality: null in the release, which does not label "
                               "it; set by generate_criteria for new prompts.",
        "questions.extra": "The question's cells in columns the layout does not know, as a JSON object (null: none).",
        "extra": "The prompt's cells in columns the layout does not know, as a JSON object (null: none).",
    }
    presets = PRESETS
    scored_fields = scores.SCORED_FIELDS

    @property
    def features(self) -> datasets.Features:
        text = datasets.Value("string")
        return datasets.Features({
            "id": text,
            "source_id": text,
            "prompt": text,
            "reference_caption": text,
            "assessment_point": text,
            "category": text,
            "subcategory": text,
            "category_cell": text,
            "subcategory_cell": text,
            "has_questions": datasets.Value("bool"),
            "questions": datasets.List({
                "id": text,
                "question": text,
                "criterion": text,
                "weight": datasets.Value("float64"),
                "note": text,
                "dimension": text,
                "extra": text,
            }),
            "extra": text,
        })

    def with_safe_names(self, row: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
        """A ``source_id`` that cannot be a file name renamed, and the row's ``id`` with it."""
        row = {**row, **renamed}
        row["id"] = f"{row['category']}/{row['subcategory']}/{row['source_id']}"
        return row

    def row_config(self, row: dict[str, Any]) -> str | None:
        return row.get("category")

    def image_stem(self, row: dict[str, Any]) -> str:
        """``<category>/<subcategory>/<source_id>``: the folders of the release, one image per prompt id."""
        return f"{row['category']}/{row['subcategory']}/{row['source_id']}"

    def read_release(self, source: str | Path, **options: Any) -> Release:
        """Read ``data/prompts`` and ``data/evaluation`` of a checkout (or of its ``data`` folder), nothing
        lost, every irregularity reported (:func:`.release.read_release`)."""
        if options:
            raise TypeError(f"read_release takes no options, got {sorted(options)}")
        return release.read_release(source, license=self.license)

    def unscorable(self, row: dict[str, Any]) -> str | None:
        return scores.unscorable_questions(row.get("questions") or [])

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """R2I-Score of each image: one judge call per instance (all batched), bounded re-asks; the options
        are :func:`.scores.score`'s."""
        return scores.score(self, rows, images, judge, progress=progress, **options)

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """Table 3 and Table 14 from per-image results, on 0 to ``scale`` (default 100): :func:`.scores.aggregate`."""
        return scores.aggregate(results, **options)

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 3 with Table 14's intervals, Table 13, one table per category: :func:`.scores.paper_tables`."""
        return scores.paper_tables(aggregate, label)

    def cell_formulas(self, aggregate: dict[str, Any], results: Sequence[ImageResult]) -> list[tuple]:
        """Each table's cells as means over images, for a report's paired comparisons: :func:`.formulas.cell_formulas`."""
        from . import formulas

        return formulas.cell_formulas(aggregate, results)

    def subsets_covered(self, results: Sequence[ImageResult]) -> dict[str, dict[str, Any]]:
        """Each Table 3 category's subcategories, the paper's (Tables 6 to 12) and those scored:
        :func:`.scores.subcategory_coverage`."""
        return scores.subcategory_coverage(results)


BENCHMARK = R2IBench()
