"""Prompt-image alignment scores used as baselines by the seed papers: VQAScore and CLIPScore.

VQAScore (Lin et al., 2024) is the probability that a vision-language model
answers "Yes" to ``Does this figure show "{prompt}"? Please answer yes or no.``
It is computed here from any judge that gives answer probabilities
(``judge.yes_probability``): a local transformers model (teacher-forced), a
vLLM engine, or an OpenAI-compatible endpoint that returns log-probabilities.

CLIPScore has two definitions in use, and :func:`clip_score` computes either:

- ``"hessel"`` (Hessel et al., 2021): ``2.5 * max(cos(E_I, E_T), 0)`` per image,
  averaged; the reference code prefixes each caption with "A photo depicts";
- ``"torchmetrics"`` (torchmetrics' ``CLIPScore``): ``100 * cos`` per image,
  averaged, then the average clamped at 0.

They differ in scale (2.5 vs 100), in the text prefix, and in where negative
cosines are clamped: per image (Hessel) or only the average (torchmetrics).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .images import ImageError, as_image, load_images
from .judges.base import VQASCORE_QUESTION

__all__ = [
    "VQASCORE_QUESTION", "DEFAULT_VQASCORE_JUDGE", "vqascore",
    "CLIP_DEFINITIONS", "DEFAULT_CLIP_MODEL", "clip_definition", "CLIPScorer", "CLIPLoadError", "clip_score",
    "aggregate_clip_scores", "check_clip_model", "score_readable", "mean_of_scored",
]

#: The judge MT2IE (seed 002) uses for VQAScore, and the best of its Table 2. The
#: original VQAScore model, CLIP-FlanT5-XXL, is not a transformers model (it needs
#: the t2v_metrics package), so it cannot be the default here.
DEFAULT_VQASCORE_JUDGE = "hf:llava-hf/llava-v1.6-34b-hf"


def vqascore(images: Sequence[Any], prompts: Sequence[str], judge: Any, *,
             question: str = VQASCORE_QUESTION, progress: bool | str = False) -> list[float]:
    """P("Yes" | image, question about prompt) for each (image, prompt) pair.

    ``question`` is a template with a ``{prompt}`` placeholder; the prompt is
    inserted as is (braces inside a prompt are not interpreted).
    """
    if len(images) != len(prompts):
        raise ValueError(f"got {len(images)} images but {len(prompts)} prompts")
    if "{prompt}" not in question:
        raise ValueError(f"the VQAScore question template has no {{prompt}} placeholder: {question!r}")
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise ValueError(f"prompts[{i}] is a {type(p).__name__}, not a string")
    questions = [question.replace("{prompt}", p) for p in prompts]
    return judge.yes_probability(images, questions, progress=progress)


def score_readable(images: Sequence[Any], prompts: Sequence[str],
                   score: Any) -> tuple[list[float | None], list[str | None]]:
    """``score(images, prompts)`` on the images that can be read; for the others a None score and
    the reason: one unreadable image (empty, truncated, not an image, a decompression bomb) is that
    image's failure, not the batch's. Returns the scores and the errors, both in input order."""
    if len(images) != len(prompts):
        raise ValueError(f"got {len(images)} images but {len(prompts)} prompts")
    loaded = load_images(images)
    errors = [f"unreadable image: {x}" if isinstance(x, ImageError) else None for x in loaded]
    keep = [i for i, e in enumerate(errors) if e is None]
    scores: list[float | None] = [None] * len(loaded)
    if keep:
        for i, s in zip(keep, score([loaded[i] for i in keep], [prompts[i] for i in keep]), strict=True):
            scores[i] = s
    return scores, errors


def mean_of_scored(scores: Sequence[float | None]) -> float | None:
    """The mean of the scores that exist (failures left out, never counted as zero); None if none."""
    scored = [s for s in scores if s is not None]
    return sum(scored) / len(scored) if scored else None


# -- CLIPScore --------------------------------------------------------------------

#: definition -> (weight, default text prefix); see the module docstring
CLIP_DEFINITIONS: dict[str, tuple[float, str]] = {
    "hessel": (2.5, "A photo depicts "),
    "torchmetrics": (100.0, ""),
}
#: ViT-B/32: the model of Hessel et al. and of MT2IE's CLIPScore baseline (seed 002,
#: Table 2). torchmetrics defaults to openai/clip-vit-large-patch14: pass it as
#: ``model`` to reproduce torchmetrics' numbers.
DEFAULT_CLIP_MODEL = "openai/clip-vit-base-patch32"


def clip_definition(definition: str) -> tuple[float, str]:
    """(weight, default text prefix) of a CLIPScore definition; a clear error for an unknown one."""
    if definition not in CLIP_DEFINITIONS:
        raise ValueError(f"unknown CLIPScore definition {definition!r}; known: {', '.join(CLIP_DEFINITIONS)}")
    return CLIP_DEFINITIONS[definition]


class CLIPLoadError(OSError):
    """The CLIP model could not be loaded; the message names it and how to choose another."""


def _looks_like_a_folder(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~")) or model.count("/") > 1  # a Hub id has one slash


def check_clip_model(model: str) -> None:
    """Refuse, before anything loads, a model given as a local folder that does not exist."""
    if not isinstance(model, (str, os.PathLike)) or not str(model).strip():
        raise ValueError(f"model must be a CLIP model's Hub id or local folder, got {model!r}")
    path = Path(model).expanduser()
    if _looks_like_a_folder(str(model)) and not path.is_dir():
        raise CLIPLoadError(f"CLIP model folder {str(model)!r} " +
                            ("is a file, not a model folder" if path.exists() else "does not exist"))


class CLIPScorer:
    """A CLIP model and processor loaded once (``from_pretrained``: a Hub id or a
    folder) that turns (image, text) pairs into cosine similarities, in batches.
    A model that cannot be loaded raises :class:`CLIPLoadError` naming it."""

    def __init__(self, model: str = DEFAULT_CLIP_MODEL, *, device: str | None = None,
                 dtype: Any = None, batch_size: int = 32, revision: str | None = None):
        import torch
        from transformers import AutoProcessor, CLIPModel

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = str(model)
        self.revision = revision
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = batch_size
        check_clip_model(model)
        try:
            self.model = CLIPModel.from_pretrained(model, revision=revision, dtype=dtype).to(self.device).eval()
            self.processor = AutoProcessor.from_pretrained(model, revision=revision)
        except Exception as e:  # OSError when missing or offline, ValueError for another architecture...
            raise CLIPLoadError(_load_failure(self.name, revision, e)) from e

    def identity(self) -> dict[str, Any]:
        return {"model": self.name, "revision": self.revision}

    def cosines(self, images: Sequence[Any], texts: Sequence[str]) -> list[float]:
        """cos(E_I, E_T) for each pair; texts longer than the model's context are truncated."""
        import torch

        if len(images) != len(texts):
            raise ValueError(f"got {len(images)} images but {len(texts)} texts")
        out: list[float] = []
        for start in range(0, len(images), self.batch_size):
            imgs = [as_image(x).image for x in images[start:start + self.batch_size]]
            txts = list(texts[start:start + self.batch_size])
            inputs = self.processor(text=txts, images=imgs, return_tensors="pt", padding=True, truncation=True)
            inputs = {k: v.to(self.device) for k, v in inputs.items()}
            with torch.inference_mode():
                e_i = self.model.get_image_features(pixel_values=inputs["pixel_values"])
                e_t = self.model.get_text_features(input_ids=inputs["input_ids"],
                                                   attention_mask=inputs.get("attention_mask"))
            # transformers 5 returns output objects; the projected embedding is the pooler output
            e_i = getattr(e_i, "pooler_output", e_i).float()
            e_t = getattr(e_t, "pooler_output", e_t).float()
            out.extend(torch.nn.functional.cosine_similarity(e_i, e_t, dim=-1).tolist())
        return out


