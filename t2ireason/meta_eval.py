"""Meta-evaluation: how well a metric (or a judge) agrees with humans, or with another judge.

Three forms, each the one a seed paper reports:

- :func:`human_correlation`: per-image metric scores against human ratings
  (the mean of several raters), by Kendall's τ, Spearman's ρ and pairwise
  accuracy with ties, pooled and per group (T2I-ReasonBench Table 1 reports
  τ and ρ per dimension and their average; PRISM-Bench Table 3 per track).
- :func:`preference_agreement`: humans compared two images of one prompt and
  chose A, B or a tie (R2I-Bench, section 4.3 and appendices B.2 and B.5);
  the metric's verdict is the sign of its score difference. Pairwise accuracy
  is the share of prompts on which the verdicts match; τ and ρ correlate the
  human verdict (+1 A, 0 tie, -1 B) with the metric's margin score_A - score_B.
- :func:`judge_agreement`: two judges' per-image scores keyed by image id,
  correlated per image and per model (PRISM-Bench Table 3 correlates GPT-4.1
  and Qwen2.5-VL over the average scores of the 19 models, per track).

Pairs where either side is missing (None or NaN: a failed judgement) are left
out of the statistics and counted in ``n_excluded``, never scored as zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .stats import kendall_tau, pairwise_accuracy, spearman_rho

__all__ = [
    "CHOICES", "calibrated_pairwise_accuracy", "human_correlation", "preference_verdicts",
    "pairwise_preference_accuracy", "preference_agreement", "judge_agreement", "headline",
]

#: human choices in the preference form -> verdict (+1: A better, -1: B better, 0: tie)
CHOICES = {"A": 1, "B": -1, "tie": 0}
_CHOICE_KEYS = {k.lower(): v for k, v in CHOICES.items()}


def _floats(values: Sequence[float | None], name: str) -> np.ndarray:
    try:
        return np.asarray([math.nan if v is None else float(v) for v in values], dtype=float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be numbers (None for a failure): {e}") from None


def _same_length(**seqs: Sequence[Any] | None) -> int:
    lengths = {k: len(v) for k, v in seqs.items() if v is not None}
    if len(set(lengths.values())) > 1:
        raise ValueError("inputs differ in length: " + ", ".join(f"{k}={n}" for k, n in lengths.items()))
    return next(iter(lengths.values()))


def _best_tie_threshold(margin: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    """Tie calibration (Deutsch et al., 2023): the threshold ε under which the
    metric's margins count as ties that maximises agreement with the human
    verdicts ``human`` (-1, 0, +1). Returns (accuracy, ε)."""
    n = margin.size
    if n == 0:
        return math.nan, math.nan
    size = np.abs(margin)
    order = np.argsort(size, kind="stable")
    size, margin, human = size[order], margin[order], human[order]
    # With the first k pairs (smallest |margin|) called ties, the agreements are the
    # human ties among them plus the rest whose signs match.
    tie_hits = np.concatenate([[0], np.cumsum(human == 0)])
    sign_hits = (np.sign(margin) == human) & (human != 0)
    sign_after = sign_hits.sum() - np.concatenate([[0], np.cumsum(sign_hits)])
    correct = tie_hits + sign_after
    # k must end a run of equal |margin| (ε cannot split equal margins) and cover exact zeros.
    ends = np.concatenate([[0], np.flatnonzero(np.diff(size) > 0) + 1, [n]])
    ends = ends[ends >= np.count_nonzero(size == 0)]
    best = ends[np.argmax(correct[ends])]
    return float(correct[best] / n), float(size[best - 1]) if best > 0 else 0.0


def calibrated_pairwise_accuracy(metric: Sequence[float], human: Sequence[float]) -> tuple[float, float]:
    """Pairwise accuracy over all item pairs with the tie threshold chosen to
    maximise it (Deutsch et al., 2023). Returns (accuracy, ε)."""
    x, y = _floats(metric, "metric scores"), _floats(human, "human scores")
    _same_length(metric=x, human=y)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if x.size < 2:
        return math.nan, math.nan
    i, j = np.triu_indices(x.size, k=1)
    return _best_tie_threshold(x[i] - x[j], np.sign(y[i] - y[j]))


def _correlations(x: np.ndarray, y: np.ndarray, tie_epsilon: float | str) -> dict[str, Any]:
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    out: dict[str, Any] = {"kendall_tau": math.nan, "spearman_rho": math.nan, "pairwise_accuracy": math.nan,
                           "n": int(x.size), "n_excluded": int((~keep).sum())}
    if x.size >= 2:
        out["kendall_tau"] = kendall_tau(x, y)
        out["spearman_rho"] = spearman_rho(x, y)
        if tie_epsilon == "calibrated":
            out["pairwise_accuracy"], out["tie_epsilon"] = calibrated_pairwise_accuracy(x, y)
        else:
            out["pairwise_accuracy"] = pairwise_accuracy(x, y, tie_epsilon=float(tie_epsilon))
    return out


def _macro(per: Mapping[str, dict[str, Any]], keys: Sequence[str]) -> dict[str, float]:
    """The mean of each figure over the groups (NaN groups left out), as the papers' "Average" columns."""
    out = {}
    for k in keys:
        vals = [p[k] for p in per.values() if not math.isnan(p[k])]
        out[k] = float(np.mean(vals)) if vals else math.nan
    return out


