"""A judge named and resolved, in one place: the spec parsed once, and the preset that applies to it.

``JudgeSpec.parse("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1")`` names the backend,
the model and the base URL; :func:`~t2ireason.judges.load_judge`, :func:`~t2ireason.judges.validate_judge`,
:func:`~t2ireason.judges.preflight_spec` and the data engine take the value rather than splitting the text again.

:func:`judge_setting` resolves a benchmark's preset against what the caller gave: the judge, its spec parsed, the
backend options and scoring options, and whether the judge is the preset's model whatever its spelling (a checkpoint
folder by the names it answers to, :func:`checkpoint_names`; a dated API snapshot; :func:`judge_is_model`) with
the preset's backend settings applied and not applied (:class:`PresetSettings`). The result, a
:class:`JudgeSetting`, is the one value the metric modules, the rewards, the runs and the reports read;
:func:`portable_model` and :func:`judge_name` name a recorded judge's model as anyone can. Imports nothing heavy.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..redaction import redacted
from .base import JudgeError

__all__ = ["JudgeSpec", "BACKENDS", "parse_spec", "split_base_url", "SpecText", "JudgeSetting", "PresetSettings",
           "judge_setting", "judge_is_model", "checkpoint_names", "portable_model", "judge_name"]

#: spec prefix -> "module:class", imported only when used (vllm and openai are optional extras)
BACKENDS = {
    "hf": "t2ireason.judges.transformers_judge:TransformersJudge",
    "openai": "t2ireason.judges.openai_judge:OpenAIJudge",
    "vllm": "t2ireason.judges.vllm_judge:VLLMJudge",
}

#: where an openai spec's base URL starts: the first '@' followed by a scheme (a URL's own
#: ``user:password@`` comes after it)
_URL_START = re.compile(r"@(?=https?://)", re.IGNORECASE)


def split_base_url(model: str) -> tuple[str, str | None]:
    """``(model, base_url)`` of ``model[@base_url]``: the base URL starts at the first '@' followed by
    ``http://`` or ``https://`` (a URL's own ``user:password@`` stays in it), else at the last '@'. The
    rule of every spec that names an endpoint (judges, image generators).

    >>> split_base_url("gpt-image-1@http://user:pw@host:8000/v1")
    ('gpt-image-1', 'http://user:pw@host:8000/v1')
    """
    if "@" not in model:
        return model, None
    found = _URL_START.search(model)
    return (model[: found.start()], model[found.end():]) if found else tuple(model.rsplit("@", 1))


def did_you_mean(word: str, choices: Any) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_options(what: str, unknown: Any, known: Any) -> TypeError:
    """The error for option names no step takes: each named, with the closest known name where one is close
    (``max_reask``: did you mean ``max_reasks``?), and the known ones."""
    import difflib

    hints = [f"{close[0]!r} for {u!r}" for u in sorted(unknown)
             if (close := difflib.get_close_matches(u, sorted(known), n=1, cutoff=0.6))]
    return TypeError(f"unknown {what + ' ' if what else ''}option(s) {sorted(unknown)}"
                     f"{' (did you mean ' + ', '.join(hints) + '?)' if hints else ''}; known: {sorted(known)}")


@dataclass(frozen=True, repr=False)
class SpecText:
    """A parsed spec's parts (a judge's, an image generator's) and what it says of itself: its repr and
    ``str`` are :meth:`describe`, never a base URL's ``user:password@``; ``text`` is the spec as written."""

    backend: str
    model: str
    base_url: str | None = field(default=None, repr=False)
    text: str = field(default="", repr=False, compare=False)

    @classmethod
    def of(cls, spec: Any) -> Any:
        """``spec`` parsed, or as it is when it already is one."""
        return spec if isinstance(spec, cls) else cls.parse(spec)

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()!r})"

    def describe(self) -> str:
        """The spec as written, without a URL's ``user:password@``."""
        return redacted(self.text or f"{self.backend}:{self.model}" + (f"@{self.base_url}" if self.base_url else ""))

    def url_rule(self) -> str:
        """Which '@' the base URL follows, in words (for a message about a base URL that cannot work)."""
        last = self.base_url is not None and self.text.rpartition("@")[2] == self.base_url
        return "the last '@'" if last else "the first '@' followed by http:// or https://"


