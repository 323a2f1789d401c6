"""Knowledge Checklist Score (WorldGenBench, seed 001): a judge checks each image against its knowledge checklist."""

import datasets  # noqa: F401 - evaluate reads the dependencies from these imports
import evaluate

from t2ireason import metric as tm

_DESCRIPTION = """\
Knowledge Checklist Score (Zhang et al., 2025, "WorldGenBench: A World-Knowledge-Integrated Benchmark
for Reasoning-Driven Text-to-Image Generation") scores a generated image against its WorldGenBench row:
a multimodal judge (GPT-4o in the paper) reads every checklist item with its explanation under the
paper's strict procedure with reverse verification (Appendix 8) and answers one binary value per item.
The image's score is satisfied / total (0 to 1); a model's score is the mean over images x 100, reported
per continent (humanities, Table 2), per discipline (nature, Table 3), per domain and overall, with
bootstrap confidence intervals. The logic lives in t2ireason.benchmarks.worldgenbench; this module is its shell.
"""

_CITATION = """\
@article{zhang2025worldgenbench,
  title   = {WorldGenBench: A World-Knowledge-Integrated Benchmark for Reasoning-Driven Text-to-Image Generation},
  author  = {Zhang, Daoan and Jiang, Che and Xu, Ruoshi and Chen, Biaoxiang and Jin, Zijian and Lu, Yutian
             and Zhang, Jianguo and Yong, Liang and Luo, Jiebo and Luo, Shengda},
  journal = {arXiv preprint arXiv:2505.01490},
  year    = {2025}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated images (PIL images or file paths), one per row.
    references: WorldGenBench rows, as load_dataset gives them (id, prompt, domain, continent, country,
        discipline, checklist of {item, explanation}, extra).
    max_reasks (compute option): follow-ups when a reply is not exactly one 0/1 per item (default 2).
    sampling (compute option): a Sampling or a dict of its fields, overriding the judge's defaults.
    confidence, n_resamples, seed (compute options): the bootstrap confidence intervals.
Init keyword arguments (evaluate.load(..., judge=...)):
    judge: a judge spec ("openai:gpt-4o", "hf:...", "vllm:...") or a judge object; default: the preset's.
    preset: "paper" (default): openai:gpt-4o at temperature 0.
    judge_kwargs, cache, progress: see t2ireason.metric.JudgedMetric.
Returns:
    knowledge_checklist_score: mean over scored images x 100; humanities, nature: the same per domain.
    by_continent, by_discipline: the paper's columns; table: Tables 2 and 3 with their Avg. column.
    summary: mean, se, bootstrap and normal 95% CIs, n, failed for every group.
    scores: each image's ratio (0 to 1; None if the judge failed); per_image: full detail.
Examples (README.md has one that runs offline):
    kcs = evaluate.load("metrics/knowledge_checklist_score")          # the paper preset: openai:gpt-4o
    out = kcs.compute(predictions=images, references=rows)          # rows from load_dataset(..., "humanities")
    out["knowledge_checklist_score"], out["table"]["humanities"]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class KnowledgeChecklistScore(tm.JudgedMetric):
    """Knowledge Checklist Score of each image against its WorldGenBench row, and the paper's tables."""

    benchmark_name = "worldgenbench"

    def _info(self):
        return self._judged_info(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            reference_urls=["https://dwanzhang-ai.github.io/WorldGenBench/",
                            "https://huggingface.co/datasets/worldrl/WorldGenBench"],
        )
