"""PRISM score (PRISM-Bench, seed 004): a judge scores each image's alignment (per track) and aesthetics."""

import datasets  # noqa: F401 - evaluate reads the dependencies from these imports
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
PRISM score (Fang et al., 2025, "FLUX-Reason-6M & PRISM-Bench: A Million-Scale Text-to-Image Reasoning
Dataset and Comprehensive Benchmark") scores a generated image against its PRISM-Bench row: a multimodal
judge (GPT-4.1 in the paper's main tables, Qwen2.5-VL-72B in its appendix) gives a one-sentence
justification and a score from 0 to 10 twice, once for prompt-image alignment with the track's template
and once for aesthetics with the template shared by all tracks (paper Appendix C.2 and C.3), mapped to
0-100. Preset "paper" follows the paper (its printed templates; a track's Avg. is the mean of the axis
means); presets "official" and "qwen" reproduce the authors' eval_gpt41.py and eval_qwen25.py (their
strings byte for byte, their parser and counting, Avg. = the mean of one pooled list of both axes).
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
    predictions: the generated images (PIL images or file paths), one per row; a file is sent as its own bytes
        (as PIL saves it again under the official preset, resized as qwen_vl_utils does under qwen).
    references: PRISM-Bench rows, as load_dataset gives them (id, prompt, track, language, index, subset, extra).
    protocol (compute option): "paper" or "official" (the preset sets it).
    system_prompt (compute option): default the template's "You are a helpful assistant."; None for none.
    image_first (compute option): the image before the text (as eval_qwen25.py).
    image_preparation (compute option): None, or "qwen_vl_utils" (PIL's convert("RGB"), then qwen_vl_utils'
        fetch_image: sides resized to multiples of 28, as eval_qwen25.py).
    image_bytes (compute option): "file" (a file's own bytes), or "pil" (saved again by PIL, as eval_gpt41.py).
    sampling (compute option): a Sampling or a dict of its fields, overriding the judge's defaults.
    max_reasks (compute option, paper protocol): follow-ups when a reply is not a JSON object with a score in
        [0, 10] (default 2); the official protocol never re-asks.
    confidence, n_resamples, seed (compute options): the bootstrap confidence intervals.
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: a judge spec or a judge object; default: the preset's.
    preset: "paper" (default; GPT-4.1-2025-04-14, temperature 0, top_p 1, seed 42, 4096 tokens, the paper's
        protocol), "official" (the same, as eval_gpt41.py sends it: max_tokens, stream false, 3 tries; the
        authors' protocol) or "qwen" (Qwen2.5-VL-72B-Instruct locally as eval_qwen25.py runs it: bf16, the
        processor's 256-1280 x 28 x 28 pixel limits, the checkpoint's generation config, 1024 new tokens, the
        image first, no system message; the authors' protocol).
    judge_kwargs, cache, progress: see t2ireason.metric.JudgedMetric.
Returns:
    prism_score: the overall figure of the protocol (0-100): the mean of pooled alignment and pooled aesthetic
        (paper), or the mean of every counted score of both axes (official).
    protocol; alignment, aesthetic: pooled over all images; average, combined: the overall by each definition;
    overall_track_mean: the mean of the track averages.
    tracks: per track alignment, aesthetic, average, combined, n, counted, failed, outcomes and CIs;
    table: the paper's row; by_language: the same for en and zh separately.
    failed_replies, outcomes, notes: what was not counted, per axis and cause, and what the authors' code does.
    scores: each image's mean of alignment and aesthetic (0-100; None if an axis was not counted); per_image.
Examples (README.md has some that run offline):
    prism = evaluate.load("metrics/prism_score")                       # GPT-4.1, the paper's protocol
    out = prism.compute(predictions=images, references=rows)          # rows from load_dataset(..., "en")
    out["prism_score"], out["table"]
    official = evaluate.load("metrics/prism_score", preset="official")  # the authors' eval_gpt41.py
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
