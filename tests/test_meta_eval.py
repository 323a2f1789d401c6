"""t2ireason.meta_eval against reference computations: scipy for the correlations, loops over every
pair and every threshold for pairwise accuracy and tie calibration, hand counts for the preference
and two-judge forms."""

import math

import numpy as np
import pytest
import scipy.stats

from t2ireason import meta_eval


def _sign(v, eps=0.0):
    return 0 if abs(v) <= eps else (1 if v > 0 else -1)


def _loop_accuracy(metric, human, eps):
    pairs = [(i, j) for i in range(len(metric)) for j in range(i + 1, len(metric))]
    return sum(_sign(metric[i] - metric[j], eps) == _sign(human[i] - human[j]) for i, j in pairs) / len(pairs)


def test_human_correlation_pooled_and_per_group_against_scipy():
    rng = np.random.default_rng(0)
    metric, human = rng.random(30), rng.integers(1, 6, 30).astype(float)
    groups = ["idiom", "entity", "textual"] * 10
    out = meta_eval.human_correlation(metric, human, groups=groups)
    assert out["kendall_tau"] == pytest.approx(scipy.stats.kendalltau(metric, human).statistic)
    assert out["spearman_rho"] == pytest.approx(scipy.stats.spearmanr(metric, human).statistic)
    assert out["pairwise_accuracy"] == pytest.approx(_loop_accuracy(metric, human, 0.0))
    for g in ("idiom", "entity", "textual"):
        sel = [i for i, x in enumerate(groups) if x == g]
        assert out["per_group"][g]["kendall_tau"] == pytest.approx(
            scipy.stats.kendalltau(metric[sel], human[sel]).statistic)
    assert out["group_average"]["spearman_rho"] == pytest.approx(
        np.mean([out["per_group"][g]["spearman_rho"] for g in ("idiom", "entity", "textual")]))


def test_failed_scores_are_excluded_and_counted_never_zero():
    out = meta_eval.human_correlation([0.9, None, 0.2, float("nan"), 0.5], [5, 1, 1, 2, 3])
    assert out["n"] == 3 and out["n_excluded"] == 2
    assert out["kendall_tau"] == pytest.approx(scipy.stats.kendalltau([0.9, 0.2, 0.5], [5, 1, 3]).statistic)
    with pytest.raises(ValueError, match="differ in length"):
        meta_eval.human_correlation([0.1, 0.2], [1])


def test_calibrated_tie_threshold_is_the_best_of_every_candidate():
    rng = np.random.default_rng(3)
    metric = rng.integers(0, 8, 20) / 8  # many equal scores, so ties matter
    human = rng.integers(0, 3, 20).astype(float)
    accuracy, eps = meta_eval.calibrated_pairwise_accuracy(metric, human)
    diffs = sorted({abs(a - b) for a in metric for b in metric})
    best = max(_loop_accuracy(metric, human, e) for e in diffs)
    assert accuracy == pytest.approx(best) and _loop_accuracy(metric, human, eps) == pytest.approx(best)
    out = meta_eval.human_correlation(metric, human, tie_epsilon="calibrated")
    assert out["pairwise_accuracy"] == pytest.approx(best) and out["tie_epsilon"] == eps


def test_preference_form_by_hand():
    a = [0.9, 0.4, 0.5, 0.2, None]
    b = [0.1, 0.6, 0.5, 0.21, 0.3]
    human = ["A", "B", "tie", "tie", "A"]
    out = meta_eval.preference_agreement(a, b, human)
    # verdicts A, B, tie, B (a missing score is left out): 3 of 4 agree
    assert out["pairwise_accuracy"] == pytest.approx(3 / 4) and out["n"] == 4 and out["n_excluded"] == 1
    assert out["human_choices"] == {"A": 1, "B": 1, "tie": 2}
    margin, verdict = [0.8, -0.2, 0.0, -0.01], [1, -1, 0, 0]
    assert out["kendall_tau"] == pytest.approx(scipy.stats.kendalltau(margin, verdict).statistic)
    within = meta_eval.preference_agreement(a, b, human, tie_epsilon=0.05)  # 0.2 vs 0.21 is now a tie
    assert within["pairwise_accuracy"] == 1.0
    assert meta_eval.preference_verdicts(a, b, tie_epsilon=0.05) == [1, -1, 0, 0, None]
    with pytest.raises(ValueError, match="choose 'A', 'B' or 'tie'"):
        meta_eval.preference_agreement([1.0], [0.0], ["left"])


def test_two_judges_by_id_per_image_and_per_model():
    gpt = {"m1/0": 8, "m1/1": 6, "m2/0": 3, "m2/1": 5, "m3/0": 9, "m3/1": None, "only-a": 1}
    qwen = {"m1/0": 7, "m1/1": 7, "m2/0": 2, "m2/1": 4, "m3/0": 8, "m3/1": 9}
    models = {k: k.split("/")[0] for k in qwen}
    out = meta_eval.judge_agreement(gpt, qwen, models=models)
    assert out["n_shared"] == 6 and out["only_in_a"] == ["only-a"] and out["only_in_b"] == []
    x, y = [8, 6, 3, 5, 9], [7, 7, 2, 4, 8]
    assert out["image"]["n"] == 5 and out["image"]["n_excluded"] == 1
    assert out["image"]["spearman_rho"] == pytest.approx(scipy.stats.spearmanr(x, y).statistic)
    # model means over the images both judged: m3 has one
    assert out["model"]["means_a"] == {"m1": 7.0, "m2": 4.0, "m3": 9.0}
    assert out["model"]["means_b"] == {"m1": 7.0, "m2": 3.0, "m3": 8.0}
    assert out["model"]["kendall_tau"] == pytest.approx(scipy.stats.kendalltau([7, 4, 9], [7, 3, 8]).statistic)
    with pytest.raises(ValueError, match="no image in common"):
        meta_eval.judge_agreement({"a": 1}, {"b": 2})
    with pytest.raises(ValueError, match="models has no entry for image id"):
        meta_eval.judge_agreement(gpt, qwen, models={"m1/0": "m1"})
    assert math.isnan(meta_eval.judge_agreement([1.0], [2.0])["image"]["kendall_tau"])


@pytest.mark.parametrize("config", ["human", "preference", "judges"])
def test_the_module_returns_a_key_named_after_itself_holding_each_forms_headline(config):
    """Like every metric module, meta_evaluation returns its own key: the figure the papers lead with."""
    from t2ireason.metric import load_metric

    metric = load_metric("meta_evaluation", config_name=config)
    if config == "preference":
        out = metric.compute(predictions=[[0.9, 0.1], [0.4, 0.6], [0.5, 0.5], [0.2, 0.3]],
                             references=["A", "A", "tie", "B"])
        assert out["meta_evaluation"] == out["pairwise_accuracy"] == pytest.approx(3 / 4)
        assert out["meta_evaluation"] != out["kendall_tau"]
    else:
        metric_scores, human = [0.1, 0.4, 0.35, 0.8, 0.3], [1, 2, 3, 4, 5]
        out = metric.compute(predictions=metric_scores, references=human)
        tau = out["image"]["kendall_tau"] if config == "judges" else out["kendall_tau"]
        assert out["meta_evaluation"] == tau == pytest.approx(scipy.stats.kendalltau(metric_scores, human).statistic)
