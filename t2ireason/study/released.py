"""Released human ratings as studies: TIFA160's Likert ratings and GenAI-Bench's, read as the authors release them,
written as a study that :func:`t2ireason.study.ratings.read_ratings` reads (a key and one ratings file per rater),
and correlated with any metric's per-image scores as MT2IE's Tables 1 and 2 lay them out (seed 002, section 4).

The formats (``FORMATS``), each read exactly as released:

- ``tifa160``: DSG's ``dsg/data/tifa160-likert-anns.csv`` (github.com/j-min/DSG; the ratings MT2IE's Tables 1-2 use:
  "images and human ratings from prior work (Cho et al., 2024)"): one line per rating, ``dsg_prompt_split, t2i_model,
  item_id, source_id, worker_id, question, answer`` (answer 1-5); an image is (t2i_model, item_id), its raters the
  workers. Images: ``<images>/<t2i_model>/<item_id>.<any extension>``.
- ``tifa-v1``: TIFA's ``human_annotations/human_annotations.json`` (github.com/Yushi-Hu/tifa): an object
  ``<text_id>_<model>: {text_id, image_path, text, human_scores: [1-5, ...], human_avg}``. The release names no
  rater: the n-th score of each image is rater ``rater<n>``. Images: ``<images>/<image_path>``.
- ``genai-bench``: GenAI-Bench's ``genai_image.json`` (the 527-prompt image set of the VQAScore paper, as
  t2v_metrics' ``GenAIBench_Image`` reads it): ``<prompt_idx>: {prompt, models: {<model>: [1-5, ...]}, ...}``; raters
  by position as above. Images: ``<images>/<model>/<prompt_idx>.jpeg``.

An item is one image, ``<model>/<item>`` by the release's ids; its human figure is the mean of its ratings (as DSG's
``compute_correlation`` and t2v_metrics average them). Scores to correlate (``read_scores``): a JSON object
``{"<model>/<item>": score}``, a CSV ``t2i_model,item_id,score``, or the VQA answers DSG releases for TIFA160
(``vqa_answers_release/<vqa model>_{dsg,tifa,vq2a}.csv``: Table 1's DSG, TIFA and VQ²A rows), scored as the authors'
``tifa160_correlation.py`` scores them (:func:`vqa_answer_scores`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..files import atomic_write_json, atomic_write_text, inside
from ..version import __version__
from .page import RATINGS_FORMAT
from .sample import FORMAT, KEY_SUFFIX, RATINGS_DIR, StudyError, file_digest

__all__ = ["FORMATS", "read_released", "write_study", "read_scores", "vqa_answer_scores", "tifa_gold", "correlate",
           "model_reference", "write_result"]

FORMATS = {
    "tifa160": "TIFA160's 1-5 Likert ratings as DSG releases them (tifa160-likert-anns.csv)",
    "tifa-v1": "TIFA v1.0's human annotations (human_annotations.json)",
    "genai-bench": "GenAI-Bench's 1-5 alignment ratings (genai_image.json)",
}
SCALE = (1, 5)
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


def _tifa160(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    items: dict[str, dict[str, Any]] = {}
    ratings: dict[str, dict[str, float]] = defaultdict(dict)
    with open(path, newline="", encoding="utf-8-sig") as f:
        for n, line in enumerate(csv.DictReader(f), 2):
            try:
                model, item, worker, answer = line["t2i_model"], line["item_id"], line["worker_id"], line["answer"]
            except KeyError as e:
                raise StudyError(f"{path}, line {n}: not a TIFA160 Likert line (no column {e})") from None
            key = f"{model}/{item}"
            items.setdefault(key, {"model": model, "item": item, "source_id": line.get("source_id"), "prompt": None})
            ratings[key][worker] = _rating(answer, path, f"line {n}")
    return items, ratings


def _rating(value: Any, path: Path, where: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise StudyError(f"{path}, {where}: rating {value!r} is no number") from None
    if not v.is_integer() or not SCALE[0] <= v <= SCALE[1]:
        raise StudyError(f"{path}, {where}: rating {value!r} is off the {SCALE[0]}-{SCALE[1]} scale")
    return v


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as e:
        raise StudyError(f"{path}: not valid JSON ({e})") from None


def _tifa_v1(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    items, ratings = {}, {}
    for name, rec in _load_json(path).items():
        if not isinstance(rec, dict) or "human_scores" not in rec or "text_id" not in rec:
            raise StudyError(f"{path}: {name!r} is not a TIFA human annotation (text_id, human_scores)")
        model = name[len(rec["text_id"]) + 1:] if name.startswith(f"{rec['text_id']}_") else name
        key = f"{model}/{rec['text_id']}"
        items[key] = {"model": model, "item": rec["text_id"], "prompt": rec.get("text"), "image": rec.get("image_path")}
        ratings[key] = {f"rater{i}": _rating(v, path, name) for i, v in enumerate(rec["human_scores"], 1)}
    return items, ratings


def _genai_bench(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    items, ratings = {}, {}
    for idx, rec in _load_json(path).items():
        if not isinstance(rec, dict) or not isinstance(rec.get("models"), dict):
            raise StudyError(f"{path}: {idx!r} is not a GenAI-Bench record (prompt, models)")
        for model, scores in rec["models"].items():
            key = f"{model}/{idx}"
            items[key] = {"model": model, "item": str(idx), "prompt": rec.get("prompt"),
                          "image": f"{model}/{idx}.jpeg"}
            ratings[key] = {f"rater{i}": _rating(v, path, f"{idx}/{model}") for i, v in enumerate(scores, 1)}
    return items, ratings


_READERS = {"tifa160": _tifa160, "tifa-v1": _tifa_v1, "genai-bench": _genai_bench}


def read_released(fmt: str, files: Sequence[str | os.PathLike]) -> tuple[dict[str, dict[str, Any]],
                                                                         dict[str, dict[str, float]]]:
    """``(items, ratings)`` of a released rating set: item ``<model>/<item>`` -> what the release says of it, and ->
    rater -> rating. Several files are one set (an item rated in two files keeps every rater's rating)."""
    if fmt not in _READERS:
        raise StudyError(f"unknown released ratings format {fmt!r}; known: {', '.join(FORMATS)}")
    items: dict[str, dict[str, Any]] = {}
    ratings: dict[str, dict[str, float]] = defaultdict(dict)
    for f in map(Path, files):
        if not f.is_file():
            raise StudyError(f"released ratings not found: {f}")
        more, rated = _READERS[fmt](f)
        for key, it in more.items():
            items.setdefault(key, it)
            ratings[key].update(rated[key])
    if not items:
        raise StudyError(f"no ratings in {', '.join(map(str, files))}")
    return items, dict(ratings)


def _image(images: Path | None, fmt: str, it: dict[str, Any]) -> Path | None:
    if images is None:
        return None
    if it.get("image"):
        p = inside(images, it["image"])
        return p if p.is_file() else None
    for suffix in _IMAGE_SUFFIXES:
        p = inside(images, it["model"], it["item"] + suffix)
        if p.is_file():
            return p
    return None


def write_study(fmt: str, files: Sequence[str | os.PathLike], out: str | os.PathLike, *,
                images: str | os.PathLike | None = None) -> dict[str, Any]:
    """The released ratings as a study: the key ``<out>.key.json`` (kind ``scale`` on 1-5, one item per image named
    by the release's ids, each with its released image where ``images`` holds it) and ``<out>/ratings/<rater>.json``,
    one file per rater as the rating page exports them. Returns the study."""
    items, ratings = read_released(fmt, files)
    out = Path(out)
    folder = Path(images) if images else None
    raters = sorted({r for by in ratings.values() for r in by})
    digest = hashlib.sha256(json.dumps([fmt, sorted((k, sorted(v.items())) for k, v in ratings.items())])
                            .encode()).hexdigest()[:12]
    study_items = []
    for key in sorted(items):
        it, path = items[key], _image(folder, fmt, items[key])
        study_items.append({"id": key, "group": "all", "prompt": it.get("prompt"), "released": it,
                            "images": [{"run": it["model"], "key": it["item"],
                                        "path": None if path is None else str(path.resolve()),
                                        "sha256": None if path is None else file_digest(path)}]})
    models = sorted({it["model"] for it in items.values()})
    study = {"format": FORMAT, "id": f"{fmt}-{digest}", "title": f"{FORMATS[fmt]}, as released", "kind": "scale",
             "benchmark": fmt, "released": {"format": fmt, "files": [str(Path(f).resolve()) for f in files],
                                            "images": None if folder is None else str(folder.resolve())},
             "protocol": {"scale": list(SCALE), "question": "How consistent is the image with the text description?"},
             "groups": {"all": FORMATS[fmt].split(" as ")[0].split(" (")[0]}, "items": study_items,
             "raters": raters, "raters_per_item": max(len(v) for v in ratings.values()),
             "queues": {r: [{"item": k} for k in sorted(ratings) if r in ratings[k]] for r in raters},
             "runs": [{"name": m} for m in models], "t2ireason_version": __version__}
    (out / RATINGS_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write_json(out.parent / f"{out.name}{KEY_SUFFIX}", study)
    for r in raters:
        atomic_write_json(out / RATINGS_DIR / f"{r}.json",
                          {"format": RATINGS_FORMAT, "study": study["id"], "rater": r, "exported": None,
                           "answers": {k: {"value": by[r]} for k, by in sorted(ratings.items()) if r in by}})
    return study


def model_reference(study: dict[str, Any], merged: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each model's mean human rating over its rated images: a reference ranking (MT2IE's ``--reference`` reads the
    JSON object)."""
    by: dict[str, list[float]] = defaultdict(list)
    for it in study["items"]:
        if it["id"] in merged:
            by[it["images"][0]["run"]].append(merged[it["id"]]["human"])
    return {m: float(np.mean(v)) for m, v in sorted(by.items(), key=lambda kv: -float(np.mean(kv[1])))}


def vqa_answer_scores(path: str | os.PathLike, rule: str = "official",
                      gold: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, float]:
    """Each image's score from the VQA answers DSG releases for TIFA160 (``vqa_answers_release/<vqa>_<qg>.csv``:
    ``t2i_model, item_id, question, answer``, with ``question_id, dependency_id`` in the DSG files), ``<t2i_model>/
    <item_id>`` -> the share of its questions answered right, as the authors' ``tifa160_correlation.py`` scores them:
    the right answer is "yes" (an empty answer fails), or, for a TIFA question with other choices, TIFA's own answer
    (``gold``: :func:`tifa_gold`, matched by the question's place within its item, as their ``load_vqa_output``
    matches it); where the file has dependencies (DSG), a question whose parent failed fails under DSG's ``rule``
    (:func:`t2ireason.baselines.dsg.question_scores`; cells read as :func:`~t2ireason.baselines.dsg.clean_parents`
    reads them)."""
    from ..baselines.dsg import clean_parents, question_scores

    questions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    said: dict[str, dict[int, bool]] = defaultdict(dict)
    with open(path, newline="", encoding="utf-8-sig") as f:
        for n, line in enumerate(csv.DictReader(f), 2):
            try:
                model, item, answer = line["t2i_model"], line["item_id"], line["answer"] or ""
                key = f"{model}/{item}"
                place = len(questions[key])
                qid = int(line["question_id"]) if line.get("question_id") else place + 1
                deps = clean_parents(line["dependency_id"]) if line.get("dependency_id") else []
            except (KeyError, ValueError) as e:
                raise StudyError(f"{path}, line {n}: not a VQA answer line ({type(e).__name__}: {e})") from None
            right = "yes"
            if gold is not None and line.get("qg_model") == "tifa":
                qs = gold.get(item) or []
                if place >= len(qs):
                    raise StudyError(f"{path}, line {n}: TIFA's questions of {item} have no question {place + 1}")
                if qs[place]["choices"] != ["yes", "no"]:
                    right = qs[place]["answer"]
            questions[key].append({"id": qid, "dependencies": deps})
            said[key][qid] = answer == right
    out: dict[str, float] = {}
    for key, qs in questions.items():
        scores, _ = question_scores(qs, said[key], rule)
        out[key] = sum(scores[q["id"]] for q in qs) / len(qs)
    return out


def tifa_gold(path: str | os.PathLike, source_ids: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """TIFA's questions (``tifa_v1.0/tifa_v1.0_question_answers.json``: ``{id, question, choices, answer}`` each, ``id``
    the prompt's source id) by TIFA160 item, in file order; ``source_ids``: item id -> source id (the Likert file's)."""
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    data = _load_json(Path(path))
    if not isinstance(data, list):
        raise StudyError(f"{path}: expected TIFA's list of questions")
    for q in data:
        by_source[q["id"]].append(q)
    return {item: by_source[src] for item, src in source_ids.items() if src in by_source}


#: how a kind of scores counts a rated image it has no score for: answer files as the authors' tifa160_correlation.py
#: counts an item without answers (tifa160_134 has no DSG question), a failure, 0; other scores leave it out
ANSWERS = ("vqa-answers", "dsg-answers")


def read_scores(spec: str, gold: dict[str, list[dict[str, Any]]] | None = None) -> tuple[dict[str, float | None],
                                                                                      float | None]:
    """Per-image scores and what a rated image without one counts as (None: left out): ``vqa-answers:<file>``
    (DSG's released answers, :func:`vqa_answer_scores`; ``dsg-answers:`` alike; a missing image 0, as the authors
    count it), a JSON object ``{"<model>/<item>": score}``, or a CSV with ``t2i_model, item_id, score``."""
    kind, sep, rest = spec.partition(":")
    if sep and kind in ANSWERS:
        if not Path(rest).is_file():
            raise StudyError(f"answers not found: {rest}")
        return vqa_answer_scores(rest, gold=gold), 0.0
    path = Path(spec)
    if not path.is_file():
        raise StudyError(f"scores not found: {spec} (a JSON or CSV file, or vqa-answers:<file>)")
    if path.suffix.lower() == ".json":
        data = _load_json(path)
        if not isinstance(data, dict):
            raise StudyError(f"{path}: expected an object '<model>/<item>' -> score")
        return {str(k): None if v is None else float(v) for k, v in data.items()}, None
    with open(path, newline="", encoding="utf-8-sig") as f:
        try:
            return {f"{r['t2i_model']}/{r['item_id']}": float(r["score"]) if r["score"] not in ("", None) else None
                    for r in csv.DictReader(f)}, None
        except (KeyError, ValueError) as e:
            raise StudyError(f"{path}: not a scores CSV with t2i_model, item_id, score ({e})") from None


def correlate(study: dict[str, Any], ratings_dir: str | os.PathLike,
              scores: dict[str, tuple[dict[str, float | None], float | None]]) -> dict[str, Any]:
    """MT2IE's Tables 1 and 2 for the study: each scores' Spearman's ρ and Kendall's τ-b (with 95% bootstrap
    intervals) against the mean rating of every rated image they score (``scores``: label -> :func:`read_scores`'
    pair), the raters' agreement beside; the ratings read back through
    :func:`~t2ireason.study.ratings.read_ratings`, as ``agreement`` reads any study's."""
    import warnings

    from scipy.stats import ConstantInputWarning

    from ..meta_eval import human_correlation
    from ..stats import paired_bootstrap
    from .agreement import _raters
    from .layouts import mt2ie_table, raters_table
    from .ratings import merge, read_ratings

    read = read_ratings(study, [ratings_dir])
    merged = merge(study, read)
    evaluations, rows, problems = {}, [], list(read.problems)
    for label, (by_item, missing) in scores.items():
        keys = [it["id"] for it in study["items"] if it["id"] in merged]
        unscored = [k for k in keys if by_item.get(k) is None]
        extra = sorted(set(by_item) - set(merged))
        if unscored and missing is not None:  # an item without answers, as the authors count it
            by_item = {**by_item, **dict.fromkeys(unscored, missing)}
            problems.append(f"{label}: {len(unscored)} rated image(s) have no answer (e.g. {unscored[0]}); counted "
                            f"{missing:g}, as the authors' tifa160_correlation.py counts them")
        elif unscored:
            problems.append(f"{label}: {len(unscored)} rated image(s) have no score (e.g. {unscored[0]}); left out")
        if extra:
            problems.append(f"{label}: {len(extra)} scored image(s) are not rated (e.g. {extra[0]}); left out")
        x = np.asarray([math.nan if by_item.get(k) is None else by_item[k] for k in keys], dtype=float)
        y = np.asarray([merged[k]["human"] for k in keys], dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantInputWarning)
            figures = human_correlation(x, y)
            keep = ~np.isnan(x)
            for stat in ("kendall_tau", "spearman_rho"):
                found = paired_bootstrap(x[keep], y[keep], stat)
                figures[f"{stat}_ci"] = [found.low, found.high]
        evaluations[label] = figures
        rows.append({"evaluation": label, "label": label})
    result = {"study": study["id"], "evaluations": evaluations, "rows": rows, "problems": problems,
              "raters": _raters(study, read, merged), "merged": merged}
    result["tables"] = [mt2ie_table(study, result, rows), raters_table(study, result)] if rows else \
        [raters_table(study, result)]
    result["reference"] = model_reference(study, merged)
    return result


def write_result(result: dict[str, Any], out: str | os.PathLike) -> Path:
    """``<out>/agreement.json``, ``tables.md`` and ``reference.json`` (each model's mean rating, for ``--reference``)."""
    import dataclasses

    from ..report.tables import to_markdown

    out = Path(out)
    atomic_write_json(out / "agreement.json", {**result, "tables": [dataclasses.asdict(t) for t in result["tables"]]})
    atomic_write_text(out / "tables.md", to_markdown(result["tables"]))
    atomic_write_json(out / "reference.json", result["reference"])
    return out
