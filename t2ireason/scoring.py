"""What a benchmark's judge setting means, decided once for every way of scoring.

The metric modules (``evaluate.load("metrics/r2i_score", ...)``, through :mod:`t2ireason.metric`)
and ``t2ireason evaluate`` (:meth:`t2ireason.runs.Run.evaluate`, which calls the benchmark's
``score`` and ``aggregate`` itself so that it needs neither ``evaluate`` nor torch with an HTTP
judge) both take their judge, backend options and scoring options from :func:`judge_setting`,
check them with :func:`check_setting` before anything is loaded or created, and describe the
judge with :func:`judge_record`. This module imports nothing heavy.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .benchmarks import Benchmark

__all__ = ["JudgeSetting", "judge_setting", "check_setting", "check_options", "judge_record",
           "portable_model", "model_fingerprint"]


@dataclass(frozen=True)
class JudgeSetting:
    """A benchmark's preset resolved against what the caller gave."""

    preset: str
    #: a spec string or a judge object; None when neither the caller nor the preset names one
    judge: Any
    judge_kwargs: dict[str, Any] = field(default_factory=dict)
    #: the scoring options: the preset's, under the caller's
    options: dict[str, Any] = field(default_factory=dict)


def judge_setting(bench: Benchmark, preset: str | None = None, judge: Any = None,
                  judge_kwargs: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> JudgeSetting:
    """The judge, backend options and scoring options of ``preset`` (default: the benchmark's),
    with the caller's on top. When ``judge`` is not the preset's own, the preset's backend
    settings (dtype, image format...) are not for it: only its ``sampling``, which is the
    protocol's, carries over unless ``judge_kwargs`` say otherwise."""
    name = preset or getattr(bench, "default_preset", "paper")
    presets = getattr(bench, "presets", {})
    if presets and name not in presets:
        raise ValueError(f"unknown preset {name!r} for {bench.name}; known: {', '.join(presets)}")
    chosen = dict(presets.get(name, {}))
    preset_kwargs = dict(chosen.get("judge_kwargs", {}))
    if judge is not None and judge != chosen.get("judge"):
        preset_kwargs = {k: v for k, v in preset_kwargs.items() if k == "sampling"}
    return JudgeSetting(preset=name, judge=judge if judge is not None else chosen.get("judge"),
                        judge_kwargs={**preset_kwargs, **(judge_kwargs or {})},
                        options={**chosen.get("options", {}), **(options or {})})


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
    validate_judge(setting.judge, setting.judge_kwargs)
    check_options(bench, setting.options)


# -- what the results say about the judge ---------------------------------------------------------------

def judge_record(judge: Any, preset: str | None = None) -> dict[str, Any]:
    """The judge's identity and sampling defaults (never secrets), the preset, and
    ``model_name``: the model as anyone can name it (a local folder's path is not portable)."""
    info = dict(judge.identity())
    sampling = getattr(judge, "default_sampling", None)
    info["sampling"] = sampling.to_dict() if sampling is not None else None
    name, revision = portable_model(str(info.get("model", "")))
    info["model_name"] = name
    if revision and not info.get("revision"):
        info["revision"] = revision
    if preset is not None:
        info["preset"] = preset
    return info


#: a folder of the Hugging Face cache: .../models--<org>--<name>/snapshots/<commit>
_HUB_SNAPSHOT = re.compile(r"models--(?P<repo>[^/\\]+)[/\\]snapshots[/\\](?P<commit>[0-9a-f]{40})[/\\]?$")


def portable_model(model: str) -> tuple[str, str | None]:
    """``(name, revision)`` of a judge's model: a Hub id stays as it is; a snapshot folder of
    the Hugging Face cache becomes its repository id and commit; another local folder its
    own name (its contents are identified by :func:`model_fingerprint`)."""
    found = _HUB_SNAPSHOT.search(model)
    if found:
        return found["repo"].replace("--", "/"), found["commit"]
    local = os.path.isabs(model) or model.startswith(("./", "../", "~")) or os.path.isdir(model)
    if not local:
        return model, None
    return Path(model.rstrip("/\\")).expanduser().name or model, None


def model_fingerprint(folder: str | os.PathLike) -> str | None:
    """``sha256:<hex>`` over a local model folder's files (relative paths and contents, in
    order), or None when ``folder`` is not a folder. Reads every byte once: computed when an
    evaluation is first recorded, not on every call."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not any(
            part.startswith(".") for part in p.relative_to(root).parts)):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda f=f: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return f"sha256:{digest.hexdigest()}"
