"""The python backend: your own model as a function, ``python:<module>:<callable>``.

The callable is called as ``fn(prompts, seeds, **settings)`` with ``config.batch_size`` prompts at a time and
each image's seed, the settings given on the command line only (``num_inference_steps``, ``guidance_scale``,
``height``, ``width`` and ``--pipeline-kwargs``, as a diffusers pipeline takes them), and returns one item per
prompt: a PIL image; a mapping ``{"image": <PIL image>, ...}`` whose other keys (a revised prompt, timings) are
kept with the image; or an exception in the image's place (:class:`~t2ireason.generation.GenerationRefused`
for a refusal) for an image it could not make, recorded with its message. An exception it raises stops the
generation with one line naming it (its traceback in ``<out>/.generation/error-<rank>.txt``; finished images
are kept, a re-run goes on). The module is imported from the working folder as
``python -m`` would; a function that loads a model should load it once (``functools.cache``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .base import LocalGenerator
from .spec import GeneratorError, working_folder_on_path

if TYPE_CHECKING:
    from .jobs import GenerationConfig
    from .spec import GeneratorSpec

__all__ = ["PythonGenerator", "import_callable"]


def import_callable(target: str) -> Callable[..., Any]:
    """The callable ``module:attribute`` names (``attribute`` may be dotted), or a :class:`GeneratorError`
    saying why it cannot be had."""
    module_name, _, attr = target.rpartition(":")
    with working_folder_on_path():
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as e:
            raise GeneratorError(f"python generator {target!r}: cannot import {module_name!r} ({e}); run from the "
                                 "folder that holds it or install it") from None
        except Exception as e:  # noqa: BLE001 - the user's module failed while importing: say how
            raise GeneratorError(f"python generator {target!r}: importing {module_name!r} failed: "
                                 f"{type(e).__name__}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise GeneratorError(f"python generator {target!r}: {module_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise GeneratorError(f"python generator {target!r}: {attr!r} is a {type(obj).__name__}, not callable")
    return obj


class PythonGenerator(LocalGenerator):
    """A function from prompts and seeds to images (see the module's description)."""

    backend = "python"
    takes = frozenset({"steps", "guidance", "height", "width", "pipeline_kwargs"})

    def __init__(self, spec: GeneratorSpec, config: GenerationConfig, *, device: str | None = None):
        super().__init__(spec, config)
        self.fn = import_callable(spec.model)
        self.device = device

    @classmethod
    def preflight(cls, spec: GeneratorSpec, config: GenerationConfig, options: Mapping[str, Any], *,
                  contact: bool = True) -> None:
        super().preflight(spec, config, options, contact=contact)
        import_callable(spec.model)

    def draw_batch(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Any]:
        try:
            out = self.fn(list(prompts), [int(s) for s in seeds], **self.config.call_kwargs())
        except Exception as e:  # the user's code: one line (the traceback kept by the driver), finished work kept
            raise GeneratorError(f"python generator {self.spec.model!r} raised {type(e).__name__}: {e} (drawing "
                                 f"{len(prompts)} prompt(s), the first {str(prompts[0])[:60]!r}); the images made "
                                 "before are kept: fix it and run the same command again") from e
        if isinstance(out, (str, bytes, Mapping)) or not isinstance(out, Sequence):
            raise GeneratorError(f"python generator {self.spec.model!r} returned a {type(out).__name__}; it must "
                                 "return a list with one image (or exception) per prompt")
        return list(out)
