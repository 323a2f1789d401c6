"""A run's images scored by a metric other than its benchmark's own: VQAScore, CLIPScore, DSG, VIEScore, TIFA, or a
user's own ``evaluate`` module (``t2ireason evaluate --metric``, :meth:`t2ireason.runs.Run.evaluate`).

Each is a :class:`MetricScorer`, declared like a benchmark for everything an evaluation of a run does with one:
``name``, ``presets`` and ``default_preset`` (read by :func:`~t2ireason.judges.spec.judge_setting`), ``score(rows,
images, judge, **options)``, ``aggregate`` and ``paper_tables``. So an evaluation with another metric is scored,
journaled, resumed, split over the processes of a launch and written exactly as the benchmark's own is
(:mod:`t2ireason.run_evaluation`). The run's rows feed it as prompts: each row's ``Benchmark.row_id`` and
``Benchmark.prompt`` (and its config, ``Benchmark.row_config``, kept for the reports). What differs from a benchmark
the scorer says itself: how its setting is checked (:meth:`MetricScorer.check`), what it loads
(:meth:`MetricScorer.load`: a judge, a CLIP model, an evaluate module), what a pre-flight asks
(:meth:`MetricScorer.preflight`), and whether the evaluation's reply journal can keep its replies (``journaled``:
a judge's chat replies are journaled; a CLIP model or a user's module asks nothing that could be).

:func:`metric_scorer` makes the scorer a metric name (or folder) asks for; :func:`evaluation_tables` lays out a
finished evaluation's tables from its ``scores.json`` alone (no model loaded).
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .baselines import BASELINES, PRESET_LLM, get_baseline, load_baseline, prompt_rows
from .baselines.base import AGGREGATE_OPTIONS, failed_image, image_source
from .judges.spec import BACKENDS as JUDGE_BACKENDS
from .results import Cell, ImageResult, PaperTable
from .stats import summarize

__all__ = ["MetricScorer", "BaselineScorer", "VQAScoreScorer", "CLIPScoreScorer", "ModuleScorer", "MetricModuleError",
           "metric_scorer", "metric_of", "evaluation_tables", "table_scorer", "BUILT_IN", "MODULE_CONTRACT"]

#: the metrics an evaluation of any run may name besides its benchmark's own
BUILT_IN = ("vqascore", "clip_score", *BASELINES)

#: what a user's own metric module must give back, said in every refusal
MODULE_CONTRACT = ("a metric module used as an evaluation of a run is an evaluate module whose compute(predictions="
                   "<the images' file paths>, references=<their prompts>, **options) returns a dict with 'scores': "
                   "one number per image, in order (None where it could not score one; an 'errors' list of the same "
                   "length may say why)")


class MetricScorer:
    """A metric scoring a run's images against their prompts (a subclass per kind). ``bench``: the run's
    benchmark, whose rows are given to :meth:`score`; None for rows that are prompts already (strings, or dicts
    with a ``prompt`` and an ``id``)."""

    #: the metric's name, as ``scores.json`` records it (``metric``)
    name: str = ""
    pretty_name: str = ""
    presets: dict[str, dict[str, Any]] = {}
    default_preset: str = "paper"
    #: whether the evaluation's reply journal keeps what its judge replies (a judge's chat replies)
    journaled: bool = True
    #: the options :meth:`score` takes, besides the bootstrap interval's
    score_options: frozenset[str] = frozenset()
    #: how the mean is printed
    decimals: int = 3

    def __init__(self, bench: Any = None):
        self.bench = bench

    @property
    def metric(self) -> str:
        return self.name

    @property
    def short_name(self) -> str:
        """The metric in an evaluation's default name."""
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # -- scoring ---------------------------------------------------------------------------------------------

    def check_options(self, options: dict[str, Any]) -> None:
        """An option neither :meth:`score` nor :meth:`aggregate` takes is a TypeError naming the known ones."""
        known = self.score_options | AGGREGATE_OPTIONS
        unknown = set(options) - known
        if unknown:
            from .judges.spec import unknown_options

            raise unknown_options(self.name, unknown, known)

    def score(self, rows: Sequence[Any], images: Sequence[Any], judge: Any, *, progress: bool | str = False,
              **options: Any) -> list[ImageResult]:
        """One :class:`~t2ireason.results.ImageResult` per image, its score None where it failed (and why)."""
        self.check_options(options)
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} images")
        prompts = ([{"id": self.bench.row_id(r), "prompt": self.bench.prompt(r)} for r in rows]
                   if self.bench is not None else prompt_rows(rows))
        own = {k: v for k, v in options.items() if k not in AGGREGATE_OPTIONS}
        results = self.score_prompts(prompts, list(images), judge, progress=progress, **own)  # none: options checked
        if self.bench is not None:
            for result, row in zip(results, rows):
                result.config = self.bench.row_config(row)
        return results

    def score_prompts(self, rows: list[dict[str, Any]], images: list[Any], judge: Any, *, progress: bool | str,
                      **options: Any) -> list[ImageResult]:
        raise NotImplementedError

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """``{<name>: the mean, "summary": its statistics and 95% bootstrap interval, "num_scored", "num_failed"}``;
        failed images are left out of the mean, and counted."""
        opts = {k: v for k, v in options.items() if k in AGGREGATE_OPTIONS}
        summary = summarize([r.score for r in results], **opts)
        mean = summary["mean"]
        return {self.name: None if mean != mean else mean, "summary": summary, "num_scored": summary["n"],
                "num_failed": summary["failed"]}

    def table_title(self, aggregate: dict[str, Any]) -> str:
        return self.pretty_name

    def table_decimals(self, aggregate: dict[str, Any]) -> int:
        return self.decimals

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """One table: the mean over the scored images with its 95% bootstrap interval, and the counts."""
        summary = aggregate.get("summary") or {}
        cell = Cell.of(summary)
        if aggregate.get(self.name) is not None:  # the metric's own corpus figure (CLIPScore's clamped mean)
            cell.value = aggregate[self.name]
        table = PaperTable(self.table_title(aggregate), [self.pretty_name, "scored", "failed"],
                           decimals=self.table_decimals(aggregate))
        table.rows[label] = {self.pretty_name: cell, "scored": Cell.of(summary.get("n")),
                             "failed": Cell.of(summary.get("failed"))}
        table.note = "mean over the scored images; a failed image is left out, never counted as zero"
        return [table]

    # -- the setting, the model, the pre-flight ---------------------------------------------------------------

    def check(self, setting: Any) -> None:
        """Everything about the setting that can be checked before anything is loaded or created."""
        from .scoring import check_setting

        check_setting(self, setting)

    def check_loadable(self, setting: Any) -> None:
        """What will be loaded can be (a local checkpoint's folder and config), said before anything is made."""
        from .scoring import check_loadable

        check_loadable(self, setting)

    def preflight_needs(self, options: dict[str, Any]) -> dict[str, bool]:
        """What a pre-flight probe of the judge asks (:func:`t2ireason.judges.preflight`)."""
        return {"structured": False}

    def preflight(self, setting: Any, judge: Any = None) -> None:
        """Ask an HTTP judge one probe of each kind scoring will ask (``judge``: the setting, loaded already)."""
        from .judges import preflight_spec

        preflight_spec(setting.loadable, setting.judge_kwargs, judge=judge, **self.preflight_needs(setting.options))

    def load(self, setting: Any, cache: str | bool, device: str | None = None) -> Any:
        """The model that scores (a judge behind the response cache ``cache``), on ``device`` in a launch."""
        from .judges import load_judge, on_device

        return load_judge(setting.loadable, cache=cache, **on_device(setting.loadable, setting.judge_kwargs, device))

    def record(self, judge: Any, setting: Any) -> dict[str, Any]:
        """What ``scores.json`` says about the model that scored (never a secret)."""
        from .scoring import judge_record

        return judge_record(judge, setting.preset, setting.preset_settings)

    def close(self) -> None:  # noqa: B027 - a scorer that loads nothing of its own has nothing to close
        """Release what :meth:`load` made besides the judge (a question LLM)."""


