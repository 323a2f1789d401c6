"""What a judged metric needs to score an image of any prompt, made once per prompt and kept on disk.

R2I-Score, T2I-ReasonScore and the Knowledge Checklist Score judge an image against questions written for
its prompt; a training set's prompts come with none. :class:`Criteria` gives each prompt its benchmark row:
the one given with the image (``metadata``), or one made from the prompt by a criteria LLM with the
benchmark's own method:

- R2I-Bench: the appendix A.4 pipeline (:func:`~t2ireason.benchmarks.r2i_bench.generate_criteria`: imagine
  the image, design questions with criteria, weigh them), which starts from the prompt and its reference
  caption (the paper's [EXPECTED]);
- T2I-ReasonBench: stage I (:meth:`~t2ireason.benchmarks.t2i_reasonbench.T2IReasonBench.generate_criteria`,
  the templates of Figures 9 to 12) for the prompt's dimension, which starts from the prompt and the
  dimension's fields (an idiom and its meaning, or the prompt's explicit meaning);
- WorldGenBench: a knowledge checklist, items with their explanations, written with the project's own
  prompt (``templates/worldgenbench/checklist_generation.txt``): the paper prints none;
- PRISM-Bench needs no criteria: the track's alignment template (the track given, else the project's
  general alignment template, ``templates/prism_bench/project/alignment_general.txt``).

The fields a pipeline starts from that a prompt comes without (a reference caption, an explicit meaning)
are written first by the same LLM with the project's own prompt (``templates/rewards/prompt_fields.txt``):
the papers' authors wrote them while making their prompts and checked them by hand, and print no prompt
for writing them about a prompt given alone.

What is made is kept in an SQLite file (the response cache's store, :class:`~t2ireason.judges.cache.ResponseCache`),
keyed by the metric, the prompt with the fields it came with, the criteria LLM's identity and the method
(templates and version): made once, then read by every later call and every process. Processes (and
threads) making criteria at once take a file lock per key (hashed into :data:`LOCK_STRIPES` lock files), so
a prompt's criteria are asked for once even when several workers meet it together. A generation that
fails is not kept: it is asked again the next time; except for a method that keeps its failures
(:meth:`Method.keeps_failure`: DSG's and TIFA's questions), whose failure is recorded once, with its row, and
read back by every later call unless it asks again (``retry_failed``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from collections.abc import Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from ..files import json_text
from ..judges.base import ChatRequest
from ..parsing import ReplyParseError, ask_structured, extract_json
from ..prompts import render
from ..redaction import SECRET_NAME

__all__ = ["Criteria", "Method", "Made", "METRIC_BENCHMARKS", "LOCK_STRIPES", "default_criteria_path", "conform"]

#: metric -> the benchmark whose rows it scores
METRIC_BENCHMARKS = {"r2i_score": "r2i-bench", "t2i_reasonscore": "t2i-reasonbench",
                     "knowledge_checklist_score": "worldgenbench", "prism_score": "prism-bench"}
#: how many lock files the keys are hashed into (two processes making different prompts' criteria rarely wait)
LOCK_STRIPES = 4096
#: bumped when a method changes in a way its templates do not show: older criteria are then made again
_VERSION = 1

#: what the project's prompt asks for each field a pipeline starts from (templates/rewards/prompt_fields.txt)
FIELD_REQUESTS = {
    "reference_caption": "a caption of the correct image: what it must show once the reasoning the prompt asks "
                         "for is done (the answer it leads to, uniquely determined by the prompt)",
    "idiom": "the idiom the prompt uses, as it is usually written",
    "idiom_meaning": "what the idiom means",
    "explicit_meaning": "the prompt rewritten with what it implies made explicit: the entity it describes "
                        "named, or the visible outcome of the scientific law it implies described",
}


def default_criteria_path() -> Path:
    """``criteria.sqlite`` beside the response cache (:func:`~t2ireason.judges.cache.default_cache_path`): a
    file of its own, with no size limit, so that criteria are never evicted by the judge's replies."""
    from ..judges.cache import default_cache_path

    return default_cache_path().parent / "criteria.sqlite"


