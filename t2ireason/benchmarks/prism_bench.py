"""PRISM-Bench (seed 004): seven tracks, each image judged for prompt alignment and for aesthetics.

Record -> request -> reply -> score, for one image:

1. a row is one line of ``captions/<language>/<track>.jsonl`` (its ``prompt``, byte for byte, and
   whatever else the line holds);
2. two requests, [alignment, aesthetic]: a system message, then one user message holding the track's
   alignment template (or the aesthetic template shared by all tracks) with the prompt, and the image;
   Chinese prompts are judged with the same English templates;
3. each reply is read as a JSON object ``{"justification": ..., "score": ...}`` on a 0-10 scale;
4. each axis is mapped to 0-100 (x 10); per track and overall: alignment, aesthetic and their average
   (the paper's Table 1 layout), per language.

Two protocols, chosen by the ``protocol`` option (the presets set it):

- ``paper`` (default): the templates as the paper prints them (``templates/prism_bench/paper``);
  a reply must be a JSON object with a score in [0, 10], else it is re-asked (``max_reasks``) and
  then counted as failed and left out of the means; a track's Avg. is the mean of its alignment mean
  and aesthetic mean, the overall Avg. the mean of the pooled alignment and pooled aesthetic.
- ``official``: what the authors' ``evaluation/eval_gpt41.py`` and ``eval_qwen25.py`` do
  (formats.md): their prompt strings byte for byte (``templates/prism_bench/official``), their
  parser (:func:`clean_and_parse_json`) and counting rules (:func:`official_judgement`), no re-asks,
  and their ``summarize_results``: a track's Combined is the mean of ONE pooled list of its alignment
  and aesthetic scores, the final figure the mean of every score of both axes, an axis with no
  counted score 0.0. Where their summary would raise, each reply is recorded and the table still made.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

import datasets

from ..images import ImageError, as_image, load_images, qwen_vl_utils_image
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, as_score, ask_structured, cut_off, extract_json
from ..prompts import verbatim
from ..results import ImageResult, PaperTable, QuestionResult
from ..stats import summarize
from .base import (
    Anomaly,
    Benchmark,
    OfficialRelease,
    Quarantined,
    Release,
    ReleaseError,
    file_to_read,
    recorded_hashes,
    unread_files,
)

__all__ = ["BENCHMARK", "PrismBench", "TRACKS", "LANGUAGES", "SYSTEM_PROMPT", "PROTOCOLS", "parse_judgement",
           "judge_requests", "template", "clean_and_parse_json", "official_judgement", "Judgement"]

#: track folder names in the release, in the paper's table order, with their display names
TRACKS = {"imagination": "Imagination", "entity": "Entity", "text_rendering": "Text rendering", "style": "Style",
          "affection": "Affection", "composition": "Composition", "long_text": "Long text"}
LANGUAGES = ("en", "zh")
SUBSETS = ("representative", "curated")
#: the system message of the authors' GPT-4.1 script (also in every template's system section)
SYSTEM_PROMPT = "You are a helpful assistant."
AXES = ("alignment", "aesthetic")
#: ``paper``: the paper's printed templates, strict replies with re-asks, mean of the two axis means;
#: ``official``: the authors' code (strings, parser, counting, pooled aggregation)
PROTOCOLS = ("paper", "official")

SCORE_OPTIONS = {"protocol", "max_reasks", "sampling", "system_prompt", "structured_output", "image_first",
                 "image_preparation", "image_bytes"}
#: ``image_preparation``: None (each image as it is) or "qwen_vl_utils" (as eval_qwen25.py feeds Qwen2.5-VL)
IMAGE_PREPARATIONS = (None, "qwen_vl_utils")
#: ``image_bytes``: "file" (a file's own bytes) or "pil" (opened and saved again by PIL, as eval_gpt41.py sends)
IMAGE_BYTES = ("file", "pil")
AGGREGATE_OPTIONS = {"protocol", "confidence", "n_resamples", "seed"}

#: what the authors' eval_gpt41.py sends with every request
_GPT41_SAMPLING = Sampling(temperature=0.0, top_p=1.0, seed=42, max_tokens=4096)
#: the authors' scripts, in their repository
AUTHORS_SCRIPTS = ("evaluation/eval_gpt41.py", "evaluation/eval_qwen25.py")


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
        "t2i-reason (preset `official` reproduces the authors' evaluation script); configs "
        "`<track>_<language>` (e.g. `imagination_en`), `en`, `zh` and `all` select rows.")
    field_docs = {
        "id": "Stable id `<track>_<language>_<index>`, e.g. `entity_zh_7`: pairs the same prompt across judges and runs.",
        "prompt": "The text-to-image prompt (the line's `prompt`), byte for byte as released.",
        "track": "One of imagination, entity, text_rendering, style, affection, composition, long_text.",
        "language": "`en` (PRISM-Bench) or `zh` (PRISM-Bench-ZH).",
        "index": "0-based position of the line among the file's non-blank lines: the official image is "
                 "`images/<track>/<index>.png`.",
        "subset": "`representative` (k-means sample) or `curated` when the release says so, else null.",
        "extra": "Every other key of the release line, as a JSON object string.",
    }
    #: the authors' repository: captions/{en,zh}/<track>.jsonl and the two evaluation scripts. Its commit
    #: could not be checked (the repository was not reachable): ``revision`` names the branch, and
    #: ``files`` holds the SHA-256 of a public copy of it (ada994/prism-bench), which a build reports
    #: against (a file that differs is a ``modified_file`` anomaly), never enforces (a branch moves).
    official_release = OfficialRelease(kind="github", repo="rongyaofang/prism-bench", revision="main",
                                       files=recorded_hashes("prism-bench"), scripts=AUTHORS_SCRIPTS)
    release_markers = tuple(f"captions/{lang}/{t}.jsonl" for lang in LANGUAGES for t in TRACKS)
    language = LANGUAGES  # PRISM-Bench (en) and PRISM-Bench-ZH
    presets = {
        # The paper's protocol (its printed templates, its definitions), with GPT-4.1 set as the
        # authors' script sets it; images as they are (the paper says nothing of their encoding).
        "paper": {"judge": "openai:gpt-4.1-2025-04-14",
                  "judge_kwargs": {"sampling": _GPT41_SAMPLING},
                  "options": {"protocol": "paper"}},
        # evaluation/eval_gpt41.py: its strings, parameters (max_tokens as such, stream false, no
        # response_format), 3 tries per request, its parser, counting and pooled aggregation; each
        # image opened by PIL and saved again in its own format, the bytes it sends (it labels them
        # image/jpeg: a mislabel, not reproduced).
        "official": {"judge": "openai:gpt-4.1-2025-04-14",
                     "judge_kwargs": {"sampling": _GPT41_SAMPLING, "max_tokens_param": "max_tokens",
                                      "max_retries": 2, "extra_body": {"stream": False}},
                     "options": {"protocol": "official", "image_bytes": "pil"}},
        # evaluation/eval_qwen25.py: Qwen2.5-VL-72B in bfloat16 spread over the GPUs (device_map
        # "balanced"), the chat template rendered with add_vision_id=True ("Picture 1: " before the
        # image), each image made RGB by PIL and resized by qwen_vl_utils before the processor, the
        # processor's pixel limits, the image before the text, no system message of its own (the chat
        # template adds its default), the checkpoint's own generation settings, 1024 new tokens; the
        # authors' parser and aggregation.
        "qwen": {"judge": "hf:Qwen/Qwen2.5-VL-72B-Instruct",
                 "judge_kwargs": {"dtype": "bfloat16", "device_map": "balanced",
                                  "processor_kwargs": {"min_pixels": 256 * 28 * 28, "max_pixels": 1280 * 28 * 28},
                                  "chat_template_kwargs": {"add_vision_id": True},
                                  "generation_config": "model",
                                  "sampling": Sampling(max_tokens=1024)},
                 "options": {"protocol": "official", "system_prompt": None, "image_first": True,
                             "image_preparation": "qwen_vl_utils"}},
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
        """Read ``captions/{en,zh}/<track>.jsonl`` of ``source``: the root of the authors' repository
        (``t2ireason build`` finds it in a checkout or an archive), or its ``captions`` folder.

        Text is kept byte for byte (a prompt may end with a space). Nothing irregular stops the
        build: a line that is a JSON string is kept as the prompt; a prompt that is a number or a
        boolean is kept as its JSON text; a line that cannot be read, is not an object, or has no
        usable ``prompt`` goes to the release's quarantine with its raw text; empty prompts,
        duplicate keys, repeated prompts, unknown subsets, empty and missing track files, and files
        under ``captions/`` that are not track files are kept and reported. A line's
        ``subset_field`` key, when it names a subset, fills ``subset``; other keys go to ``extra``.
        """
        if options:
            raise TypeError(f"unknown option(s) {sorted(options)} for reading {self.pretty_name}")
        source = Path(source)
        prefix = _captions_prefix(source)
        configs: dict[str, list[dict[str, Any]]] = {c: [] for c in self.configs}
        anomalies: list[Anomaly] = []
        quarantine: list[Quarantined] = []
        files_read: set[str] = set()
        captions = source / prefix
        expected = {f"{lang}/{track}.jsonl" for lang in LANGUAGES for track in TRACKS}
        track_files: dict[str, str] = {}  # config -> the file its rows were read from
        for lang in LANGUAGES:
            for track in TRACKS:
                name = file_to_read(captions, f"{lang}/{track}.jsonl", expected, anomalies, shown="captions/")
                if name is None:
                    anomalies.append(Anomaly("missing_file", f"captions/{lang}/{track}.jsonl", None, "track file absent"))
                    continue
                where = track_files[config_name(track, lang)] = f"captions/{name}"
                files_read.add(prefix + name)
                rows = _read_track((captions / name).read_bytes(), where, track, lang, subset_field, anomalies, quarantine)
                for row in rows:
                    for c in ("all", lang, config_name(track, lang)):
                        configs[c].append(row)
        for rel in unread_files(source, files_read, prefix):  # a stray file under captions/ may be data missed
            anomalies.append(Anomaly("unknown_file", f"captions/{rel[len(prefix):]}", None,
                                     "not a PRISM-Bench track file: not read"))
        lost = Counter(q.file for q in quarantine)
        counts = {c: {"rows": len(rows), **{f"subset:{s}": sum(r["subset"] == s for r in rows) for s in SUBSETS}}
                  for c, rows in configs.items()}
        for config, where in track_files.items():
            if lost[where]:
                counts[config]["quarantined"] = lost[where]
        return Release(configs={c: r for c, r in configs.items() if r}, anomalies=anomalies, counts=counts,
                       source=str(source), quarantine=quarantine, files_read=files_read)

    # -- scoring -----------------------------------------------------------------------------------

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """One ImageResult per image, both judge requests of every image sent in one batch.

        ``score`` is the mean of alignment and aesthetic on 0-1, the scale of every metric's per-image
        reward (None unless both were counted); ``subscores`` holds each axis on the tables' 0-100 (None
        when not counted), ``questions`` each raw
        judgement with its justification, ``context["outcome"]`` what became of each axis'
        reply (``counted``; ``failed``, ``judge_error``, ``image_error``; under the official
        protocol ``unparsable``, ``no_number``, ``summary_raises``, ``unparsed_no_demjson3``, ``cut_off``). An
        image that cannot be read is that image's failure; an image whose request failed at the
        judge for a transient cause (``Reply.transient``) is ``retryable``.

        Options: ``protocol`` (``"paper"``, default, or ``"official"``), ``system_prompt`` (default:
        the template's, "You are a helpful assistant."; None: no system message; a string: that),
        ``image_first`` (default False: the text, then the image; True as eval_qwen25.py),
        ``sampling`` (a Sampling or a dict, overriding the judge's defaults), ``max_reasks``
        (paper protocol, default 2), ``structured_output`` (default False, as the authors send no
        schema: also send :data:`REPLY_SCHEMA`), ``image_preparation`` (None, default: each image as
        it is; ``"qwen_vl_utils"``: as eval_qwen25.py feeds Qwen2.5-VL, made RGB by PIL's
        ``convert`` and then what qwen_vl_utils' ``fetch_image`` makes of it,
        :func:`~t2ireason.images.qwen_vl_utils_image`), ``image_bytes`` (``"file"``, default: a
        file's own bytes; ``"pil"``: the file opened and saved again by PIL in its own format, the
        bytes eval_gpt41.py sends, :meth:`~t2ireason.images.JudgeImage.pil_reencoded`).
        """
        opts = _options(options, SCORE_OPTIONS)
        protocol = _protocol(opts.get("protocol"))
        if protocol == "official" and opts.get("max_reasks"):
            raise ValueError("the official protocol never re-asks (the authors' code does not); "
                             "max_reasks applies to protocol 'paper'")
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} images")
        sampling = opts.get("sampling")
        if isinstance(sampling, dict):
            sampling = Sampling(**sampling)
        preparation, image_bytes = opts.get("image_preparation"), opts.get("image_bytes", "file")
        if preparation not in IMAGE_PREPARATIONS:
            raise ValueError(f"image_preparation must be one of {IMAGE_PREPARATIONS}, got {preparation!r}")
        if image_bytes not in IMAGE_BYTES:
            raise ValueError(f"image_bytes must be one of {IMAGE_BYTES}, got {image_bytes!r}")
        prepare = _after_convert_rgb if preparation == "qwen_vl_utils" else None
        request_options = {"protocol": protocol, "image_first": bool(opts.get("image_first", False)),
                           "system_prompt": opts.get("system_prompt", _FROM_TEMPLATE), "sampling": sampling,
                           "json_schema": REPLY_SCHEMA if opts.get("structured_output") else None}
        results, asked, requests = [], [], []
        loaded = load_images(images, prepare=prepare)
        if image_bytes == "pil":
            loaded = _pil_reencoded(loaded)
        for row, given, image in zip(rows, images, loaded):
            track = row.get("track")
            if track not in TRACKS:
                raise ValueError(f"row {row.get('id')!r} has track {track!r}; known: {', '.join(TRACKS)}")
            result = ImageResult(
                id=self.row_id(row), prompt=row["prompt"], score=None, config=config_name(track, row["language"]),
                image=image.source if not isinstance(image, ImageError) else _source(given),
                context={"track": track, "language": row["language"], "index": row.get("index"),
                         "subset": row.get("subset"), "protocol": protocol})
            results.append(result)
            if isinstance(image, ImageError):  # this image's failure, not the batch's
                _record(result, [Judgement("image_error", detail=f"image: {image}") for _ in AXES])
                continue
            asked.append(result)
            requests += judge_requests(row["prompt"], track, image, **request_options)
        if protocol == "paper":
            parsed = ask_structured(judge, requests, parse_judgement, max_reasks=opts.get("max_reasks", 2),
                                    progress=progress)
            judgements = [_paper_judgement(p) for p in parsed]
        else:
            replies = judge.chat(requests, progress=progress) if requests else []
            judgements = [_official_judgement(r) for r in replies]
        for i, result in enumerate(asked):
            _record(result, judgements[2 * i: 2 * i + 2])
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The paper's Table 1 (Table 2 for zh): per track Ali., Aes. and Avg. on 0-100, and Overall.

        Every cell holds both definitions: ``average`` (the paper's: the mean of the axis means) and
        ``combined`` (the authors' code: the mean of one pooled list of both axes' scores); the
        protocol decides which is the table's Avg. The final score ``prism_score`` is, under the paper
        protocol, the paper's (seed 004 section 3.2: "the average across all seven tracks",
        ``overall_track_mean``; the table's Overall is the mean over the tracks of each column,
        ``track_mean``), with the pooled figure beside it (``pooled_average``: the mean of the pooled
        alignment and pooled aesthetic; Pooled Avg. in :meth:`paper_tables`); under the official protocol the authors'
        pooled Combined. Top-level ``alignment`` and ``aesthetic`` pool every image. Replies not counted are counted per cause (``outcomes``) and explained in
        ``notes``. ``by_language`` splits en from zh (separate tables, separate runs of the authors'
        script); the top level pools whatever languages were given.
        """
        opts = _options(options, AGGREGATE_OPTIONS)
        protocol = _protocol_of(results, opts.pop("protocol", None))
        out = _table(results, protocol, opts)
        out["by_language"] = {lang: _table([r for r in results if r.context.get("language") == lang], protocol, opts)
                              for lang in sorted({r.context.get("language") for r in results} - {None})}
        return out

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 1 (English) and Table 2 (Chinese): per track and overall Ali., Aes. and Avg. on 0-100;
        under the paper protocol with 95% intervals for alignment and aesthetic."""
        tables = []
        for lang, agg in (aggregate.get("by_language") or {"": aggregate}).items():
            official = agg.get("protocol") == "official"
            cells: dict[str, Any] = {}
            for track, entry in [*agg["tracks"].items(), ("overall", None)]:
                name = TRACKS.get(track, "Overall")
                cell = agg["table"].get(name)
                if cell is None:
                    continue
                summary = entry["summary"] if entry and not official else {}
                cells[f"{name} Ali."] = summary.get("alignment", cell["Ali."])
                cells[f"{name} Aes."] = summary.get("aesthetic", cell["Aes."])
                cells[f"{name} Avg."] = cell["Avg."]
            if not official and "Overall" in agg["table"]:  # the pooled figure beside the paper's final score
                cells["Pooled Avg."] = agg["pooled_average"]
            number = {"en": "Table 1", "zh": "Table 2 (PRISM-Bench-ZH)"}.get(lang, lang)
            note = ("0-100, as the authors' code computes it: Avg. is the mean of one pooled list of both axes' "
                    "scores; overall pools every image; an axis with no counted score shows 0.0" if official
                    else "0-100; Avg. is the mean of Ali. and Aes.; Overall is the mean over the tracks (the paper's "
                         "final score, section 3.2); Pooled Avg. pools every image instead")
            tables.append(PaperTable.one_row(f"PRISM-Bench {number}".strip(), label, cells, note=note))
        return tables


# -- reading the release ---------------------------------------------------------------------------

def _captions_prefix(source: Path) -> str:
    """Where the track files are under ``source``: ``"captions/"`` at the repository's root, ``""`` in
    the ``captions`` folder itself."""
    if (source / "captions").is_dir() and any((source / "captions" / lang).is_dir() for lang in LANGUAGES):
        return "captions/"
    if any((source / lang).is_dir() for lang in LANGUAGES):
        return ""
    raise ReleaseError(f"no captions/en or captions/zh folder in {source}: pass the root of the PRISM-Bench "
                       "release (the folder holding captions/) or its captions folder; `t2ireason build "
                       "prism-bench --source` finds the root in a checkout or an archive one or two folders deeper")


def _read_track(data: bytes, where: str, track: str, lang: str, subset_field: str, anomalies: list[Anomaly],
                quarantine: list[Quarantined]) -> list[dict[str, Any]]:
    """The rows of one track file; lines that cannot be kept go to ``quarantine``. Lines are split on
    ``\\n`` only (JSON Lines): a prompt may hold any other line separator (U+2028...)."""
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}  # prompt -> its first image index
    quarantined = 0
    if data.startswith(b"\xef\xbb\xbf"):  # a byte-order mark is encoding, not text
        data = data[3:]
    position = 0  # the line's place among the non-blank lines: its official image number
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        index, position = position, position + 1
        try:
            record = _line_record(raw, where, n, anomalies)
        except _Quarantined as e:
            quarantined += 1
            text = raw.decode("utf-8", errors="backslashreplace")
            quarantine.append(Quarantined(where, n, f"{e}; image index {index} left empty", text))
            continue
        prompt = record["prompt"]
        if not prompt.strip():
            anomalies.append(Anomaly("empty_prompt", where, n, f"prompt {prompt!r} kept as released"))
        extra = {k: v for k, v in record.items() if k != "prompt"}
        subset = record.get(subset_field)
        if subset is not None:
            name = subset.strip().lower() if isinstance(subset, str) else None
            if name in SUBSETS:
                subset = name
                extra.pop(subset_field)
            else:
                anomalies.append(Anomaly("unknown_subset", where, n, f"{subset_field} {subset!r} kept in extra"))
                subset = None
        if prompt in seen:
            anomalies.append(Anomaly("duplicate_prompt", where, n, f"the same prompt as image index {seen[prompt]}: kept"))
        seen.setdefault(prompt, index)
        extra_text = json.dumps(extra, ensure_ascii=False, sort_keys=True)
        if not _storable(extra_text):  # unpaired surrogates stay as JSON escapes
            extra_text = json.dumps(extra, sort_keys=True)
        rows.append({"id": f"{config_name(track, lang)}_{index}", "prompt": prompt, "track": track,
                     "language": lang, "index": index, "subset": subset, "extra": extra_text})
    if not rows:
        anomalies.append(Anomaly("empty_file", where, None,
                                 "no prompts" + (f" ({quarantined} line(s) quarantined)" if quarantined else "")))
    return rows


class _Quarantined(Exception):
    """A line that cannot be kept as a row; the message says why."""


def _line_record(raw: bytes, where: str, n: int, anomalies: list[Anomaly]) -> dict[str, Any]:
    """One line as a JSON object with a text ``prompt``, what could be kept reported in ``anomalies``."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Quarantined(f"not UTF-8 ({e.reason} at byte {e.start})") from None
    duplicates: list[str] = []
    try:
        record = json.loads(line, object_pairs_hook=partial(_object, duplicates))
    except ValueError as e:
        raise _Quarantined(f"not JSON ({e})") from None
    except RecursionError:
        raise _Quarantined("not JSON (nested too deeply)") from None
    if duplicates:
        anomalies.append(Anomaly("duplicate_key", where, n,
                                 f"key(s) {sorted(set(duplicates))} given twice: the last value is kept, "
                                 "as the authors' code (Python's json) reads it"))
    if isinstance(record, str):
        anomalies.append(Anomaly("not_an_object", where, n, "a JSON string, not an object: kept as the prompt"))
        return {"prompt": record}
    if not isinstance(record, dict):
        raise _Quarantined(f"a JSON {_json_type(record)}, not an object")
    prompt = record.get("prompt")
    if isinstance(prompt, (bool, int, float)):
        anomalies.append(Anomaly("prompt_not_text", where, n,
                                 f"\"prompt\" is a {_json_type(prompt)}: kept as its JSON text"))
        return {**record, "prompt": json.dumps(prompt)}
    if not isinstance(prompt, str):
        why = "no \"prompt\"" if "prompt" not in record else f"\"prompt\" is a {_json_type(prompt)}"
        raise _Quarantined(f"{why} (keys: {sorted(record)})")
    if not _storable(prompt):
        raise _Quarantined("the prompt holds an unpaired surrogate escape (\\ud800...), which no text can store")
    return record


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _object(duplicates: list[str], pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    duplicates += [k for k, c in Counter(keys).items() if c > 1]
    return dict(pairs)


def _json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


# -- requests --------------------------------------------------------------------------------------

_FROM_TEMPLATE: Any = type("FromTemplate", (), {"__repr__": lambda self: "<the template's system message>"})()
_SECTION = re.compile(r"^===== (system|user \(text\)) =====\n", re.M)


@cache
def template(protocol: str, name: str) -> tuple[str | None, str]:
    """``(system message or None, user text with its {text_prompt} slot)`` of template ``name``
    (``alignment_<track>`` or ``aesthetic``) under ``protocol``, exactly as the file gives them."""
    text = verbatim(f"prism_bench/{_protocol(protocol)}", name)
    parts = _SECTION.split(text)
    if parts[0] or len(parts) < 3:
        raise ValueError(f"template prism_bench/{protocol}/{name} does not open with a '===== <role> =====' line")
    sections = {}
    for role, body in zip(parts[1::2], parts[2::2]):
        if role in sections or not body.endswith("\n"):
            raise ValueError(f"template prism_bench/{protocol}/{name}: malformed section {role!r}")
        sections[role] = body[:-1]  # the newline before the next header (or the file's end) is not text
    if "user (text)" not in sections:
        raise ValueError(f"template prism_bench/{protocol}/{name} has no user text")
    return sections.get("system"), sections["user (text)"]


def judge_requests(prompt: str, track: str, image: Any, *, protocol: str = "paper", system_prompt: Any = _FROM_TEMPLATE,
                   image_first: bool = False, sampling: Sampling | None = None,
                   json_schema: dict | None = None) -> list[ChatRequest]:
    """The two requests for one image, [alignment, aesthetic]: the template's system message (or
    ``system_prompt``; None for none), then one user message of the template text with the prompt
    put in as ``str.format`` does (the authors' code), and the image (before the text with
    ``image_first``)."""
    image = as_image(image)
    requests = []
    for name in (f"alignment_{track}", "aesthetic"):
        system_text, user_text = template(protocol, name)
        text = user_text.format(text_prompt=prompt)
        parts = (image, text) if image_first else (text, image)
        requests.append(ChatRequest.simple(*parts, system_prompt=system_text if system_prompt is _FROM_TEMPLATE
                                           else system_prompt, sampling=sampling, json_schema=json_schema))
    return requests


#: what every template asks for: a justification, then a 0-10 score in whole points (it starts
#: at 10 and deducts points), so an enforced schema also stops runaway decimals
REPLY_SCHEMA = {"title": "prism_bench_judgement", "type": "object",
                "properties": {"justification": {"type": "string"},
                               "score": {"type": "integer", "minimum": 0, "maximum": 10}},
                "required": ["justification", "score"], "additionalProperties": False}


def _pil_reencoded(images: list[Any]) -> list[Any]:
    """Each readable image as PIL saves it again (:meth:`~t2ireason.images.JudgeImage.pil_reencoded`),
    encoded in worker threads: PIL's PNG encoder releases the GIL, and one 1,024 px image takes a
    tenth of a second or more to encode."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda im: im if isinstance(im, ImageError) else im.pil_reencoded(), images))


def _after_convert_rgb(image: Any) -> Any:
    """eval_qwen25.py's image: ``Image.open(path).convert("RGB")`` (alpha dropped, not composited),
    then qwen_vl_utils' ``fetch_image`` (sides to multiples of 28, resized) before the processor."""
    return qwen_vl_utils_image(image.convert("RGB"))


# -- replies ---------------------------------------------------------------------------------------

def parse_judgement(text: str) -> dict[str, Any]:
    """The paper protocol's reading of a reply: ``{"justification": str | None, "score": float}``;
    the score must be a number (or a numeric string) in [0, 10]."""
    value = extract_json(text, expect=dict)
    if "score" not in value:
        raise ReplyParseError(f"the JSON object has no \"score\" (keys: {sorted(value)})")
    justification = value.get("justification")
    return {"score": as_score(value["score"], lo=0, hi=10),
            "justification": None if justification is None else str(justification)}


_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NOT_PARSED = object()


def clean_and_parse_json(text: str) -> Any:
    """A reply read as the authors' ``clean_and_parse_json`` reads it (``eval_gpt41.py``,
    ``eval_qwen25.py``): the reply is stripped; a leading ```` ```json ```` is removed; then, on its
    own, a trailing ```` ``` ```` (so a reply ending in a closing fence without an opening one loses
    it too); stripped again; every comma before a closing brace or bracket is removed (inside
    strings as well); then ``json.loads`` and, failing that, ``demjson3.decode``. ``None`` when
    both fail (their code prints such a reply and skips it)."""
    s = text.strip()
    if s.startswith("```json"):
        s = s[len("```json"):]
    if s.endswith("```"):
        s = s[:-3]
    s = _TRAILING_COMMA.sub(r"\1", s.strip())
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        pass
    demjson3 = _demjson3()
    if demjson3 is None:
        return _NOT_PARSED
    try:
        return demjson3.decode(s)
    except Exception:  # demjson3 raises its own errors, and RecursionError on deep nesting
        return None


@cache
def _demjson3():
    try:
        import demjson3
    except ImportError:
        warnings.warn("demjson3 is not installed: the official protocol reads replies with json only, where the "
                      "authors' code also tries demjson3 (pip install demjson3, or t2i-reason[official]); "
                      "replies only demjson3 reads are counted as 'unparsed_no_demjson3'", stacklevel=3)
        return None
    return demjson3


@dataclass
class Judgement:
    """What became of one judge request: ``outcome`` is ``counted`` (``score`` is the raw 0-10
    value) or why it is not (``detail``); ``transient`` marks a backend failure worth retrying."""

    outcome: str
    score: float | None = None
    justification: str | None = None
    detail: str = ""
    transient: bool = False
    texts: list[str] = field(default_factory=list)
    reasks: int = 0


def official_judgement(text: str) -> Judgement:
    """A reply judged by the authors' rules, step by step as their script takes it: parsed by
    :func:`clean_and_parse_json` (``unparsable`` when it fails, or gives a false value: ``{}``,
    ``null``, ``0``, ``""``..., which their script skips as a parsing failure); written with
    ``json.dump`` (``unwritable`` when the value holds what JSON cannot write, a ``Decimal`` or
    ``demjson3.undefined`` from demjson3: their script stops there, and a run started again skips
    the broken file); read back by their summary: counted when it is an object whose ``score`` is
    an int or a float (a boolean ``true`` counts as 1, NaN and infinities as they are, no range
    check); ``no_number`` when the summary skips it (a missing or non-numeric score, a string "8",
    a string or list without ``score`` in it); ``summary_raises`` when their summary raises on it
    (a bare number or boolean, a string or list holding ``score``)."""
    value = clean_and_parse_json(text)
    texts = [text]
    if value is _NOT_PARSED:
        return Judgement("unparsed_no_demjson3", detail="json.loads cannot read it and demjson3, which the authors' "
                         "parser tries next, is not installed", texts=texts)
    if value is None or not _truthy(value):
        what = "" if value is None else f" (it parses to {_shown(value)}, which their script takes for a failure)"
        return Judgement("unparsable", detail="the authors' parser cannot read it" + what +
                         " (their code prints and skips it)", texts=texts)
    unwritable = _unwritable(value)
    if unwritable:
        return Judgement("unwritable", detail=f"demjson3 reads it with {unwritable}, which json.dump cannot write: "
                         "the authors' script stops on it (a run started again skips the broken file); not counted",
                         texts=texts)
    if not isinstance(value, dict):
        try:
            skipped = "score" not in value  # their summary's own test, on whatever json.load gives back
        except TypeError:
            skipped = False
        if skipped:
            return Judgement("no_number", texts=texts, detail=f"it parses to {_shown(value)}, not an object: the "
                             "authors' summary finds no \"score\" in it and skips it")
        return Judgement("summary_raises", detail=f"it parses to {_shown(value)}, not an object: the "
                         "authors' summarize_results raises on it (recorded here, not counted)", texts=texts)
    score, justification = value.get("score"), value.get("justification")
    justification = None if justification is None else str(justification)
    if not isinstance(score, (int, float)):
        return Judgement("no_number", justification=justification, texts=texts,
                         detail=f"\"score\" is {_shown(score)}, not an int or a float: the authors' summary skips it")
    return Judgement("counted", score=_float(score), justification=justification, texts=texts)


def _official_judgement(reply: Any) -> Judgement:
    """The official protocol's reading of one reply: a judge error, a reply cut at the token limit
    (``cut_off``: never read; the authors' parser fails on the unclosed object and skips it, so their
    count is the same, and a cut that happens to leave valid JSON is not read either), else
    :func:`official_judgement`."""
    if not reply.ok:
        return Judgement("judge_error", detail=f"judge error: {reply.error}", transient=reply.transient,
                         texts=[f"[judge error] {reply.error}"])
    if (cut := cut_off(reply)) is not None:
        return Judgement("cut_off", detail=f"reply {cut}: not read (raise max_tokens)", texts=[reply.text])
    return official_judgement(reply.text)


def _truthy(value: Any) -> bool:
    try:
        return bool(value)
    except Exception:  # a value whose truth cannot be told is not one their script keeps
        return False


def _unwritable(value: Any) -> str | None:
    """What in ``value`` ``json.dump`` cannot write (a type name), or None."""
    try:
        json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        kinds = sorted({type(v).__name__ for v in _leaves(value)
                        if not isinstance(v, (str, int, float, bool, type(None)))})
        return "a " + " and a ".join(kinds) if kinds else "a value JSON cannot hold"
    except RecursionError:
        return "nesting too deep"
    return None


def _leaves(value: Any):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _paper_judgement(p: Any) -> Judgement:
    if p.ok:
        return Judgement("counted", p.value["score"], p.value["justification"], texts=p.texts, reasks=p.reasks)
    judge_failed = bool(p.replies) and not p.replies[-1].ok
    return Judgement("judge_error" if judge_failed else "failed", detail=p.error, transient=p.transient,
                     texts=p.texts, reasks=p.reasks)


def _record(result: ImageResult, judgements: Sequence[Judgement]) -> None:
    """Put an image's two judgements into its result."""
    failures, outcome = [], {}
    for axis, j in zip(AXES, judgements):
        result.replies += j.texts
        result.reasks += j.reasks
        result.questions.append(QuestionResult(question=axis, score=j.score, group=axis, id=axis,
                                               reasoning=j.justification))
        result.subscores[axis] = None if j.score is None else j.score * 10
        outcome[axis] = j.outcome
        if j.outcome != "counted":
            failures.append(j.detail if j.outcome == "image_error" else f"{axis}: {j.detail}")
    result.context["outcome"] = outcome
    result.retryable = any(j.transient for j in judgements)
    if failures:
        result.failure = "; ".join(dict.fromkeys(failures))
    else:
        # on 0-1 like every metric's per-image reward; the tables are computed from the 0-100 subscores
        result.score = (result.subscores["alignment"] + result.subscores["aesthetic"]) / 200


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return math.inf if value > 0 else -math.inf


def _shown(value: Any) -> str:
    if value is None:
        return "missing"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # what demjson3 gives and JSON cannot write
        text = repr(value)
    return f"a {_json_type(value)} ({text[:40]})"


def _source(given: Any) -> str | None:
    return str(given) if isinstance(given, (str, os.PathLike)) else None


# -- aggregation -----------------------------------------------------------------------------------

_NOTES = {
    "failed": "{n} {replies} never gave a JSON object with a score in [0, 10], after re-asks: counted in "
              "failed_replies, left out of the means",
    "judge_error": "{n} {requests} failed at the judge after its retries (the authors' script skips an image "
                   "after 3 tries): left out of the means",
    "image_error": "{n} {judgements} not asked: the image could not be read",
    "unparsable": "{n} {replies} that the authors' clean_and_parse_json cannot read (or reads as an empty or false "
                  "value): their code prints and skips "
                  "such replies; not counted here either",
    "no_number": "{n} {replies} whose \"score\" is missing or not an int or a float (a string \"8\" included): "
                 "the authors' summary skips such replies; so does this",
    "summary_raises": "{n} {replies} parsing to a value that is not an object (a bare number, a string holding "
                      "\"score\"...): the authors' summarize_results raises on such a reply and prints no table; "
                      "recorded here, not counted",
    "unwritable": "{n} {replies} that demjson3 reads with a value json.dump cannot write (a Decimal, "
                  "undefined): the authors' script stops on such a reply, and skips it when started again; "
                  "not counted here",
    "cut_off": "{n} {replies} cut off at the judge's token limit (finish_reason \"length\"): not read, not "
               "counted (the authors' parser skips such a reply as unparsable, unless the cut leaves valid JSON)",
    "unparsed_no_demjson3": "{n} {replies} that json cannot read, not tried with demjson3 (not installed) as the "
                            "authors' parser would: pip install demjson3",
}


def _note(kind: str, n: int) -> str:
    def word(one: str, many: str) -> str:
        return one if n == 1 else many

    return _NOTES[kind].format(n=n, replies=word("reply", "replies"), requests=word("request", "requests"),
                               judgements=word("judgement", "judgements"))


def _mean(values: Sequence[float], empty: float | None) -> float | None:
    return sum(values) / len(values) if values else empty  # plain sum, as the authors' summary


def _table(results: Sequence[ImageResult], protocol: str, stat_opts: dict[str, Any]) -> dict[str, Any]:
    official = protocol == "official"
    empty = 0.0 if official else None  # the authors' summary prints 0.00 for an axis with nothing counted
    stat = partial(summarize, **stat_opts)
    values: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: {a: [] for a in AXES})
    outcomes: dict[str, dict[str, Counter]] = defaultdict(lambda: {a: Counter() for a in AXES})
    for r in results:
        recorded = r.context.get("outcome") or {}
        for axis in AXES:
            v = r.subscores.get(axis)
            kind = recorded.get(axis) or ("counted" if v is not None else "failed")
            for key in (r.context.get("track"), "overall"):
                values[key][axis].append(v)
                outcomes[key][axis][kind] += 1

    def cell(key: str) -> dict[str, Any]:
        counted = {a: [v for v in values[key][a] if v is not None] for a in AXES}
        ali, aes = (_mean(counted[a], empty) for a in AXES)
        n = {a: len(counted[a]) for a in AXES}
        return {"alignment": ali, "aesthetic": aes,
                "average": (ali + aes) / 2 if n["alignment"] and n["aesthetic"] else None,
                "combined": _mean(counted["alignment"] + counted["aesthetic"], empty),
                "n": len(values[key]["alignment"]), "counted": n,
                "failed": {a: len(values[key][a]) - n[a] for a in AXES},
                "outcomes": {a: dict(outcomes[key][a]) for a in AXES},
                # intervals over the finite counted scores (a score the authors count may be inf or NaN)
                "summary": {a: stat([v if v is not None and math.isfinite(v) else None for v in values[key][a]])
                            for a in AXES}}

    headline = "combined" if official else "average"
    tracks = {t: cell(t) for t in TRACKS if t in values}
    overall = cell("overall") if results else None

    def over_tracks(key: str) -> float | None:  # seed 004 section 3.2: "the average across all seven tracks"
        scores = [c[key] for c in tracks.values() if c[key] is not None]
        return sum(scores) / len(scores) if scores else None

    track_mean = {"alignment": over_tracks("alignment"), "aesthetic": over_tracks("aesthetic"),
                  "average": over_tracks("average")}
    table = {TRACKS[t]: {"Ali.": c["alignment"], "Aes.": c["aesthetic"], "Avg.": c[headline]} for t, c in tracks.items()}
    if overall and official:  # the authors' summary pools every score
        table["Overall"] = {"Ali.": overall["alignment"], "Aes.": overall["aesthetic"], "Avg.": overall[headline]}
    elif overall:  # the paper's Overall: the mean over the tracks, each axis and the average
        table["Overall"] = {"Ali.": track_mean["alignment"], "Aes.": track_mean["aesthetic"],
                            "Avg.": track_mean["average"]}
    kinds = Counter()
    for axis in AXES:
        kinds.update(overall["outcomes"][axis] if overall else {})
    notes = [_note(k, n) for k, n in sorted(kinds.items()) if k in _NOTES and n]
    if official and overall and any(c[a] is not None and not c["counted"][a]
                                    for c in [*tracks.values(), overall] for a in AXES):
        notes.append("an axis with no counted score shows 0.0, as the authors' summary prints 0.00")
    return {
        "protocol": protocol,
        # the paper's final score is the mean over the tracks; the authors' code's the pooled Combined
        "prism_score": (overall[headline] if official else track_mean["average"]) if overall else None,
        "alignment": overall["alignment"] if overall else None,
        "aesthetic": overall["aesthetic"] if overall else None,
        "average": overall["average"] if overall else None,
        "pooled_average": overall["average"] if overall else None,
        "combined": overall["combined"] if overall else None,
        "overall_track_mean": track_mean["average"],
        "track_mean": track_mean,
        "tracks": tracks,
        "table": table,
        "failed_replies": overall["failed"] if overall else {a: 0 for a in AXES},
        "outcomes": overall["outcomes"] if overall else {a: {} for a in AXES},
        "notes": notes,
    }


def _protocol(value: Any) -> str:
    if value is None:
        return "paper"
    if value not in PROTOCOLS:
        raise ValueError(f"unknown PRISM-Bench protocol {value!r}; known: {', '.join(PROTOCOLS)}")
    return value


def _protocol_of(results: Sequence[ImageResult], asked: str | None) -> str:
    """The protocol the results were scored under (recorded in each), checked against the one asked."""
    recorded = {r.context.get("protocol") for r in results} - {None}
    if len(recorded) > 1:
        raise ValueError(f"these results were scored under different protocols ({', '.join(sorted(recorded))}): "
                         "aggregate each separately")
    if asked is not None and recorded and _protocol(asked) not in recorded:
        raise ValueError(f"these results were scored under protocol {recorded.pop()!r}, not {asked!r}")
    return _protocol(asked) if asked is not None else (recorded.pop() if recorded else "paper")


def _options(options: dict[str, Any], own: set[str]) -> dict[str, Any]:
    """``options`` meant for this step; unknown names (typos) are errors, the other step's are ignored."""
    unknown = set(options) - SCORE_OPTIONS - AGGREGATE_OPTIONS
    if unknown:
        raise TypeError(f"unknown PRISM-Bench option(s) {sorted(unknown)}; known: "
                        f"{sorted(SCORE_OPTIONS | AGGREGATE_OPTIONS)}")
    return {k: v for k, v in options.items() if k in own}


BENCHMARK = PrismBench()