# -- DSG, VIEScore, TIFA -------------------------------------------------------------------------------------

#: the options of a metric whose questions an LLM writes that choose that LLM (:func:`~t2ireason.baselines.load_baseline`)
LLM_OPTIONS = frozenset({"llm", "llm_kwargs"})


class BaselineScorer(MetricScorer):
    """DSG, VIEScore or TIFA (:mod:`t2ireason.baselines`): its presets, its options, its tables. A metric whose
    questions an LLM writes (DSG, TIFA) takes ``llm`` and ``llm_kwargs`` among its options (default: the
    preset's LLM when the preset's judge scores, else the judge itself), and keeps each prompt's questions in
    ``criteria.sqlite`` beside the response cache (the default place with none): made once, whatever the
    processes, the resumes and the evaluations."""

    def __init__(self, name: str, bench: Any = None):
        super().__init__(bench)
        probe = get_baseline(name)
        self.asks_llm = hasattr(probe, "questions")
        self._probe = get_baseline(name, store=False) if self.asks_llm else probe  # checks options, touches no file
        self._baseline: Any = None
        self.name, self.pretty_name = probe.name, probe.pretty_name
        self.presets, self.default_preset = probe.presets, probe.default_preset
        # what it is loaded with (the question LLM, TIFA's question_filter) is taken then, not by each step
        self.load_options = (LLM_OPTIONS if self.asks_llm else frozenset()) | probe.load_options
        self.score_options = probe.score_options | self.load_options

    def score_prompts(self, rows, images, judge, *, progress, **options):
        options = {k: v for k, v in options.items() if k not in self.load_options}
        return (self._baseline or self._probe).score(rows, images, judge, progress=progress, **options)

    def aggregate(self, results, **options):
        return self._probe.aggregate(results, **{k: v for k, v in options.items() if k not in self.load_options})

    def paper_tables(self, aggregate, label):
        return self._probe.paper_tables(aggregate, label)

    def _llm(self, setting: Any) -> tuple[Any, dict[str, Any] | None]:
        """The ``llm`` and ``llm_kwargs`` options (:data:`~t2ireason.baselines.PRESET_LLM`: the preset's, unless a
        judge is named)."""
        return setting.options.get("llm", PRESET_LLM), setting.options.get("llm_kwargs")

    def _question_llm(self, setting: Any) -> tuple[Any, dict[str, Any] | None]:
        """The spec of the LLM that writes the questions (None: the judge itself), and its options."""
        llm, llm_kwargs = self._llm(setting)
        if llm != PRESET_LLM:
            return llm, llm_kwargs
        if not setting.is_preset_judge:
            return None, None  # the judge named writes the questions too
        preset = self.presets.get(setting.preset, {})
        return preset.get("llm"), {**preset.get("llm_kwargs", {}), **(llm_kwargs or {})}

    def check(self, setting):
        super().check(setting)
        own = {k: setting.options[k] for k in self._probe.load_options if k in setting.options}
        if own:  # a value of the wrong kind is said before anything is made
            get_baseline(self.name, store=False, **own)
        if self.asks_llm:
            from .judges import validate_judge

            llm, llm_kwargs = self._llm(setting)
            if llm not in (PRESET_LLM, None) and not isinstance(llm, str):
                raise ValueError(f"{self.name} option llm: a judge spec ('backend:model'), got {type(llm).__name__}")
            if llm_kwargs is not None and not isinstance(llm_kwargs, dict):
                raise ValueError(f"{self.name} option llm_kwargs: a JSON object, got {llm_kwargs!r}")
            if isinstance(llm, str) and llm != PRESET_LLM:
                validate_judge(llm, llm_kwargs)

    def check_loadable(self, setting):
        super().check_loadable(setting)
        own = {k: setting.options[k] for k in self._probe.load_options if k in setting.options}
        check = getattr(get_baseline(self.name, store=False, **own), "check_loadable", None) if own else None
        if check is not None:  # what it loads of its own (TIFA's QA model), before any question is paid for
            check()

    def _made(self, setting: Any, cache: str | bool, device: str | None) -> Any:
        """The baseline with its question LLM chosen as the metric module chooses it: the judge named writes the
        questions, the preset's judge leaves them to the preset's LLM."""
        from .judges import on_device

        # the questions kept beside the response cache (its file's folder), or in the default place
        store = Path(cache).expanduser().with_name("criteria.sqlite") if isinstance(cache, str | os.PathLike) else True
        keeps = {"store": store, "cache": cache} if self.asks_llm else {}
        llm, llm_kwargs = self._llm(setting) if self.asks_llm else (PRESET_LLM, None)
        if isinstance(llm, str) and llm != PRESET_LLM:
            llm_kwargs = on_device(llm, llm_kwargs or {}, device)
        named = None if setting.is_preset_judge else setting.judge
        own = {k: setting.options[k] for k in self._probe.load_options if k in setting.options}
        return load_baseline(self.name, preset=setting.preset, judge=named, llm=llm, llm_kwargs=llm_kwargs, **keeps,
                             **own)

    def load(self, setting, cache, device=None):
        judge = super().load(setting, cache, device)
        if self._baseline is None:
            self._baseline = self._made(setting, cache, device)
        return judge

    def preflight_needs(self, options):
        return {"structured": bool(options.get("structured_output")),
                "probabilities": options.get("answers") == "probability"}

    def preflight(self, setting, judge=None):
        super().preflight(setting, judge)
        llm, llm_kwargs = self._question_llm(setting) if self.asks_llm else (None, None)
        if isinstance(llm, str):  # the question LLM answers text alone
            from .judges import preflight_spec

            preflight_spec(llm, llm_kwargs, structured=False, images=False)

    def record(self, judge, setting):
        info = super().record(judge, setting)
        if self.asks_llm and self._baseline is not None:  # the model that wrote the questions
            info["questions_by"] = self._baseline.questions.llm_identity(judge)
        return info

    def close(self):
        if self._baseline is not None:
            self._baseline.close()
            self._baseline = None


