"""``t2ireason errors``: R2I-Bench's Figure 6 on a run, each failed image given one of the paper's error types by a
judge (:mod:`t2ireason.error_types`), and the table of their counts and shares."""

from __future__ import annotations

import argparse

from .options import finite_float, json_dict

__all__ = ["add_errors_args", "run_errors"]


def add_errors_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True, help="an R2I-Bench run folder with a finished evaluation")
    p.add_argument("--evaluation", default=None,
                   help="the evaluation whose failed images are typed (default: the run's only R2I-Score evaluation)")
    p.add_argument("--judge", required=True, help="judge spec (it sees each failed image): openai:<model>[@<url>], hf:...")
    p.add_argument("--judge-kwargs", type=json_dict, default={}, help="backend options as JSON")
    p.add_argument("--threshold", type=finite_float(0, 1), default=None,
                   help="an image is a failure case below this R2I-Score (default 0.5: the project's; the paper does "
                        "not say)")
    p.add_argument("--retry-failed", action="store_true", help="ask again about the images the judge gave no type")
    p.add_argument("--cache", default=True, help="response cache file (default: ~/.cache/t2ireason)")
    p.add_argument("--no-cache", dest="cache", action="store_false", help="do not read or write the response cache")


def run_errors(args: argparse.Namespace) -> int:
    from ..benchmarks.r2i_bench.errors import FAILED_BELOW
    from ..error_types import error_type_tables, type_errors
    from ..judges import validate_judge
    from ..report.tables import to_markdown
    from ..runs import Run, RunError

    run = Run.open(args.run)
    name = args.evaluation
    if name is None:
        own = [n for n in run.evaluations() if (run.evaluation_dir(n) / "scores.json").is_file()
               and run.scores(n).get("metric") in (None, run.bench.metric)]
        if len(own) != 1:
            raise RunError(f"{run.path} has {len(own)} finished evaluations of its benchmark's metric "
                           f"({', '.join(own) or 'none'}): name one with --evaluation")
        name = own[0]
    validate_judge(args.judge, args.judge_kwargs)
    data = type_errors(run, name, args.judge, judge_kwargs=args.judge_kwargs, cache=args.cache,
                       threshold=FAILED_BELOW if args.threshold is None else args.threshold,
                       retry_failed=args.retry_failed)
    print(to_markdown(error_type_tables(run, name, run.name)))
    untyped = sum("failure" in a for a in data["items"].values())
    print(f"{len(data['items'])} failed images of {name} -> {run.evaluation_dir(name) / 'error_types.json'}"
          + (f"; {untyped} without a type (--retry-failed asks again)" if untyped else ""))
    return 1 if untyped else 0
