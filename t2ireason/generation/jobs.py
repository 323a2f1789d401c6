"""What a generation makes: its settings (:class:`GenerationConfig`, saved with the images) and its images
(:class:`Job`: a prompt, a sample, a file in the benchmark's official layout, a seed from what identifies the
image, never from the process that makes it)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..files import inside

if TYPE_CHECKING:
    from .spec import GeneratorSpec

__all__ = ["GenerationConfig", "Job", "image_seed", "check_job_paths", "changed_settings", "DTYPES", "check_dtype",
           "resolve_dtype"]

DTYPES = ("auto", "float32", "float16", "bfloat16")
def check_dtype(name: str, device: str) -> None:
    """float16 needs a GPU: diffusers pipelines in float16 on the CPU fail or draw noise.
    Refused before the model is loaded, saying what to use instead."""
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; use {', '.join(DTYPES)}")
    if name == "float16" and not str(device).startswith(("cuda", "xpu", "mps")):
        raise ValueError(f"dtype float16 needs a GPU and this process runs on {device}; "
                         "use float32 (or bfloat16, or auto: float16 on GPU, float32 on CPU)")



def resolve_dtype(name: str, device: str):
    """The torch dtype of ``name`` on ``device`` (``auto``: float16 on a CUDA GPU, float32 elsewhere)."""
    import torch

    check_dtype(name, device)
    if name == "auto":
        return torch.float16 if str(device).startswith("cuda") else torch.float32
    return getattr(torch, name)



#: fields added after runs were first recorded: written to a run's record only when set, so a run made
#: before them resumes with the same configuration
_LATER_FIELDS = {"quality": None}


@dataclass
class GenerationConfig:
    """Everything that decides the pixels; saved with the images.

    ``model`` is a generator spec (:class:`~t2ireason.generation.GeneratorSpec`): a diffusers pipeline's
    Hub id or folder (or ``diffusers:<...>``), ``openai:<model>[@<base url>]``, ``hf:<Hub id or folder>``
    or ``python:<module>:<callable>``. Each backend takes the settings it can honour and refuses the
    others before anything is made (:meth:`Generator.check_config`)."""

    model: str
    dtype: str = "auto"  # "auto": float16 on GPU, float32 on CPU
    steps: int | None = None
    guidance: float | None = None
    height: int | None = None
    width: int | None = None
    images_per_prompt: int = 1
    batch_size: int = 1  # prompts per pipeline call
    seed: int = 0  # mixed into every image's seed, to draw another set of samples
    pipeline_kwargs: dict[str, Any] = field(default_factory=dict)
    cpu_offload: bool = False
    vae_slicing: bool = False
    revision: str | None = None
    quality: str | None = None  # an image API's quality setting (OpenAI: low, medium, high, auto; hd)

    def __post_init__(self):
        for name in ("images_per_prompt", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("steps", "height", "width"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.guidance is not None and not (isinstance(self.guidance, (int, float)) and math.isfinite(self.guidance)
                                              and self.guidance >= 0):
            raise ValueError(f"guidance must be a finite number >= 0, got {self.guidance!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; use {', '.join(DTYPES)}")

    @property
    def spec(self) -> GeneratorSpec:
        """``model`` parsed (raises :class:`~t2ireason.generation.GeneratorError` for an unknown backend)."""
        from .spec import GeneratorSpec

        return GeneratorSpec.parse(self.model)

    def call_kwargs(self) -> dict[str, Any]:
        kw = dict(self.pipeline_kwargs)
        for ours, theirs in (("steps", "num_inference_steps"), ("guidance", "guidance_scale"),
                             ("height", "height"), ("width", "width")):
            if getattr(self, ours) is not None:
                kw[theirs] = getattr(self, ours)
        return kw

    def to_dict(self) -> dict[str, Any]:
        """The settings as recorded (``run.json``, ``generation_config.json``, the manifest): the model spec
        without a base URL's ``user:password@``."""
        from ..redaction import redacted

        d = dataclasses.asdict(self)
        d["model"] = redacted(self.model)
        return {k: v for k, v in d.items() if k not in _LATER_FIELDS or v != _LATER_FIELDS[k]}


def changed_settings(recorded: dict[str, Any] | None, wanted: dict[str, Any]) -> list[str]:
    """The settings in which ``wanted`` differs from the ``recorded`` ones of images made before (none
    recorded: none changed); images made two ways in one folder would be scored as one model's. The model is
    its backend and name, wherever it is served: an API's endpoint may move (another port, a proxy) between
    a run's images."""
    if not recorded:
        return []

    def value(settings: dict[str, Any], name: str) -> Any:
        if name == "model" and isinstance(settings.get(name), str):
            from .spec import GeneratorError, GeneratorSpec

            try:
                spec = GeneratorSpec.parse(settings[name])
                return spec.backend, spec.model
            except GeneratorError:
                pass
        return settings.get(name)

    return sorted(k for k in wanted.keys() | recorded.keys() if value(wanted, k) != value(recorded, k))


@dataclass(frozen=True)
class Job:
    """One image to make."""

    prompt_id: str
    prompt: str
    sample: int
    file: str  # relative to the output folder, in the benchmark's official layout
    seed: int
    config: str | None = None


def image_seed(benchmark: str, prompt_id: str, sample: int, base_seed: int = 0) -> int:
    """A 63-bit seed from what identifies the image (not from the process that makes it)."""
    digest = hashlib.sha256(f"{benchmark}\x1f{prompt_id}\x1f{sample}\x1f{base_seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def check_job_paths(jobs: Sequence[Job], out_dir: str | os.PathLike) -> None:
    """Every image file of ``jobs`` stays inside ``out_dir``: a file name made from a hostile
    id (``../../outside/x``) is refused, naming it, before anything is written."""
    for job in jobs:
        inside(out_dir, job.file)
