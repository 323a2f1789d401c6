"""Judge prompt templates, stored as package data in ``t2ireason/templates/<benchmark>/``.

Templates are jinja2 files whose header is a ``{#- ... -#}`` comment citing
the paper, figure or appendix they come from; the text after it is the
paper's template, verbatim, with ``{{ placeholders }}`` for what the paper
marks as slots.

A text that must reach the judge exactly as written (the authors' strings an
``official`` preset sends, with their leading and trailing newlines) is not a
jinja template: :func:`verbatim` gives it byte for byte, to be filled the way
the authors' code fills it (``str.format``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from typing import Any

import jinja2

__all__ = ["render", "template_text", "verbatim", "templates_read", "template_digest"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("t2ireason", "templates"),
    undefined=jinja2.StrictUndefined,  # a missing slot is an error, never an empty string
    keep_trailing_newline=False,
    autoescape=False,  # prompts are plain text for a model, not HTML
)


#: the open :func:`templates_read` records: each a dict of template path -> its digest
_READING: list[dict[str, str]] = []
_READING_LOCK = threading.Lock()


def _path(folder: str, name: str) -> str:
    return f"{folder}/{name if '.' in name else f'{name}.txt'}"


@cache
def template_digest(folder: str, name: str) -> str:
    """The SHA-256 of a template file's source as the package holds it (its identity: any edit changes it)."""
    path = resources.files("t2ireason") / "templates"
    for part in _path(folder, name).split("/"):
        path = path / part
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _note(folder: str, name: str) -> None:
    """A template was used: said to every open :func:`templates_read` record."""
    if _READING:
        digest = template_digest(folder, name)
        with _READING_LOCK:
            for record in _READING:
                record[_path(folder, name)] = digest


@contextmanager
def templates_read() -> Iterator[dict[str, str]]:
    """Within the block, every template rendered or read verbatim (by any thread), as ``{path: SHA-256 of its
    source}``: what an evaluation's requests were made from (:mod:`t2ireason.protocol_record`)."""
    record: dict[str, str] = {}
    with _READING_LOCK:
        _READING.append(record)
    try:
        yield record
    finally:
        with _READING_LOCK:
            _READING.remove(record)


@cache
def _template(folder: str, name: str) -> jinja2.Template:
    return _ENV.get_template(_path(folder, name))


def render(folder: str, name: str, **slots: Any) -> str:
    """The template ``name`` of ``folder`` (a benchmark's template folder) with its slots filled."""
    _note(folder, name)
    return _template(folder, name).render(**slots).strip()


def template_text(folder: str, name: str) -> str:
    """A template with no slots, as text."""
    return render(folder, name)


def verbatim(folder: str, name: str) -> str:
    """The text of ``templates/<folder>/<name>.txt`` byte for byte, less the ``#|`` lines that open
    it (its citation): no jinja, no stripping, no newline translation."""
    _note(folder, name)
    return _verbatim(folder, name)


@cache
def _verbatim(folder: str, name: str) -> str:
    path = resources.files("t2ireason") / "templates"
    for part in [*folder.split("/"), name if "." in name else f"{name}.txt"]:
        path = path / part
    text = path.read_bytes().decode("utf-8")
    while text.startswith("#|"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text
