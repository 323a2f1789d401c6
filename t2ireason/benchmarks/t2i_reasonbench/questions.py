"""A record's question groups as the package reads them: each ``*_evaluation`` object's question-criterion
pairs matched by their keys (``q1``/``c1``, ``sci_q1``, ``aq1``...), every irregularity noted, and every
criterion or rubric rendered as text a judge reads. Used by the release reader and by stage-I generation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .schema import Dimension
from .values import a_json_type, as_json_text, typed_keys

#: the keys of an evaluation record that are not question groups
EVALUATION_KEYS = {"id", "prompt", "explicit_meaning", "image_content"}


# -- rubrics: criteria given as text, as objects of score levels, or anything else ---------------------

_LEVEL_KEY = re.compile(r"(?:score[ _-]?)?(1(?:\.0*)?|0?\.50*|0(?:\.0*)?)", re.IGNORECASE)
_ONE_TEXT_KEYS = {"score", "scores", "criteria", "criterion", "scoring", "rubric"}


def _level(key: str) -> float | None:
    m = _LEVEL_KEY.fullmatch(key.strip())
    return float(m[1]) if m else None


def _joined(parts: list[str]) -> str:
    """Items on one line: after a sentence's end a space, otherwise a semicolon."""
    out = ""
    for part in parts:
        if out:
            out += " " if out.rstrip().endswith((".", "!", "?", ")", "。")) else "; "
        out += part
    return out


