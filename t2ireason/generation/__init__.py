"""Image generation for the benchmarks: one interface over every kind of text-to-image model, seeded per image,
sharded, resumable, failures recorded.

A generator is named by a spec string, as a judge is (:class:`GeneratorSpec`), wherever a model is named
(``t2ireason generate``, ``run``, ``mt2ie``, :class:`GenerationConfig`'s ``model``):

- ``<Hub id or folder>`` or ``diffusers:<...>``: a diffusers pipeline (:mod:`.diffusers_backend`);
- ``openai:<model>[@<base url>]``: the OpenAI Images API, over the HTTP judge's transport (:mod:`.openai_images`);
- ``hf:<Hub id or folder>``: a transformers model that generates images, Janus / Janus-Pro
  (:mod:`.transformers_backend`);
- ``python:<module>:<callable>``: your own model, ``fn(prompts, seeds, **settings) -> images``
  (:mod:`.python_backend`).

Inside, each part imports only those below it: :mod:`.spec` (the spec and the errors), :mod:`.jobs` (the settings
and a seed per image), :mod:`.base` (the interface), the backends, :mod:`.registry` (a spec made into its
backend), then :mod:`.store` and :mod:`.driver`. :func:`generate` is the driver (:mod:`.driver`): the same guarantees on every backend (a seed per image from
what identifies it, each image written atomically and skipped on re-run, sharding over processes, failures
recorded with their reason); :mod:`.store` is the output folder it writes; :class:`Drawer` draws prompt by prompt
for the MT2IE agent and the data engine.
"""

from .base import Drawn, Generator, LocalGenerator, check_model
from .diffusers_backend import draw, load_pipeline
from .driver import generate
from .jobs import DTYPES, GenerationConfig, Job, changed_settings, check_dtype, check_job_paths, image_seed
from .registry import BACKENDS, Drawer, backend_class, load_generator, preflight_generator
from .spec import GenerationFailed, GenerationRefused, GeneratorError, GeneratorSpec, GeneratorUnavailable
from .store import (
    CONFIG_FILE,
    FAILURES,
    MANIFEST,
    ImageWriter,
    RecordLog,
    is_readable_image,
    read_failures,
    read_records,
    save_image_atomic,
    write_manifest,
)

__all__ = ["GenerationConfig", "Job", "image_seed", "check_job_paths", "changed_settings", "generate", "write_manifest", "draw",
           "Drawer", "load_pipeline", "check_dtype", "check_model", "is_readable_image", "save_image_atomic", "ImageWriter",
           "MANIFEST", "DTYPES", "CONFIG_FILE", "FAILURES", "RecordLog", "read_records", "read_failures",
           "GeneratorSpec", "BACKENDS", "Generator", "LocalGenerator", "Drawn", "GeneratorError", "GeneratorUnavailable",
           "GenerationFailed", "GenerationRefused", "load_generator", "preflight_generator", "backend_class"]
