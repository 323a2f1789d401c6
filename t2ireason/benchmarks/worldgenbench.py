"""WorldGenBench (seed 001): world knowledge and implicit reasoning, scored by knowledge checklists.

Record -> request -> reply -> score, for one image:

1. a row holds a prompt and its knowledge checklist (items, each with an explanation);
2. the judge gets the paper's strict checklist prompt (Appendix 8) with every item and explanation,
   and the image where the paper puts ``{image}``;
3. it answers one binary value per item, e.g. ``[1, 0, 0]`` (exactly one 0/1 per item, else re-asked);
4. the image's Knowledge Checklist Score is satisfied / total;
5. a model's score is the mean over images x 100, per continent (humanities, the paper's Table 2),
   per discipline (nature, Table 3), per domain and overall.

The release is published on the Hub as ``worldrl/WorldGenBench`` (JSON, MIT). Its exact field names
were not available when this reader was written, so it maps field names through :data:`FIELD_NAMES`
(candidates matched case- and separator-insensitively), which ``read_release(field_map=...)``
overrides, and accepts the common shapes of a checklist (see :func:`normalize_checklist`).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import datasets

from ..images import ImageError, JudgeImage, as_image, load_images
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, ask_structured, extract_json, score_list
from ..prompts import render
from ..results import ImageResult, PaperTable, QuestionResult
from ..stats import summarize
from .base import Anomaly, Benchmark, OfficialRelease, Quarantined, Release, ReleaseError

__all__ = ["BENCHMARK", "WorldGenBench", "FIELD_NAMES", "CONTINENTS", "DISCIPLINES", "normalize_checklist",
           "parse_checklist_reply", "checklist_request"]

DOMAINS = ("humanities", "nature")

#: continent codes of the paper's Table 4, in its column order, with their names
CONTINENTS = {"AF": "Africa", "AN": "Antarctica", "AS": "Asia", "EU": "Europe", "NA": "North America",
              "OC": "Oceania", "SA": "South America"}
#: discipline codes of the paper's Table 5, in its column order, with their names
DISCIPLINES = {"ASTR": "Astronomy", "BIO&MED": "Biology & Medicine", "CHEM": "Chemistry", "EASC": "Earth Sciences",
               "PHYS": "Physics", "XDIS": "Cross-Disciplinary"}

#: release field -> candidate names in the official JSON (first match wins; override with field_map=...).
#: "checklist" holds the whole checklist; "checklist_items"/"checklist_explanations" are parallel lists;
#: "item"/"explanation" are the keys inside one checklist entry.
FIELD_NAMES: dict[str, tuple[str, ...]] = {
    "id": ("id", "idx", "index", "prompt_id", "uid", "qid", "no"),
    "prompt": ("prompt", "text_prompt", "caption", "instruction", "input", "text"),
    "domain": ("domain", "perspective", "category", "type"),
    "continent": ("continent", "continent_code"),
    "country": ("country", "region", "country_region", "country/region", "countries", "nation"),
    "discipline": ("discipline", "field", "fields", "subject"),
    "checklist": ("checklist", "knowledge_checklist", "check_list", "checklists", "knowledge_check_list"),
    "checklist_items": ("checklist_items", "items", "item_list", "checklist_item"),
    "checklist_explanations": ("checklist_explanations", "explanations", "explanation_list",
                               "checklist_explanation"),
    "item": ("item", "checklist_item", "check_item", "requirement", "point", "content", "name", "question", "text"),
    "explanation": ("explanation", "explanations", "explain", "reason", "rationale", "description", "detail",
                    "details", "note"),
}

_CONTINENT_ALIASES = {**{c.lower(): c for c in CONTINENTS},
                      **{re.sub(r"[^a-z]", "", name.lower()): c for c, name in CONTINENTS.items()}}
_DISCIPLINE_ALIASES = {
    **{re.sub(r"[^a-z]", "", c.lower()): c for c in DISCIPLINES},
    **{re.sub(r"[^a-z]", "", name.lower()): c for c, name in DISCIPLINES.items()},
    "biologyandmedicine": "BIO&MED", "biology": "BIO&MED", "medicine": "BIO&MED", "earthscience": "EASC",
    "crossdiscipline": "XDIS", "interdisciplinary": "XDIS",
}

#: the options score() and aggregate() take (the metric passes both the same preset options)
SCORE_OPTIONS = {"max_reasks", "sampling", "structured_output"}
AGGREGATE_OPTIONS = {"confidence", "n_resamples", "seed"}

_IMAGE_SLOT = "\x00IMAGE\x00"


def _key(name: str) -> str:
    return re.sub(r"[\s_\-/]", "", str(name).lower())


def _lookup(record: dict[str, Any], candidates: Sequence[str]) -> tuple[str | None, Any]:
    """The first of ``candidates`` present in ``record`` (case and separators ignored): (key, value)."""
    by_key = {_key(k): k for k in record}
    for name in candidates:
        k = by_key.get(_key(name))
        if k is not None:
            return k, record[k]
    return None, None


def _text(value: Any) -> str:
    """A release value as text, as released: strings unchanged, None empty, anything else its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


