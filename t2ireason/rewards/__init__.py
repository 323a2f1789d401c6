"""The metrics as rewards for RL fine-tuning loops: any prompt, tensors in, asynchronous, batched.

    reward = t2ireason.load_reward("r2i_score", judge="openai:gpt-4o", criteria_llm="openai:gpt-4o")
    scores, info = reward(images, prompts)              # a B x C x H x W tensor, one prompt per image
    future = reward.submit(images, prompts)             # at once; future.result() -> (scores, info)
    both = t2ireason.load_reward({"r2i_score": 0.7, "prism_score/aesthetics": 0.3}, judge=..., criteria_llm=...)

- :mod:`.reward`: :class:`Reward`, the callable, ``submit`` (a bounded executor), failures (``on_failure``),
  the weighted sum of several metrics;
- :mod:`.scorers`: each metric as a part of a reward, its per-image score on 0-1 (the metric's own reward);
- :mod:`.criteria`: the rows a judged metric scores against, given with the images or made from the prompt
  with each benchmark's own method, once per prompt, kept on disk;
- :mod:`.gathering`: several metrics' requests to one judge sent as one batch;
- :mod:`.prompt_files`: a file of prompts read into records (``t2ireason criteria``, :mod:`t2ireason.commands.criteria`,
  makes their criteria and writes them as a dataset with :func:`t2ireason.exports.write_criteria`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .criteria import METRIC_BENCHMARKS, Criteria
from .reward import ON_FAILURE, Component, Reward
from .scorers import PARTS, BenchmarkScorer, CLIPScorer, Scorer, VQAScorer

__all__ = ["load_reward", "Reward", "Component", "Criteria", "REWARDS", "ON_FAILURE", "PARTS"]

#: the metrics a reward can be made of
REWARDS = (*METRIC_BENCHMARKS, "vqascore", "clip_score")


def load_reward(name: str | Mapping[Any, float], judge: Any = None, *, criteria_llm: Any = None,
                preset: str | None = None, judge_kwargs: dict[str, Any] | None = None,
                options: dict[str, Any] | None = None, criteria_llm_kwargs: dict[str, Any] | None = None,
                cache: str | bool = False, criteria_cache: str | bool = True, dimension: str | None = None,
                track: str | None = None, language: str | None = None, question: str | None = None,
                model: Any = None, clip_kwargs: dict[str, Any] | None = None, on_failure: str = "mean",
                value_range: tuple[float, float] = (0.0, 1.0), max_in_flight: int = 2, workers: int = 1) -> Reward:
    """A reward: ``scores, info = reward(images, prompts, metadata=None)``, ``reward.submit(...)`` (see
    :class:`Reward`).

    ``name``: one of :data:`REWARDS`, or ``"<metric>/<part>"`` for one part of a metric's score
    (:data:`PARTS`: ``prism_score/alignment``, ``prism_score/aesthetics``, ``t2i_reasonscore/reason``,
    ``r2i_score/reasoning``...), or a mapping of such names (or of rewards already loaded) to weights: their
    weighted sum, every metric scoring the same images at once, the requests of those that share a judge
    sent together in one batch per round, each metric's score in ``info["components"]``.

    ``judge``: a spec (``"openai:gpt-4o"``, ``"hf:<model>"``, ``"vllm:<model>"``) or a judge object; default:
    the metric's preset's (VQAScore's: llava-v1.6-34b). Alone, a metric takes its judge as its module does
    (``preset``, ``judge_kwargs``, the preset's backend settings when the judge is its model, ``options``:
    scoring options); in a mapping, a spec is loaded once, with ``judge_kwargs``, and shared. ``cache``:
    the judges' response cache (default off: a training loop never shows a judge the same image twice).

    ``criteria_llm``: the LLM that makes a prompt's criteria when its metadata holds none, named like a
    judge (or an object), with ``criteria_llm_kwargs``; ``criteria_cache``: where they are kept (True: the
    default file beside the response cache; a path; False: memory only). ``dimension``: T2I-ReasonBench's,
    for prompts whose metadata names none; ``track`` and ``language``: PRISM-Bench's (default: the project's
    general alignment template, ``en``). ``question``: VQAScore's. ``model`` (and ``clip_kwargs``:
    ``device``, ``dtype``, ``batch_size``, ``revision``, ``prefix``): CLIPScore's model.

    ``on_failure``: what an image whose score failed gets (:data:`ON_FAILURE`: ``"mean"`` by default, the
    mean of its prompt's other images in the call, no push either way in its group; ``"nan"`` for a loop that
    masks NaN itself, ``"none"``, ``"zero"``; the count is ``info["num_failed"]``, how each was filled
    ``info["per_image"][i]["filled"]``). ``value_range``: the range of
    float images (``(0, 1)``, or ``(-1, 1)``). ``max_in_flight``: how many submitted calls may be
    unfinished (a further ``submit`` waits); ``workers``: how many are scored at once (1: one step at a time;
    more only for a judge that takes concurrent calls, an HTTP one).
    """
    settings = {"preset": preset, "judge_kwargs": judge_kwargs, "options": options, "cache": cache,
                "criteria_cache": criteria_cache, "dimension": dimension, "track": track, "language": language,
                "question": question, "model": model, "clip_kwargs": clip_kwargs}
    owned: list[Any] = []  # the rewards given in a mapping: the new one closes them
    loaded: list[Any] = []  # the judges loaded here and the scorers built here (which may load their own):
    built: list[Scorer] = []  # closed again when an argument further on is refused
    try:
        llm = _loaded(criteria_llm, criteria_llm_kwargs, loaded)
        if isinstance(name, Mapping):
            if preset is not None or options is not None:
                raise ValueError("preset and options are one metric's: load that metric alone with them and put the "
                                 "reward in the mapping ({load_reward('r2i_score', preset=...): 0.7, ...})")
            shared = _loaded(judge, judge_kwargs, loaded, cache) if judge is not None else None
            components: list[Component] = []
            scorers: dict[str, Any] = {}
            for key, weight in name.items():
                if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not math.isfinite(weight):
                    raise ValueError(f"the weight of {key!r} must be a finite number, got {weight!r}")
                if isinstance(key, Reward):
                    components += [Component(c.key, c.scorer, c.part, weight * c.weight) for c in key.components]
                    owned.append(key)
                    continue
                metric, part = _parse(key)
                if metric not in scorers:  # each metric's preset judge where none is given
                    scorers[metric] = _scorer(metric, shared, llm, settings, shared=shared is not None)
                    built.append(scorers[metric])
                components.append(Component(key, scorers[metric], part, float(weight)))
        else:
            metric, part = _parse(name)
            built.append(_scorer(metric, judge, llm, settings))
            components = [Component(name, built[0], part, 1.0)]
        return Reward(components, on_failure=on_failure, value_range=value_range, max_in_flight=max_in_flight,
                      workers=workers, owned=[*owned, *loaded])
    except BaseException:
        for thing in (*built, *loaded):
            thing.close()
        raise


def _parse(key: Any) -> tuple[str, str | None]:
    if not isinstance(key, str):
        raise ValueError(f"a reward is named by a string (one of {', '.join(REWARDS)}), got {type(key).__name__}")
    metric, _, part = key.strip().lower().replace("-", "_").partition("/")
    if metric not in REWARDS:
        raise ValueError(f"unknown reward {key!r}; known: {', '.join(REWARDS)} (and <metric>/<part>: "
                         f"{', '.join(f'{m}/{p}' for m, ps in PARTS.items() for p in ps)})")
    if part and part not in PARTS.get(metric, {}):
        known = ", ".join(PARTS.get(metric, {})) or "none"
        raise ValueError(f"{metric} has no part {part!r}; its parts: {known}")
    return metric, part or None


def _loaded(judge: Any, kwargs: dict[str, Any] | None, owned: list[Any], cache: str | bool = False) -> Any:
    """A judge spec loaded (and owned, to be closed with the reward; with the response cache ``cache``), or the
    object given, or None."""
    from ..judges import JudgeSpec, load_judge, validate_judge

    if not isinstance(judge, str | JudgeSpec):
        if kwargs and judge is not None:
            raise ValueError("judge options go with a judge spec, not a judge object (set them on the object)")
        return judge
    validate_judge(judge, kwargs)
    loaded = load_judge(judge, cache=cache, **(kwargs or {}))
    owned.append(loaded)
    return loaded


def _scorer(metric: str, judge: Any, llm: Any, settings: dict[str, Any], shared: bool = False) -> Any:
    """The scorer of ``metric`` with the reward's settings; a judge given as a spec is loaded here."""
    from ..judges import load_judge

    if metric == "clip_score":
        from ..alignment import DEFAULT_CLIP_MODEL

        kwargs = dict(settings["clip_kwargs"] or {})
        _check_clip_kwargs(kwargs)
        return CLIPScorer(settings["model"] or DEFAULT_CLIP_MODEL, kwargs.pop("prefix", None), **kwargs)
    if metric == "vqascore":
        from ..alignment import DEFAULT_VQASCORE_JUDGE
        from ..judges import validate_judge

        given = judge is not None and not _is_spec(judge)
        if not given:  # a misspelt option: a "did you mean", never a TypeError from the backend's constructor
            validate_judge(judge or DEFAULT_VQASCORE_JUDGE, settings["judge_kwargs"])
        loaded = judge if given else load_judge(judge or DEFAULT_VQASCORE_JUDGE, cache=settings["cache"],
                                                **(settings["judge_kwargs"] or {}))
        return VQAScorer(loaded, settings["question"], owns_judge=not given)
    from ..benchmarks import get_benchmark
    from ..judges.spec import judge_setting
    from ..scoring import check_setting, report_preset_settings

    bench = get_benchmark(METRIC_BENCHMARKS[metric])
    setting = judge_setting(bench, settings["preset"], judge, None if shared else settings["judge_kwargs"],
                            settings["options"])
    check_setting(bench, setting)
    choice = {"t2i_reasonscore": settings["dimension"], "prism_score": settings["track"]}.get(metric)
    if metric == "prism_score" and choice is not None:
        from ..benchmarks.prism_bench import TRACKS
        from ..benchmarks.prism_bench.protocol import GENERAL_TRACK

        if choice not in (*TRACKS, GENERAL_TRACK):
            raise ValueError(f"unknown PRISM-Bench track {choice!r}; known: {', '.join(TRACKS)}, {GENERAL_TRACK}")
    criteria = Criteria(metric, llm, cache=settings["criteria_cache"], choice=choice, language=settings["language"])
    if not _is_spec(setting.loadable):  # a judge object: the caller's (or the mapping's, shared)
        return BenchmarkScorer(metric, criteria, setting, setting.judge, owns_judge=False)
    report_preset_settings(setting)
    loaded = load_judge(setting.loadable, cache=settings["cache"], **setting.judge_kwargs)
    return BenchmarkScorer(metric, criteria, setting, loaded, owns_judge=True)


def _check_clip_kwargs(kwargs: dict[str, Any]) -> None:
    """CLIPScore's options (``clip_kwargs``) checked by name, with a "did you mean"."""
    import inspect

    from ..alignment import CLIPScorer as Model
    from ..judges.spec import did_you_mean

    names = ["prefix", *(n for n, p in inspect.signature(Model.__init__).parameters.items()
                         if p.kind is p.KEYWORD_ONLY)]
    for key in kwargs:
        if key not in names:
            raise ValueError(f"clip_kwargs takes no option {key!r}{did_you_mean(key, names)}; its options: "
                             f"{', '.join(names)}")


def _is_spec(value: Any) -> bool:
    from ..judges import JudgeSpec

    return isinstance(value, str | JudgeSpec)
