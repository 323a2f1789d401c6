"""The ``hf:`` backend: transformers models that generate images themselves (Janus, Janus-Pro).

The model's own class (its config's ``architectures``) must have an image-generation mode as transformers
exposes it for Janus: ``generate(..., generation_mode="image")`` returning image tokens,
``decode_image_tokens`` turning them into pixels, and its processor's ``generation_mode="image"`` preparing the
prompt (the chat template, then the begin-of-image token) and ``postprocess`` giving PIL images. Each image is
drawn in its own call, its sampling seeded from the image's seed (the model samples from torch's global
generator, which is forked, so nothing else's randomness moves): the same image whatever else is drawn and
however many processes share the work. ``--guidance`` is the classifier-free guidance weight (the checkpoint's
generation config has the default, 5 for Janus-Pro); ``--pipeline-kwargs`` reach ``generate`` (``temperature``,
``top_k``...); the image size is the model's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .base import LocalGenerator, check_model
from .jobs import resolve_dtype
from .spec import GeneratorError

if TYPE_CHECKING:
    from PIL import Image

    from .jobs import GenerationConfig
    from .spec import GeneratorSpec

__all__ = ["TransformersGenerator", "image_model_class"]


def image_model_class(model: str, revision: str | None = None) -> type:
    """The transformers class of ``model`` (its ``config.json``'s ``architectures``), or a
    :class:`GeneratorError` when it names none that generates images."""
    import transformers

    try:
        config, _ = transformers.PretrainedConfig.get_config_dict(model, revision=revision)
    except (OSError, ValueError) as e:
        raise GeneratorError(f"hf generator {model!r}: cannot read its config.json ({e})") from None
    names = config.get("architectures") or []
    for name in names:
        cls = getattr(transformers, name, None)
        if cls is not None and hasattr(cls, "decode_image_tokens"):
            return cls
    said = ", ".join(names) or f"model_type {config.get('model_type')!r}"
    raise GeneratorError(f"hf generator {model!r} is a {said}, which does not generate images in transformers; "
                         "the hf: backend draws with models that do (Janus, Janus-Pro: "
                         "JanusForConditionalGeneration); a diffusers pipeline is a bare Hub id or folder")


class TransformersGenerator(LocalGenerator):
    """A Janus-like transformers model, loaded at its first batch (see the module's description)."""

    backend = "hf"
    takes = frozenset({"dtype", "guidance", "pipeline_kwargs", "revision"})

    def __init__(self, spec: GeneratorSpec, config: GenerationConfig, *, device: str = "cpu"):
        super().__init__(spec, config)
        self.device = device
        self.model = self.processor = None

    @classmethod
    def preflight(cls, spec: GeneratorSpec, config: GenerationConfig, options: Mapping[str, Any], *,
                  contact: bool = True) -> None:
        super().preflight(spec, config, options, contact=contact)
        check_model(spec.model, config.revision, marker="config.json",
                    what="a transformers model folder (save_pretrained)")
        image_model_class(spec.model, config.revision)

    def _load(self) -> None:
        from transformers import AutoProcessor

        cls = image_model_class(self.spec.model, self.config.revision)
        self.model = cls.from_pretrained(self.spec.model, dtype=resolve_dtype(self.config.dtype, self.device),
                                         revision=self.config.revision).to(self.device).eval()
        self.processor = AutoProcessor.from_pretrained(self.spec.model, revision=self.config.revision)

    def draw_batch(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Image.Image]:
        import torch

        if self.model is None:
            self._load()
        with torch.inference_mode():  # never the caller's grad mode changed (a training loop may draw in-process)
            return [self._draw_one(p, s) for p, s in zip(prompts, seeds)]

    def _draw_one(self, prompt: str, seed: int) -> Image.Image:
        import torch

        processor = self.processor
        text = prompt
        if getattr(processor, "chat_template", None):
            text = processor.apply_chat_template([{"role": "user", "content": [{"type": "text", "text": prompt}]}],
                                                 add_generation_prompt=True)
        inputs = processor(text=[text], generation_mode="image", return_tensors="pt").to(self.device)
        kwargs = dict(self.config.pipeline_kwargs)
        if self.config.guidance is not None:
            kwargs["guidance_scale"] = self.config.guidance
        device = torch.device(self.device)
        cuda = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(int(seed))
            tokens = self.model.generate(**inputs, generation_mode="image", do_sample=True, use_cache=True, **kwargs)
        pixels = self.model.decode_image_tokens(tokens)  # (batch, height, width, channels)
        images = processor.postprocess(list(pixels.permute(0, 3, 1, 2).float()), return_tensors="PIL.Image.Image")
        return images["pixel_values"][0]

    def close(self) -> None:
        self.model = self.processor = None