_ITEM_TEXT = re.compile(r"^\s*\**\s*item\s*\**\s*:\s*\**\s*(.*?)\s*\**\s*explanation\s*\**\s*:\s*\**\s*(.*)$",
                        re.IGNORECASE | re.DOTALL)


def normalize_checklist(value: Any, names: dict[str, tuple[str, ...]] | None = None,
                        explanations: Any = None, problems: list[str] | None = None) -> list[dict[str, str]]:
    """A checklist as ``[{"item": ..., "explanation": ...}, ...]`` from any common shape.

    Accepted: a list of objects (item and explanation keys as in :data:`FIELD_NAMES`, or one
    ``{item: explanation}`` pair each), a dict ``item -> explanation``, a dict of parallel lists,
    a list of strings (``"Item: ... Explanation: ..."`` is split; otherwise no explanation), parallel
    lists (``value`` items, ``explanations``), or any of these as a JSON string. Text is kept as
    released. Shapes it cannot read raise ValueError saying what is wrong, unless ``problems`` is
    given: then every value is kept (an entry of another type becomes an item holding its JSON
    text, unequal parallel lists are padded with empty text) and each irregularity is described
    in ``problems``.

    >>> normalize_checklist({"Stone floors": "Monasteries are paved with stone."})
    [{'item': 'Stone floors', 'explanation': 'Monasteries are paved with stone.'}]
    >>> normalize_checklist(["A", "B"], explanations=["why A", "why B"])[1]
    {'item': 'B', 'explanation': 'why B'}
    >>> notes = []
    >>> normalize_checklist([{"item": "A"}, 7], problems=notes), notes
    ([{'item': 'A', 'explanation': ''}, {'item': '7', 'explanation': ''}], ['checklist entry 2 is a int, kept as its text'])
    """
    names = names or FIELD_NAMES

    def irregular(message: str) -> None:
        if problems is None:
            raise ValueError(message)
        problems.append(message)

    def text(v: Any, what: str) -> str:
        if v is not None and not isinstance(v, str) and problems is not None:
            problems.append(f"{what} is a {type(v).__name__}, kept as its text")
        return _text(v)

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            if problems is not None and explanations is None:
                problems.append("the checklist is one text, not a list: kept as one item")
            value = [value]
    if explanations is not None:
        if isinstance(explanations, str):
            try:
                explanations = json.loads(explanations)
            except ValueError:
                explanations = [explanations]
        if value is None:
            value = []
        if not isinstance(value, list) or not isinstance(explanations, list):
            irregular("parallel checklist fields must both be lists")
            value = value if isinstance(value, list) else [value]
            explanations = explanations if isinstance(explanations, list) else [explanations]
        if len(value) != len(explanations):
            irregular(f"{len(value)} checklist items but {len(explanations)} explanations")
            n = max(len(value), len(explanations))
            value, explanations = value + [""] * (n - len(value)), explanations + [""] * (n - len(explanations))
        return [{"item": text(i, f"checklist item {n}"), "explanation": text(e, f"explanation {n}")}
                for n, (i, e) in enumerate(zip(value, explanations), 1)]
    if value is None:
        return []
    if isinstance(value, dict):
        k_item, items = _lookup(value, names["item"] + names["checklist_items"])
        if isinstance(items, list):  # parallel lists inside one object ({"item": [...], "explanation": [...]})
            _, expl = _lookup({k: v for k, v in value.items() if k != k_item},
                              names["explanation"] + names["checklist_explanations"])
            return normalize_checklist(items, names, expl if expl is not None else [""] * len(items), problems)
        return [{"item": k, "explanation": text(v, f"the explanation of {k!r}")} for k, v in value.items()]
    if not isinstance(value, list):
        irregular(f"a checklist is a list or an object, got {type(value).__name__}")
        return [{"item": _text(value), "explanation": ""}]
    out = []
    for n, entry in enumerate(value, 1):
        if isinstance(entry, str):
            m = _ITEM_TEXT.match(entry)
            out.append({"item": m[1].strip(), "explanation": m[2].strip()} if m else {"item": entry, "explanation": ""})
        elif isinstance(entry, dict):
            k_item, item = _lookup(entry, names["item"])
            _, expl = _lookup({k: v for k, v in entry.items() if k != k_item}, names["explanation"])
            if k_item is None and len(entry) == 1:  # {"<item>": "<explanation>"}
                (item, expl), = entry.items()
            elif k_item is None:
                irregular(f"checklist entry {n} has no item key (keys: {sorted(entry)}); "
                          "name it with field_map={'item': ...}")
                item, expl = _text(entry), ""
            out.append({"item": text(item, f"checklist entry {n}'s item"),
                        "explanation": text(expl, f"checklist entry {n}'s explanation")})
        else:
            irregular(f"checklist entry {n} is a {type(entry).__name__}, kept as its text" if problems is not None
                      else f"checklist entry {n} is a {type(entry).__name__}, not text or an object")
            out.append({"item": _text(entry), "explanation": ""})
    return out


