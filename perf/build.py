"""How long R2I-Bench takes to read, build, score (judge aside) and aggregate at full size.

Writes a synthetic release of the official size in the official layout and file names (2,968
prompts in 31 prompt files over 7 category folders, 17,191 question rows of which 593 are in
``mathematical_function_eval.csv`` without their prompts file, ``functional_mixing`` without
questions plus 5 more prompts, a header-only ``concept_mixing_eval.csv`` whose header names other
columns, a note column, column orders varying between files, inconsistent Category cells, cells
with leading and trailing whitespace, a repeated question id, weights from 0 to 50) in a temporary
folder, then times what users run:

- ``r2i_read_seconds``: ``BENCHMARK.read_release`` of the whole release;
- ``r2i_build_seconds``: ``t2ireason.build.build_dataset`` (release -> Parquet + card + report);
- ``r2i_score_seconds``: ``BENCHMARK.score`` of every scorable instance, each with its own image
  read from its own PNG file (as ``t2ireason evaluate`` reads a run's images), with a scripted
  judge that answers at once and no response cache: template rendering, image reading, parsing;
- ``r2i_score_cached_cold_seconds`` and ``r2i_score_cached_warm_seconds``: the same through the
  response cache (``CachedJudge`` on an SQLite file), first empty then holding every reply: what a
  first run and a resumed or repeated run cost around the judge;
- ``r2i_aggregate_seconds``: Table 3 and Table 14 (bootstrap CIs) from those results.

Prints ``key=value`` lines; exits non-zero when a step misses its target (:data:`TARGETS`: seconds,
not minutes, on 2 CPU cores).

    python perf/build.py [--prompts 2968]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: the release's files: category folder -> subcategories (file names as the official code builds them)
SUBCATEGORIES = {
    "commonsense": ["affordance", "attribute", "color", "emotion_intention_commonsense",
                    "social_cultural_knowledge_object", "social_cultural_knowledge_scene", "temporal_understanding"],
    "compositional": ["creative_compositional", "inferential_spatial", "prescriptive_spatial"],
    "concept_mixing": ["functional_mixing", "literal_mixing"],
    "logical": ["abductive", "categorical", "conjunctive", "deductive", "disjunctive", "hypothetical",
                "sufficient_conditional"],
    "numerical": ["approximate_number_generation", "conceptual_quantitative", "exact_number_generation"],
    "mathematical": ["combinatorial", "cryptographic_encoding", "geometrical_transformations",
                     "mathematical_function", "number_theory", "set_theory", "spatial_reasoning",
                     "vector_matrix_visualization"],
    "causal": ["cause_to_effect", "effect_to_cause"],
}
PROMPT_HEADER = ["Prompt", "Reference Caption", "Assessment Point", "Category", "Subcategory", "id"]
EVAL_HEADER = ["source_id", "evaluation_criteria", "id", "question", "weight"]
FULL = {"prompts": 2968, "question_rows": 17191, "orphans": 593, "functional_mixing": 80, "also_without": 5}
#: the most each step may take at full size on 2 CPU cores, in seconds
TARGETS = {"r2i_read_seconds": 10, "r2i_build_seconds": 30, "r2i_score_seconds": 60,
           "r2i_score_cached_cold_seconds": 90, "r2i_score_cached_warm_seconds": 60, "r2i_aggregate_seconds": 30}


def _write(path: Path, header: list[str], rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows([r[h] for h in header] for r in rows)


def write_release(root: Path, n_prompts: int = FULL["prompts"], seed: int = 0) -> dict[str, int]:
    """Write a synthetic release scaled to ``n_prompts``; returns the counts a reader must find."""
    rng = np.random.default_rng(seed)
    scale = n_prompts / FULL["prompts"]
    files = [(c, s) for c, subs in SUBCATEGORIES.items() for s in subs if s != "mathematical_function"]
    per_file = np.full(len(files), n_prompts // len(files))
    per_file[: n_prompts % len(files)] += 1
    n_orphans = round(FULL["orphans"] * scale)
    n_attached = round((FULL["question_rows"] - FULL["orphans"]) * scale)
    fm = files.index(("concept_mixing", "functional_mixing"))
    n_fm = min(round(FULL["functional_mixing"] * scale), int(per_file[fm]))
    per_file[fm], spare = n_fm, int(per_file[fm]) - n_fm
    per_file[0] += spare  # keep the total
    data = root / "data"
    with_questions: list[tuple[str, str, int]] = []
    without = n_fm
    for i, ((cat, sub), n) in enumerate(zip(files, per_file)):
        header = PROMPT_HEADER[i % 6:] + PROMPT_HEADER[: i % 6]  # the column order varies between files
        rows = []
        for k in range(int(n)):
            sid = 1000 * i + k
            words = sub.replace("_", " ").title().split()
            cell = (" ".join(reversed(words)) if k % 53 == 0 else " ".join(words)) if k % 37 else files[(i + 1) % len(files)][1]
            rows.append({"Prompt": f"Prompt {sid} about {sub}, with some words to read." + (" " if k % 41 == 0 else ""),
                         "Reference Caption": f"The correct image for prompt {sid}.",
                         "Assessment Point": f"{sub} reasoning", "Category": cat.title() if k % 2 else cat,
                         "Subcategory": cell, "id": str(sid)})
            if sub != "functional_mixing":
                with_questions.append((cat, sub, sid))
        _write(data / "prompts" / cat / f"{cat}_{sub}.csv", header, rows)
    for j in range(min(FULL["also_without"], len(with_questions) - 1)):  # 5 more prompts without questions
        with_questions.pop(len(with_questions) // 2 - 7 * j)
        without += 1

    n = len(with_questions)
    counts = rng.multinomial(n_attached - 3 * n, np.full(n, 1 / n)) + 3
    by_file: dict[tuple[str, str], list[dict]] = {}
    weights = rng.integers(1, 11, int(counts.sum())).astype(float)
    weights[[3, 50, 400]] = [0.0, 50.0, 7.5]  # the release's odd weights
    w = iter(weights)
    for (cat, sub, sid), m in zip(with_questions, counts):
        rows = by_file.setdefault((cat, sub), [])
        for q in range(1, int(m) + 1):
            qid = q - 1 if (sid % 97 == 0 and q == 3) else q  # a question id repeating within an instance
            rows.append({"source_id": str(sid), "id": str(qid), "question": f"Does image {sid} show point {q}?",
                         "evaluation_criteria": "  1: fully; 0.5: partly; 0: not at all " if q == 2 else
                         "1: fully; 0.5: partly; 0: not at all", "weight": f"{next(w):g}",
                         "note": "checked" if q == 1 else ""})
    by_file[("mathematical", "mathematical_function")] = [
        {"source_id": str(90000 + q // 6), "id": str(q % 6 + 1), "question": "Is the function plotted?",
         "evaluation_criteria": "1: yes; 0.5: partly; 0: no", "weight": "8", "note": ""} for q in range(n_orphans)]
    for i, ((cat, sub), rows) in enumerate(sorted(by_file.items())):
        header = EVAL_HEADER[i % 5:] + EVAL_HEADER[: i % 5] + (["note"] if sub == "color" else [])
        _write(data / "evaluation" / cat / f"{sub}_eval.csv", header, rows)
    _write(data / "evaluation" / "concept_mixing" / "concept_mixing_eval.csv", PROMPT_HEADER, [])
    return {"prompts": n_prompts, "question_rows": n_attached + n_orphans, "attached": n_attached,
            "orphans": n_orphans, "without_questions": without}


def write_images(rows: list[dict], folder: Path) -> list[str]:
    """One distinct 256 px PNG per row, where ``t2ireason generate`` would put it."""
    from PIL import Image

    from t2ireason.benchmarks.r2i_bench import BENCHMARK

    paths = []
    for i, row in enumerate(rows):
        path = folder / BENCHMARK.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        pixels = np.zeros((256, 256, 3), np.uint8)
        pixels[:, :, 0] = np.arange(256, dtype=np.uint8)[None, :]
        pixels[:, :, 1] = (i * 7) % 256
        pixels[(i % 200):(i % 200) + 40, 30:90, 2] = 255  # each image differs from every other
        Image.fromarray(pixels).save(path)
        paths.append(str(path))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--prompts", type=int, default=FULL["prompts"])
    args = parser.parse_args(argv)

    from t2ireason.benchmarks.r2i_bench import BENCHMARK
    from t2ireason.build import build_dataset
    from t2ireason.judges.base import Sampling
    from t2ireason.judges.cache import CachedJudge
    from t2ireason.judges.scripted import ScriptedJudge

    figures: dict[str, float] = {}

    def timed(name: str, fn):
        t0 = time.perf_counter()
        out = fn()
        figures[name] = time.perf_counter() - t0
        print(f"{name}={figures[name]:.3f}", flush=True)
        return out

    with tempfile.TemporaryDirectory(prefix="r2i-perf-") as tmp:
        root = Path(tmp) / "R2I-Bench"
        expected = timed("r2i_write_seconds", lambda: write_release(root, args.prompts))
        release = timed("r2i_read_seconds", lambda: BENCHMARK.read_release(root))
        counts = release.counts["all"]
        assert counts["rows"] == expected["prompts"] and counts["questions"] == expected["attached"], counts
        assert counts["question_rows"] == expected["question_rows"], counts
        assert len(release.quarantine) == expected["orphans"]
        print(f"r2i_rows={counts['rows']}")
        print(f"r2i_question_rows={counts['question_rows']}")
        print(f"r2i_questions_attached={counts['questions']}")
        print(f"r2i_quarantined={len(release.quarantine)}")
        print(f"r2i_prompts_without_questions={counts['prompts_without_questions']}")
        print(f"r2i_anomalies={len(release.anomalies)}")
        timed("r2i_build_seconds", lambda: build_dataset(BENCHMARK, root, Path(tmp) / "hub", license="other"))

        rows = [r for r in release.configs["all"] if r["has_questions"]]
        images = timed("r2i_write_images_seconds", lambda: write_images(rows, Path(tmp) / "images"))

        def reply(request):  # 0, 0.5 or 1 by a fixed pattern, so the scores spread as real ones do
            text = request.messages[0].text
            keys = re.findall(r"^Question (\S+):", text, re.M)
            return "```json\n{" + ", ".join(f'"{k}": {(len(text) + int(k)) % 3 / 2}' for k in keys) + "}\n```"

        def judge():  # greedy, as a cached judge must be (sampled replies are not cached by default)
            return ScriptedJudge(reply, sampling=Sampling(temperature=0.0))

        BENCHMARK.score(rows[:20], images[:20], judge())  # templates compiled, imports done: steady state
        results = timed("r2i_score_seconds", lambda: BENCHMARK.score(rows, images, judge()))
        assert all(r.score is not None for r in results) and len({r.score for r in results}) > 10
        cache = Path(tmp) / "judge_cache.sqlite"
        cold = timed("r2i_score_cached_cold_seconds", lambda: BENCHMARK.score(rows, images, CachedJudge(judge(), cache)))
        warm_judge = CachedJudge(judge(), cache)
        warm = timed("r2i_score_cached_warm_seconds", lambda: BENCHMARK.score(rows, images, warm_judge))
        assert warm_judge.hits == len(rows) and [r.score for r in warm] == [r.score for r in cold] == [
            r.score for r in results]
        timed("r2i_aggregate_seconds", lambda: BENCHMARK.aggregate(results))
        print(f"r2i_score_ms_per_image={1000 * figures['r2i_score_seconds'] / len(rows):.2f}")

    missed = [f"{k}={figures[k]:.1f} (target < {t})" for k, t in TARGETS.items() if figures.get(k, 0) > t]
    if missed:
        print("missed: " + "; ".join(missed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
