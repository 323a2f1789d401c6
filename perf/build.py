"""How long R2I-Bench takes to read, build, score (judge aside) and aggregate at full size.

Writes a synthetic release of the official size in the official layout (2,968 prompts in 31
prompt files over 7 category folders, 17,191 question rows of which 593 are orphans of the missing
mathematical_function prompts, functional_mixing without questions plus 5 more prompts, a
header-only concept_mixing_eval.csv, a note column, varying column orders, inconsistent Category
cells, weights from 0 to 50) in a temporary folder, then times:

- ``r2i_read_seconds``: ``BENCHMARK.read_release`` of the whole release;
- ``r2i_build_seconds``: ``t2ireason.build.build_dataset`` (release -> Parquet + card), if present;
- ``r2i_score_seconds``: ``BENCHMARK.score`` of every scorable instance with a scripted judge
  that answers at once (template rendering, image handling, parsing: the cost around the judge);
- ``r2i_aggregate_seconds``: Table 3 and Table 14 (bootstrap CIs) from those results.

Prints ``key=value`` lines.

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

#: the release's subcategory files (folder -> file stems); "function" has no prompts file
SUBCATEGORIES = {
    "commonsense": ["affordance", "attribute", "color", "emotion", "social_object", "social_scene", "temporal"],
    "compositional": ["creative", "inferential_spatial", "prescriptive_spatial"],
    "concept_mixing": ["functional_mixing", "literal_mixing"],
    "logical": ["abductive", "categorical", "conjunctive", "deductive", "disjunctive", "hypothetical",
                "sufficient_conditional"],
    "numerical": ["approximate_number", "conceptual_quantitative", "exact_number"],
    "mathematical": ["combinatorial", "cryptographic", "function", "geometric_transformation", "number_theory",
                     "set_theory", "spatial", "vector_matrix"],
    "causal": ["cause_to_effect", "effect_to_cause"],
}
PROMPT_HEADER = ["Prompt", "Reference Caption", "Assessment Point", "Category", "Subcategory", "id"]
EVAL_HEADER = ["source_id", "evaluation_criteria", "id", "question", "weight"]
FULL = {"prompts": 2968, "question_rows": 17191, "orphans": 593, "functional_mixing": 80, "also_without": 5}


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
    files = [(c, s) for c, subs in SUBCATEGORIES.items() for s in subs if s != "function"]
    per_file = np.full(len(files), n_prompts // len(files))
    per_file[: n_prompts % len(files)] += 1
    n_orphans = round(FULL["orphans"] * scale)
    n_attached = round((FULL["question_rows"] - FULL["orphans"]) * scale)
    n_fm = min(round(FULL["functional_mixing"] * scale), int(per_file[files.index(("concept_mixing", "functional_mixing"))]))
    fm = files.index(("concept_mixing", "functional_mixing"))
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
            cell = sub.replace("_", " ").title() if k % 37 else files[(i + 1) % len(files)][1]  # a few wrong labels
            rows.append({"Prompt": f"Prompt {sid} about {sub}, with some words to read.",
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
            rows.append({"source_id": str(sid), "id": str(q), "question": f"Does image {sid} show point {q}?",
                         "evaluation_criteria": "1: fully; 0.5: partly; 0: not at all", "weight": f"{next(w):g}",
                         "note": "checked" if q == 1 else ""})
    by_file[("mathematical", "function")] = [
        {"source_id": str(90000 + q // 6), "id": str(q % 6 + 1), "question": "Is the function plotted?",
         "evaluation_criteria": "1: yes; 0.5: partly; 0: no", "weight": "8", "note": ""} for q in range(n_orphans)]
    for i, ((cat, sub), rows) in enumerate(sorted(by_file.items())):
        header = EVAL_HEADER[i % 5:] + EVAL_HEADER[: i % 5] + (["note"] if sub == "color" else [])
        _write(data / "evaluation" / cat / f"{sub}_eval.csv", header, rows)
    _write(data / "evaluation" / "concept_mixing" / "concept_mixing_eval.csv", EVAL_HEADER, [])
    return {"prompts": n_prompts, "question_rows": n_attached + n_orphans, "attached": n_attached,
            "orphans": n_orphans, "without_questions": without}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=FULL["prompts"])
    args = parser.parse_args(argv)

    from PIL import Image

    from t2ireason.benchmarks.r2i_bench import BENCHMARK
    from t2ireason.judges.scripted import ScriptedJudge

    with tempfile.TemporaryDirectory(prefix="r2i-perf-") as tmp:
        root = Path(tmp) / "R2I-Bench"
        t0 = time.perf_counter()
        expected = write_release(root, args.prompts)
        print(f"r2i_write_seconds={time.perf_counter() - t0:.3f}")

        t0 = time.perf_counter()
        release = BENCHMARK.read_release(root)
        print(f"r2i_read_seconds={time.perf_counter() - t0:.3f}")
        counts = release.counts["all"]
        assert counts["rows"] == expected["prompts"] and counts["questions"] == expected["attached"], counts
        assert counts["question_rows"] == expected["question_rows"], counts
        print(f"r2i_rows={counts['rows']}")
        print(f"r2i_question_rows={counts['question_rows']}")
        print(f"r2i_questions_attached={counts['questions']}")
        print(f"r2i_prompts_without_questions={counts['prompts_without_questions']}")
        print(f"r2i_anomalies={len(release.anomalies)}")

        try:
            from t2ireason.build import build_dataset
        except ImportError:
            print("r2i_build_seconds=unavailable")
        else:
            t0 = time.perf_counter()
            build_dataset(BENCHMARK, root, Path(tmp) / "hub", license="other")
            print(f"r2i_build_seconds={time.perf_counter() - t0:.3f}")

        rows = [r for r in release.configs["all"] if r["has_questions"]]
        def reply(request):  # 0, 0.5 or 1 by a fixed pattern, so the scores spread as real ones do
            text = request.messages[0].text
            keys = re.findall(r"^Question (\S+):", text, re.M)
            return "```json\n{" + ", ".join(f'"{k}": {(len(text) + int(k)) % 3 / 2}' for k in keys) + "}\n```"

        judge = ScriptedJudge(reply)
        image = Image.new("RGB", (256, 256), "white")
        t0 = time.perf_counter()
        results = BENCHMARK.score(rows, [image] * len(rows), judge)
        print(f"r2i_score_seconds={time.perf_counter() - t0:.3f}")
        assert all(r.score is not None for r in results) and len({r.score for r in results}) > 10
        t0 = time.perf_counter()
        BENCHMARK.aggregate(results)
        print(f"r2i_aggregate_seconds={time.perf_counter() - t0:.3f}")


if __name__ == "__main__":
    sys.exit(main())
