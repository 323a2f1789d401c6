"""``t2ireason mt2ie``: the agent's options (the paper's setup as every default) and the command that runs
it, prints the ranking and says where everything is (registered by :mod:`t2ireason.cli`).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..benchmarks.mt2ie import agent
from ..benchmarks.mt2ie.protocol import PROMPT_TEMPERATURE
from ..benchmarks.mt2ie.release import MODES
from ..generation import GenerationConfig, preflight_generator
from ..judges import load_judge, on_device, preflight
from ..processes import processes

__all__ = ["add_mt2ie_args", "run_mt2ie_command"]


def _model_pair(text: str) -> tuple[str, str]:
    name, sep, model = text.partition("=")
    if not sep or not name or not model:
        raise argparse.ArgumentTypeError(f"{text!r}: expected name=<diffusers folder or hub id> or another generator "
                                         "spec, e.g. sd21=stabilityai/stable-diffusion-2-1 or gptimage=openai:gpt-image-1")
    if not agent.MODEL_NAME.fullmatch(name):
        raise argparse.ArgumentTypeError(f"model name {name!r}: use letters, digits, '.', '_' and '-'")
    return name, model


def _for_model(parse: Callable[[str], Any]) -> Callable[[str], tuple[str | None, Any]]:
    """An argparse type: ``[NAME=]VALUE``, the value for the model so named, or for every model."""
    def pair(text: str) -> tuple[str | None, Any]:
        named = re.fullmatch(r"([A-Za-z0-9._-]+)=(.*)", text, flags=re.DOTALL)
        return (named[1], parse(named[2])) if named else (None, parse(text))

    return pair


def _per_model(given: list[tuple[str | None, Any]], names: list[str], option: str) -> dict[str, list[Any]]:
    """Each model's values of a ``[NAME=]VALUE`` option, those for every model first."""
    unknown = sorted({n for n, _ in given if n is not None and n not in names})
    if unknown:
        raise ValueError(f"{option} names no model given with --model: {', '.join(unknown)} "
                         f"(the models: {', '.join(names)})")
    return {name: [v for n, v in given if n is None] + [v for n, v in given if n == name] for name in names}


def _parser_callable(text: str) -> Callable[[str], Any]:
    import importlib

    module, sep, attr = text.partition(":")
    try:
        if not sep:
            raise ValueError("expected module:function")
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as e:
        raise argparse.ArgumentTypeError(f"cannot load the parser {text!r} ({e})") from None
    if not callable(fn):
        raise argparse.ArgumentTypeError(f"{text!r} is not callable")
    return fn


def _reference_arg(text: str) -> list[str] | dict[str, float]:
    path = Path(text)
    if not path.is_file():
        return [n.strip() for n in text.split(",") if n.strip()]
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"{text}: not valid JSON ({e})") from None
    if not isinstance(value, (list, dict)):
        raise argparse.ArgumentTypeError(f"{text}: expected a list of names best first or an object name -> score")
    return value


