"""The logic shared by the evaluate modules in ``metrics/``, and how to find them.

A metric module is a thin shell: it names its benchmark (or its scoring
function) and documents itself; the classes here do the rest. Shells must
import this module as a module (``from t2ireason import metric as tm``) and
subclass ``tm.JudgedMetric`` (or ``tm.JudgeMixin``): evaluate takes the first
``EvaluationModule`` subclass found in a module's namespace, which must be the
shell's own class.

The metric folders ship inside the package (``t2ireason/metrics`` is the
top-level ``metrics/`` folder), so once the package is installed a metric
loads by its bare name::

    m = t2ireason.load_metric("r2i_score", judge="openai:gpt-4o")
    out = m.compute(predictions=images, references=rows)   # rows as load_dataset gives them

which is ``evaluate.load(metric_path("r2i_score"), judge=...)``. From a
checkout, ``evaluate.load("metrics/r2i_score")`` does the same, and from the
Hub ``evaluate.load("<org>/r2i_score")``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import datasets
import evaluate
import pyarrow as pa
from datasets.utils.py_utils import temp_seed
from PIL import Image

from .baselines import PRESET_LLM, get_baseline, load_baseline
from .benchmarks import get_benchmark
from .images import JudgeImage, _is_tensor, as_image, missing_files
from .judges.spec import judge_setting
from .results import ImageResult
from .scoring import judge_record, report_preset_settings

__all__ = ["ImageMetric", "JudgeMixin", "JudgedMetric", "BaselineMetric", "check_inputs", "check_files",
           "results_payload", "image_features", "metric_path", "known_metrics", "load_metric"]


# -- finding the metric modules ----------------------------------------------

def _metrics_root() -> Path:
    # ``t2ireason/metrics`` is a symlink to the checkout's ``metrics/`` and a real
    # folder in a wheel (package data), so the same lookup serves both.
    return Path(str(resources.files("t2ireason") / "metrics"))


def known_metrics() -> list[str]:
    """The names of the metric modules shipped with the package."""
    root = _metrics_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file())


def metric_path(name: str) -> str:
    """The folder of the metric module called ``name`` (``-`` and case forgiven),
    for ``evaluate.load(metric_path(name))``."""
    key = name.strip().lower().replace("-", "_")
    path = _metrics_root() / key
    if not (path / f"{key}.py").is_file():
        known = known_metrics()
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(known) if known else '(none installed)'}")
    return str(path)


def load_metric(name: str, **kwargs: Any) -> evaluate.EvaluationModule:
    """``evaluate.load`` of a metric shipped with the package, by its bare name.

    ``kwargs`` reach ``evaluate.load`` (``config_name``, ``experiment_id``,
    ``num_process``...) and the metric's constructor (``judge``, ``preset``...).
    """
    return evaluate.load(metric_path(name), **kwargs)


# -- inputs and outputs --------------------------------------------------------

_IMAGE_TYPES = (str, os.PathLike, Image.Image, bytes, bytearray, dict, JudgeImage)


def image_features(**other: datasets.features.FeatureType) -> list[datasets.Features]:
    """Feature options for ``predictions`` as images: PIL images (or anything
    ``datasets.Image`` encodes) and file paths.

    ``decode=False``: ``_compute`` receives ``{"bytes", "path"}`` dicts, which
    :func:`~t2ireason.images.as_image` reads once, instead of evaluate decoding
    every image into PIL and the scorer converting it again. A path is stored as
    a path: passing files costs no encoding at all.
    """
    return [
        datasets.Features({"predictions": datasets.Image(decode=False), **other}),
        datasets.Features({"predictions": datasets.Value("string"), **other}),
    ]


def check_inputs(predictions: Sequence[Any] | None, references: Sequence[dict] | None,
                 required: Sequence[str] | None, benchmark: str) -> None:
    """Clear errors for the mistakes users make: mismatched lengths, rows from another
    benchmark, missing fields, missing images. ``required=None`` means the references
    are plain values (prompts), not benchmark rows."""
    if predictions is None and references is None:
        return
    if predictions is None or references is None:
        raise ValueError("pass both predictions (images) and references (" +
                         ("prompts" if required is None else f"{benchmark} rows") + ")")
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} images (predictions) but {len(references)} "
                         f"{'prompts' if required is None else 'rows'} (references)")
    if required is not None:
        for i, row in enumerate(references):
            if not isinstance(row, dict):
                raise ValueError(f"references[{i}] is a {type(row).__name__}; "
                                 "pass the rows as load_dataset returns them (dicts)")
            missing = [f for f in required if f not in row]
            if missing:
                raise ValueError(f"references[{i}] lacks field(s) {missing}: is it a {benchmark} row? "
                                 f"expected the fields {list(required)}")
    for i, img in enumerate(predictions):
        if img is None:
            ref = references[i]
            what = ref.get("id", i) if isinstance(ref, dict) else ref
            raise ValueError(f"predictions[{i}] (the image for {what!r}) is None")


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


# -- the judge, loaded once per module instance ----------------------------------

class JudgeMixin:
    """A judge given as a spec string or object, loaded on first use and kept for
    every later ``compute`` of the same module instance."""

    judge_spec: Any = None
    _parsed_spec: Any = None
    judge_kwargs: dict[str, Any]
    cache: str | bool = True
    _judge: Any = None

    def _set_judge(self, judge: Any, judge_kwargs: dict | None, cache: str | bool, spec: Any = None) -> None:
        """``judge`` as given (a spec string or a judge object), and ``spec``, its parsed
        :class:`~t2ireason.judges.JudgeSpec` when the caller has parsed it already."""
        self.judge_spec = judge
        self._parsed_spec = spec
        self.judge_kwargs = dict(judge_kwargs or {})
        self.cache = cache
        self._judge = None

    def _missing_judge_message(self) -> str:
        return "no judge given: pass judge='backend:model' (or a judge object) to evaluate.load"

    @property
    def judge(self):
        if self._judge is None:
            if self.judge_spec is None:
                raise ValueError(self._missing_judge_message())
            from .judges import load_judge, on_device

            spec = self._parsed_spec or self.judge_spec
            kwargs = self.judge_kwargs
            if getattr(self, "num_process", 1) > 1:  # evaluate's distributed mode: each process judges its rows
                from .processes import processes

                kwargs = on_device(spec, kwargs, processes().device)
            self._judge = load_judge(spec, cache=self.cache, **kwargs)
        return self._judge

    def judge_info(self) -> dict[str, Any]:
        """The judge's identity and sampling defaults, for the results (never secrets)."""
        return judge_record(self.judge)


