"""Reading T2I-ReasonBench's official release: its three files per dimension (``prompts/``,
``deepseek_evaluation_qs/``, ``pipeline_prompts/``) joined by id into rows, ids made into file names, and
every irregularity reported.

The reader keeps the release as it is: every value whatever its JSON type,
text byte for byte, every irregular record listed as an :class:`Anomaly`;
only what cannot be kept in a row at all (a record that is not an object, a
rewritten prompt with no prompt to attach to, text that is not JSON) goes to
the release's quarantine with its raw text.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base import (
    Anomaly,
    Quarantined,
    Release,
    ReleaseError,
    file_to_read,
    is_safe_name,
    safe_name,
    unread_files,
)
from .questions import EVALUATION_KEYS, read_groups
from .salvage import LOADER, OVERWRITTEN_MARKER, overwritten_keys, salvage
from .schema import DIMENSIONS, ROLES, Dimension
from .values import a_json_type, as_json_text, is_utf8, json_type, typed_keys

PROMPT_KEYS = ("id", "prompt", "tag", "idiom", "idiom_meaning", "explicit_meaning")
_PIPE_KEYS = {"id", "reason", "reason_prompt"}
_READ_OPTIONS = {"configs"}

# -- file names made from ids -------------------------------------------------------------------------

#: a folder that does not exist: paths made from ids are checked against it for their shape only
IMAGES_ROOT = Path("/t2ireason-images")
#: the longest id used as its own file stem (room is left for the -2 and _1.png suffixes)
_MAX_STEM_BYTES = 100


def _file_stem(text: str) -> str:
    """The file stem of an id that is not an integer: the id itself when it can be a file name, else
    :func:`~t2ireason.benchmarks.base.safe_name` of it (different ids never share a name). The reader
    owns this mapping (the row keeps ``name`` and ``original_id``): the builder finds nothing to rename."""
    fits = is_safe_name(text) and len(text.encode("utf-8", "surrogatepass")) <= _MAX_STEM_BYTES
    return text if fits else safe_name(text)


def image_stem(row: dict[str, Any]) -> str:
    """The file stem of a row's images: its ``name``, or the four-digit id of rows built before names."""
    name = row.get("name")
    if name:
        return name
    return f"{int(row['id']):04d}"


# -- reading the release -----------------------------------------------------------------------------