def add_mt2ie_args(p: argparse.ArgumentParser) -> None:
    """Options of ``t2ireason mt2ie``: every one has the paper's setup (seed 002) as its default."""
    from .options import add_judge_args, json_dict, positive_int

    p.add_argument("--model", dest="models", action="append", type=_model_pair, required=True,
                   metavar="NAME=MODEL",
                   help="a T2I model to evaluate, as name=<generator spec>: a diffusers folder or Hub id, "
                        "openai:<model>[@<base url>], hf:<Janus folder or Hub id>, python:<module>:<callable>; "
                        "repeat for several")
    add_judge_args(p, default=agent.PAPER_JUDGE)
    judge = next(a for a in p._actions if a.dest == "judge")
    judge.help += f" (default: {agent.PAPER_JUDGE}, the paper's VQAScore judge; it also writes the prompts)"
    p.add_argument("--out", required=True,
                   help="output folder: runs/<model>.jsonl rows, images, summary.json (rerun to resume)")
    p.add_argument("--mode", choices=MODES, default="iterative",
                   help="iterative: each prompt adds one concept (section 5); adaptive: the next prompt "
                        "follows the last score (section 6) (default: iterative)")
    p.add_argument("--iterations", type=positive_int, default=agent.PAPER_ITERATIONS,
                   help="prompts per run, the seed prompt included (default: 5, T0..T4)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(agent.PAPER_SEEDS),
                   help="random seeds, one ranking each (default: 0 1 2 3 4)")
    p.add_argument("--seed-prompts", default=None,
                   help="seed_prompts.jsonl (or its folder) with id, category, prompt per line "
                        "(default: the 16 shipped with the package)")
    p.add_argument("--seed-prompts-per-seed", type=positive_int, default=agent.PAPER_SEED_PROMPTS_PER_SEED,
                   help="seed prompts per random seed, one per category in turn (default: 4)")
    p.add_argument("--scoring", nargs="+", choices=list(dict.fromkeys((*agent.SCORINGS, *agent.RANKING_METRICS))),
                   default=["vqascore"], metavar="NAME",
                   help="the agent's score, then the ranking metrics scored beside it on the same images (the "
                        "paper's Tables 3 and 5); vqascore: P(Yes) of the judge (needs answer probabilities); "
                        "vqa_accuracy: the judge writes, validates and answers questions (appendix C); clip_score, "
                        "dsg, viescore, tifa: those metrics (t2ireason evaluate --metric's). With --reference, the "
                        "Kendall's tau of each one's ranking comes out in the paper's layout (default: vqascore)")
    p.add_argument("--scoring-judge", action="append", default=[], type=_for_model(str), metavar="NAME=SPEC",
                   help="the judge of a ranking metric of --scoring (default: the agent's --judge; clip_score's: "
                        "its CLIP model, openai/clip-vit-base-patch32), e.g. viescore=openai:gpt-4o or "
                        "clip_score=<CLIP folder>; repeat for several")
    p.add_argument("--scoring-options", action="append", default=[], type=_for_model(json_dict), metavar="NAME=JSON",
                   help='a ranking metric\'s scoring options as JSON, e.g. viescore=\'{"structured_output": true}\'; '
                        "repeat for several")
    p.add_argument("--aesthetic", action="store_true", help="also score each image's aesthetics 0-10 (appendix A)")
    p.add_argument("--difficulty", choices=agent.DIFFICULTY_METHODS, default="auto",
                   help="prompt difficulty that weights the scores (section 6, appendix D) (default: auto = yngve, "
                        "the paper's Yngve depth of the prompt's parse, by --parser or stanza's parser from the "
                        "[mt2ie] extra; where neither can be had, word_count, said at the start and in every row: "
                        "not the paper's); perplexity needs --perplexity-model")
    p.add_argument("--parser", type=_parser_callable, default=None, metavar="MODULE:FUNCTION",
                   help="constituency parser for Yngve depth: a function text -> nltk.Tree (default: stanza's, "
                        "pip install 't2ireason[mt2ie]'; its models in $STANZA_RESOURCES_DIR)")
    p.add_argument("--perplexity-model", default=None, metavar="MODEL",
                   help="with --difficulty perplexity: a causal LM (folder or Hub id, AutoModelForCausalLM; the "
                        "paper's was Llama 2) whose perplexity of \"There's an image of a <prompt>\" is the difficulty")
    p.add_argument("--reference", type=_reference_arg, default=None,
                   help="reference ranking for Kendall's tau: model names best first, comma-separated, or "
                        "a JSON file (a list best first, or an object name -> score)")
    p.add_argument("--max-reasks", type=int, default=2, help="re-asks of a reply that does not parse (default: 2)")
    p.add_argument("--temperature", type=float, default=PROMPT_TEMPERATURE,
                   help="sampling temperature of prompt writing (default: 0.3, appendix F)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"],
                   help="T2I model dtype (default: float16 on GPU, float32 on CPU)")
    p.add_argument("--steps", type=positive_int, default=None, help="T2I inference steps (default: the pipeline's)")
    p.add_argument("--height", type=positive_int, default=None, help="image height (default: the pipeline's)")
    p.add_argument("--width", type=positive_int, default=None, help="image width (default: the pipeline's)")
    p.add_argument("--batch-size", type=positive_int, default=1, help="prompts per T2I pipeline call (default: 1)")
    p.add_argument("--pipeline-kwargs", type=json_dict, default={},
                   help='extra T2I pipeline call arguments as JSON, e.g. \'{"guidance_scale": 5.0}\'')
    p.add_argument("--quality", dest="quality", action="append", default=[], type=_for_model(str),
                   metavar="[NAME=]QUALITY",
                   help="an image API's quality (OpenAI: low, medium, high, auto; hd), for every model or, as "
                        "name=quality, for that one; repeat for several")
    p.add_argument("--generator-kwargs", action="append", default=[], type=_for_model(json_dict),
                   metavar="[NAME=]JSON",
                   help="backend options as JSON for every model's generator or, as name=JSON, for that one, "
                        'e.g. api=\'{"api_key": "...", "max_concurrency": 4}\' for an openai: model; repeat for several')
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _named(given: list[tuple[str | None, Any]], option: str) -> dict[str, Any]:
    """``NAME=VALUE`` options as a dict; one without its name is refused."""
    unnamed = [v for n, v in given if n is None]
    if unnamed:
        raise ValueError(f"{option} takes NAME=VALUE, a ranking metric of --scoring and its value; got {unnamed[0]!r}")
    return {n: v for n, v in given}