# -- VQAScore and CLIPScore ----------------------------------------------------------------------------------

def _alignment_results(rows: list[dict[str, Any]], images: list[Any], score: Any, what: str) -> list[ImageResult]:
    """Each image scored by ``score(images, prompts)`` (:func:`t2ireason.alignment.score_readable`: an image that
    cannot be read, or was never made, is its own failure), a non-finite score a failure too."""
    from .alignment import score_readable

    scores, errors = score_readable(images, [r["prompt"] for r in rows], score)
    results = []
    for row, given, s, error in zip(rows, images, scores, errors):
        if error is None and not (isinstance(s, int | float) and math.isfinite(s)):
            s, error = None, f"{what} gave a non-finite score ({s})"
        results.append(ImageResult(id=row["id"], prompt=row["prompt"], score=None if error else float(s),
                                   image=image_source(given, None), failure=error))
    return results


class VQAScoreScorer(MetricScorer):
    """VQAScore (Lin et al., 2024): P("Yes" | image, 'Does this figure show "{prompt}"? ...') from any judge that
    gives answer probabilities (:func:`t2ireason.alignment.vqascore`); default judge MT2IE's Llava-v1.6-34b.
    Option ``question``: another template with a ``{prompt}`` slot."""

    name, pretty_name = "vqascore", "VQAScore"
    score_options = frozenset({"question"})

    @property
    def presets(self) -> dict[str, dict[str, Any]]:  # type: ignore[override]
        from .alignment import DEFAULT_VQASCORE_JUDGE

        return {"paper": {"judge": DEFAULT_VQASCORE_JUDGE}}

    def table_title(self, aggregate):
        return "VQAScore: P(Yes), 0-1"

    def score_prompts(self, rows, images, judge, *, progress, question=None):
        from .alignment import VQASCORE_QUESTION, vqascore

        template = question or VQASCORE_QUESTION
        if "{prompt}" not in template:
            raise ValueError(f"the VQAScore question template has no {{prompt}} placeholder: {template!r}")
        return _alignment_results(rows, images, lambda imgs, prompts: vqascore(
            imgs, prompts, judge, question=template, progress=progress), "the judge")

    def preflight_needs(self, options):
        return {"structured": False, "probabilities": True}


