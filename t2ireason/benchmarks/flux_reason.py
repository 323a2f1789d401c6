"""FLUX-Reason-6M (seed 004, section 2 and appendix B): a training set, read by streaming.

FLUX-Reason-6M is about 6 million FLUX.1-dev images, each with multi-labels
over six characteristics (Imagination, Entity, Text rendering, Style, Affection,
Composition; appendix B.1), relevance scores 1 to 10 per characteristic
(section 2.3), a category-specific caption per assigned characteristic and a
Generation Chain-of-Thought (GCoT) caption (section 2.4), the original
LAION-Aesthetics caption when it matched (section 2.5), and Chinese translations
of every caption. It is published on the Hub as ``LucasFang/FLUX-Reason-6M``.

:func:`stream` reads it with ``load_dataset(..., streaming=True)`` (never the
whole dataset) and maps each published row to the project's schema
(:data:`FEATURES`) through a :class:`FieldMapping`: candidate column names per
field, tried in order after normalisation (lower case, every run of other
characters as ``_``), so that the common shapes all work:

- labels as a list of names (``["Entity", "Text rendering"]``), a delimited
  string, a dict of booleans or scores, or one column per characteristic
  holding a boolean (``is_entity``, ``Entity``) or a score (``entity_score``);
- category captions as one dict column (``{"Entity": "...", ...}``, possibly
  ``{"en": {...}, "zh": {...}}``) or one column per characteristic
  (``entity_caption``, ``caption_entity``);
- Chinese as the English name with ``_zh``/``_cn``/``_chinese`` (or a ``zh_`` prefix).

Labels come from, in order: explicit labels or booleans; scores at or above
``FieldMapping.thresholds`` (the paper's calibrated thresholds are not
published, so none is assumed); else the characteristics that have a
category-specific caption, since the paper writes one caption per assigned
characteristic (section 2.4). Columns the mapping does not read are reported
as ``unmapped_column`` anomalies, never dropped silently. Override any entry:
``read_release(src, mapping={"gcot": "my_cot_column"})``.

:meth:`FluxReason6M.read_release` reads a local folder of JSONL or Parquet
(datasets the project makes in this schema, or a local copy of the published
shape) with the same mapping.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import datasets

from .base import Anomaly, Benchmark, Release, ReleaseError

__all__ = ["FluxReason6M", "BENCHMARK", "CHARACTERISTICS", "FEATURES", "FieldMapping", "RowMapper", "stream",
           "HUB_ID"]

HUB_ID = "LucasFang/FLUX-Reason-6M"
#: the six characteristics (appendix B.1), as the schema names them
CHARACTERISTICS = ("imagination", "entity", "text_rendering", "style", "affection", "composition")
DISPLAY_NAMES = dict(zip(CHARACTERISTICS, ("Imagination", "Entity", "Text rendering", "Style", "Affection",
                                           "Composition")))
#: spellings met for each characteristic (normalised)
ALIASES = {
    "imagination": ("imagination", "imaginative"),
    "entity": ("entity", "entities"),
    "text_rendering": ("text_rendering", "textrendering", "text_render", "typography"),
    "style": ("style",),
    "affection": ("affection", "emotion", "affect"),
    "composition": ("composition", "compositional"),
}

_per_characteristic = {c: datasets.Value("string") for c in CHARACTERISTICS}
FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "image": datasets.Image(),
    "characteristics": datasets.List(datasets.Value("string")),
    "characteristic_scores": {c: datasets.Value("float32") for c in CHARACTERISTICS},
    "captions": dict(_per_characteristic),
    "gcot": datasets.Value("string"),
    "original_caption": datasets.Value("string"),
    "captions_zh": dict(_per_characteristic),
    "gcot_zh": datasets.Value("string"),
    "original_caption_zh": datasets.Value("string"),
    "source": datasets.Value("string"),
})

CITATION = """@article{fang2025fluxreason6m,
  title   = {FLUX-Reason-6M \\& PRISM-Bench: A Million-Scale Text-to-Image Reasoning Dataset and Comprehensive Benchmark},
  author  = {Fang and others},
  journal = {arXiv preprint arXiv:2509.09680},
  year    = {2025}
}"""


def normalise(name: str) -> str:
    """Column and key names compared case- and punctuation-blind: ``"Text rendering"`` -> ``text_rendering``."""
    return re.sub(r"[^0-9a-z]+", "_", str(name).lower()).strip("_")


_ALIAS_TO_CHARACTERISTIC = {normalise(a): c for c, names in ALIASES.items() for a in names}


def characteristic(name: Any) -> str | None:
    """The schema's name of a characteristic spelt any common way, or None."""
    return _ALIAS_TO_CHARACTERISTIC.get(normalise(name))


