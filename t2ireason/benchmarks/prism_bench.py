"""PRISM-Bench (seed 004): seven tracks, each image judged for prompt alignment and for aesthetics.

Record -> request -> reply -> score, for one image:

1. a row is one line of ``captions/<language>/<track>.jsonl`` (its ``prompt``, and whatever else the line holds);
2. two requests, as the official code sends them: a system message "You are a helpful assistant.",
   then the track's alignment template (or the aesthetic template shared by all tracks) with the prompt,
   then the image; Chinese prompts are judged with the same English templates;
3. each reply is a JSON object ``{"justification": ..., "score": 0..10}`` (re-asked when it is not);
4. the image's alignment and aesthetic scores are mapped to 0-100 (x 10) and its score is their mean;
5. per track: mean alignment, mean aesthetic, and their mean (the track score); overall alignment and
   aesthetic pooled over all images (the paper's Table 1 layout), per language.

Unlike the official code, which drops replies it cannot parse without saying so, failed replies are
re-asked, then counted (``failed`` in every cell) and left out of the means, never hidden.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import datasets

from ..images import as_image
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, as_score, ask_structured, extract_json
from ..prompts import render
from ..results import ImageResult, PaperTable, QuestionResult
from ..stats import summarize
from .base import Anomaly, Benchmark, Release, ReleaseError

__all__ = ["BENCHMARK", "PrismBench", "TRACKS", "LANGUAGES", "SYSTEM_PROMPT", "parse_judgement", "judge_requests"]

#: track folder names in the release, in the paper's table order, with their display names
TRACKS = {"imagination": "Imagination", "entity": "Entity", "text_rendering": "Text rendering", "style": "Style",
          "affection": "Affection", "composition": "Composition", "long_text": "Long text"}
LANGUAGES = ("en", "zh")
SUBSETS = ("representative", "curated")
#: the official code's system message
SYSTEM_PROMPT = "You are a helpful assistant."
AXES = ("alignment", "aesthetic")

SCORE_OPTIONS = {"max_reasks", "sampling", "system_prompt", "structured_output"}
AGGREGATE_OPTIONS = {"confidence", "n_resamples", "seed"}

_OFFICIAL_SAMPLING = Sampling(temperature=0.0, top_p=1.0, seed=42, max_tokens=4096)


def config_name(track: str, language: str) -> str:
    return f"{track}_{language}"


class PrismBench(Benchmark):
    name = "prism-bench"
    pretty_name = "PRISM-Bench"
    #: "all", one per language, then one per track and language (track names as in the release's files)
    configs = ("all", *LANGUAGES, *(config_name(t, lang) for lang in LANGUAGES for t in TRACKS))
    metric = "prism_score"
    license = None  # not stated where this project could check: the builder asks for --license
    citation = """@article{fang2025fluxreason,
  title   = {FLUX-Reason-6M \\& PRISM-Bench: A Million-Scale Text-to-Image Reasoning Dataset and Comprehensive Benchmark},
  author  = {Fang, Rongyao and Yu, Aldrich and Duan, Chengqi and Huang, Linjiang and Bai, Shuai and Cai, Yuxuan
             and Wang, Kun and Liu, Si and Liu, Xihui and Li, Hongsheng},
  journal = {arXiv preprint arXiv:2509.09680},
  year    = {2025}
}"""
    description = (
        "PRISM-Bench (Precise and Robust Image Synthesis Measurement) has seven tracks of 100 prompts each: "
        "Imagination, Entity, Text rendering, Style, Affection, Composition and Long text (dense GCoT-style "
        "prompts). In each track 50 prompts are representative samples of FLUX-Reason-6M (k-means over the "
        "top-scored prompts) and 50 are curated hard cases. PRISM-Bench-ZH holds the same 700 prompts in Chinese, "
        "with the Text rendering track adapted to Chinese contexts.")
    scoring = (
        "A vision-language judge (GPT-4.1 in the paper's main tables, Qwen2.5-VL-72B in its appendix) scores "
        "every image twice, from 0 to 10: alignment with a track-specific template and aesthetics with one "
        "shared template (paper Appendix C.2 and C.3). Per track, the mean alignment and mean aesthetic "
        "scores are mapped to 0-100 and the track score is their mean. Use the `prism_score` metric of "
        "t2i-reason; configs `<track>_<language>` (e.g. `imagination_en`), `en`, `zh` and `all` select rows.")
    field_docs = {
        "id": "Stable id `<track>_<language>_<index>`, e.g. `entity_zh_7`: pairs the same prompt across judges and runs.",
        "prompt": "The text-to-image prompt (the line's `prompt`).",
        "track": "One of imagination, entity, text_rendering, style, affection, composition, long_text.",
        "language": "`en` (PRISM-Bench) or `zh` (PRISM-Bench-ZH).",
        "index": "0-based line number in the track's file: the official image is `images/<track>/<index>.png`.",
        "subset": "`representative` (k-means sample) or `curated` when the release says so, else null.",
        "extra": "Every other key of the release line, as a JSON object string.",
    }
    presets = {
        # The official evaluation code (formats.md); the paper's main tables use it.
        "paper": {"judge": "openai:gpt-4.1-2025-04-14",
                  "judge_kwargs": {"sampling": _OFFICIAL_SAMPLING, "image_format": "JPEG"},
                  "options": {"system_prompt": SYSTEM_PROMPT}},
        "official": {"judge": "openai:gpt-4.1-2025-04-14",
                     "judge_kwargs": {"sampling": _OFFICIAL_SAMPLING, "image_format": "JPEG"},
                     "options": {"system_prompt": SYSTEM_PROMPT}},
        # The paper's second judge (Appendix A), run locally as the official code does.
        "qwen": {"judge": "hf:Qwen/Qwen2.5-VL-72B-Instruct",
                 "judge_kwargs": {"dtype": "bfloat16", "min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28,
                                  "sampling": Sampling(temperature=0.0, max_tokens=1024)},
                 "options": {"system_prompt": SYSTEM_PROMPT}},
    }

    @property
    def features(self) -> datasets.Features:
        s = datasets.Value("string")
        return datasets.Features({"id": s, "prompt": s, "track": s, "language": s,
                                  "index": datasets.Value("int32"), "subset": s, "extra": s})

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        """``<language>/<track>/<index>.png``: each language folder is laid out as the official
        ``images/`` folder (``images/<track>/{0..99}.png``), so point the official code at ``<out>/en``."""
        suffix = f"_{sample}" if sample else ""
        return f"{row['language']}/{row['track']}/{row['index']}{suffix}.png"

    # -- the release ---------------------------------------------------------------------------

    def read_release(self, source: str | Path, *, subset_field: str = "subset", **options: Any) -> Release:
        """Read ``captions/{en,zh}/<track>.jsonl`` under ``source`` (a checkout of the official
        repository, or its ``captions`` folder). Every line must be a JSON object with a non-empty
        ``prompt``: anything else is a ReleaseError naming the file and the line. A line's
        ``subset_field`` key, when present, fills ``subset``. Missing track files are reported."""
        if options:
            raise TypeError(f"unknown option(s) {sorted(options)} for reading {self.pretty_name}")
        source = Path(source)
        root = source / "captions" if (source / "captions").is_dir() else source
        if not any((root / lang).is_dir() for lang in LANGUAGES):
            raise ReleaseError(f"no captions/en or captions/zh folder under {source}: is it the PRISM-Bench release?")
        configs: dict[str, list[dict[str, Any]]] = {c: [] for c in self.configs}
        anomalies: list[Anomaly] = []
        for lang in LANGUAGES:
            for track in TRACKS:
                path = root / lang / f"{track}.jsonl"
                where = f"captions/{lang}/{track}.jsonl"
                if not path.is_file():
                    anomalies.append(Anomaly("missing_file", where, None, "track file absent"))
                    continue
                rows = self._read_track(path, where, track, lang, subset_field, anomalies)
                for row in rows:
                    for c in ("all", lang, config_name(track, lang)):
                        configs[c].append(row)
        others = sorted(str(p.relative_to(root)) for p in root.rglob("*.jsonl")
                        if p.parent.name not in LANGUAGES or p.stem not in TRACKS)
        anomalies += [Anomaly("unknown_file", f"captions/{p}", None, "not a PRISM-Bench track file") for p in others]
        counts = {c: {"rows": len(r)} for c, r in configs.items()}
        for c, rows in configs.items():
            for s in SUBSETS:
                counts[c][f"subset:{s}"] = sum(r["subset"] == s for r in rows)
        return Release(configs={c: r for c, r in configs.items() if r}, anomalies=anomalies, counts=counts,
                       source=str(source))

    @staticmethod
    def _read_track(path: Path, where: str, track: str, lang: str, subset_field: str,
                    anomalies: list[Anomaly]) -> list[dict[str, Any]]:
        rows = []
        for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as e:
                raise ReleaseError(f"{where}, line {n}: not valid JSON: {e}") from None
            if not isinstance(record, dict):
                raise ReleaseError(f"{where}, line {n}: expected a JSON object, got {type(record).__name__}")
            prompt = record.get("prompt")
            if not isinstance(prompt, str) or not prompt.strip():
                raise ReleaseError(f"{where}, line {n}: no non-empty \"prompt\" (keys: {sorted(record)})")
            subset = record.get(subset_field)
            if subset is not None:
                subset = str(subset).strip().lower()
                if subset not in SUBSETS:
                    anomalies.append(Anomaly("unknown_subset", where, n, f"{subset_field} {record[subset_field]!r}"))
                    subset = None
            index = len(rows)  # the official image name is the position among the prompts
            extra = {k: v for k, v in record.items() if k not in ("prompt", subset_field)}
            rows.append({"id": f"{config_name(track, lang)}_{index}", "prompt": prompt.strip(), "track": track,
                         "language": lang, "index": index, "subset": subset,
                         "extra": json.dumps(extra, ensure_ascii=False, sort_keys=True)})
        return rows

    # -- scoring -----------------------------------------------------------------------------------

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """One ImageResult per image, both judge requests of every image sent in one batch.

        ``score`` is the mean of alignment and aesthetic on 0-100 (None unless both were judged);
        ``subscores`` holds each axis on 0-100 and ``questions`` each raw 0-10 judgement with its
        justification. Options: ``system_prompt`` (default: the official "You are a helpful assistant."; None: no system message),
        ``sampling`` (a Sampling or a dict, overriding the judge's defaults), ``max_reasks`` (default 2),
        ``structured_output`` (default False: the official code sends no schema) to also send
        :data:`REPLY_SCHEMA`.
        """
        opts = _options(options, SCORE_OPTIONS)
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} images")
        sampling = opts.get("sampling")
        if isinstance(sampling, dict):
            sampling = Sampling(**sampling)
        results, requests = [], []
        for row, img in zip(rows, images):
            track = row.get("track")
            if track not in TRACKS:
                raise ValueError(f"row {row.get('id')!r} has track {track!r}; known: {', '.join(TRACKS)}")
            image = as_image(img)  # one JudgeImage shared by both requests: encoded once
            requests += judge_requests(row["prompt"], track, image, system_prompt=opts.get("system_prompt", SYSTEM_PROMPT),
                                       sampling=sampling,
                                       json_schema=REPLY_SCHEMA if opts.get("structured_output") else None)
            results.append(ImageResult(
                id=self.row_id(row), prompt=row["prompt"], score=None, config=config_name(track, row["language"]),
                image=image.source,
                context={"track": track, "language": row["language"], "index": row.get("index"),
                         "subset": row.get("subset")}))
        parsed = ask_structured(judge, requests, parse_judgement, max_reasks=opts.get("max_reasks", 2),
                                progress=progress)
        for i, result in enumerate(results):
            failures = []
            for axis, p in zip(AXES, parsed[2 * i: 2 * i + 2]):
                result.replies += p.texts
                result.reasks += p.reasks
                value = p.value if p.ok else None
                result.questions.append(QuestionResult(
                    question=axis, score=value["score"] if value else None, group=axis, id=axis,
                    reasoning=value["justification"] if value else None))
                result.subscores[axis] = value["score"] * 10 if value else None
                if not p.ok:
                    failures.append(f"{axis}: {p.error}")
            if failures:
                result.failure = "; ".join(failures)
            else:
                result.score = (result.subscores["alignment"] + result.subscores["aesthetic"]) / 2
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The paper's Table 1 (Table 2 for zh): per track Ali., Aes. and Avg. on 0-100, and Overall.

        Overall alignment and aesthetic are pooled over all images (as the official code does);
        ``overall_track_mean`` is the mean of the track scores (the paper's wording); the two agree
        when every track has the same number of judged images. Each axis is averaged over the replies
        that parsed; failures are counted per cell. ``by_language`` splits en from zh (their tables
        are separate); the top level pools whatever languages were given.
        """
        opts = _options(options, AGGREGATE_OPTIONS)
        out = _table(results, opts)
        by_language = {}
        for lang in sorted({r.context.get("language") for r in results} - {None}):
            by_language[lang] = _table([r for r in results if r.context.get("language") == lang], opts)
        out["by_language"] = by_language
        return out

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 1 (English) and Table 2 (Chinese): per track and overall Ali., Aes. and Avg. on 0-100,
        with 95% intervals for alignment and aesthetic."""
        tables = []
        for lang, agg in (aggregate.get("by_language") or {"": aggregate}).items():
            cells: dict[str, Any] = {}
            for track, entry in [*agg["tracks"].items(), ("overall", None)]:
                name = TRACKS.get(track, "Overall")
                cell = agg["table"].get(name)
                if cell is None:
                    continue
                summary = entry["summary"] if entry else {}
                cells[f"{name} Ali."] = summary.get("alignment", cell["Ali."])
                cells[f"{name} Aes."] = summary.get("aesthetic", cell["Aes."])
                cells[f"{name} Avg."] = cell["Avg."]
            number = {"en": "Table 1", "zh": "Table 2 (PRISM-Bench-ZH)"}.get(lang, lang)
            tables.append(PaperTable.one_row(f"PRISM-Bench {number}".strip(), label, cells,
                                             note="0-100; overall pools every image"))
        return tables


def _table(results: Sequence[ImageResult], opts: dict[str, Any]) -> dict[str, Any]:
    stat = partial(summarize, **opts)
    values: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: {a: [] for a in AXES})
    for r in results:
        for axis in AXES:
            v = r.subscores.get(axis)
            values[r.context["track"]][axis].append(v)
            values["overall"][axis].append(v)

    def cell(vals: dict[str, list[float | None]]) -> dict[str, Any]:
        s = {a: stat(vals[a]) for a in AXES}
        m = {a: None if math.isnan(s[a]["mean"]) else s[a]["mean"] for a in AXES}
        avg = None if None in m.values() else (m["alignment"] + m["aesthetic"]) / 2
        return {"alignment": m["alignment"], "aesthetic": m["aesthetic"], "average": avg,
                "failed": {a: s[a]["failed"] for a in AXES}, "n": len(vals["alignment"]), "summary": s}

    tracks = {t: cell(values[t]) for t in TRACKS if t in values}
    overall = cell(values["overall"]) if results else None
    track_scores = [c["average"] for c in tracks.values() if c["average"] is not None]
    table = {TRACKS[t]: {"Ali.": c["alignment"], "Aes.": c["aesthetic"], "Avg.": c["average"]}
             for t, c in tracks.items()}
    if overall:
        table["Overall"] = {"Ali.": overall["alignment"], "Aes.": overall["aesthetic"], "Avg.": overall["average"]}
    return {
        "prism_score": overall["average"] if overall else None,
        "alignment": overall["alignment"] if overall else None,
        "aesthetic": overall["aesthetic"] if overall else None,
        "overall_track_mean": sum(track_scores) / len(track_scores) if track_scores else None,
        "tracks": tracks,
        "table": table,
        "failed_replies": overall["failed"] if overall else {a: 0 for a in AXES},
    }


def _options(options: dict[str, Any], own: set[str]) -> dict[str, Any]:
    """``options`` meant for this step; unknown names (typos) are errors, the other step's are ignored."""
    unknown = set(options) - SCORE_OPTIONS - AGGREGATE_OPTIONS
    if unknown:
        raise TypeError(f"unknown PRISM-Bench option(s) {sorted(unknown)}; known: "
                        f"{sorted(SCORE_OPTIONS | AGGREGATE_OPTIONS)}")
    return {k: v for k, v in options.items() if k in own}


#: what every template asks for: a justification, then a 0-10 score in whole points (it starts
#: at 10 and deducts points), so an enforced schema also stops runaway decimals
REPLY_SCHEMA = {"title": "prism_bench_judgement", "type": "object",
                "properties": {"justification": {"type": "string"},
                               "score": {"type": "integer", "minimum": 0, "maximum": 10}},
                "required": ["justification", "score"], "additionalProperties": False}


def judge_requests(prompt: str, track: str, image: Any, *, system_prompt: str | None = SYSTEM_PROMPT,
                   sampling: Sampling | None = None, json_schema: dict | None = None) -> list[ChatRequest]:
    """The two requests for one image, as the official code sends them: [alignment, aesthetic],
    each the system message, then the template text with the prompt, then the image."""
    image = as_image(image)
    return [ChatRequest.simple(render("prism_bench", name, text_prompt=prompt), image,
                               system_prompt=system_prompt, sampling=sampling, json_schema=json_schema)
            for name in (f"alignment_{track}", "aesthetic")]


def parse_judgement(text: str) -> dict[str, Any]:
    """``{"justification": str | None, "score": float}`` from a reply; the score must lie in [0, 10]."""
    value = extract_json(text, expect=dict)
    if "score" not in value:
        raise ReplyParseError(f"the JSON object has no \"score\" (keys: {sorted(value)})")
    justification = value.get("justification")
    return {"score": as_score(value["score"], lo=0, hi=10),
            "justification": None if justification is None else str(justification)}


BENCHMARK = PrismBench()
