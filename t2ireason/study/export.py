"""A study as a Hub dataset, beside the results dataset of ``t2ireason export``.

Two configs, Parquet with the images embedded, and a card checked by ``huggingface_hub``'s parser:

- ``items``: the sample, one row per item (each image rated, or each pair for A/B/tie) with what the raters
  read, the raters it was given to and the merged human figure (null where no usable rating came back);
- ``ratings``: every rating counted, one row per rater and item (per question in a questions study),
  with its time and, for A/B/tie, the order the two images were shown in.

Beside them ``study.json`` (the study's key: the protocol, the seed, the sample, the runs each image came
from, every rater's queue; the study is over, its raters need no blinding any more) and
``agreement.json`` (the figures, what was left out and why). Rows join the results dataset on
``run`` and ``row_id`` (its ``model`` and ``id``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ..exports import check_new_folder
from ..files import atomic_write_json, jsonable
from ..hub_ids import check_license, check_repo_id
from .sample import STUDY_FILE, run_letter

__all__ = ["export_study", "ITEM_FIELD_DOCS", "RATING_FIELD_DOCS"]

ITEM_FIELD_DOCS = {
    "study": "the study's id (its digest: the same draw has the same id)",
    "item": "the item's id in the study",
    "benchmark": "the benchmark of the rated runs",
    "kind": "scale (one score per image), preference (A/B/tie between two runs) or questions (the judge's own)",
    "group": "the dimension, track or category the prompt was drawn from",
    "row_id": "the benchmark row's id (the results dataset's id)",
    "prompt": "the prompt the image was generated from",
    "criterion": "what the raters read beside the image: the paper's texts with the row put in",
    "image": "the image rated (A/B/tie: the first run's)",
    "image_b": "A/B/tie: the second run's image; null otherwise",
    "run": "the run (model) that made image (the results dataset's model)",
    "run_b": "A/B/tie: the run that made image_b",
    "raters": "the raters the item was given to",
    "human": "the merged human figure: the mean rating (scale); +1 image better, -1 image_b better, 0 a tie "
             "(the sign of the raters' mean verdict); null for questions (see questions) or when unrated",
    "questions": "questions study: each judge question with its criterion, group, the raters' mean answer and "
                 "the answer most raters gave (null: no majority)",
    "questions.majority": "the answer most raters gave; null when two answers tie",
    "left_out": "why the item's ratings were not counted (its image changed since it was rated); empty otherwise",
}
RATING_FIELD_DOCS = {
    "study": "the study's id",
    "item": "the item rated",
    "rater": "the rater's id",
    "question": "questions study: the question answered; null otherwise",
    "value": "the rating (scale), the answer (questions), or the verdict on (image, image_b): +1, -1 or 0",
    "shown": "A/B/tie: which image was on the left (A) and which on the right (B): a is image (the first run's), b "
             "image_b; empty otherwise",
    "at": "when the rater gave the answer (the rater's browser clock, ISO 8601)",
}


def _features():
    import datasets

    text, number = datasets.Value("string"), datasets.Value("float64")
    items = datasets.Features({
        "study": text, "item": text, "benchmark": text, "kind": text, "group": text, "row_id": text, "prompt": text,
        "criterion": text, "image": datasets.Image(), "image_b": datasets.Image(), "run": text, "run_b": text,
        "raters": datasets.List(text), "human": number,
        "questions": datasets.List({"id": text, "question": text, "criterion": text, "group": text,
                                    "human": number, "majority": number}),
        "left_out": text,
    })
    ratings = datasets.Features({"study": text, "item": text, "rater": text, "question": text, "value": number,
                                 "shown": datasets.List(text), "at": text})
    return items, ratings


def _records(study: dict[str, Any], result: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    folder = Path(study["folder"])
    merged = result["merged"]
    moved = set(result["left_out"])
    swaps = {(r, q["item"]): bool(q.get("swap")) for r, queue in study["queues"].items() for q in queue}
    items, ratings = [], []
    for it in study["items"]:
        m = merged.get(it["id"], {})
        images = [str(folder / img["file"]) for img in it["images"]]
        answers = m.get("questions", {})
        items.append({
            "study": study["id"], "item": it["id"], "benchmark": study["benchmark"], "kind": study["kind"],
            "group": it["group"], "row_id": it["row"], "prompt": it["prompt"],
            "criterion": "\n\n".join(f"{b['title']}\n{b['text']}" for b in it["criterion"]),
            "image": images[0], "image_b": images[1] if len(images) > 1 else None,
            "run": it["images"][0]["run"], "run_b": it["images"][1]["run"] if len(images) > 1 else None,
            "raters": it["raters"], "human": m.get("human"),
            "questions": [{"id": q["id"], "question": q["question"], "criterion": q["criterion"], "group": q["group"],
                           "human": answers.get(q["id"], {}).get("human"),
                           "majority": answers.get(q["id"], {}).get("majority")} for q in it.get("questions", [])],
            "left_out": "its image changed after it was rated" if it["id"] in moved else None})
        at = m.get("at", {})
        for rater, value in m.get("ratings", {}).items():
            page = ["b", "a"] if swaps[(rater, it["id"])] else ["a", "b"]  # as the page listed the images
            shown = [run_letter(it, letter) for letter in page] if len(images) > 1 else []
            ratings.append({"study": study["id"], "item": it["id"], "rater": rater, "question": None, "value": value,
                            "shown": shown, "at": at.get(rater)})
        for qid, answer in answers.items():
            for rater, value in answer["ratings"].items():
                ratings.append({"study": study["id"], "item": it["id"], "rater": rater, "question": qid,
                                "value": value, "shown": [], "at": at.get(rater)})
    return items, ratings


def export_study(study: dict[str, Any], result: dict[str, Any], out: str | os.PathLike, *, license: str,
                 repo_id: str | None = None) -> Path:
    """Write the study, its sample and the merged ratings (``result`` of
    :func:`~t2ireason.study.agreement.compute_agreement`) as a Hub dataset folder ``out``; publish it with
    :func:`t2ireason.publish.publish`. The license and ``repo_id`` are checked by their form first
    (:mod:`t2ireason.hub_ids`): nothing is written for a placeholder."""
    import datasets

    license = check_license(license)
    if repo_id is not None:
        check_repo_id(repo_id)
    out = check_new_folder(out)
    created = not out.exists()
    items_features, ratings_features = _features()
    items, ratings = _records(study, result)
    try:
        for config, features, records in (("items", items_features, items), ("ratings", ratings_features, ratings)):
            file = out / "data" / config / f"{study['id']}.parquet"
            file.parent.mkdir(parents=True, exist_ok=True)
            ds = datasets.Dataset.from_list(records, features=features)
            ds = datasets.Dataset(datasets.table.embed_table_storage(ds.data.table))  # the images travel with the rows
            ds.to_parquet(str(file))
        atomic_write_json(out / STUDY_FILE, {k: v for k, v in study.items() if k not in ("folder", "key_file")})
        atomic_write_json(out / "agreement.json", jsonable({k: v for k, v in result.items() if k != "tables"}))
        _write_card(out, study, result, {"items": items_features, "ratings": ratings_features},
                    {"items": len(items), "ratings": len(ratings)}, license=license, repo_id=repo_id)
    except BaseException:
        if created:  # no half-written folder left behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    return out


def _write_card(out: Path, study: dict[str, Any], result: dict[str, Any], features: dict[str, Any],
                counts: dict[str, int], *, license: str, repo_id: str | None) -> None:
    import datasets
    from huggingface_hub import DatasetCard, DatasetCardData

    from ..build import SPLIT, describe_features, render_template, size_category
    from ..report.tables import to_markdown

    data = DatasetCardData(license=license, task_categories=["text-to-image"],
                           size_categories=[size_category(counts["ratings"])],
                           tags=["t2i-reason", "human-ratings", study["benchmark"]],
                           pretty_name=f"t2i-reason human study: {study['title']}")
    data.configs = [{"config_name": c, "data_files": [{"split": SPLIT, "path": f"data/{c}/*.parquet"}]}
                    for c in features]
    datasets.info.DatasetInfosDict({c: datasets.DatasetInfo(features=f) for c, f in features.items()}
                                   ).to_dataset_card_data(data)
    text = render_template("study_card.md.j2", card_data=data.to_yaml(), repo_id=repo_id or "<namespace>/<name>",
                           study=study, counts=counts, split=SPLIT, tables=to_markdown(result["tables"]),
                           problems=len(result["problems"]),
                           item_fields=describe_features(features["items"], ITEM_FIELD_DOCS),
                           rating_fields=describe_features(features["ratings"], RATING_FIELD_DOCS))
    DatasetCard(text)  # the Hub's own parser must accept it
    (out / "README.md").write_text(text, encoding="utf-8")