def _decode(data: bytes, where: str, anomalies: list[Anomaly]) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        anomalies.append(Anomaly("encoding", where, None, f"not UTF-8 ({e.reason} at byte {e.start}): read as cp1252"))
        return data.decode("cp1252", errors="replace")


def _records(path: Path, where: str, anomalies: list[Anomaly],
             quarantine: list[Quarantined]) -> list[tuple[Any, str | None, int | str, str]]:
    """The records of one JSON or JSONL file: (record, domain hint from an enclosing key, row label, raw
    text). What cannot be parsed is quarantined with its raw text."""
    data = path.read_bytes()
    if not data.strip():
        anomalies.append(Anomaly("empty_file", where, None, "the file is empty"))
        return []
    text = _decode(data, where, anomalies)
    try:
        value = json.loads(text)
    except ValueError as first:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        parsed, bad = [], []
        for n, line in lines:
            try:
                parsed.append((json.loads(line), None, f"line {n}", line))
            except ValueError as e:
                bad.append((n, line, e))
        if not parsed:
            anomalies.append(Anomaly("unreadable_file", where, None, f"not valid JSON or JSON lines ({first}): "
                                     "quarantined whole"))
            quarantine.append(Quarantined(where, None, f"not valid JSON: {first}", text))
            return []
        for n, line, e in bad:
            anomalies.append(Anomaly("malformed_record", where, f"line {n}", f"not valid JSON ({e}): quarantined"))
            quarantine.append(Quarantined(where, f"line {n}", f"not valid JSON: {e}", line))
        return parsed
    if isinstance(value, list):
        if not value:
            anomalies.append(Anomaly("empty_file", where, None, "the file holds no records (an empty list)"))
        return [(r, None, f"record {i}", json.dumps(r, ensure_ascii=False)) for i, r in enumerate(value)]
    if isinstance(value, dict):
        lists = {k: v for k, v in value.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)}
        if lists and not _lookup(value, FIELD_NAMES["prompt"])[0]:
            return [(r, _domain(k), f"{k}[{i}]", json.dumps(r, ensure_ascii=False))
                    for k, v in lists.items() for i, r in enumerate(v)]
        return [(value, None, "record 0", text)]
    return [(value, None, "record 0", text)]


