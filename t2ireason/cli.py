"""The ``t2ireason`` command line: one tool for the whole loop.

Each subcommand is a thin layer over a library function; ``generators/`` and
``datasets_scripts/`` scripts call the same subcommands, so options are
defined once, here.
"""

# The top of the layers: each subcommand's options and its run live in a module of :mod:`t2ireason.commands`,
# imported only when that subcommand is chosen (so ``t2ireason --help`` imports none of the libraries the steps
# need); nothing in the library imports this module.

from __future__ import annotations

import argparse
import importlib
import math
import signal
import sys
from collections.abc import Callable, Sequence

from .console import Parser, user_error_text
from .processes import first_to_fail
from .version import __version__

__all__ = ["COMMANDS", "build_parser", "main", "Parser", "user_error_text"]


def _lazy(module: str, name: str) -> Callable:
    """A function of ``t2ireason.commands.<module>`` imported when called (so ``--help`` stays fast)."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(f"{__package__}.commands.{module}"), name)(*args, **kwargs)

    return call


def _command(module: str, name: str, help_text: str, run: str | None = None) -> tuple[Callable, Callable, str]:
    """``t2ireason <name>``: its options from ``add_<name>_args`` and its run from ``run_<name>`` (or ``run``) of
    :mod:`t2ireason.commands.<module>`."""
    return _lazy(module, f"add_{name}_args"), _lazy(module, run or f"run_{name}"), help_text


#: subcommand -> (add its arguments, run it, one-line help), in the loop's order for --help
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {
    "build": _command("datasets", "build", "build a benchmark's Hub dataset (Parquet + card) from its official release"),
    "push": _command("datasets", "push", "publish a built dataset folder to the Hub"),
    "generate": _command("generate", "generate", "generate the benchmark's images with any generator (diffusers, OpenAI "
                         "Images, Janus, a python function)"),
    "rewrite": _command("generate", "rewrite", "rewrite prompts with an LLM, or describe them with a text module"),
    "evaluate": _command("evaluate", "evaluate", "score a run's images with the benchmark's metric (resumable; one run, "
                         "many judges)"),
    "report": _command("report", "report", "paper-style tables (Markdown, CSV, LaTeX), figures and an HTML gallery of "
                       "one run or several"),
    "protocol": _command("report", "protocol", "a run's protocol against its paper's (or another run's), element by "
                         "element: what matched, what differs, what could not be checked"),
    "export": _command("report", "export", "scored runs as a Hub dataset (image, prompt, every answer and reasoning), "
                       "optionally pushed"),
    "run": _command("evaluate", "run", "build, generate, evaluate and report in one go (resumable)"),
    # criteria for new prompts (what a reward makes, as a dataset)
    "criteria": _command("criteria", "criteria", "a benchmark's criteria made for a file of prompts, written as a "
                         "dataset its metric reads"),
    "errors": _command("errors", "errors", "R2I-Bench Figure 6: a judge gives each failed image of a run one of the "
                       "paper's error types; their counts and shares"),
    "sweep": _command("sweep", "sweep", "a run's images scored with every question LLM x judge, each pair an "
                      "evaluation (T2I-ReasonBench Table 1's LLM-MLLM combinations)"),
    # a judge against people: a rating study and its agreement
    "rate": _command("study", "rate", "a human rating study of runs' images as a paper ran it: the sample and a page for "
                     "the raters"),
    "agreement": _command("study", "agreement", "the raters' files against the runs' judges: the paper's agreement "
                          "table"),
    "ratings": _command("ratings", "ratings", "import a released human rating set (TIFA160, GenAI-Bench) as a study, "
                        "and MT2IE's Tables 1-2 from it"),
    # the agent and the data engine
    "mt2ie": _command("mt2ie", "mt2ie", "MT2IE: an MLLM writes progressively harder prompts, draws them with each "
                      "model, ranks the models", run="run_mt2ie_command"),
    "engine": _command("engine", "engine", "the FLUX-Reason data engine: curate a text-to-image dataset in the "
                       "FLUX-Reason-6M schema", run="run_engine_command"),
}


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The parser: every subcommand's options (``"*"``), only ``command``'s, or none (the list of
    subcommands, all ``t2ireason --help`` needs)."""
    parser = Parser(prog="t2ireason", description=__doc__.splitlines()[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (add_args, _, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if command in ("*", name):
            add_args(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .console import stdout_reader_may_leave

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # `torchrun ... -m t2ireason.cli -- evaluate --run ...`: torchrun's own options end there
        argv = argv[1:]
    with stdout_reader_may_leave():
        return _main(argv)


def _main(argv: list[str]) -> int:
    from .console import Terminated, sigterm_as_interrupt

    if not argv:  # as git does: the commands, rather than an error about the missing one
        build_parser(None).print_help(sys.stderr)
        return 2
    command = next((a for a in argv if not a.startswith("-")), None)  # the top level takes no valued option
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    for key, value in vars(args).items():  # a nan or inf slips through float(); no option takes one
        if isinstance(value, float) and not math.isfinite(value):
            print(f"error: --{key.replace('_', '-')} must be a finite number, got {value}", file=sys.stderr)
            return 2
    _, run, _ = COMMANDS[args.command]
    try:
        with sigterm_as_interrupt():
            return run(args)
    except KeyboardInterrupt as e:
        said = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        if first_to_fail():  # in a launch, said once: torchrun stops every process
            print(f"{said}: finished work is kept; run the same command again to resume", file=sys.stderr)
        return 128 + signal.SIGTERM if isinstance(e, Terminated) else 130
    except Exception as e:
        text = user_error_text(e)
        if not first_to_fail():  # another process of the launch failed first and said why; this one, stopped by
            return 2  # it (or left waiting for it), has nothing to add: no second copy, no traceback
        if text is None:
            raise
        print("error: " + text, file=sys.stderr)  # one line
        return 2


if __name__ == "__main__":
    sys.exit(main())
