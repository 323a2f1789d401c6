"""A generator spec, parsed once into the value the rest reads, as a judge spec is
(:class:`~t2ireason.judges.JudgeSpec`): which backend makes the images, of which model, where.

- ``<Hub id or folder>`` or ``diffusers:<...>``: a diffusers pipeline;
- ``openai:<model>[@<base url>]``: the OpenAI Images API (GPT-Image-1, DALL-E 3, and the servers that speak
  it); the base URL follows the judges' rule (:func:`~t2ireason.judges.spec.split_base_url`);
- ``hf:<Hub id or folder>``: a transformers model that generates images itself (Janus, Janus-Pro);
- ``python:<module>:<callable>``: your own model, a function from prompts and seeds to images.

Imports nothing heavy; a spec's text in a record or a message goes through :func:`~t2ireason.redaction.redacted`.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..judges.spec import SpecText, did_you_mean, split_base_url
from ..redaction import redacted
from .base import GeneratorError

__all__ = ["GeneratorSpec", "BACKENDS"]

#: spec prefix -> "module:class", imported only when used
BACKENDS = {
    "diffusers": "t2ireason.generation.diffusers_backend:DiffusersGenerator",
    "openai": "t2ireason.generation.openai_images:OpenAIImagesGenerator",
    "hf": "t2ireason.generation.transformers_backend:TransformersGenerator",
    "python": "t2ireason.generation.python_backend:PythonGenerator",
}
#: what a backend prefix looks like: a word before the first ':' (a path's drive letter is not one)
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]+")
_FORMS = ("<Hub id or folder>, diffusers:<Hub id or folder>, openai:<model>[@<base url>], "
          "hf:<Hub id or folder>, python:<module>:<callable>")


@dataclass(frozen=True, repr=False)
class GeneratorSpec(SpecText):
    """A parsed generator spec. Its repr and ``str`` are redacted; ``text`` is the spec as written."""

    @classmethod
    def parse(cls, text: Any) -> GeneratorSpec:
        """The parts of a spec, or a :class:`GeneratorError` saying what is wrong.

        >>> GeneratorSpec.parse("stabilityai/stable-diffusion-2-1").backend
        'diffusers'
        >>> GeneratorSpec.parse("openai:gpt-image-1@http://localhost:8000/v1").base_url
        'http://localhost:8000/v1'
        """
        if not isinstance(text, str) or not text.strip():
            raise GeneratorError(f"a generator spec is text ({_FORMS}); got {redacted(text)!r}")
        head, sep, rest = text.partition(":")
        if sep and head in BACKENDS:
            backend, model = head, rest
        elif sep and _PREFIX.fullmatch(head) and not rest.startswith(("\\", "/")) and not Path(text).exists():
            raise GeneratorError(f"unknown generator backend {head!r} in {redacted(text)!r}; known: "
                                 f"{', '.join(BACKENDS)}{did_you_mean(head, BACKENDS)} (a bare Hub id or folder "
                                 "is a diffusers pipeline)")
        else:
            backend, model = "diffusers", text
        base_url = None
        if backend == "openai":
            model, base_url = split_base_url(model)
        if not model.strip():
            raise GeneratorError(f"generator spec {redacted(text)!r} names no model")
        if backend == "python":
            module, _, attr = model.rpartition(":")
            if not module or not attr:
                raise GeneratorError(f"generator spec {redacted(text)!r}: a python generator is named "
                                     "python:<module>:<callable>, e.g. python:my_models:draw")
        return cls(backend, model, base_url, text)

    def backend_class(self) -> type:
        module_name, cls_name = BACKENDS[self.backend].split(":")
        return getattr(importlib.import_module(module_name), cls_name)

    @property
    def seedable(self) -> bool:
        """Whether the backend takes each image's seed (an image API does not)."""
        return self.backend != "openai"

    def local_folder(self) -> Path | None:
        """The folder a local model names (a path, or a name that exists here), else None."""
        if self.backend not in ("diffusers", "hf"):
            return None
        path = Path(self.model).expanduser()
        return path if self.model.startswith(("/", "./", "../", "~")) or path.exists() else None

    def identity(self, fingerprint: bool = False) -> dict[str, Any]:
        """What made the images, as ``run.json`` and the manifest record it: the backend, the model (no
        credentials), the API root, whether each image's seed is used; with ``fingerprint``, the SHA-256 of
        a local model folder's files or of a python generator's module file (read once per run)."""
        from ..transport import public_url

        ident: dict[str, Any] = {"backend": self.backend, "model": redacted(self.model), "seedable": self.seedable}
        if self.base_url:
            ident["base_url"] = public_url(self.base_url)
        if fingerprint:
            folder = self.local_folder()
            if folder is not None and folder.is_dir():
                from ..scoring import model_fingerprint

                ident["model_sha256"] = model_fingerprint(folder)
            elif self.backend == "python":
                from .python_backend import module_file

                file = module_file(self.model.rpartition(":")[0])
                if file is not None:
                    ident["module_sha256"] = "sha256:" + hashlib.sha256(file.read_bytes()).hexdigest()
        return ident

