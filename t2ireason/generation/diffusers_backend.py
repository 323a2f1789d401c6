"""The diffusers backend: a ``DiffusionPipeline`` (a Hub id, a folder, or ``diffusers:<...>``), each image from
its own seeded CPU generator, ``config.batch_size`` prompts a call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from PIL import Image

from .base import LocalGenerator, check_model
from .jobs import GenerationConfig, resolve_dtype

if TYPE_CHECKING:
    from .spec import GeneratorSpec

__all__ = ["DiffusersGenerator", "load_pipeline", "draw"]


def load_pipeline(config: GenerationConfig, device: str):
    """The diffusers pipeline, once per process, with the memory options users expect."""
    from diffusers import DiffusionPipeline

    pipe = DiffusionPipeline.from_pretrained(config.spec.model, dtype=resolve_dtype(config.dtype, device),
                                             revision=config.revision)
    if config.cpu_offload and str(device).startswith("cuda"):
        pipe.enable_model_cpu_offload(device=device)  # moves each sub-model to the GPU only while used
    else:
        pipe.to(device)
    if config.vae_slicing and hasattr(getattr(pipe, "vae", None), "enable_slicing"):
        pipe.vae.enable_slicing()
    pipe.set_progress_bar_config(disable=True)  # (its __call__ runs without gradients: diffusers' own no_grad)
    return pipe


def draw(pipe: Any, prompts: Sequence[str], seeds: Sequence[int], config: GenerationConfig) -> list[Image.Image]:
    """One pipeline call for several prompts, each image with its own seed."""
    import torch

    # one CPU generator per image: the same seed gives the same latents on any device
    generators = [torch.Generator("cpu").manual_seed(int(s)) for s in seeds]
    return pipe(prompt=list(prompts), generator=generators, num_images_per_prompt=1,
                **config.call_kwargs()).images


class DiffusersGenerator(LocalGenerator):
    """A diffusers pipeline, loaded at its first batch (or ``pipeline``, one already loaded)."""

    backend = "diffusers"
    takes = frozenset({"dtype", "steps", "guidance", "height", "width", "pipeline_kwargs", "cpu_offload",
                       "vae_slicing", "revision"})

    def __init__(self, spec: GeneratorSpec, config: GenerationConfig, *, device: str = "cpu", pipeline: Any = None):
        super().__init__(spec, config)
        self.device = device
        self.pipeline = pipeline

    @classmethod
    def preflight(cls, spec: GeneratorSpec, config: GenerationConfig, options: Mapping[str, Any], *,
                  contact: bool = True) -> None:
        super().preflight(spec, config, options, contact=contact)
        check_model(spec.model, config.revision)

    def draw_batch(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Image.Image]:
        if self.pipeline is None:
            self.pipeline = load_pipeline(self.config, self.device)
        return draw(self.pipeline, prompts, seeds, self.config)

    def close(self) -> None:
        self.pipeline = None