def _storable(predictions: Any) -> Any:
    """Images as evaluate's Arrow cache stores them: each torch tensor (one, or a batch's rows) as the PIL image
    it is (:func:`~t2ireason.images.as_image`); evaluate's Image feature takes PIL images, paths, bytes and
    arrays, but no tensor."""
    if predictions is None:
        return None
    return [as_image(x).image if _is_tensor(x) else x for x in predictions]


def _fitted(schema: dict[str, Any], row: dict[str, Any], fill: bool) -> dict[str, Any]:
    """``row`` with the fields of ``schema`` only; with ``fill``, a field the row leaves out is None
    (in the records of a list too: ``questions.note``)."""
    fitted = {}
    for key, feature in schema.items():
        if key in row:
            value, inner = row[key], getattr(feature, "feature", feature[0] if isinstance(feature, list) else None)
            if isinstance(inner, dict) and isinstance(value, list):
                value = [_fitted(inner, v, fill) if isinstance(v, dict) else v for v in value]
            elif isinstance(feature, dict) and isinstance(value, dict):
                value = _fitted(feature, value, fill)
            fitted[key] = value
        elif fill:
            fitted[key] = None
    return fitted


class ImageMetric(evaluate.Metric):
    """An evaluate module whose predictions are images (PIL images or paths).

    Every batch is checked before evaluate stores it (:meth:`_check_inputs`), so
    a wrong input fails at once with a message naming it, not deep in scoring.

    A module's work is two steps: :meth:`_score_rows` (the judge's or model's work on some rows, a record
    per row) and :meth:`_combine` (the output from every row's record). In evaluate's distributed mode
    (``num_process``, ``process_id``: e.g. the processes of ``accelerate launch``) each process scores the
    rows it was given, and process 0, once evaluate has gathered the rows (its cache files, under its
    file locks), combines every process's records in evaluate's order, rather than judging every row
    itself; the other processes return None, as evaluate's do.
    """

    #: the row fields the scorer reads, and checks (dotted into lists of records): the schema's others may be
    #: left out of a row, and are null then (None: every field is required)
    scored_fields: tuple[str, ...] | None = None

    def _check_inputs(self, predictions, references) -> None:
        """Default: references are prompts (plain values), one per image."""
        check_inputs(predictions, references, None, "")

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the images given here (or added with ``add_batch``) and return the results.

        Direct path: in a single process, when every input comes with this call,
        the images go straight to the scorer (paths stay paths, PIL images stay in
        memory) instead of being PNG-encoded into evaluate's Arrow cache and read
        back, a lossless round trip that costs more than a fast judge. The
        references still take the Arrow round trip (in memory), so the scorer sees
        exactly what evaluate's own path gives it. Distributed runs and
        ``add_batch`` accumulation use evaluate's path unchanged.
        """
        if predictions is not None or references is not None:
            self._check_inputs(predictions, references)
            references = self._known_fields(references)
        if self.num_process > 1 and self._splits_rows():
            return self._compute_share(predictions, references, **kwargs)
        direct = (self.num_process == 1 and self.writer is None and predictions is not None
                  and references is not None and not set(kwargs) & set(self._feature_names()))
        if not direct:
            return super().compute(predictions=_storable(predictions), references=references, **kwargs)
        for i, img in enumerate(predictions):
            if not isinstance(img, _IMAGE_TYPES) and type(img).__module__.split(".")[0] not in ("numpy", "torch"):
                raise ValueError(f"predictions[{i}] is a {type(img).__name__}; pass a PIL image, a file path, "
                                 "a numpy array or a torch tensor")
        refs = self._arrow_round_trip(references)
        with temp_seed(self.seed):
            return self._compute(predictions=list(predictions), references=refs, **kwargs)

    # -- the work: scored rows, then combined --------------------------------------------------------

    def _score_rows(self, predictions, references, **options) -> list:
        """Score these rows (this process's, in distributed mode): one record per row (a JSON-able dict, or an
        object with ``to_dict``)."""
        raise NotImplementedError

    def _combine(self, records: list, **options) -> dict[str, Any]:
        """The module's output from every row's record (dicts as :meth:`_score_rows` gave them, or read back)."""
        raise NotImplementedError

    def _splits_rows(self) -> bool:
        """Whether the module scores by rows (:meth:`_score_rows`), so that its processes share the work."""
        return type(self)._score_rows is not ImageMetric._score_rows

    def _compute(self, predictions, references, **options):
        if self.num_process > 1:  # process 0 in distributed mode: every process scored its own rows
            records = self._gathered_records(len(predictions))
        else:
            records = self._score_rows(predictions, references, **options)
        return self._combine(records, **options)

    def _records_file(self, process_id: int) -> Path:
        return Path(self.data_dir) / f"{self.experiment_id}-{self.num_process}-{process_id}.records.json"

    def _compute_share(self, predictions, references, **kwargs):
        """Distributed mode: this process's rows (given here, or added before) scored here, their records
        written beside evaluate's cache file; then evaluate's own gathering (its cache files, its locks: a
        process's lock is released only after its records are written), and process 0 combines."""
        inputs = {k: kwargs.pop(k) for k in list(kwargs) if k in self._feature_names()}
        if predictions is not None or references is not None:
            self.add_batch(predictions=predictions, references=references, **inputs)
        rows = self._own_rows()
        records = self._score_rows(**rows, **kwargs) if rows and len(rows["predictions"]) else []
        from .files import atomic_write_text, json_text, jsonable

        atomic_write_text(self._records_file(self.process_id),
                          json_text(jsonable([r.to_dict() if hasattr(r, "to_dict") else r for r in records])))
        return super().compute(**kwargs)

    def _own_rows(self) -> dict[str, list] | None:
        """The rows this process added (its own Arrow cache file, read as evaluate reads every file), or None."""
        if self.writer is None and self.cache_file_name is None:
            return None
        if self.writer is not None:
            self.writer.finalize()
            self.writer = None
        from datasets.arrow_reader import ArrowReader

        reader = ArrowReader(path="", info=datasets.DatasetInfo(features=self.selected_feature_format))
        data = datasets.Dataset(**reader.read_files([{"filename": self.cache_file_name}]))
        data.set_format(type=self.info.format)
        return {name: data[name][:] for name in self._feature_names()}

    def _gathered_records(self, count: int) -> list:
        """Every process's records, in process order (evaluate's order of the gathered rows); their files
        removed."""
        import json

        records = []
        for process_id in range(self.num_process):
            file = self._records_file(process_id)
            try:
                records += json.loads(file.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ValueError(f"process {process_id} of {self.num_process} wrote no scored rows ({file}); every "
                                 "process calls compute() (evaluate's distributed mode)") from None
            file.unlink()
        if len(records) != count:
            raise ValueError(f"the processes scored {len(records)} rows, evaluate gathered {count}: was another "
                             f"computation using the experiment_id {self.experiment_id!r}?")
        return records

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of images and references, checked before evaluate stores them."""
        self._check_inputs(predictions, references)
        return super().add_batch(predictions=_storable(predictions), references=self._known_fields(references),
                                 **kwargs)

    def _known_fields(self, references):
        """Rows reduced to the fields of the row schema: a dataset with extra columns
        (a user's own annotations, a run's scores) is taken as it is; where the scorer says what
        it reads (:attr:`scored_fields`, checked by the scorer), a field a row leaves out is null."""
        options = self.features if isinstance(self.features, list) else [self.features]
        schema = options[0]["references"]
        if references is None or not isinstance(schema, dict):
            return references
        return [_fitted(schema, r, self.scored_fields is not None) if isinstance(r, dict) else r for r in references]

    def _arrow_round_trip(self, references) -> list:
        """The references encoded to their Arrow type and read back, in memory: what
        evaluate's cache would hand to ``_compute``, with the same type errors."""
        options = self.features if isinstance(self.features, list) else [self.features]
        feature = datasets.Features({"references": options[0]["references"]})
        try:
            references = self._known_fields(references)
            if len(references):
                self._enforce_nested_string_type(feature["references"], references[0])
            table = pa.Table.from_pydict(feature.encode_batch({"references": list(references)}),
                                         schema=feature.arrow_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, AttributeError, KeyError) as e:
            what = f"a record lacks the field {e}" if isinstance(e, KeyError) else e
            raise ValueError(f"references don't match the expected format {feature['references']}: {what}") from None
        return feature.decode_batch(table.to_pydict())["references"]


def check_files(predictions: Sequence[Any]) -> None:
    """Image paths that do not exist are the caller's mistake: said before any judge is loaded (a
    FileNotFoundError naming them), not a NaN with its cause per image."""
    missing = missing_files(predictions)
    if missing:
        shown = ", ".join(f"predictions[{i}] = {path!r}" for i, path in missing[:3])
        raise FileNotFoundError(f"{len(missing)} of {len(predictions)} image files do not exist: {shown}"
                                + (f" and {len(missing) - 3} more" if len(missing) > 3 else ""))


class PresetMetric(JudgeMixin, ImageMetric):
    """What a metric judged under a preset shares (:class:`JudgedMetric`, a benchmark's; :class:`BaselineMetric`,
    a baseline's): the judge setting resolved once (:func:`~t2ireason.judges.spec.judge_setting`), the judge loaded
    on first use with a line saying what became of the preset's backend settings, and the work done by the
    scorer's ``score`` and ``aggregate`` with the preset's options under the caller's."""

    #: the benchmark or baseline whose ``score`` and ``aggregate`` do the work; set by the subclass
    scorer: Any = None

    def _use_setting(self, setting: Any, cache: str | bool, progress: bool) -> None:
        self.judge_setting = setting
        self.preset_name = setting.preset
        self._set_judge(setting.judge, setting.judge_kwargs, cache, setting.spec)
        self.progress = progress

    def predictions_are_images(self, options: dict[str, Any]) -> bool:
        """Whether ``predictions`` are images with these compute options (a shell whose metric also
        scores texts says when)."""
        return True

    def _score_rows(self, predictions, references, **options):
        options = {**self.judge_setting.options, **options}
        if self.predictions_are_images(options):
            check_files(predictions)
        return self.scorer.score(references, predictions, self.judge, progress=self.progress, **options)

    def _combine(self, records, **options):
        results = [r if isinstance(r, ImageResult) else ImageResult.from_dict(r) for r in records]
        return results_payload(results, self.aggregate_results(results, **options), self.judge_info())

    def aggregate_results(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The paper's table (a baseline's aggregate) from per-image results gathered over several ``compute``
        calls (``ImageResult`` objects or their dicts, as ``per_image`` gives them), with the preset's options."""
        results = [r if isinstance(r, ImageResult) else ImageResult.from_dict(r) for r in results]
        return self.scorer.aggregate(results, **{**self.judge_setting.options, **options})

    @property
    def judge(self):
        if self._judge is None and self.judge_spec is not None:
            report_preset_settings(self.judge_setting)  # once, as the judge is loaded
        return super().judge

    def judge_info(self) -> dict[str, Any]:
        return judge_record(self.judge, self.preset_name, self.judge_setting.preset_settings)


class JudgedMetric(PresetMetric):
    """An evaluate module scoring images against benchmark rows with a judge.

    Init keyword arguments (through ``evaluate.load(path, **kwargs)``):
    ``judge`` (a spec string such as ``"openai:gpt-4.1"``, or a judge object;
    default: the preset's), ``preset`` (a named judge setting from the
    benchmark module, e.g. ``"paper"`` or ``"official"``), ``judge_kwargs``
    (passed to the backend, over the preset's; the preset's backend settings follow its model,
    whatever the judge's spec spelling, see :func:`~t2ireason.judges.spec.judge_setting`; a judge that
    is not the preset's model gets only its ``sampling``), ``cache`` (response cache
    path, ``True`` for the default place, ``False`` to disable), ``progress``. A ``config_name`` that
    is one of the benchmark's configs selects that config's row schema.
    """

    #: the benchmark name (see t2ireason.benchmarks.MODULES); set by the shell
    benchmark_name: str = ""
    #: row fields the metric needs; default: all the fields of the row schema
    required_fields: tuple[str, ...] | None = None

    def __init__(self, judge: Any = None, preset: str | None = None, judge_kwargs: dict | None = None,
                 cache: str | bool = True, progress: bool = True, **kwargs: Any):
        # evaluate's __init__ calls _info(), so everything _info needs is set first.
        self.bench = self.scorer = get_benchmark(self.benchmark_name)
        self.scored_fields = self.bench.scored_fields
        setting = judge_setting(self.bench, preset, judge, judge_kwargs)  # shared with `t2ireason evaluate`
        self.preset = dict(getattr(self.bench, "presets", {}).get(setting.preset, {}))
        self._use_setting(setting, cache, progress)
        config = kwargs.get("config_name")
        self.row_features = (self.bench.config_features(config) if config in self.bench.configs
                             else self.bench.features)
        super().__init__(**kwargs)

    # -- evaluate's hooks --------------------------------------------------

    def _judged_info(self, *, description: str, citation: str, inputs_description: str,
                     reference_urls: Sequence[str] = ()) -> evaluate.MetricInfo:
        """The MetricInfo of a judged metric: images (PIL or paths) and benchmark rows."""
        return evaluate.MetricInfo(
            description=description,
            citation=citation,
            inputs_description=inputs_description,
            features=image_features(references=datasets.Features(self.row_features)),
            reference_urls=list(reference_urls),
        )

    def _check_inputs(self, predictions, references) -> None:
        scored = tuple(dict.fromkeys(f.split(".")[0] for f in self.scored_fields or ()))  # the row's own fields
        required = self.required_fields or scored or tuple(self.row_features)
        check_inputs(predictions, references, required, self.bench.name)

    def _enforce_nested_string_type(self, schema, obj):
        # evaluate rejects None for string fields, but rows have nullable ones (a humanities
        # WorldGenBench row has no discipline; a PRISM-Bench subset may be unknown).
        if obj is None and isinstance(schema, datasets.Value):
            return None
        return super()._enforce_nested_string_type(schema, obj)

    def _missing_judge_message(self) -> str:
        return f"no judge given and the {self.preset_name!r} preset of {self.bench.name} names none"


class BaselineMetric(PresetMetric):
    """An evaluate module scoring images against their prompts with a baseline metric
    (:mod:`t2ireason.baselines`: DSG, VIEScore, TIFA) and a judge.

    Init keyword arguments: ``judge``, ``preset``, ``judge_kwargs``, ``cache``, ``progress`` as
    :class:`JudgedMetric`'s; for a metric whose questions an LLM writes, ``llm`` (a spec or a judge object; by
    default the preset's when no judge is named, else the judge itself: one model named does everything),
    ``llm_kwargs`` and ``store`` (where the questions are kept: True for ``criteria.sqlite``, a path, False); the
    baseline's own ``load_options`` (TIFA's ``question_filter``). ``references`` are the prompts."""

    #: the baseline's name (t2ireason.baselines.BASELINES); set by the shell
    baseline_name: str = ""

    def __init__(self, judge: Any = None, preset: str | None = None, judge_kwargs: dict | None = None,
                 cache: str | bool = True, progress: bool = True, llm: Any = PRESET_LLM,
                 llm_kwargs: dict | None = None, store: str | bool = True, **kwargs: Any):
        probe = get_baseline(self.baseline_name)
        setting = judge_setting(probe, preset, judge, judge_kwargs)
        keeps = {"store": store, "cache": cache} if hasattr(probe, "questions") else {}
        if not keeps and store is not True:
            raise ValueError(f"{self.baseline_name} keeps no questions: it takes no store")
        own = {k: kwargs.pop(k) for k in probe.load_options if k in kwargs}
        self.baseline = self.scorer = load_baseline(self.baseline_name, preset=setting.preset, judge=judge, llm=llm,
                                                    llm_kwargs=llm_kwargs, **keeps, **own)
        self._use_setting(setting, cache, progress)
        super().__init__(**kwargs)

    def _baseline_info(self, *, description: str, citation: str, inputs_description: str,
                       reference_urls: Sequence[str] = ()) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(description=description, citation=citation, inputs_description=inputs_description,
                                   features=image_features(references=datasets.Value("string")),
                                   reference_urls=list(reference_urls))

    def _missing_judge_message(self) -> str:
        return (f"no judge given and the {self.preset_name!r} preset of {self.baseline_name} names none: pass "
                "judge='backend:model' (or a judge object) to evaluate.load")

    def judge_info(self) -> dict[str, Any]:
        info = super().judge_info()
        questions = getattr(self.baseline, "questions", None)
        if questions is not None:  # the model that wrote the questions (the judge itself when none is named)
            info["questions_by"] = questions.llm_identity(self.judge)
        return info