#: what CLIPScore's model takes (its ``judge_kwargs``): how the CLIP model is loaded and run
CLIP_MODEL_OPTIONS = frozenset({"device", "dtype", "batch_size", "revision"})


class CLIPScoreScorer(MetricScorer):
    """CLIPScore (:mod:`t2ireason.alignment`): the judge is the CLIP checkpoint (a Hub id or a local folder, ``hf:``
    before it allowed; default openai/clip-vit-base-patch32), its ``judge_kwargs`` how it is loaded (device, dtype,
    batch_size, revision); options ``definition`` ("hessel", the default, or "torchmetrics") and ``prefix``. No
    chat: nothing for the reply journal; a resume scores again only the images not saved yet (a local model,
    nothing paid)."""

    name, pretty_name = "clip_score", "CLIPScore"
    journaled = False
    score_options = frozenset({"definition", "prefix"})

    @property
    def presets(self) -> dict[str, dict[str, Any]]:  # type: ignore[override]
        from .alignment import DEFAULT_CLIP_MODEL

        return {"paper": {"judge": DEFAULT_CLIP_MODEL}}

    @staticmethod
    def model(judge: Any) -> str:
        text = str(judge)
        return text[3:] if text.startswith("hf:") else text

    @property
    def short_name(self) -> str:
        return self.name

    def table_title(self, aggregate):
        return f"CLIPScore ({aggregate.get('definition', 'hessel')})"

    def check(self, setting):
        from .alignment import check_clip_model, clip_definition

        if not isinstance(setting.judge, str):
            raise ValueError("clip_score's judge is a CLIP model: its Hub id or local folder (--judge <id or folder>)")
        backend = setting.judge.split(":", 1)[0]
        if backend != "hf" and backend in JUDGE_BACKENDS and not Path(setting.judge).expanduser().exists():
            raise ValueError(f"clip_score scores with a local CLIP model, not a judge: --judge {setting.judge!r} names "
                             f"a {backend} judge; give the CLIP model's Hub id or folder (default "
                             f"{self.presets['paper']['judge']}, e.g. --judge openai/clip-vit-large-patch14), or "
                             "leave --judge out")
        check_clip_model(self.model(setting.judge))
        unknown = set(setting.judge_kwargs) - CLIP_MODEL_OPTIONS
        if unknown:
            raise ValueError(f"clip_score's model takes {sorted(CLIP_MODEL_OPTIONS)} (judge_kwargs), not {sorted(unknown)}")
        batch = setting.judge_kwargs.get("batch_size", 32)
        if not isinstance(batch, int) or batch < 1:
            raise ValueError(f"clip_score judge_kwargs.batch_size must be an integer >= 1, got {batch!r}")
        try:
            self.check_options(setting.options)
        except TypeError as e:
            raise ValueError(f"clip_score scoring: {e}") from None
        clip_definition(setting.options.get("definition", "hessel"))

    def check_loadable(self, setting):
        from .alignment import CLIPLoadError

        folder = Path(self.model(setting.judge)).expanduser()
        if folder.is_dir() and not (folder / "config.json").is_file():
            raise CLIPLoadError(f"CLIP model folder {str(folder)!r} holds no config.json: not a saved model")

    def preflight(self, setting, judge=None):
        """A local model: nothing to ask before it is loaded."""

    def load(self, setting, cache, device=None):
        from .alignment import CLIPScorer

        kwargs = dict(setting.judge_kwargs)
        return CLIPScorer(self.model(setting.judge), device=kwargs.pop("device", None) or device, **kwargs)

    def record(self, judge, setting):
        from .judges.spec import portable_model

        name, revision = portable_model(judge.name)
        return {"backend": "clip", "model": judge.name, "revision": judge.revision or revision, "model_name": name,
                "preset": setting.preset, "sampling": None}

    def score_prompts(self, rows, images, judge, *, progress, definition="hessel", prefix=None):
        from .alignment import clip_definition, clip_score

        clip_definition(definition)
        return _alignment_results(rows, images, lambda imgs, prompts: clip_score(
            imgs, prompts, judge, definition=definition, prefix=prefix), "CLIP")

    def aggregate(self, results, **options):
        from .alignment import aggregate_clip_scores

        definition = options.get("definition", "hessel")
        out = super().aggregate(results, **options)
        scored = [r.score for r in results if r.score is not None]
        out[self.name] = aggregate_clip_scores(scored, definition) if scored else None
        out["definition"] = definition
        return out

    def table_decimals(self, aggregate):
        return 1 if aggregate.get("definition") == "torchmetrics" else 3  # 100 x cos, or 2.5 x cos


