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
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

    from .jobs import GenerationConfig, Job
    from .spec import GeneratorSpec

__all__ = ["Drawn", "Generator", "LocalGenerator", "GeneratorError", "GeneratorUnavailable", "GenerationFailed",
           "GenerationRefused", "load_generator", "preflight_generator", "Drawer"]


class GeneratorError(ValueError):
    """A generator cannot be used as asked (an unknown spec, a setting its backend cannot take, an endpoint
    that refuses the key or does not serve the model...): the message says what to fix."""


class GeneratorUnavailable(GeneratorError):
    """The generator cannot answer now (its endpoint is unreachable, times out or is overloaded after every
    retry): images finished before are kept; run the same command again to go on."""


class GenerationFailed(Exception):
    """One image could not be made (what :class:`Drawer` returns in its place, or raises)."""

    def __init__(self, reason: str, kind: str = "error", retryable: bool = False):
        super().__init__(reason)
        self.kind, self.retryable = kind, retryable


class GenerationRefused(GenerationFailed):
    """The model refused the prompt (a content policy): return one from a ``python:`` generator in an image's
    place to record that image as refused."""

    def __init__(self, reason: str):
        super().__init__(reason, "refused", False)


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

            from .diffusers_backend import check_dtype

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


def load_generator(config: GenerationConfig, *, device: str | None = None, **options: Any) -> Generator:
    """The generator ``config.model`` names, made (a local model is loaded when it first draws). ``device``
    reaches local backends; ``options`` the backend's own (an API's ``max_concurrency``, ``timeout``...).
    A setting the backend cannot honour is refused here too, never dropped in silence (a :class:`Drawer`, the
    data engine and a script reach the backend by this way alone, without the pre-flight)."""
    spec = config.spec
    cls = spec.backend_class()
    cls.check_config(config)
    cls.check_options(options)
    if device is not None and "device" in cls.option_names():
        options = {"device": device, **options}
    return cls(spec, config, **options)


def preflight_generator(config: GenerationConfig, *, contact: bool = True, **options: Any) -> GeneratorSpec:
    """Check ``config``'s generator before anything is made, as the judges' pre-flight does: its spec, the
    settings its backend takes, its options, and what it names (a model folder, a Hub id in the cache offline,
    a python callable that imports, a key; with ``contact``, an endpoint that answers, takes the key and lists
    the model: a resumed step leaves that to the generator's first request, so a step with nothing left to
    draw contacts no server). Raises a :class:`GeneratorError` with one clear line; returns the parsed spec."""
    spec = config.spec
    spec.backend_class().preflight(spec, config, options, contact=contact)
    return spec


class Drawer:
    """A text-to-image model as a callable ``drawer(prompts, seeds) -> images``, loaded once (the MT2IE
    agent draws through it, prompt by prompt, as it goes; so does the data engine). Any generator spec works
    (:class:`GenerationConfig`'s ``model``). An image that could not be made is a :class:`GenerationFailed`:
    raised (``failures="raise"``, the default) or returned in the image's place (``failures="return"``)."""

    def __init__(self, config: GenerationConfig, device: str | None = None, name: str | None = None, *,
                 failures: str = "raise", **options: Any):
        if failures not in ("raise", "return"):
            raise ValueError(f"failures must be 'raise' or 'return', got {failures!r}")
        self.config = config
        self.name = name or config.model
        self.device = device
        self.failures = failures
        self.options = options
        self._generator: Generator | None = None

    def __call__(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Any]:
        from .jobs import Job

        prompts, seeds = list(prompts), list(seeds)
        if len(prompts) != len(seeds):  # never drawn as far as the shorter list goes
            raise ValueError(f"{self.name}: {len(prompts)} prompts and {len(seeds)} seeds; give one seed per prompt")
        if self._generator is None:
            device = self.device
            if device is None and self.config.spec.backend != "openai":
                import torch

                device = "cuda" if torch.cuda.is_available() else "cpu"
            self._generator = load_generator(self.config, device=device, **self.options)
        jobs = [Job(str(i), p, 0, "", int(s)) for i, (p, s) in enumerate(zip(prompts, seeds))]
        out: list[Any] = [None] * len(jobs)

        def keep(job: Job, drawn: Drawn) -> None:
            out[int(job.prompt_id)] = drawn.image if drawn.image is not None else GenerationFailed(
                drawn.failure or "no image", drawn.kind or "error", drawn.retryable)

        self._generator.draw(jobs, keep)
        failed = next((x for x in out if isinstance(x, GenerationFailed)), None)
        if failed is not None and self.failures == "raise":
            raise failed
        return out

    def close(self) -> None:
        if self._generator is not None:
            self._generator.close()
            self._generator = None
