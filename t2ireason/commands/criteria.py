"""``t2ireason criteria``: a benchmark's criteria made for a file of prompts, written as a dataset the metrics read.

The rows are the benchmark's own schema, one Parquet file per config as ``t2ireason build`` writes them, so
``load_dataset(<folder>, <config>)`` reads them, the metric scores against them
(``evaluate.load("metrics/r2i_score").compute(predictions=images, references=rows)``) and ``t2ireason
evaluate --data <folder>`` runs on them. They are made as a reward makes them (:class:`~.criteria.Criteria`:
the benchmark's own method, one call per prompt and step, kept in the criteria cache), so a reward loaded
with the same criteria LLM finds them made.
"""

from __future__ import annotations

import argparse

from ..exports import write_criteria
from ..rewards.criteria import METRIC_BENCHMARKS, Criteria
from ..rewards.prompt_files import read_prompts

__all__ = ["add_criteria_args", "run_criteria"]


def add_criteria_args(p: argparse.ArgumentParser) -> None:
    from .options import json_dict

    p.add_argument("--benchmark", required=True, choices=sorted(METRIC_BENCHMARKS.values()),
                   help="whose criteria: r2i-bench (appendix A.4), t2i-reasonbench (stage I), worldgenbench "
                        "(the project's checklist prompt), prism-bench (a track, nothing made)")
    p.add_argument("--prompts", required=True,
                   help="file of prompts: .txt (a line each), .jsonl/.json (strings, or objects with a 'prompt' and "
                        "the fields given: id, reference_caption, dimension, idiom, explicit_meaning, track...), "
                        ".csv or .parquet")
    p.add_argument("--out", required=True, help="the dataset folder to write (Parquet per config, card, build_report.json)")
    p.add_argument("--criteria-llm", default=None,
                   help="the LLM that makes them, named like a judge: openai:<model>[@<base url>], hf:<model>, vllm:<model>")
    p.add_argument("--criteria-llm-kwargs", type=json_dict, default={}, help="its backend options as JSON")
    p.add_argument("--dimension", default=None,
                   help="t2i-reasonbench: the dimension of prompts that name none (idiom, textual, entity, scientific)")
    p.add_argument("--track", default=None,
                   help="prism-bench: the track of prompts that name none (default: the project's general template)")
    p.add_argument("--language", default=None, help="prism-bench: the language of prompts that name none (default en)")
    p.add_argument("--cache", default=True, help="criteria cache file (default: criteria.sqlite beside the response cache)")
    p.add_argument("--no-cache", dest="cache", action="store_false", help="neither read nor keep made criteria")
    p.add_argument("--license", default="other", help="the card's license (default: other)")
    p.add_argument("--overwrite", action="store_true", help="replace a folder this command (or build) wrote before")


def run_criteria(args: argparse.Namespace) -> int:
    from ..benchmarks import get_benchmark
    from ..judges import load_judge, validate_judge

    metric = get_benchmark(args.benchmark).metric
    records = read_prompts(args.prompts)
    llm = None
    if args.criteria_llm is not None:
        validate_judge(args.criteria_llm, args.criteria_llm_kwargs)
        llm = load_judge(args.criteria_llm, **args.criteria_llm_kwargs)
    elif metric != "prism_score":
        raise ValueError(f"--criteria-llm is needed: {args.benchmark}'s criteria are made by an LLM")
    choice = args.dimension if metric == "t2i_reasonscore" else args.track if metric == "prism_score" else None
    try:
        criteria = Criteria(metric, llm, cache=args.cache, choice=choice, language=args.language,
                            choice_hint="--dimension, or a 'dimension' field of the prompts file")
        ids = [r.get("id") if r.get("id") not in (None, "") else n for n, r in enumerate(records, 1)]
        rows, failures = criteria.rows([r["prompt"] for r in records], records, ids=ids)
        report = write_criteria(criteria, rows, failures, args.out, source=str(args.prompts), license=args.license,
                                overwrite=args.overwrite)
    finally:
        if llm is not None:
            llm.close()
    c = report["counts"]
    print(f"{len(rows)} prompts: {c['made']} made, {c['cached']} from the cache, {c['given']} given, "
          f"{c['failed']} failed -> {args.out} ({', '.join(report['configs'])})")
    for f in report["failed"][:5]:
        print(f"  failed: {f['id']}: {f['failure']}")
    return 1 if report["failed"] else 0
