"""The generator interface every backend implements, what it hands back for each image, and the ways in.

A :class:`Generator` makes the images of a list of :class:`~t2ireason.generation.Job` and hands each one, as
soon as it is made, to the caller's ``on_drawn(job, drawn)`` in the caller's thread: a :class:`Drawn` with the
image and what the backend said besides it (a revised prompt, usage), or the failure and why (a refusal, an
error after retries). A local backend (diffusers, transformers, a python function) draws batch after batch
(:class:`LocalGenerator`); an API backend keeps its requests in flight at once. The seeded, resumable,
sharded driver around them is :func:`~t2ireason.generation.generate`; :class:`Drawer` turns any of them into
the ``drawer(prompts, seeds) -> images`` callable the MT2IE agent and the data engine draw through.
"""

from __future__ import annotations

import inspect
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .spec import GenerationFailed, GeneratorError, GeneratorSpec

if TYPE_CHECKING:
    from PIL import Image

    from .jobs import GenerationConfig, Job

__all__ = ["Drawn", "Generator", "LocalGenerator", "check_model"]


@dataclass
class Drawn:
    """One image as a backend made it, or why it could not: ``kind`` is ``"refused"`` (the model's own
    refusal, a content policy: not asked again) or ``"error"``; ``retryable`` when the server or the network
    failed (``--retry-failed`` draws it again). ``extra`` keeps what the backend returned besides the image."""

    image: Image.Image | None = None
    failure: str | None = None
    kind: str | None = None
    retryable: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def failed(cls, reason: str, kind: str = "error", retryable: bool = False,
               extra: dict[str, Any] | None = None) -> Drawn:
        return cls(None, reason, kind, retryable, dict(extra or {}))

    @classmethod
    def of(cls, item: Any, who: str = "the generator") -> Drawn:
        """What a drawing function returned for one image: a PIL image, a mapping with ``"image"`` (its other
        keys kept as ``extra``), or an exception in the image's place (a :class:`GenerationFailed` with its
        kind, any other as an error). Anything else is the function's mistake, recorded as ``retryable``:
        ``--retry-failed`` draws the image again once the function is fixed."""
        from PIL import Image

        if isinstance(item, Drawn):
            return item
        if isinstance(item, BaseException):
            text = str(item) or type(item).__name__
            if isinstance(item, GenerationFailed):
                return cls.failed(text, item.kind, item.retryable)
            return cls.failed(f"{type(item).__name__}: {text}")
        if isinstance(item, Mapping) and isinstance(item.get("image"), Image.Image):
            return cls(item["image"], extra={k: v for k, v in item.items() if k != "image"})
        if isinstance(item, Image.Image):
            return cls(item)
        return cls.failed(f"{who} returned a {type(item).__name__}, not a PIL image (nor a mapping with one, nor an "
                          "exception); once it is fixed, --retry-failed draws it again", "error", True)


#: GenerationConfig fields -> their option on the command line, for a message about one a backend cannot take
_FIELDS = {"dtype": "--dtype", "steps": "--steps", "guidance": "--guidance", "height": "--height",
           "width": "--width", "pipeline_kwargs": "--pipeline-kwargs", "cpu_offload": "--cpu-offload",
           "vae_slicing": "--vae-slicing", "revision": "--revision", "quality": "--quality"}
_UNSET = {"dtype": "auto", "pipeline_kwargs": {}, "cpu_offload": False, "vae_slicing": False}


