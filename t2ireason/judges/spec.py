"""A judge spec, ``backend:model[@base_url]``, parsed once into the value everything else reads.

``JudgeSpec.parse("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1")`` names the backend,
the model and the base URL; the scoring settings, the presets, :func:`~t2ireason.judges.load_judge`,
:func:`~t2ireason.judges.validate_judge`, :func:`~t2ireason.judges.preflight_spec` and the data engine
take the value rather than splitting the text again. Imports nothing heavy.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..redaction import redacted
from .base import JudgeError

__all__ = ["JudgeSpec", "BACKENDS", "parse_spec", "split_base_url", "SpecText"]

#: spec prefix -> "module:class", imported only when used (vllm and openai are optional extras)
BACKENDS = {
    "hf": "t2ireason.judges.transformers_judge:TransformersJudge",
    "openai": "t2ireason.judges.openai_judge:OpenAIJudge",
    "vllm": "t2ireason.judges.vllm_judge:VLLMJudge",
}

#: where an openai spec's base URL starts: the first '@' followed by a scheme (a URL's own
#: ``user:password@`` comes after it)
_URL_START = re.compile(r"@(?=https?://)", re.IGNORECASE)


def split_base_url(model: str) -> tuple[str, str | None]:
    """``(model, base_url)`` of ``model[@base_url]``: the base URL starts at the first '@' followed by
    ``http://`` or ``https://`` (a URL's own ``user:password@`` stays in it), else at the last '@'. The
    rule of every spec that names an endpoint (judges, image generators).

    >>> split_base_url("gpt-image-1@http://user:pw@host:8000/v1")
    ('gpt-image-1', 'http://user:pw@host:8000/v1')
    """
    if "@" not in model:
        return model, None
    found = _URL_START.search(model)
    return (model[: found.start()], model[found.end():]) if found else tuple(model.rsplit("@", 1))


def did_you_mean(word: str, choices: Any) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True, repr=False)
class SpecText:
    """A parsed spec's parts (a judge's, an image generator's) and what it says of itself: its repr and
    ``str`` are :meth:`describe`, never a base URL's ``user:password@``; ``text`` is the spec as written."""

    backend: str
    model: str
    base_url: str | None = field(default=None, repr=False)
    text: str = field(default="", repr=False, compare=False)

    @classmethod
    def of(cls, spec: Any) -> Any:
        """``spec`` parsed, or as it is when it already is one."""
        return spec if isinstance(spec, cls) else cls.parse(spec)

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()!r})"

    def describe(self) -> str:
        """The spec as written, without a URL's ``user:password@``."""
        return redacted(self.text or f"{self.backend}:{self.model}" + (f"@{self.base_url}" if self.base_url else ""))

    def url_rule(self) -> str:
        """Which '@' the base URL follows, in words (for a message about a base URL that cannot work)."""
        last = self.base_url is not None and self.text.rpartition("@")[2] == self.base_url
        return "the last '@'" if last else "the first '@' followed by http:// or https://"


@dataclass(frozen=True, repr=False)
class JudgeSpec(SpecText):
    """A parsed judge spec. Its repr and ``str`` are redacted (a base URL's ``user:password@``);
    ``text`` is the spec as written."""

    @classmethod
    def parse(cls, text: Any) -> JudgeSpec:
        """The parts of ``backend:model[@base_url]``, or a :class:`JudgeError` saying what is wrong.
        Only an ``openai`` spec carries a base URL: it starts at the first '@' followed by ``http://``
        or ``https://`` (a URL's own ``user:password@`` stays in it), else at the last '@'.

        >>> JudgeSpec.parse("openai:m@http://user:pw@host:8000/v1").base_url
        'http://user:pw@host:8000/v1'
        """
        if not isinstance(text, str) or ":" not in text:
            guess = next((f" (did you mean '{b}:{redacted(text[len(b) + 1:])}'?)" for b in BACKENDS
                          if isinstance(text, str) and text.startswith(b) and len(text) > len(b) + 1), "")
            raise JudgeError(f"judge spec {redacted(text)!r} must look like 'backend:model' with a backend among "
                             f"{', '.join(BACKENDS)}{guess}")
        backend, model = text.split(":", 1)
        if backend not in BACKENDS:
            raise JudgeError(f"unknown judge backend {backend!r} in {redacted(text)!r}; known: {', '.join(BACKENDS)}"
                             + did_you_mean(backend, BACKENDS))
        base_url = None
        if backend == "openai":
            model, base_url = split_base_url(model)
        if not model:
            raise JudgeError(f"judge spec {redacted(text)!r} names no model")
        return cls(backend, model, base_url, text)

    def options(self) -> dict[str, Any]:
        """What the spec gives the backend's constructor beside the model: its base URL."""
        return {"base_url": self.base_url} if self.base_url is not None else {}

    def is_local(self) -> bool:
        """Whether the model runs in this process (``hf``, ``vllm``), not behind an endpoint."""
        return self.backend != "openai"

    def local_folder(self) -> Path | None:
        """The local folder a local judge's model names (a path, a name that exists here, or one whose first
        part is a folder here: :func:`t2ireason.files.names_folder`), there or not; else None (a Hub id)."""
        from ..files import names_folder

        if not self.is_local() or not (names_folder(self.model) or Path(self.model).expanduser().exists()):
            return None
        return Path(self.model).expanduser()

    def backend_class(self) -> type:
        module_name, cls_name = BACKENDS[self.backend].split(":")
        return getattr(importlib.import_module(module_name), cls_name)

    def backend_options(self) -> set[str] | None:
        """The option names the backend's constructor takes (for vLLM, whose engine takes any keyword,
        its named ones and the engine arguments a preset may set: ``engine_options``); None for a
        backend that takes any keyword and declares none."""
        cls = self.backend_class()
        params = inspect.signature(cls.__init__).parameters
        named = {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - {"self", "model"}
        if any(p.kind is p.VAR_KEYWORD for p in params.values()) and not hasattr(cls, "engine_options"):
            return None
        return named | set(getattr(cls, "engine_options", ()))


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """``(backend, model, base_url)`` of ``backend:model[@base_url]`` (see :meth:`JudgeSpec.parse`).

    >>> parse_spec("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1")
    ('openai', 'Qwen/Qwen2.5-VL-72B-Instruct', 'http://localhost:8000/v1')
    >>> parse_spec("hf:/models/tiny")
    ('hf', '/models/tiny', None)
    """
    parsed = JudgeSpec.parse(spec)
    return parsed.backend, parsed.model, parsed.base_url
