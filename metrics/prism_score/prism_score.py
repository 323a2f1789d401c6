"""PRISM score (PRISM-Bench, seed 004): a judge scores each image's alignment (per track) and aesthetics."""

import datasets  # noqa: F401 - evaluate reads the dependencies from these imports
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
PRISM score (Fang et al., 2025, "FLUX-Reason-6M & PRISM-Bench: A Million-Scale Text-to-Image Reasoning
Dataset and Comprehensive Benchmark") scores a generated image against its PRISM-Bench row: a multimodal
judge (GPT-4.1 in the paper's main tables, Qwen2.5-VL-72B in its appendix) gives a one-sentence
justification and a score from 0 to 10 twice, once for prompt-image alignment with the track's template
and once for aesthetics with the template shared by all tracks (paper Appendix C.2 and C.3). Per track,
mean alignment and mean aesthetic are mapped to 0-100 and the track score is their mean; overall
alignment and aesthetic are pooled over all images (Table 1 layout; Table 2 for PRISM-Bench-ZH).
The logic lives in t2ireason.benchmarks.prism_bench; this module is its shell.
"""

_CITATION = """\
@article{fang2025fluxreason,
  title   = {FLUX-Reason-6M \\& PRISM-Bench: A Million-Scale Text-to-Image Reasoning Dataset and Comprehensive Benchmark},
  author  = {Fang, Rongyao and Yu, Aldrich and Duan, Chengqi and Huang, Linjiang and Bai, Shuai and Cai, Yuxuan
             and Wang, Kun and Liu, Si and Liu, Xihui and Li, Hongsheng},
  journal = {arXiv preprint arXiv:2509.09680},
  year    = {2025}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images (PIL images or file paths), one per row.
    references: PRISM-Bench rows, as load_dataset gives them (id, prompt, track, language, index, subset, extra).
    system_prompt (compute option): default the official "You are a helpful assistant."; None for none.
    sampling (compute option): a Sampling or a dict of its fields, overriding the judge's defaults.
    max_reasks (compute option): follow-ups when a reply is not a JSON object with a score in [0, 10] (default 2).
    confidence, n_resamples, seed (compute options): the bootstrap confidence intervals.
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: a judge spec or a judge object; default: the preset's.
    preset: "paper" / "official" (default; GPT-4.1-2025-04-14, temperature 0, top_p 1, seed 42,
        max_tokens 4096, JPEG images) or "qwen" (Qwen2.5-VL-72B-Instruct locally, bf16, 256-1280 x 28 x 28
        pixels, 1024 new tokens).
    judge_kwargs, cache, progress: see t2ireason.metric.JudgedMetric.
Returns:
    prism_score: the overall average (mean of pooled alignment and pooled aesthetic, 0-100).
    alignment, aesthetic: pooled over all images; overall_track_mean: the mean of the track scores.
    tracks: per track alignment, aesthetic, average, n, failed replies and CIs; table: the paper's row.
    by_language: the same for en and zh separately; failed_replies: counts per axis.
    scores: each image's mean of alignment and aesthetic (0-100; None if a reply failed); per_image: detail.
Examples (README.md has one that runs offline):
    prism = evaluate.load("metrics/prism_score")                       # GPT-4.1 as the official code runs it
    out = prism.compute(predictions=images, references=rows)          # rows from load_dataset(..., "en")
    out["prism_score"], out["table"]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PrismScore(tm.JudgedMetric):
    """Alignment and aesthetic scores of each image against its PRISM-Bench row, and the paper's tables."""

    benchmark_name = "prism-bench"

    def _info(self):
        return self._judged_info(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            reference_urls=["https://flux-reason-6m.github.io/", "https://arxiv.org/abs/2509.09680"],
        )
