"""The rating page of a study: one self-contained HTML file that opens from ``file://``.

No server and no network: the study travels inside the page as JSON (a ``<script
type="application/json">`` block, which never runs), the images are the study folder's copies linked by
relative paths, and the reports' Content Security Policy lets only the page's own nonce-tagged script
run. Everything a prompt or criterion holds is put into the page as text (``textContent``), never as
markup. The page is blind: it holds no run's name and nothing in the order of the runs (the items by
their opaque ids, an A/B/tie item's two images in the order drawn for it); which run made what stays in
the study's key, with the organiser. The images to compare are shown at one size, whatever their own.

Each tab asks who rates (a second tab is not silently the last rater): the rater named is kept for the
tab alone (``sessionStorage``: a reload keeps it), every answer in the browser's ``localStorage`` under
the study's id and the rater's as it is given, so a reload, a closed tab or a break loses nothing and the
rater resumes where they stopped; two tabs of one rater add to the same answers. The tab keeps a second copy
of its rater's answers in ``sessionStorage``: reloaded from disk, Chromium sometimes hands the page an empty
store for the first of the two it touches (7 reloads in 100 of a ``file://`` page, with a fresh or a persistent
profile, measured with Playwright), and each answer is read as the later of the two copies. Answers are kept in maps
without a prototype, so any question id (``__proto__``, ``constructor``) is an answer like any other.
"Export" downloads one JSON file: the study's id, the rater, every answer with its time, the order the
items were shown in and, for A/B/tie, which of the item's images was on the left (:data:`RATINGS_FORMAT`).
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
    """What the page needs of the study, and nothing of the runs: the items by id (opaque tokens, in
    their sorted order), an A/B/tie item's images in the order drawn for it (its ``sides``)."""
    items = {}
    for it in sorted(study["items"], key=lambda it: it["id"]):
        files = [img["file"] for img in it["images"]]
        entry = {"prompt": it["prompt"], "group": study["groups"][it["group"]], "criterion": it["criterion"],
                 "images": [files[i] for i in it.get("sides", range(len(files)))]}
        if "questions" in it:
            entry["questions"] = [{"id": q["id"], "question": q["question"], "criterion": q["criterion"],
                                   "levels": [{"value": (lo + hi) / 2, "label": _level_label(lo, hi)}
                                              for lo, hi in q["levels"]]} for q in it["questions"]]
        if "reviewed" in it:  # a review item: the text under review, offered for correction
            entry.update(reviewed=it["reviewed"], reviewed_title=it["reviewed_title"])
        items[it["id"]] = entry
    return {"format": RATINGS_FORMAT, "id": study["id"], "title": study["title"], "kind": study["kind"],
            "scale": study["protocol"]["scale"], "raters": study["raters"], "queues": study["queues"],
            "items": items}


def render_page(study: dict[str, Any]) -> str:
    """The page's HTML text."""
    return printable(_ENV.get_template("study.html.j2").render(
        title=study["title"], study=study, data=page_data(study), nonce=secrets.token_urlsafe(16)))
