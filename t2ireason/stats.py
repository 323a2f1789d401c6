"""Statistics the papers report: means with standard errors and confidence
intervals, rank correlations and pairwise accuracy against human ratings."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats as sps

__all__ = ["summarize", "bootstrap_ci", "mean_se", "kendall_tau", "spearman_rho", "pairwise_accuracy"]


def _finite(values: Sequence[float | None]) -> np.ndarray:
    """The scored values; None (failures) are left out here and counted by the caller."""
    return np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)


def mean_se(values: Sequence[float | None]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n)), as R2I-Bench Table 14 reports."""
    x = _finite(values)
    if x.size == 0:
        return math.nan, math.nan
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    return float(x.mean()), se


def bootstrap_ci(
    values: Sequence[float | None],
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``statistic`` (seeded, so reproducible)."""
    x = _finite(values)
    if x.size < 2:
        return math.nan, math.nan
    if np.all(x == x[0]):  # no spread: the interval is the point
        v = float(statistic(x))
        return v, v
    res = sps.bootstrap((x,), lambda s, axis=-1: np.apply_along_axis(statistic, axis, s),
                        confidence_level=confidence, n_resamples=n_resamples,
                        method="percentile", rng=np.random.default_rng(seed), vectorized=True)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def summarize(values: Sequence[float | None], *, scale: float = 1.0, confidence: float = 0.95,
              n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Mean, standard error, normal-theory and bootstrap intervals, counts. ``scale`` multiplies
    every figure (e.g. 100 for scores reported on 0 to 100)."""
    x = _finite(values)
    mean, se = mean_se(x)
    lo, hi = bootstrap_ci(x, confidence=confidence, n_resamples=n_resamples, seed=seed)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    return {
        "mean": mean * scale,
        "se": se * scale,
        "ci_low": lo * scale,
        "ci_high": hi * scale,
        "normal_ci_low": (mean - z * se) * scale,
        "normal_ci_high": (mean + z * se) * scale,
        "n": int(x.size),
        "failed": len(values) - int(x.size),
    }


def _paired(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    if len(a) != len(b):
        raise ValueError(f"need paired scores, got {len(a)} and {len(b)}")
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def kendall_tau(a: Sequence[float], b: Sequence[float], variant: str = "b") -> float:
    """Kendall's tau (tau-b by default, which accounts for ties)."""
    x, y = _paired(a, b)
    return float(sps.kendalltau(x, y, variant=variant).statistic)


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float:
    x, y = _paired(a, b)
    return float(sps.spearmanr(x, y).statistic)


def pairwise_accuracy(metric: Sequence[float], human: Sequence[float], *, tie_epsilon: float = 0.0) -> float:
    """Share of item pairs that the metric orders as the humans do, ties included.

    Pairwise accuracy with tie calibration (Deutsch et al., 2023), as R2I-Bench
    uses it: a pair counts when both rank it the same way (<, >, or tie), where
    the metric's scores closer than ``tie_epsilon`` count as tied.
    """
    x, y = _paired(metric, human)
    n = x.size
    if n < 2:
        return math.nan
    i, j = np.triu_indices(n, k=1)
    dm = x[i] - x[j]
    sm = np.where(np.abs(dm) <= tie_epsilon, 0, np.sign(dm))
    sh = np.sign(y[i] - y[j])
    return float(np.mean(sm == sh))
