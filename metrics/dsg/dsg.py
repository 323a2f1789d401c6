"""DSG (Davidsonian Scene Graph score): an LLM writes the prompt's atomic questions and their dependencies,
a VLM judge answers them, a question whose parent failed fails; score = the share that hold."""

import datasets  # noqa: F401 - evaluate reads the dependencies from these imports
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
DSG (Cho et al., ICLR 2024, "Davidsonian Scene Graph: Improving Reliability in Fine-grained Evaluation for
Text-to-Image Generation") scores a generated image against its prompt with questions: an LLM writes the
prompt's atomic tuples (entities, attributes, relations, global properties), each tuple's parent tuples and
one yes/no question per tuple, with the authors' published few-shot prompts (github.com/j-min/DSG,
dsg/query_utils.py), once per prompt, kept; a VLM judge answers each question about the image; a question
whose parent failed counts as failed (the paper's rule, or the authors' calc_vqa_score with
dependency="official"); the image's score is the share of its questions that hold (0-1), the corpus score
the mean x 100. The logic lives in t2ireason.baselines.dsg; this module is its shell.
"""

_CITATION = """\
@inproceedings{cho2024dsg,
  title     = {Davidsonian Scene Graph: Improving Reliability in Fine-grained Evaluation for Text-to-Image Generation},
  author    = {Cho, Jaemin and Hu, Yushi and Baldridge, Jason and Garg, Roopal and Anderson, Peter and Krishna, Ranjay
               and Bansal, Mohit and Pont-Tuset, Jordi and Wang, Su},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2024}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images (PIL images, file paths, numpy arrays or torch tensors).
    references: the prompts (strings), one per image.
    answers (compute option): "chat" (default: the judge writes yes or no) or "probability" (the likelier of
        "yes" and "no" from the judge's answer probabilities).
    dependency (compute option): "paper" (default), "official" (the authors' calc_vqa_score) or "none".
    sampling, max_reasks (compute options): the judge's sampling; follow-ups when an answer is not yes or no.
    confidence, n_resamples, seed (compute options): the bootstrap interval.
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: the VLM that answers (a spec or a judge object); default: the preset's.
    llm: the LLM that writes the questions (a spec or an object); default: the preset's when no judge is named,
        else the judge itself. llm_kwargs: its backend options.
    store: where each prompt's questions are kept (True: criteria.sqlite beside the response cache; a path; False).
    preset: "paper" (default; GPT-4o answering greedily, gpt-3.5-turbo writing, the paper's dependency rule) or
        "official" (dsg/vqa_utils.py's GPT-4o as it is, calc_vqa_score's rule).
    judge_kwargs, cache, progress: see t2ireason.metric.BaselineMetric.
Returns:
    dsg: the mean DSG score x 100 over the scored images (None if none); summary: its statistics and interval;
    by_category: the accuracy of entity, attribute, relation and global questions.
    scores: each image's score (0-1; None where it failed); per_image: its questions, answers, dependencies.
    num_images, num_failed, num_reasks; judge (with questions_by: the LLM).
Examples (README.md has some that run offline):
    dsg = evaluate.load("metrics/dsg")                         # GPT-4o answers, gpt-3.5-turbo writes
    dsg = evaluate.load("metrics/dsg", judge="hf:Qwen/Qwen2.5-VL-7B-Instruct")   # one local model does both
    out = dsg.compute(predictions=images, references=prompts)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Dsg(tm.BaselineMetric):
    """The DSG score of each image against its prompt."""

    baseline_name = "dsg"

    def _info(self):
        return self._baseline_info(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            reference_urls=["https://google.github.io/dsg/", "https://github.com/j-min/DSG",
                            "https://arxiv.org/abs/2310.18235"],
        )