#: Every kind of :class:`Anomaly` the reader reports (``build_report.json``), with what it means. Each names
#: the file and the record (its id, or its position); nothing it describes is lost. What "goes to the
#: quarantine" is not in a row: it is in ``Release.quarantine`` (``build_report.json``'s ``quarantine``) with
#: its raw text. Files the reader does not read (the authors' scripts, docs) are not anomalies: the builder
#: lists them as ``ignored_files`` (``authors_scripts`` for the scripts).
ANOMALY_KINDS = {
    # files
    "missing_file": "an expected file is absent: the other files are read without it",
    "file_name": "an expected file is absent but one file's name differs from it only by case, separators or a "
                 "slipped letter: that file is read in its place",
    "ambiguous_file": "an expected file is absent and several files are named like it: none is read in its place",
    "empty_file": "a file holds nothing, or an empty array",
    "malformed_file": "a file is not valid JSON: every whole record in it is read, the rest goes to the quarantine",
    "malformed_record": "damaged text inside a file: it goes to the quarantine, read on from the next whole record",
    "truncated_file": "a file's array is not closed (the file ends early)",
    "missing_comma": "two records with no comma between them: both read",
    "trailing_text": "text after a file's array: it goes to the quarantine",
    "json_lines": "records one after another (JSON lines), not one array: all read",
    "not_an_array": "a file holds one record or an object of records instead of an array: read as records",
    "byte_order_mark": "a file starts with a UTF-8 byte order mark: skipped",
    "not_utf8": "a file is not UTF-8: its undecodable bytes are read as U+FFFD",
    "unknown_data_file": "a JSON file in a data folder that no dimension reads: not read (data the reader may miss)",
    "no_rows": "no record of a dimension could be read: the config is absent",
    # records and ids
    "not_a_record": "a record that is not an object: it goes to the quarantine",
    "no_id": "a record without id: kept as a row of its own, joined with nothing",
    "id_as_text": "an integer id written as text: read as the integer",
    "id_as_float": "an integer id written with decimals: read as the integer",
    "id_not_integer": "an id that is not an integer but can be a file name: its images are named by it",
    "unsafe_id": "an id that cannot be a file name: its images get base.safe_name of it (row: original_id, name)",
    "duplicate_record": "a record repeated exactly: read once",
    "duplicate_id": "an id repeated with other contents: each occurrence is a row (name 0001-2...)",
    "duplicate_key": "a key repeated within one object: the last value keeps it, earlier ones a suffixed key",
    "no_prompt_record": "questions for an id prompts/ lacks: the row takes the evaluation file's prompt",
    "no_evaluation_record": "a prompt without questions: kept, unscorable",
    "no_pipeline_prompt": "a prompt without a rewritten prompt",
    "orphan_pipeline_prompt": "a rewritten prompt with no prompt to attach to: it goes to the quarantine",
    # fields
    "missing_field": "a field is absent (or its value comes from the other file)",
    "null_value": "a field is null",
    "non_text_value": "a text field holds another JSON value: kept as its JSON text",
    "dict_image_content": "image_content is an object: kept as its JSON text",
    "reason_as_text": "a rewritten prompt's reason is one text: kept as a one-item list",
    "extra_key": "keys outside the schema: kept in the row's extra",
    "prompt_mismatch": "the evaluation file's prompt differs from prompts/: kept as evaluation_prompt",
    "explicit_meaning_mismatch": "the evaluation file's explicit_meaning differs: kept in extra",
    "empty_prompt": "a prompt that is empty or only whitespace: kept as it is",
    "invalid_unicode": "a lone surrogate (a \\ud800 escape) that UTF-8 cannot carry: replaced by U+FFFD",
    # question groups
    "unexpected_group": "a group the dimension does not name: its role read from its key, or unknown (not scored)",
    "missing_group": "a group of the dimension is absent",
    "group_not_object": "a group that is not an object of pairs: kept as its raw JSON, no pairs",
    "no_pairs": "a group without question-criterion pairs",
    "pair_count": "a group with more pairs than the templates ask for",
    "irregular_key": "pair keys other than q1/c1 (sci_q1, aq1...), or a criterion matched by number or position",
    "numbering": "questions not numbered 1..n",
    "key_order": "keys not in q1, c1, q2, c2 order: pairs read by their numbers",
    "question_without_criterion": "a question with no criterion: kept with a null criterion",
    "criterion_without_question": "a criterion with no question: kept in the group's extra, sent to the judge",
    "non_pair_key": "a group's key that is not a pair (scoring, a rubric object): kept and sent with the group",
    "structured_criterion": "a criterion that is not text: rendered for the judge, kept as criterion_json",
    "empty_question": "a question that is null or blank",
    "empty_criterion": "a criterion that is null or blank",
}


_DATA_FOLDERS = ("prompts", "deepseek_evaluation_qs", "pipeline_prompts")


def _release_root(path: Path) -> Path:
    """``path``, when it holds the release's data folders (``t2ireason build`` finds them in a checkout
    or an archive one or two folders deeper, by :attr:`T2IReasonBench.release_markers`)."""
    if not path.is_dir():
        raise ReleaseError(f"{path}: not a folder; point to the T2I-ReasonBench release (it holds prompts/, "
                           f"deepseek_evaluation_qs/ and pipeline_prompts/)")
    if not any((path / d).is_dir() for d in _DATA_FOLDERS):
        raise ReleaseError(f"{path}: no prompts/, deepseek_evaluation_qs/ or pipeline_prompts/ folder; pass the "
                           "release's root, or build it with `t2ireason build t2i-reasonbench --source`, which "
                           "finds the root in a checkout or an archive one or two folders deeper")
    return path


def read_release(source: str | Path, options: dict[str, Any], *, license: str | None) -> Release:
    """The release folder ``source`` read into rows (see :meth:`T2IReasonBench.read_release`)."""
    unknown = set(options) - _READ_OPTIONS
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; read_release takes {sorted(_READ_OPTIONS)}")
    configs = list(options.get("configs") or DIMENSIONS)
    if "all" in configs:  # every dimension
        configs = list(DIMENSIONS)
    bad = [c for c in configs if c not in DIMENSIONS]
    if bad:
        raise ValueError(f"unknown dimension(s) {bad}; known: {', '.join(DIMENSIONS)}")
    reader = _ReleaseReader(_release_root(Path(source)))
    out, counts = {}, {}
    for config in configs:
        rows = reader.dimension(config)
        if not rows:
            reader.note("no_rows", DIMENSIONS[config].files()[0], None, "no record of this dimension could be read")
            continue
        out[config] = rows
        per_role = {role: 0 for role in ROLES}
        for row in rows:
            for g in row["evaluation"]:
                if g["role"] in per_role:
                    per_role[g["role"]] += len(g["pairs"])
        counts[config] = {"rows": len(rows), "pairs": sum(len(g["pairs"]) for r in rows for g in r["evaluation"]),
                          **{f"{role}_pairs": n for role, n in per_role.items()}}
    reader.unknown_data_files()
    if out:  # the rows of every dimension read, in the dimensions' order (each row is also in its dimension's)
        out["all"] = [row for rows in out.values() for row in rows]
        counts["all"] = {k: sum(c[k] for c in counts.values()) for k in next(iter(counts.values()))}
    return Release(configs=out, anomalies=reader.anomalies, counts=counts, license=license,
                   source=str(reader.root), quarantine=reader.quarantine, files_read=reader.files_read)


