"""MT2IE (seed 002): MLLMs as evaluator agents that write the benchmark while they run it.

MT2IE has no data release: an MLLM expands *seed prompts* into progressively
harder prompts (iterative difficulty, section 5) or adapts each next prompt to
the score of the last image (adaptive prompting, section 6), and scores every
image with VQAScore. This module holds its data:

- ``seed_prompts``: the seed prompts T0, in the paper's four topic categories
  (household scenes, people, animals, locations; section 5), "moderately
  complex (2-3 compositional concepts per prompt)". The package ships ones of
  the project's own writing (``samples/mt2ie/seed_prompts.jsonl``); users may
  bring their own in the same layout.
- ``runs``: a finished MT2IE run, one row per iteration (model, random seed,
  iteration, prompt, image, score, difficulty, judge replies...).

Release layout read by :meth:`MT2IE.read_release` (a folder)::

    seed_prompts.jsonl     {"id", "category", "prompt", "concepts": [...]} per line
    runs/*.jsonl           optional; one object per iteration with the fields of RUN_FEATURES,
                           "image" a path relative to the .jsonl file (or null for a failed draw)

The agent loop that produces ``runs`` lives in :mod:`t2ireason.mt2ie` (``run_mt2ie``,
``rank_models``); it writes rows of exactly ``RUN_FEATURES`` in this layout. The
paper's prompts are in ``t2ireason/templates/mt2ie/``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import datasets

from ..results import Cell, PaperTable
from .base import Anomaly, Benchmark, Release, ReleaseError

__all__ = ["MT2IE", "BENCHMARK", "CATEGORIES", "MODES", "SEED_FEATURES", "RUN_FEATURES", "read_jsonl"]

#: the paper's four topic categories, "that encompass COCO's captions" (seed 002, section 5)
CATEGORIES = ("household scenes", "people", "animals", "locations")
#: iterative difficulty (section 5) and adaptive prompting (section 6)
MODES = ("iterative", "adaptive")

SEED_FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "category": datasets.Value("string"),
    "prompt": datasets.Value("string"),
    "concepts": datasets.List(datasets.Value("string")),
})

RUN_FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "run_id": datasets.Value("string"),
    "model": datasets.Value("string"),
    "evaluator": datasets.Value("string"),
    "mode": datasets.Value("string"),
    "seed": datasets.Value("int64"),
    "seed_prompt_id": datasets.Value("string"),
    "category": datasets.Value("string"),
    "iteration": datasets.Value("int32"),
    "prompt": datasets.Value("string"),
    "adaptive_bin": datasets.Value("string"),
    "image": datasets.Image(),
    "image_seed": datasets.Value("int64"),
    "score": datasets.Value("float64"),
    "difficulty": datasets.Value("float64"),
    "difficulty_method": datasets.Value("string"),
    "weighted_score": datasets.Value("float64"),
    "aesthetic": datasets.Value("float64"),
    "judge_replies": datasets.List(datasets.Value("string")),
    "failure": datasets.Value("string"),
})

_RUN_REQUIRED = ("model", "mode", "seed", "seed_prompt_id", "iteration", "prompt")

CITATION = """@misc{mt2ie2025,
  title  = {Multi-Modal Language Models as Text-to-Image Model Evaluators},
  author = {Anonymous},
  note   = {Paper under double-blind review},
  year   = {2025}
}"""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file; a bad line is an error naming the file and the line."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ReleaseError(f"{path}, line {n}: not valid JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise ReleaseError(f"{path}, line {n}: expected a JSON object, got {type(row).__name__}")
        rows.append(row | {"_line": n})
    return rows


class MT2IE(Benchmark):
    name = "mt2ie"
    pretty_name = "MT2IE"
    configs = ("seed_prompts", "runs")
    metric = None  # scored on the fly by the agent with VQAScore; there is no fixed test set
    license = "apache-2.0"  # the shipped seed prompts are the project's own writing
    citation = CITATION
    description = (
        "MT2IE (Multimodal Text-to-Image Eval) uses a multimodal LLM as an evaluator agent: starting from a "
        "seed prompt, it writes progressively more difficult prompts (or adapts each prompt to the last score), "
        "has the text-to-image model draw them and scores each image for prompt consistency. Twenty generated "
        "prompts (4 seeds x 5 iterations) reproduce the model ranking of 1,600 hand-written GenAIBench prompts.")
    scoring = (
        "Each image is scored with VQAScore, P(\"Yes\" | image, 'Does this figure show \"{prompt}\"? Please answer "
        "yes or no.'), with Llava-v1.6-34b as the scorer. A model's score is the mean over the 4 seeds x 5 "
        "iterations; in adaptive mode each score is multiplied by the prompt's difficulty (Yngve depth of its "
        "parse) before averaging. Rankings are repeated over 5 random seeds and compared with Kendall's tau.")
    field_docs = {
        "id": "unique id: the seed prompt's id, or run_id/iteration for a run row",
        "category": f"topic category of the seed prompt; the paper's four are {', '.join(CATEGORIES)}",
        "prompt": "the seed prompt T0 (seed_prompts) or the prompt T_i of this iteration (runs)",
        "concepts": "the compositional concepts of the seed prompt (objects, attributes, relations; 2-3 in the paper)",
        "run_id": "one run: a model, a mode, a random seed and a seed prompt",
        "model": "the text-to-image model under evaluation",
        "evaluator": "the MLLM that wrote the prompts and scored the images (judge spec)",
        "mode": "iterative (difficulty grows each iteration, section 5) or adaptive (follows the score, section 6)",
        "seed": "the run's random seed (the paper repeats rankings over 5)",
        "seed_prompt_id": "id of the seed prompt the run started from",
        "iteration": "0 for the seed prompt T0, then 1, 2, ... (4 iterations in the paper)",
        "adaptive_bin": "adaptive mode: the score bin of the previous image that chose this prompt's rewrite "
                        "(halve, reduce, rephrase, increase, increase_more); empty otherwise",
        "image": "the image the model drew for this prompt (null when drawing failed)",
        "image_seed": "seed of the image's generator",
        "score": "VQAScore of the image against the prompt, 0 to 1 (null when the judge failed)",
        "difficulty": "prompt difficulty: Yngve depth, or the Flesch-Kincaid / word-count fallback",
        "difficulty_method": "how difficulty was computed (yngve, flesch_kincaid, word_count)",
        "weighted_score": "score x difficulty (adaptive mode's ranking score)",
        "aesthetic": "optional aesthetic score 0 to 10 (appendix A)",
        "judge_replies": "every raw reply of the MLLM for this iteration, in order (prompt writing, scoring)",
        "failure": "why this iteration could not be drawn or scored; empty when it was",
    }

    @property
    def features(self) -> datasets.Features:
        return SEED_FEATURES

    def config_features(self, config: str) -> datasets.Features:
        return RUN_FEATURES if config == "runs" else SEED_FEATURES

    def read_release(self, source: str | Path, **options: Any) -> Release:
        source = Path(source)
        seeds_file = source / "seed_prompts.jsonl"
        if not seeds_file.is_file():
            raise ReleaseError(f"{seeds_file}: missing (an MT2IE release holds seed_prompts.jsonl)")
        anomalies: list[Anomaly] = []
        seeds = self._seed_prompts(seeds_file, anomalies)
        configs = {"seed_prompts": seeds}
        counts = {"seed_prompts": dict(Counter(r["category"] for r in seeds))}
        run_files = sorted((source / "runs").glob("*.jsonl"))
        if run_files:
            known = {r["id"]: r for r in seeds}
            runs = [row for f in run_files for row in self._run_rows(f, known, anomalies)]
            configs["runs"] = runs
            counts["runs"] = {"runs": len({r["run_id"] for r in runs}), "models": len({r["model"] for r in runs}),
                              "failed": sum(r.get("score") is None for r in runs)}
        return Release(configs=configs, anomalies=anomalies, counts=counts, license=None, source=str(source))

    def read_seed_prompts(self, path: str | Path) -> list[dict[str, Any]]:
        """The seed prompts of a ``seed_prompts.jsonl`` file (or of the folder holding one), checked as
        :meth:`read_release` checks them; prompts outside the paper's categories are allowed here."""
        path = Path(path)
        path = path / "seed_prompts.jsonl" if path.is_dir() else path
        if not path.is_file():
            raise ReleaseError(f"{path}: no such seed prompts file")
        return self._seed_prompts(path, [])

    def _seed_prompts(self, path: Path, anomalies: list[Anomaly]) -> list[dict[str, Any]]:
        rows, seen = [], set()
        for raw in read_jsonl(path):
            line = raw.pop("_line")
            for key in ("id", "category", "prompt"):
                if not str(raw.get(key) or "").strip():
                    raise ReleaseError(f"{path}, line {line}: missing {key!r}")
            _check_fields(raw, SEED_FEATURES, f"{path}, line {line}")
            rid = str(raw["id"])
            if rid in seen:
                raise ReleaseError(f"{path}, line {line}: duplicate id {rid!r}")
            seen.add(rid)
            if raw["category"] not in CATEGORIES:
                anomalies.append(Anomaly("other_category", path.name, line,
                                         f"{raw['category']!r} is not one of the paper's {CATEGORIES}"))
            rows.append({"id": rid, "category": raw["category"], "prompt": raw["prompt"].strip(),
                         "concepts": list(raw.get("concepts") or [])})
        return rows

    def _run_rows(self, path: Path, seeds: dict[str, dict], anomalies: list[Anomaly]) -> list[dict[str, Any]]:
        rows, iterations = [], defaultdict(set)
        for raw in read_jsonl(path):
            line = raw.pop("_line")
            missing = [k for k in _RUN_REQUIRED if raw.get(k) is None]
            if missing:
                raise ReleaseError(f"{path}, line {line}: missing {', '.join(missing)}")
            if raw["mode"] not in MODES:
                raise ReleaseError(f"{path}, line {line}: mode {raw['mode']!r} is not one of {MODES}")
            row = dict(raw)
            row["run_id"] = str(raw.get("run_id") or f"{raw['model']}/{raw['mode']}/seed{raw['seed']}/"
                                                      f"{raw['seed_prompt_id']}")
            row["id"] = f"{row['run_id']}/{raw['iteration']}"
            if raw.get("image"):
                image = path.parent / raw["image"]
                if not image.is_file():
                    raise ReleaseError(f"{path}, line {line}: image {raw['image']} not found ({image})")
                row["image"] = str(image)
            seed = seeds.get(str(raw["seed_prompt_id"]))
            if seed is None:
                anomalies.append(Anomaly("unknown_seed_prompt", path.name, line,
                                         f"seed_prompt_id {raw['seed_prompt_id']!r} is not in seed_prompts.jsonl"))
            elif not row.get("category"):
                row["category"] = seed["category"]
            if raw.get("score") is None:
                anomalies.append(Anomaly("unscored", path.name, line, raw.get("failure") or "no score, no failure given"))
            iterations[row["run_id"]].add(int(raw["iteration"]))
            _check_fields(row, RUN_FEATURES, f"{path}, line {line}")
            rows.append(row)
        for run_id, its in iterations.items():
            gaps = sorted(set(range(max(its) + 1)) - its)
            if gaps:
                anomalies.append(Anomaly("missing_iteration", path.name, None, f"run {run_id}: iterations {gaps}"))
        return rows

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """The ranking of an agent's run (seed 002, Figure 7 and Table 6), best model first: the mean
        score over seeds and its spread, the mean rank and its variance, and Kendall's tau against the
        reference ranking when one was given. ``aggregate`` is :func:`t2ireason.mt2ie.rank_models`'
        table, which covers every model of the run; ``label`` prefixes the rows when non-empty."""
        metric = aggregate.get("metric", "score")
        table = PaperTable(f"MT2IE ranking ({aggregate.get('mode')}, {metric})",
                           [metric, "std over seeds", "mean rank", "rank variance", "failed"], decimals=3)
        for model in aggregate["ranking"]:
            s = aggregate["models"][model]
            table.rows[f"{label} · {model}" if label else model] = {
                metric: Cell.of(s["mean"]), "std over seeds": Cell.of(s["std"]), "mean rank": Cell.of(s["mean_rank"]),
                "rank variance": Cell.of(s["rank_variance"]), "failed": Cell.of(s["failed"])}
        notes = [f"{len(aggregate.get('seeds') or [])} random seed(s)"]
        if aggregate.get("kendall_tau") is not None:
            seed_mean = aggregate.get("kendall_tau_seed_mean")
            notes.append(f"Kendall's tau vs the reference ranking: {aggregate['kendall_tau']:.3f}"
                         + (f" (mean over seeds {seed_mean:.3f})" if seed_mean is not None else ""))
        table.note = "; ".join(notes)
        return [table]

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        """Seed prompts under ``seed_prompts/<id>.png``; run rows under ``<run_id>/<iteration>.png``."""
        suffix = f"_{sample}" if sample else ""
        if "run_id" in row:
            return f"{row['run_id']}/{row['iteration']}{suffix}.png"
        return f"seed_prompts/{self.row_id(row)}{suffix}.png"


def _check_fields(raw: dict[str, Any], features: datasets.Features, where: str) -> None:
    """Keys outside the schema are an error: a misspelt field would otherwise vanish from the dataset."""
    unknown = sorted(k for k in raw if k not in features)
    if unknown:
        raise ReleaseError(f"{where}: unknown field(s) {unknown}; known: {', '.join(features)}")


BENCHMARK = MT2IE()
