"""Baseline metrics the papers compare their own against, scoring an image against its prompt alone.

- :mod:`.dsg`: DSG, the Davidsonian Scene Graph score (Cho et al., ICLR 2024): an LLM writes the prompt's
  atomic tuples, their dependencies and one yes/no question each; a VLM answers; a question whose parent
  failed fails; score = the share that hold;
- :mod:`.viescore`: VIEScore (Ku et al., ACL 2024): a VLM rates semantic consistency and perceptual quality
  0-10 with the paper's text-to-image prompts, O = sqrt(min(SC) x min(PQ)), reasoning kept;
- :mod:`.tifa`: TIFA (Hu et al., ICCV 2023): an LLM writes multiple-choice questions with their answers; a VLM
  answers them; score = the share answered right.

Each is declared like a benchmark (``name``, ``presets``, ``score(rows, images, judge, **options)``,
``aggregate``), so that :func:`t2ireason.judges.spec.judge_setting` and ``check_setting`` set its judge up;
:func:`get_baseline` makes one. CLIPScore and VQAScore live in :mod:`t2ireason.alignment`. The questions an
LLM writes are made once per prompt and kept (:mod:`.questions`, through ``rewards.criteria``'s store).
"""

from __future__ import annotations

from typing import Any

from .base import Baseline, prompt_rows

__all__ = ["BASELINES", "PRESET_LLM", "Baseline", "get_baseline", "load_baseline", "prompt_rows", "score_images"]

#: the baseline metrics, by their metric module's name
BASELINES = ("dsg", "viescore", "tifa")


def get_baseline(name: str, **kwargs: Any) -> Baseline:
    """The baseline metric ``name`` (one of :data:`BASELINES`), made with ``kwargs`` (DSG's and TIFA's: ``llm``,
    ``llm_kwargs``, ``store``...)."""
    key = name.strip().lower().replace("-", "_")
    if key == "dsg":
        from .dsg import DSG

        return DSG(**kwargs)
    if key == "viescore":
        from .viescore import VIEScore

        return VIEScore(**kwargs)
    if key == "tifa":
        from .tifa import TIFA

        return TIFA(**kwargs)
    raise ValueError(f"unknown baseline metric {name!r}; known: {', '.join(BASELINES)}")


#: ``llm``'s default in :func:`load_baseline`: the preset's LLM, unless a judge is named
PRESET_LLM = "preset"


def load_baseline(name: str, *, preset: str | None = None, judge: Any = None, llm: Any = PRESET_LLM,
                  llm_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> Baseline:
    """The baseline ``name`` with its question LLM chosen as the metric modules and ``t2ireason evaluate``
    choose it: ``llm`` when given (a spec, a judge object, or None: the judge); else the judge itself when one
    is named (one model named does everything); else ``preset``'s LLM (and its ``llm_kwargs``, under the
    caller's). ``kwargs`` (``store``, ``cache``...) reach the metric. A metric that asks no LLM takes none."""
    probe = get_baseline(name)
    if not hasattr(probe, "questions"):
        if llm != PRESET_LLM or llm_kwargs or kwargs:
            raise ValueError(f"{name} asks no LLM for questions: it takes no llm, llm_kwargs, "
                             f"{', '.join(kwargs) or 'store'}")
        return probe
    if llm == PRESET_LLM and judge is not None:
        llm = None  # the judge named writes the questions too
    elif llm == PRESET_LLM:
        chosen = probe.setting(preset).preset
        llm, llm_kwargs = (probe.presets[chosen].get("llm"),
                           {**probe.presets[chosen].get("llm_kwargs", {}), **(llm_kwargs or {})})
    return get_baseline(name, llm=llm, llm_kwargs=llm_kwargs, **kwargs)


def score_images(name: str, images: Any, prompts: Any, judge: Any, *, progress: bool | str = False,
                 options: dict[str, Any] | None = None, **kwargs: Any) -> list:
    """``get_baseline(name, **kwargs).score(prompts, images, judge, **options)``, the metric closed after: one
    :class:`~t2ireason.results.ImageResult` per (image, prompt), its ``score`` on 0-1 (None where it failed)."""
    baseline = get_baseline(name, **kwargs)
    try:
        return baseline.score(prompts, images, judge, progress=progress, **(options or {}))
    finally:
        baseline.close()
