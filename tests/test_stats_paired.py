"""Paired comparisons, rank intervals and the smallest detectable difference, each against a direct computation
(scipy) on fixed data."""

import numpy as np
import pytest
from scipy import stats as sps

from t2ireason.stats_paired import (
    cell_values,
    detectable_with_judge,
    formulas_from,
    holm,
    influence,
    joint_bootstrap,
    judge_noise,
    min_detectable_difference,
    rank_intervals,
    sign_flip_test,
)


def mean_of(x, columns=("mean",)):
    """A run whose one cell is the plain mean of its prompts' scores (one image a prompt)."""
    n = len(x)
    return formulas_from({"all": [(v,) for v in x]}, {c: {"all": 1.0} for c in columns}, range(n), n, list(columns),
                         ["all"])


def by_category(x, category):
    """A run whose cell is the mean over categories of each category's mean (PRISM-Bench's Overall), with the
    categories' own cells beside it."""
    names = sorted(set(category))
    terms = {c: [(v,) if k == c else () for v, k in zip(x, category)] for c in names}
    cells = {c: {c: 1.0} for c in names} | {"overall": {c: 1 / len(names) for c in names}}
    return formulas_from(terms, cells, range(len(x)), len(x), [*names, "overall"], names)


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    hard = rng.normal(0, 1, 120)  # each prompt's difficulty, shared by both runs: what pairing removes
    return hard + rng.normal(0.15, 0.1, 120), hard + rng.normal(0, 0.1, 120)


def test_the_cells_are_the_benchmarks_means():
    x = np.array([1.0, 2.0, 4.0, 8.0, 3.0])
    category = ["a", "a", "b", "b", "b"]
    got = cell_values(by_category(x, category))[0]
    assert got == pytest.approx([1.5, 5.0, (1.5 + 5.0) / 2])
    # two images of one prompt count as the prompt's: a resample keeps them together
    f = formulas_from({"all": [(1.0,), (3.0,), (10.0,)]}, {"m": {"all": 1.0}}, [0, 0, 1], 2, ["m"], ["all"])
    assert f.num[:, 0].tolist() == [4.0, 10.0] and f.den[:, 0].tolist() == [2.0, 1.0]
    assert cell_values(f, np.array([[2.0, 0.0]]))[0, 0] == pytest.approx(2.0)


def test_paired_bootstrap_interval_is_scipys(data):
    x, y = data
    dist = joint_bootstrap([mean_of(x), mean_of(y)], n_resamples=999, seed=3)
    diff = dist[0, :, 0] - dist[1, :, 0]
    ours = np.percentile(diff, [2.5, 97.5])
    ref = sps.bootstrap((x, y), lambda a, b, axis=-1: a.mean(axis) - b.mean(axis), paired=True, vectorized=True,
                        n_resamples=999, method="percentile", rng=np.random.default_rng(3))
    assert ours[0] == pytest.approx(ref.confidence_interval.low, rel=1e-9)
    assert ours[1] == pytest.approx(ref.confidence_interval.high, rel=1e-9)
    assert np.sort(diff) == pytest.approx(np.sort(ref.bootstrap_distribution), rel=1e-9)


def test_sign_flip_test_is_scipys_permutation_test(data):
    x, y = data
    small_x, small_y = x[:9], y[:9]  # 512 flips: both enumerate them, the exact test
    observed, p = sign_flip_test(mean_of(small_x), mean_of(small_y), n_resamples=2000)
    ref = sps.permutation_test((small_x, small_y), lambda a, b, axis=-1: a.mean(axis) - b.mean(axis),
                               permutation_type="samples", vectorized=True, n_resamples=2000)
    assert observed[0] == pytest.approx(ref.statistic) and p[0] == pytest.approx(ref.pvalue, rel=1e-12)
    # randomised: the same counting, other draws: within the Monte Carlo error
    x2, y2 = x[:40], y[:40] + 0.12
    _, p = sign_flip_test(mean_of(x2), mean_of(y2), n_resamples=4000, seed=1)
    ref = sps.permutation_test((x2, y2), lambda a, b, axis=-1: a.mean(axis) - b.mean(axis),
                               permutation_type="samples", vectorized=True, n_resamples=4000, rng=2)
    assert abs(p[0] - ref.pvalue) < 4 * np.sqrt(ref.pvalue * (1 - ref.pvalue) / 4000) + 1e-3


def test_the_test_and_interval_see_pairing_and_fail_when_prompts_are_shuffled(data):
    """The same two runs, one's prompts shuffled: the pairing broken, the difference (0.15) is lost in the
    prompts' spread (sd 1): not significant, its interval holding 0. Paired, it is clear."""
    x, y = data
    for shuffled, clear in ((y, True), (np.random.default_rng(0).permutation(y), False)):
        a, b = mean_of(x), mean_of(shuffled)
        _, p = sign_flip_test(a, b, n_resamples=2000)
        dist = joint_bootstrap([a, b], n_resamples=2000)
        low, high = np.percentile(dist[0, :, 0] - dist[1, :, 0], [2.5, 97.5])
        assert bool(p[0] < 0.05) == clear and bool(low > 0) == clear, (shuffled is y, p, low, high)


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.5 of m = 4: 0.04, 0.06, 0.06 (made non-decreasing), 0.5
    got = holm([0.03, 0.01, float("nan"), 0.5, 0.02])
    assert got[[1, 4, 0, 3]] == pytest.approx([0.04, 0.06, 0.06, 0.5]) and np.isnan(got[2])