@dataclass
class _Id:
    """How a record's id joins files and names files."""

    key: Any  # the join key; None: a record without an id, never joined
    id: int | None  # the integer id, when there is one
    name: str  # the file stem of its images
    original: str | None  # the release's id as JSON text when it is not an integer


_INT64 = 2 ** 63


def id_of(rec: dict[str, Any], position: int, kind: str) -> tuple[_Id, tuple[str, str] | None]:
    """The id of a record, and the irregularity to report (kind, detail) when it is not a plain integer."""
    if "id" not in rec or rec["id"] is None:
        what = "no 'id'" if "id" not in rec else "id null"
        return _Id(None, None, f"noid-{kind}-{position + 1:04d}", None if "id" not in rec else "null"), \
            ("no_id", f"record {position} has {what}: kept as its own row, joined with nothing")
    value = rec["id"]
    original = as_json_text(value)
    number: int | None = None
    note = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number, note = int(value), ("id_as_float", f"id {value!r} is a number with decimals; read as {int(value)}")
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        number, note = int(value), ("id_as_text", f"id {value!r} is text; read as {int(value)}")
    if number is not None and -_INT64 <= number < _INT64:
        return _Id(("int", number), number, f"{number:04d}", None if note is None else original), note
    if number is not None:
        return _Id(("id", original), None, _file_stem(str(number)), original), \
            ("id_not_integer", f"id {original} does not fit a 64-bit integer; its images are named "
                               f"{_file_stem(str(number))!r}")
    text = value if isinstance(value, str) else original
    name = _file_stem(text)
    if name == text:
        return _Id(("id", original), None, name, original), \
            ("id_not_integer", f"id {value!r} is not an integer; its images are named {name!r}")
    return _Id(("id", original), None, name, original), \
        ("unsafe_id", f"id {original} cannot be a file name; its images are named {name!r} (the mapping is kept in "
                      "the row's original_id and name)")