def conform(value: Any, feature: Any) -> Any:
    """``value`` with every field of ``feature`` (a ``datasets`` feature) present: a missing one None,
    records inside lists too; fields the schema lacks are dropped."""
    import datasets

    if isinstance(feature, dict) and isinstance(value, dict):
        return {k: conform(value.get(k), f) for k, f in feature.items()}
    if isinstance(feature, (datasets.List, datasets.LargeList)) and isinstance(value, (list, tuple)):
        return [conform(v, feature.feature) for v in value]
    return value


@dataclass
class Made:
    """One prompt's row, made or not: ``failure`` says why not (the row then has no criteria)."""

    row: dict[str, Any]
    failure: str | None = None
    #: what the generation noted (weights moved into their range...), and the fields written first
    notes: dict[str, Any] = field(default_factory=dict)


# -- the method of each metric ---------------------------------------------------------------------------

class Method:
    """What one metric needs for a prompt and how it is made: one subclass per benchmark here, and one per
    metric that makes its own questions (:mod:`t2ireason.baselines`: DSG, TIFA), whose ``bench`` is None and
    whose :attr:`features` are their own. :class:`Criteria` takes a metric's name or such an object."""

    metric: str
    #: the fields a metadata row that needs no generation holds (any one, non-empty)
    criteria_fields: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()

    #: how a message about a missing or unknown choice says to give one
    choice_hint = "load_reward(..., dimension=...) or a 'dimension' in metadata"

    def __init__(self, bench: Any, choice: str | None = None, language: str | None = None):
        self.bench = bench
        self.choice = choice
        self.language = language

    @property
    def features(self) -> Any:
        """The ``datasets.Features`` of a row."""
        return self.bench.features

    def given(self, meta: dict[str, Any]) -> bool:
        """Whether ``meta`` is already a row the metric scores (its criteria given)."""
        return any(meta.get(f) for f in self.criteria_fields)

    def row(self, prompt: str, meta: dict[str, Any], ident: str) -> dict[str, Any]:
        """``meta`` as a row of the benchmark's schema, about ``prompt``."""
        return self.with_id(conform({**meta, "prompt": prompt}, self.features), meta.get("id") or ident)

    def with_id(self, row: dict[str, Any], ident: Any) -> dict[str, Any]:
        return {**row, "id": str(ident)}

    def inputs(self, prompt: str, meta: dict[str, Any]) -> dict[str, Any]:
        """What making the row starts from: the prompt and the fields given with it that the method reads."""
        return {"prompt": prompt}

    def needed(self, inputs: dict[str, Any]) -> list[str]:
        """The fields the method starts from that ``inputs`` lacks (written first, :data:`FIELD_REQUESTS`)."""
        return []

    def make(self, inputs: list[dict[str, Any]], idents: list[str], llm: Any) -> list[Made]:
        raise NotImplementedError

    def configs(self, row: dict[str, Any]) -> list[str]:
        """The dataset configs ``row`` belongs to."""
        raise NotImplementedError

    def keeps_failure(self, made: Made) -> bool:
        """Whether the failure ``made`` is kept, read back by every later call rather than asked for again."""
        return False

    def method(self) -> dict[str, Any]:
        """What besides the inputs and the LLM decides the rows: the version and the templates' text."""
        digest = hashlib.sha256()
        for name in self.templates:
            digest.update((resources.files("t2ireason") / "templates" / name).read_bytes())
        return {"version": _VERSION, "templates": digest.hexdigest()}


class _R2I(Method):
    metric = "r2i_score"
    criteria_fields = ("questions",)
    templates = ("r2i_bench/imagine_image.txt", "r2i_bench/design_questions.txt", "r2i_bench/weight.txt",
                 "r2i_bench/weight_dimensions.txt", "rewards/prompt_fields.txt")
    _given = ("reference_caption", "assessment_point", "category", "subcategory")

    def with_id(self, row: dict[str, Any], ident: Any) -> dict[str, Any]:
        row = {**row, "source_id": str(ident)}
        for f in ("category", "subcategory"):
            row[f] = row.get(f) or "custom"
            row[f"{f}_cell"] = row.get(f"{f}_cell") or row[f]
        row["id"] = f"{row['category']}/{row['subcategory']}/{row['source_id']}"
        row["has_questions"] = bool(row.get("questions"))
        return row

    def inputs(self, prompt: str, meta: dict[str, Any]) -> dict[str, Any]:
        return {"prompt": prompt, **{f: meta[f] for f in self._given if meta.get(f)}}

    def needed(self, inputs: dict[str, Any]) -> list[str]:
        return [] if inputs.get("reference_caption") else ["reference_caption"]

    def make(self, inputs: list[dict[str, Any]], idents: list[str], llm: Any) -> list[Made]:
        from ..benchmarks.r2i_bench import generate_criteria

        made = generate_criteria([{**i, "source_id": ident} for i, ident in zip(inputs, idents)], llm)
        return [Made(g.row, g.failure, {"adjustments": g.adjustments} if g.adjustments else {}) for g in made]

    def configs(self, row: dict[str, Any]) -> list[str]:
        return ["all"] + ([row["category"]] if row.get("category") in self.bench.configs else [])


