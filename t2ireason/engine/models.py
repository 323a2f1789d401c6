"""The models the stages use: described where the run is launched, loaded once per worker process.

The launching process never loads a model: it only describes each one (for the settings kept with every
stage, see :meth:`Models.describe`). Each datatrove task loads what its stage needs through
:meth:`Models.load`, which keeps the loaded models of its process, so a worker that runs many tasks loads
its judge and its diffusion model once. On a machine with several GPUs each worker process has one
(``CUDA_VISIBLE_DEVICES``, set by :class:`~.executors.LocalExecutor`), so ``cuda`` is that GPU.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..redaction import redacted

__all__ = ["Models", "Server", "SERVER_KINDS", "TRANSPORT_OPTIONS"]

#: backend options that change how a judge is reached, not what it answers: left out of the settings
TRANSPORT_OPTIONS = frozenset({"max_concurrency", "timeout", "max_retries", "backoff_base", "backoff_max",
                               "batch_size", "device", "device_map", "api_key", "progress"})
SERVER_KINDS = ("vllm", "sglang", "endpoint")

# what this process has loaded: description -> model (a worker runs many tasks; load once)
_LOADED: dict[str, Any] = {}


@dataclass
class Server:
    """datatrove's inference runner serving the judge: ``vllm`` or ``sglang`` start a server per task on
    the task's GPUs, ``endpoint`` sends to a running OpenAI-compatible server (the judge spec's URL).
    ``options`` are fields of datatrove's ``InferenceConfig`` (``tp``, ``dp``, ``model_max_context``,
    ``max_concurrent_generations``, ``model_kwargs``, ``server_start_timeout_sec``...)."""

    kind: str
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in SERVER_KINDS:
            raise ValueError(f"server must be one of {', '.join(SERVER_KINDS)}, got {self.kind!r}")


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class Models:
    """``judge`` (vision-language) and ``llm`` (text; default: the judge) are judge specs
    (``hf:``, ``openai:``, ``vllm:``, see ``judges.load_judge``) or judge objects; ``cache`` is the response
    cache (a path, ``True`` for the default one, ``None``); ``drawer`` is a ``GenerationConfig`` (a
    ``generation.Drawer`` is made from it in each process) or a drawer object ``(prompts, seeds) -> images``;
    ``server`` puts the judge behind datatrove's inference runner."""

    judge: Any = None
    judge_kwargs: dict[str, Any] = field(default_factory=dict)
    llm: Any = None
    llm_kwargs: dict[str, Any] = field(default_factory=dict)
    cache: Any = None
    drawer: Any = None
    server: Server | None = None

    def describe(self) -> dict[str, Any]:
        """role -> what its answers (or pixels) depend on; JSON-safe, the same however often asked."""
        judge = _describe_judge(self.judge, self.judge_kwargs)
        if self.server is not None and judge is not None:
            judge = {**judge, "served by": f"datatrove inference runner ({self.server.kind})"}
        return {"judge": judge,
                "llm": _describe_judge(self.llm, self.llm_kwargs) if self.llm is not None else judge,
                "drawer": _describe_drawer(self.drawer)}

    def load(self, role: str) -> Any:
        """The model of ``role`` ("judge", "llm", "drawer") in this process, loaded on first use (None when
        the run has none: the stage that needs it says so)."""
        if role == "drawer":
            return self._drawer()
        spec, kwargs = (self.llm, self.llm_kwargs) if role == "llm" and self.llm is not None \
            else (self.judge, self.judge_kwargs)
        if spec is None:
            return None
        from ..judges import load_judge

        if not isinstance(spec, str):  # an object given in Python: used as it is, behind the cache
            return load_judge(spec, cache=self.cache)
        kwargs = dict(kwargs)
        if spec.startswith("hf:") and "device" not in kwargs and "device_map" not in kwargs:
            kwargs["device"] = _device()  # this worker's GPU, or the CPU
        key = json.dumps({"spec": spec, "kwargs": kwargs, "cache": str(self.cache)}, sort_keys=True, default=str)
        if key not in _LOADED:
            _LOADED[key] = load_judge(spec, cache=self.cache, **kwargs)
        return _LOADED[key]

    def _drawer(self) -> Any:
        from ..generation import Drawer, GenerationConfig

        if not isinstance(self.drawer, GenerationConfig):
            return self.drawer
        device = _device()
        key = json.dumps({"drawer": self.drawer.to_dict(), "device": device}, sort_keys=True, default=str)
        if key not in _LOADED:
            _LOADED[key] = Drawer(self.drawer, device=device)
        return _LOADED[key]


def _describe_judge(spec: Any, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    if spec is None:
        return None
    if not isinstance(spec, str):
        return spec.identity() if hasattr(spec, "identity") else {"judge": repr(spec)}
    answers = {k: v for k, v in sorted(kwargs.items()) if k not in TRANSPORT_OPTIONS}
    return redacted(json.loads(json.dumps({"spec": spec, **({"options": answers} if answers else {})}, default=str)))


def _describe_drawer(drawer: Any) -> Any:
    if drawer is None:
        return None
    config = drawer if hasattr(drawer, "to_dict") else getattr(drawer, "config", None)
    return config.to_dict() if hasattr(config, "to_dict") else repr(drawer)
