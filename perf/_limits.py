"""The hardware limits perf/gpu.py sets its figures against, as plain functions (tested without a GPU)."""

from __future__ import annotations


def hbm_ceiling(batch: int, copy_bytes_per_s: float, weight_bytes: float) -> float:
    """Row-steps a second a decoder cannot beat when each step reads its weights once from device memory:
    ``batch`` rows a step, ``weight_bytes`` read a step, at the device's memory rate. ``copy_bytes_per_s`` is
    :func:`gpu.copy_bandwidth`'s rate (``2 * n / t`` for a copy of ``n`` bytes: the bytes it read plus those it
    wrote, which is the memory's total traffic a second, what a read-only stream reaches too), so it is the read
    rate as it stands: halving it again (as the script did until 2026-11-29) halves the ceiling."""
    if batch < 1 or copy_bytes_per_s <= 0 or weight_bytes <= 0:
        raise ValueError(f"hbm_ceiling needs a batch of at least 1 and positive rates and sizes, got batch={batch}, "
                         f"copy_bytes_per_s={copy_bytes_per_s}, weight_bytes={weight_bytes}")
    return batch * copy_bytes_per_s / weight_bytes
