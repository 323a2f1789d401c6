"""The release's JSON read as written: a key repeated within one object keeps every value (the last under
the key, as JSON readers read it), and a file that does not parse as a whole gives up each whole record it
holds, read on past the damage, with what could not be read kept as raw text."""

from __future__ import annotations

import json
import re
from typing import Any

#: a key repeated within one JSON object: the last value keeps the key (as every JSON reader, and the
#: authors' scripts, would read it), each earlier value is kept under the key with this suffix
_OVERWRITTEN = " (overwritten {n})"
OVERWRITTEN_MARKER = _OVERWRITTEN.split("{")[0]


def _keep_overwritten(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` keeping every value of a key repeated within one object (see _OVERWRITTEN)."""
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            n = 1
            while f"{key}{_OVERWRITTEN.format(n=n)}" in out:
                n += 1
            out[f"{key}{_OVERWRITTEN.format(n=n)}"] = out[key]
        out[key] = value
    return out


#: the release's JSON reader: every value of a repeated key kept
LOADER = json.JSONDecoder(object_pairs_hook=_keep_overwritten)
_RECORD_START = re.compile(r"[,\[\n][ \t\r\n]*\{")
_RESYNC_TRIES = 100  # bounded: each try may read to the end of the file


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _next_record(text: str, start: int) -> int | None:
    """Where the next whole record (an object with an ``id``) starts after damaged text, if anywhere."""
    for tries, m in enumerate(_RECORD_START.finditer(text, start)):
        if tries >= _RESYNC_TRIES:
            return None
        i = m.end() - 1
        try:
            value, _ = LOADER.raw_decode(text, i)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "id" in value:
            return i
    return None


def salvage(text: str) -> tuple[list[Any], list[tuple[str, str]], list[str]]:
    """The whole values of a JSON array (or of a sequence of JSON values, one per line) that does not
    parse as a whole: ``(values, problems, leftovers)``, where leftovers are the raw texts that could not
    be read. Reads past a damaged record to the next whole one."""
    values, problems, leftovers = [], [], []
    i = _skip_space(text, 0)
    in_array = text.startswith("[", i)
    i = _skip_space(text, i + 1) if in_array else i
    closed = False
    while i < len(text):
        if in_array and text[i] == "]":
            closed = True
            end = _skip_space(text, i + 1)
            if end < len(text):
                problems.append(("trailing_text", f"text after the array's end at character {end}"))
                leftovers.append(text[end:])
            break
        try:
            value, end = LOADER.raw_decode(text, i)
        except (ValueError, RecursionError) as e:
            resume = _next_record(text, i + 1)
            problems.append(("malformed_record", f"text at character {i} is not JSON ({e}); "
                             + ("read on from the next record" if resume is not None else "nothing after it read")))
            leftovers.append(text[i:resume] if resume is not None else text[i:])
            if resume is None:
                break
            i = resume
            continue
        values.append(value)
        i = _skip_space(text, end)
        if i < len(text) and text[i] == ",":
            i = _skip_space(text, i + 1)
        elif in_array and i < len(text) and text[i] != "]":
            problems.append(("missing_comma", f"no comma after the value ending at character {end}"))
    if in_array and not closed:
        problems.append(("truncated_file", "the array is not closed: the file ends early"))
    if not in_array and len(values) > 1:
        problems.append(("json_lines", f"{len(values)} JSON values one after another, not one array"))
    return values, problems, leftovers


def overwritten_keys(value: Any) -> list[str]:
    """The keys renamed by :func:`_keep_overwritten` anywhere in a record."""
    if isinstance(value, dict):
        return [k for k in value if OVERWRITTEN_MARKER in k] + [x for v in value.values() for x in overwritten_keys(v)]
    if isinstance(value, list):
        return [x for v in value for x in overwritten_keys(v)]
    return []
