"""Which differences between runs are real: paired comparisons of table cells over the same prompts, the
intervals of each run's rank, and the smallest difference a benchmark's prompts can detect.

A table's cell is written as the benchmark computes it, as a weighted sum of ratios of sums over the images
(:class:`CellFormulas`): a category's mean is the sum of its images' scores over their count, a mean over
categories weighs each category's ratio, a pooled mean of two axes sums both. Over the prompts, each ratio's
numerator and denominator are sums of per-prompt parts, so a resample of prompts (the unit every statistic
here resamples: a prompt keeps all its images, and in a pair both runs' images) is one matrix product of the
prompts' multiplicities with those parts: every resample of every run at once, in numpy.

- :func:`joint_bootstrap`: each run's cells over the same bootstrap resamples of the prompts (scipy's
  ``bootstrap``, the data being the prompts' indices), from which the paired differences' percentile intervals
  and the ranks' intervals are read;
- :func:`sign_flip_test`: the paired permutation test, each prompt's two runs swapped or not (as scipy's
  ``permutation_test`` with ``permutation_type="samples"``; exact when every flip can be enumerated);
- :func:`holm`: Holm's step-down adjustment of a family of p-values;
- :func:`rank_intervals`: the 2.5th and 97.5th percentiles of each run's rank over the resamples;
- :func:`influence`, :func:`min_detectable_difference`: a cell's per-prompt influence values (its
  linearisation) and, from the variance of their paired difference, the difference detectable with the
  given power at the given level: ``(z[1 - alpha/2] + z[power]) * sd(IF_a - IF_b) / sqrt(n)``;
  :func:`detectable_with_judge` the same with the judge's measured share of that variance taken apart.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

__all__ = ["CellFormulas", "formulas_from", "prompt_parts", "cell_values", "joint_bootstrap", "draw_flips",
           "sign_flip_test", "holm", "rank_intervals", "influence", "min_detectable_difference", "detectable_with_judge",
           "judge_noise",
           "rows_kendall_tau", "stratified_sample"]


@dataclass
class CellFormulas:
    """One run's cells of one table over prompts: ``num`` and ``den`` (prompts x terms) are each prompt's part
    of every term's numerator and denominator; ``weights`` (terms x cells) sums the terms' ratios into each
    cell. A cell whose term has nothing counted in a resample (a category left out of it) is NaN there."""

    num: np.ndarray
    den: np.ndarray
    weights: np.ndarray

    @property
    def prompts(self) -> int:
        return self.num.shape[0]


def prompt_parts(prompt_of: Sequence[int], values: Sequence[Sequence[Sequence[float]]], prompts: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``num`` and ``den`` (prompts x terms) from each image's pooled values of each term: ``values[t][i]`` the
    values image ``i`` adds to term ``t`` (none: the image is not in it), ``prompt_of[i]`` its prompt's index.
    The images of one prompt are summed into one part, so a resample keeps a prompt's images together."""
    terms = len(values)
    num, den = np.zeros((prompts, terms)), np.zeros((prompts, terms))
    idx = np.asarray(prompt_of, dtype=int)
    for t, per_image in enumerate(values):
        np.add.at(num[:, t], idx, [math.fsum(v) for v in per_image])
        np.add.at(den[:, t], idx, [len(v) for v in per_image])
    return num, den