class _T2I(Method):
    metric = "t2i_reasonscore"
    criteria_fields = ("evaluation",)

    @property
    def templates(self) -> tuple[str, ...]:  # type: ignore[override]
        from ..benchmarks.t2i_reasonbench import DIMENSIONS

        return (*(f"t2i_reasonbench/criteria_{d}.txt" for d in DIMENSIONS), "rewards/prompt_fields.txt")

    def dimension(self, meta: dict[str, Any], prompt: str) -> str:
        from ..benchmarks.t2i_reasonbench import DIMENSIONS

        dim = meta.get("dimension") or self.choice
        if dim not in DIMENSIONS:
            said = f"dimension {dim!r} is not one of" if dim else "no dimension: give one of"
            raise ValueError(f"t2i_reasonscore judges a prompt by its dimension; {said} {', '.join(DIMENSIONS)} "
                             f"({self.choice_hint}), for {prompt[:60]!r}")
        return dim

    def row(self, prompt: str, meta: dict[str, Any], ident: str) -> dict[str, Any]:
        return super().row(prompt, {**meta, "dimension": self.dimension(meta, prompt)}, ident)

    def with_id(self, row: dict[str, Any], ident: Any) -> dict[str, Any]:
        from ..benchmarks.t2i_reasonbench.release import id_of

        given, _ = id_of({"id": ident}, 0, "prompt")
        return {**row, "id": given.id, "name": given.name, "original_id": given.original}

    def inputs(self, prompt: str, meta: dict[str, Any]) -> dict[str, Any]:
        from ..benchmarks.t2i_reasonbench import DIMENSIONS

        dim = self.dimension(meta, prompt)
        wanted = (*DIMENSIONS[dim].fields, "tag")
        return {"prompt": prompt, "dimension": dim, **{f: meta[f] for f in wanted if meta.get(f)}}

    def needed(self, inputs: dict[str, Any]) -> list[str]:
        from ..benchmarks.t2i_reasonbench import DIMENSIONS

        return [f for f in DIMENSIONS[inputs["dimension"]].fields if not inputs.get(f)]

    def make(self, inputs: list[dict[str, Any]], idents: list[str], llm: Any) -> list[Made]:
        out: list[Made | None] = [None] * len(inputs)
        for dim in dict.fromkeys(i["dimension"] for i in inputs):
            at = [k for k, i in enumerate(inputs) if i["dimension"] == dim]
            with warnings.catch_warnings():  # each failure is returned with its row, said by the caller
                warnings.simplefilter("ignore")
                rows = self.bench.generate_criteria([{**inputs[k], "id": idents[k]} for k in at], dim, llm)
            for k, row in zip(at, rows):
                failure = (json.loads(row["extra"]).get("criteria") or {}).get("failure")
                out[k] = Made(row, failure)
        return out  # type: ignore[return-value]  # every slot is filled

    def configs(self, row: dict[str, Any]) -> list[str]:
        return [row["dimension"], "all"]


class _Checklist(Method):
    metric = "knowledge_checklist_score"
    criteria_fields = ("checklist",)
    templates = ("worldgenbench/checklist_generation.txt",)

    def inputs(self, prompt: str, meta: dict[str, Any]) -> dict[str, Any]:
        domain = meta.get("domain")
        return {"prompt": prompt, **({"domain": domain} if domain in self.bench.configs else {})}

    def make(self, inputs: list[dict[str, Any]], idents: list[str], llm: Any) -> list[Made]:
        requests = [ChatRequest.simple(render("worldgenbench", "checklist_generation", prompt=i["prompt"]))
                    for i in inputs]
        parsed = ask_structured(llm, requests, _checklist_reply(self.bench.configs))
        model = llm.identity().get("model")
        out = []
        for i, ident, p in zip(inputs, idents, parsed):
            domain, checklist = p.value if p.ok else (None, [])
            info = {"criteria": {"model": model, "reasks": p.reasks, "domain_given": "domain" in i,
                                 **({} if p.ok else {"failure": p.error, "replies": p.texts})}}
            row = conform({"id": str(ident), "prompt": i["prompt"], "domain": i.get("domain") or domain or "nature",
                           "checklist": checklist, "extra": json_text(info)}, self.bench.features)
            out.append(Made(row, None if p.ok else f"checklist: {p.error}"))
        return out

    def configs(self, row: dict[str, Any]) -> list[str]:
        return [row["domain"]] if row.get("domain") in self.bench.configs else []