@dataclass
class FieldMapping:
    """Where each field of :data:`FEATURES` comes from in the published rows: candidate column names, in order.

    ``{c}`` in the per-characteristic patterns stands for each spelling in ``ALIASES``.
    Pass a dict to :func:`stream`/``read_release`` to override entries: ``{"gcot": "my_cot"}``.
    """

    id: tuple[str, ...] = ("id", "key", "__key__", "uid", "image_id", "idx", "index")
    image: tuple[str, ...] = ("image", "jpg", "jpeg", "png", "webp", "img", "image_path", "file_name", "path")
    labels: tuple[str, ...] = ("characteristics", "labels", "label", "categories", "category", "tags", "types")
    scores: tuple[str, ...] = ("characteristic_scores", "scores", "category_scores", "relevance_scores")
    captions: tuple[str, ...] = ("captions", "category_captions", "caption_dict", "descriptions")
    gcot: tuple[str, ...] = ("gcot", "gcot_caption", "generation_chain_of_thought", "chain_of_thought", "cot")
    original_caption: tuple[str, ...] = ("original_caption", "laion_caption", "origin_caption", "orig_caption",
                                         "raw_caption", "original", "caption")
    source: tuple[str, ...] = ("source", "subset", "prompt_source")
    caption_columns: tuple[str, ...] = ("{c}_caption", "caption_{c}", "{c}")
    label_columns: tuple[str, ...] = ("is_{c}", "has_{c}", "{c}_label", "label_{c}", "{c}")
    score_columns: tuple[str, ...] = ("{c}_score", "score_{c}", "{c}")
    zh_suffixes: tuple[str, ...] = ("_zh", "_cn", "_chinese")
    #: characteristic -> minimum score for the label, where labels come only as scores
    thresholds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_overrides(cls, overrides: FieldMapping | Mapping[str, Any] | None) -> FieldMapping:
        if isinstance(overrides, FieldMapping):
            return overrides
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides or {}) - known)
        if unknown:
            raise ValueError(f"unknown mapping entries {unknown}; known: {', '.join(sorted(known))}")
        return cls(**{k: (v,) if isinstance(v, str) else (dict(v) if k == "thresholds" else tuple(v))
                      for k, v in (overrides or {}).items()})

    def zh(self, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f"{n}{s}" for n in names for s in self.zh_suffixes) + tuple(f"zh_{n}" for n in names)


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[,;|]", value) if v.strip()]
    return list(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    value = str(value).strip()
    return value or None


class RowMapper:
    """Maps published rows to :data:`FEATURES`; which column feeds what is resolved once, from the columns."""

    _SIMPLE = ("id", "image", "labels", "scores", "captions", "gcot", "original_caption", "source")

    def __init__(self, mapping: FieldMapping, columns: list[str], *, label_names: list[str] | None = None,
                 base_dir: Path | None = None, file: str = HUB_ID, split: str = "train"):
        self.mapping, self.base_dir, self.file, self.split = mapping, base_dir, file, split
        self.label_names = label_names  # when labels are a ClassLabel list: index -> name
        self._by_norm = {normalise(c): c for c in columns}
        self._used: set[str] = set()
        self.col = {f: self._find(getattr(mapping, f)) for f in self._SIMPLE}
        self.col_zh = {f: self._find(mapping.zh(getattr(mapping, f))) for f in ("captions", "gcot", "original_caption")}
        # per characteristic: (caption column, Chinese caption column, label column, score column)
        self.per: dict[str, tuple[str | None, ...]] = {}
        for c in CHARACTERISTICS:
            def patterns(kind: tuple[str, ...], c: str = c) -> tuple[str, ...]:
                return tuple(p.format(c=a) for p in kind for a in ALIASES[c])
            cap = self._find(patterns(mapping.caption_columns))
            self.per[c] = (cap, self._find(mapping.zh(patterns(mapping.caption_columns))),
                           self._find(patterns(mapping.label_columns), also=cap),
                           self._find(patterns(mapping.score_columns), also=cap))
        self.unmapped = [c for c in columns if c not in self._used]

    def _find(self, candidates: tuple[str, ...], also: str | None = None) -> str | None:
        """The first candidate present; ``also`` lets a bare ``{c}`` column serve as caption or label by value type."""
        for cand in candidates:
            col = self._by_norm.get(normalise(cand))
            if col is not None and (col not in self._used or col == also):
                self._used.add(col)
                return col
        return None

    def _image(self, value: Any) -> Any:
        if isinstance(value, str) and self.base_dir is not None and not Path(value).is_absolute():
            return str(self.base_dir / value)
        return value

    def __call__(self, raw: Mapping[str, Any], index: int, anomalies: list[Anomaly]) -> dict[str, Any]:
        get = raw.get
        col = self.col
        captions = dict.fromkeys(CHARACTERISTICS)
        captions_zh = dict.fromkeys(CHARACTERISTICS)
        scores: dict[str, float | None] = dict.fromkeys(CHARACTERISTICS)
        labels: set[str] = set()
        explicit = False

        def unknown(kind: str, name: Any) -> None:
            anomalies.append(Anomaly("unknown_label", self.file, index, f"{kind} {name!r} is not a characteristic"))

        if col["captions"]:
            value = get(col["captions"]) or {}
            if {normalise(k) for k in value} >= {"en"} and isinstance(value.get("en"), Mapping):
                value, zh_value = value["en"] or {}, value.get("zh") or {}
            else:
                zh_value = {}
            for key, text in value.items():
                target = captions_zh if normalise(key).endswith(("_zh", "_cn")) else captions
                c = characteristic(re.sub(r"_(zh|cn)$", "", normalise(key)))
                if c is None:
                    if text is not None:
                        unknown("caption key", key)
                    continue
                target[c] = _text(text) or target[c]
            for key, text in zh_value.items():
                if (c := characteristic(key)) is not None:
                    captions_zh[c] = _text(text)
        if self.col_zh["captions"]:
            for key, text in (get(self.col_zh["captions"]) or {}).items():
                if (c := characteristic(key)) is not None:
                    captions_zh[c] = _text(text)
                elif text is not None:
                    unknown("caption key", key)

        for c, (cap_col, zh_col, label_col, score_col) in self.per.items():
            for column in {cap_col, label_col, score_col} - {None}:
                value = get(column)
                if isinstance(value, bool):
                    explicit = True
                    if value:
                        labels.add(c)
                elif isinstance(value, (int, float)):
                    scores[c] = float(value)
                elif isinstance(value, str) and column == cap_col:
                    captions[c] = _text(value) or captions[c]
            if zh_col:
                captions_zh[c] = _text(get(zh_col)) or captions_zh[c]

        if col["labels"]:
            value = get(col["labels"])
            if isinstance(value, Mapping):
                items = value.items()
            else:
                items = [((self.label_names[v] if self.label_names and isinstance(v, int) else v), True)
                         for v in _strings(value)]
            for name, flag in items:
                c = characteristic(name)
                if c is None:
                    unknown("label", name)
                elif isinstance(flag, bool) or flag is None:
                    explicit = True
                    if flag:
                        labels.add(c)
                else:
                    scores[c] = float(flag)
        if col["scores"]:
            for name, value in (get(col["scores"]) or {}).items():
                c = characteristic(name)
                if c is None:
                    unknown("score", name)
                elif value is not None:
                    scores[c] = float(value)

        if not explicit:
            thresholds = {characteristic(k) or k: v for k, v in self.mapping.thresholds.items()}
            labels |= {c for c, s in scores.items() if s is not None and c in thresholds and s >= thresholds[c]}
            if not thresholds:
                labels |= {c for c, text in captions.items() if text}

        rid = get(col["id"]) if col["id"] else None
        image = self._image(get(col["image"])) if col["image"] else None
        if image is None:
            anomalies.append(Anomaly("missing_image", self.file, index, f"id {rid!r}"))
        return {
            "id": str(rid) if rid is not None else f"{self.split}-{index}",
            "image": image,
            "characteristics": [c for c in CHARACTERISTICS if c in labels],
            "characteristic_scores": scores,
            "captions": captions,
            "gcot": _text(get(col["gcot"])) if col["gcot"] else None,
            "original_caption": _text(get(col["original_caption"])) if col["original_caption"] else None,
            "captions_zh": captions_zh,
            "gcot_zh": _text(get(self.col_zh["gcot"])) if self.col_zh["gcot"] else None,
            "original_caption_zh": (_text(get(self.col_zh["original_caption"]))
                                    if self.col_zh["original_caption"] else None),
            "source": _text(get(col["source"])) if col["source"] else None,
        }


def _looks_like_hub_id(source: str) -> bool:
    return bool(re.fullmatch(r"[\w.-]+/[\w.-]+", source)) and not Path(source).exists()


def stream(source: str | Path = HUB_ID, *, split: str = "train", mapping: FieldMapping | Mapping | None = None,
           limit: int | None = None, revision: str | None = None, anomalies: list[Anomaly] | None = None,
           **load_kwargs: Any) -> Iterator[dict[str, Any]]:
    """Rows of the published dataset (or a local copy) in the project's schema, streamed one by one.

    Images are passed on undecoded (``{"bytes", "path"}``). Irregularities go to ``anomalies``.
    """
    mapping = FieldMapping.from_overrides(mapping)
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    anomalies = anomalies if anomalies is not None else []
    local = Path(source)
    if not _looks_like_hub_id(str(source)) and not local.exists():
        raise FileNotFoundError(f"FLUX-Reason-6M source not found: {source} (a local folder or a Hub id like {HUB_ID})")
    ds = datasets.load_dataset(str(source), split=split, streaming=True, revision=revision, **load_kwargs)
    features = ds.features or {}
    for name, feature in features.items():  # keep the bytes; the builder writes them as they are
        if isinstance(feature, datasets.Image):
            ds = ds.cast_column(name, datasets.Image(decode=False))
    rows = iter(ds)
    first = next(rows, None)
    if first is None:
        return
    columns = list(features) or list(first)
    label_names = None
    for name in mapping.labels:
        feature = next((f for c, f in features.items() if normalise(c) == normalise(name)), None)
        if isinstance(feature, (datasets.List, datasets.LargeList)) and isinstance(feature.feature, datasets.ClassLabel):
            label_names = feature.feature.names
            break
    file = str(source) if not local.exists() else local.name
    mapper = RowMapper(mapping, columns, label_names=label_names, base_dir=local if local.is_dir() else None,
                       file=file, split=split)
    for column in mapper.unmapped:
        anomalies.append(Anomaly("unmapped_column", file, None,
                                 f"column {column!r} is not read; map it with mapping={{field: {column!r}}}"))
    if mapper.col["id"] is None:
        anomalies.append(Anomaly("generated_id", file, None, f"no id column; ids are {split}-<row index>"))
    for index, raw in enumerate(_chain(first, rows, limit)):
        yield mapper(raw, index, anomalies)


def _chain(first: dict, rest: Iterator[dict], limit: int | None) -> Iterator[dict]:
    yield first
    yield from islice(rest, None if limit is None else max(limit - 1, 0))


class FluxReason6M(Benchmark):
    name = "flux-reason-6m"
    pretty_name = "FLUX-Reason-6M"
    configs = ("default",)
    metric = None  # a training set; its sister benchmark PRISM-Bench is scored by prism-bench
    split = "train"  # as the engine writes it (engine/export.py)
    license = "apache-2.0"  # the license on the dataset card of LucasFang/FLUX-Reason-6M
    citation = CITATION
    #: the builder may pass a Hub id as --source: rows are streamed, never downloaded whole
    reads_hub = True
    description = (
        "FLUX-Reason-6M: about 6 million FLUX.1-dev images with 20 million bilingual (English and Chinese) "
        "captions for teaching text-to-image models to reason. Each image carries multi-labels over six "
        "characteristics (Imagination, Entity, Text rendering, Style, Affection, Composition), a "
        "category-specific caption for each of its labels, a Generation Chain-of-Thought (GCoT) caption that "
        "explains the scene's elements, layout and style step by step, and, where it matched, its original "
        "LAION-Aesthetics caption.")
    scoring = ("FLUX-Reason-6M is a training set and is not scored. PRISM-Bench, built from its characteristics, "
               "evaluates models on the same six tracks plus long text (see the prism-bench dataset).")
    field_docs = {
        "id": "row id in the published dataset (or split-index, e.g. train-12, when it has none)",
        "image": "the FLUX.1-dev image",
        "characteristics": "multi-label: the characteristics assigned to the image (imagination, entity, "
                           "text_rendering, style, affection, composition; appendix B.1)",
        "characteristic_scores": "Qwen-VL relevance score 1 to 10 per characteristic (section 2.3), where published",
        "captions": "category-specific dense caption per assigned characteristic (section 2.4); null otherwise",
        "gcot": "Generation Chain-of-Thought: a step-by-step plan of the scene's elements, layout, style and mood",
        "original_caption": "the LAION-Aesthetics caption, kept when it matched the image (section 2.5)",
        "captions_zh": "Chinese translations of the category captions (English text to render stays English)",
        "gcot_zh": "Chinese translation of the GCoT caption",
        "original_caption_zh": "Chinese translation of the original caption",
        "source": "prompt source subset where published (LAION rewrites, imagination, text rendering; Figure 3)",
    } | {f"{group}.{c}": f"{DISPLAY_NAMES[c]}: {what}" for c in CHARACTERISTICS
         for group, what in (("characteristic_scores", "relevance score"), ("captions", "caption"),
                             ("captions_zh", "caption in Chinese"))}

    @property
    def features(self) -> datasets.Features:
        return FEATURES

    def read_release(self, source: str | Path, *, split: str = "train", mapping: FieldMapping | Mapping | None = None,
                     limit: int | None = None, revision: str | None = None, **load_kwargs: Any) -> Release:
        """Rows of a local folder (JSONL/Parquet, the project's schema or the published shape) or of the Hub
        dataset (streamed; use ``limit``), all in config ``default``."""
        anomalies: list[Anomaly] = []
        rows = list(stream(source, split=split, mapping=mapping, limit=limit, revision=revision,
                           anomalies=anomalies, **load_kwargs))
        if not rows:
            raise ReleaseError(f"{source}: no rows in split {split!r}")
        counts = Counter(c for r in rows for c in r["characteristics"])
        return Release(configs={"default": rows}, anomalies=anomalies, source=str(source),
                       counts={"default": {c: counts.get(c, 0) for c in CHARACTERISTICS}
                               | {"gcot": sum(r["gcot"] is not None for r in rows),
                                  "chinese": sum(bool(r["gcot_zh"] or any(r["captions_zh"].values())) for r in rows)}})

    def prompt(self, row: dict[str, Any]) -> str:
        """What a generator draws: the caption of the row's first characteristic, else the original caption,
        else the GCoT."""
        for c in row.get("characteristics") or ():
            if (row.get("captions") or {}).get(c):
                return row["captions"][c]
        return row.get("original_caption") or row.get("gcot") or ""


BENCHMARK = FluxReason6M()
