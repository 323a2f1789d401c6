"""Statistics the papers report: means with standard errors and confidence
intervals, rank correlations and pairwise accuracy against human ratings."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy import stats as sps

__all__ = ["summarize", "Bootstrap", "bootstrap", "bootstrap_ci", "paired_bootstrap", "paired_bootstrap_ci", "mean_se",
           "kendall_tau", "spearman_rho", "pairwise_accuracy"]


class Bootstrap(NamedTuple):
    """A percentile bootstrap interval, and how many resamples had no statistic (``degenerate``: a correlation
    over a resample whose values are all equal) and were dropped from it, of ``resamples`` drawn."""

    low: float
    high: float
    degenerate: int = 0
    resamples: int = 0


def _interval(res: Any, confidence: float, resamples: int) -> Bootstrap:
    """scipy's percentile interval, over the resamples that have a statistic: a degenerate resample (NaN) is
    dropped and counted, rather than making the whole interval NaN; NaN when none has one."""
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    kept = np.isfinite(dist)
    dropped = int(dist.size - kept.sum())
    if not dropped:  # scipy's own interval, to the last bit
        return Bootstrap(float(res.confidence_interval.low), float(res.confidence_interval.high), 0, resamples)
    if not kept.any():
        return Bootstrap(math.nan, math.nan, dropped, resamples)
    alpha = (1 - confidence) / 2
    low, high = sps.quantile(dist[kept], np.asarray([alpha, 1 - alpha]))  # as scipy.stats.bootstrap reads them
    return Bootstrap(float(low), float(high), dropped, resamples)


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


#: the most resampled values a bootstrap holds at once (with their indices: 1 MB)
_BOOTSTRAP_CELLS = 65_536


def bootstrap(
    values: Sequence[float | None],
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Bootstrap:
    """Percentile bootstrap confidence interval of ``statistic`` (seeded, so reproducible), the resamples
    where ``statistic`` is not defined (NaN) dropped and counted (:class:`Bootstrap`)."""
    x = _finite(values)
    if x.size < 2:
        return Bootstrap(math.nan, math.nan)
    if np.all(x == x[0]):  # no spread: the interval is the point
        v = float(statistic(x))
        return Bootstrap(v, v, 0, n_resamples)
    with warnings.catch_warnings():  # a degenerate resample is dropped and counted, not warned about
        warnings.simplefilter("ignore")
        # in batches of at most _BOOTSTRAP_CELLS values: all resamples at once held 2,000 x n indices and values,
        # 31 KB an image at the end of an evaluation (issue 51); the intervals are the same to the last bit
        res = sps.bootstrap((x,), lambda s, axis=-1: np.apply_along_axis(statistic, axis, s),
                            confidence_level=confidence, n_resamples=n_resamples,
                            method="percentile", rng=np.random.default_rng(seed), vectorized=True,
                            batch=max(1, min(n_resamples, _BOOTSTRAP_CELLS // x.size)))
    return _interval(res, confidence, n_resamples)


def bootstrap_ci(
    values: Sequence[float | None],
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``statistic`` (seeded, so reproducible): :func:`bootstrap`'s
    (low, high)."""
    low, high, _, _ = bootstrap(values, statistic, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return low, high


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


def _kendall_tau_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair at once: over ordered pairs, the sum of sign products over the
    square root of the untied counts (each doubled, which cancels); NaN where a row is all ties."""
    dx = np.sign(x[..., :, None] - x[..., None, :])
    dy = np.sign(y[..., :, None] - y[..., None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dx * dy).sum(axis=(-2, -1)) / np.sqrt(np.abs(dx).sum(axis=(-2, -1)) * np.abs(dy).sum(axis=(-2, -1)))


def _spearman_rho_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair at once: Pearson's r of the average ranks."""
    rx, ry = sps.rankdata(x, axis=-1), sps.rankdata(y, axis=-1)
    rx, ry = rx - rx.mean(axis=-1, keepdims=True), ry - ry.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=-1) / np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))


_PAIRED = {"kendall_tau": _kendall_tau_rows, "spearman_rho": _spearman_rho_rows}


def paired_bootstrap(a: Sequence[float], b: Sequence[float], statistic: str = "kendall_tau", *,
                     confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Bootstrap:
    """Percentile bootstrap interval of Kendall's tau-b (``"kendall_tau"``) or Spearman's rho
    (``"spearman_rho"``) between ``a`` and ``b``, the pairs resampled together (seeded). Every resample
    is computed at once where that is faster (a correlation per resample takes seconds). A resample with no
    statistic (its scores, or its ratings, all equal) is dropped from the interval and counted
    (:attr:`Bootstrap.degenerate`); NaN when fewer than three pairs, or when no resample has a statistic."""
    x, y = _paired(a, b)
    if x.size < 3:
        return Bootstrap(math.nan, math.nan)
    rows = _PAIRED[statistic]
    # tau-b at once is O(n^2) a resample: past a few hundred pairs scipy's O(n log n), one resample at a time, is faster
    at_once = statistic != "kendall_tau" or x.size <= 200
    with warnings.catch_warnings():  # a degenerate resample is dropped and counted, not warned about
        warnings.simplefilter("ignore")
        res = sps.bootstrap((x, y), (lambda u, v, axis=-1: rows(u, v)) if at_once else
                            (lambda u, v: float(sps.kendalltau(u, v).statistic)), paired=True, vectorized=at_once,
                            batch=max(1, 4_000_000 // x.size ** 2), n_resamples=n_resamples,
                            confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    return _interval(res, confidence, n_resamples)


def paired_bootstrap_ci(a: Sequence[float], b: Sequence[float], statistic: str = "kendall_tau", *,
                        confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """:func:`paired_bootstrap`'s (low, high)."""
    low, high, _, _ = paired_bootstrap(a, b, statistic, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return low, high