# -- a user's own evaluate module ----------------------------------------------------------------------------

class MetricModuleError(ValueError):
    """A user's metric module cannot score a run's images; the message says why and what it must do."""


class _LoadedModule:
    """A loaded evaluate module, as an evaluation records it."""

    def __init__(self, module: Any, ref: str, judge_spec: Any):
        self.module, self.ref, self.judge_spec = module, ref, judge_spec

    def identity(self) -> dict[str, Any]:
        from .redaction import redacted

        spec = self.judge_spec
        return {"backend": "evaluate", "model": self.ref,
                "judge": redacted(spec) if isinstance(spec, str) else None if spec is None else type(spec).__name__}


class ModuleScorer(MetricScorer):
    """A user's own metric: an ``evaluate`` module in a folder (``<folder>/<folder name>.py``) or on the Hub
    (``<namespace>/<name>``), loaded with ``evaluate.load(ref, **judge_kwargs)`` (and ``judge=`` when a judge is
    named), asked ``compute(predictions=<image paths>, references=<prompts>, **options)`` a chunk of images at a
    time; it must return ``scores``, one per image (:data:`MODULE_CONTRACT`), and is refused clearly otherwise. Its
    own judge calls are its own: the chunk is what a resume keeps (no reply journal)."""

    journaled = False

    def __init__(self, ref: str, bench: Any = None):
        super().__init__(bench)
        self.name = ref
        self.pretty_name = Path(ref.rstrip("/")).name or ref
        self.presets = {}

    @property
    def short_name(self) -> str:
        return self.pretty_name

    def check_options(self, options):
        """Any option is the module's own: it says what it takes."""

    def check(self, setting):
        if setting.judge is not None and not isinstance(setting.judge, str) and not hasattr(setting.judge, "identity"):
            raise ValueError(f"the judge of the metric module {self.name}: a spec string or a judge object")
        folder = Path(self.name)
        if folder.is_dir() and not (folder / f"{folder.name}.py").is_file():
            raise MetricModuleError(f"{self.name} holds no {folder.name}.py: an evaluate module's folder holds a script "
                                    "of its own name")

    def check_loadable(self, setting):
        """Loaded (and its output checked) when scoring starts."""

    def preflight(self, setting, judge=None):
        """The module's own judge, if any, is its own to check."""

    def load(self, setting, cache, device=None):
        import evaluate

        kwargs = dict(setting.judge_kwargs)
        if setting.judge is not None:
            kwargs["judge"] = setting.judge
        try:  # an experiment of its own: the processes of a launch each load one, and never share its cache files
            module = evaluate.load(self.name, experiment_id=f"t2ireason-{uuid.uuid4().hex[:12]}", **kwargs)
        except Exception as e:  # noqa: BLE001 - whatever the module's loading raises, said with what to do
            raise MetricModuleError(f"cannot load the metric module {self.name}: {type(e).__name__}: {e}; "
                                    f"{MODULE_CONTRACT}") from e
        if not callable(getattr(module, "compute", None)):
            raise MetricModuleError(f"{self.name} is no evaluate module (no compute); {MODULE_CONTRACT}")
        return _LoadedModule(module, self.name, setting.judge)

    def record(self, judge, setting):
        return {**judge.identity(), "model_name": self.pretty_name, "preset": None, "sampling": None}

    def score_prompts(self, rows, images, judge, *, progress, **options):
        from .images import ImageError, load_images

        loaded = load_images(images)
        results = [failed_image(row, image_source(given, image), f"image: {image}") if isinstance(image, ImageError)
                   else ImageResult(id=row["id"], prompt=row["prompt"], score=None, image=image_source(given, image))
                   for row, given, image in zip(rows, images, loaded)]
        asked = [k for k, image in enumerate(loaded) if not isinstance(image, ImageError)]
        if not asked:
            return results
        paths = [str(images[k]) if isinstance(images[k], str | os.PathLike) else images[k] for k in asked]
        out = judge.module.compute(predictions=paths, references=[rows[k]["prompt"] for k in asked], **options)
        scores, errors = _module_scores(self.name, out, len(asked))
        for k, score, error in zip(asked, scores, errors):
            results[k].score = score
            if score is None:
                results[k].failure = error or f"the metric module {self.pretty_name} gave no score"
        return results