@dataclass(frozen=True, repr=False)
class JudgeSpec(SpecText):
    """A parsed judge spec. Its repr and ``str`` are redacted (a base URL's ``user:password@``);
    ``text`` is the spec as written."""

    @classmethod
    def parse(cls, text: Any) -> JudgeSpec:
        """The parts of ``backend:model[@base_url]``, or a :class:`JudgeError` saying what is wrong.
        Only an ``openai`` spec carries a base URL: it starts at the first '@' followed by ``http://``
        or ``https://`` (a URL's own ``user:password@`` stays in it), else at the last '@'.

        >>> JudgeSpec.parse("openai:m@http://user:pw@host:8000/v1").base_url
        'http://user:pw@host:8000/v1'
        """
        if not isinstance(text, str) or ":" not in text:
            guess = next((f" (did you mean '{b}:{redacted(text[len(b) + 1:])}'?)" for b in BACKENDS
                          if isinstance(text, str) and text.startswith(b) and len(text) > len(b) + 1), "")
            raise JudgeError(f"judge spec {redacted(text)!r} must look like 'backend:model' with a backend among "
                             f"{', '.join(BACKENDS)}{guess}")
        backend, model = text.split(":", 1)
        if backend not in BACKENDS:
            raise JudgeError(f"unknown judge backend {backend!r} in {redacted(text)!r}; known: {', '.join(BACKENDS)}"
                             + did_you_mean(backend, BACKENDS))
        base_url = None
        if backend == "openai":
            model, base_url = split_base_url(model)
        if not model:
            raise JudgeError(f"judge spec {redacted(text)!r} names no model")
        return cls(backend, model, base_url, text)

    def options(self) -> dict[str, Any]:
        """What the spec gives the backend's constructor beside the model: its base URL."""
        return {"base_url": self.base_url} if self.base_url is not None else {}

    def is_local(self) -> bool:
        """Whether the model runs in this process (``hf``, ``vllm``), not behind an endpoint."""
        return self.backend != "openai"

    def local_folder(self) -> Path | None:
        """The local folder a local judge's model names (a path, a name that exists here, or one whose first
        part is a folder here: :func:`t2ireason.files.names_folder`), there or not; else None (a Hub id)."""
        from ..files import names_folder

        if not self.is_local() or not (names_folder(self.model) or Path(self.model).expanduser().exists()):
            return None
        return Path(self.model).expanduser()

    def backend_class(self) -> type:
        module_name, cls_name = BACKENDS[self.backend].split(":")
        return getattr(importlib.import_module(module_name), cls_name)

    def backend_options(self) -> set[str] | None:
        """The option names the backend's constructor takes (for vLLM, whose engine takes any keyword,
        its named ones and the engine arguments a preset may set: ``engine_options``); None for a
        backend that takes any keyword and declares none."""
        cls = self.backend_class()
        params = inspect.signature(cls.__init__).parameters
        named = {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - {"self", "model"}
        if any(p.kind is p.VAR_KEYWORD for p in params.values()) and not hasattr(cls, "engine_options"):
            return None
        return named | set(getattr(cls, "engine_options", ()))


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """``(backend, model, base_url)`` of ``backend:model[@base_url]`` (see :meth:`JudgeSpec.parse`).

    >>> parse_spec("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1")
    ('openai', 'Qwen/Qwen2.5-VL-72B-Instruct', 'http://localhost:8000/v1')
    >>> parse_spec("hf:/models/tiny")
    ('hf', '/models/tiny', None)
    """
    parsed = JudgeSpec.parse(spec)
    return parsed.backend, parsed.model, parsed.base_url


# -- the preset that applies to a judge -----------------------------------------------------------------

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
    #: not parse (:func:`t2ireason.scoring.check_setting` names what is wrong with it)
    spec: JudgeSpec | None = None
    #: the preset's own judge spec (None when the preset names none)
    preset_judge: str | None = None

    @property
    def is_preset_judge(self) -> bool:
        """Whether the judge is the one the preset names, as the preset spells it (not given by the caller)."""
        return self.preset_judge is not None and self.judge == self.preset_judge

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


def judge_setting(bench: Any, preset: str | None = None, judge: Any = None,
                  judge_kwargs: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> JudgeSetting:
    """The judge, backend options and scoring options of ``preset`` (default: the benchmark's),
    with the caller's on top. ``bench`` is a benchmark (or any object with its ``name``, ``presets`` and
    ``default_preset``: a preset is data, read here without importing the benchmarks).

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
                        options={**chosen.get("options", {}), **(options or {})}, preset_settings=report, spec=spec,
                        preset_judge=chosen.get("judge"))


def _parsed(judge: Any) -> JudgeSpec | None:
    """``judge``'s spec parsed, or None (a judge object, none, or a spec that does not parse)."""
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


# -- a judge's model by a name anyone can use ----------------------------------------------------------

#: a folder of the Hugging Face cache: .../models--<org>--<name>/snapshots/<commit>
_HUB_SNAPSHOT = re.compile(r"models--(?P<repo>[^/\\]+)[/\\]snapshots[/\\](?P<commit>[0-9a-f]{40})[/\\]?$")


def portable_model(model: str) -> tuple[str, str | None]:
    """``(name, revision)`` of a judge's model: a Hub id stays as it is; a snapshot folder of
    the Hugging Face cache becomes its repository id and commit; another local folder its
    own name (its contents are identified by :func:`t2ireason.files.model_fingerprint`)."""
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
