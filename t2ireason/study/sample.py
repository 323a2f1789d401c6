"""A rating study drawn from runs: the sample, each image's raters and the folder the raters open.

A study folder holds everything the raters need and nothing else::

    <study>/
      study.json      the study: its id, kind, the paper's protocol, the seed, the sample drawn, every
                      item (prompt, what the rater reads, its images with their SHA-256) and each rater's
                      queue (the items in the order shown, for A/B/tie which run is on the left)
      index.html      the rating page (opens from file://, no server, no network)
      images/         a copy of every image rated, named after its item
      ratings/        where the raters' exported files go (``t2ireason agreement`` reads it)

The sample is drawn as the paper drew it: per group (dimension, track, category), ``per_group``
prompts at random among those every run has an image for, with a generator seeded by ``seed`` alone;
each run's image of a drawn prompt is an item (A/B/tie: one item holds both runs' images). Each item is
given to ``raters_per_item`` raters, the least loaded first (ties broken at random, seeded), so that
the raters share the work evenly; each rater sees their items in an order of their own.

The study's id is a digest of what it asks (runs, items, images, queues): drawing the same study again
gives the same id, so the raters' saved answers still belong to it; a folder holding another study is
never overwritten.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..files import atomic_write_json, atomic_write_text, inside
from ..version import __version__
from .protocols import (
    KINDS,
    criterion_blocks,
    group_of,
    group_title,
    protocol,
    question_criterion,
    question_levels,
)

__all__ = ["make_study", "load_study", "StudyError", "STUDY_FILE", "PAGE_FILE", "RATINGS_DIR", "finished_evaluations",
           "open_run", "file_digest", "judge_results"]

STUDY_FILE = "study.json"
PAGE_FILE = "index.html"
RATINGS_DIR = "ratings"
FORMAT = "t2ireason-study"


class StudyError(ValueError):
    """A study cannot be made or read as asked; the message says what to do."""


def open_run(path: str | os.PathLike) -> Any:
    """The run in a run folder (:class:`t2ireason.runs.Run`)."""
    from ..runs import Run

    return Run.open(path)


def finished_evaluations(run: Any) -> list[str]:
    """The run's evaluations that have their scores (finished)."""
    from ..runs import RunError

    names = []
    for name in run.evaluations():
        try:
            run.scores(name)
        except RunError:
            continue
        names.append(name)
    return names


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _images(run: Any) -> dict[str, tuple[dict[str, Any], str, Path]]:
    """Each prompt's first image: row id -> (row, key, path)."""
    out: dict[str, tuple[dict[str, Any], str, Path]] = {}
    for key, row, path in run.image_items():
        out.setdefault(run.bench.row_id(row), (row, key, path))
    return out


def judge_results(run: Any, evaluation: str) -> dict[str, Any]:
    """The evaluation's scored images by image key, read from its ``results.jsonl`` as the run reads it
    (the last line of a key wins) without touching the file, and whether or not every image of the run
    is still there (one gone is one item left out, not the whole study)."""
    from ..results import ImageResult
    from ..runs import RESULTS_FILE, _read_results

    run.scores(evaluation)  # finished, or a clear error
    done, _ = _read_results(run.evaluation_dir(evaluation) / RESULTS_FILE, repair=False)  # a torn last line said
    return {key: ImageResult.from_dict(record) for key, record in done.items()}


def _evaluation_for_questions(runs: Sequence[Any], evaluation: str | None) -> str:
    common = [n for n in finished_evaluations(runs[0]) if all(n in finished_evaluations(r) for r in runs[1:])]
    if evaluation is not None:
        if evaluation not in common:
            raise StudyError(f"evaluation {evaluation!r} is not finished in every run (finished in all: "
                             f"{', '.join(common) or 'none'}); the judge's questions come from it")
        return evaluation
    if len(common) != 1:
        raise StudyError("a questions study rates the questions one evaluation asked: name it with --evaluation ("
                         f"finished in every run: {', '.join(common) or 'none; run the evaluate step first'})")
    return common[0]


def _assign(items: list[dict[str, Any]], raters: list[str], k: int, rng: random.Random) -> None:
    """Give each item to ``k`` raters, the least loaded first, ties broken at random."""
    load = dict.fromkeys(raters, 0)
    for i in rng.sample(range(len(items)), len(items)):
        tiebreak = {r: rng.random() for r in raters}
        chosen = sorted(raters, key=lambda r: (load[r], tiebreak[r]))[:k]
        for r in chosen:
            load[r] += 1
        items[i]["raters"] = sorted(chosen, key=raters.index)