def _domain(value: Any) -> str | None:
    v = _key(_text(value))
    if v.startswith("human") or v in ("culture", "人文"):
        return "humanities"
    if v.startswith("natur") or v in ("science", "sciences", "自然"):
        return "nature"
    return None


class WorldGenBench(Benchmark):
    name = "worldgenbench"
    pretty_name = "WorldGenBench"
    configs = DOMAINS
    metric = "knowledge_checklist_score"
    license = "mit"  # the worldrl/WorldGenBench Hub card
    # The Hub dataset. Its commit could not be established here (no access to the Hub): the revision
    # is the branch, so what it names can change; no file hash is recorded, nothing is claimed
    # verified. Pin it (and record the hashes) once the files have been checked.
    official_release = OfficialRelease(kind="hub", repo="worldrl/WorldGenBench", revision="main")
    # a Hub dataset repository's root holds its card and, anywhere below it, the JSON data files
    release_markers = ("README.md", "**/*.json*")
    path_fields = ("id",)
    citation = """@article{zhang2025worldgenbench,
  title   = {WorldGenBench: A World-Knowledge-Integrated Benchmark for Reasoning-Driven Text-to-Image Generation},
  author  = {Zhang, Daoan and Jiang, Che and Xu, Ruoshi and Chen, Biaoxiang and Jin, Zijian and Lu, Yutian
             and Zhang, Jianguo and Yong, Liang and Luo, Jiebo and Luo, Shengda},
  journal = {arXiv preprint arXiv:2505.01490},
  year    = {2025}
}"""
    description = (
        "WorldGenBench evaluates whether text-to-image models bring world knowledge and implicit reasoning "
        "to underspecified prompts: 732 humanities prompts (3 for each of 244 countries or regions, grouped "
        "by continent) and 340 nature prompts over 6 scientific disciplines, each with a knowledge checklist "
        "of items the image should show, each item with an explanation.")
    scoring = (
        "A vision-language judge (GPT-4o in the paper) reads the checklist under a strict procedure with "
        "reverse verification (paper Appendix 8) and answers one binary value per item. An image's Knowledge "
        "Checklist Score is the share of items satisfied; a model's score is the mean over images x 100, "
        "reported per continent (humanities) and per discipline (nature). Use the `knowledge_checklist_score` "
        "metric of t2i-reason.")
    field_docs = {
        "id": "The prompt's id in the release (generated from its position when the release has none).",
        "prompt": "The text-to-image prompt.",
        "domain": "`humanities` or `nature` (the paper's two perspectives).",
        "continent": "Humanities: continent code AF, AN, AS, EU, NA, OC or SA (paper Table 4); null for nature.",
        "country": "Humanities: the country or region the prompt is about; null for nature.",
        "discipline": "Nature: ASTR, BIO&MED, CHEM, EASC, PHYS or XDIS (paper Table 5); null for humanities.",
        "checklist": "The knowledge checklist: items the image should show, each with its explanation.",
        "checklist.item": "One thing the image should show (judged satisfied or not).",
        "checklist.explanation": "Why the item is expected: the knowledge or reasoning behind it.",
        "extra": "Every other field of the release record, as a JSON object string.",
    }
    presets = {
        # Section 3.2 and Appendix 8: GPT-4o; the paper gives no decoding settings, so greedy.
        "paper": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.0)}},
    }

    @property
    def features(self) -> datasets.Features:
        s = datasets.Value("string")
        return datasets.Features({
            "id": s, "prompt": s, "domain": s, "continent": s, "country": s, "discipline": s,
            "checklist": datasets.List({"item": s, "explanation": s}),
            "extra": s,
        })

    def row_id(self, row: dict[str, Any]) -> str:
        return f"{row['domain']}-{row['id']}"

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        suffix = f"_{sample}" if sample else ""
        return f"{row['domain']}/{row['id']}{suffix}.png"

    # -- the release ---------------------------------------------------------------------------

    def read_release(self, source: str | Path, *, field_map: dict[str, str | Sequence[str]] | None = None,
                     domain: str | None = None, **options: Any) -> Release:
        """Read the release: a JSON or JSONL file, or a folder of them (read recursively).

        Records are a JSON list, an object holding lists (its keys may name the domain, e.g.
        ``{"humanities": [...], "nature": [...]}``) or JSONL lines. Field names are found through
        :data:`FIELD_NAMES`; ``field_map={"prompt": "Instruction", "checklist": ["kc", "list"]}``
        replaces the candidates of the fields it names. A record's domain comes from its domain
        field, else the key or file name holding it (``humanities``/``nature`` in it), else
        ``domain=``, else from having a continent or a discipline.

        Nothing is lost and nothing stops the read: values of another type than expected are kept
        as text, every field the mapping does not use is kept in ``extra``, records that cannot be
        rows (no prompt, no domain, not an object, not JSON) are quarantined with their raw text,
        and each irregularity is an anomaly. Text is kept as released.
        """
        if options:
            raise TypeError(f"unknown option(s) {sorted(options)} for reading {self.pretty_name}")
        names = dict(FIELD_NAMES)
        for field, cand in (field_map or {}).items():
            if field not in names:
                raise ValueError(f"field_map names unknown field {field!r}; known: {', '.join(names)}")
            names[field] = (cand,) if isinstance(cand, str) else tuple(cand)
        if domain is not None and domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
        source = Path(source)
        if source.is_dir():
            files = sorted(p for p in source.rglob("*") if p.suffix.lower() in (".json", ".jsonl") and p.is_file()
                           and not any(part.startswith(".") for part in p.relative_to(source).parts))
        elif source.is_file():
            files = [source]
        else:
            raise ReleaseError(f"release not found: {source}")
        if not files:
            raise ReleaseError(f"no .json or .jsonl file under {source}")

        configs: dict[str, list[dict[str, Any]]] = {d: [] for d in DOMAINS}
        anomalies: list[Anomaly] = []
        quarantine: list[Quarantined] = []
        files_read: set[str] = set()
        seen: dict[str, Counter] = {d: Counter() for d in DOMAINS}
        for path in files:
            where = path.relative_to(source).as_posix() if source.is_dir() else path.name
            records = _records(path, where, anomalies, quarantine)
            if records and not any(isinstance(r[0], dict) and _lookup(r[0], names["prompt"])[0] for r in records):
                anomalies.append(Anomaly("skipped_file", where, None, f"none of its {len(records)} record(s) has a "
                                         "prompt field: not read as data (name the field with field_map={'prompt': ...})"))
                continue
            files_read.add(where)
            file_domain = _domain(path.stem) or _domain(path.parent.name)
            generated = 0
            for record, hint, label, raw in records:
                if not isinstance(record, dict):
                    anomalies.append(Anomaly("not_a_record", where, label, f"a {type(record).__name__}, not an "
                                             "object: quarantined"))
                    quarantine.append(Quarantined(where, label, f"not a record ({type(record).__name__})", raw))
                    continue
                row, used, why = self._row(record, names, where, label, hint or file_domain or domain, anomalies)
                if row is None:
                    quarantine.append(Quarantined(where, label, why, raw))
                    continue
                if row["id"] is None:
                    generated += 1
                    row["id"] = str(len(configs[row["domain"]]))
                dup = seen[row["domain"]][row["id"]]
                seen[row["domain"]][row["id"]] += 1
                if dup:
                    new = f"{row['id']}~{dup + 1}"
                    anomalies.append(Anomaly("duplicate_id", where, label, f"id {row['id']!r} repeated; kept as {new!r}"))
                    row["id"] = new
                extra = {k: v for k, v in record.items() if k not in used}
                row["extra"] = json.dumps(extra, ensure_ascii=False, sort_keys=True)
                configs[row["domain"]].append(row)
            if generated:
                anomalies.append(Anomaly("generated_id", where, None,
                                         f"{generated} record(s) without an id: numbered by position"))
        counts = {}
        for d, rows in configs.items():
            c = {"rows": len(rows), "checklist_items": sum(len(r["checklist"]) for r in rows)}
            key = "continent" if d == "humanities" else "discipline"
            c.update({f"{key}:{k}": v for k, v in sorted(Counter(r[key] for r in rows if r[key]).items())})
            if d == "humanities":
                c["countries"] = len({r["country"] for r in rows if r["country"]})
            counts[d] = c
        return Release(configs={d: r for d, r in configs.items() if r}, anomalies=anomalies, counts=counts,
                       license=self.license, source=str(source), quarantine=quarantine,
                       files_read=files_read if source.is_dir() else None)

    def _row(self, record: dict, names: dict, where: str, label: Any, fallback_domain: str | None,
             anomalies: list[Anomaly]) -> tuple[dict[str, Any] | None, set[str], str]:
        """One release record in the project's schema, the record keys it used, and (when it cannot
        be a row: no prompt, no domain) None and why."""
        used: set[str] = set()

        def get(field: str) -> Any:
            k, v = _lookup(record, names[field])
            if k is not None:
                used.add(k)
            return v

        raw_prompt = get("prompt")
        prompt = _text(raw_prompt)
        if not prompt.strip():
            anomalies.append(Anomaly("empty_prompt", where, label, "no prompt text: quarantined"))
            return None, used, "no prompt: nothing to draw"
        if not isinstance(raw_prompt, str):
            anomalies.append(Anomaly("retyped_value", where, label,
                                     f"prompt is a {type(raw_prompt).__name__}: kept as its text {prompt[:60]!r}"))
        raw_id = get("id")
        domain_value = get("domain")
        continent, country, discipline = get("continent"), get("country"), get("discipline")
        domain = _domain(domain_value) if isinstance(domain_value, str) else None
        domain = domain or fallback_domain
        if domain is None:
            domain = "humanities" if continent or country else "nature" if discipline else None
        if domain is None:
            anomalies.append(Anomaly("unknown_domain", where, label, "cannot tell humanities from nature (no domain "
                                     "field, no continent or discipline, and the file name says neither): "
                                     "quarantined; pass domain=... to read it"))
            return None, used, "cannot tell humanities from nature"
        if domain_value is not None and (not isinstance(domain_value, str) or _domain(domain_value) is None):
            anomalies.append(Anomaly("unknown_domain", where, label, f"domain {domain_value!r}; read as {domain}"))

        problems: list[str] = []
        k_list, checklist = _lookup(record, names["checklist"])
        if k_list is not None:
            used.add(k_list)
            checklist = normalize_checklist(checklist, names, problems=problems)
        else:  # parallel lists (or only a list of items)
            k_items, items = _lookup(record, names["checklist_items"])
            k_expl, expl = _lookup(record, names["checklist_explanations"])
            used.update(k for k in (k_items, k_expl) if k)
            checklist = normalize_checklist(items, names, expl, problems=problems)
        for problem in problems:
            anomalies.append(Anomaly("irregular_checklist", where, label, f"{problem} (kept)"))
        if not checklist:
            anomalies.append(Anomaly("no_questions", where, label, "no checklist items: the row cannot be scored"))
        elif any(not c["explanation"] for c in checklist):
            anomalies.append(Anomaly("missing_explanation", where, label,
                                     f"{sum(not c['explanation'] for c in checklist)} item(s) without explanation"))

        rid = _text(raw_id).strip()
        if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int))):
            anomalies.append(Anomaly("retyped_value", where, label, f"id is a {type(raw_id).__name__}: kept as {rid!r}"))
        for field, value in (("continent", continent), ("country", country), ("discipline", discipline),
                             ("domain", domain_value)):
            if value is not None and not isinstance(value, str):
                anomalies.append(Anomaly("retyped_value", where, label,
                                         f"{field} is a {type(value).__name__}: kept as its text {_text(value)!r}"))
        row = {"id": rid or None, "prompt": prompt, "domain": domain, "continent": None, "country": None,
               "discipline": None, "checklist": checklist}
        if domain == "humanities":
            row["country"] = _text(country).strip() or None
            row["continent"] = self._code(continent, _CONTINENT_ALIASES, "continent", where, label, anomalies)
            for field in ("continent", "country"):
                if row[field] is None:
                    anomalies.append(Anomaly("missing_field", where, label, f"humanities record without {field}"))
        else:
            row["discipline"] = self._code(discipline, _DISCIPLINE_ALIASES, "discipline", where, label, anomalies)
            if row["discipline"] is None:
                anomalies.append(Anomaly("missing_field", where, label, "nature record without discipline"))
        return row, used, ""

    @staticmethod
    def _code(value: Any, aliases: dict[str, str], kind: str, where: str, label: Any,
              anomalies: list[Anomaly]) -> str | None:
        """A continent or discipline code; unknown values are kept as given and reported."""
        text = _text(value).strip()
        if not text:
            return None
        code = aliases.get(re.sub(r"[^a-z]", "", text.lower()))
        if code is None:
            anomalies.append(Anomaly(f"unknown_{kind}", where, label, f"{kind} {text!r} is not a paper code"))
            return text
        if code != text:
            anomalies.append(Anomaly("relabelled", where, label, f"{kind} {text!r} read as {code!r}"))
        return code

    # -- scoring -----------------------------------------------------------------------------------

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """One ImageResult per image: score = satisfied items / items (None when the judge failed).

        Options: ``max_reasks`` (default 2) follow-ups when a reply is not exactly one 0/1 per item;
        ``sampling`` (a :class:`Sampling` or a dict of its fields) overrides the judge's defaults;
        ``structured_output`` (default False: the paper's judge saw the plain prompt) also sends
        :func:`reply_schema`, for judges that enforce schemas.
        """
        opts = _options(options, SCORE_OPTIONS)
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} images")
        sampling = opts.get("sampling")
        if isinstance(sampling, dict):
            sampling = Sampling(**sampling)
        results, requests, parsers, asked = [], [], [], []
        loaded = load_images(images)  # an image that cannot be read is that image's failure, not the batch's
        for row, image, given in zip(rows, loaded, images):
            checklist = normalize_checklist(row.get("checklist"), problems=[])
            results.append(ImageResult(
                id=self.row_id(row), prompt=row["prompt"], score=None, config=row["domain"],
                image=image.source if isinstance(image, JudgeImage) else str(given) if isinstance(given, (str, Path)) else None,
                context={k: row.get(k) for k in ("continent", "country", "discipline")},
                questions=[QuestionResult(question=c["item"], criterion=c["explanation"], score=None,
                                          group="checklist", id=str(n)) for n, c in enumerate(checklist, 1)]))
            if not checklist:
                results[-1].failure = "the row has no checklist items"
                continue
            if isinstance(image, ImageError):
                results[-1].failure = f"image: {image}"
                continue
            requests.append(checklist_request(checklist, image, sampling,
                                              reply_schema(len(checklist)) if opts.get("structured_output") else None))
            parsers.append(partial(parse_checklist_reply, n=len(checklist)))
            asked.append(results[-1])
        parsed = ask_structured(judge, requests, parsers, max_reasks=opts.get("max_reasks", 2), progress=progress)
        for result, p in zip(asked, parsed):
            result.replies, result.reasks = p.texts, p.reasks
            if not p.ok:
                result.failure = p.error
                result.retryable = p.transient  # the judge could not answer: --retry-failed redoes it
                continue
            for q, v in zip(result.questions, p.value):
                q.score = float(v)
            satisfied = sum(p.value)
            result.score = satisfied / len(p.value)
            result.subscores = {"satisfied": float(satisfied), "items": float(len(p.value))}
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The paper's Tables 2 and 3: mean Knowledge Checklist Score x 100 per continent, per
        discipline, per domain and overall, each with a bootstrap CI (``confidence``, ``n_resamples``,
        ``seed``). Failed images are left out of the means and counted under ``failed``."""
        opts = _options(options, AGGREGATE_OPTIONS)
        stat = partial(summarize, scale=100.0, **opts)
        groups: dict[str, list[float | None]] = defaultdict(list)
        for r in results:
            domain = r.config or "unknown"
            groups["overall"].append(r.score)
            groups[domain].append(r.score)
            sub = r.context.get("continent") if domain == "humanities" else r.context.get("discipline")
            if sub:
                groups[f"{domain}/{sub}"].append(r.score)
        summary = {k: stat(v) for k, v in groups.items()}

        def mean(key: str) -> float | None:
            m = summary.get(key, {}).get("mean")
            return None if m is None or math.isnan(m) else m

        def columns(domain: str, codes: Sequence[str]) -> dict[str, float | None]:
            extra = sorted({k.split("/", 1)[1] for k in summary if k.startswith(f"{domain}/")} - set(codes))
            return {**{c: mean(f"{domain}/{c}") for c in [*codes, *extra]}, "Avg.": mean(domain)}

        table = {"humanities": columns("humanities", list(CONTINENTS)),
                 "nature": columns("nature", list(DISCIPLINES))}
        return {
            "knowledge_checklist_score": mean("overall"),
            "humanities": mean("humanities"),
            "nature": mean("nature"),
            "by_continent": {k: v for k, v in table["humanities"].items() if k != "Avg."},
            "by_discipline": {k: v for k, v in table["nature"].items() if k != "Avg."},
            "table": table,
            "summary": summary,
        }

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 2 (humanities, by continent) and Table 3 (nature, by discipline), with 95% intervals;
        a domain with no image is left out, one whose every image failed shows empty cells."""
        tables = []
        for domain, number in (("humanities", "Table 2"), ("nature", "Table 3")):
            if aggregate.get(domain) is None and domain not in aggregate["summary"]:
                continue
            cells = {code: aggregate["summary"].get(f"{domain}/{code}", value)
                     for code, value in aggregate["table"][domain].items() if code != "Avg."}
            cells["Avg."] = aggregate["summary"].get(domain)
            tables.append(PaperTable.one_row(f"WorldGenBench {number}: knowledge checklist score, {domain}",
                                             label, cells, note="0-100", decimals=2))
        return tables


