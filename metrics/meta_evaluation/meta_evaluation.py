"""Meta-evaluation: a metric or judge against human ratings or preferences, or two judges against each other."""

import datasets
import evaluate

from t2ireason import meta_eval

_DESCRIPTION = """\
How well does a text-to-image metric (or judge) agree with people, or with another judge?
Three configurations, each the form a seed paper reports:
"human" (default): per-image metric scores against human ratings: Kendall's tau-b, Spearman's rho and
pairwise accuracy with ties (T2I-ReasonBench Table 1, PRISM-Bench Table 3), pooled and per group;
"preference": humans saw images A and B of a prompt and chose A, B or tie; the metric's verdict is the
sign of its score difference (R2I-Bench section 4.3, Table 4): pairwise accuracy, and tau and rho between
the human verdict (+1, 0, -1) and the metric's margin A - B;
"judges": two judges' per-image scores, correlated per image and over the per-model mean scores
(PRISM-Bench Table 3, "GPT4.1 vs. Qwen2.5-VL").
Missing scores (None: a failed judgement) are left out and counted in n_excluded.
"""

_CITATION = """\
@inproceedings{deutsch2023ties,
  title={Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie Calibration},
  author={Deutsch, Daniel and Foster, George and Freitag, Markus},
  booktitle={Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year={2023}
}
@misc{chen2025r2ibench,
  title={{R2I-Bench}: Benchmarking Reasoning-Driven Text-to-Image Generation},
  author={Chen, Kaijie and Lin, Zihao and Xu, Zhiyang and Shen, Ying and Yao, Yuguang and Rimchala, Joy and Zhang, Jiaxin and Huang, Lifu},
  year={2025}
}
"""

_KWARGS_DESCRIPTION = """
Args (config "human"):
    predictions: the metric's score per image (None where it failed).
    references: the human rating per image (e.g. the mean of the raters).
    groups (optional): a group per image (dimension, track, category) for per-group figures.
    tie_epsilon (optional): metric scores this close count as tied in pairwise accuracy;
        "calibrated" chooses the best threshold (Deutsch et al., 2023). Default 0.
Args (config "preference"):
    predictions: [score of image A, score of image B] per prompt.
    references: the human choice per prompt: "A", "B" or "tie".
    groups, tie_epsilon (optional): as above.
Args (config "judges"):
    predictions: judge A's score per image; references: judge B's score per image.
    models (optional): the T2I model of each image, for the per-model correlation.
    groups (optional): a group per image (track).
Returns:
    meta_evaluation: the headline figure (Kendall's tau-b for "human", pairwise accuracy for "preference",
    the per-image Kendall's tau-b for "judges");
    kendall_tau, spearman_rho (and pairwise_accuracy except for "judges"), n, n_excluded;
    per_group and group_average when groups are given; for "judges": "image" and "model" levels.
Examples:
    >>> meta = evaluate.load("metrics/meta_evaluation")
    >>> out = meta.compute(predictions=[0.1, 0.4, 0.35, 0.8], references=[1, 2, 3, 4])
    >>> round(out["kendall_tau"], 4), round(out["pairwise_accuracy"], 4), out["meta_evaluation"] == out["kendall_tau"]
    (0.6667, 0.8333, True)
"""

_FEATURES = {
    "human": datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("float64")}),
    "preference": datasets.Features({"predictions": datasets.Sequence(datasets.Value("float64"), length=2),
                                     "references": datasets.Value("string")}),
    "judges": datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("float64")}),
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class MetaEvaluation(evaluate.Metric):
    """Agreement of metric scores with human ratings, human A/B/tie choices, or another judge."""

    def _info(self):
        config = "human" if self.config_name == "default" else self.config_name
        if config not in _FEATURES:
            raise ValueError(f"unknown configuration {self.config_name!r}; known: {', '.join(_FEATURES)}")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=_FEATURES[config],
            reference_urls=["https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.kendalltau.html"],
        )

    def _compute(self, predictions, references, groups=None, tie_epsilon=0.0, models=None):
        config = "human" if self.config_name == "default" else self.config_name
        if config == "human":
            out = meta_eval.human_correlation(predictions, references, groups=groups, tie_epsilon=tie_epsilon)
        elif config == "preference":
            out = meta_eval.preference_agreement([p[0] for p in predictions], [p[1] for p in predictions],
                                                 references, groups=groups, tie_epsilon=tie_epsilon)
        else:
            out = meta_eval.judge_agreement(predictions, references, models=models, groups=groups)
        # like every module, a key named after itself: the figure each paper leads with
        out["meta_evaluation"] = meta_eval.headline(out, config)
        return out
