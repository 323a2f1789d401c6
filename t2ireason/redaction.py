"""Secrets out of everything the project records or prints about a judge.

Judge settings (backend options such as ``api_key`` or a ``base_url`` with ``user:password@``) are
recorded in ``run.json`` and ``scores.json``, the data engine's ``executor.json`` and stage settings,
and named in error messages; each of those goes through :func:`redacted` first. Imports nothing heavy.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SECRET_NAME", "MASK", "redacted"]

#: option names whose values are credentials (``api_key``, ``hf_token``, ``password``, ``Authorization``...)
SECRET_NAME = re.compile(r"(api_?key|.*_key|.*token|.*secret|password|authorization)", re.IGNORECASE)
MASK = "***"
#: the ``user:password@`` of a URL, anywhere in a text
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]+@")


def redacted(value: Any) -> Any:
    """``value`` (plain data: dicts, lists, text) with every secret masked: the value of a key named like
    a credential (:data:`SECRET_NAME`) becomes ``"***"``, and a URL's ``user:password@`` in any text
    ``***@``. What is not a secret is returned as it was."""
    if isinstance(value, str):
        return _USERINFO.sub(rf"\1{MASK}@", value)
    if isinstance(value, dict):
        return {k: (MASK if v is not None and SECRET_NAME.fullmatch(str(k)) else redacted(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redacted(v) for v in value)
    return value