def _ratios(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _combine(ratios: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The cells from the terms' ratios: a cell is NaN where a term it weighs is (and where the run has no such
    cell: its weights NaN), never because of a term it does not weigh."""
    used = (weights != 0).astype(float)
    missing = np.isnan(weights).any(axis=0)
    out = np.nan_to_num(ratios) @ np.nan_to_num(weights)
    out[(np.isnan(ratios).astype(float) @ used) > 0] = np.nan
    out[..., missing] = np.nan
    return out


def cell_values(f: CellFormulas, counts: np.ndarray | None = None) -> np.ndarray:
    """The cells (resamples x cells; one row without ``counts``) under each resample's multiplicities of the
    prompts (``counts``: resamples x prompts)."""
    if counts is None:
        return _combine(_ratios(f.num.sum(0), f.den.sum(0))[None, :], f.weights)
    return _combine(_ratios(counts @ f.num, counts @ f.den), f.weights)


def _counts(indices: np.ndarray, prompts: int) -> np.ndarray:
    """Each resample's multiplicity of each prompt, from the resampled indices (resamples x prompts)."""
    rows = indices.reshape(-1, indices.shape[-1])
    flat = (rows + prompts * np.arange(rows.shape[0])[:, None]).ravel()
    return np.bincount(flat, minlength=rows.shape[0] * prompts).reshape(rows.shape[0], prompts).astype(float)


def joint_bootstrap(runs: Sequence[CellFormulas], *, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """Every run's cells over the same bootstrap resamples of the prompts (runs x resamples x cells): scipy's
    ``bootstrap`` draws the prompts' indices (seeded), and each resample's cells of every run come from one
    matrix product with the prompts' multiplicities. The runs must be over the same prompts, in one order."""
    n = runs[0].prompts
    if any(r.prompts != n for r in runs):
        raise ValueError(f"the runs are not over the same prompts ({sorted({r.prompts for r in runs})} prompts)")
    cells = [r.weights.shape[1] for r in runs]
    if n < 2:
        raise ValueError("a bootstrap over prompts needs at least two prompts")

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        counts = _counts(np.asarray(idx, dtype=int), n)
        out = np.concatenate([cell_values(r, counts) for r in runs], axis=1)  # resamples x (runs x cells)
        return out.T.reshape(-1, *idx.shape[:-1])

    with warnings.catch_warnings():  # a cell undefined in some resample is NaN there, counted by the caller
        warnings.simplefilter("ignore")
        res = sps.bootstrap((np.arange(n),), statistic, vectorized=True, n_resamples=n_resamples,
                            method="percentile", rng=np.random.default_rng(seed))
    dist = np.asarray(res.bootstrap_distribution, dtype=float).reshape(sum(cells), n_resamples)
    return np.stack(np.split(dist, np.cumsum(cells)[:-1], axis=0)).transpose(0, 2, 1)


def draw_flips(n: int, n_resamples: int = 2000, seed: int = 0) -> tuple[np.ndarray, bool]:
    """Which of ``n`` prompts swap their two runs, one row per permutation, and whether that is every one of the
    2**n (when they are no more than ``n_resamples``: the exact test, as scipy) or ``n_resamples`` drawn at random
    (seeded). Drawn once, they serve every pair of runs over those prompts."""
    if n < 31 and 2 ** n <= n_resamples:
        return np.array(list(itertools.product((0.0, 1.0), repeat=n))), True
    return np.random.default_rng(seed).integers(0, 2, size=(n_resamples, n), dtype=np.int8).astype(float), False


def sign_flip_test(a: CellFormulas, b: CellFormulas, *, n_resamples: int = 2000, seed: int = 0,
                   flips: tuple[np.ndarray, bool] | None = None, batch: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's difference ``a - b`` and its two-sided p-value by the paired permutation test: under the
    null that the runs are exchangeable on each prompt, each prompt's two runs are swapped or not (all of a
    prompt's images together), the cells recomputed. The p-value is counted as scipy's ``permutation_test``
    counts it (``permutation_type="samples"``: ties within a relative 1e-14, one added to both counts of a
    randomised test, two-sided as twice the smaller tail). ``flips``: :func:`draw_flips`'s, drawn once for
    several pairs over the same prompts."""
    if a.num.shape != b.num.shape:
        raise ValueError("the two runs' cells are not over the same prompts and terms")
    observed = (cell_values(a) - cell_values(b))[0]
    terms = a.num.shape[1]
    delta = np.hstack([b.num - a.num, b.den - a.den])
    na, da, nb, db = a.num.sum(0), a.den.sum(0), b.num.sum(0), b.den.sum(0)
    flips, exact = flips if flips is not None else draw_flips(a.prompts, n_resamples, seed)
    if flips.shape[1] != a.prompts:
        raise ValueError(f"flips of {flips.shape[1]} prompts for runs over {a.prompts}")
    null = []
    for start in range(0, flips.shape[0], batch):  # bounded memory: a batch of permutations at a time
        g = flips[start:start + batch] @ delta
        gn, gd = g[:, :terms], g[:, terms:]
        null.append(_combine(_ratios(na + gn, da + gd), a.weights) - _combine(_ratios(nb - gn, db - gd), b.weights))
    null = np.concatenate(null)
    gamma = np.abs(1e-14 * observed)
    adjust = 0 if exact else 1
    count = null.shape[0]
    with np.errstate(invalid="ignore"):
        less = ((null <= observed + gamma).sum(0) + adjust) / (count + adjust)
        greater = ((null >= observed - gamma).sum(0) + adjust) / (count + adjust)
    p = np.minimum(2 * np.minimum(less, greater), 1.0)
    return observed, np.where(np.isfinite(observed), p, np.nan)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN left out of the family and kept NaN): the k-th smallest of m
    multiplied by m - k + 1, made non-decreasing, at most 1."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    kept = np.flatnonzero(np.isfinite(p))
    if kept.size:
        order = kept[np.argsort(p[kept], kind="stable")]
        m = order.size
        adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
        out[order] = adjusted
    return out


def rank_intervals(dist: np.ndarray, *, higher_is_better: bool = True, confidence: float = 0.95
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The low and high ends of each run's rank (1 best) over the resamples (``dist``: runs x resamples),
    the ``(1 - confidence)/2`` and ``(1 + confidence)/2`` quantiles of its rank, ties sharing the best of
    their ranks ("min"); a resample where some run has no value is left out. Integers, as ranks are."""
    kept = dist[:, np.all(np.isfinite(dist), axis=0)]
    if kept.shape[1] == 0:
        nan = np.full(dist.shape[0], np.nan)
        return nan, nan
    ranks = sps.rankdata(-kept if higher_is_better else kept, method="min", axis=0)
    alpha = (1 - confidence) / 2
    low = np.quantile(ranks, alpha, axis=1, method="inverted_cdf")
    high = np.quantile(ranks, 1 - alpha, axis=1, method="inverted_cdf")
    return low, high


def influence(f: CellFormulas) -> np.ndarray:
    """Each prompt's influence on each cell (prompts x cells): the cell's linearisation, so that the cell over
    a resample is about its value plus the mean of the influences weighted by the multiplicities (less one).
    For a plain mean it is each prompt's score less the mean."""
    n = f.prompts
    num, den = f.num.sum(0), f.den.sum(0)
    ratio = _ratios(num, den)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_term = n * (f.num - ratio * f.den) / np.where(den > 0, den, np.nan)
    return np.nan_to_num(per_term) @ np.nan_to_num(f.weights)


def min_detectable_difference(a: CellFormulas, b: CellFormulas | None = None, *, alpha: float = 0.05,
                              power: float = 0.8) -> np.ndarray:
    """Per cell, the smallest true difference between two runs over these prompts that a two-sided test at
    ``alpha`` detects with probability ``power``: ``(z[1 - alpha/2] + z[power]) * sd(d) / sqrt(n)``, ``d`` each
    prompt's difference of the two runs' influence values (:func:`influence`), ``n`` the prompts. With one
    run, the other is taken as independent and alike: ``sd(d) = sqrt(2) * sd(IF_a)``."""
    n = a.prompts
    if n < 2:
        return np.full(a.weights.shape[1], np.nan)
    return _z(alpha, power) * np.sqrt(_paired_variances(a, b)[2]) / math.sqrt(n)


def _z(alpha: float, power: float) -> float:
    return sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)


def _paired_variances(a: CellFormulas, b: CellFormulas | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cell, the variances over prompts of ``a``'s and ``b``'s influence values and of their difference ``d``
    (``b`` None: an independent run alike, ``var(d) = 2 var(IF_a)``)."""
    ia = influence(a)
    va = ia.var(axis=0, ddof=1)
    if b is None:
        return va, va, 2 * va
    ib = influence(b)
    return va, ib.var(axis=0, ddof=1), (ia - ib).var(axis=0, ddof=1)


def detectable_with_judge(a: CellFormulas, b: CellFormulas | None = None, *, shares: tuple[float, float] = (0, 0),
                          repeats: tuple[int, int] = (1, 1), alpha: float = 0.05, power: float = 0.8
                          ) -> dict[str, np.ndarray]:
    """:func:`min_detectable_difference` with the judge's measured noise taken apart, per cell. Each run's
    scores are single draws of a noisy judge, so ``var(d)`` already holds the judge's variance once per run:
    ``J = s_a var(IF_a) + s_b var(IF_b)``, ``s`` a run's judge share (:func:`judge_noise`: the variance between
    repeats of one image over the scores' whole variance; 0 where unmeasured), taken as the same share of its
    per-prompt influence as of its images' scores (exact for a plain mean of one image per prompt). Returns
    ``mdd`` (as :func:`min_detectable_difference`), ``judge_part`` ``J / var(d)`` (at most 1), ``mdd_repeats``:
    with each image scored by the mean of its run's ``K`` replies (``repeats``), the judge's variance divided by
    ``K``, ``var'(d) = var(d) - (1 - 1/K_a) s_a var(IF_a) - (1 - 1/K_b) s_b var(IF_b)``, and ``mdd_noiseless``:
    a judge without noise, ``var(d) - J``. With one run (``b`` None), ``b`` is ``a`` again, independent."""
    n = a.prompts
    va, vb, vd = _paired_variances(a, b)
    sb, kb = (shares[0], repeats[0]) if b is None else (shares[1], repeats[1])
    ja, jb = shares[0] * va, sb * vb
    judge = np.minimum(ja + jb, vd)  # the judge cannot be more of d's variance than all of it
    scale = _z(alpha, power) / math.sqrt(n) if n >= 2 else math.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        part = np.where(vd > 0, judge / vd, np.nan)
        reduced = np.clip(vd - (1 - 1 / repeats[0]) * ja - (1 - 1 / kb) * jb, vd - judge, None)
    return {"mdd": scale * np.sqrt(vd), "judge_part": part, "mdd_repeats": scale * np.sqrt(reduced),
            "mdd_noiseless": scale * np.sqrt(vd - judge)}


def formulas_from(terms: Mapping[str, Sequence[Sequence[float]]], cells: Mapping[str, Mapping[str, float]],
                  prompt_of: Sequence[int], prompts: int, columns: Sequence[str], names: Sequence[str]
                  ) -> CellFormulas:
    """A :class:`CellFormulas` over shared ``names`` (terms) and ``columns`` (cells) from one run's ``terms``
    (name -> each image's pooled values) and ``cells`` (column -> {term name: weight}): a term or cell the run
    lacks is empty (its cells NaN), so that runs compared share one layout."""
    empty = [()] * len(prompt_of)
    num, den = prompt_parts(prompt_of, [terms.get(t, empty) for t in names], prompts)
    weights = np.zeros((len(names), len(columns)))
    at = {t: i for i, t in enumerate(names)}
    for j, column in enumerate(columns):
        formula = cells.get(column)
        if formula is None:
            weights[:, j] = np.nan
            continue
        for t, w in formula.items():
            weights[at[t], j] = w
    return CellFormulas(num, den, weights)


def judge_noise(scores: np.ndarray | Sequence[Sequence[float | None]]) -> dict[str, float | int]:
    """A sampled judge's own noise from ``scores`` (images x repeats; an image with a missing repeat left out):
    one-way random effects over images, the repeats of an image its group. ``within`` is the variance between
    repeats of one image (the mean square within, MSW), ``between`` the variance of the images' true scores
    (``(MSB - MSW) / K``, at least 0; MSB is ``K`` times the variance of the images' means), ``judge_share``
    ``within / (within + between)``; ``widening`` how much wider the run's interval is, from one reply per image,
    than a noiseless judge's (``sqrt((between + within) / between)``); ``disagreeing`` the share of images whose
    repeats are not all equal, ``mean_sd`` the mean over images of the repeats' standard deviation."""
    x = np.asarray([[np.nan if v is None else v for v in row] for row in scores], dtype=float) \
        if not isinstance(scores, np.ndarray) else scores.astype(float)
    x = x[np.all(np.isfinite(x), axis=1)] if x.ndim == 2 else np.empty((0, 0))
    n, k = x.shape if x.size else (0, 0)
    if n < 2 or k < 2:
        return {"images": int(n), "repeats": int(k)}
    msw = float(x.var(axis=1, ddof=1).mean())
    msb = float(k * x.mean(axis=1).var(ddof=1))
    between = max(0.0, (msb - msw) / k)
    total = between + msw
    return {"images": int(n), "repeats": int(k), "within": msw, "between": between,
            "judge_share": msw / total if total > 0 else math.nan,
            "widening": math.sqrt(total / between) if between > 0 else math.inf,
            "disagreeing": float(np.mean(np.ptp(x, axis=1) > 0)), "mean_sd": float(x.std(axis=1, ddof=1).mean()),
            "f": msb / msw if msw > 0 else math.inf}


def rows_kendall_tau(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of ``x`` against the same row of ``y`` at once (NaN where a row is all ties):
    the runs' order under two judges, one resample a row."""
    from .stats import _kendall_tau_rows

    return _kendall_tau_rows(np.asarray(x, dtype=float), np.asarray(y, dtype=float))


def stratified_sample(strata: Sequence[Any], n: int, seed: int = 0) -> list[int]:
    """``n`` of the items (their indices, in the items' order) drawn without replacement, each stratum (an
    item's category) given its share of ``n`` by largest remainder (``n * size / total``, rounded so that the
    shares sum to ``n``), the items within a stratum drawn at random (seeded)."""
    total = len(strata)
    if not 1 <= n <= total:
        raise ValueError(f"a sample of {n} from {total} items: it must be between 1 and {total}")
    groups: dict[Any, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    exact = {s: n * len(idx) / total for s, idx in groups.items()}
    take = {s: int(math.floor(v)) for s, v in exact.items()}
    for s in sorted(groups, key=lambda s: (-(exact[s] - take[s]), list(groups).index(s)))[: n - sum(take.values())]:
        take[s] += 1
    rng = np.random.default_rng(seed)
    chosen = [i for s, idx in groups.items() for i in rng.choice(idx, size=take[s], replace=False).tolist()]
    return sorted(chosen)