def _fmt(x: float, spec: str = ".3f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def run_mt2ie_command(args: argparse.Namespace) -> int:
    """``t2ireason mt2ie``: run the agent, print the ranking, say where everything is. Exit 1 if any
    iteration failed (the failures are in the rows), 0 otherwise."""
    names = [name for name, _ in args.models]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"model name(s) given twice: {', '.join(twice)}")
    quality = _per_model(args.quality, names, "--quality")
    options = {name: {k: v for given in kwargs for k, v in given.items()}
               for name, kwargs in _per_model(args.generator_kwargs, names, "--generator-kwargs").items()}
    models = {name: GenerationConfig(model=model, dtype=args.dtype, steps=args.steps, height=args.height,
                                     width=args.width, batch_size=args.batch_size,
                                     quality=quality[name][-1] if quality[name] else None,
                                     pipeline_kwargs=args.pipeline_kwargs)
              for name, model in args.models}
    for name, config in models.items():  # each generator checked before the judge is asked anything
        preflight_generator(config, **options[name])
    scoring_judges, scoring_options = _named(args.scoring_judge, "--scoring-judge"), \
        _named(args.scoring_options, "--scoring-options")
    if args.perplexity_model and args.difficulty != "perplexity":
        raise ValueError("--perplexity-model is perplexity's model: give --difficulty perplexity too")
    # before any judge or model is loaded: whether this run weights by the paper's Yngve depth, said at its start
    difficulty, parser, lm, note = agent.resolve_difficulty(args.difficulty, args.parser, args.perplexity_model)
    procs = processes()  # in a launch, each process runs its share of the chains with its own judge
    if note and procs.is_main:
        print(note, flush=True)
    judge = load_judge(args.judge, cache=args.cache, **on_device(args.judge, args.judge_kwargs, procs.device))
    # before any image is drawn: the judge answers about an image, and gives VQAScore's probabilities (the agent's,
    # or a ranking metric's it judges); a ranking metric's own judge is asked by the agent before it draws
    preflight(judge, structured=False, probabilities=args.scoring[0] == "vqascore" or (
        "vqascore" in args.scoring and "vqascore" not in scoring_judges))
    summary = agent.run_mt2ie(models, judge, args.seed_prompts, out_dir=args.out, mode=args.mode,
                        iterations=args.iterations, seeds=args.seeds,
                        seed_prompts_per_seed=args.seed_prompts_per_seed, scoring=args.scoring,
                        scoring_judges=scoring_judges, scoring_options=scoring_options, cache=args.cache,
                        aesthetic=args.aesthetic, difficulty=difficulty, parser=parser, lm=lm,
                        reference=args.reference, max_reasks=args.max_reasks,
                        prompt_temperature=args.temperature, generator_kwargs=options,
                        progress=not args.no_progress)
    if not procs.is_main:  # the main process says it and draws the plot
        return 1 if summary["failed"] else 0
    out = Path(args.out)
    print(f"MT2IE {summary['mode']}: {len(models)} model(s), {len(summary['seeds'])} seed(s), "
          f"{summary['runs']} runs of {summary['iterations']} prompts; {summary['rows']} rows "
          f"({summary['new']} new, {summary['failed']} failed, {summary['refused']} refused by the model, "
          f"{summary['stopped']} not reached)")
    if summary.get("processes"):
        print("runs made by " + ", ".join(f"process {s['rank']}: {s['runs']}" for s in summary["processes"]))
    table = summary["table"]
    if table:
        print(f"\n{'model':<20} {table['metric'] + ' (mean ± std over seeds)':>36} {'mean rank':>10} "
              f"{'rank var':>9} {'failed':>7}")
        for m in table["ranking"]:
            s = table["models"][m]
            print(f"{m:<20} {_fmt(s['mean']) + ' ± ' + _fmt(s['std']):>36} {_fmt(s['mean_rank'], '.2f'):>10} "
                  f"{_fmt(s['rank_variance'], '.2f'):>9} {s['failed']:>7}")
        if "kendall_tau" in table:
            print(f"\nKendall's tau vs the reference: {_fmt(table['kendall_tau'])} "
                  f"(mean over seeds {_fmt(table['kendall_tau_seed_mean'])})")
        if summary.get("rankings"):  # the paper's Tables 3 and 5: every method's ranking of the same images
            from ..benchmarks.mt2ie.rankings import kendall_table, mean_rank_table
            from ..report.tables import to_markdown

            tables = [mean_rank_table(summary["rankings"])]
            if "kendall_tau" in table:
                tables.insert(0, kendall_table(summary["rankings"]))
            print("\n" + to_markdown(tables, intervals=False).strip())
        from ..report.plots import mt2ie_iterations

        png, pdf = mt2ie_iterations(table["per_iteration"], out / "mt2ie_iterations", title=f"MT2IE {args.mode}")
        print(f"\nplot: {png} and {pdf}")
    for f in summary["failures"][:5]:
        print(f"failed: {f['id']}: {f['failure']}")
    print(f"rows: {out / 'runs'}/*.jsonl (images beside them); summary: {out / 'summary.json'}\n"
          f"as a Hub dataset: python datasets_scripts/build.py mt2ie --source {out} --out <folder>\n"
          f"report (several output folders side by side make Table 5): t2ireason report {out} --out <folder>")
    return 1 if summary["failed"] else 0