class _Prism(Method):
    metric = "prism_score"

    def given(self, meta: dict[str, Any]) -> bool:
        return True  # a track's template needs nothing made

    def row(self, prompt: str, meta: dict[str, Any], ident: str) -> dict[str, Any]:
        from ..benchmarks.prism_bench.protocol import GENERAL_TRACK

        track = meta.get("track") or self.choice or GENERAL_TRACK
        return super().row(prompt, {**meta, "track": track, "language": meta.get("language") or self.language or "en"},
                           ident)

    def configs(self, row: dict[str, Any]) -> list[str]:
        from ..benchmarks.prism_bench import LANGUAGES, TRACKS

        lang = row["language"]
        if lang not in LANGUAGES:
            return ["all"]
        return ["all", lang] + ([f"{row['track']}_{lang}"] if row["track"] in TRACKS else [])


_METHODS = {m.metric: m for m in (_R2I, _T2I, _Checklist, _Prism)}


def _checklist_reply(domains: Sequence[str]):
    """Read a checklist reply: ``{"domain": ..., "checklist": [{"item", "explanation"}, ...]}``, 3 to 12 items."""

    def parse(text: str) -> tuple[str, list[dict[str, str]]]:
        value = extract_json(text, expect=dict)
        domain, items = value.get("domain"), value.get("checklist")
        if domain not in domains:
            raise ReplyParseError(f'"domain" must be one of {", ".join(domains)}, got {domain!r}')
        if not isinstance(items, list) or not 3 <= len(items) <= 12:
            raise ReplyParseError('"checklist" must be a list of 3 to 12 items')
        checklist = []
        for n, item in enumerate(items, 1):
            if not isinstance(item, dict) or not all(isinstance(item.get(k), str) and item[k].strip()
                                                     for k in ("item", "explanation")):
                raise ReplyParseError(f'checklist item {n} must be an object with a non-empty "item" and "explanation"')
            checklist.append({"item": item["item"].strip(), "explanation": item["explanation"].strip()})
        return domain, checklist

    return parse


def _fields_reply(names: Sequence[str]):
    def parse(text: str) -> dict[str, str]:
        value = extract_json(text, expect=dict)
        bad = [n for n in names if not isinstance(value.get(n), str) or not value[n].strip()]
        if bad:
            raise ReplyParseError(f"the JSON object needs a non-empty string for {', '.join(map(repr, bad))}")
        return {n: value[n].strip() for n in names}

    return parse


# -- made once, kept on disk ---------------------------------------------------------------------------

_THREAD_LOCKS: dict[tuple[str, int], threading.Lock] = {}
_THREAD_LOCKS_LOCK = threading.Lock()


