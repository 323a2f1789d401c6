"""Judges: one interface to multimodal models, many backends.

``load_judge("openai:gpt-4.1")``, ``load_judge("hf:<folder or hub id>")``,
``load_judge("vllm:<model>")`` or ``load_judge("openai:<model>@http://host:8000/v1")``.
Any object implementing :class:`Judge`'s methods can be passed wherever a judge is taken.
"""

from __future__ import annotations

import math
from typing import Any

from .base import (
    VQASCORE_QUESTION,
    AnswerQuery,
    ChatRequest,
    Judge,
    JudgeAuthError,
    JudgeError,
    JudgeOptionError,
    JudgeUnavailable,
    Message,
    Reply,
    Sampling,
    TokenLogprob,
    assistant,
    system,
    user,
)
from .spec import BACKENDS, JudgeSpec, did_you_mean, parse_spec

__all__ = [
    "VQASCORE_QUESTION", "AnswerQuery", "ChatRequest", "Judge", "JudgeAuthError", "JudgeError", "JudgeOptionError", "JudgeUnavailable", "Message", "Reply",
    "Sampling", "TokenLogprob", "assistant", "system", "user", "load_judge", "parse_spec", "validate_judge", "check_sampling", "BACKENDS",
    "preflight", "preflight_spec", "JudgeSpec", "on_device",
]


def validate_judge(spec: str | JudgeSpec | Judge | Any, kwargs: dict[str, Any] | None = None) -> None:
    """Check a judge spec and its backend options before anything is loaded or created, raising
    :class:`JudgeError` with what is wrong: a malformed spec or unknown backend, a base URL that is
    not an http(s) URL, a local model folder that does not exist, an option the backend does not
    take (with a "did you mean"), an option value that cannot work (a time-out that is not a
    positive number, an unknown choice), a ``sampling`` that is not one. Nothing is contacted.
    A judge object is accepted as it is."""
    import inspect

    if not isinstance(spec, str | JudgeSpec):
        if not (hasattr(spec, "chat") and hasattr(spec, "identity")):
            raise JudgeError(f"a judge is a spec string or an object with chat() and identity(); "
                             f"got {type(spec).__name__}")
        return
    kwargs = dict(kwargs or {})
    spec = JudgeSpec.of(spec)
    if spec.base_url is not None:
        from .openai_judge import check_base_url

        try:
            check_base_url(spec.base_url)
        except JudgeError as e:
            raise JudgeError(f"{e} (in {spec.describe()!r}, what follows {spec.url_rule()} is the base URL)") from None
    folder = spec.local_folder()
    if folder is not None and not folder.exists():
        from ..files import near_folder

        raise JudgeError(f"judge model folder {spec.model!r} does not exist{near_folder(folder)}")
    if folder is not None and spec.backend == "hf" and not folder.is_dir():  # vLLM reads a GGUF file too
        raise JudgeError(f"judge model {spec.model!r} is a file, not a model folder")
    if "sampling" in kwargs:
        check_sampling(kwargs["sampling"])
    cls = spec.backend_class()
    accepted = inspect.signature(cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        names = [n for n in accepted if n not in ("self", "model")]
        for key in kwargs:
            if key not in names:
                raise JudgeError(f"the {spec.backend} judge backend takes no option {key!r}{did_you_mean(key, names)}; "
                                 f"its options: {', '.join(names)}")
    check_options = getattr(cls, "check_options", None)
    if check_options is not None:  # the backend's own checks of values, creating nothing
        check_options(**{k: v for k, v in kwargs.items() if k != "sampling"})


#: Sampling's fields: (lowest, highest) allowed, and whether a whole number is required
_SAMPLING_FIELDS = {"temperature": (0.0, None, False), "top_p": (0.0, 1.0, False), "max_tokens": (1, None, True),
                    "seed": (None, None, True)}


def check_sampling(value: Any, where: str = "sampling") -> None:
    """A ``sampling`` value as JSON gives it (an object of temperature, top_p, max_tokens, seed),
    or a :class:`Sampling`: a :class:`JudgeOptionError` naming ``where`` and what is wrong, never
    a TypeError from deep inside."""
    if value is None or isinstance(value, Sampling):
        return
    fields = ", ".join(_SAMPLING_FIELDS)
    if not isinstance(value, dict):
        raise JudgeOptionError(f"{where} must be an object of {fields} (or a Sampling), got {value!r}")
    for key, v in value.items():
        if key not in _SAMPLING_FIELDS:
            raise JudgeOptionError(f"{where} has no field {key!r}{did_you_mean(str(key), _SAMPLING_FIELDS)}; "
                                   f"its fields: {fields}")
        low, high, whole = _SAMPLING_FIELDS[key]
        if v is None and key == "seed":
            continue
        if isinstance(v, bool) or not isinstance(v, int if whole else (int, float)) or not math.isfinite(v):
            kind = "a whole number" + (" or null" if key == "seed" else "") if whole else "a finite number"
            raise JudgeOptionError(f"{where}.{key} must be {kind}, got {v!r}")
        if (low is not None and v < low) or (high is not None and v > high) or (key == "top_p" and v == 0):
            rule = {"temperature": ">= 0", "top_p": "in (0, 1]", "max_tokens": ">= 1"}[key]
            raise JudgeOptionError(f"{where}.{key} must be {rule}, got {v!r}")


def load_judge(spec: str | JudgeSpec | Judge | Any, *, cache: str | None | bool = None, cache_mode: str = "use",
               **kwargs: Any) -> Judge:
    """A judge from a spec (a string or a :class:`JudgeSpec`), or ``spec`` itself if it already is one.

    ``kwargs`` reach the backend's constructor (``sampling`` defaults as a Sampling or a dict, ``dtype``,
    ``api_key``, ``max_concurrency``...). ``cache`` wraps the judge in the on-disk
    response cache: a path, ``True`` for the default location, or ``None``/``False``; ``cache_mode``
    ``"refresh"`` asks the judge again and overwrites what the cache held (:class:`~.cache.CachedJudge`).
    """
    if isinstance(kwargs.get("sampling"), dict):  # as a command line's JSON gives it
        kwargs["sampling"] = Sampling(**kwargs["sampling"])
    if isinstance(spec, str | JudgeSpec):
        spec = JudgeSpec.of(spec)
        judge = spec.backend_class()(spec.model, **{**kwargs, **spec.options()})
    elif hasattr(spec, "chat") and hasattr(spec, "identity"):
        judge = spec
    else:
        raise JudgeError(f"a judge is a spec string or an object with chat() and identity(); got {type(spec).__name__}")
    if cache:
        from .cache import CachedJudge, default_cache_path

        judge = CachedJudge(judge, default_cache_path() if cache is True else cache, mode=cache_mode)
    return judge


def on_device(spec: str | JudgeSpec | Any, kwargs: dict[str, Any], device: str | None) -> dict[str, Any]:
    """A judge's options as one process of a launch of several loads it: a local model (``hf:``) on the
    process's own ``device``, unless the options place it (``device``, ``device_map``); an HTTP judge as it is.
    A ``vllm:`` judge is refused: each process would start its own engine over every GPU; it spreads itself
    (``tensor_parallel_size``), or a vLLM server does (``vllm serve --data-parallel-size``)."""
    import inspect

    kwargs = dict(kwargs)
    if device is None or not isinstance(spec, str | JudgeSpec):
        return kwargs
    spec = JudgeSpec.of(spec)
    if spec.backend == "vllm":
        raise JudgeError(f"a vllm: judge ({spec.model}) is not split over the processes of a launch: run one "
                         "process and spread the model with --judge-kwargs '{\"tensor_parallel_size\": N}', or "
                         f"serve it with `vllm serve {spec.model} --data-parallel-size N` and judge with "
                         f"openai:{spec.model}@http://localhost:8000/v1")
    if spec.is_local() and "device" in inspect.signature(spec.backend_class().__init__).parameters \
            and not {"device", "device_map"} & set(kwargs):
        kwargs["device"] = device
    return kwargs


#: the reply schema of the pre-flight's structured request
_PREFLIGHT_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                     "additionalProperties": False}


