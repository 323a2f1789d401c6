"""VQAScore: P("Yes" | image, 'Does this figure show "{prompt}"? Please answer yes or no.') from any judge."""

import datasets
import evaluate

from t2ireason import alignment
from t2ireason import metric as tm

_DESCRIPTION = """\
VQAScore (Lin et al., 2024) is the probability that a vision-language model answers "Yes" to
'Does this figure show "{prompt}"? Please answer yes or no.' about a generated image, read from
the model's next-token distribution. Any judge that gives answer probabilities works: a local
transformers model ("hf:<model id or folder>", teacher-forced), the vLLM engine ("vllm:<model>") or
an OpenAI-compatible endpoint that returns log-probabilities ("openai:<model>@<url>").
The default judge is MT2IE's, Llava-v1.6-34b (hf:llava-hf/llava-v1.6-34b-hf); the original VQAScore
model, CLIP-FlanT5-XXL, is not a transformers model, so its figures are not reproduced by default.
An image that cannot be read is that image's failure (a None score and the reason), never the batch's.
"""

_CITATION = """\
@inproceedings{lin2024evaluating,
  title={Evaluating Text-to-Visual Generation with Image-to-Text Generation},
  author={Lin, Zhiqiu and Pathak, Deepak and Li, Baiqi and Li, Jiayao and Xia, Xide and Neubig, Graham and Zhang, Pengchuan and Ramanan, Deva},
  booktitle={European Conference on Computer Vision (ECCV)},
  year={2024}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images, as PIL images or file paths.
    references: the prompts (strings), one per image.
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: a judge spec ("hf:...", "vllm:...", "openai:...@url") or a judge object;
        default "hf:llava-hf/llava-v1.6-34b-hf". Loaded once per module instance.
    judge_kwargs: passed to the judge backend (dtype, device_map, api_key...).
    cache: response cache (a path, True for the default place, False to disable).
    question: the question template, with a {prompt} placeholder (default: VQAScore's).
Returns:
    vqascore: the mean of the per-image scores (0 to 1) over the images that could be read
        (None if none could).
    scores: P("Yes") for each image, in order; None for an image that could not be read
        (empty, truncated, not an image, a decompression bomb).
    errors: per image, None or why it could not be scored.
    num_images, num_failed: how many images were given, and how many could not be scored.
    judge: the judge's backend, model and revision.
Examples:
    >>> from t2ireason.judges.scripted import ScriptedJudge
    >>> vqa = evaluate.load("metrics/vqascore", judge=ScriptedJudge(probabilities=[0.9, 0.25]), cache=False)
    >>> out = vqa.compute(predictions=[image_a, image_b], references=["a red cube", "two cats"])
    >>> out["scores"], out["vqascore"]
    ([0.9, 0.25], 0.575)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Vqascore(tm.JudgeMixin, tm.ImageMetric):
    """VQAScore of each image for its prompt, and their mean."""

    def __init__(self, judge=alignment.DEFAULT_VQASCORE_JUDGE, judge_kwargs=None, cache=True,
                 question=alignment.VQASCORE_QUESTION, progress=False, **kwargs):
        self._set_judge(judge, judge_kwargs, cache)
        self.question = question
        self.progress = progress
        super().__init__(**kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=tm.image_features(references=datasets.Value("string")),
            reference_urls=["https://arxiv.org/abs/2404.01291", "https://github.com/linzhiqiu/t2v_metrics"],
        )

    def _score_rows(self, predictions, references):
        scores, errors = alignment.score_readable(predictions, references, lambda images, prompts: alignment.vqascore(
            images, prompts, self.judge, question=self.question, progress=self.progress))
        return [{"score": s, "error": e} for s, e in zip(scores, errors)]

    def _combine(self, records):
        scores, errors = [r["score"] for r in records], [r["error"] for r in records]
        return {
            "vqascore": alignment.mean_of_scored(scores),
            "scores": scores,
            "errors": errors,
            "num_images": len(scores),
            "num_failed": sum(s is None for s in scores),
            "judge": self.judge_info(),
        }