def _by_group(fn, groups: Sequence[Any] | None, *columns: np.ndarray) -> dict[str, Any]:
    """``fn`` over all items, and per group with the macro average of each figure."""
    out = fn(*columns)
    if groups is not None:
        labels = np.asarray([str(g) for g in groups])
        per = {g: fn(*(c[labels == g] for c in columns)) for g in dict.fromkeys(labels.tolist())}
        out["per_group"] = per
        keys = [k for k, v in out.items() if isinstance(v, float) and k != "tie_epsilon"]
        out["group_average"] = _macro(per, keys)
    return out


def human_correlation(metric: Sequence[float | None], human: Sequence[float | None], *,
                      groups: Sequence[Any] | None = None, tie_epsilon: float | str = 0.0) -> dict[str, Any]:
    """Kendall's τ-b, Spearman's ρ and pairwise accuracy (ties included) between
    per-image metric scores and human ratings, pooled and per group.

    ``tie_epsilon``: metric scores closer than this count as tied in pairwise
    accuracy; ``"calibrated"`` picks the best threshold (Deutsch et al., 2023)
    and reports it as ``tie_epsilon``.
    """
    _same_length(metric=metric, human=human, groups=groups)
    return _by_group(lambda x, y: _correlations(x, y, tie_epsilon), groups,
                     _floats(metric, "metric scores"), _floats(human, "human ratings"))


def _choices(human_choice: Sequence[str]) -> np.ndarray:
    out = []
    for i, c in enumerate(human_choice):
        key = str(c).strip().lower()
        if key not in _CHOICE_KEYS:
            raise ValueError(f"human_choice[{i}] is {c!r}; choose 'A', 'B' or 'tie'")
        out.append(_CHOICE_KEYS[key])
    return np.asarray(out, dtype=float)


def preference_verdicts(metric_a: Sequence[float | None], metric_b: Sequence[float | None], *,
                        tie_epsilon: float = 0.0) -> list[int | None]:
    """The metric's choice per prompt: +1 (A scored higher), -1 (B), 0 (within
    ``tie_epsilon``: a tie), None where a score is missing."""
    _same_length(metric_a=metric_a, metric_b=metric_b)
    margin = _floats(metric_a, "metric_a") - _floats(metric_b, "metric_b")
    return [None if math.isnan(m) else 0 if abs(m) <= tie_epsilon else int(np.sign(m)) for m in margin]


def _preference(margin: np.ndarray, human: np.ndarray, tie_epsilon: float | str) -> dict[str, Any]:
    keep = ~np.isnan(margin)
    margin, human = margin[keep], human[keep]
    out: dict[str, Any] = {"pairwise_accuracy": math.nan, "kendall_tau": math.nan, "spearman_rho": math.nan,
                           "n": int(margin.size), "n_excluded": int((~keep).sum()),
                           "human_choices": {k: int((human == v).sum()) for k, v in CHOICES.items()}}
    if margin.size == 0:
        return out
    if tie_epsilon == "calibrated":
        out["pairwise_accuracy"], out["tie_epsilon"] = _best_tie_threshold(margin, human)
    else:
        verdict = np.where(np.abs(margin) <= float(tie_epsilon), 0, np.sign(margin))
        out["pairwise_accuracy"] = float(np.mean(verdict == human))
    if margin.size >= 2:
        out["kendall_tau"] = kendall_tau(margin, human)
        out["spearman_rho"] = spearman_rho(margin, human)
    return out


def pairwise_preference_accuracy(metric_a: Sequence[float | None], metric_b: Sequence[float | None],
                                 human_choice: Sequence[str], *, tie_epsilon: float = 0.0) -> float:
    """Share of prompts where the metric's choice (A, B, or a tie within
    ``tie_epsilon``) is the human's. Prompts with a missing score are left out."""
    return preference_agreement(metric_a, metric_b, human_choice, tie_epsilon=tie_epsilon)["pairwise_accuracy"]