def _module_scores(ref: str, out: Any, n: int) -> tuple[list[float | None], list[str | None]]:
    """The per-image scores (a NaN is no score) and errors of a module's output, or a MetricModuleError."""
    if not isinstance(out, dict):
        raise MetricModuleError(f"the metric module {ref} returned {type(out).__name__}, not a dict; {MODULE_CONTRACT}")
    scores = out.get("scores")
    if hasattr(scores, "tolist"):  # a numpy array
        scores = scores.tolist()
    if not isinstance(scores, list | tuple):
        said = "no per-image scores" if scores is None else f"'scores' as a {type(scores).__name__}"
        raise MetricModuleError(f"the metric module {ref} returned {said} (its keys: {sorted(out)}); {MODULE_CONTRACT}")
    if len(scores) != n:
        raise MetricModuleError(f"the metric module {ref} returned {len(scores)} scores for {n} images; "
                                f"{MODULE_CONTRACT}")
    kept: list[float | None] = []
    for i, s in enumerate(scores):
        if s is not None and (isinstance(s, bool) or not isinstance(s, int | float)):
            raise MetricModuleError(f"the metric module {ref} returned scores[{i}] = {s!r}, not a number; "
                                    f"{MODULE_CONTRACT}")
        kept.append(None if s is None or not math.isfinite(s) else float(s))
    errors = out.get("errors")
    errors = [None if e is None else str(e) for e in errors] if isinstance(errors, list) and len(errors) == n \
        else [None] * n
    return kept, errors


