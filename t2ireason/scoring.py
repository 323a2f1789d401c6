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
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .redaction import redacted

if TYPE_CHECKING:
    from .benchmarks import Benchmark
    from .judges.spec import JudgeSpec

__all__ = ["JudgeSetting", "PresetSettings", "judge_setting", "check_setting", "check_loadable", "check_options",
           "judge_record", "judge_is_model", "checkpoint_names", "report_preset_settings", "portable_model",
           "judge_name", "model_fingerprint"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeSetting:
    """A benchmark's preset resolved against what the caller gave."""

    preset: str
    #: a spec string or a judge object; None when neither the caller nor the preset names one
    judge: Any
    judge_kwargs: dict[str, Any] = field(default_factory=dict)
    #: the scoring options: the preset's, under the caller's
    options: dict[str, Any] = field(default_factory=dict)
    #: what became of the preset's backend settings (:class:`PresetSettings`), None when it has none
    preset_settings: PresetSettings | None = None
    #: the judge's spec, parsed once; None for a judge object, for no judge, and for a spec that does
    #: not parse (:func:`check_setting` names what is wrong with it)
    spec: JudgeSpec | None = None

    @property
    def loadable(self) -> Any:
        """What :func:`~t2ireason.judges.load_judge` and its checks take: the parsed spec, or the judge
        object (or the spec text that does not parse, for its error)."""
        return self.spec if self.spec is not None else self.judge


@dataclass(frozen=True)
class PresetSettings:
    """Which of a preset's backend settings a judge got, and why the others not: the judge is the
    preset's model (whatever its spec's spelling) or another one, and its backend takes each
    setting or not. :meth:`line` says it in one line; :meth:`to_dict` is what results record."""

    preset: str
    #: the preset's judge spec
    preset_judge: str
    #: the judge as given (a spec, its URL's password masked, or a judge object's class name)
    judge: str
    #: whether the judge is the preset's model
    same_model: bool
    #: how the judge's model was recognised ("the same spec", "config.json _name_or_path 'Qwen/...'",
    #: "the API model name"...), or why it is another model
    recognised: str
    applied: tuple[str, ...] = ()
    #: setting -> why it was not applied
    not_applied: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        head = f"preset {self.preset!r} ({self.preset_judge}): judge {self.judge} "
        head += f"is the preset's model ({self.recognised})" if self.same_model else f"is another model ({self.recognised})"
        said = [f"applied: {', '.join(self.applied)}" if self.applied else "no preset setting applied"]
        if self.not_applied:
            said.append("not applied: " + "; ".join(f"{k} ({why})" for k, why in self.not_applied.items()))
        return head + "; " + "; ".join(said)

    def to_dict(self) -> dict[str, Any]:
        return {"preset": self.preset, "preset_judge": self.preset_judge, "judge": self.judge,
                "same_model": self.same_model, "recognised": self.recognised, "applied": list(self.applied),
                "not_applied": dict(self.not_applied), "line": self.line()}


def judge_setting(bench: Benchmark, preset: str | None = None, judge: Any = None,
                  judge_kwargs: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> JudgeSetting:
    """The judge, backend options and scoring options of ``preset`` (default: the benchmark's),
    with the caller's on top.

    The preset's backend settings (dtype, device_map, pixel limits, generation_config, retries...)
    follow the preset's MODEL, not the spelling of its spec: a judge named otherwise that is the
    same model (a local folder of the checkpoint, recognised by the name in its ``config.json``
    or the folder's name; ``vllm:`` of the same checkpoint; the same API model behind another base
    URL) gets every setting its backend takes, and :attr:`JudgeSetting.preset_settings` says which
    were applied and which could not be (a transformers-only setting on a vLLM judge). Another
    model gets only the preset's ``sampling``, which is the protocol's."""
    name = preset or getattr(bench, "default_preset", "paper")
    presets = getattr(bench, "presets", {})
    if presets and name not in presets:
        raise ValueError(f"unknown preset {name!r} for {bench.name}; known: {', '.join(presets)}")
    chosen = dict(presets.get(name, {}))
    preset_kwargs = dict(chosen.get("judge_kwargs", {}))
    given = judge if judge is not None else chosen.get("judge")
    spec = _parsed(given)
    report = None
    if chosen.get("judge") is not None and preset_kwargs:
        preset_kwargs, report = _preset_settings_for(name, chosen["judge"], given, spec, preset_kwargs,
                                                     judge_kwargs or {})
    return JudgeSetting(preset=name, judge=given, judge_kwargs={**preset_kwargs, **(judge_kwargs or {})},
                        options={**chosen.get("options", {}), **(options or {})}, preset_settings=report, spec=spec)


def _parsed(judge: Any) -> JudgeSpec | None:
    """``judge``'s spec parsed, or None (a judge object, none, or a spec that does not parse)."""
    from .judges import JudgeError, JudgeSpec

    if not isinstance(judge, str | JudgeSpec):
        return None
    try:
        return JudgeSpec.of(judge)
    except JudgeError:
        return None


# -- is the judge the preset's model? ---------------------------------------------------------------------

def _preset_settings_for(preset: str, preset_judge: str, judge: Any, spec: JudgeSpec | None,
                         preset_kwargs: dict[str, Any], caller_kwargs: dict[str, Any]
                         ) -> tuple[dict[str, Any], PresetSettings]:
    """The preset's backend settings that ``judge`` (parsed: ``spec``) gets, and the report of what
    became of each."""
    from .judges import JudgeSpec

    wanted = _parsed(preset_judge)
    if not isinstance(judge, str | JudgeSpec):
        shown = f"<{type(judge).__name__} object>"
        model = str(getattr(judge, "model", "") or "")
        same = bool(model) and wanted is not None and _same_model(model, wanted.model)
        why = "a judge object, built by the caller: its settings are its own"
        report = PresetSettings(preset, preset_judge, shown, same, f"model {model!r}" if model else "no model name",
                                not_applied={k: why for k in preset_kwargs})
        return {}, report
    text = judge.text if isinstance(judge, JudgeSpec) else judge
    if spec is None or wanted is None:  # a spec check_setting will name (or no backend's): only the same spelling
        same, recognised = text == preset_judge, "the same spec" if text == preset_judge else "unread"
    else:
        same, recognised = (True, "the same spec") if text == preset_judge else judge_is_model(spec, wanted)
    kept: dict[str, Any] = {}
    applied: list[str] = []
    not_applied: dict[str, str] = {}
    taken = spec.backend_options() if spec is not None else None
    for key, value in preset_kwargs.items():
        if key in caller_kwargs:
            not_applied[key] = "judge_kwargs give their own"
        elif not same and key != "sampling":
            not_applied[key] = "for the preset's model only"
        elif taken is not None and key not in taken:
            not_applied[key] = f"the {spec.backend} backend takes no such option"
        else:
            kept[key] = value
            applied.append(key)
    shown = redacted(text)  # the line is logged and recorded: never a URL's password
    return kept, PresetSettings(preset, preset_judge, shown, same, recognised, tuple(applied), not_applied)


def judge_is_model(spec: str | JudgeSpec, preset_judge: str | JudgeSpec) -> tuple[bool, str]:
    """``(same, how)``: whether the judge ``spec`` is the model of ``preset_judge``, whatever the
    spelling: an API model by its name (whatever the base URL; a dated snapshot, ``gpt-4o-2024-08-06``, is
    its model, ``gpt-4o``), a checkpoint by its Hub id, a local
    folder by the checkpoint name its ``config.json`` records (``_name_or_path``, ``name_or_path``),
    else by the Hub cache snapshot it is or the folder's own name."""
    from .judges import JudgeSpec

    spec = JudgeSpec.of(spec)
    model, wanted = spec.model, JudgeSpec.of(preset_judge).model
    names = [(model, "its Hub id" if spec.is_local() else "the API model name")]
    if spec.local_folder() is not None:
        names = checkpoint_names(model)
    for name, how in names:
        if _same_model(name, wanted):
            return True, f"{how} {name!r}" if name != model else how
    base = _undated(model)
    if not spec.is_local() and base.lower() == _undated(wanted).lower():  # gpt-4o-2024-08-06 is gpt-4o
        of = f"a dated snapshot of {base!r}" if base != model else f"of which the preset's {wanted!r} is a dated snapshot"
        return True, f"the API model name {model!r} ({of})"
    shown = ", ".join(f"{how} {name!r}" for name, how in names)
    return False, f"{shown}, not {wanted!r}"


#: the date an API names a model's snapshot by (OpenAI's gpt-4o-2024-08-06, Anthropic's ...-20241022)
_SNAPSHOT_DATE = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")


def _undated(model: str) -> str:
    """An API model name without its snapshot date: ``gpt-4.1-2025-04-14`` -> ``gpt-4.1`` (and
    ``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``, another model than ``gpt-4o``)."""
    return _SNAPSHOT_DATE.sub("", model.strip())


def checkpoint_names(folder: str) -> list[tuple[str, str]]:
    """The names a local checkpoint folder answers to, with where each was read: the checkpoint
    name its ``config.json`` records (transformers writes ``_name_or_path`` when it saves a model
    loaded from the Hub), then the Hub repository of a Hub cache snapshot, or the folder's name."""
    import json

    names: list[tuple[str, str]] = []
    config = Path(folder).expanduser() / "config.json"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    for key in ("_name_or_path", "name_or_path"):
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str) and value.strip():
            names.append((value.strip(), f"config.json {key}"))
    name, revision = portable_model(folder)
    names.append((name, "the Hub cache snapshot of" if revision else "the folder name"))
    return names


def _looks_local(model: str) -> bool:
    return os.path.isabs(model) or model.startswith(("./", "../", "~")) or os.path.isdir(os.path.expanduser(model))


def _same_model(name: str, wanted: str) -> bool:
    """Whether a checkpoint or API model ``name`` is ``wanted`` (a Hub id or an API model name):
    the same id (case aside), or, for a bare name or a local path, the same last part
    (``/models/Qwen2.5-VL-72B-Instruct`` is ``Qwen/Qwen2.5-VL-72B-Instruct``; ``other-org/<name>``,
    a fine-tune published elsewhere, is not)."""
    a, b = name.strip().rstrip("/\\").lower(), wanted.strip().rstrip("/").lower()
    if a == b:
        return True
    pathlike = _looks_local(name) or "\\" in a or a.count("/") != 1
    return pathlike and Path(a.replace("\\", "/")).name == Path(b).name


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
        if setting.judge != getattr(bench, "presets", {}).get(setting.preset, {}).get("judge"):
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


def judge_name(judge: dict[str, Any]) -> str | None:
    """A recorded judge's model (:func:`judge_record`) by a name anyone can use: its ``model_name``, else
    :func:`portable_model` of its ``model``; None for a judge without a model."""
    if judge.get("model_name"):
        return judge["model_name"]
    return portable_model(str(judge["model"]))[0] if judge.get("model") else None


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
