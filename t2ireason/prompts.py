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

from functools import cache
from importlib import resources
from typing import Any

import jinja2

__all__ = ["render", "template_text", "verbatim"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("t2ireason", "templates"),
    undefined=jinja2.StrictUndefined,  # a missing slot is an error, never an empty string
    keep_trailing_newline=False,
    autoescape=False,  # prompts are plain text for a model, not HTML
)


@cache
def _template(folder: str, name: str) -> jinja2.Template:
    filename = name if "." in name else f"{name}.txt"
    return _ENV.get_template(f"{folder}/{filename}")


def render(folder: str, name: str, **slots: Any) -> str:
    """The template ``name`` of ``folder`` (a benchmark's template folder) with its slots filled."""
    return _template(folder, name).render(**slots).strip()


def template_text(folder: str, name: str) -> str:
    """A template with no slots, as text."""
    return render(folder, name)


@cache
def verbatim(folder: str, name: str) -> str:
    """The text of ``templates/<folder>/<name>.txt`` byte for byte, less the ``#|`` lines that open
    it (its citation): no jinja, no stripping, no newline translation."""
    path = resources.files("t2ireason") / "templates"
    for part in [*folder.split("/"), name if "." in name else f"{name}.txt"]:
        path = path / part
    text = path.read_bytes().decode("utf-8")
    while text.startswith("#|"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text