def _options(options: dict[str, Any], own: set[str]) -> dict[str, Any]:
    """``options`` meant for this step; unknown names (typos) are errors, the other step's are ignored."""
    unknown = set(options) - SCORE_OPTIONS - AGGREGATE_OPTIONS
    if unknown:
        raise TypeError(f"unknown WorldGenBench option(s) {sorted(unknown)}; known: "
                        f"{sorted(SCORE_OPTIONS | AGGREGATE_OPTIONS)}")
    return {k: v for k, v in options.items() if k in own}


def reply_schema(n: int) -> dict[str, Any]:
    """One 0/1 per checklist item, in an object (structured-output APIs want an object at the top)."""
    return {"title": "worldgenbench_checklist", "type": "object",
            "properties": {"answers": {"type": "array", "items": {"enum": [0, 1]}, "minItems": n, "maxItems": n}},
            "required": ["answers"], "additionalProperties": False}


def checklist_request(checklist: Sequence[dict[str, str]], image: Any, sampling: Sampling | None = None,
                      json_schema: dict | None = None) -> ChatRequest:
    """The judge request for one image: the Appendix 8 prompt listing every item and explanation,
    with the image where the paper's ``{image}`` slot is."""
    before, after = render("worldgenbench", "checklist", checklist=checklist, image=_IMAGE_SLOT).split(_IMAGE_SLOT)
    return ChatRequest.simple(before.rstrip() + "\n", as_image(image), "\n" + after.lstrip(), sampling=sampling,
                              json_schema=json_schema)


def parse_checklist_reply(text: str, n: int) -> list[int]:
    """Exactly ``n`` binary values from a reply such as ``[1, 0, 0]`` (an object holding one list is
    accepted too). Raises ReplyParseError otherwise, which triggers a re-ask."""
    value = extract_json(text, expect=(list, dict))
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise ReplyParseError(f"expected a list of {n} binary values, got an object")
        value = lists[0]
    return [int(v) for v in score_list(value, n, allowed=(0, 1))]


BENCHMARK = WorldGenBench()