class Criteria:
    """The rows ``metric`` scores images of any prompt against, made by ``llm`` (a loaded judge: any chat
    model; None when every row comes with the images) and kept in ``cache`` (a path, True for
    :func:`default_criteria_path`, False for none: then kept for this object's life only). ``metric`` is a
    benchmark metric's name, or a :class:`Method` object (a metric that makes its own questions).

    ``choice`` is what the metric judges a prompt by when its metadata does not say: T2I-ReasonBench's
    dimension, PRISM-Bench's track (default: the project's general alignment template), and ``choice_hint``
    how a message tells the caller's user to give it (default: ``load_reward(..., dimension=...)``); ``language``
    PRISM-Bench's language (default ``en``). :attr:`counts` says how many rows were given, read from memory
    or the cache, made, and failed so far; :attr:`used` holds every row this object made or read, by key."""

    def __init__(self, metric: str | Method, llm: Any = None, *, cache: str | Path | bool = True,
                 choice: str | None = None, language: str | None = None, choice_hint: str | None = None):
        if isinstance(metric, Method):
            self.method = metric
        else:
            from ..benchmarks import get_benchmark

            if metric not in _METHODS:
                raise ValueError(f"no criteria for {metric!r}; the metrics with rows: {', '.join(_METHODS)}")
            self.method = _METHODS[metric](get_benchmark(METRIC_BENCHMARKS[metric]), choice, language)
            if choice_hint:  # how the caller's user names the choice (the command line: its option)
                self.method.choice_hint = choice_hint
            if metric == "t2i_reasonscore" and choice is not None:
                self.method.dimension({}, "")  # an unknown dimension is said now, not at the first call
        self.bench = self.method.bench
        self.llm = llm
        self.store = None
        if cache and self.method.metric != "prism_score":
            from ..judges.cache import ResponseCache

            self.store = ResponseCache(default_criteria_path() if cache is True else cache)
            self.store.check()
        self.counts = {"given": 0, "cached": 0, "made": 0, "failed": 0}
        self.used: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    @property
    def metric(self) -> str:
        return self.method.metric

    def rows(self, prompts: Sequence[str], metadata: Sequence[dict[str, Any]],
             ids: Sequence[Any] | None = None, *, retry_failed: bool = False
             ) -> tuple[list[dict[str, Any]], list[str | None]]:
        """One row per prompt, and per prompt None or why it has no criteria (its row then has none, so
        its images fail with that reason). A prompt met several times is made once. ``ids`` name the rows
        (default: the metadata's ``id``, else a hash of the prompt). ``retry_failed``: a failure kept by an
        earlier call (:meth:`Method.keeps_failure`) is made again rather than read back."""
        rows: list[dict[str, Any] | None] = [None] * len(prompts)
        failures: list[str | None] = [None] * len(prompts)
        keys: list[str | None] = [None] * len(prompts)
        wanted: dict[str, tuple[dict[str, Any], Any]] = {}  # key -> (inputs, id)
        given = 0
        for i, (prompt, meta) in enumerate(zip(prompts, metadata)):
            ident = ids[i] if ids is not None else meta.get("id") or _short_hash(prompt)
            if self.method.given(meta):
                rows[i] = self.method.row(prompt, meta, ident)
                given += 1
                continue
            inputs = self.method.inputs(prompt, meta)
            keys[i] = self._key(inputs)
            wanted.setdefault(keys[i], (inputs, ident))
        made = self._made(wanted, retry_failed) if wanted else {}
        for i, key in enumerate(keys):
            if key is not None:
                row, failures[i] = made[key]
                rows[i] = self.method.with_id(row, ids[i]) if ids is not None else row
        with self._lock:
            self.counts["given"] += given
        return rows, failures  # type: ignore[return-value]  # every slot is filled

    def dataset(self):
        """Every row this object made or read from the cache, as a ``datasets.Dataset`` of the method's schema."""
        import datasets

        features = self.method.features
        with self._lock:
            rows = list(self.used.values())
        return datasets.Dataset.from_list([conform(r, features) for r in rows], features=features)

    # -- keys, the cache, the locks -------------------------------------------------------------------

    @cached_property
    def _keyed(self) -> dict[str, Any]:
        """What every key holds besides a prompt's inputs, taken once: the method reads its templates."""
        return {"metric": self.metric, "llm": self.llm_identity(), "method": self.method.method()}

    def _key(self, inputs: dict[str, Any]) -> str:
        text = json_text({**self._keyed, "inputs": inputs}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def llm_identity(self) -> dict[str, Any] | None:
        if self.llm is None:
            return None
        return {k: v for k, v in self.llm.identity().items() if not SECRET_NAME.fullmatch(str(k))}

    def _made(self, wanted: dict[str, tuple[dict[str, Any], Any]],
              retry_failed: bool = False) -> dict[str, tuple[dict, str | None]]:
        """key -> (row, failure) for every wanted key: from memory, the file, or made now (under the keys' locks).
        A kept failure is read back (said to be an earlier call's) unless ``retry_failed``."""
        with self._lock:
            out: dict[str, tuple[dict, str | None]] = {k: (self.used[k], None) for k in wanted if k in self.used}
        missing = [k for k in wanted if k not in out]
        made: dict[str, Made] = {}
        if missing:
            with self._locked(missing):
                with self._lock:  # made meanwhile by another thread of this process
                    stored = {k: {"row": self.used[k]} for k in missing if k in self.used}
                if self.store is not None:
                    stored.update(self.store.get_many([k for k in missing if k not in stored]))
                if retry_failed:
                    stored = {k: v for k, v in stored.items() if not v.get("failure")}
                out.update({k: (v["row"], _kept_failure(v.get("failure"))) for k, v in stored.items()})
                todo = [k for k in missing if k not in stored]
                if todo:
                    made = dict(zip(todo, self._make([wanted[k][0] for k in todo], [wanted[k][1] for k in todo])))
                    kept = [(k, "criteria", self.llm_identity() or {}, {"metric": self.metric, "inputs": wanted[k][0]},
                             {"row": m.row, "notes": m.notes, **({"failure": m.failure} if m.failure else {})})
                            for k, m in made.items() if m.failure is None or self.method.keeps_failure(m)]
                    if kept and self.store is not None:
                        self.store.put_many(kept)
        out.update({k: (m.row, m.failure) for k, m in made.items()})
        with self._lock:
            for key, (row, failure) in out.items():
                if failure is None:
                    self.used.setdefault(key, row)
            self.counts["cached"] += len(wanted) - len(made)
            self.counts["made"] += sum(m.failure is None for m in made.values())
            self.counts["failed"] += sum(m.failure is not None for m in made.values())
        return out

    @contextmanager
    def _locked(self, keys: list[str]):
        """The keys' stripe locks, in order (no two holders wait for each other): a thread lock, then (with a
        cache file) the file's, which other processes take."""
        from filelock import FileLock

        folder = None if self.store is None else self.store.path.with_name(self.store.path.name + ".locks")
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        with ExitStack() as stack:
            for stripe in sorted({int(k[:8], 16) % LOCK_STRIPES for k in keys}):
                with _THREAD_LOCKS_LOCK:
                    lock = _THREAD_LOCKS.setdefault((str(folder or id(self)), stripe), threading.Lock())
                stack.enter_context(lock)
                if folder is not None:
                    stack.enter_context(FileLock(str(folder / f"{stripe:04d}.lock")))
            yield

    def _make(self, inputs: list[dict[str, Any]], idents: list[Any]) -> list[Made]:
        """The rows of ``inputs``: the fields they lack written first, then the method's pipeline."""
        if self.llm is None:
            raise ValueError(f"{self.metric} needs criteria for {len(inputs)} prompt(s) that came without "
                             f"({inputs[0]['prompt'][:60]!r}...): give the rows in metadata, or a criteria_llm "
                             "('openai:<model>', 'hf:<model>' or a judge object) to make them")
        filled = [dict(i) for i in inputs]
        failed: dict[int, str] = {}
        asks = [(k, self.method.needed(i)) for k, i in enumerate(filled)]
        asks = [(k, names) for k, names in asks if names]
        if asks:
            requests = [ChatRequest.simple(render("rewards", "prompt_fields", prompt=filled[k]["prompt"],
                                                  fields=[(n, FIELD_REQUESTS[n]) for n in names]))
                        for k, names in asks]
            for (k, names), p in zip(asks, ask_structured(self.llm, requests, [_fields_reply(n) for _, n in asks])):
                if p.ok:
                    filled[k].update(p.value)
                else:
                    failed[k] = f"writing {', '.join(names)}: {p.error}"
        todo = [k for k in range(len(filled)) if k not in failed]
        made = dict(zip(todo, self.method.make([filled[k] for k in todo], [idents[k] for k in todo], self.llm)))
        out = []
        for k in range(len(filled)):
            if k in failed:
                empty = {f: [] for f in self.method.criteria_fields}
                out.append(Made(self.method.row(filled[k]["prompt"], {**filled[k], **empty}, idents[k]), failed[k]))
                continue
            written = {n: filled[k][n] for n in self.method.needed(inputs[k])}
            m = made[k]
            out.append(Made(m.row, m.failure, {**m.notes, **({"written_first": written} if written else {})}))
        return out


#: ends the failure of a prompt read back from the store: made and failed by an earlier call, not asked again
KEPT_FAILURE = " (recorded when first asked, not asked again; retry_failed asks again)"


def _kept_failure(failure: str | None) -> str | None:
    return None if not failure else failure + KEPT_FAILURE


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
