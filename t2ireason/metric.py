"""The logic shared by the judged evaluate modules in ``metrics/``.

A metric module is a thin shell: it names its benchmark and documents itself;
:class:`JudgedMetric` does the rest by calling the benchmark module's
``score`` and ``aggregate``. Shells must import this module as a module
(``from t2ireason import metric as tm``) and subclass ``tm.JudgedMetric``:
evaluate takes the first ``EvaluationModule`` subclass found in a module's
namespace, which must be the shell's own class.

Usage (any judge spec, preset or object)::

    m = evaluate.load("metrics/r2i_score", judge="openai:gpt-4o")
    out = m.compute(predictions=images, references=rows)   # rows as load_dataset gives them
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import datasets
import evaluate

from .benchmarks import get_benchmark
from .results import ImageResult

__all__ = ["JudgedMetric", "check_inputs", "results_payload"]


def check_inputs(predictions: Sequence[Any] | None, references: Sequence[dict] | None,
                 required: Sequence[str], benchmark: str) -> None:
    """Clear errors for the mistakes users make: mismatched lengths, rows from another
    benchmark, missing fields, missing images."""
    if predictions is None or references is None:
        return
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} images (predictions) but {len(references)} rows (references)")
    for i, row in enumerate(references):
        if not isinstance(row, dict):
            raise ValueError(f"references[{i}] is a {type(row).__name__}; pass the rows as load_dataset returns them (dicts)")
        missing = [f for f in required if f not in row]
        if missing:
            raise ValueError(f"references[{i}] lacks field(s) {missing}: is it a {benchmark} row? "
                             f"expected the fields {list(required)}")
    for i, img in enumerate(predictions):
        if img is None:
            raise ValueError(f"predictions[{i}] (the image for row {references[i].get('id', i)!r}) is None")


def results_payload(results: list[ImageResult], aggregate: dict[str, Any], judge_info: dict[str, Any]) -> dict[str, Any]:
    """What every judged metric returns: the paper's table, per-image detail, failure counts."""
    return {
        **aggregate,
        "scores": [r.score for r in results],  # per-sample rewards, None where the judge failed
        "per_image": [r.to_dict() for r in results],
        "num_images": len(results),
        "num_failed": sum(r.failed for r in results),
        "num_reasks": sum(r.reasks for r in results),
        "judge": judge_info,
    }


class JudgedMetric(evaluate.Metric):
    """An evaluate module scoring images against benchmark rows with a judge.

    Init keyword arguments (through ``evaluate.load(path, **kwargs)``):
    ``judge`` (a spec string such as ``"openai:gpt-4.1"``, or a judge object;
    default: the preset's), ``preset`` (a named judge setting from the
    benchmark module, e.g. ``"paper"`` or ``"official"``), ``judge_kwargs``
    (passed to the backend), ``cache`` (response cache path, ``True`` for the
    default place, ``False`` to disable), ``progress``.
    """

    #: the benchmark name (see t2ireason.benchmarks.MODULES); set by the shell
    benchmark_name: str = ""
    #: row fields the metric needs; default: all the benchmark's features
    required_fields: tuple[str, ...] | None = None

    def __init__(self, judge: Any = None, preset: str | None = None, judge_kwargs: dict | None = None,
                 cache: str | bool = True, progress: bool = True, **kwargs: Any):
        # evaluate's __init__ calls _info(), so everything _info needs is set first.
        self.bench = get_benchmark(self.benchmark_name)
        self.preset_name = preset or getattr(self.bench, "default_preset", "paper")
        presets = getattr(self.bench, "presets", {})
        if presets and self.preset_name not in presets:
            raise ValueError(f"unknown preset {self.preset_name!r} for {self.bench.name}; known: {', '.join(presets)}")
        self.preset = dict(presets.get(self.preset_name, {}))
        self.judge_spec = judge if judge is not None else self.preset.get("judge")
        self.judge_kwargs = {**self.preset.get("judge_kwargs", {}), **(judge_kwargs or {})}
        self.cache = cache
        self.progress = progress
        self._judge = None
        super().__init__(**kwargs)

    # -- evaluate's hooks --------------------------------------------------

    def _judged_info(self, *, description: str, citation: str, inputs_description: str,
                     reference_urls: Sequence[str] = ()) -> evaluate.MetricInfo:
        """The MetricInfo of a judged metric: images (PIL or paths) and benchmark rows."""
        rows = datasets.Features(self.bench.features)
        return evaluate.MetricInfo(
            description=description,
            citation=citation,
            inputs_description=inputs_description,
            features=[
                datasets.Features({"predictions": datasets.Image(), "references": rows}),
                datasets.Features({"predictions": datasets.Value("string"), "references": rows}),
            ],
            reference_urls=list(reference_urls),
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        required = self.required_fields or tuple(self.bench.features)
        check_inputs(predictions, references, required, self.bench.name)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, **options):
        judge = self.judge
        results = self.bench.score(references, predictions, judge, progress=self.progress,
                                   **{**self.preset.get("options", {}), **options})
        aggregate = self.bench.aggregate(results, **{**self.preset.get("options", {}), **options})
        return results_payload(results, aggregate, self.judge_info())

    # -- the judge, loaded once per module instance ------------------------

    @property
    def judge(self):
        if self._judge is None:
            if self.judge_spec is None:
                raise ValueError(f"no judge given and the {self.preset_name!r} preset of {self.bench.name} names none")
            from .judges import load_judge

            self._judge = load_judge(self.judge_spec, cache=self.cache, **self.judge_kwargs)
        return self._judge

    def judge_info(self) -> dict[str, Any]:
        j = self.judge
        info = dict(j.identity())
        sampling = getattr(j, "default_sampling", None)
        info["sampling"] = sampling.to_dict() if sampling is not None else None
        info["preset"] = self.preset_name
        return info
