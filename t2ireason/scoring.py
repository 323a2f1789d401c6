"""A benchmark's judge setting checked, and the judge described, the same for every way of scoring.

The metric modules (``evaluate.load("metrics/r2i_score", ...)``, through :mod:`t2ireason.metric`), the rewards
and ``t2ireason evaluate`` (:meth:`t2ireason.runs.Run.evaluate`, which calls the benchmark's ``score`` and
``aggregate`` itself so that it needs neither ``evaluate`` nor torch with an HTTP judge) all take their judge,
backend options and scoring options from :func:`~t2ireason.judges.spec.judge_setting` (the one place a judge's
spec and preset are resolved; re-exported here), check them with :func:`check_setting` before anything is loaded
or created, and describe the judge with :func:`judge_record`. This module imports nothing heavy.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .judges.spec import (
    JudgeSetting,
    PresetSettings,
    checkpoint_names,
    judge_is_model,
    judge_name,
    judge_setting,
    portable_model,
)

if TYPE_CHECKING:
    from .benchmarks import Benchmark

__all__ = ["JudgeSetting", "PresetSettings", "judge_setting", "check_setting", "check_loadable", "check_options",
           "judge_record", "judge_is_model", "checkpoint_names", "report_preset_settings", "portable_model",
           "judge_name"]

logger = logging.getLogger(__name__)


def check_options(bench: Benchmark, options: dict[str, Any]) -> None:
    """Scoring options the benchmark does not take are a ValueError naming them and the known
    ones: the benchmark's own check runs on zero images, so nothing is asked or created."""
    from .judges import check_sampling
    from .judges.scripted import ScriptedJudge

    check_sampling(options.get("sampling"), "options.sampling")
    try:
        bench.score([], [], ScriptedJudge([]), progress=False, **options)
    except TypeError as e:  # the benchmarks' error for an unknown option name
        raise ValueError(f"{bench.name} scoring: {e}") from None


def check_setting(bench: Benchmark, setting: JudgeSetting) -> None:
    """Everything about a judge setting that can be checked before anything is loaded or
    created: a judge is named, its spec, its local folder and backend options
    (:func:`t2ireason.judges.validate_judge`), the sampling values, the scoring options."""
    from .judges import validate_judge

    if setting.judge is None:
        raise ValueError(f"no judge given and the {setting.preset!r} preset of {bench.name} names none: "
                         "pass a judge ('backend:model')")
    from .judges import check_sampling

    # first, so that a bad value is named where the user wrote it (judge_kwargs.sampling...)
    check_sampling(setting.judge_kwargs.get("sampling"), "judge_kwargs.sampling")
    validate_judge(setting.loadable, setting.judge_kwargs)
    check_options(bench, setting.options)


def check_loadable(bench: Benchmark, setting: JudgeSetting) -> None:
    """A local judge's checkpoint can be loaded (:func:`t2ireason.judges.checkpoints.check_checkpoint`:
    its folder or the Hub cache, its config, its family), checked before anything is made by whoever
    will load it; when it is the preset's own judge, the error says so."""
    from .judges import JudgeError
    from .judges.checkpoints import check_checkpoint

    if setting.spec is None:
        return
    try:
        check_checkpoint(setting.spec, setting.judge_kwargs)
    except JudgeError as e:
        if not setting.is_preset_judge:
            raise
        raise JudgeError(f"{e} (the {setting.preset!r} preset's judge; --judge or judge= names another)") from None


# -- what the results say about the judge ---------------------------------------------------------------

def judge_record(judge: Any, preset: str | None = None, preset_settings: PresetSettings | None = None) -> dict[str, Any]:
    """The judge's identity and sampling defaults (never secrets), the preset, ``model_name``: the
    model as anyone can name it (a local folder's path is not portable), and ``preset_settings``:
    which of the preset's backend settings the judge got (:class:`PresetSettings`)."""
    info = dict(judge.identity())
    sampling = getattr(judge, "default_sampling", None)
    info["sampling"] = sampling.to_dict() if sampling is not None else None
    name, revision = portable_model(str(info.get("model", "")))
    info["model_name"] = name
    if revision and not info.get("revision"):
        info["revision"] = revision
    if preset is not None:
        info["preset"] = preset
    if preset_settings is not None:
        info["preset_settings"] = preset_settings.to_dict()
    return info


def report_preset_settings(setting: JudgeSetting) -> None:
    """Say in the log, once per judge loaded, what became of the preset's backend settings."""
    if setting.preset_settings is not None:
        report = setting.preset_settings
        level = logging.WARNING if report.not_applied and report.same_model else logging.INFO
        logger.log(level, "%s", report.line())