def test_rank_intervals_against_direct_ranks():
    rng = np.random.default_rng(1)
    dist = np.stack([rng.normal(10, 0.2, 500), rng.normal(5, 1, 500), rng.normal(5.2, 1, 500)])
    low, high = rank_intervals(dist)
    ranks = np.array([sps.rankdata(-dist[:, j], method="min") for j in range(500)]).T
    assert low.tolist() == [np.sort(r)[int(np.ceil(0.025 * 500)) - 1] for r in ranks]
    assert high.tolist() == [np.sort(r)[int(np.ceil(0.975 * 500)) - 1] for r in ranks]
    assert (low[0], high[0]) == (1, 1) and low[1] == low[2] == 2 and high[1] == high[2] == 3
    lower_better = rank_intervals(dist, higher_is_better=False)
    assert (lower_better[0][0], lower_better[1][0]) == (3, 3)


def test_min_detectable_difference_of_a_mean(data):
    x, y = data
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    assert influence(mean_of(x))[:, 0] == pytest.approx(x - x.mean())
    got = min_detectable_difference(mean_of(x), mean_of(y))[0]
    assert got == pytest.approx(z * np.std(x - y, ddof=1) / np.sqrt(x.size))
    alone = min_detectable_difference(mean_of(x))[0]
    assert alone == pytest.approx(z * np.sqrt(2) * np.std(x, ddof=1) / np.sqrt(x.size))
    # the mean over categories: its influence reproduces a delta-method variance checked by the bootstrap
    cat = np.array(["a"] * 80 + ["b"] * 40)
    f = by_category(x, cat)
    se = influence(f)[:, -1].std(ddof=1) / np.sqrt(x.size)
    boot = joint_bootstrap([f], n_resamples=4000)[0, :, -1].std()
    assert se == pytest.approx(boot, rel=0.1)


def test_the_judges_part_of_the_detectable_difference_against_a_direct_computation(data):
    """On fixed data: var(d) holds each run's judge variance once (its share of its own variance), a K-reply mean
    divides it by K, a noiseless judge removes it."""
    x, y = data
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    n, va, vb, vd = x.size, np.var(x, ddof=1), np.var(y, ddof=1), np.var(x - y, ddof=1)
    got = detectable_with_judge(mean_of(x), mean_of(y), shares=(0.006, 0.004), repeats=(3, 5))
    judge = 0.006 * va + 0.004 * vb  # each run's judge variance: its share of its own variance over prompts
    assert 0.2 < judge / vd < 0.6
    assert got["mdd"][0] == pytest.approx(min_detectable_difference(mean_of(x), mean_of(y))[0])
    assert got["judge_part"][0] == pytest.approx(judge / vd)
    assert got["mdd_repeats"][0] == pytest.approx(
        z * np.sqrt(vd - (2 / 3) * 0.006 * va - (4 / 5) * 0.004 * vb) / np.sqrt(n))
    assert got["mdd_noiseless"][0] == pytest.approx(z * np.sqrt(vd - judge) / np.sqrt(n))
    # shares that claim more than all of var(d): the judge is all of it, never more
    over = detectable_with_judge(mean_of(x), mean_of(y), shares=(0.2, 0.1), repeats=(3, 5))
    assert over["judge_part"][0] == 1 and over["mdd_noiseless"][0] == 0
    alone = detectable_with_judge(mean_of(x), shares=(0.3, 0.0), repeats=(4, 1))
    assert alone["judge_part"][0] == pytest.approx(0.3)  # both sides the run again: its own share
    assert alone["mdd_repeats"][0] == pytest.approx(z * np.sqrt(2 * va * (1 - 0.75 * 0.3)) / np.sqrt(n))
    unmeasured = detectable_with_judge(mean_of(x), mean_of(y))
    assert unmeasured["judge_part"][0] == 0 and unmeasured["mdd_repeats"][0] == pytest.approx(got["mdd"][0])


def test_the_k_reply_mean_predicted_from_one_reply_and_the_measured_share():
    """Two runs over the same prompts, each image judged K times with known noise: the difference detectable from
    the first replies with the share judge_noise measures predicts that of the runs scored by their K-reply means."""
    rng = np.random.default_rng(3)
    n, k = 20000, 4
    hard = rng.normal(50, 10, n)
    true_a, true_b = hard + rng.normal(0, 4, n), hard + rng.normal(0, 4, n)
    a, b = (t[:, None] + rng.normal(0, 6, (n, k)) for t in (true_a, true_b))  # the judge's own noise, sd 6
    shares = (judge_noise(a)["judge_share"], judge_noise(b)["judge_share"])
    got = detectable_with_judge(mean_of(a[:, 0]), mean_of(b[:, 0]), shares=shares, repeats=(k, k))
    direct = min_detectable_difference(mean_of(a.mean(1)), mean_of(b.mean(1)))[0]
    noiseless = min_detectable_difference(mean_of(true_a), mean_of(true_b))[0]
    assert got["mdd_repeats"][0] == pytest.approx(direct, rel=0.03)
    assert got["mdd_noiseless"][0] == pytest.approx(noiseless, rel=0.03)
    assert got["judge_part"][0] == pytest.approx(2 * 36 / (2 * 36 + 2 * 16), rel=0.05)
