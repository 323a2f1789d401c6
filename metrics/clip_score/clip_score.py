"""CLIPScore in either definition in use: Hessel et al. (2.5 * max(cos, 0)) or torchmetrics (100 * cos)."""

import datasets
import evaluate

from t2ireason import alignment
from t2ireason import metric as tm

_DESCRIPTION = """\
CLIPScore measures prompt-image alignment as the cosine similarity of CLIP's image and text embeddings.
Two definitions are in use and this module says which one it computes (`definition`):
"hessel" (default; Hessel et al., 2021): 2.5 * max(cos(E_I, E_T), 0) per image, averaged, with each
prompt prefixed by "A photo depicts " as in the reference code; "torchmetrics": 100 * cos per image,
averaged, then the average clamped at 0, with no prefix. The CLIP model is loaded at the first
compute and kept by the module instance, with transformers' from_pretrained (a Hub id or a local
folder; default openai/clip-vit-base-patch32, the model of Hessel et al. and of MT2IE's baseline;
choose another with evaluate.load(..., model=...)). An image that cannot be read is that image's
failure (a None score and the reason), never the batch's.
"""

_CITATION = """\
@inproceedings{hessel2021clipscore,
  title={{CLIPScore}: A Reference-free Evaluation Metric for Image Captioning},
  author={Hessel, Jack and Holtzman, Ari and Forbes, Maxwell and Le Bras, Ronan and Choi, Yejin},
  booktitle={Proceedings of the 2021 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year={2021}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images, as PIL images or file paths.
    references: the prompts (strings), one per image; truncated to the CLIP text context.
    definition (optional, per call): "hessel" or "torchmetrics"; default: the module's.
Init keyword arguments (evaluate.load(..., model=...)):
    model: a CLIP model id or folder (default "openai/clip-vit-base-patch32"; torchmetrics'
        own default is "openai/clip-vit-large-patch14").
    definition: "hessel" (default) or "torchmetrics".
    prefix: text put before each prompt (default: "A photo depicts " for hessel, "" for torchmetrics).
    batch_size, device, dtype, revision: how the model is loaded and run.
Returns:
    clip_score: the corpus score under the definition, over the images that could be read
        (None if none could).
    scores: the per-image scores (hessel: clamped per image; torchmetrics: unclamped); None for an
        image that could not be read (empty, truncated, not an image, a decompression bomb).
    errors: per image, None or why it could not be scored.
    num_images, num_failed: how many images were given, and how many could not be scored.
    definition, model: what was computed, with which model.
Examples:
    >>> clip = evaluate.load("metrics/clip_score", model=tiny_clip_folder)
    >>> out = clip.compute(predictions=[image_a, image_b], references=["a red cube", "two cats"])
    >>> out["definition"], len(out["scores"])
    ('hessel', 2)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClipScore(tm.ImageMetric):
    """CLIPScore of each image for its prompt, and the corpus score."""

    def __init__(self, model=alignment.DEFAULT_CLIP_MODEL, definition="hessel", prefix=None, batch_size=32,
                 device=None, dtype=None, revision=None, **kwargs):
        alignment.clip_definition(definition)  # an unknown definition fails here, not at compute
        alignment.check_clip_model(model)  # so does a local folder that does not exist
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.definition = definition
        self.prefix = prefix
        self.model_name, self.revision = str(model), revision
        self._scorer_kwargs = {"device": device, "dtype": dtype, "batch_size": batch_size, "revision": revision}
        self._scorer = None
        super().__init__(**kwargs)

    @property
    def scorer(self):
        """The CLIP model, loaded at first use and kept (alignment.CLIPLoadError names it if it cannot load)."""
        if self._scorer is None:
            self._scorer = alignment.CLIPScorer(self.model_name, **self._scorer_kwargs)
        return self._scorer

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=tm.image_features(references=datasets.Value("string")),
            reference_urls=["https://arxiv.org/abs/2104.08718", "https://github.com/jmhessel/clipscore",
                            "https://lightning.ai/docs/torchmetrics/stable/multimodal/clip_score.html"],
        )

    def _score_rows(self, predictions, references, definition=None):
        definition = definition or self.definition
        alignment.clip_definition(definition)
        scores, errors = alignment.score_readable(predictions, references, lambda images, prompts: alignment.clip_score(
            images, prompts, self.scorer, definition=definition, prefix=self.prefix))
        return [{"score": s, "error": e} for s, e in zip(scores, errors)]

    def _combine(self, records, definition=None):
        definition = definition or self.definition
        scores, errors = [r["score"] for r in records], [r["error"] for r in records]
        scored = [s for s in scores if s is not None]
        return {
            "clip_score": alignment.aggregate_clip_scores(scored, definition) if scored else None,
            "scores": scores,
            "errors": errors,
            "num_images": len(scores),
            "num_failed": len(scores) - len(scored),
            "definition": definition,
            "model": {"model": self.model_name, "revision": self.revision},
        }
