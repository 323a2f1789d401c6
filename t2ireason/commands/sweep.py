"""``t2ireason sweep``: a run's images scored with every question LLM x judge, each pair an evaluation of the run
(T2I-ReasonBench Table 1's twelve LLM-MLLM combinations in one command: :mod:`t2ireason.sweep`)."""

from __future__ import annotations

import argparse

from .options import json_dict, positive_int

__all__ = ["add_sweep_args", "run_sweep"]


def add_sweep_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True,
                   help="the run folder whose images are scored (made by `t2ireason run`, or `t2ireason evaluate "
                        "--benchmark ... --images ...`); each pair's scores go to <run>/evaluations/<llm>--<judge>/")
    p.add_argument("--llm", action="append", default=[], metavar="SPEC",
                   help="a question LLM, named like a judge (openai:<model>[@<base url>], hf:<model>, vllm:<model>), "
                        "or 'release' for the questions the run's rows hold (T2I-ReasonBench's release: DeepSeek-R1's); "
                        "repeatable: every LLM is paired with every --judge")
    p.add_argument("--judge", action="append", default=[], metavar="SPEC",
                   help="a judge (MLLM) that answers the questions; repeatable")
    p.add_argument("--pair", nargs=2, action="append", default=[], metavar=("LLM", "JUDGE"),
                   help="one LLM x judge pair besides the grid of --llm x --judge (Table 1 scores 12 of the 15); "
                        "repeatable")
    p.add_argument("--llm-kwargs", type=json_dict, default={}, help="the question LLMs' backend options as JSON")
    p.add_argument("--judge-kwargs", type=json_dict, default={}, help="the judges' backend options as JSON")
    p.add_argument("--preset", default=None, help="the benchmark's named judge setting (default: its default)")
    p.add_argument("--options", type=json_dict, default={}, help="scoring options of the metric as JSON")
    p.add_argument("--cache", default=True, help="response cache file (default: ~/.cache/t2ireason)")
    p.add_argument("--no-cache", dest="cache", action="store_false", help="do not read or write the response cache")
    p.add_argument("--criteria-cache", default=True,
                   help="where made questions are kept (default: criteria.sqlite beside the response cache)")
    p.add_argument("--chunk-size", type=positive_int, default=32, help="images scored between two saves")
    p.add_argument("--retry-failed", action="store_true", help="score again the images the judge could not be asked")
    p.add_argument("--allow-failed", action="store_true",
                   help="exit 0 even when images are missing or the judge was unreachable for some")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run_sweep(args: argparse.Namespace) -> int:
    from ..report.tables import to_markdown
    from ..runs import Run
    from ..sweep import sweep
    from .evaluate import _evaluation_status

    run = Run.open(args.run)
    done = sweep(run, args.llm, args.judge, pairs=[tuple(p) for p in args.pair], llm_kwargs=args.llm_kwargs or None,
                 judge_kwargs=args.judge_kwargs or None, preset=args.preset, options=args.options, cache=args.cache,
                 criteria_cache=args.criteria_cache, chunk_size=args.chunk_size, progress=not args.no_progress,
                 retry_failed=args.retry_failed, allow_missing=args.allow_failed, say=print)
    print(to_markdown([done["table"]]))
    print(f"{len(done['pairs'])} pairs -> {run.path / 'sweep.md'}; with a human study of the run's images "
          f"(t2ireason rate {run.path} ...), `t2ireason agreement {run.path} --ratings ...` gives each pair its "
          "Kendall's tau and Spearman's rho (Table 1)")
    status = [_evaluation_status(run, s, args) for s in done["scores"].values()]
    return max(status, default=0)