# -- which metric ------------------------------------------------------------------------------------------------

def _looks_like_hub_id(text: str) -> bool:
    parts = text.split("/")
    return len(parts) == 2 and all(parts) and not text.startswith((".", "~")) and " " not in text


def metric_scorer(metric: str | None, bench: Any = None) -> MetricScorer | None:
    """The scorer of ``metric`` for the rows of ``bench`` (None: prompt rows), or None for ``bench``'s own metric
    (no metric named, or its own named). A name of :data:`BUILT_IN` (``-`` and case forgiven), a folder holding an
    evaluate module, or a Hub id (``<namespace>/<name>``); another benchmark's metric, which scores that benchmark's
    own rows, is refused, and so is any other name, with what is known."""
    if metric is None:
        return None
    if not isinstance(metric, str) or not metric.strip():
        raise ValueError(f"a metric is a name, a folder or a Hub id, got {metric!r}")
    key = metric.strip().lower().replace("-", "_")
    if bench is not None and key == bench.metric:
        return None
    if key == "vqascore":
        return VQAScoreScorer(bench)
    if key == "clip_score":
        return CLIPScoreScorer(bench)
    if key in BASELINES:
        return BaselineScorer(key, bench)
    from .benchmarks import JUDGED, get_benchmark

    owners = {get_benchmark(b).metric: get_benchmark(b).pretty_name for b in JUDGED}
    if key in owners:
        raise ValueError(f"{key} is {owners[key]}'s metric: it scores {owners[key]}'s own rows (a run of "
                         f"{owners[key]}), not these; other metrics: {', '.join(BUILT_IN)}")
    folder = Path(metric).expanduser()
    if folder.is_dir():
        return ModuleScorer(str(folder.resolve()), bench)
    if key == "meta_evaluation":
        raise ValueError("meta_evaluation compares scores with ratings: it scores no image")
    if _looks_like_hub_id(metric.strip()) and not folder.exists():
        return ModuleScorer(metric.strip(), bench)
    own = f"{bench.metric} (the benchmark's own), " if bench is not None and bench.metric else ""
    raise ValueError(f"unknown metric {metric!r}{_closest_metric(key, bench)}: known {own}{', '.join(BUILT_IN)}, or a "
                     "folder holding an evaluate module (<folder>/<folder name>.py), or its Hub id (<namespace>/<name>)")


