"""Statistics against hand-computed values and scipy."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from t2ireason.stats import bootstrap_ci, kendall_tau, mean_se, pairwise_accuracy, spearman_rho, summarize


def test_mean_se_by_hand():
    mean, se = mean_se([1, 2, 3, 4])
    # sample sd = sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3) = sqrt(5/3); se = sd / 2
    assert mean == 2.5 and se == pytest.approx(math.sqrt(5 / 3) / 2)
    assert mean_se([None, 4.0, float("nan"), 6.0]) == (5.0, pytest.approx(1.0))
    m, s = mean_se([3.0])
    assert m == 3.0 and math.isnan(s)
    assert all(math.isnan(v) for v in mean_se([None, None]))


def test_kendall_tau_b_with_ties_by_hand():
    # pairs: 3 concordant, 1 discordant, 1 tied in x only, 1 tied in y only
    # tau-b = (3 - 1) / sqrt((6 - 1) * (6 - 1)) = 0.4
    x, y = [1, 2, 2, 3], [1, 3, 2, 2]
    assert kendall_tau(x, y) == pytest.approx(0.4)
    assert kendall_tau(x, y) == pytest.approx(sps.kendalltau(x, y).statistic)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_spearman_by_hand_and_against_scipy():
    # no ties: rho = 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 6 * 4 / 120 = 0.8
    assert spearman_rho([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 40), rng.integers(0, 4, 40)  # many ties
    assert spearman_rho(a, b) == pytest.approx(sps.spearmanr(a, b).statistic)
    assert kendall_tau(a, b) == pytest.approx(sps.kendalltau(a, b).statistic)


def test_correlations_drop_unpaired_failures():
    x = [1, 2, float("nan"), 3, 4]
    y = [1, 2, 100, 4, 3]
    assert kendall_tau(x, y) == pytest.approx(sps.kendalltau([1, 2, 3, 4], [1, 2, 4, 3]).statistic)
    assert spearman_rho([1, None, 2, 3], [1, 5, 2, 3]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="paired scores, got 3 and 2"):
        kendall_tau([1, 2, 3], [1, 2])


def test_pairwise_accuracy_with_ties_by_hand():
    human = [1, 2, 2, 3]
    # all six pairs agree, including the human tie (1, 2) that the metric also ties
    assert pairwise_accuracy([0.1, 0.2, 0.2, 0.9], human) == 1.0
    # the metric separates the human tie: 5 of 6 pairs
    assert pairwise_accuracy([0.1, 0.2, 0.21, 0.9], human) == pytest.approx(5 / 6)
    # ... unless differences within tie_epsilon count as ties
    assert pairwise_accuracy([0.1, 0.2, 0.21, 0.9], human, tie_epsilon=0.02) == 1.0
    # a huge epsilon ties everything: only the one human tie agrees
    assert pairwise_accuracy([0.1, 0.2, 0.21, 0.9], human, tie_epsilon=1.0) == pytest.approx(1 / 6)
    # reversed order: only the tie agrees
    assert pairwise_accuracy([0.9, 0.5, 0.5, 0.1], human) == pytest.approx(1 / 6)
    assert math.isnan(pairwise_accuracy([1.0], [1.0]))


def test_pairwise_accuracy_against_a_loop():
    rng = np.random.default_rng(1)
    m, h = rng.integers(0, 5, 25) / 4, rng.integers(0, 3, 25)
    eps = 0.25

    def sign(v, e=0.0):
        return 0 if abs(v) <= e else (1 if v > 0 else -1)

    pairs = [(i, j) for i in range(25) for j in range(i + 1, 25)]
    expected = sum(sign(m[i] - m[j], eps) == sign(h[i] - h[j]) for i, j in pairs) / len(pairs)
    assert pairwise_accuracy(m, h, tie_epsilon=eps) == pytest.approx(expected)


def test_bootstrap_ci_is_seeded_and_matches_scipy():
    x = np.random.default_rng(2).normal(1.0, 1.0, 40)
    lo, hi = bootstrap_ci(x, seed=7)
    assert (lo, hi) == bootstrap_ci(list(x), seed=7)
    assert (lo, hi) != bootstrap_ci(x, seed=8)
    assert lo < x.mean() < hi
    ref = sps.bootstrap((x,), np.mean, n_resamples=2000, method="percentile",
                        rng=np.random.default_rng(7)).confidence_interval
    assert (lo, hi) == pytest.approx((ref.low, ref.high))
    # wider when asked for more confidence; a statistic other than the mean works
    lo99, hi99 = bootstrap_ci(x, confidence=0.99, seed=7)
    assert lo99 < lo and hi99 > hi
    mlo, mhi = bootstrap_ci(x, np.median, seed=7)
    assert mlo < np.median(x) < mhi


def test_bootstrap_ci_degenerate_inputs():
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert all(math.isnan(v) for v in bootstrap_ci([1.0]))
    assert all(math.isnan(v) for v in bootstrap_ci([None, None]))


def test_summarize_counts_failures_and_scales():
    values = [1.0, None, 0.0, float("nan"), 1.0, 1.0]
    s = summarize(values, scale=100, seed=0)
    assert (s["n"], s["failed"]) == (4, 2)
    assert s["mean"] == pytest.approx(75.0)
    assert s["se"] == pytest.approx(100 * np.std([1, 0, 1, 1], ddof=1) / 2)
    z = sps.norm.ppf(0.975)
    assert s["normal_ci_low"] == pytest.approx(s["mean"] - z * s["se"])
    assert s["normal_ci_high"] == pytest.approx(s["mean"] + z * s["se"])
    assert s["ci_low"] <= s["mean"] <= s["ci_high"]
    assert summarize(values, seed=0)["ci_low"] * 100 == pytest.approx(s["ci_low"])


def test_summarize_all_failed():
    s = summarize([None, None])
    assert (s["n"], s["failed"]) == (0, 2) and math.isnan(s["mean"]) and math.isnan(s["ci_low"])


@pytest.mark.parametrize("n", [12, 250])  # every resample at once, and (past 200 pairs) tau-b one by one
def test_paired_bootstrap_ci_is_the_bootstrap_of_scipys_statistics(n):
    from t2ireason.stats import _kendall_tau_rows, _spearman_rho_rows, paired_bootstrap_ci

    rng = np.random.default_rng(1)
    rows_x, rows_y = rng.integers(0, 4, (20, 15)).astype(float), rng.integers(0, 5, (20, 15)).astype(float)
    for i in range(20):  # ties included
        assert _kendall_tau_rows(rows_x, rows_y)[i] == pytest.approx(sps.kendalltau(rows_x[i], rows_y[i]).statistic)
        assert _spearman_rho_rows(rows_x, rows_y)[i] == pytest.approx(sps.spearmanr(rows_x[i], rows_y[i]).statistic)
    x = rng.normal(size=n)
    y = np.round(x + rng.normal(0, 1.5, n))  # ties in y
    for name, fn in (("kendall_tau", kendall_tau), ("spearman_rho", spearman_rho)):
        # the same resamples as bootstrap_ci over the pairs' indices, one statistic at a time
        one_by_one = bootstrap_ci(np.arange(n), lambda idx, fn=fn: fn(x[idx.astype(int)], y[idx.astype(int)]))
        assert paired_bootstrap_ci(x, y, name) == pytest.approx(one_by_one)
        low, high = one_by_one
        assert low < fn(x, y) < high
    assert all(math.isnan(v) for v in paired_bootstrap_ci([1, 2], [2, 1]))  # fewer than three pairs
    assert all(math.isnan(v) for v in paired_bootstrap_ci([1, 1, 1, 1], [1, 2, 3, 4]))  # no statistic at all


def test_a_degenerate_resample_is_dropped_and_counted_and_the_interval_kept():
    """As found: 1 of 2,000 resamples with all its ratings equal (tau undefined) made the whole interval NaN, and
    nothing said so. Now it is dropped, counted, and the interval is the percentile interval of the others."""
    from t2ireason.stats import paired_bootstrap, paired_bootstrap_ci

    x, y = np.arange(12, dtype=float), np.asarray([0.0, 1.0] * 6)  # a resample of one y value in 2,048 or so
    with pytest.warns(sps.DegenerateDataWarning):
        res = sps.bootstrap((x, y), lambda u, v: sps.kendalltau(u, v).statistic, paired=True, vectorized=False,
                            n_resamples=2000, method="percentile", rng=np.random.default_rng(2))
    dist = res.bootstrap_distribution
    assert np.isnan(dist).sum() == 1 and math.isnan(res.confidence_interval.low)  # scipy's own interval: lost
    found = paired_bootstrap(x, y, "kendall_tau", seed=2)
    assert (found.degenerate, found.resamples) == (1, 2000)
    kept = dist[~np.isnan(dist)]
    assert (found.low, found.high) == pytest.approx(tuple(np.percentile(kept, [2.5, 97.5])))
    assert paired_bootstrap_ci(x, y, "kendall_tau", seed=2) == (found.low, found.high)
    # without a degenerate resample, scipy's interval to the last bit, and nothing counted
    z = x + np.random.default_rng(0).normal(0, 3, 12)
    clean = paired_bootstrap(x, z, "spearman_rho", seed=2)
    ref = sps.bootstrap((x, z), lambda u, v: sps.spearmanr(u, v).statistic, paired=True, vectorized=False,
                        n_resamples=2000, method="percentile", rng=np.random.default_rng(2)).confidence_interval
    assert clean.degenerate == 0 and (clean.low, clean.high) == pytest.approx((ref.low, ref.high))


def test_the_mean_interval_every_table_prints_is_unchanged():
    from t2ireason.stats import bootstrap

    x = np.random.default_rng(3).uniform(0, 1, 30)
    found = bootstrap(x, seed=5)
    ref = sps.bootstrap((x,), np.mean, n_resamples=2000, method="percentile",
                        rng=np.random.default_rng(5)).confidence_interval
    assert (found.low, found.high) == (ref.low, ref.high) and found.degenerate == 0
    assert summarize(x, seed=5)["ci_low"] == ref.low


def test_bootstrap_holds_a_bounded_batch_of_resamples_and_gives_scipys_interval():
    """Issue 51: all 2,000 resamples at once held 2,000 x n indices and values (31 KB an image at the end of an
    evaluation of n images); in batches the peak is bounded and the interval is scipy's own, to the last bit."""
    import tracemalloc

    from t2ireason.stats import bootstrap

    x = np.random.default_rng(1).random(3000)
    whole = sps.bootstrap((x,), lambda s, axis=-1: np.mean(s, axis=axis), n_resamples=2000, method="percentile",
                          rng=np.random.default_rng(0), vectorized=True).confidence_interval
    tracemalloc.start()
    try:
        got = bootstrap(list(x), seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (got.low, got.high) == (whole.low, whole.high)
    assert peak < 8 * 2**20 < 2000 * x.size * 16, peak  # all at once: 96 MB
