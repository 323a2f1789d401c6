"""WorldGenBench's release: the Hub dataset ``worldrl/WorldGenBench`` (JSON or JSON Lines files).

What the project could confirm of the release (its Hub pages: the dataset card and commits of it, read in
November 2026; no file of its data could be reached): the card's YAML (license ``mit``, language ``en``,
size ``1K<n<10K``, task ``text-to-image``, tags ``reasoning-datasets-competition`` and ``art``; the Hub lists
its format as JSON); its text (732 humanities prompts, 3 for each of 244 countries or regions; 340 nature
prompts over 6 disciplines; each prompt, "**Prompt**", paired with a "**Knowledge Checklist**" of binary
(✓/✗) items; GPT-4o labels each item 1 or 0 and the reward is satisfied / total; the prompts were written by
Claude 3.7). What it could not confirm: the names of the data files, their field names, the checklist's
shape, whether records carry an id, the commit of the current files and their bytes. So the field names
here remain a documented guess: :data:`FIELD_NAMES` (candidates matched case- and separator-insensitively;
the card's two labels, ``Prompt`` and ``Knowledge Checklist``, are among them), which
``read_release(field_map=...)`` (``t2ireason build worldgenbench --read-option field_map=...``) overrides,
with the common shapes of a checklist (:func:`normalize_checklist`); the official release is fetched at
``main`` with no recorded hash, so every build of it says ``release not checked``
(:func:`t2ireason.releases.verify_files`): a stand-in in its layout is not told from the real one. Every
value is kept, what cannot be a row is quarantined with its raw text, and each irregularity is an anomaly.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base import Anomaly, Quarantined, Release, ReleaseError, one_of

__all__ = ["DOMAINS", "CONTINENTS", "DISCIPLINES", "FIELD_NAMES", "LICENSE", "normalize_checklist", "read_release"]

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

#: the license the worldrl/WorldGenBench Hub card gives
LICENSE = "mit"


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


def read_release(source: str | Path, *, field_map: dict[str, str | Sequence[str]] | None = None,
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
        raise TypeError(f"unknown option(s) {sorted(options)} for reading WorldGenBench")
    names = dict(FIELD_NAMES)
    for field, cand in (field_map or {}).items():
        if field not in names:
            raise ValueError(f"field_map names unknown field {field!r}; known: {', '.join(names)}")
        names[field] = (cand,) if isinstance(cand, str) else tuple(cand)
    if domain is not None:
        one_of("domain", domain, DOMAINS)
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
            row, used, why = _row(record, names, where, label, hint or file_domain or domain, anomalies)
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
                   license=LICENSE, source=str(source), quarantine=quarantine,
                   files_read=files_read if source.is_dir() else None)


def _row(record: dict, names: dict, where: str, label: Any, fallback_domain: str | None,
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
        row["continent"] = _code(continent, _CONTINENT_ALIASES, "continent", where, label, anomalies)
        for field in ("continent", "country"):
            if row[field] is None:
                anomalies.append(Anomaly("missing_field", where, label, f"humanities record without {field}"))
    else:
        row["discipline"] = _code(discipline, _DISCIPLINE_ALIASES, "discipline", where, label, anomalies)
        if row["discipline"] is None:
            anomalies.append(Anomaly("missing_field", where, label, "nature record without discipline"))
    return row, used, ""


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
