"""Whether a local judge's checkpoint can be loaded, told before anything is made.

A judge running in this process (``hf:``, ``vllm:``) is loaded only once the images exist: after hours of
drawing, a mistyped folder, a checkpoint missing from the cache offline or a model that is no judge would
end the run with an error that could have been said at once. :func:`check_checkpoint` says it at once,
reading only ``config.json`` (from the folder, the local Hugging Face cache, or the Hub when online).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

from .base import JudgeError
from .spec import JudgeSpec

__all__ = ["check_checkpoint", "torchvision_problem", "torchvision_fix"]

#: the class the hf backend loads every judge with
_AUTO_CLASS = "AutoModelForImageTextToText"


def check_checkpoint(spec: str | JudgeSpec, kwargs: dict[str, Any] | None = None) -> None:
    """A :class:`JudgeError` in one line unless the local judge ``spec``'s checkpoint can be loaded.
    For the hf backend: a readable ``config.json`` in its folder, or of its Hub id in the local cache (when
    offline, ``HF_HUB_OFFLINE``) or fetched (online); transformers knows its model type and
    loads it as a vision-language model (``AutoModelForImageTextToText``), or it ships its own code for
    that and ``trust_remote_code`` is set. For vLLM, which reads more formats (a GGUF file, Mistral's
    ``params.json``), the folder or file exists, or offline the Hub id is in the cache. An HTTP judge is
    not looked at (its endpoint check does that). Nothing is created beside the Hub cache's copy of
    ``config.json``."""
    spec = JudgeSpec.of(spec)
    if not spec.is_local():
        return
    kwargs = kwargs or {}
    folder = spec.local_folder()
    if spec.backend != "hf":  # there (vLLM fetches what it reads itself when online)
        if folder is None:
            _cached(spec.model, kwargs.get("revision"), ("config.json", "params.json"))
        return
    if folder is not None:
        config = folder / "config.json"
        if not config.is_file():
            raise JudgeError(f"judge model folder {spec.model!r} has no config.json: not a model folder "
                             "(give the folder save_pretrained or `hf download` wrote, or a Hub id)")
    else:
        config = _hub_config(spec.model, kwargs.get("revision"))
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise JudgeError(f"judge model {spec.model!r}: its config.json ({config}) cannot be read: {e}") from None
    if not isinstance(data, dict):
        raise JudgeError(f"judge model {spec.model!r}: its config.json ({config}) is not a JSON object")
    _check_family(spec.model, data, bool(kwargs.get("trust_remote_code")))


def _hub_config(model: str, revision: str | None) -> Path:
    """The ``config.json`` of the Hub checkpoint ``model``: from the local cache, else (online) fetched."""
    from huggingface_hub import hf_hub_download

    cached = _cached(model, revision, ("config.json",))
    if cached is not None:
        return cached
    try:
        return Path(hf_hub_download(model, "config.json", revision=revision))
    except Exception as e:  # noqa: BLE001 - no such repository, gated, no config.json, no network: said here
        cause = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        at = f" at revision {revision!r}" if revision else ""
        raise JudgeError(f"judge model {model!r}{at} is no folder here, and its config.json cannot be fetched from "
                         f"the Hub ({cause}); check the id, log in (`hf auth login`) for a gated model, or give a "
                         "local folder") from None


def _cached(model: str, revision: str | None, names: tuple[str, ...]) -> Path | None:
    """The first of ``names`` of the Hub checkpoint ``model`` in the local cache; None when there is none and
    the Hub can be asked, a :class:`JudgeError` when it cannot (``HF_HUB_OFFLINE``) or ``model`` is no Hub id."""
    from huggingface_hub import constants, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    for name in names:
        try:
            cached = try_to_load_from_cache(model, name, revision=revision)
        except HFValidationError:
            raise JudgeError(f"judge model {model!r} is neither a folder here nor a Hub id (org/name)") from None
        if isinstance(cached, str):
            return Path(cached)
    if constants.HF_HUB_OFFLINE:
        at = f" at revision {revision!r}" if revision else ""
        raise JudgeError(f"judge model {model!r}{at} is not in the local Hugging Face cache and HF_HUB_OFFLINE is "
                         f"set: download it first (`hf download {model}`), or give a local folder (hf:<folder>)")
    return None


def _check_family(model: str, config: dict[str, Any], trust_remote_code: bool) -> None:
    """The hf backend loads ``model`` with ``AutoModelForImageTextToText``: its model type must be one the
    installed transformers maps to it (or the checkpoint's own code, trusted)."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    if trust_remote_code and _AUTO_CLASS in (config.get("auto_map") or {}):
        return
    kind = config.get("model_type")
    version = f"transformers {transformers.__version__}"
    if kind not in CONFIG_MAPPING_NAMES:
        own = " (pass trust_remote_code=True to run the code it ships)" if config.get("auto_map") else ""
        raise JudgeError(f"judge model {model!r}: {version} does not know its model type {kind!r} (config.json); "
                         f"upgrade transformers{own}")
    if kind not in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        raise JudgeError(f"judge model {model!r} is a {kind!r} model, which {version} does not load as a "
                         f"vision-language model ({_AUTO_CLASS}): a judge looks at images (e.g. "
                         "hf:Qwen/Qwen2.5-VL-7B-Instruct)")


def torchvision_problem() -> str | None:
    """Why the installed torchvision cannot be used (built for another torch), or None when it
    imports or is not installed. A mismatched torchvision breaks transformers' image and video
    processors for every family, so the judge refuses to load with the fix named."""
    if importlib.util.find_spec("torchvision") is None:
        return None
    try:
        import torchvision  # noqa: F401
        from torchvision.ops import nms  # noqa: F401  # the compiled operators are what a mismatch breaks
    except Exception as e:  # RuntimeError "operator torchvision::nms does not exist", ImportError...
        return (f"torchvision {importlib.metadata.version('torchvision')} is installed but cannot be used beside "
                f"torch {_torch_version()} ({type(e).__name__}: {e}). {torchvision_fix()}")
    return None


def _torch_version() -> str:
    import torch

    return torch.__version__


def torchvision_fix() -> str:
    """The install command of the torchvision built for the installed torch (0.N+15 for torch 2.N)."""
    match = re.match(r"2\.(\d+)", _torch_version())
    spec = f"torchvision==0.{int(match.group(1)) + 15}.*" if match else "the torchvision release built for it"
    return (f"Install {spec} from the same index as torch {_torch_version()} (the project's Makefile: "
            f"`make vision`, or TORCHVISION_SPEC=... beside TORCH_SPEC), or pick a torch that has one "
            f"(on this project's CI machines: torch==2.14.1 torchvision==0.29.1).")
