"""The options of :meth:`T2IReasonBench.score` and :meth:`T2IReasonBench.aggregate`, checked once, with
their defaults (either method takes the other's options and ignores them)."""

from __future__ import annotations

from typing import Any

from ..base import one_of, step_options
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
    known = _SCORE_OPTIONS | _AGGREGATE_OPTIONS
    step_options(options, known, known)
    opts = {"mode": "image", "aggregation": "paper", "weights": None, "max_reasks": 2, "structured_output": False,
            "reply_json": "last", "template": "paper", "confidence": 0.95, "n_resamples": 2000, "seed": 0,
            "image_preparation": None, **options}
    one_of("image_preparation", opts["image_preparation"], _IMAGE_PREPARATIONS)
    one_of("mode", opts["mode"], _MODES)
    one_of("aggregation", opts["aggregation"], _AGGREGATIONS)
    one_of("reply_json", opts["reply_json"], _REPLY_JSON)
    one_of("template", opts["template"], _TEMPLATE_CHOICES)
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