def _closest_metric(key: str, bench: Any) -> str:
    """`` (did you mean 'vqascore'?)`` for ``vqa_score``, ``CLIPScore``...: the known names compared without their
    underscores, as users write them (the paper's CLIPScore, the module's clip_score)."""
    import difflib

    known = [*BUILT_IN, *([bench.metric] if bench is not None and bench.metric else [])]
    plain = {name.replace("_", ""): name for name in known}
    close = difflib.get_close_matches(key.replace("_", ""), list(plain), n=1, cutoff=0.6)
    return f" (did you mean {plain[close[0]]!r}?)" if close else ""


def metric_of(scores: dict[str, Any], bench: Any) -> str:
    """The metric of a finished evaluation: ``scores.json``'s ``metric``, else its settings', else the benchmark's
    own (evaluations made before the field was written)."""
    return scores.get("metric") or (scores.get("settings") or {}).get("metric") or bench.metric


def evaluation_tables(scores: dict[str, Any], bench: Any, label: str) -> list[PaperTable]:
    """The tables of a finished evaluation of a run of ``bench`` from its ``scores.json`` (no model loaded): the
    benchmark's paper tables for its own metric, else the metric's own (a baseline's, or the mean with its
    interval)."""
    metric = metric_of(scores, bench)
    if metric == bench.metric:
        return bench.paper_tables(scores["aggregate"], label)
    return table_scorer(metric, bench).paper_tables(scores["aggregate"], label)


def table_scorer(metric: str, bench: Any = None) -> MetricScorer:
    """The scorer that lays out a finished evaluation's tables: a user's module by its name alone (never loaded,
    nor looked for: it may live elsewhere now)."""
    key = metric.strip().lower().replace("-", "_")
    return metric_scorer(key, bench) if key in BUILT_IN else ModuleScorer(metric, bench)