def preflight(judge: Any, *, structured: bool = True, probabilities: bool = False, images: bool = True) -> None:
    """Ask ``judge`` one tiny request of each kind a computation will send, before the expensive
    work (generating images) starts, so that a judge that cannot do the job fails now and not
    after hours of GPU time: a request with an image (text alone without ``images``, for a text
    model) and, with ``structured``, a JSON schema (``response_format``), and with
    ``probabilities`` one answer probability (VQAScore's
    log-probabilities). An HTTP judge checks its endpoint first (reachable, key taken, model
    served). Raises :class:`JudgeError` or :class:`JudgeUnavailable` naming what is missing; a
    cached judge is asked through its wrapped judge, so the probes are neither served from nor
    stored in the cache (or a run's reply journal)."""
    from PIL import Image

    from .stored import StoredJudge

    inner = judge.innermost() if isinstance(judge, StoredJudge) else judge
    image = Image.new("RGB", (32, 32), (128, 128, 128))
    question = ((image, "Is this image gray?") if images else ("Is grass green?",))
    request = ChatRequest.simple(*question[:-1], question[-1] + ' Reply in JSON: {"ok": true} or {"ok": false}.',
                                 sampling=Sampling(temperature=0.0, max_tokens=16),
                                 json_schema=_PREFLIGHT_SCHEMA if structured else None)
    what = ("a request with an image" if images else "a text request") + (" and a JSON schema" if structured else "")
    (reply,) = inner.chat([request])
    if reply.error is not None:
        raise JudgeError(f"{inner!r} cannot answer {what}, as scoring needs: {reply.error}")
    if probabilities:
        try:
            inner.answer_probability([AnswerQuery(image, "Is this image gray?", "Yes")])
        except JudgeError as e:
            raise type(e)(f"{inner!r} cannot give the answer probabilities VQAScore needs: {e}") from None


def preflight_spec(spec: str | JudgeSpec | Any, kwargs: dict[str, Any] | None = None, *, judge: Any = None,
                   **needs: bool) -> None:
    """:func:`preflight` for a judge setting that is loaded later (after the images are generated):
    an HTTP judge (``openai:``) is made without a cache, asked, and closed (or ``judge``, the setting
    already loaded, is asked); a local judge (``hf:``, ``vllm:``) is not loaded twice:
    :func:`validate_judge` has checked its spec and folder, and the transformers backend gives answer
    probabilities and JSON by constrained decoding. A judge object is the caller's own: it is not asked."""
    if not isinstance(spec, str | JudgeSpec) or JudgeSpec.of(spec).is_local():
        return
    if judge is not None:
        preflight(judge, **needs)
        return
    judge = load_judge(JudgeSpec.of(spec), **(kwargs or {}))
    try:
        preflight(judge, **needs)
    finally:
        judge.close()
