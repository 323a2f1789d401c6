"""The rating page of a study: one self-contained HTML file that opens from ``file://``.

No server and no network: the study travels inside the page as JSON (a ``<script
type="application/json">`` block, which never runs), the images are the study folder's copies linked by
relative paths, and the reports' Content Security Policy lets only the page's own nonce-tagged script
run. Everything a prompt or criterion holds is put into the page as text (``textContent``), never as
markup.

A rater names themself (one of the study's raters); each answer is written to the browser's
``localStorage`` under the study's id and the rater's as it is given, so a reload, a closed tab or a
break loses nothing and the rater resumes where they stopped. "Export" downloads one JSON file: the
study's id, the rater, every answer with its time, the order the items were shown in and, for A/B/tie,
which image was on the left (:data:`RATINGS_FORMAT`).
"""

from __future__ import annotations

import secrets
from typing import Any

import jinja2

from ..files import printable

__all__ = ["render_page", "page_data", "RATINGS_FORMAT"]

#: the ``format`` of a rater's exported file
RATINGS_FORMAT = "t2ireason-ratings"

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("t2ireason.study", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined)


def _level_label(lo: float, hi: float) -> str:
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"


def page_data(study: dict[str, Any]) -> dict[str, Any]:
    """What the page needs of the study; the runs' names stay out of it (the raters do not see which
    model made an image)."""
    items = {}
    for it in study["items"]:
        entry = {"prompt": it["prompt"], "group": study["groups"][it["group"]], "criterion": it["criterion"],
                 "images": [img["file"] for img in it["images"]]}
        if "questions" in it:
            entry["questions"] = [{"id": q["id"], "question": q["question"], "criterion": q["criterion"],
                                   "levels": [{"value": (lo + hi) / 2, "label": _level_label(lo, hi)}
                                              for lo, hi in q["levels"]]} for q in it["questions"]]
        items[it["id"]] = entry
    return {"format": RATINGS_FORMAT, "id": study["id"], "title": study["title"], "kind": study["kind"],
            "scale": study["protocol"]["scale"], "raters": study["raters"], "queues": study["queues"],
            "items": items}


def render_page(study: dict[str, Any]) -> str:
    """The page's HTML text."""
    return printable(_ENV.get_template("study.html.j2").render(
        title=study["title"], study=study, data=page_data(study), nonce=secrets.token_urlsafe(16)))