def _rater_names(raters: int | Sequence[str]) -> list[str]:
    if isinstance(raters, int):
        if raters < 1:
            raise StudyError(f"a study needs at least one rater, got {raters}")
        return [f"rater{i}" for i in range(1, raters + 1)]
    names = [str(r).strip() for r in raters]
    bad = [n for n in names if not n or not all(c.isalnum() or c in "-_." for c in n)]
    if bad or len(set(names)) != len(names):
        raise StudyError(f"rater names must be distinct words of letters, digits, '-', '_' or '.'; got {list(raters)}")
    return names


def make_study(runs: Sequence[str | os.PathLike], out: str | os.PathLike, *, kind: str | None = None,
               per_group: int | None = None, raters: int | Sequence[str] | None = None,
               raters_per_item: int | None = None, seed: int = 0, evaluation: str | None = None,
               title: str | None = None) -> dict[str, Any]:
    """Draw a rating study from ``runs`` (run folders of one benchmark) into the folder ``out``.

    ``kind``: ``"scale"``, ``"preference"`` (exactly two runs) or ``"questions"`` (the judge's questions
    of ``evaluation``); default the paper's (:data:`~t2ireason.study.protocols.PROTOCOLS`). ``raters``:
    how many (named ``rater1``...) or their names; default ``raters_per_item``, itself the paper's
    number of raters per image (3). Returns the study (as ``study.json`` holds it)."""
    opened = [open_run(r) for r in runs]
    if not opened:
        raise StudyError("name the run folder(s) whose images are rated")
    benchmarks = {r.manifest["benchmark"] for r in opened}
    if len(benchmarks) > 1:
        raise StudyError(f"the runs score different benchmarks ({', '.join(sorted(benchmarks))}): one study, one benchmark")
    names = [r.name for r in opened]
    if len(set(names)) != len(names):
        raise StudyError(f"two runs share the name {[n for n in names if names.count(n) > 1][0]!r}; rename one "
                         "(the name in its run.json)")
    bench = opened[0].manifest["benchmark"]
    proto = protocol(bench)
    kind = kind or proto.kind
    if kind not in KINDS:
        raise StudyError(f"unknown kind of study {kind!r}; one of {', '.join(KINDS)}")
    if kind == "preference" and len(opened) != 2:
        raise StudyError(f"an A/B/tie study compares two runs' images of each prompt; got {len(opened)} run(s)")
    if kind == "scale" and proto.scale is None:
        raise StudyError(f"{bench}'s paper has no rating scale; rate the judge's questions (--kind questions) "
                         "or compare two runs (--kind preference)")
    per_group = proto.per_group if per_group is None else per_group
    raters_per_item = proto.raters_per_item if raters_per_item is None else raters_per_item
    rater_ids = _rater_names(raters_per_item if raters is None else raters)
    if per_group < 1:
        raise StudyError(f"per_group (--per-group) must be at least 1, got {per_group}")
    if raters_per_item < 1:
        raise StudyError(f"raters_per_item (--raters-per-item) must be at least 1, got {raters_per_item}")
    if raters_per_item > len(rater_ids):
        raise StudyError(f"each image goes to {raters_per_item} raters (raters_per_item, --raters-per-item; the "
                         f"paper's: {proto.raters_per_item}) "
                         f"but the study has {len(rater_ids)} (raters, --raters): give --raters "
                         f"{raters_per_item} or more, or --raters-per-item {len(rater_ids)} or fewer")
    evaluation = _evaluation_for_questions(opened, evaluation) if kind == "questions" else None
    judged = [judge_results(r, evaluation) for r in opened] if evaluation else None

    images = [_images(r) for r in opened]
    common = [rid for rid in images[0] if all(rid in imgs for imgs in images[1:])]
    groups: dict[str, list[str]] = {}
    for rid in common:
        groups.setdefault(group_of(bench, images[0][rid][0]), []).append(rid)
    rng = random.Random(seed)
    sample = {g: sorted(rng.sample(ids, min(per_group, len(ids))), key=ids.index) for g, ids in groups.items()}

    items: list[dict[str, Any]] = []
    for g, ids in sample.items():
        for rid in ids:
            row = images[0][rid][0]
            per_item = [list(range(len(opened)))] if kind == "preference" else [[j] for j in range(len(opened))]
            for which in per_item:
                item = {"id": f"i{len(items) + 1:04d}", "row": rid, "group": g, "prompt": opened[0].bench.prompt(row),
                        "criterion": criterion_blocks(bench, kind, row),
                        "images": [{"run": names[j], "key": images[j][rid][1], "source": images[j][rid][2]}
                                   for j in which]}
                if judged is not None:
                    result = judged[which[0]].get(item["images"][0]["key"])
                    item["questions"] = [] if result is None else [
                        {"id": q.id or f"q{n}", "question": q.question, "group": q.group,
                         "criterion": question_criterion(bench, row, q),
                         "levels": [list(level) for level in question_levels(bench, q)]}
                        for n, q in enumerate(result.questions, 1)]
                    if not item["questions"]:  # the judge asked nothing about it (a row without questions)
                        continue
                items.append(item)
    if not items:
        raise StudyError("no prompt has an image in every run: nothing to rate")
    _assign(items, rater_ids, raters_per_item, rng)
    queues = {}
    for r in rater_ids:
        mine = [it["id"] for it in items if r in it["raters"]]
        queues[r] = [{"item": i, **({"swap": rng.random() < 0.5} if kind == "preference" else {})}
                     for i in rng.sample(mine, len(mine))]

    sources = {}
    for it in items:  # each image's copy in the folder, named after its item (a data id never names a file)
        for n, img in enumerate(it["images"]):
            source = img.pop("source")
            img["file"] = f"images/{it['id']}-{'ab'[n]}{source.suffix.lower() or '.png'}"
            img["sha256"] = file_digest(source)
            sources[img["file"]] = source
    study = {
        "format": FORMAT, "version": 1, "id": "", "title": "", "kind": kind, "benchmark": bench,
        "protocol": {"source": proto.source if kind == proto.kind else
                     f"the judge's own questions and criteria (evaluation {evaluation})" if kind == "questions" else
                     f"an A/B/tie comparison as R2I-Bench's (seed 003, appendix B.2) of {bench} images",
                     "table": proto.table if kind == proto.kind else f"{kind} agreement",
                     "paper_sample": proto.paper_sample and kind == proto.kind,
                     "scale": list(proto.scale) if kind == "scale" else None},
        "seed": seed, "per_group": per_group, "raters_per_item": raters_per_item, "raters": rater_ids,
        "runs": [{"name": r.name, "evaluation": evaluation} for r in opened],
        "groups": {g: group_title(bench, g) for g in sample},
        "sample": sample, "prompts_in_every_run": len(common),
        "items": items, "queues": queues,
    }
    study["id"] = f"{bench}-{kind}-{_study_digest(study)}"
    study["title"] = title or (f"{bench} {kind} study of {', '.join(names)}")
    _write(study, Path(out), sources)
    return load_study(out)