class _ReleaseReader:
    """Reads one release folder, one dimension at a time, collecting every anomaly."""

    def __init__(self, root: Path):
        self.root = root
        self.anomalies: list[Anomaly] = []
        #: what cannot be kept in a row, with its raw text (the anomaly before it says what was odd)
        self.quarantine: list[Quarantined] = []
        self.files_read: set[str] = set()

    def note(self, kind: str, file: str, row: Any, detail: str) -> None:
        self.anomalies.append(Anomaly(kind, file, row, detail))

    def lose(self, file: str, row: Any, raw: str, reason: str) -> None:
        self.quarantine.append(Quarantined(file, row, reason, raw))

    # -- files ------------------------------------------------------------------------------------

    def load(self, rel: str) -> list[Any] | None:
        """The records of one JSON file (None when the file is missing); damage is reported, and what
        can be read of a damaged file is read."""
        path = self.root / rel
        if not path.is_file():
            self.note("missing_file", rel, None, f"no such file in {self.root}" if not path.exists()
                      else "not a file")
            return None
        data = path.read_bytes()
        self.files_read.add(rel)
        if data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8):]
            self.note("byte_order_mark", rel, None, "the file starts with a UTF-8 byte order mark; skipped")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            text = data.decode("utf-8", "replace")
            self.note("not_utf8", rel, None, f"not UTF-8 ({e.reason} at byte {e.start}); undecodable bytes read "
                                             "as U+FFFD")
        if not text.strip():
            self.note("empty_file", rel, None, "the file is empty: no records")
            return []
        try:
            top = LOADER.decode(text)
        except (ValueError, RecursionError) as e:
            top, problems, leftovers = salvage(text)
            self.note("malformed_file", rel, None, f"not valid JSON ({e}); {len(top)} whole record(s) read from it")
            for kind, detail in problems:
                self.note(kind, rel, None, detail)
            for raw in leftovers:
                self.lose(rel, None, raw, "text that is not JSON")
            return top
        if isinstance(top, list):
            records = top
        elif isinstance(top, dict) and ("id" in top or "prompt" in top):
            self.note("not_an_array", rel, None, "the file holds one record, not an array of records")
            records = [top]
        elif isinstance(top, dict) and top and all(isinstance(v, dict) for v in top.values()):
            self.note("not_an_array", rel, None, f"the file holds an object of {len(top)} records keyed by "
                                                 f"{', '.join(list(map(repr, top))[:3])}...; read as its values")
            records = list(top.values())
        else:
            self.note("not_an_array", rel, None, f"the file holds a JSON {json_type(top)}, not an array of records")
            self.lose(rel, None, as_json_text(top) or "null", f"a JSON {json_type(top)}, not records")
            return []
        if not records:
            self.note("empty_file", rel, None, "the file holds an empty array: no records")
        return records

    def index(self, rel: str, kind: str, records: list[Any] | None):
        """Records by join key (each key's occurrences in order, exact repeats dropped and reported),
        the records without an id, and the order in which keys first appear."""
        by_key: dict[Any, list[tuple[int, dict, _Id]]] = {}
        unkeyed: list[tuple[int, dict, _Id]] = []
        order: list[Any] = []
        seen: dict[Any, dict[str, int]] = defaultdict(dict)
        for pos, rec in enumerate(records or []):
            if not isinstance(rec, dict):
                self.note("not_a_record", rel, f"record {pos}", f"record {pos} is {a_json_type(rec)}, not an object")
                self.lose(rel, f"record {pos}", as_json_text(rec) or "null", f"{a_json_type(rec)}, not a record")
                continue
            ident, problem = id_of(rec, pos, kind)
            where = _where(ident, pos)
            if problem:
                self.note(problem[0], rel, where, problem[1])
            for key in overwritten_keys(rec):
                self.note("duplicate_key", rel, where, f"key {key.split(OVERWRITTEN_MARKER)[0]!r} appears more than "
                          "once in one object; the last value keeps the key (as JSON readers read it), an earlier one "
                          f"is {key!r}")
            if ident.key is None:
                unkeyed.append((pos, rec, ident))
                order.append(("pos", kind, pos))
                continue
            canonical = json.dumps(rec, sort_keys=True, ensure_ascii=True)
            if canonical in seen[ident.key]:
                self.note("duplicate_record", rel, where, f"record {pos} repeats record {seen[ident.key][canonical]} "
                                                          "exactly; read once")
                continue
            seen[ident.key][canonical] = pos
            if ident.key in by_key:
                self.note("duplicate_id", rel, where, f"id {ident.original or ident.id} appears again (record {pos}) "
                                                      "with other contents; kept as a row of its own")
            else:
                order.append(ident.key)
            by_key.setdefault(ident.key, []).append((pos, rec, ident))
        return by_key, unkeyed, order

    # -- one dimension --------------------------------------------------------------------------------

    def dimension(self, config: str) -> list[dict[str, Any]]:
        spec = DIMENSIONS[config]
        # each file under its own name or, failing that, under another spelling (reported)
        expected = {r for d in DIMENSIONS.values() for r in d.files()}
        files = tuple(file_to_read(self.root, rel, expected, self.anomalies) or rel for rel in spec.files())
        prompts_rel, eval_rel, pipe_rel = files
        loaded = {rel: self.load(rel) for rel in (prompts_rel, eval_rel, pipe_rel)}
        p_keys, p_free, p_order = self.index(prompts_rel, "prompt", loaded[prompts_rel])
        e_keys, e_free, e_order = self.index(eval_rel, "evaluation", loaded[eval_rel])
        l_keys, l_free, _ = self.index(pipe_rel, "pipeline", loaded[pipe_rel])
        has = {rel: bool(recs) for rel, recs in loaded.items()}

        rows: list[dict[str, Any]] = []
        units: list[tuple] = []  # (prompt record, evaluation record, pipeline record, ident, occurrence)
        for entry in p_order + [k for k in e_order if k not in p_keys]:
            if isinstance(entry, tuple) and entry[0] == "pos":
                free = p_free if entry[1] == "prompt" else e_free
                pos, rec, ident = next(x for x in free if x[0] == entry[2])
                units.append((rec, None, None, ident, 0) if entry[1] == "prompt" else (None, rec, None, ident, 0))
                continue
            ps, es, ls = p_keys.get(entry, []), e_keys.get(entry, []), l_keys.get(entry, [])
            for k in range(max(len(ps), len(es))):
                p, e, pipe = (xs[k][1] if k < len(xs) else None for xs in (ps, es, ls))
                ident = (ps if k < len(ps) else es)[k][2]
                units.append((p, e, pipe, ident, k))
        for entry, occurrences in l_keys.items():
            n = max(len(p_keys.get(entry, [])), len(e_keys.get(entry, [])))
            for pos, rec, ident in occurrences[n:]:
                self.note("orphan_pipeline_prompt", pipe_rel, _where(ident, pos),
                          f"no prompt with this id in {prompts_rel} or {eval_rel}: the record goes to the quarantine")
                self.lose(pipe_rel, _where(ident, pos), as_json_text(rec), "no prompt with this id")
        for pos, rec, ident in l_free:
            self.note("orphan_pipeline_prompt", pipe_rel, _where(ident, pos),
                      "a rewritten prompt without an id cannot be attached to a prompt: it goes to the quarantine")
            self.lose(pipe_rel, _where(ident, pos), as_json_text(rec), "no id to attach it to a prompt")

        names: set[str] = set()
        for p, e, pipe, ident, k in units:
            name = ident.name if k == 0 else f"{ident.name}-{k + 1}"
            if name in names:  # an id that is a plain name may equal a made-up one
                name = f"{name}-{hashlib.sha256(repr((ident.key, k)).encode()).hexdigest()[:8]}"
            names.add(name)
            row = self.row(config, spec, files, p, e, pipe, ident, name, has)
            rows.append(row)
        return rows

    def row(self, config: str, spec: Dimension, files: tuple[str, str, str], p: dict | None, e: dict | None,
            pipe: dict | None, ident: _Id, name: str, has: dict[str, bool]) -> dict[str, Any]:
        prompts_rel, eval_rel, pipe_rel = files
        where = ident.id if ident.id is not None else (ident.original or name)

        def complain_in(rel: str):
            return lambda kind, detail: self.note(kind, rel, where, detail)

        complain_p, complain_e, complain_l = complain_in(prompts_rel), complain_in(eval_rel), complain_in(pipe_rel)
        for rec, complain in ((p, complain_p), (e, complain_e), (pipe, complain_l)):
            for key in [k for k, v in (rec or {}).items() if v is None and k != "id"]:
                complain("null_value", f"{key} is null")
        extra: dict[str, Any] = {}
        base = p if p is not None else {}
        if p is None:
            complain_e("no_prompt_record", f"no record with this id in {prompts_rel}: the prompt and fields are "
                                           f"taken from {eval_rel}")
            base = {k: e.get(k) for k in PROMPT_KEYS if k in e}
        elif e is None and has[eval_rel]:
            complain_p("no_evaluation_record", f"no record with this id in {eval_rel}: no questions to score it")
        if p is not None and p.get("prompt") is None and e is not None and e.get("prompt") is not None:
            complain_p("missing_field", f"no prompt in {prompts_rel}; the prompt of {eval_rel} is used")
            base = {**p, "prompt": e["prompt"]}
        if p is not None and set(p) - set(PROMPT_KEYS):
            extra["prompts"] = {k: v for k, v in p.items() if k not in PROMPT_KEYS}
            complain_p("extra_key", f"key(s) {typed_keys(extra['prompts'])} kept in extra")

        fields = {f: _text(base.get(f), f, complain_p if p is not None else complain_e)
                  for f in PROMPT_KEYS if f != "id"}
        if fields["prompt"] is None:
            (complain_p if p is not None else complain_e)("missing_field", "no prompt for this id")
        elif not fields["prompt"].strip():
            (complain_p if p is not None else complain_e)("empty_prompt", f"the prompt is {fields['prompt']!r}")

        groups, image_content, evaluation_prompt = [], None, None
        if e is not None:
            groups = read_groups(e, spec, complain_e)
            if "image_content" not in e:
                complain_e("missing_field", "no image_content")
            elif isinstance(e["image_content"], dict):
                complain_e("dict_image_content", "image_content is an object; kept as JSON text")
                image_content = as_json_text(e["image_content"])
            else:
                image_content = _text(e["image_content"], "image_content", complain_e)
            if p is not None and "prompt" in e and e["prompt"] != base.get("prompt"):
                evaluation_prompt = _text(e["prompt"], "evaluation prompt", complain_e)
                complain_e("prompt_mismatch", f"evaluation prompt {e['prompt']!r} differs from {base.get('prompt')!r}")
            leftover = {k: v for k, v in e.items()
                        if k not in EVALUATION_KEYS and not any(g["group"] == k for g in groups)}
            if p is not None and "explicit_meaning" in e and e["explicit_meaning"] != p.get("explicit_meaning"):
                leftover["explicit_meaning"] = e["explicit_meaning"]
                complain_e("explicit_meaning_mismatch", "the evaluation file's explicit_meaning differs; kept in extra")
            if set(leftover) - {"explicit_meaning"}:
                complain_e("extra_key", f"key(s) {typed_keys(leftover, skip='explicit_meaning')} kept in extra")
            if leftover:
                extra["evaluation"] = leftover

        reason = reason_prompt = None
        if pipe is None:
            if has[pipe_rel]:
                complain_l("no_pipeline_prompt", "no rewritten prompt for this id")
        else:
            reason = pipe.get("reason")
            if isinstance(reason, str):
                complain_l("reason_as_text", "reason is a string; kept as a one-item list")
                reason = [reason]
            elif reason is not None and not isinstance(reason, list):
                complain_l("non_text_value", f"reason is {a_json_type(reason)}; kept as a one-item list of its "
                                             "JSON text")
                reason = [as_json_text(reason)]
            elif reason is not None:
                for j, r in enumerate(reason):
                    if r is None:
                        complain_l("null_value", f"reason item {j} is null")
                reason = [_text(r, f"reason item {j}", complain_l) for j, r in enumerate(reason)]
            reason_prompt = _text(pipe.get("reason_prompt"), "reason_prompt", complain_l)
            if set(pipe) - _PIPE_KEYS:
                extra["pipeline"] = {k: v for k, v in pipe.items() if k not in _PIPE_KEYS}
                complain_l("extra_key", f"key(s) {typed_keys(extra['pipeline'])} kept in extra")

        row = {"id": ident.id, "name": name, "original_id": ident.original, "dimension": config,
               "prompt": fields["prompt"], "tag": fields["tag"], "idiom": fields["idiom"],
               "idiom_meaning": fields["idiom_meaning"], "explicit_meaning": fields["explicit_meaning"],
               "image_content": image_content, "evaluation": groups, "evaluation_prompt": evaluation_prompt,
               "reason": reason, "reason_prompt": reason_prompt, "extra": as_json_text(extra) if extra else None}
        return _valid_unicode(row, complain_e)

    def unknown_data_files(self) -> None:
        """JSON files in the data folders that no dimension reads: data the reader may be missing.
        (Every other file the reader did not read, the authors' scripts among them, is listed by the
        builder from :attr:`files_read`.)"""
        wanted = {rel for spec in DIMENSIONS.values() for rel in spec.files()}
        for folder in _DATA_FOLDERS:
            for rel in unread_files(self.root, self.files_read | wanted, folder):
                if rel.endswith((".json", ".jsonl")):
                    self.note("unknown_data_file", rel, None, "a JSON file in a data folder that no dimension reads")


