"""The diffusers backend: a ``DiffusionPipeline`` (a Hub id, a folder, or ``diffusers:<...>``), each image from
its own seeded CPU generator, ``config.batch_size`` prompts a call."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from .base import LocalGenerator
from .jobs import DTYPES, GenerationConfig

if TYPE_CHECKING:
    from .spec import GeneratorSpec

__all__ = ["DiffusersGenerator", "load_pipeline", "draw", "check_dtype", "check_model", "resolve_dtype"]


def check_dtype(name: str, device: str) -> None:
    """float16 needs a GPU: diffusers pipelines in float16 on the CPU fail or draw noise.
    Refused before the model is loaded, saying what to use instead."""
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; use {', '.join(DTYPES)}")
    if name == "float16" and not str(device).startswith(("cuda", "xpu", "mps")):
        raise ValueError(f"dtype float16 needs a GPU and this process runs on {device}; "
                         "use float32 (or bfloat16, or auto: float16 on GPU, float32 on CPU)")


def check_model(model: str | os.PathLike, revision: str | None = None, *, marker: str = "model_index.json",
                what: str = "a diffusers pipeline folder (save_pretrained)") -> None:
    """A ``--model`` that names a local folder: it exists (else the closest folder beside it is
    named) and holds a model (``marker``: a diffusers pipeline's ``model_index.json``); a Hub id,
    offline (``HF_HUB_OFFLINE``), is in the local Hugging Face cache. Checked before anything is
    created; online, a Hub id is fetched when the model loads. A generator spec's prefix
    (``diffusers:``) is read as such."""
    from ..files import missing_folder
    from .spec import GeneratorSpec

    if isinstance(model, str) and model.startswith("diffusers:"):
        model = GeneratorSpec.parse(model).model
    said = missing_folder(model)
    if said:
        raise ValueError(f"--model: {said}; give {what} or a Hub id")
    folder = Path(model).expanduser()
    if folder.is_dir():
        if not (folder / marker).is_file():
            raise ValueError(f"--model: {model} is not {what} (it has no {marker}); give the folder "
                             "save_pretrained wrote, or a Hub id")
        return
    from huggingface_hub import constants, try_to_load_from_cache

    if constants.HF_HUB_OFFLINE and not isinstance(try_to_load_from_cache(str(model), marker, revision=revision), str):
        raise ValueError(f"--model: {model} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set: "
                         f"download it first (`hf download {model}`), or give a local model folder")


def resolve_dtype(name: str, device: str):
    """The torch dtype of ``name`` on ``device`` (``auto``: float16 on a CUDA GPU, float32 elsewhere)."""
    import torch

    check_dtype(name, device)
    if name == "auto":
        return torch.float16 if str(device).startswith("cuda") else torch.float32
    return getattr(torch, name)


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
