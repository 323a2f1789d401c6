"""``t2ireason build`` (an official release made a Hub dataset folder) and ``t2ireason push`` (the folder sent to the
Hub), and :func:`main`, the entry point of ``datasets_scripts/build.py`` and ``push.py``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ..build import HUB_EVALUATION_FRAMEWORKS, NORMALIZATIONS, UNSAFE_IDS, build_dataset
from ..console import Parser, stdout_reader_may_leave
from ..publish import publish

__all__ = ["add_build_args", "run_build", "add_push_args", "run_push", "main"]


def _option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a plain string


def add_build_args(p: argparse.ArgumentParser) -> None:
    from ..benchmarks import MODULES

    p.add_argument("benchmark", help=f"which benchmark: {', '.join(MODULES)}")
    p.add_argument("--source", default=None,
                   help="the release: a folder as its authors publish it, a checkout (the root is found one or two "
                        "folders deeper), or a zip/tar archive of the repository; default: fetch the authors' "
                        "release at the revision the project pins and check its files")
    p.add_argument("--revision", default=None,
                   help="fetch the official release at this commit instead of the pinned one (its files are then "
                        "reported against the recorded hashes, not enforced); not with --source")
    p.add_argument("--out", required=True, help="output folder (Parquet per config, README.md, eval.yaml, build_report.json)")
    p.add_argument("--license", default=None, help="license of the release (default: the one the benchmark is known to have)")
    p.add_argument("--repo", default=None, help="Hub repository the card's examples name, e.g. my-org/r2i-bench")
    p.add_argument("--overwrite", action="store_true", help="replace a previous build in --out")
    p.add_argument("--strict", action="store_true",
                   help="fail on any anomaly or quarantined record instead of keeping and reporting it")
    p.add_argument("--normalize", action="append", default=[], choices=NORMALIZATIONS,
                   help="normalise every text value (off by default: the release's text is kept byte for byte): "
                        "strip leading and trailing whitespace, or Unicode NFC; repeatable; reported")
    p.add_argument("--unsafe-ids", choices=UNSAFE_IDS, default="map",
                   help="ids that cannot be file names (image paths are made from them): map them to safe names "
                        "(the mapping is kept in build_report.json; default) or refuse them (quarantined)")
    p.add_argument("--cache-dir", default=None,
                   help="where fetched releases are kept (default: $T2IREASON_RELEASES_CACHE, else "
                        "$XDG_CACHE_HOME/t2ireason/releases)")
    p.add_argument("--no-eval-yaml", action="store_true", help="do not write eval.yaml")
    p.add_argument("--evaluation-framework", default=None, choices=HUB_EVALUATION_FRAMEWORKS, metavar="NAME",
                   help="write eval.yaml (the Hub's benchmark registration) naming this evaluation framework, one "
                        "the Hub lists: " + ", ".join(HUB_EVALUATION_FRAMEWORKS) + " (default: no eval.yaml)")
    p.add_argument("--read-option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                   help="option for the benchmark's release reader (JSON value), e.g. limit=1000; repeatable")


def run_build(args: argparse.Namespace) -> int:
    report = build_dataset(args.benchmark, args.source, args.out, license=args.license, overwrite=args.overwrite,
                           repo_id=args.repo, eval_yaml=not args.no_eval_yaml,
                           evaluation_framework=args.evaluation_framework, options=dict(args.read_option),
                           strict=args.strict, revision=args.revision, normalize=args.normalize,
                           unsafe_ids=args.unsafe_ids, cache_dir=args.cache_dir)
    print(report.summary())
    return 0


def add_push_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="a folder written by datasets_scripts/build.py")
    p.add_argument("--repo", required=True, help="dataset repository to create or update, e.g. my-org/r2i-bench")
    p.add_argument("--private", action="store_true", help="create the repository as private")
    p.add_argument("--revision", default=None, help="branch to push to")
    p.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing")
    p.add_argument("--message", default=None, help="commit message")
    p.add_argument("--dry-run", action="store_true", help="list what would be uploaded; send nothing")


def run_push(args: argparse.Namespace) -> int:
    plan = publish(args.folder, args.repo, private=args.private or None, revision=args.revision,
                   commit_message=args.message, create_pr=args.create_pr, dry_run=args.dry_run)
    verb = "would upload" if args.dry_run else "uploaded"
    print(f"{verb} {len(plan['files'])} files from {plan['folder']} to dataset {plan['repo_id']}:")
    for f in plan["files"]:
        print(f"  {f}")
    if not args.dry_run:
        print(f"commit: {plan['commit']}")
    return 0


def main(add_args: Any, run: Any, argv: Sequence[str] | None = None, description: str = "") -> int:
    """Entry point shared by datasets_scripts/build.py and push.py: one clear line on bad input."""
    with stdout_reader_may_leave():
        parser = Parser(description=description)
        add_args(parser)
        args = parser.parse_args(argv)
        try:
            return run(args)
        except (ValueError, KeyError, OSError, ImportError) as e:  # OSError: file system, and the Hub's HTTP errors
            message = e.args[0] if isinstance(e, KeyError) and e.args else e
            print(f"error: {message}", file=sys.stderr)
            return 2
