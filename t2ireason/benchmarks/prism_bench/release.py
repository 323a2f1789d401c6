"""PRISM-Bench's release: ``captions/<language>/<track>.jsonl``, read as the authors publish it.

A row is one non-blank line of a track file: its ``prompt`` byte for byte, its place among the file's
non-blank lines (the official image number), its subset when the line says so, and every other key in
``extra``. What cannot be a row is quarantined with its raw text; every irregularity is an anomaly.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from ..base import Anomaly, Quarantined, Release, ReleaseError, file_to_read, unread_files

__all__ = ["TRACKS", "LANGUAGES", "SUBSETS", "CONFIGS", "AUTHORS_SCRIPTS", "config_name", "read_release"]

#: track folder names in the release, in the paper's table order, with their display names
TRACKS = {"imagination": "Imagination", "entity": "Entity", "text_rendering": "Text rendering", "style": "Style",
          "affection": "Affection", "composition": "Composition", "long_text": "Long text"}
LANGUAGES = ("en", "zh")
SUBSETS = ("representative", "curated")
#: the authors' scripts, in their repository
AUTHORS_SCRIPTS = ("evaluation/eval_gpt41.py", "evaluation/eval_qwen25.py")


def config_name(track: str, language: str) -> str:
    return f"{track}_{language}"


#: "all", one per language, then one per track and language (track names as in the release's files)
CONFIGS = ("all", *LANGUAGES, *(config_name(t, lang) for lang in LANGUAGES for t in TRACKS))


def read_release(source: str | Path, *, subset_field: str = "subset", **options: Any) -> Release:
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
        raise TypeError(f"unknown option(s) {sorted(options)} for reading PRISM-Bench")
    source = Path(source)
    prefix = _captions_prefix(source)
    configs: dict[str, list[dict[str, Any]]] = {c: [] for c in CONFIGS}
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
        raise _Quarantined(f"a JSON {json_type(record)}, not an object")
    prompt = record.get("prompt")
    if isinstance(prompt, (bool, int, float)):
        anomalies.append(Anomaly("prompt_not_text", where, n,
                                 f"\"prompt\" is a {json_type(prompt)}: kept as its JSON text"))
        return {**record, "prompt": json.dumps(prompt)}
    if not isinstance(prompt, str):
        why = "no \"prompt\"" if "prompt" not in record else f"\"prompt\" is a {json_type(prompt)}"
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


def json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)