def preference_agreement(metric_a: Sequence[float | None], metric_b: Sequence[float | None],
                         human_choice: Sequence[str], *, groups: Sequence[Any] | None = None,
                         tie_epsilon: float | str = 0.0) -> dict[str, Any]:
    """R2I-Bench's human study: the metric scored images A and B of each prompt,
    humans chose 'A', 'B' or 'tie'. Pairwise accuracy, and Kendall's τ-b and
    Spearman's ρ between the human verdict and the metric's margin A - B,
    pooled and per group (category)."""
    _same_length(metric_a=metric_a, metric_b=metric_b, human_choice=human_choice, groups=groups)
    margin = _floats(metric_a, "metric_a") - _floats(metric_b, "metric_b")
    return _by_group(lambda m, h: _preference(m, h, tie_epsilon), groups, margin, _choices(human_choice))


def _keyed(scores: Mapping[str, float | None] | Sequence[float | None]) -> dict[str, float | None]:
    return {str(k): v for k, v in scores.items()} if isinstance(scores, Mapping) else \
        {str(i): v for i, v in enumerate(scores)}


def _label(labels: Mapping[str, Any] | Sequence[Any] | None, ids: list[str], what: str) -> list[str] | None:
    if labels is None:
        return None
    table = _keyed(labels)
    missing = [i for i in ids if i not in table]
    if missing:
        raise ValueError(f"{what} has no entry for image id(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    return [str(table[i]) for i in ids]


def judge_agreement(scores_a: Mapping[str, float | None] | Sequence[float | None],
                    scores_b: Mapping[str, float | None] | Sequence[float | None], *,
                    models: Mapping[str, Any] | Sequence[Any] | None = None,
                    groups: Mapping[str, Any] | Sequence[Any] | None = None) -> dict[str, Any]:
    """Agreement between two judges' per-image scores.

    ``scores_a`` and ``scores_b`` map image ids to scores (or are lists aligned
    by position); images present in only one are listed, not guessed. ``models``
    and ``groups`` give each image's T2I model and group (track, category), by
    id or by position. Returns Kendall's τ-b and Spearman's ρ:

    - ``image``: over the images both judges scored (pooled, and per group);
    - ``model`` (with ``models``): over the models' mean scores, per group and
      pooled, which is PRISM-Bench Table 3's "GPT4.1 vs. Qwen2.5-VL" row.
    """
    a, b = _keyed(scores_a), _keyed(scores_b)
    ids = [i for i in a if i in b]
    out: dict[str, Any] = {"n_shared": len(ids), "only_in_a": sorted(set(a) - set(b)),
                           "only_in_b": sorted(set(b) - set(a))}
    if not ids:
        raise ValueError("the two judges scored no image in common (compare their ids)")
    x = _floats([a[i] for i in ids], "scores_a")
    y = _floats([b[i] for i in ids], "scores_b")
    group_of = _label(groups, ids, "groups")
    model_of = _label(models, ids, "models")

    def corr(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        c = _correlations(x, y, 0.0)
        return {k: c[k] for k in ("kendall_tau", "spearman_rho", "n", "n_excluded")}

    out["image"] = _by_group(corr, group_of, x, y)
    if model_of is not None:
        def model_means(sel: np.ndarray) -> dict[str, Any]:
            sums: dict[str, list[list[float]]] = defaultdict(lambda: [[], []])
            for m, xi, yi in zip(np.asarray(model_of)[sel].tolist(), x[sel], y[sel]):
                if not (math.isnan(xi) or math.isnan(yi)):  # a model's mean over images both judged
                    sums[m][0].append(xi)
                    sums[m][1].append(yi)
            names = sorted(sums)
            mx = np.asarray([np.mean(sums[m][0]) for m in names])
            my = np.asarray([np.mean(sums[m][1]) for m in names])
            c = corr(mx, my)
            return {"kendall_tau": c["kendall_tau"], "spearman_rho": c["spearman_rho"], "n_models": len(names),
                    "means_a": dict(zip(names, mx.tolist())), "means_b": dict(zip(names, my.tolist()))}

        everything = np.ones(len(ids), dtype=bool)
        out["model"] = model_means(everything)
        if group_of is not None:
            labels = np.asarray(group_of)
            per = {g: model_means(labels == g) for g in dict.fromkeys(group_of)}
            out["model"]["per_group"] = per
            out["model"]["group_average"] = _macro(per, ("kendall_tau", "spearman_rho"))
    return out


def headline(figures: Mapping[str, Any], config: str) -> float | None:
    """The figure a meta-evaluation leads with: Kendall's tau-b against human ratings (T2I-ReasonBench
    Table 1, PRISM-Bench Table 3), pairwise accuracy against human A/B/tie choices (R2I-Bench Table 4),
    the per-image Kendall's tau-b between two judges (PRISM-Bench Table 3)."""
    if config == "preference":
        return figures["pairwise_accuracy"]
    return figures["image"]["kendall_tau"] if config == "judges" else figures["kendall_tau"]
