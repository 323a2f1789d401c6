"""A generator spec, parsed once into the value the rest reads, as a judge spec is
(:class:`~t2ireason.judges.JudgeSpec`): which backend makes the images, of which model, where.

- ``<Hub id or folder>`` or ``diffusers:<...>``: a diffusers pipeline;
- ``openai:<model>[@<base url>]``: the OpenAI Images API (GPT-Image-1, DALL-E 3, and the servers that speak
  it); the base URL follows the judges' rule (:func:`~t2ireason.judges.spec.split_base_url`);
- ``hf:<Hub id or folder>``: a transformers model that generates images itself (Janus, Janus-Pro);
- ``python:<module>:<callable>``: your own model, a function from prompts and seeds to images.

Imports nothing heavy; a spec's text in a record or a message goes through :func:`~t2ireason.redaction.redacted`.
The bottom of :mod:`t2ireason.generation`: the errors every part raises live here too, below the shared base
(:mod:`.base`), the backends and the registry that makes them (:mod:`.registry`).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..judges.spec import SpecText, did_you_mean, split_base_url
from ..redaction import redacted

__all__ = ["GeneratorSpec", "BACKEND_NAMES", "GeneratorError", "GeneratorUnavailable", "GenerationFailed",
           "GenerationRefused", "module_file", "working_folder_on_path"]

#: the spec prefixes, one a backend (:data:`t2ireason.generation.registry.BACKENDS` makes each)
BACKEND_NAMES = ("diffusers", "openai", "hf", "python")
#: what a backend prefix looks like: a word before the first ':' (a path's drive letter is not one)
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]+")
_FORMS = ("<Hub id or folder>, diffusers:<Hub id or folder>, openai:<model>[@<base url>], "
          "hf:<Hub id or folder>, python:<module>:<callable>")


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
        if sep and head in BACKEND_NAMES:
            backend, model = head, rest
        elif sep and _PREFIX.fullmatch(head) and not rest.startswith(("\\", "/")) and not Path(text).exists():
            raise GeneratorError(f"unknown generator backend {head!r} in {redacted(text)!r}; known: "
                                 f"{', '.join(BACKEND_NAMES)}{did_you_mean(head, BACKEND_NAMES)} (a bare Hub id or folder "
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
                from ..files import model_fingerprint

                ident["model_sha256"] = model_fingerprint(folder)
            elif self.backend == "python":
                file = module_file(self.model.rpartition(":")[0])
                if file is not None:
                    ident["module_sha256"] = "sha256:" + hashlib.sha256(file.read_bytes()).hexdigest()
        return ident


@contextmanager
def working_folder_on_path():
    """The working folder first on ``sys.path`` while importing (a console script's path starts with its
    own folder, not the user's)."""
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def module_file(module: str):
    """The source file of ``module`` (found from the working folder too, without importing it), else None."""
    import importlib.util

    with working_folder_on_path():
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
    origin = getattr(found, "origin", None)
    return Path(origin) if origin and Path(origin).is_file() else None
