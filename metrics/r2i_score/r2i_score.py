"""R2I-Score (R2I-Bench, seed 003): a judge scores each image on its instance's weighted questions."""

import datasets  # noqa: F401 - evaluate modules import datasets and evaluate, each on its own line
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
R2I-Score (Chen et al., 2025, "R2I-Bench: Benchmarking Reasoning-Driven Text-to-Image Generation")
scores a generated image against its R2I-Bench row: a multimodal judge (GPT-4o at temperature 0.1 in
the paper) receives the image and the paper's "Text-to-Image Quality Evaluation Protocol" prompt
listing the instance's questions and criteria, and scores every question on the levels its criterion defines. The image's
score is sum(w_i * s_i) / sum(w_i) over its questions (0 to 1); the tables (0 to 100) give each
category's mean, the micro average over instances (Table 3) and standard errors with 95% confidence
intervals (Table 14). The logic lives in t2ireason.benchmarks.r2i_bench; this module is its shell.
"""

_CITATION = """\
@misc{chen2025r2ibench,
  title     = {R2I-Bench: Benchmarking Reasoning-Driven Text-to-Image Generation},
  author    = {Chen, Kaijie and Lin, Zihao and Xu, Zhiyang and Shen, Ying and Yao, Yuguang and
               Rimchala, Joy and Zhang, Jiaxin and Huang, Lifu},
  year      = {2025},
  url       = {https://r2i-bench.github.io}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images (PIL images or file paths), one per row.
    references: R2I-Bench rows, as load_dataset gives them, or only what scoring reads (id, prompt,
        category, subcategory, questions with question, criterion, weight and their id); other fields null.
    missing (compute option): "fail" (paper preset: an instance with questions left unanswered after
        the re-asks has no score) or "answered" (official preset: weighted mean of the answered ones).
    template (compute option): "paper" (the appendix A.4 text, after the image) or "official" (the
        authors' own prompt and question layout, before the image).
    subcategories (compute option): "<category>/<subcategory>" names to judge (default all; the
        official preset: the 28 of the authors' instance.py); round_scores: decimals (official: 2).
    max_reasks (compute option): follow-ups naming missing or invalid answers (default 2); each question
        keeps the first valid score a reply gives it.
    reply_json (compute option): "last" (the paper template's default: the last JSON of a reply, repaired
        if broken) or "first" (the official template's: the authors' first ```json block, read strictly).
    allowed_scores (compute option): the scores a question may get (default "criteria": each its own
        criterion's levels; a tuple for all; None: any number in [0, 1]).
    dimensions (compute option): "release" or "inferred" (paper preset: Table 13's dimensions from the
        paper's weight ranges, for the questions the release does not label).
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: a judge spec ("openai:gpt-4o", "hf:...", "vllm:...") or a judge object; default: the preset's.
    preset: "paper" (default) or "official" (the authors' script's deliberate choices, not its bugs);
        both GPT-4o at temperature 0.1.
    judge_kwargs, cache, progress: see t2ireason.metric.JudgedMetric.
Returns:
    r2i_score: the micro average over scored instances (0 to 100).
    overall, categories, subcategories: mean, se, 95% CIs (bootstrap and normal), n, failed.
    category_scores: Table 3's row; unscorable_ids / num_unscorable: prompts without questions.
    scores: each image's R2I-Score (0 to 1; None if unscorable or failed); per_image: full detail.
Examples (README.md has one that runs offline):
    r2i = evaluate.load("metrics/r2i_score")                 # the paper preset: openai:gpt-4o, T=0.1
    out = r2i.compute(predictions=images, references=rows)  # rows from load_dataset(..., "all")
    out["r2i_score"], out["category_scores"], out["unscorable_ids"]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class R2iScore(tm.JudgedMetric):
    """R2I-Score of each image against its R2I-Bench row, and the paper's tables."""

    benchmark_name = "r2i-bench"

    def _info(self):
        return self._judged_info(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            reference_urls=["https://r2i-bench.github.io"],
        )