def _study_digest(study: dict[str, Any]) -> str:
    """What the study asks, hashed: the same draw gives the same id (the raters' saved answers stay its)."""
    content = {k: v for k, v in study.items() if k not in ("id", "title")}
    text = json.dumps(content, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _write(study: dict[str, Any], out: Path, sources: dict[str, Path]) -> None:
    from .page import render_page

    file = out / STUDY_FILE
    if file.is_file():
        try:
            there = json.loads(file.read_text(encoding="utf-8"))
        except ValueError:
            there = {}
        if there.get("id") != study["id"]:
            raise StudyError(f"{out} holds another study ({there.get('id') or 'unreadable study.json'}); its raters "
                             "may have started: draw this one into another folder")
        study["created"] = there.get("created")
    elif out.exists() and (not out.is_dir() or any(p.name != RATINGS_DIR for p in out.iterdir())):
        raise StudyError(f"{out} exists and is not an empty folder: draw the study into a new folder")
    study["created"] = study.get("created") or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    study["t2ireason_version"] = __version__
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / RATINGS_DIR).mkdir(exist_ok=True)
    for it in study["items"]:
        for img in it["images"]:
            target = inside(out, img["file"])
            if not target.is_file() or file_digest(target) != img["sha256"]:
                shutil.copyfile(sources[img["file"]], target)
    atomic_write_json(out / STUDY_FILE, study)
    atomic_write_text(out / PAGE_FILE, render_page(study))


def load_study(folder: str | os.PathLike) -> dict[str, Any]:
    """The study of a study folder (or of its ``study.json``)."""
    path = Path(folder)
    file = path if path.is_file() else path / STUDY_FILE
    if not file.is_file():
        raise StudyError(f"{path} is not a study folder (no {STUDY_FILE}); draw one with `t2ireason rate`")
    try:
        study = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as e:
        raise StudyError(f"{file} is not valid JSON ({e})") from None
    if not isinstance(study, dict) or study.get("format") != FORMAT:
        raise StudyError(f"{file} is not a t2i-reason study")
    study["folder"] = str(file.parent)
    return study
