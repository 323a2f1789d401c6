"""The release's JSON values as the package keeps them (as JSON text that UTF-8 can always carry) and
names them in messages (their JSON type: "an object", "a list")."""

from __future__ import annotations

import json
from typing import Any


def as_json_text(value: Any) -> str | None:
    """``value`` as JSON text, key order kept (lone surrogates escaped, so the text is always valid UTF-8)."""
    if value is None:
        return None
    text = json.dumps(value, ensure_ascii=False)
    return text if is_utf8(text) else json.dumps(value)


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON's \ud800 escapes can carry
        return False
    return True


def a_json_type(value: Any) -> str:
    """``value``'s JSON type with its article, for messages: "an object", "a list", "null"."""
    kind = json_type(value)
    return kind if kind == "null" else f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "text", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def typed_keys(values: dict[str, Any], skip: str | None = None) -> str:
    """Keys with the type of their values, for anomaly details: ``model (text), note (text)``."""
    return ", ".join(f"{k} ({json_type(v)})" for k, v in values.items() if k != skip)