class Generator(ABC):
    """A text-to-image model behind one backend. Subclasses set ``backend``, ``seedable`` and ``takes``
    (the :class:`GenerationConfig` settings they honour; any other that is set is refused before anything is
    made), and implement :meth:`draw`. Their constructors take ``(model, config, **options)``."""

    backend: str = ""
    seedable: bool = True
    takes: frozenset[str] = frozenset()

    def __init__(self, spec: GeneratorSpec, config: GenerationConfig):
        self.spec, self.config = spec, config

    # -- checked before anything is made -------------------------------------------------------------

    @classmethod
    def check_config(cls, config: GenerationConfig) -> None:
        """A :class:`GeneratorError` naming the first setting this backend cannot honour."""
        for name, option in _FIELDS.items():
            value = getattr(config, name)
            if name not in cls.takes and value is not None and value != _UNSET.get(name):
                raise GeneratorError(f"the {cls.backend} generator cannot take {option} ({value!r}): "
                                     f"it honours {', '.join(_FIELDS[n] for n in _FIELDS if n in cls.takes) or 'none'}"
                                     " besides --images-per-prompt, --batch-size and --seed")
        if config.height is not None and config.width is not None:
            from PIL import Image

            limit = Image.MAX_IMAGE_PIXELS
            if limit and config.height * config.width > limit:  # refused before anything is paid for
                raise GeneratorError(f"--height {config.height} --width {config.width} asks for "
                                     f"{config.height * config.width / 1e6:.1f} megapixels an image, more than the "
                                     f"{limit / 1e6:.1f} a judge reads (PIL.Image.MAX_IMAGE_PIXELS): ask for a "
                                     "smaller size")

    @classmethod
    def option_names(cls) -> list[str]:
        params = inspect.signature(cls.__init__).parameters
        return [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """A :class:`GeneratorError` naming an option the backend does not take (with a "did you mean")."""
        from ..judges.spec import did_you_mean

        names = cls.option_names()
        for key in options:
            if key not in names:
                raise GeneratorError(f"the {cls.backend} generator takes no option {key!r}{did_you_mean(key, names)}; "
                                     f"its options: {', '.join(names) or 'none'}")

    @classmethod
    def preflight(cls, spec: GeneratorSpec, config: GenerationConfig, options: Mapping[str, Any], *,
                  contact: bool = True) -> None:
        """Everything that can be known before work without loading the model: the settings, the options,
        the model's folder, and with ``contact`` its endpoint (backends add their own checks)."""
        cls.check_config(config)
        cls.check_options(options)

    # -- making images -------------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return self.spec.identity()

    @abstractmethod
    def draw(self, jobs: Sequence[Job], on_drawn: Callable[[Job, Drawn], None]) -> None:
        """Make each job's image and hand it to ``on_drawn(job, drawn)`` as soon as it is made, in this thread.
        A failure of one image is its :class:`Drawn`; an exception ends the call (finished images handed)."""

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to free
        """Free what the backend holds (a model, connections)."""

    def __enter__(self) -> Generator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.describe()})"


class LocalGenerator(Generator):
    """A model in this process, drawn ``config.batch_size`` prompts at a time: subclasses implement
    :meth:`draw_batch`, returning per prompt what :meth:`Drawn.of` reads."""

    @classmethod
    def preflight(cls, spec: GeneratorSpec, config: GenerationConfig, options: Mapping[str, Any], *,
                  contact: bool = True) -> None:
        super().preflight(spec, config, options, contact=contact)
        if "dtype" in cls.takes:  # float16 needs a GPU: said before the model loads, whichever backend loads it
            import torch

            from .jobs import check_dtype

            check_dtype(config.dtype, "cuda" if torch.cuda.is_available() else "cpu")

    @abstractmethod
    def draw_batch(self, prompts: Sequence[str], seeds: Sequence[int]) -> Sequence[Any]:
        """One image per prompt, each from its seed."""

    def draw(self, jobs: Sequence[Job], on_drawn: Callable[[Job, Drawn], None]) -> None:
        size = self.config.batch_size
        for start in range(0, len(jobs), size):
            batch = jobs[start: start + size]
            out = list(self.draw_batch([j.prompt for j in batch], [j.seed for j in batch]))
            if len(out) != len(batch):
                raise GeneratorError(f"{self!r} returned {len(out)} images for {len(batch)} prompts")
            for job, item in zip(batch, out):
                on_drawn(job, Drawn.of(item, self.spec.describe()))


def check_model(model: str | os.PathLike, revision: str | None = None, *, marker: str = "model_index.json",
                what: str = "a diffusers pipeline folder (save_pretrained)") -> None:
    """A ``--model`` that names a local folder: it exists (else the closest folder beside it is
    named) and holds a model (``marker``: a diffusers pipeline's ``model_index.json``); a Hub id,
    offline (``HF_HUB_OFFLINE``), is in the local Hugging Face cache. Checked before anything is
    created; online, a Hub id is fetched when the model loads. A generator spec's prefix
    (``diffusers:``) is read as such."""
    from ..files import missing_folder

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