def render_rubric(value: Any) -> str | None:
    """A criterion (or a group's rubric) as readable text for the judge, whatever its JSON shape.

    Text is sent as it is. An object of score levels (keys ``1``/``0.5``/``0`` or
    ``score_1``/``score_0.5``/``score_0``, in any order) becomes ``"1: ... 0.5: ... 0: ..."``, from the
    highest level down; an object holding one text under ``score``, ``criteria`` (or ``criterion``,
    ``scoring``, ``rubric``) is that text; any other object lists ``key: value`` in the release's order; a
    list joins its items; a number or boolean is its JSON text; ``null`` stays ``None``.

    >>> render_rubric({"0": "No cat.", "score_1": "A cat.", "0.5": "Maybe a cat."})
    '1: A cat. 0.5: Maybe a cat. 0: No cat.'
    >>> render_rubric({"criteria": "1 if red, 0.5 if pink, 0 otherwise"})
    '1 if red, 0.5 if pink, 0 otherwise'
    >>> render_rubric({"score_1": "all legible", "score_2": "one typo"})
    'score_1: all legible; score_2: one typo'
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        if len(value) == 1:
            (key, inner), = value.items()
            if key.strip().lower() in _ONE_TEXT_KEYS and isinstance(inner, str):
                return inner
        levels = {k: _level(k) for k in value}
        if value and all(lv is not None for lv in levels.values()):
            ordered = sorted(value, key=lambda k: -levels[k])
            return _joined([f"{levels[k]:g}: {render_rubric(value[k]) or ''}".rstrip() for k in ordered])
        return _joined([f"{k}: {render_rubric(v) if v is not None else 'null'}" for k, v in value.items()])
    if isinstance(value, list):
        return _joined([render_rubric(v) if v is not None else "null" for v in value])
    return json.dumps(value)


# -- question-criterion pairs ------------------------------------------------------------------------

_Q = re.compile(r"^(?P<prefix>[a-z_]*?)q(?P<n>\d+)$", re.IGNORECASE)
_C = re.compile(r"^(?P<prefix>[a-z_]*?)c(?P<n>\d+)$", re.IGNORECASE)


def _key_parts(pattern: re.Pattern, key: str) -> tuple[str, int] | None:
    m = pattern.match(key)
    return (m["prefix"].lower(), int(m["n"])) if m else None


def parse_pairs(group: dict[str, Any], where: str = "") -> tuple[list[dict[str, Any]], dict[str, Any],
                                                                 list[tuple[str, str]]]:
    """The question-criterion pairs of one ``*_evaluation`` object, in question order, with their keys.

    Returns ``(pairs, extra, notes)``. Each pair is ``{question_key, question, criterion_key, criterion,
    criterion_json}``: ``criterion`` is the release's text, or, for a criterion that is not text, its
    rendering by :func:`render_rubric`, with the release's value as JSON text in ``criterion_json``.
    ``extra`` holds the keys that are not part of a pair (a ``scoring`` note, a rubric object, a criterion
    without its question); ``notes`` describe every irregularity as ``(kind, detail)``. A criterion is
    matched to its question by prefix and number, then by number alone, then as the key that follows the
    question; a question left without one keeps a ``None`` criterion. Nothing is dropped and nothing
    raises: ``where`` is kept for callers' messages.

    >>> pairs, extra, notes = parse_pairs({"aq1": "Sharp?", "ac1": "1: yes 0: no", "scoring": "mean"})
    >>> [(p["question_key"], p["criterion_key"]) for p in pairs], extra
    ([('aq1', 'ac1')], {'scoring': 'mean'})
    """
    keys = list(group)
    questions = [k for k in keys if _key_parts(_Q, k)]
    criteria = [k for k in keys if _key_parts(_C, k)]
    used: set[str] = set()
    pairs, notes = [], []
    for qk in questions:
        prefix, n = _key_parts(_Q, qk)
        free = [k for k in criteria if k not in used]
        ck = next((k for k in free if _key_parts(_C, k) == (prefix, n)), None)
        if ck is None:
            ck = next((k for k in free if _key_parts(_C, k)[1] == n), None)
            if ck is None:
                i = keys.index(qk) + 1
                ck = keys[i] if i < len(keys) and keys[i] in free else None
            if ck is None:
                notes.append(("question_without_criterion", f"question {qk!r} has no criterion; kept without one"))
            else:
                notes.append(("irregular_key", f"question {qk!r} paired with criterion {ck!r}"))
        if ck is not None:
            used.add(ck)
        pairs.append({"question_key": qk, "question": group[qk], "criterion_key": ck,
                      "criterion": group[ck] if ck is not None else None})
    orphans = [k for k in criteria if k not in used]
    for k in orphans:
        notes.append(("criterion_without_question", f"criterion {k!r} has no question; kept in the group's extra"))
    extra = {k: group[k] for k in keys if k not in questions and k not in used}

    # pairs follow their numbers (a shuffled release keeps its meaning), in order of appearance on a tie
    order = [keys.index(p["question_key"]) for p in pairs]
    pairs = [p for _, p in sorted(zip(order, pairs), key=lambda t: (_key_parts(_Q, t[1]["question_key"])[1], t[0]))]
    expected = [k for p in pairs for k in (p["question_key"], p["criterion_key"]) if k is not None]
    if [k for k in keys if k in set(expected)] != expected:
        notes.append(("key_order", f"keys in the order {', '.join(k for k in keys if k in set(expected))}; "
                                   f"pairs read as {', '.join(expected)}"))
    irregular = [k for p in pairs for k in (p["question_key"], p["criterion_key"])
                 if k is not None and not re.fullmatch(r"[qc]\d+", k)]
    if irregular:
        notes.append(("irregular_key", f"irregular key(s) {', '.join(irregular)}"))
    numbers = [_key_parts(_Q, p["question_key"])[1] for p in pairs]
    if numbers != list(range(1, len(numbers) + 1)):
        notes.append(("numbering", f"questions numbered {numbers}, not 1..{len(numbers)}"))

    for p in pairs:
        for part in ("question", "criterion"):
            value = p[part]
            if part == "criterion" and value is not None and not isinstance(value, str):
                notes.append(("structured_criterion", f"criterion {p['criterion_key']!r} is "
                                                      f"{a_json_type(value)}; rendered as text for the judge"))
            elif value is None or (isinstance(value, str) and not value.strip()):
                key = p[f"{part}_key"]
                if key is not None:
                    notes.append((f"empty_{part}", f"{part} {key!r} is {'null' if value is None else 'blank'}"))
        p["criterion_json"] = None if p["criterion"] is None or isinstance(p["criterion"], str) \
            else as_json_text(p["criterion"])
        p["criterion"] = render_rubric(p["criterion"])
        if p["question"] is not None and not isinstance(p["question"], str):
            notes.append(("non_text_value", f"question {p['question_key']!r} is {a_json_type(p['question'])}; "
                                            "kept as JSON text"))
            p["question"] = as_json_text(p["question"])
    return pairs, extra, notes


def _group_role(key: str, spec: Dimension) -> str | None:
    """The role of a group the dimension does not name, from words in its key (None: unknown)."""
    k = key.lower()
    if "quality" in k or "aes" in k:
        return "quality"
    if "detail" in k:
        return "detail"
    if any(w in k for w in ("reason", "entity", "scien", "sci_")):
        return "reason"
    return None


def read_groups(rec: dict[str, Any], spec: Dimension, complain: Callable[[str, str], None]) -> list[dict[str, Any]]:
    """The record's question groups, in the record's order, each pair kept with its keys, every
    irregularity passed to ``complain(kind, detail)``. A group is a ``*_evaluation`` key, or any other
    key holding an object with question keys (q1, sci_q1...)."""
    groups = []
    for key, value in rec.items():
        if key in EVALUATION_KEYS:
            continue
        named = key.lower().endswith("_evaluation")
        if not named and not (isinstance(value, dict) and any(_key_parts(_Q, k) for k in value)):
            continue
        role = spec.group_roles.get(key)
        if role is None:
            role = _group_role(key, spec)
            complain("unexpected_group", f"group {key!r} is not one of {', '.join(spec.group_roles)}; "
                     + (f"read as the {role} group" if role else "its role is unknown: kept, not scored"))
        raw = as_json_text(value) if value is not None else "null"
        if not isinstance(value, dict):
            complain("group_not_object", f"{key} is {a_json_type(value)}, not an object of question-criterion pairs; "
                                         "kept as its raw JSON, with no pairs")
            groups.append({"group": key, "role": role, "pairs": [], "extra": None, "raw": raw})
            continue
        pairs, extra, notes = parse_pairs(value, key)
        for kind, note in notes:
            complain(kind, f"{key}: {note}")
        if extra:
            complain("non_pair_key", f"{key}: key(s) {typed_keys(extra)} kept in the group's extra and sent to the "
                                     "judge with the group")
        if not pairs:
            complain("no_pairs", f"{key}: no question-criterion pairs")
        elif len(pairs) > 5:
            complain("pair_count", f"{key}: {len(pairs)} pairs (the templates ask for 1 to 5)")
        groups.append({"group": key, "role": role, "pairs": pairs, "extra": as_json_text(extra) if extra else None,
                       "raw": raw})
    for key, role in spec.groups:
        if key not in rec and not any(g["role"] == role for g in groups):
            complain("missing_group", f"no {key!r} group")
    return groups
