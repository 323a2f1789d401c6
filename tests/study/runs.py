"""Runs for the study tests: the shipped samples with a small PNG per prompt, scored by a scripted judge
whose answers vary from image to image (so that the judge's scores have an order to agree with)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from PIL import Image

from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.results import ImageResult
from t2ireason.runs import Run

EVALUATION = "scripted"


def varied_answer(schema: dict[str, Any], seed: bytes) -> Any:
    """A reply the schema allows, each choice picked by ``seed`` (a digest): scores that differ between
    images and questions, every one valid."""
    def pick(s: dict[str, Any], n: int) -> Any:
        if "enum" in s:
            return s["enum"][seed[n % len(seed)] % len(s["enum"])]
        if "anyOf" in s:
            return pick(s["anyOf"][0], n)
        kind = s.get("type")
        if kind == "object":
            return {k: pick(v, n + i) for i, (k, v) in enumerate(s.get("properties", {}).items())}
        if kind == "array":
            return [pick(s.get("items", {}), n + i) for i in range(s.get("minItems", 1))]
        if kind in ("integer", "number"):
            lo, hi = int(s.get("minimum", 0)), int(s.get("maximum", 1))
            return lo + seed[n % len(seed)] % (hi - lo + 1)
        return "scripted" if kind == "string" else 1
    return pick(schema, 0)


def scripted_judge(salt: str, model: str = "scripted") -> ScriptedJudge:
    """Replies vary with the request's text and ``salt`` (one per run: both runs' requests read alike); ``model``:
    the name the judge goes by in the evaluation's record."""
    def reply(request):
        text = salt + json.dumps([m.text for m in request.messages])
        return json.dumps(varied_answer(request.json_schema or {"type": "object"}, hashlib.sha256(text.encode()).digest()))
    return ScriptedJudge(reply, model=model)


def judged_again(run: Run, name: str, model: str) -> None:
    """Another evaluation of the benchmark's own metric, by another (scripted) judge going by ``model``."""
    run.evaluate(scripted_judge(run.name + name, model), options={"structured_output": True}, name=name, cache=False,
                 progress=False)


def metric_evaluation(run: Run, name: str, metric: str, judge_model: str) -> dict[str, float]:
    """An evaluation of another metric, written as ``t2ireason evaluate --metric`` keeps one: ``results.jsonl`` (one
    scored image a line, under its key) and ``scores.json`` recording ``"metric"``; each image's score drawn from
    its key and ``name``. Returns the scores by image key."""
    folder = run.path / "evaluations" / name
    folder.mkdir(parents=True)
    scores = {}
    with open(folder / "results.jsonl", "w") as f:
        for key, row, path in run.image_items():
            score = hashlib.sha256(f"{run.name}/{name}/{key}".encode()).digest()[0] / 255
            scores[key] = score
            result = ImageResult(id=run.bench.row_id(row), prompt=run.bench.prompt(row), score=score, image=str(path))
            f.write(json.dumps({"key": key, **result.to_dict()}) + "\n")
    (folder / "scores.json").write_text(json.dumps({
        "benchmark": run.manifest["benchmark"], "run": run.name, "evaluation": name, "metric": metric,
        "aggregate": {"mean": sum(scores.values()) / len(scores)}, "num_images": len(scores), "num_failed": 0,
        "judge": {"backend": "hf", "model": judge_model, "model_name": judge_model},
        "settings": {"metric": metric, "judge": f"hf:{judge_model}"}}))
    return scores


def scored_run(folder: Path, benchmark: str, name: str, *, limit: int | None = None) -> Run:
    """A run of ``benchmark``'s shipped sample: a PNG per prompt, scored by the scripted judge."""
    run = Run.create(folder / name, benchmark, name=name, limit=limit)
    for i, row in enumerate(run.rows()):
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (24, 24), (37 * i % 256, 60 + len(name) * 20, 150)).save(path)
    run.evaluate(scripted_judge(name), options={"structured_output": True}, name=EVALUATION, cache=False,
                 progress=False)
    return run


def judge_scores(run: Run, evaluation: str = EVALUATION) -> dict[str, float | None]:
    """Each image's score by its key (its path in the run's image folder)."""
    return {Path(r.image).relative_to(run.images_dir).as_posix(): r.score for r in run.results(evaluation)}


def study_key(folder: Path) -> dict[str, Any]:
    """The study's key: the file beside the raters' folder ``folder`` (never inside it)."""
    return json.loads((folder.parent / f"{folder.name}.key.json").read_text())


def ratings_file(study: dict, rater: str, answer, **extra) -> dict:
    """What the page exports for ``rater``: ``answer(item)`` for each item of the rater's queue."""
    items = {it["id"]: it for it in study["items"]}
    queue = study["queues"][rater]
    return {"format": "t2ireason-ratings", "version": 1, "study": study["id"], "rater": rater,
            "started": "2025-01-01T10:00:00.000Z", "exported": "2025-01-01T11:00:00.000Z", "complete": True,
            "order": [e["item"] for e in queue],
            "answers": {e["item"]: {**answer(items[e["item"]]), "at": "2025-01-01T10:30:00.000Z"} for e in queue},
            **extra}
