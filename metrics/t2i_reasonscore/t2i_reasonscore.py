"""T2I-ReasonScore (T2I-ReasonBench, seed 000): a judge describes each image, then scores its question groups."""

import datasets  # noqa: F401 - evaluate modules declare their datasets dependency by importing it
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
T2I-ReasonScore (Sun et al., 2025, "T2I-ReasonBench: Benchmarking Reasoning-Informed Text-to-Image
Generation") scores a generated image against its T2I-ReasonBench row with a two-stage protocol: a
multimodal judge first describes the image ("Describe this image."), then, continuing that
conversation, answers each group of the row's question-criterion pairs (reasoning, details, quality)
with the paper's Figure 14 template, scoring every question 1, 0.5 or 0. A group's score is the mean
of its questions; the image's score is w1 S_reason + w2 S_detail + w3 S_quality with [0.9, 0, 0.1]
for idiom and textual and [0.7, 0.2, 0.1] for entity and scientific (0 to 1). Dimension scores are
means over images x 100 and the overall score is the mean of the four dimensions (Table 2). The
logic lives in t2ireason.benchmarks.t2i_reasonbench; this module is its shell.
"""

_CITATION = """\
@article{sun2025t2ireasonbench,
  title   = {T2I-ReasonBench: Benchmarking Reasoning-Informed Text-to-Image Generation},
  author  = {Sun, Kaiyue and Fang, Rongyao and Duan, Chengqi and Liu, Xian and Liu, Xihui},
  journal = {arXiv preprint arXiv:2508.17472},
  year    = {2025}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images (PIL images or file paths), one per row; in text mode, the
        text descriptions (strings) to score instead of images.
    references: T2I-ReasonBench rows, as load_dataset gives them (id, dimension, prompt,
        evaluation groups with their question-criterion pairs...).
    mode (compute option): "image" (default) or "text" (Table 4's text score: no image, no
        describe turn, no quality group; w1 S_reason + w2 S_detail, at most 90).
    aggregation (compute option): "paper" (default; T2I-ReasonScore) or "official" (the official
        scripts' accuracy: reason, or 0.7 reason + 0.3 detail; quality reported apart).
    weights (compute option): per dimension {"reason": w1, "detail": w2, "quality": w3}.
    max_reasks (compute option): follow-ups for unparsable replies or a wrong number of scores (default 2).
    structured_output (compute option): also send a JSON schema to judges that support it (default False).
    template (compute option): "paper" (default; Figure 14, the group's pairs and rubrics as readable
        JSON) or "official" (the authors' scripts' text byte for byte).
    reply_json (compute option): "last" (default) or "first" JSON object of a reply (the scripts' reading).
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: a judge spec ("openai:...", "hf:...", "vllm:...") or a judge object; default: the preset's.
    preset: "paper" (default; Gemini-2.5-pro through its OpenAI-compatible endpoint, temperature 0)
        or "official" (the authors' scripts: hf:Qwen/Qwen2.5-VL-72B-Instruct with its own generation
        config and at most 1,000 new tokens, their prompt text, the first JSON of a reply, their aggregation).
    judge_kwargs, cache, progress: see t2ireason.metric.JudgedMetric.
Returns:
    t2i_reasonscore, overall: the mean of the dimension scores (0 to 100); idiom, textual, entity, scientific: each
        dimension's mean score (Table 2's cells).
    dimensions: per dimension, score / reason / detail / quality summaries (mean, se, 95% CIs, n,
        failed), weights and max_score; overall_summary: the overall's se and bootstrap interval.
    scores: each image's score (0 to 1; None if the image could not be read or the judge failed);
        per_image: every question's score and reasoning, the raw replies, re-asks, failures and
        whether a failure is retryable (the judge's infrastructure failed).
Examples (README.md has ones that run offline):
    metric = evaluate.load("metrics/t2i_reasonscore")          # the paper preset: Gemini-2.5-pro
    out = metric.compute(predictions=images, references=rows)  # rows from load_dataset(..., "idiom")
    out["overall"], out["idiom"], out["num_failed"]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class T2iReasonscore(tm.JudgedMetric):
    """T2I-ReasonScore of each image against its T2I-ReasonBench row, and the paper's tables."""

    benchmark_name = "t2i-reasonbench"

    def _info(self):
        return self._judged_info(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            reference_urls=["https://arxiv.org/abs/2508.17472", "https://github.com/KaiyueSun98/T2I-ReasonBench"],
        )

    def predictions_are_images(self, options):
        return options.get("mode", "image") != "text"  # Table 4's text score takes descriptions