def _load_failure(model: str, revision: str | None, error: Exception) -> str:
    from huggingface_hub import constants

    rev = f" at revision {revision!r}" if revision else ""
    which = "the default CLIP model" if model == DEFAULT_CLIP_MODEL else "CLIP model"
    offline = (" The Hub is offline here (HF_HUB_OFFLINE is set) and the model is not in the local cache: "
               "download it once while online, or pass a local folder." if constants.HF_HUB_OFFLINE else "")
    cause = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return (f"cannot load {which} {model!r}{rev}.{offline} Choose another with "
            f"evaluate.load(\"metrics/clip_score\", model=\"<Hub id or local folder>\") "
            f"(e.g. torchmetrics' openai/clip-vit-large-patch14). Cause: {type(error).__name__}: {cause}")


def clip_score(images: Sequence[Any], prompts: Sequence[str], scorer: CLIPScorer, *,
               definition: str = "hessel", prefix: str | None = None) -> list[float]:
    """Per-image CLIPScores under ``definition``; ``prefix`` (default: the
    definition's, "A photo depicts " for Hessel, none for torchmetrics) is put
    before each prompt. Hessel scores are clamped per image; torchmetrics
    scores are not (only their average is, see :func:`aggregate_clip_scores`)."""
    weight, default_prefix = clip_definition(definition)
    prefix = default_prefix if prefix is None else prefix
    cos = scorer.cosines(images, [prefix + p for p in prompts])
    if definition == "hessel":
        return [weight * max(c, 0.0) for c in cos]
    return [weight * c for c in cos]


def aggregate_clip_scores(scores: Sequence[float], definition: str = "hessel") -> float:
    """The corpus CLIPScore: the mean (Hessel), or the mean clamped at 0 (torchmetrics)."""
    clip_definition(definition)
    if not scores:
        raise ValueError("no scores to aggregate")
    mean = sum(scores) / len(scores)
    return max(mean, 0.0) if definition == "torchmetrics" else mean
