"""The options of :meth:`T2IReasonBench.score` and :meth:`T2IReasonBench.aggregate`, checked once, with
their defaults (either method takes the other's options and ignores them)."""

from __future__ import annotations

from typing import Any

from .schema import DIMENSIONS, PAPER_WEIGHTS, ROLES

_SCORE_OPTIONS = {"mode", "aggregation", "weights", "max_reasks", "structured_output", "reply_json", "template",
                  "image_preparation"}
#: ``image_preparation``: None (each image as it is) or "qwen_vl_utils" (as the authors' eval_*.py feed Qwen2.5-VL)
_IMAGE_PREPARATIONS = (None, "qwen_vl_utils")
_AGGREGATE_OPTIONS = {"confidence", "n_resamples", "seed"}
_MODES = ("image", "text")
_AGGREGATIONS = ("paper", "official")
_REPLY_JSON = ("last", "first")
_TEMPLATE_CHOICES = ("paper", "official")


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with their defaults, each checked; the weights completed from :data:`PAPER_WEIGHTS`."""
    unknown = set(options) - _SCORE_OPTIONS - _AGGREGATE_OPTIONS
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; T2I-ReasonBench takes "
                        f"{sorted(_SCORE_OPTIONS | _AGGREGATE_OPTIONS)}")
    opts = {"mode": "image", "aggregation": "paper", "weights": None, "max_reasks": 2, "structured_output": False,
            "reply_json": "last", "template": "paper", "confidence": 0.95, "n_resamples": 2000, "seed": 0,
            "image_preparation": None, **options}
    if opts["image_preparation"] not in _IMAGE_PREPARATIONS:
        raise ValueError(f"image_preparation must be one of {_IMAGE_PREPARATIONS}, got {opts['image_preparation']!r}")
    if opts["mode"] not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {opts['mode']!r}")
    if opts["aggregation"] not in _AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {_AGGREGATIONS}, got {opts['aggregation']!r}")
    if opts["reply_json"] not in _REPLY_JSON:
        raise ValueError(f"reply_json must be one of {_REPLY_JSON}, got {opts['reply_json']!r}")
    if opts["template"] not in _TEMPLATE_CHOICES:
        raise ValueError(f"template must be one of {_TEMPLATE_CHOICES}, got {opts['template']!r}")
    weights = {d: dict(w) for d, w in PAPER_WEIGHTS.items()}
    for d, w in (opts["weights"] or {}).items():
        if d not in weights:
            raise ValueError(f"weights for unknown dimension {d!r}; known: {', '.join(DIMENSIONS)}")
        bad = set(w) - set(ROLES)
        if bad or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in w.values()):
            raise ValueError(f"weights[{d!r}] must map reason/detail/quality to non-negative numbers, got {w!r}")
        weights[d] = {**weights[d], **{k: float(v) for k, v in w.items()}}
    opts["weights"] = weights
    return opts
