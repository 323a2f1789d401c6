"""When the local judge decodes chat replies with a static KV cache, which ``generate`` compiles with
``torch.compile`` (issue 41), and what it says about the compiling.

Decoding a 7B judge step by step in eager mode is bound by the host launching each layer's kernels: on
an H200, LLaVA-7B's eager ``generate`` wrote 208 tokens/s at batch 8 where a static cache (the decoding
step compiled, replayed as CUDA graphs) wrote 834, after a first call of 8 s spent compiling (54 s at
batch 32). ``compiled_decoding`` chooses:

- ``None`` (the default): on CUDA, batches of the judge's full ``batch_size`` (the size it compiles
  once and then reuses); a smaller batch (the last of a list) is filled up to that size with copies of
  its last request, whose replies are dropped, once that size has been compiled for its cache length
  (:meth:`StaticDecoding.fills`: a full-size step of the static cache costs less than an eager step
  of a few rows, which is bound by the host launching kernels); before that, a half after running out
  of memory, and every batch on a CPU decode eagerly;
- ``True``: every chat batch, on any device (a smaller batch is filled up to a compiled size as above;
  a new batch size compiles again);
- ``False``: never (eager decoding, the choice for a few requests that would not repay the compiling).

The cache's length is rounded up to :data:`CACHE_BUCKET` tokens (transformers keeps the longest cache
it has made), so prompts of other lengths reuse the compiled step instead of compiling it again. The
first call of each shape is timed and said once in the log.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["StaticDecoding", "CACHE_BUCKET", "check_setting"]

logger = logging.getLogger(__name__)

#: static caches are sized in steps of this many tokens
CACHE_BUCKET = 256


def check_setting(value: Any) -> bool | None:
    if value not in (True, False, None):
        raise ValueError(f"compiled_decoding must be True, False or None (on CUDA for full batches), got {value!r}")
    return value


class StaticDecoding:
    """The judge's record of the static-cache shapes it has compiled, and the policy above."""

    def __init__(self) -> None:
        #: ``(rows, cache length)`` -> seconds of the first call of that shape (compiling included)
        self.first_calls: dict[tuple[int, int], float] = {}
        #: ``(rows, cache length)`` of every batch prepared for the static cache: compiled, or compiled before
        #: any batch prepared after it runs (batches run in the order they are prepared), whatever the timing
        self.shapes: set[tuple[int, int]] = set()

    @staticmethod
    def applies(setting: bool | None, rows: int, batch_size: int, device_type: str) -> bool:
        if setting is None:
            return device_type == "cuda" and rows == batch_size
        return bool(setting)

    @staticmethod
    def describe(setting: bool | None, device_type: str) -> str | None:
        """For the judge's identity: which replies may come from the static-cache path."""
        if setting is True:
            return "static"
        if setting is None and device_type == "cuda":
            return "static (full batches, CUDA)"
        return None

    @staticmethod
    def cache_length(config: Any, prompt_length: int) -> int:
        """The static cache's length for prompts of ``prompt_length`` tokens, rounded up to :data:`CACHE_BUCKET`
        (0 where transformers sizes the cache per call: before 5.22)."""
        if not hasattr(config, "max_cache_len"):
            return 0
        return CACHE_BUCKET * math.ceil((prompt_length + config.max_new_tokens) / CACHE_BUCKET)

    def configure(self, config: Any, rows: int, prompt_length: int) -> None:
        """Set a generation config for the static cache, its length rounded up to :data:`CACHE_BUCKET`."""
        config.cache_implementation = "static"
        length = self.cache_length(config, prompt_length)
        if length:
            config.max_cache_len = length
        self.shapes.add((rows, length))

    def fills(self, setting: bool | None, rows: int, batch_size: int, device_type: str, config: Any,
              prompt_length: int) -> bool:
        """Whether a batch of ``rows`` fewer than ``batch_size`` is filled up to ``batch_size`` to decode with
        the static-cache step compiled for that size and its cache length (by a batch prepared before it),
        instead of eagerly or by compiling a new size. Never where no such batch came before: a few requests
        alone do not repay a compile."""
        return (rows < batch_size and self.applies(setting, batch_size, batch_size, device_type)
                and (batch_size, self.cache_length(config, prompt_length)) in self.shapes)

    @contextmanager
    def first_call(self, config: Any, rows: int, what: str) -> Iterator[None]:
        """Time a static-cache ``generate`` of a shape not seen before, and say once what it took."""
        shape = (rows, getattr(config, "max_cache_len", None) or 0)
        if config.cache_implementation != "static" or shape in self.first_calls:
            yield
            return
        start = time.perf_counter()
        yield
        seconds = self.first_calls[shape] = time.perf_counter() - start
        cache = f", cache of {shape[1]} tokens" if shape[1] else ""
        logger.warning("%s: compiled decoding for batches of %d%s: the first batch took %.1f s, compiling included "
                       "(once per batch size and cache length; compiled_decoding=False decodes eagerly)",
                       what, rows, cache, seconds)
