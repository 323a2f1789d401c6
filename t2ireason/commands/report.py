"""The commands of reports and exports: ``t2ireason report`` (tables, figures, the HTML page of runs side
by side) and ``t2ireason export`` (scored runs as a Hub dataset, ``.eval_results`` entries)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_report_args", "print_report", "run_report", "add_export_args", "run_export", "add_protocol_args",
           "run_protocol"]


def add_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="run folders, several side by side (and `t2ireason mt2ie` output folders)")
    p.add_argument("--out", default=None, help="report folder (default: <run>/report for one run)")
    p.add_argument("--evaluation", default=None, help="report only this evaluation of each run (default: all)")
    p.add_argument("--embed-images", action="store_true",
                   help="embed the images in the HTML (one self-contained file) instead of relative links")
    p.add_argument("--title", default=None, help="title of the HTML report")
    p.add_argument("--published", action="store_true",
                   help="show each paper's main table as printed beside the runs (rows marked [paper], with the "
                        "judge and questions the paper used), and where each run stands among them")


def _say_changed_images(runs, evaluation: str | None) -> None:
    """A line for each finished evaluation some of whose image files changed since they were scored (cut short, made
    again): the report shows the scores of the old files, so it says which and how to score them again."""
    from ..run_evaluation import changed_since_scored
    from ..runs import RUN_FILE, Run

    for given in runs:
        if not isinstance(given, Run) and not (Path(given) / RUN_FILE).is_file():  # an MT2IE output folder
            continue
        run = given if isinstance(given, Run) else Run.open(given)
        folder = run.path
        for name in [evaluation] if evaluation else run.evaluations():
            if not (run.evaluation_dir(name) / "scores.json").is_file():
                continue
            changed = changed_since_scored(run, name)
            if changed:
                print(f"warning: {len(changed)} image files of evaluation {name!r} of {folder} changed since they were "
                      f"scored (cut short, damaged or made again; e.g. {changed[0]}): the report shows the scores of "
                      f"the old files; run `t2ireason evaluate --run {folder}` with the same settings to score them "
                      "again (a file that cannot be read is counted as unreadable)")


def print_report(runs, args: argparse.Namespace, out) -> dict:
    from ..report.writer import write_report

    _say_changed_images(runs, args.evaluation)
    report = write_report(runs, out, evaluation=args.evaluation, embed_images=args.embed_images, title=args.title,
                          published=getattr(args, "published", False))
    print(report["headline"])
    if report.get("unfinished"):
        print(f"not reported, not finished yet: {', '.join(report['unfinished'])}")
    print(f"every table: {report['tables_md']}, {report['tables_csv']} and {report['tables_tex']}")
    folders = sorted({str(p.parent) for p in report["plots"]})
    print(f"figures: {sum(p.suffix == '.png' for p in report['plots'])} (PNG and PDF) in {', '.join(folders)}")
    for page in report["html"]:
        print(f"HTML report: {page}")
    return report


def run_report(args: argparse.Namespace) -> int:
    if args.out is None and len(args.runs) > 1:
        raise ValueError("several runs are reported side by side: say where with --out")
    print_report(args.runs, args, args.out or Path(args.runs[0]) / "report")
    return 0


def add_export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="run folders with finished evaluations")
    p.add_argument("--out", required=True, help="dataset folder to write (Parquet per benchmark config + README.md)")
    p.add_argument("--license", required=True, help="license of the images and judgements, e.g. cc-by-4.0")
    p.add_argument("--evaluation", default=None, help="export only this evaluation of each run (default: all)")
    p.add_argument("--repo", default=None, help="also publish the folder to this Hub dataset repository")
    p.add_argument("--private", action="store_true", help="create the repository as private")
    p.add_argument("--dry-run", action="store_true", help="with --repo: list what would be uploaded, send nothing")
    p.add_argument("--benchmark-dataset", action="append", default=[], metavar="BENCHMARK=ID[@COMMIT]",
                   help="the Hub dataset (and commit) a benchmark's runs scored, for the model repositories' "
                        ".eval_results entries (default: the run's data source when it is a Hub id); repeatable")


def run_export(args: argparse.Namespace) -> int:
    from ..exports import EVAL_RESULTS_DIR, EVAL_RESULTS_SKIPPED, export_results
    from ..publish import folder_files, publish

    given = {}
    for text in args.benchmark_dataset:
        bench, sep, dataset = text.partition("=")
        if not sep or not bench or not dataset:
            raise ValueError(f"--benchmark-dataset expects BENCHMARK=ID[@COMMIT], got {text!r}")
        given[bench] = dataset
    folder = export_results(args.runs, args.out, license=args.license, evaluation=args.evaluation, repo_id=args.repo,
                            benchmark_datasets=given)
    print(f"results dataset in {folder} ({len(folder_files(folder))} files); "
          f"load_dataset({str(folder)!r}, <benchmark>) reads it")
    written = sorted((folder / EVAL_RESULTS_DIR).glob("*/.eval_results/*.yaml"))
    if written:
        print(f"Hub evaluation results for model repositories (copy each <model>/.eval_results/ into the model's "
              f"repository): {', '.join(str(p.relative_to(folder)) for p in written)}")
    if (folder / EVAL_RESULTS_SKIPPED).is_file():
        print("no .eval_results for " + (folder / EVAL_RESULTS_SKIPPED).read_text(encoding="utf-8").strip())
    if args.repo:
        plan = publish(folder, args.repo, private=args.private or None, dry_run=args.dry_run)
        verb = "would upload" if args.dry_run else "uploaded"
        print(f"{verb} {len(plan['files'])} files to dataset {plan['repo_id']}")
    return 0


def add_protocol_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder with a finished evaluation")
    p.add_argument("--evaluation", default=None, help="the evaluation to compare (default: the run's only one)")
    p.add_argument("--against", default="paper", metavar="paper|RUN",
                   help="compare with the paper's protocol of each of the run's tables (default), or with another "
                        "run's evaluation (of the same name, else its only one)")
    p.add_argument("--json", action="store_true", help="print the comparison and the run's record as JSON")


def run_protocol(args: argparse.Namespace) -> int:
    import json

    from ..report.protocol_check import comparison_text, run_comparison

    comparison = run_comparison(args.run, args.evaluation, args.against)
    print(json.dumps(comparison, indent=1, ensure_ascii=False, default=str) if args.json
          else comparison_text(comparison))
    return 0
