"""FLUX-Reason-6M's human review of its GCoT annotations (seed 004, appendix B.5), with the study kit.

The paper samples 500 images with their GCoT and has reviewers "identify any errors, including hallucinations,
contradictions with factual captions, or logical inconsistencies"; 96% of GCoTs passed. Here:

1. :func:`make_gcot_review` samples images of a FLUX-Reason-6M-schema dataset (the engine's release folder, or
   the published dataset streamed) and writes a review folder: the images, ``review.json`` (the review: its
   items, each reviewer's queue) and ``review.html``, the study kit's rating page in its ``review`` kind. Each
   item shows the image, its prompt, its category captions (and original caption) and the GCoT; a reviewer
   accepts it, rejects it, or corrects it in place (an edit says the GCoT had an error and gives the fix). The
   page keeps every answer in the browser and exports one file per reviewer, as for any study.
2. :func:`review_result` reads those files (``study.ratings.read_ratings``: whatever does not fit is named and
   left out) and decides each item: it **passes** when every reviewer accepted it (the paper's pass rate);
   a GCoT every objecting reviewer corrected the same way takes that correction; any other objection removes
   it. Beside the pass rate: how often the reviewers agree and Krippendorff's alpha on accept / not.
3. :func:`apply_gcot_review` writes the decisions back into the engine's release: ``gcot`` replaced by the
   correction or emptied (``None``) where the review says so, each data shard rewritten whole, and the
   decisions kept in ``gcot_review.json`` beside ``statistics.json``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..files import atomic_file, atomic_write_json, atomic_write_text, inside
from .page import render_page
from .ratings import krippendorff_alpha, read_ratings

__all__ = ["REVIEW_FILE", "PAGE_FILE", "make_gcot_review", "load_gcot_review", "review_result",
           "apply_gcot_review", "PAPER_PASS_RATE"]

REVIEW_FILE, PAGE_FILE, FORMAT = "review.json", "review.html", "t2ireason-gcot-review"
#: appendix B.5: "96% of GCoTs passed this review"
PAPER_PASS_RATE = 0.96
_INSTRUCTIONS = ("Read the GCoT against the image and the captions. Accept it only if it has no error. Errors "
                 "(appendix B.5): hallucinations (something the image or the captions do not have), "
                 "contradictions with the factual captions (entity names, text strings, spatial relations), "
                 "logical inconsistencies. Reject a GCoT with an error, or correct it in the box.")


def _order(rid: str, seed: str) -> str:
    return hashlib.sha256(f"{seed}\x1f{rid}".encode()).hexdigest()


def _reviewer_names(reviewers: int | Sequence[str]) -> list[str]:
    names = [f"reviewer-{i + 1}" for i in range(reviewers)] if isinstance(reviewers, int) else list(reviewers)
    if len(names) < 1 or len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"reviewers must be a count of at least 1 or distinct names, got {reviewers!r}")
    return names


def make_gcot_review(rows: Iterable[dict[str, Any]], out: str | os.PathLike, *, n: int = 500,
                     reviewers: int | Sequence[str] = 2, seed: str | None = None,
                     title: str = "FLUX-Reason-6M GCoT review") -> dict[str, Any]:
    """A review of ``n`` GCoTs drawn at random (by a hash of each id and ``seed``: the same whatever the row
    order; a fresh seed by default, kept in the review) from ``rows`` in the ``flux-reason-6m`` schema, every
    item to every reviewer (appendix B.5 names no overlap; the agreement needs two or more)."""
    names, seed = _reviewer_names(reviewers), seed if seed is not None else secrets.token_hex(8)
    out = Path(out)
    if (out / REVIEW_FILE).exists() or (out.exists() and any(out.iterdir())):
        raise ValueError(f"{out} is not empty: write the review into a new folder")
    picked = sorted(((_order(str(r["id"]), seed), r) for r in rows if r.get("gcot")), key=lambda t: t[0])[:n]
    if not picked:
        raise ValueError("no row has a GCoT to review")
    (out / "images").mkdir(parents=True)
    items = []
    for _, r in picked:
        file = f"images/{hashlib.sha256(str(r['id']).encode()).hexdigest()[:16]}.png"
        image = r.get("image") or {}
        data = image.get("bytes") if isinstance(image, dict) else None
        if data is None and isinstance(image, dict) and image.get("path"):
            data = Path(image["path"]).read_bytes()
        if data is None:
            raise ValueError(f"row {r['id']} has no image to show")
        with atomic_file(inside(out, file)) as f:
            f.write(data)
        blocks = [{"title": "What to look for", "text": _INSTRUCTIONS}]
        blocks += [{"title": f"{name} caption", "text": text} for name, text in (r.get("captions") or {}).items()
                   if text]
        if r.get("original_caption"):
            blocks.append({"title": "original caption", "text": r["original_caption"]})
        items.append({"id": str(r["id"]), "prompt": r.get("prompt") or "", "group": "gcot", "criterion": blocks,
                      "images": [{"file": file}], "reviewed": r["gcot"], "reviewed_title": "GCoT"})
    review = {"format": FORMAT, "id": f"gcot-review-{secrets.token_hex(4)}", "title": title, "kind": "review",
              "seed": seed, "protocol": {"scale": None, "source": "seed 004, appendix B.5"},
              "groups": {"gcot": "GCoT"}, "raters": names,
              "queues": {name: [{"item": it["id"]} for it in items] for name in names}, "items": items,
              "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
    atomic_write_json(out / REVIEW_FILE, review)
    atomic_write_text(out / PAGE_FILE, render_page(review))
    return review


def load_gcot_review(folder: str | os.PathLike) -> dict[str, Any]:
    path = Path(folder) / REVIEW_FILE
    try:
        review = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{folder} is not a GCoT review folder ({path.name}: {e})") from None
    if review.get("format") != FORMAT:
        raise ValueError(f"{path} is not a GCoT review (format {review.get('format')!r})")
    return review


def _decide(answers: dict[str, dict[str, Any]], original: str) -> tuple[str, str | None]:
    """One item's decision and the GCoT it leaves: passed (kept), corrected (the one correction every objecting
    reviewer gave), removed (any reject, or corrections that differ)."""
    objections = [a for a in answers.values() if a["verdict"] != "accept"]
    if not objections:
        return "passed", original
    fixes = {a["text"].strip() for a in objections if a["verdict"] == "edit"}
    if all(a["verdict"] == "edit" for a in objections) and len(fixes) == 1:
        return "corrected", fixes.pop()
    return "removed", None


def review_result(review: dict[str, Any], ratings: Iterable[str | os.PathLike]) -> dict[str, Any]:
    """The reviewers' files read against ``review``: each item's decision, the pass rate (every reviewer
    accepted) beside the paper's, the share of items the reviewers agree on (accept or not) and Krippendorff's
    alpha (nominal), with every problem found in the files."""
    read = read_ratings(review, ratings)
    items = {it["id"]: it for it in review["items"]}
    decisions = {}
    for item_id, answers in read.answers.items():
        decision, text = _decide(answers, items[item_id]["reviewed"])
        decisions[item_id] = {"decision": decision, "gcot": text,
                              "verdicts": {r: a["verdict"] for r, a in sorted(answers.items())}}
    reviewed = len(decisions)
    passed = sum(d["decision"] == "passed" for d in decisions.values())
    units = [{r: float(v == "accept") for r, v in d["verdicts"].items()} for d in decisions.values()]
    several = [u for u in units if len(u) >= 2]
    return {
        "items": len(items), "reviewed": reviewed, "unreviewed": len(items) - reviewed, "passed": passed,
        "pass_rate": passed / reviewed if reviewed else None, "paper_pass_rate": PAPER_PASS_RATE,
        "corrected": sum(d["decision"] == "corrected" for d in decisions.values()),
        "removed": sum(d["decision"] == "removed" for d in decisions.values()),
        "agreement": float(np.mean([len(set(u.values())) == 1 for u in several])) if several else None,
        "items_with_two_reviewers": len(several),
        "alpha": krippendorff_alpha(several, review["raters"], level="nominal", domain=[0.0, 1.0]) if several
        else float("nan"),
        "decisions": decisions, "problems": read.problems, "files": read.files,
    }


def apply_gcot_review(release: str | os.PathLike, result: dict[str, Any]) -> dict[str, int]:
    """Write the decisions into the engine's release folder: each data shard holding a reviewed id rewritten
    whole (atomically) with its GCoT corrected or emptied; ``gcot_review.json`` keeps the decisions. Returns
    how many rows were corrected and emptied."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    release = Path(release)
    if not (release / "statistics.json").is_file():
        raise ValueError(f"{release} is not a release the engine wrote (no statistics.json): the review is written "
                         "back only into the engine's own output")
    changes = {i: d for i, d in result["decisions"].items() if d["decision"] != "passed"}
    counts = {"corrected": 0, "removed": 0}
    for shard in sorted((release / "data").glob("*.parquet")):
        table = pq.read_table(shard)
        ids, gcots = table.column("id").to_pylist(), table.column("gcot").to_pylist()
        hit = [k for k, rid in enumerate(ids) if rid in changes]
        if not hit:
            continue
        for k in hit:
            gcots[k] = changes[ids[k]]["gcot"]
            counts[changes[ids[k]]["decision"]] += 1
        position = table.schema.get_field_index("gcot")
        table = table.set_column(position, table.schema.field(position), pa.array(gcots, type=pa.string()))
        with atomic_file(shard) as f:
            pq.write_table(table, f)
    atomic_write_json(release / "gcot_review.json", {k: v for k, v in result.items() if k != "files"})
    return counts
