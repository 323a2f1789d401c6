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
    p.add_argument("--prompts", default=None,
                   help="file of prompts: .txt (a line each), .jsonl/.json (strings, or objects with a 'prompt' and "
                        "the fields given: id, reference_caption, dimension, idiom, explicit_meaning, track...), "
                        ".csv or .parquet (or --create)")
    p.add_argument("--create", default=None, metavar="CATEGORY/SUBCATEGORY",
                   help="r2i-bench: make new prompts of this subcategory (e.g. logical/disjunctive) as the paper made its "
                        "own (appendix A.4: the data-creation prompt with appendix A.2's definitions, then the "
                        "explanation prompt), then their questions; instead of --prompts")
    p.add_argument("--good-cases", default=None,
                   help="with --create: a prompts file of exemplar prompts of the subcategory (with a reference_caption "
                        "where known); the paper's were its experts' and are not published")
    p.add_argument("--bad-cases", default=None,
                   help="with --create: a text file of wrong examples, one a line (default: appendix A.2's two kinds)")
    p.add_argument("--rounds", type=int, default=1, help="with --create: data-creation requests (10 cases each)")
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
    if (args.prompts is None) == (args.create is None):
        raise ValueError("give --prompts (a file of prompts) or --create (new R2I-Bench prompts), one of them")
    if args.create is not None:
        from ..benchmarks.r2i_bench.creation import subcategory_definition

        if metric != "r2i_score":
            raise ValueError("--create makes R2I-Bench instances (appendix A.4): use it with --benchmark r2i-bench")
        subcategory_definition(args.create)  # an unknown one is said before any LLM is loaded
        if not args.good_cases:
            raise ValueError("--create needs --good-cases: a file of exemplar prompts of the subcategory")
        good = read_prompts(args.good_cases)
        bad = read_prompts(args.bad_cases) if args.bad_cases else None
    records = read_prompts(args.prompts) if args.prompts else []
    llm = None
    if args.criteria_llm is not None:
        validate_judge(args.criteria_llm, args.criteria_llm_kwargs)
        llm = load_judge(args.criteria_llm, **args.criteria_llm_kwargs)
    elif metric != "prism_score":
        raise ValueError(f"--criteria-llm is needed: {args.benchmark}'s criteria are made by an LLM")
    if args.create is not None:
        from ..benchmarks.r2i_bench.creation import new_records

        try:
            records, notes = new_records(args.create, llm, good_cases=good, rounds=args.rounds,
                                         bad_cases=[r["prompt"] for r in bad] if bad else None)
        except BaseException:
            llm.close()
            raise
        print(f"{len(records)} new {args.create} prompts made with appendix A.4's data-creation and explanation "
              "prompts" + (f"; {len(notes)} without an explanation (first: {notes[0]})" if notes else ""))
    choice = args.dimension if metric == "t2i_reasonscore" else args.track if metric == "prism_score" else None
    try:
        criteria = Criteria(metric, llm, cache=args.cache, choice=choice, language=args.language,
                            choice_hint="--dimension, or a 'dimension' field of the prompts file")
        ids = [r.get("id") if r.get("id") not in (None, "") else n for n, r in enumerate(records, 1)]
        rows, failures = criteria.rows([r["prompt"] for r in records], records, ids=ids)
        report = write_criteria(criteria, rows, failures, args.out, license=args.license,
                                source=str(args.prompts) if args.prompts else f"created: {args.create}",
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