def _where(ident: _Id, position: int) -> Any:
    """How an anomaly names a record: its integer id, else its id as JSON text, else its position."""
    if ident.id is not None:
        return ident.id
    return ident.original if ident.original not in (None, "null") else f"record {position}"


def _text(value: Any, field: str, complain: Callable[[str, str], None]) -> str | None:
    """A text field: the release's text byte for byte, or another JSON value as its JSON text (reported)."""
    if value is None or isinstance(value, str):
        return value
    complain("non_text_value", f"{field} is {a_json_type(value)}; kept as JSON text")
    return as_json_text(value)


def _replace(value: Any, fix: Callable[[str, str], str], path: str = "") -> Any:
    if isinstance(value, str):
        return fix(path, value)
    if isinstance(value, dict):
        return {k: _replace(v, fix, f"{path}.{k}" if path else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, fix, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _valid_unicode(row: dict[str, Any], complain: Callable[[str, str], None]) -> dict[str, Any]:
    """Texts that UTF-8 cannot carry (a lone surrogate from a ``\\ud800`` escape) with U+FFFD in its place,
    reported: Parquet stores UTF-8 only."""
    def fix(path: str, text: str) -> str:
        if is_utf8(text):
            return text
        complain("invalid_unicode", f"{path} holds a lone surrogate; replaced by U+FFFD")
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

    return _replace(row, fix)
