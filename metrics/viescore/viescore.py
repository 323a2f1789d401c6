"""VIEScore: a VLM rates an image's semantic consistency with its prompt and its perceptual quality (0-10),
with the paper's text-to-image prompts; O = sqrt(min(SC) x min(PQ)), reasoning kept."""

import datasets  # noqa: F401 - evaluate reads the dependencies from these imports
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
VIEScore (Ku et al., ACL 2024, "VIEScore: Towards Explainable Metrics for Conditional Image Synthesis
Evaluation") asks a multimodal judge two questions about a generated image with the paper's text-to-image
prompts (github.com/TIGER-AI-Lab/VIEScore, the text recorded in the paper's released GPT-4o results): its
semantic consistency with the prompt (SC, one score) and its perceptual quality (PQ: naturalness and
artifacts), each 0 to 10 with a reasoning; O = sqrt(min(SC) x min(PQ)) (0-10), the image's score O / 10
(0-1), the corpus score the mean x 100. The logic lives in t2ireason.baselines.viescore; this module is its
shell.
"""

_CITATION = """\
@inproceedings{ku2024viescore,
  title     = {{VIEScore}: Towards Explainable Metrics for Conditional Image Synthesis Evaluation},
  author    = {Ku, Max and Jiang, Dongfu and Wei, Cong and Yue, Xiang and Chen, Wenhu},
  booktitle = {Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics (ACL)},
  year      = {2024}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images (PIL images, file paths, numpy arrays or torch tensors).
    references: the prompts (strings), one per image.
    sampling, max_reasks (compute options): the judge's sampling; follow-ups when a reply is not the asked JSON.
    structured_output (compute option): also send the reply's JSON schema (judges that enforce one).
    confidence, n_resamples, seed (compute options): the bootstrap interval.
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: any VLM judge (a spec or a judge object); default: the preset's.
    preset: "paper" (GPT-4o-2024-05-13, 1400 tokens, the API's default temperature, as the released results).
    judge_kwargs, cache, progress: see t2ireason.metric.BaselineMetric.
Returns:
    viescore: the mean O x 10 (0-100) over the scored images; summary: its statistics and interval;
    SC, PQ, O: their means on the paper's 0-10 scale.
    scores: each image's O / 10 (0-1; None where it failed); per_image: SC, PQ, O and each reasoning.
    num_images, num_failed, num_reasks; judge.
Examples (README.md has some that run offline):
    vie = evaluate.load("metrics/viescore")                                # GPT-4o-2024-05-13
    vie = evaluate.load("metrics/viescore", judge="hf:Qwen/Qwen2.5-VL-7B-Instruct")
    out = vie.compute(predictions=images, references=prompts)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Viescore(tm.BaselineMetric):
    """VIEScore of each image for its prompt."""

    baseline_name = "viescore"

    def _info(self):
        return self._baseline_info(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            reference_urls=["https://tiger-ai-lab.github.io/VIEScore/", "https://github.com/TIGER-AI-Lab/VIEScore",
                            "https://arxiv.org/abs/2312.14867"],
        )
