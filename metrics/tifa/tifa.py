"""TIFA: an LLM writes multiple-choice questions with their answers about the prompt, a VLM judge answers
them about the image; score = the share answered right."""

import datasets  # noqa: F401 - evaluate reads the dependencies from these imports
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
TIFA (Hu et al., ICCV 2023, "TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with
Question Answering") scores a generated image against its prompt with questions: an LLM writes, once per
prompt (kept), the prompt's elements and one or two multiple-choice questions with choices and the answer
each, with the authors' published few-shot prompt (github.com/Yushi-Hu/tifa, tifascore/question_gen.py); a
VLM judge answers each question about the image with one of its choices (the authors' multiple-choice
prompt); the image's score is the share answered right (0-1), the corpus score the mean x 100. The authors'
UnifiedQA question filter runs with question_filter="unifiedqa" (off by default: see the card). The logic
lives in t2ireason.baselines.tifa; this module is its shell.
"""

_CITATION = """\
@inproceedings{hu2023tifa,
  title     = {{TIFA}: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question Answering},
  author    = {Hu, Yushi and Liu, Benlin and Kasai, Jungo and Wang, Yizhong and Ostendorf, Mari and Krishna, Ranjay
               and Smith, Noah A.},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision (ICCV)},
  year      = {2023}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images (PIL images, file paths, numpy arrays or torch tensors).
    references: the prompts (strings), one per image.
    answers (compute option): "chat" (default: the judge writes a choice) or "probability" (the likeliest choice).
    sampling, max_reasks (compute options): the judge's sampling; follow-ups when an answer is none of the choices.
    confidence, n_resamples, seed (compute options): the bootstrap interval.
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: the VLM that answers (a spec or a judge object); the preset names none (the paper's VQA models are
        no chat judges): pass one.
    llm: the LLM that writes the questions; default: the preset's (gpt-3.5-turbo) when no judge is named, else
        the judge itself. llm_kwargs: its backend options. store: where the questions are kept.
    question_filter: the authors' UnifiedQA check of the questions made: "unifiedqa" (their model), a text QA
        model's Hub id or folder, or None (default: not run).
    judge_kwargs, cache, progress: see t2ireason.metric.BaselineMetric.
Returns:
    tifa: the mean TIFA score x 100 over the scored images; summary: its statistics and interval;
    accuracy_by_type: the accuracy of each element type's questions.
    scores: each image's score (0-1; None where it failed); per_image: its questions, choices and answers.
    num_images, num_failed, num_reasks; judge (with questions_by: the LLM).
Examples (README.md has some that run offline):
    tifa = evaluate.load("metrics/tifa", judge="openai:gpt-4o", llm="openai:gpt-3.5-turbo")
    out = tifa.compute(predictions=images, references=prompts)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Tifa(tm.BaselineMetric):
    """The TIFA score of each image against its prompt."""

    baseline_name = "tifa"

    def _info(self):
        return self._baseline_info(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            reference_urls=["https://tifa-benchmark.github.io/", "https://github.com/Yushi-Hu/tifa",
                            "https://arxiv.org/abs/2303.11897"],
        )
