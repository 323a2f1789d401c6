"""The registry: a generator spec's backend made into its :class:`~t2ireason.generation.base.Generator`, over the
backends (as diffusers' ``auto_pipeline`` is over its pipelines). The spec and the errors lie below
(:mod:`.spec`), the shared base and the backends in between; nothing below imports this module.

:func:`load_generator` makes the generator a spec names, :func:`preflight_generator` checks it before anything is
made, and :class:`Drawer` turns any of them into the ``drawer(prompts, seeds) -> images`` callable the MT2IE agent
and the data engine draw through.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .base import Drawn, Generator
from .spec import GenerationFailed, GeneratorSpec

if TYPE_CHECKING:
    from .jobs import GenerationConfig

__all__ = ["BACKENDS", "backend_class", "load_generator", "preflight_generator", "Drawer"]

#: spec prefix -> "module:class", imported only when used (a backend's own dependencies are optional extras)
BACKENDS = {
    "diffusers": "t2ireason.generation.diffusers_backend:DiffusersGenerator",
    "openai": "t2ireason.generation.openai_images:OpenAIImagesGenerator",
    "hf": "t2ireason.generation.transformers_backend:TransformersGenerator",
    "python": "t2ireason.generation.python_backend:PythonGenerator",
}


def backend_class(spec: GeneratorSpec) -> type[Generator]:
    """The :class:`Generator` subclass of ``spec``'s backend."""
    module_name, cls_name = BACKENDS[spec.backend].split(":")
    return getattr(importlib.import_module(module_name), cls_name)


def load_generator(config: GenerationConfig, *, device: str | None = None, **options: Any) -> Generator:
    """The generator ``config.model`` names, made (a local model is loaded when it first draws). ``device``
    reaches local backends; ``options`` the backend's own (an API's ``max_concurrency``, ``timeout``...).
    A setting the backend cannot honour is refused here too, never dropped in silence (a :class:`Drawer`, the
    data engine and a script reach the backend by this way alone, without the pre-flight)."""
    spec = config.spec
    cls = backend_class(spec)
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
    backend_class(spec).preflight(spec, config, options, contact=contact)
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
